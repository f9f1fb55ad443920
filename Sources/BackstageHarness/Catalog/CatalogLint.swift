import Backstage
import Foundation

/// One thing a plan would fail at, or lose, on real installs, found from the statistics the
/// catalog captured (never from row content).
public struct LintFinding: Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Severity: String, Sendable, Hashable, Codable {
        /// The migration fails on installs like the captured ones, or loses data the plan does
        /// not say it means to lose.
        case error
        /// The migration works, but costs the user something (time at launch).
        case warning
    }

    /// The version the plan reaches.
    public var version: String
    /// The store the migration runs on.
    public var store: String
    /// The migration's identifier; empty for a finding about a split (the store it splits is ``store``).
    public var migration: String
    public var table: String
    public var severity: Severity
    public var message: String

    public var description: String { "\(version): \(severity.rawValue): \(place): \(message)" }

    /// Where: `applicationSupport/Workouts.sqlite, migration v2-kcal, table workout`.
    /// Where a split's finding is: `documents/Feed.sqlite, split, table thumbnail`.
    public var place: String {
        if migration.isEmpty { return "\(store), split, table \(table)" }
        return table.isEmpty ? "\(store), migration \(migration)" : "\(store), migration \(migration), table \(table)"
    }
}

/// `backstage catalog lint`: what each plan's migrations would fail at or lose on real installs,
/// from the captured statistics of the version before — a `UNIQUE` index over a column whose
/// values repeat, `ADD COLUMN … NOT NULL` without a default, a rebuilt table declaring `NOT NULL`
/// (or `CHECK (… IS NOT NULL)`, `CHECK (typeof(c) = 'kind')`) on a column holding other values, or a
/// foreign key into a table that is empty, a dropped table or column holding data
/// (an error unless the migration says `"destructive": true`), a rebuild of a large table (with its
/// estimated time at the catalog's sizes); and each split that would separate tables the schema ties
/// together (a foreign key, a trigger, a view, a full-text table's content: `SchemaTies`).
public enum CatalogLint {
    /// A rebuild estimated over this many seconds at the catalog's sizes is reported.
    public static let rebuildWarningSeconds = 1.0

    /// Every finding of every plan of `catalog`, in version order.
    public static func findings(in catalog: CatalogFolder) throws -> [LintFinding] {
        var findings: [LintFinding] = []
        var previous: CatalogVersion?
        let unresolved = try CoreDataCatalog.unresolvedPlans(in: catalog)
        for version in catalog.manifest.versions {
            defer { previous = version }
            guard let previous, let file = catalog.planURL(of: version) else { continue }
            // A Core Data migration without the destination's version hashes: said, and the rest of
            // the plan read as if they were given (they change no table).
            let missing = unresolved.filter { $0.version == version.name }
            for plan in missing {
                findings.append(
                    LintFinding(
                        version: version.name, store: version.writableStore?.location.description ?? "",
                        migration: "coreDataMigration \(plan.migration)", table: "", severity: .warning,
                        message: "\(plan.reason); upgrade refuses \(plan.plan) until they are given "
                            + "(simulate and bench run it without them with --omit-missing-hashes)"))
            }
            let plan =
                missing.isEmpty
                ? try UpgradePlan.load(from: file) : try CoreDataCatalog.planOmittingMissingHashes(at: file)
            findings += try Self.findings(of: plan, reaching: version.name, from: previous, in: catalog)
        }
        // A catalog made from a Core Data model: whether each migration can be inferred.
        return findings + (try CoreDataLint.findings(in: catalog))
    }

    /// The findings of `plan`, which reaches version `name` from `previous`, read against the
    /// statistics `catalog` captured for `previous`.
    public static func findings(
        of plan: UpgradePlan, reaching name: String, from previous: CatalogVersion,
        in catalog: CatalogFolder
    ) throws -> [LintFinding] {
        var tables: [String: (statistics: TableStatistics, sql: String)] = [:]
        for store in previous.stores {
            let schema = try catalog.schema(of: store)
            for object in schema.objects where object.kind == .table {
                if let statistics = schema.tables[object.name] {
                    tables[object.name.lowercased()] = (statistics, object.sql)
                }
            }
        }
        var findings = try splitFindings(of: plan, reaching: name, from: previous, in: catalog)
        for step in plan.steps.compactMap({ $0.as(UpgradeStep.MigrateSchema.self) }) {
            for migration in step.migrations {
                findings += lint(migration, tables: tables).map { table, severity, message in
                    LintFinding(
                        version: name, store: step.store.description, migration: migration.id,
                        table: table, severity: severity, message: message)
                }
            }
        }
        return findings
    }

