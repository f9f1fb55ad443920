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
                repaired = (try? db.execute(sql: sql, arguments: StatementArguments(tuple + [rowid.databaseValue]))) != nil
            }
            if !repaired {
                try? db.execute(sql: sql, arguments: StatementArguments(key.from.map { _ in DatabaseValue.null } + [rowid.databaseValue]))
            }
        }
    }

    /// The columns of foreign key `id` of `table`, and up to 10,000 keys of its parent's rows.
    private func referencedKeys(_ table: String, id: Int, in db: Database) throws -> (from: [String], tuples: [[DatabaseValue]]) {
        let rows = try Row.fetchAll(db, sql: "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) WHERE id = ? ORDER BY seq",
                                    arguments: [table, id])
        guard let parent: String = rows.first?["table"] else { return ([], []) }
        let from = rows.map { $0["from"] as String }
        var to = rows.compactMap { $0["to"] as String? }
        if to.count != from.count {
            to = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", arguments: [parent])
            if to.isEmpty { to = ["rowid"] }
        }
        guard to.count == from.count else { return ([], []) }
        let columns = to.map(\.quotedSQLIdentifier).joined(separator: ", ")
        let tuples = try Row.fetchAll(db, sql: "SELECT \(columns) FROM \(parent.quotedSQLIdentifier) LIMIT 10000").map { Array($0.databaseValues) }
        return (from, tuples.filter { !$0.contains(where: \.isNull) })
    }
}
