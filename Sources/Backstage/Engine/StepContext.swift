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
    var phaseHook: (@Sendable (String, StepPhase) -> Void)?
    var onProgress: (RelocationProgress) -> Void = { _ in }
    var isCancelled: () -> Bool = { false }

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

    func move(_ source: ContainerLocation, _ destination: ContainerLocation) -> StoreMove {
        StoreMove(
            container: container, fileSystem: fileSystem, journal: journal, quarantine: quarantine, source: source,
            destination: destination, busyTimeout: busyTimeout, logger: logger)
    }

    /// Finishes or undoes the step a journal left behind, whatever its kind.
    /// - returns: A line for the report, or nil when there was no journal.
    func recoverJournal() throws -> String? {
        try journal.removeStaleTemporary()
        guard let record = try journal.read() else { return nil }
        for location in [record.source, record.destination] + (record.targets ?? [])
        where !container.defines(location.root) {
            throw EngineError.journalInUndefinedAppGroup(path: journal.url.path, identifier: location.root.rawValue)
        }
        let outcome: String
        switch record.step {
        case .split:
            outcome = try SplitRun(context: self, record: record).recover()
        case .migrateSchema:
            // Each migration is one SQLite transaction: a crash rolled back the one in progress, and
            // those the step applied before it stay; a rerun applies what is missing.
            try journal.clear()
            outcome = "rolled back the migration in progress, kept those it had completed"
        case .relocate:
            outcome = try move(record.source, record.destination).recover()
        case .quarantine:
            // Quarantine moves each file with a rename (or a copy removed only after it is complete):
            // there is nothing half done to finish, and it never writes a journal.
            try journal.clear()
            outcome = "nothing to finish"
        }
        logger.notice(
            "recovered interrupted step",
            metadata: ["step": "\(record.step)", "outcome": "\(outcome)", "source": "\(record.source)"])
        return
            "\(outcome): \(record.step) \(record.source) → \(record.targets?.map(\.description).joined(separator: ", ") ?? record.destination.description) (was at \(record.phase))"
    }

    /// Moves the store at `source` to `destination` with every relocation invariant. A store already
    /// at the destination is a conflict: the source goes to quarantine instead, and both are kept.
    /// Stale sidecars at the destination are quarantined first (SQLite would splice them in).
    package func relocateStore(
        _ source: ContainerLocation, to requested: ContainerLocation, strategy: RelocationStrategy,
        report: inout RelocationReport
    ) throws {
        var destination = requested
        let target = StoreFileSet(main: destination.url(in: container))
        if fileSystem.exists(target.main.path) {
            destination = quarantine.location(for: source.url(in: container))
            logger.warning("store in both places; the source goes to quarantine", metadata: ["store": "\(source)"])
        } else {
            report.quarantined += try quarantine.moveStaleFiles(of: target)
        }
        let moved = try run(move(source, destination), strategy: strategy, subject: source.path)
        if destination != requested {
            report.quarantined.append(.init(from: moved.from, to: moved.to, reason: .conflict))
        } else {
            report.moved.append(moved)
        }
    }

    /// Runs one move. Two mounts of one device (a bind mount, a container volume) share `st_dev`,
    /// yet a rename between them fails with `EXDEV` before anything moved: `auto` then copies.
    private func run(
        _ move: StoreMove, strategy: RelocationStrategy, subject: String
    ) throws(RelocationError) -> RelocationReport.MovedStore {
        let (resolved, bytes) = try move.preflight(strategy)
        let first = Result { () throws(RelocationError) in
            try move.run(strategy: resolved, bytes: bytes, observer: observer(for: subject))
        }
        guard case .failure(let error) = first, error.isCrossDevice, strategy == .auto, resolved == .rename else {
            return try first.get()
        }
        logger.notice("rename crossed a mount; copying instead", metadata: ["store": "\(subject)"])
        let (_, copyBytes) = try move.preflight(.copy)
        return try move.run(strategy: .copy, bytes: copyBytes, observer: observer(for: subject))
    }

    /// The internal files among `entries` that belong to no store: orphan sidecars, Backstage
    /// temporaries, support folders without their database. The one rule for what quarantine takes.
    /// False when a file or folder named `name` can never be one of the ``strays(in:)``: they
    /// are all orphan sidecars (`-wal`, `-shm`, `-journal`), Backstage temporaries or Core Data
    /// support folders, each known by its name before its bytes.
    static func mayBeStray(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        func hasSuffix(_ suffix: StaticString) -> Bool {
            let count = suffix.utf8CodeUnitCount
            guard name.count > count else { return false }
            return memcmp(name.baseAddress! + (name.count - count), suffix.utf8Start, count) == 0
        }
        if hasSuffix("-wal") || hasSuffix("-shm") || hasSuffix("-journal") { return true }
        if name.first == UInt8(ascii: "."), name.count > 1 + 8, hasSuffix("_SUPPORT") { return true }
        let marker: StaticString = ".backstage-tmp"
        let count = marker.utf8CodeUnitCount
        guard name.count >= count else { return false }
        for start in 0...(name.count - count) where name[start] == UInt8(ascii: ".") {
            if memcmp(name.baseAddress! + start, marker.utf8Start, count) == 0 { return true }
        }
        return false
    }

    static func strays(in entries: [ClassifiedFile]) -> [ClassifiedFile] {
        // The stores' folder and name without extension, once: a support folder looks itself up.
        let stores = Set(entries.filter { $0.kind == .database }.map { storeKey($0.path) })
        return entries.filter { entry in
            switch entry.kind {
            case .orphanSidecar, .backstageTemporary: true
            case .coreDataSupport: !stores.contains(supportKey(entry.path))
            default: false
            }
        }
    }

    /// Quarantines the ``strays(in:)`` of a folder's entries.
    func quarantineStrays(in entries: [ClassifiedFile], root: URL, report: inout RelocationReport) throws {
        for entry in Self.strays(in: entries) {
            guard let reason = QuarantineReason(stray: entry.kind) else { continue }
            report.quarantined.append(try quarantine.move(root.appending(path: entry.path), reason: reason))
        }
    }

    /// `folder/Notes.sqlite` → `folder/Notes`: what its support folder `folder/.Notes_SUPPORT` names.
    private static func storeKey(_ path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        return folder + "/" + ((path as NSString).lastPathComponent as NSString).deletingPathExtension
    }

    /// `folder/.Notes_SUPPORT` → `folder/Notes`.
    private static func supportKey(_ path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        return folder + "/" + String(name.dropFirst().dropLast("_SUPPORT".count))
    }
}