    typealias Found = (table: String, severity: LintFinding.Severity, message: String)

    static func lint(
        _ migration: UpgradeStep.MigrateSchema.Migration,
        tables: [String: (statistics: TableStatistics, sql: String)]
    ) -> [Found] {
        var found: [Found] = []
        // Tables this migration creates, to tell a rebuild (CREATE t2 ... INSERT INTO t2 SELECT FROM t).
        var created: [String: [SQLTokens.Token]] = [:]
        var copied: Set<String> = []
        for statement in statements(migration.sql) {
            let words = statement.prefix(6).map(\.text)
            if words.starts(with: ["create", "unique", "index"]) {
                found += uniqueIndex(statement, tables: tables)
            } else if words.starts(with: ["alter", "table"]) {
                found += alterTable(statement, tables: tables, destructive: migration.destructive == true)
            } else if words.starts(with: ["drop", "table"]) {
                let name = statement.dropFirst(2).first { $0 != .word("if") && $0 != .word("exists") }?.text ?? ""
                if let stats = tables[name]?.statistics, stats.rows > 0, migration.destructive != true,
                    !copied.contains(name)
                {
                    found.append(
                        (
                            name, .error,
                            "DROP TABLE deletes its \(stats.rows) rows (in the captured data): if that is meant, "
                                + "say \"destructive\": true in the migration"
                        ))
                }
            } else if words.starts(with: ["create", "table"]),
                let name = statement.dropFirst(2).first(where: {
                    ![.word("if"), .word("not"), .word("exists")].contains($0)
                })
            {
                created[name.text] = statement
            } else if words.starts(with: ["insert", "into"]), let target = statement.dropFirst(2).first?.text,
                let definition = created[target],
                let from = statement.firstIndex(of: .word("from")), from + 1 < statement.count,
                let source = tables[statement[from + 1].text]
            {
                copied.insert(statement[from + 1].text)
                found += rebuild(into: definition, from: statement[from + 1].text, statistics: source.statistics)
                found += newConstraints(in: definition, from: statement[from + 1].text, tables: tables)
            }
        }
        return found
    }

    /// A rebuilt table's foreign keys into a table the captured data has empty, over a column that
    /// holds values, and its `CHECK (typeof(c) = 'kind')` over a column holding other kinds: every
    /// such row violates the new constraint.
    private static func newConstraints(
        in created: [SQLTokens.Token], from source: String,
        tables: [String: (statistics: TableStatistics, sql: String)]
    ) -> [Found] {
        guard let statistics = tables[source]?.statistics, statistics.rows > 0,
            let (parts, _) = SQLTokens.parenthesizedParts(created, from: 0)
        else { return [] }
        func column(_ name: String) -> ColumnStatistics? { statistics.columns.first { $0.name.lowercased() == name } }
        var found: [Found] = []
        for part in parts {
            let items = Array(part)
            // `c TYPE REFERENCES p` or `FOREIGN KEY (c) REFERENCES p`.
            if let at = items.firstIndex(of: .word("references")), at + 1 < items.count {
                let name =
                    items.first == .word("foreign") ? (items.count > 3 ? items[3].text : "") : (items.first?.text ?? "")
                let parent = items[at + 1].text
                if let captured = column(name), captured.nullFraction < 1, tables[parent]?.statistics.rows == 0 {
                    found.append(
                        (
                            source, .error,
                            "the rebuilt table declares \(captured.name) REFERENCES \(parent), but \(parent) is empty in "
                                + "the captured data while \(captured.name) holds values: those rows violate the foreign key"
                        ))
                }
            }
            let text = SQLTokens.join(part[...])
            for (kind, share) in [
                ("integer", \ColumnStatistics.integerFraction), ("real", \.realFraction), ("text", \.textFraction),
                ("blob", \.blobFraction),
            ] {
                guard let name = items.first?.text, let captured = column(name),
                    text.contains("check ( typeof ( \(name) ) = '\(kind)' )"), captured[keyPath: share] < 1 - 1e-9
                else { continue }
                found.append(
                    (
                        source, .error,
                        "the rebuilt table declares CHECK (typeof(\(captured.name)) = '\(kind)'), but "
                            + String(
                                format: "%.0f%% of its rows hold another kind of value (or NULL) in the captured data",
                                (1 - captured[keyPath: share]) * 100)
                    ))
            }
        }
        return found
    }

