import Backstage
import Foundation

extension CatalogLint {
    /// The splits of `plan` that would separate tables the captured schemas of `previous` tie
    /// together (`SchemaTies`: a foreign key, a trigger, a view, a full-text table's content, a
    /// shadow table), across two targets or into a discarded table: errors, one per tie broken,
    /// naming both tables and both stores. A store is followed through the plan's relocations; a
    /// migration before the split is not applied (the run's preflight tries the schema it leaves).
    static func splitFindings(
        of plan: UpgradePlan, reaching name: String, from previous: CatalogVersion, in catalog: CatalogFolder
    ) throws -> [LintFinding] {
        var ties: [ContainerLocation: SchemaTies] = [:]
        for store in previous.stores { ties[store.location] = SchemaTies(try catalog.schema(of: store)) }
        var findings: [LintFinding] = []
        for step in plan.steps {
            if let relocate = step.as(UpgradeStep.Relocate.self) {
                if let moved = ties.removeValue(forKey: relocate.from) { ties[relocate.to] = moved }
            } else if let split = step.as(UpgradeStep.Split.self) {
                guard let schema = ties.removeValue(forKey: split.store) else { continue }
                findings += schema.separated(by: split).map { separation in
                    LintFinding(
                        version: name, store: split.store.description, migration: "", table: separation.tie.table,
                        severity: .error, message: separation.sentence)
                }
            }
        }
        return findings
    }
}

extension SchemaTies {
    /// The ties of a captured schema.
    init(_ schema: StoreSchema) {
        var shadows: [String: [String]] = [:]
        let objects = schema.objects.map { object in
            if let owned = object.shadowTables, !owned.isEmpty { shadows[object.name] = owned }
            let type =
                switch object.kind {
                case .table, .virtualTable: "table"
                case .index: "index"
                case .view: "view"
                case .trigger: "trigger"
                }
            return SchemaObject(type: type, name: object.name, table: object.table, sql: object.sql)
        }
        self.init(objects, shadows: shadows)
    }
}
