import BackstageModel
import BackstageSystem
import Foundation

/// A `quarantine` step: takes the strays among a folder's classified entries (``FileClassifier/strays(in:)``)
/// into quarantine. Each file moves with a rename, or a copy removed only after it is complete.
struct QuarantineStep: JournaledStep {
    static let kind = StepKind.quarantine
    let context: StepContext
    /// The folder the entries were found in.
    let root: URL
    let entries: [ClassifiedFile]

    var subject: String { root.path }

    /// What the step set aside (`quarantined`).
    func run(observing observer: MoveObserver) throws -> RelocationReport {
        var report = RelocationReport()
        try context.quarantineStrays(in: entries, root: root, report: &report)
        return report
    }

    /// There is nothing half done to finish, and a quarantine never writes a journal.
    static func recover(_ record: UpgradeJournal, in context: StepContext) throws -> String {
        try context.journal.clear()
        return "nothing to finish"
    }
}
