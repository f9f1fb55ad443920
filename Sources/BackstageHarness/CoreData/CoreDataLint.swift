import Backstage
import Foundation

/// `catalog lint` for a catalog made from a Core Data model: per consecutive pair of model
/// versions, whether Core Data's lightweight migration can infer the migration
/// (``InferredMigration``) — an error naming the model version, entity and attribute or
/// relationship when it cannot — unless a mapping model maps the pair (then each custom
/// `NSEntityMigrationPolicy` is a warning: the migration needs the developer's SQL). With the
/// statistics of a store captured into the version before (`catalog init --model … --from STORE`),
/// it also says what users' data would break: NULLs under an attribute that becomes mandatory,
/// duplicates under a new uniqueness constraint, rows without a new mandatory relationship; and a
/// change that fails only on some data is a warning when the captured store has none of it.
public enum CoreDataLint {
    /// The findings for `catalog`; none for a catalog not made from a model.
    public static func findings(in catalog: CatalogFolder) throws -> [LintFinding] {
        guard let kept = try CoreDataCatalog.keptModel(of: catalog) else { return [] }
        var findings: [LintFinding] = []
        let versions = catalog.manifest.versions
        for (previous, next) in zip(versions, versions.dropFirst()) {
            guard let source = kept.version(forCatalogVersion: previous.name),
                let destination = kept.version(forCatalogVersion: next.name)
            else { continue }
            let store = next.writableStore?.location.description ?? ""
            let statistics = try previous.writableStore.map { try catalog.schema(of: $0) }.flatMap {
                CoreDataCatalog.isCaptured($0) ? $0 : nil
            }
            func finding(_ migration: String, _ table: String, _ severity: LintFinding.Severity, _ message: String) {
                findings.append(
                    LintFinding(
                        version: next.name, store: store, migration: migration, table: table, severity: severity,
                        message: message))
            }
            var covering: [CoreDataMappingModel] = []
            for mapping in kept.mappings {
                let pairs = mapping.versions(in: kept.model)
                let fits = pairs.contains { $0.source == source.name && $0.destination == destination.name }
                if fits && pairs.count == 1 {
                    covering.append(mapping)
                } else if fits {
                    finding(
                        "\(mapping.name).xcmappingmodel", "", .warning,
                        "the mapping model names no model versions and its entities fit several pairs ("
                            + pairs.map { "\($0.source) → \($0.destination)" }.joined(separator: ", ")
                            + "): it is not taken to map model version \(source.name) → \(destination.name)")
                }
            }
            if !covering.isEmpty {
                for mapping in covering {
                    for entity in mapping.customPolicies {
                        let name = entity.destinationEntity ?? entity.sourceEntity ?? ""
                        finding(
                            "\(mapping.name).xcmappingmodel", table(of: name, in: destination), .warning,
                            "model version \(source.name) → \(destination.name), entity \(name): the mapping runs the "
                                + "app's migration policy \(entity.migrationPolicyClassName ?? ""), code Backstage "
                                + "cannot run: the migration needs the developer's SQL for it")
                    }
                }
                continue
            }
            switch InferredMigration.infer(from: source, to: destination) {
            case .failure(let failure):
                for problem in failure.problems {
                    let (severity, data) = judge(problem, source: source, statistics: statistics)
                    finding(
                        "lightweight", table(of: problem.entity, in: destination), severity,
                        "\(problem.description)\(data); Core Data cannot infer this migration: add a mapping model "
                            + "for it (catalog init --mapping) or change the model")
                }
                // What the users' data would break besides, once the model is mended: said now, not
                // after the next try.
                if let mapping = failure.partial {
                    for (table, message) in newConstraintFindings(
                        mapping, source: source, destination: destination, statistics: statistics)
                    {
                        finding("lightweight", table, .error, message)
                    }
                }
            case .success(let mapping):
                for (table, message) in newConstraintFindings(
                    mapping, source: source, destination: destination, statistics: statistics)
                {
                    finding("lightweight", table, .error, message)
                }
            }
        }
        return findings
    }

