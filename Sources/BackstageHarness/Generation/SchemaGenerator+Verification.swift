import Backstage
import Foundation
import GRDB

extension SchemaGenerator {
    /// Checks the generated store against its own schema, once its rows are in: SQLite's
    /// `integrity_check` (confirmed as ``StoreIntegrity`` confirms it), `foreign_key_check` (but
    /// for the keys the capture recorded broken), every `CHECK` of every table, the condition of
    /// every `INSERT` trigger's `RAISE` read against the rows as they ended (an `AFTER` trigger, a
    /// repair or a later row may have changed them), and a row in every table that had rows when
    /// captured. A fixture that breaks any of them is no fixture: the first broken rule is thrown,
    /// naming its table and constraint (``GeneratorError/broken(table:constraint:rows:)``).
    ///
    /// SQLite's `quick_check`, not `integrity_check`: the store was just written by SQLite itself,
    /// which enforced `NOT NULL`, `CHECK` and `UNIQUE` row by row and keeps its indexes in step with
    /// its tables; what `integrity_check` adds (every index entry looked up in its table, a fifth of
    /// a 200 MB chinook generation) checks SQLite, not the generator. `foreign_key_check` (a
    /// seventh) runs where `keysChecked`: where a key may name no row and the keys were repaired;
    /// elsewhere every key was taken from a parent row.
    func verify(_ db: Database, counts: [String: Int], keysChecked: Bool = true) throws {
        if let problem = try StoreIntegrity.problems(in: db, quick: true).first {
            throw GeneratorError.damaged(problem: problem)
        }
        if keysChecked { try verifyForeignKeys(db) }
        for object in schema.objects where object.kind == .table {
            let table = object.name.quotedSQLIdentifier
            for check in SchemaRules.checks(inCreateTable: object.sql) {
                let broken = try count(db, "SELECT COUNT(*) FROM \(table) WHERE NOT (\(check))")
                if broken > 0 {
                    throw GeneratorError.broken(
                        table: object.name, constraint: "CHECK (\(check.trimmingCharacters(in: .whitespaces)))",
                        rows: broken)
                }
            }
        }
        for refusal in refusals() {
            let broken = try count(
                db, "SELECT COUNT(*) FROM \(refusal.table.quotedSQLIdentifier) WHERE \(refusal.condition)")
            if broken > 0 {
                throw GeneratorError.broken(
                    table: refusal.table, constraint: "the RAISE of trigger \(refusal.trigger)", rows: broken)
            }
        }
        for (table, statistics) in schema.tables.sorted(by: { $0.key < $1.key })
        where statistics.rows > 0 && (counts[table] ?? 0) > 0 {
            guard try db.tableExists(table) || schema.objects.contains(where: { $0.name == table }) else { continue }
            if try Row.fetchOne(db, sql: "SELECT 1 FROM \(table.quotedSQLIdentifier) LIMIT 1") == nil {
                throw GeneratorError.empty(table: table, captured: statistics.rows)
            }
        }
    }

    /// The refusals of the schema's `INSERT` triggers on tables (not a view's `INSTEAD OF`), as
    /// conditions on their tables' rows.
    func refusals() -> [SchemaRules.Refusal] {
        let tables = Set(schema.objects.filter { $0.kind == .table }.map { $0.name.lowercased() })
        return schema.objects.filter {
            $0.kind == .trigger && RowBatches.triggerEvent($0.sql) == "insert"
                && tables.contains($0.table.lowercased())
        }.flatMap { SchemaRules.refusals(inTrigger: $0.sql, name: $0.name, table: $0.table) }
    }

    /// Rows breaking a foreign key the capture did not record broken: the first such key thrown.
    private func verifyForeignKeys(_ db: Database) throws {
        let recorded = Set(
            (schema.foreignKeyViolations ?? []).map { "\($0.table.lowercased())\u{0}\($0.parent.lowercased())" })
        let violations: [Row]
        do {
            violations = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
        } catch let error as DatabaseError where (error.message ?? "").contains("foreign key mismatch") {
            return  // keys SQLite itself cannot check (a parent key not unique): the app's store neither
        }
        var broken: [String: (table: String, parent: String, rows: Int)] = [:]
        for violation in violations {
            let table: String = violation[0], parent: String = violation[2]
            let key = "\(table.lowercased())\u{0}\(parent.lowercased())"
            guard !recorded.contains(key) else { continue }
            broken[key, default: (table, parent, 0)].rows += 1
        }
        if let first = broken.values.sorted(by: { ($0.table, $0.parent) < ($1.table, $1.parent) }).first {
            throw GeneratorError.broken(
                table: first.table, constraint: "FOREIGN KEY to \(first.parent)", rows: first.rows)
        }
    }

    private func count(_ db: Database, _ sql: String) throws -> Int {
        do {
            return try Int.fetchOne(db, sql: sql) ?? 0
        } catch let error as DatabaseError {
            // A rule that reads what this SQLite lacks cannot be checked here, but SQLite enforced
            // it as each row went in: no verdict, rather than a wrong one.
            _ = error
            return 0
        }
    }
}
