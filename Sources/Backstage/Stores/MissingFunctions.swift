import Foundation
import GRDB
import GRDBSQLite

/// Stand-ins for the SQL functions a store's triggers and views call that only the app registers.
///
/// Core Data's triggers call `NSCoreDataTriggerUpdateAffectedObjectValue` and friends, which exist
/// only inside a Core Data process: any statement that fires such a trigger elsewhere fails with
/// "no such function". Backstage registers each missing function as one that returns NULL, so a
/// migration can update rows of a real Core Data store and the triggers still run their SQL (the
/// stand-in only drops the notification Core Data would have sent to its in-memory objects).
package enum MissingFunctions {
    /// Registers a stand-in for every function the schema's triggers and views call that this
    /// SQLite does not have.
    package static func register(in db: Database) throws {
        standInCollations(in: db)
        let sql = try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")
        guard !sql.isEmpty else { return }
        for name in try missing(in: sql.joined(separator: " "), db: db) { db.add(function: standIn(name)) }
    }

    /// The names called in `sql` (`name(`) that are neither SQLite functions nor keywords.
    package static func missing(in sql: String, db: Database) throws -> [String] {
        let known = Set(try String.fetchAll(db, sql: "SELECT DISTINCT lower(name) FROM pragma_function_list"))
        let keywords: Set<String> = [
            "in", "exists", "values", "as", "on", "using", "not", "and", "or", "when", "then", "else", "cast",
            "case", "select", "from", "where", "begin", "end", "into", "over", "filter", "like", "glob",
        ]
        // A table name before a column list (INSERT INTO t (a, b)) matches too: a function of that name is harmless.
        let names = Set(sql.matches(of: /([A-Za-z_][A-Za-z0-9_]*)\s*\(/).map { String($0.1) })
        return names.filter { !known.contains($0.lowercased()) && !keywords.contains($0.lowercased()) }.sorted()
    }

    /// Reads a store as the app that made it does: double-quoted string literals accepted (as in
    /// SQLite's default build; GRDB turns them off), and stand-ins for the functions and
    /// collations the app registers on its own connections.
    package static func configureAsTheApp(_ configuration: inout Configuration) {
        configuration.acceptsDoubleQuotedStringLiterals = true
        configuration.prepareDatabase { db in try register(in: db) }
    }

    /// A collation only the app registers (`COLLATE localized`, say) is made, when SQLite first
    /// needs it, as one that orders text by its bytes, as `BINARY` does.
    package static func standInCollations(in db: Database) {
        sqlite3_collation_needed(db.sqliteConnection, nil) { _, connection, _, name in
            guard let connection, let name else { return }
            sqlite3_create_collation_v2(
                connection, name, SQLITE_UTF8, nil,
                { _, length1, bytes1, length2, bytes2 in
                    let shared = Int(min(length1, length2))
                    guard let bytes1, let bytes2 else { return length1 - length2 }
                    let order = shared == 0 ? 0 : memcmp(bytes1, bytes2, shared)
                    return order != 0 ? order : length1 - length2
                }, nil)
        }
    }

    /// A function of any arity that returns NULL; deterministic, as SQLite requires of a function
    /// an index expression, a CHECK or a generated column calls.
    package static func standIn(_ name: String) -> DatabaseFunction {
        DatabaseFunction(name, argumentCount: nil, pure: true) { _ in nil }
    }
}

package extension String {
    /// The name as an SQL identifier, double-quoted with its own double quotes doubled: a table
    /// named `we"ird` is `"we""ird"` (GRDB's `quotedDatabaseIdentifier` leaves the quote alone).
    var quotedSQLIdentifier: String {
        "\"" + replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
