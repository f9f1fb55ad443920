import Backstage
import Foundation
import GRDB

extension SchemaGenerator {
    /// The script a developer would give the `sqlite3` shell to make the same store: the schema in
    /// the generator's order (tables, virtual tables, views and triggers; the indexes of tables a
    /// trigger touches; the rows; the other indexes), then `rows[table]` rows per table inserted
    /// with `generate_series`, values of the kinds and sizes the capture measured. It is the
    /// baseline `backstage bench` times generation against, so it does the same work with none of
    /// the care: Core Data's external data is written with the shell's `writefile()` into
    /// `externalDataFolder` (a path the shell resolves; inline when nil), the functions only Core
    /// Data registers become `coalesce` (the triggers still fire), constraint failures are skipped
    /// (`INSERT OR IGNORE`) rather than retried.
    public func shellScript(rows: [String: Int], externalDataFolder: String? = nil) throws -> String {
        let functions = try stubFunctions(callersOnly: true).map(\.name)
        let tables = Set(schema.tableNames.map { $0.lowercased() })
        // A name before a parenthesis that is a table (INSERT INTO t (a, b)) is no call.
        let calls = functions.filter { !tables.contains($0.lowercased()) }
        func standingIn(_ sql: String) -> String {
            var sql = sql
            for name in calls {
                sql = sql.replacing(try! Regex("\\b\(name)\\s*\\(\\s*\\)").ignoresCase(), with: "NULL")
                sql = sql.replacing(try! Regex("\\b\(name)\\s*\\(").ignoresCase(), with: "coalesce(NULL, NULL, ")
            }
            return sql
        }
        let early = tablesTriggersTouch
        var script =
            "PRAGMA page_size = \(schema.pageSize);\nPRAGMA journal_mode = OFF;\nPRAGMA synchronous = OFF;\nBEGIN;\n"
        for object in schema.objects where object.kind != .index { script += standingIn(object.sql) + ";\n" }
        for object in schema.objects where object.kind == .index && early.contains(object.table.uppercased()) {
            script += object.sql + ";\n"
        }
        // Columns, keys and references as SQLite reads them from the schema, in an empty database.
        let queue = try DatabaseQueue()
        try queue.write { db in
            for object in schema.objects where object.kind == .table || object.kind == .virtualTable {
                try db.execute(sql: object.sql)
            }
        }
        script += try queue.read { db in
            var inserts = ""
            for table in try insertionOrder(db) {
                let count = rows[table] ?? 0
                guard count > 0 else { continue }
                let plans = try columnPlans(table, in: db)
                guard !plans.isEmpty else { continue }
                let references = try Row.fetchAll(
                    db, sql: "SELECT \"from\", \"table\" FROM pragma_foreign_key_list(?)", arguments: [table])
                let isRTree =
                    schema.objects.first { $0.name == table }?.sql.uppercased().contains("USING RTREE") ?? false
                let values = plans.enumerated().map { index, plan -> String in
                    if isRTree {
                        return index == 0 ? "value" : (index % 2 == 1 ? "(value % 180) - 90.0" : "(value % 180) - 89.5")
                    }
                    let parent = references.first { ($0["from"] as String) == plan.name }.map { $0["table"] as String }
                    return shellValue(
                        plan, parentRows: parent.map { rows[$0] ?? 0 }, externalDataFolder: externalDataFolder)
                }
                inserts +=
                    "INSERT OR IGNORE INTO \(table.quotedSQLIdentifier) (\(plans.map(\.name.quotedSQLIdentifier).joined(separator: ", "))) "
                inserts += "SELECT \(values.joined(separator: ", ")) FROM generate_series(1, \(count));\n"
            }
            return inserts
        }
        for object in schema.objects where object.kind == .index && !early.contains(object.table.uppercased()) {
            script += object.sql + ";\n"
        }
        script += "COMMIT;\n"
        if schema.journalMode == "wal" { script += "PRAGMA journal_mode = WAL;\n" }
        return script
    }

    /// One column's value for row `value` of `generate_series`, as SQL.
    private func shellValue(_ plan: ColumnPlan, parentRows: Int?, externalDataFolder: String?) -> String {
        func sometimesNull(_ expression: String, _ fraction: Double) -> String {
            guard !plan.notNull, fraction > 0 else { return expression }
            return "CASE WHEN abs(random()) % 1000 < \(Int(fraction * 1000)) THEN NULL ELSE \(expression) END"
        }
        if let parentRows {
            return parentRows == 0
                ? (plan.notNull ? "0" : "NULL")
                : sometimesNull("1 + abs(random()) % \(parentRows)", plan.statistics.nullFraction)
        }
        let s = plan.statistics
        let size = max(8, Int(s.averageBytes.rounded()))
        switch plan.role {
        case .rowNumber: return "value"
        case .reference(let rows): return rows == 0 ? "NULL" : "1 + abs(random()) % \(rows)"
        case .entity(let ids): return "\(ids.first ?? 0)"
        case .version: return "1"
        case .statistics(let unique):
            let kinds: [(Double, ColumnPlan.Affinity)] = [
                (s.integerFraction, .integer), (s.realFraction, .real), (s.textFraction, .text),
                (s.blobFraction, .blob),
            ]
            let kind =
                kinds.filter { $0.0 > 0 }.max { $0.0 < $1.0 }?.1
                ?? (plan.affinity == .numeric ? .integer : plan.affinity)
            let value: String
            switch kind {
            case .integer, .numeric:
                value =
                    unique
                    ? "value"
                    : "abs(random()) % \(Int64(1) << Int64(max(1, min(62, s.integerBits == 0 ? 16 : s.integerBits))))"
            case .real:
                value = "600000000 + abs(random()) % 1000000000 / 1000.0"
            case .text:
                value = (unique ? "value || ' ' || " : "") + "substr(hex(randomblob(\(size / 2 + 1))), 1, \(size))"
            case .blob:
                // A file named by a random UUID, and the reference Core Data keeps: 0x02, the UUID, a NUL.
                // (The subquery names `value` so that SQLite runs it for each row, not once.)
                let external =
                    externalDataFolder.map { folder in
                        "(SELECT CAST(x'02' || u || x'00' AS BLOB) FROM (SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || substr(h, 17, 4) || '-' || substr(h, 21) AS u "
                            + "FROM (SELECT hex(randomblob(16)) || substr(value, 1, 0) AS h)) WHERE writefile('\(folder.replacing("'", with: "''"))/' || u, randomblob(\(externalAverage) / 2 + abs(random()) % \(externalAverage))) >= 0)"
                    } ?? "randomblob(\(externalAverage))"
                value =
                    s.externalFraction > 0
                    ? "CASE WHEN abs(random()) % 1000 < \(Int(s.externalFraction * 1000)) THEN \(external) ELSE randomblob(\(size)) END"
                    : "randomblob(\(size))"
            }
            return unique ? value : sometimesNull(value, s.nullFraction)
        }
    }
}