    /// The statements of `sql`, as tokens, without their `;` (a trigger's body stays in one).
    static func statements(_ sql: String) -> [[SQLTokens.Token]] {
        var result: [[SQLTokens.Token]] = []
        var current: [SQLTokens.Token] = []
        var inTrigger = false
        for token in SQLTokens.tokens(sql) {
            if token == .symbol(";") && !inTrigger {
                if !current.isEmpty { result.append(current) }
                current = []
                continue
            }
            current.append(token)
            if current.count <= 4, token == .word("trigger"), current.first == .word("create") { inTrigger = true }
            if inTrigger, token == .word("end") { inTrigger = false }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    private static func uniqueIndex(
        _ statement: [SQLTokens.Token], tables: [String: (statistics: TableStatistics, sql: String)]
    ) -> [Found] {
        guard let on = statement.firstIndex(of: .word("on")), on + 1 < statement.count,
            let (parts, _) = SQLTokens.parenthesizedParts(statement, from: on)
        else { return [] }
        let table = statement[on + 1].text
        guard let stats = tables[table]?.statistics, parts.count == 1, let name = parts[0].first?.text,
            let column = stats.columns.first(where: { $0.name.lowercased() == name })
        else { return [] }
        let nonNull = Double(stats.rows) * (1 - column.nullFraction)
        guard nonNull >= 2, column.distinctRatio < 1 - 1e-9 else { return [] }
        return [
            (
                table, .error,
                "CREATE UNIQUE INDEX on \(column.name) fails: its values repeat in the captured data "
                    + String(format: "(%.0f%% distinct)", column.distinctRatio * 100)
                    + "; remove the duplicates first, in the same migration"
            )
        ]
    }

    private static func alterTable(
        _ statement: [SQLTokens.Token], tables: [String: (statistics: TableStatistics, sql: String)],
        destructive: Bool
    ) -> [Found] {
        guard statement.count > 4 else { return [] }
        let table = statement[2].text
        let rest = Array(statement[3...])
        if rest.starts(with: [.word("add")]) {
            let definition =
                rest.first == .word("add") && rest.dropFirst().first == .word("column")
                ? rest.dropFirst(2) : rest.dropFirst()
            let column = definition.first?.text ?? ""
            let notNull = zip(definition, definition.dropFirst()).contains { $0 == .word("not") && $1 == .word("null") }
            if notNull && !definition.contains(.word("default")) {
                return [
                    (
                        table, .error,
                        "ADD COLUMN \(column) NOT NULL without a DEFAULT fails on every install: SQLite cannot fill its existing rows; "
                            + "give it a DEFAULT"
                    )
                ]
            }
        } else if rest.starts(with: [.word("drop")]), !destructive {
            let column =
                (rest.dropFirst().first == .word("column") ? rest.dropFirst(2) : rest.dropFirst()).first?.text ?? ""
            guard let stats = tables[table]?.statistics,
                let captured = stats.columns.first(where: { $0.name.lowercased() == column }),
                stats.rows > 0, captured.nullFraction < 1
            else { return [] }
            return [
                (
                    table, .error,
                    "DROP COLUMN \(captured.name) deletes values it holds in \(stats.rows) rows (in the captured data): if that is "
                        + "meant, say \"destructive\": true in the migration"
                )
            ]
        }
        return []
    }

    /// A table rebuilt as `created` from `source`: NOT NULL columns over NULLs, and its time.
    private static func rebuild(
        into created: [SQLTokens.Token], from source: String, statistics: TableStatistics
    )
        -> [Found]
    {
        var found: [Found] = []
        if let (parts, _) = SQLTokens.parenthesizedParts(created, from: 0) {
            for part in parts {
                let items = Array(part)
                guard let name = items.first?.text,
                    let column = statistics.columns.first(where: { $0.name.lowercased() == name }),
                    column.nullFraction > 0, statistics.rows > 0
                else { continue }
                let notNull = zip(items, items.dropFirst()).contains { $0 == .word("not") && $1 == .word("null") }
                let checkNotNull = SQLTokens.join(part).contains("check ( \(name) is not null )")
                if notNull || checkNotNull {
                    found.append(
                        (
                            source, .error,
                            "the rebuilt table declares \(column.name) \(notNull ? "NOT NULL" : "CHECK (IS NOT NULL)"), "
                                + String(
                                    format: "but %.0f%% of its rows hold NULL there in the captured data",
                                    column.nullFraction * 100)
                        ))
                }
            }
        }
        let seconds = Double(statistics.bytes) / Throughput().split
        if seconds >= rebuildWarningSeconds {
            found.append(
                (
                    source, .warning,
                    "the table is rebuilt (copied row by row): "
                        + String(
                            format: "about %.1f s for its %@ at the catalog's sizes", seconds,
                            ByteCountFormatter.string(fromByteCount: statistics.bytes, countStyle: .file))
                        + "; run the upgrade behind a progress screen"
                ))
        }
        return found
    }
}
