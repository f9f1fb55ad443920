import BackstageModel
import BackstageSystem
import Foundation

/// One step of a run that keeps a journal while it changes files: a relocation, a split, a schema
/// migration, a quarantine. ``StepRunner`` runs it, and finishes or undoes it after a crash.
///
/// The engine knows steps only through this protocol: the layer that defines them gives the runner
/// their types (``StepRunner/init(context:kinds:)``), and the runner picks the one a journal names by
/// its ``kind``.
package protocol JournaledStep {
    /// What the step did, for the run's report.
    associatedtype Outcome
    /// The kind its journal records name.
    static var kind: StepKind { get }
    /// The store or folder the step works on, named in progress events and logs.
    var subject: String { get }
    /// Checks what can be checked before any change; nothing has changed when it throws.
    func preflight() throws
    /// Runs the step, telling `observer` each boundary it passes and its progress, and asking it
    /// whether the run was cancelled.
    func run(observing observer: MoveObserver) throws -> Outcome
    /// Finishes or undoes the step of this kind that `record` names (a crash interrupted it), and
    /// clears the journal; returns what was done, for the report (`completed`, `rolled back`...).
    ///
    /// A recovery vouches only for what it re-checks under the store's lock, taken as a run takes it
    /// (``StoreLock/forRecovery(of:timeout:fileSystem:)``: another process holding the store is "store
    /// in use"): a source is removed only when it is still what the step verified (a ``StoreStamp``
    /// in the journal, or a byte-for-byte comparison with the committed destination); otherwise the
    /// step is undone and runs again, or, past its commit, the source goes to quarantine.
    static func recover(_ record: UpgradeJournal, in context: StepContext) throws -> String
}

extension JournaledStep {
    /// No check before the run: the step checks as it goes, before its first change.
    package func preflight() throws {}
}
