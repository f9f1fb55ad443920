import Backstage
import Foundation
import GRDB

extension SchemaGenerator {
    /// Gives a real parent's key (or NULL, where allowed) to every row whose foreign key points at
    /// no row once the tables are filled: rows a trigger wrote with a key of a row the app ships
    /// (`VALUES (0, NEW.id)` into a log whose kind 0 the app's lookup table holds), the first
    /// table of a cycle. A WITHOUT ROWID table's rows, which `foreign_key_check` cannot name,
    /// are left as they are.
    func repairForeignKeys(_ db: Database) throws {
        let violations = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
        guard !violations.isEmpty else { return }
        var random = SeededRandom(seed: seed ^ 0xF0F0_F0F0)
        var keys: [String: (from: [String], tuples: [[DatabaseValue]])] = [:]
        for violation in violations {
            let table: String = violation[0], id: Int = violation[3]
            guard let rowid: Int64 = violation[1] else { continue }
            let name = "\(table)\u{0}\(id)"
            if keys[name] == nil { keys[name] = try referencedKeys(table, id: id, in: db) }
            guard let key = keys[name], !key.from.isEmpty else { continue }
            let assignments = key.from.map { "\($0.quotedSQLIdentifier) = ?" }.joined(separator: ", ")
            let sql = "UPDATE \(table.quotedSQLIdentifier) SET \(assignments) WHERE rowid = ?"
            var repaired = false
            for _ in 0..<4 where !key.tuples.isEmpty && !repaired {
                let tuple = key.tuples[Int(random.next() % UInt64(key.tuples.count))]
                repaired =
                    (try? db.execute(sql: sql, arguments: StatementArguments(tuple + [rowid.databaseValue]))) != nil
            }
            if !repaired {
                try? db.execute(
                    sql: sql,
                    arguments: StatementArguments(key.from.map { _ in DatabaseValue.null } + [rowid.databaseValue]))
            }
        }
    }

    /// The columns of foreign key `id` of `table`, and up to 10,000 keys of its parent's rows.
    private func referencedKeys(
        _ table: String, id: Int, in db: Database
    ) throws -> (from: [String], tuples: [[DatabaseValue]]) {
        let rows = try Row.fetchAll(
            db, sql: "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) WHERE id = ? ORDER BY seq",
            arguments: [table, id])
        guard let parent: String = rows.first?["table"] else { return ([], []) }
        let from = rows.map { $0["from"] as String }
        var to = rows.compactMap { $0["to"] as String? }
        if to.count != from.count {
            to = try String.fetchAll(
                db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", arguments: [parent])
            if to.isEmpty { to = ["rowid"] }
        }
        guard to.count == from.count else { return ([], []) }
        let columns = to.map(\.quotedSQLIdentifier).joined(separator: ", ")
        // Keys whose text holds a NUL (an edge value) read as the text before it, which names no
        // row: a repair given one left the key dangling.
        let whole = to.map {
            "NOT (typeof(\($0.quotedSQLIdentifier)) = 'text' AND "
                + "instr(CAST(\($0.quotedSQLIdentifier) AS BLOB), x'00') > 0)"
        }.joined(separator: " AND ")
        let tuples = try Row.fetchAll(
            db, sql: "SELECT \(columns) FROM \(parent.quotedSQLIdentifier) WHERE \(whole) LIMIT 10000"
        ).map { Array($0.databaseValues) }
        return (from, tuples.filter { !$0.contains(where: \.isNull) })
    }
}

extension SchemaGenerator {
    /// Leaves dangling references like those the captured store carried (``StoreSchema/foreignKeyViolations``):
    /// for each recorded foreign key, about the captured share of the table's generated rows point
    /// at no parent row (keys past the parent's largest, or text no key holds). None where the
    /// capture recorded none; a row whose own constraints refuse such a key keeps its real one.
    func leaveDanglingReferences(_ db: Database, rows: [String: Int]) throws {
        for (number, violation) in (schema.foreignKeyViolations ?? []).enumerated() {
            guard let table = schema.tableNames.first(where: { $0.lowercased() == violation.table.lowercased() }),
                let generated = rows[table], generated > 0, !violation.columns.isEmpty,
                schema.objects.first(where: { $0.name == table })?.withoutRowID != true
            else { continue }
            let captured = max(schema.tables[table]?.rows ?? 0, violation.rows)
            let share = Double(violation.rows) / Double(max(captured, 1))
            let wanted = min(generated, max(1, Int((share * Double(generated)).rounded())))
            var random = SeededRandom(seed: seed ^ stableHash(table) ^ UInt64(number + 1) &* 0x9E37_79B9)
            var rowids = try Int64.fetchAll(db, sql: "SELECT rowid FROM \(table.quotedSQLIdentifier) ORDER BY rowid")
            for index in rowids.indices.reversed() where index > 0 {
                rowids.swapAt(index, Int(random.next() % UInt64(index + 1)))
            }
            let assignments = violation.columns.map { "\($0.quotedSQLIdentifier) = ?" }.joined(separator: ", ")
            let sql = "UPDATE \(table.quotedSQLIdentifier) SET \(assignments) WHERE rowid = ?"
            let parentKeys = try danglingBase(violation, in: db)
            var left = 0
            for rowid in rowids where left < wanted {
                let values = parentKeys.map { base in
                    base.map { ($0 &+ 1_000_000 &+ Int64(left)).databaseValue } ?? "missing \(left + 1)".databaseValue
                }
                let arguments = StatementArguments(values + [rowid.databaseValue])
                if (try? db.execute(sql: sql, arguments: arguments)) != nil { left += 1 }
            }
        }
    }

    /// Per column of the foreign key: the parent's largest integer key (nil: its keys are text).
    private func danglingBase(_ violation: StoreSchema.ForeignKeyViolations, in db: Database) throws -> [Int64?] {
        let keys = "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq"
        let rows = try Row.fetchAll(db, sql: keys, arguments: [violation.table])
        return try violation.columns.map { column in
            let key = rows.first {
                ($0["from"] as String).lowercased() == column.lowercased()
                    && ($0["table"] as String).lowercased() == violation.parent.lowercased()
            }
            var to: String? = key?["to"]
            if to == nil {
                to =
                    try String.fetchOne(
                        db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk",
                        arguments: [violation.parent]) ?? "rowid"
            }
            guard let to, try db.tableExists(violation.parent) else { return 0 }
            let (column, parent) = (to.quotedSQLIdentifier, violation.parent.quotedSQLIdentifier)
            let texts =
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(parent) WHERE typeof(\(column)) = 'text'")
                ?? 0
            let largest = "SELECT MAX(\(column)) FROM \(parent) WHERE typeof(\(column)) = 'integer'"
            return texts > 0 ? nil : (try Int64.fetchOne(db, sql: largest) ?? 0)
        }
    }
}
