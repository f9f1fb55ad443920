import BackstageModel
/// The registry of step kinds: a plan's JSON reads, a journal names, crash points and the runner's
/// recovery know only these. A new kind is a folder of `Steps/` with its ``StepDefinition`` and its
/// journaled step, and one line here.
package enum StepKinds {
    static let all: [any StepDefinition.Type] = [
        UpgradeStep.Relocate.self,
        UpgradeStep.Split.self,
        UpgradeStep.MigrateSchema.self,
        UpgradeStep.Quarantine.self,
        UpgradeStep.CoreDataMigration.self,
    ]

    /// The kind named `kind`, nil for a name no kind has.
    static func named(_ kind: StepKind) -> (any StepDefinition.Type)? {
        all.first { $0.kind == kind }
    }

    /// The journaled steps a journal may name, for the runner's recovery (``StepRunner``).
    package static var journaled: [any JournaledStep.Type] { all.map { $0.journaled } }

    /// The kinds' names in a sentence: `relocate, split, migrateSchema or quarantine`.
    static var namesInWords: String {
        let names = all.map { $0.kind.rawValue }
        return names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
    }
}
