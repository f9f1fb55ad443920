import BackstageModel
import BackstageSystem
import Foundation

/// Runs the journaled steps of one run on one container: it holds the container's run lock while it
/// lives, finishes or undoes the step a crash left in the journal (by the step's kind), and gives each
/// step its observer, which reports progress, calls the crash-point hook at every boundary and says
/// whether the run was cancelled. ``Relocator`` and ``Upgrader`` set up their runs through it.
package struct StepRunner {
    /// What every step works with: the container, the file system, the journal, quarantine.
    let context: StepContext
    /// The kinds of step a journal may name, given by the layer that defines them.
    private let kinds: [any JournaledStep.Type]
    private let runLock: RunLock
    /// Called at every boundary every step passes, with the crash point it is (the step's kind,
    /// the phase, and which time the run reaches it). Crash tests kill the process there.
    package var boundaryHook: (@Sendable (CrashPoint) -> Void)?
    private let tally = CrashPoint.Tally()

    /// Takes the container's run lock, then runs steps of `kinds` with `context`.
    ///
    /// - throws: ``BackstageError/Cause/containerBusy`` when another process runs on the container.
    package init(context: StepContext, kinds: [any JournaledStep.Type]) throws(BackstageError) {
        self.runLock = try RunLock(container: context.container, fileSystem: context.fileSystem)
        self.context = context
        self.kinds = kinds
    }

    /// Releases the run lock.
    package func release() {
        runLock.release()
    }

    /// Finishes or undoes the step a journal left behind, whatever its kind, then removes the
    /// half-made copies a crash left in quarantine.
    /// - returns: A line for the report, or nil when there was no journal.
    package func recover() throws -> String? {
        let recovered = try recoverJournal()
        try context.quarantine.removeTemporaries()
        return recovered
    }

    private func recoverJournal() throws -> String? {
        let journal = context.journal
        try journal.removeStaleTemporary()
        guard let record = try journal.read() else { return nil }
        for location in [record.source, record.destination] + (record.targets ?? [])
        where !context.container.defines(location.root) {
            throw BackstageError(
                .journalInUndefinedAppGroup(identifier: location.root.rawValue), path: journal.url.path,
                during: .journaling)
        }
        guard let kind = kinds.first(where: { $0.kind == record.step }) else {
            throw BackstageError(
                .unreadableJournal(reason: "this run cannot finish a \(record.step)"), path: journal.url.path,
                during: .journaling)
        }
        let outcome = try kind.recover(record, in: context)
        context.logger.notice(
            "recovered interrupted step",
            metadata: ["step": "\(record.step)", "outcome": "\(outcome)", "source": "\(record.source)"])
        let destinations = record.targets?.map(\.description).joined(separator: ", ") ?? record.destination.description
        return "\(outcome): \(record.step) \(record.source) → \(destinations) (was at \(record.phase))"
    }

    /// Runs `step`: its preflight, then its run, with an observer that reports progress to
    /// `onProgress` (the context's when nil) and calls the hooks at every boundary.
    package func run<Step: JournaledStep>(
        _ step: Step, onProgress: ((RelocationProgress) -> Void)? = nil
    ) throws -> Step.Outcome {
        try step.preflight()
        return try step.run(observing: observer(for: step, onProgress: onProgress))
    }

    private func observer<Step: JournaledStep>(
        for step: Step, onProgress: ((RelocationProgress) -> Void)?
    ) -> MoveObserver {
        var context = context
        if let onProgress { context.onProgress = onProgress }
        if let hook = boundaryHook {
            let tally = tally, kind = Step.kind
            context.phaseHook = { _, phase in hook(tally.reached(kind, phase)) }
        }
        return context.observer(for: step.subject)
    }
}
