import BackstageModel
import BackstageSystem
import Foundation

/// A `quarantine` step: takes the strays among a folder's classified entries (``FileClassifier/strays(in:)``)
/// into quarantine. Each file moves with a rename, or a copy removed only after it is complete.
package struct QuarantineStep: JournaledStep {
    package static let kind = StepKind.quarantine
    let context: StepContext
    /// The folder the entries were found in.
    let root: URL
    let entries: [ClassifiedFile]

    package var subject: String { root.path }

    /// What the step set aside (`quarantined`).
    package func run(observing observer: MoveObserver) throws -> RelocationReport {
        var report = RelocationReport()
        try context.quarantineStrays(in: entries, root: root, report: &report)
        return report
    }

    /// There is nothing half done to finish, and a quarantine never writes a journal.
    package static func recover(_ record: UpgradeJournal, in context: StepContext) throws -> String {
        try context.journal.clear()
        return "nothing to finish"
    }

    package init(context: StepContext, root: URL, entries: [ClassifiedFile]) {
        self.context = context
        self.root = root
        self.entries = entries
    }
}