    /// The table of `entity`'s hierarchy in `version`.
    static func table(of entity: String, in version: CoreDataModelVersion) -> String {
        "Z" + InferredMigration.root(of: entity, in: version).uppercased()
    }

    /// A problem's severity and what the captured data says about it: an error unless captured
    /// statistics show that no user's data is touched by it (then a warning: other installs may be).
    private static func judge(
        _ problem: CoreDataInferenceProblem, source: CoreDataModelVersion, statistics: StoreSchema?
    ) -> (LintFinding.Severity, String) {
        guard let statistics, let from = problem.sourceEntity.flatMap(source.entity(named:)) else {
            return (.error, "")
        }
        let tableName = table(of: from.name, in: source)
        guard let table = statistics.tables[tableName] else { return (.error, "") }
        switch problem.reason {
        case .newMandatoryWithoutDefault, .newMandatoryRelationship:
            if table.rows == 0 {
                return (.warning, " (the captured store has no rows in \(tableName): installs that have some fail)")
            }
            return (.error, " (\(table.rows) rows of \(tableName) in the captured store would have none)")
        case .becameMandatoryWithoutDefault, .relationshipBecameMandatory:
            let old = problem.sourceProperty ?? problem.property ?? ""
            guard let column = table.columns.first(where: { $0.name == "Z" + old.uppercased() }) else {
                return (.error, "")
            }
            let nulls = Int((Double(table.rows) * column.nullFraction).rounded())
            if table.rows == 0 || nulls == 0 {
                return (
                    .warning,
                    " (no row of the captured store holds NULL in \(tableName).\(column.name): installs whose rows do fail)"
                )
            }
            return (
                .error,
                String(
                    format: " (%d of %d rows of %@ in the captured store, %.0f%%, hold NULL in %@)", nulls,
                    table.rows, tableName, column.nullFraction * 100, column.name)
            )
        default:
            return (.error, "")
        }
    }

    /// Single-property uniqueness constraints the destination adds over a column whose captured
    /// values repeat: the migration fails on the duplicates.
    private static func newConstraintFindings(
        _ mapping: CoreDataMigrationMapping, source: CoreDataModelVersion, destination: CoreDataModelVersion,
        statistics: StoreSchema?
    ) -> [(table: String, message: String)] {
        guard let statistics else { return [] }
        var found: [(String, String)] = []
        for entityMapping in mapping.entities {
            guard let from = entityMapping.source.flatMap(source.entity(named:)),
                let to = destination.entity(named: entityMapping.destination)
            else { continue }
            let renamed = Dictionary(
                entityMapping.attributes.compactMap { a in a.source.map { (a.destination, $0) } },
                uniquingKeysWith: { a, _ in a })
            let existing = Set(InferredMigration.lineage(of: from.name, in: source).flatMap(\.uniquenessConstraints))
            for constraint in InferredMigration.lineage(of: to.name, in: destination).flatMap(\.uniquenessConstraints)
            where constraint.count == 1 {
                let old = constraint.map { renamed[$0] ?? $0 }
                guard !existing.contains(old), let tableName = Optional(table(of: from.name, in: source)),
                    let table = statistics.tables[tableName],
                    let column = table.columns.first(where: { $0.name == "Z" + old[0].uppercased() })
                else { continue }
                let nonNull = Double(table.rows) * (1 - column.nullFraction)
                guard nonNull >= 2, column.distinctRatio < 1 - 1e-9 else { continue }
                found.append(
                    (
                        tableName,
                        "model version \(source.name) → \(destination.name), entity \(to.name), attribute "
                            + "\(constraint[0]): the new uniqueness constraint fails on the captured store, whose "
                            + String(format: "values there repeat (%.0f%% distinct)", column.distinctRatio * 100)
                            + "; remove the duplicates first (a mapping model or an earlier version)"
                    ))
            }
        }
        return found
    }
}
