import BackstageModel
import BackstageSystem
import Foundation
import Logging

/// What every step of a relocation or an upgrade works with: the container, the file-system
/// layer, the journal, quarantine, and the observer callbacks.
package struct StepContext {
    let container: AppContainer
    let fileSystem: FileSystem
    let logger: Logger
    let busyTimeout: Double
    let quarantine: Quarantine
    package var phaseHook: (@Sendable (String, StepPhase) -> Void)?
    package var onProgress: (RelocationProgress) -> Void = { _ in }
    package var isCancelled: () -> Bool = { false }

    package init(container: AppContainer, fileSystem: FileSystem, logger: Logger, busyTimeout: Double) {
        self.container = container
        self.fileSystem = fileSystem
        self.logger = logger
        self.busyTimeout = busyTimeout
        self.quarantine = Quarantine(container: container, fileSystem: fileSystem)
    }

    var journal: JournalFile { JournalFile(container: container, fileSystem: fileSystem) }

    /// An observer for the step on `subject` that reports progress and calls the phase hook.
    func observer(for subject: String) -> MoveObserver {
        var observer = MoveObserver()
        let hook = phaseHook, onProgress = onProgress, logger = logger
        var last = ContinuousClock.now
        observer.phase = { phase in
            let now = ContinuousClock.now
            logger.debug(
                "phase reached",
                metadata: ["store": "\(subject)", "phase": "\(phase.rawValue)", "after": "\(now - last)"])
            last = now
            onProgress(RelocationProgress(store: subject, phase: phase, bytesDone: 0, bytesTotal: 0))
            hook?(subject, phase)
        }
        observer.progress = { done, total in
            onProgress(RelocationProgress(store: subject, phase: .copying, bytesDone: done, bytesTotal: total))
        }
        observer.heartbeat = { phase in
            onProgress(RelocationProgress(store: subject, phase: phase, bytesDone: 0, bytesTotal: 0))
        }
        observer.isCancelled = isCancelled
        return observer
    }

    /// Quarantines the ``strays(in:)`` of a folder's entries.
    func quarantineStrays(in entries: [ClassifiedFile], root: URL, report: inout RelocationReport) throws {
        for entry in FileClassifier.strays(in: entries) {
            guard let reason = QuarantineReason(stray: entry.kind) else { continue }
            report.quarantined.append(try quarantine.move(root.appending(path: entry.path), reason: reason))
        }
    }
}
