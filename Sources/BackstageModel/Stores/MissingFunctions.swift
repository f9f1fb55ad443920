import BackstageSystem
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
    ///
    /// Read byte by byte, and only the names called are looked up among SQLite's functions: every
    /// connection that opens a store pays for this once (a regular expression and the whole
    /// function list were a third of a split's or a migration's allocations).
    package static func missing(in sql: String, db: Database) throws -> [String] {
        let candidates = calledNames(in: sql).filter { !keywords.contains($0.lowercased()) }
        guard !candidates.isEmpty else { return [] }
        let lowered = Set(candidates.map { $0.lowercased() })
        let known = Set(
            try String.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT lower(name) FROM pragma_function_list \
                    WHERE lower(name) IN (\(databaseQuestionMarks(count: lowered.count)))
                    """,
                arguments: StatementArguments(Array(lowered))))
        return candidates.filter { !known.contains($0.lowercased()) }.sorted()
    }

    private static let keywords: Set<String> = [
        "in", "exists", "values", "as", "on", "using", "not", "and", "or", "when", "then", "else", "cast",
        "case", "select", "from", "where", "begin", "end", "into", "over", "filter", "like", "glob",
    ]

    /// Each distinct `name` followed by `(` (white space between allowed), a name being ASCII
    /// letters, digits and `_` that does not start with a digit. A table name before a column list
    /// (`INSERT INTO t (a, b)`) matches too: a function of that name is harmless.
    package static func calledNames(in sql: String) -> Set<String> {
        var names: Set<Substring> = []
        let bytes = sql.utf8
        var index = bytes.startIndex
        while index < bytes.endIndex {
            guard isNameByte(bytes[index]) else {
                index = bytes.index(after: index)
                continue
            }
            // A run of name bytes; the name starts at its first byte that is not a digit.
            var start: String.Index?
            while index < bytes.endIndex, isNameByte(bytes[index]) {
                if start == nil, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { start = index }
                index = bytes.index(after: index)
            }
            let end = index
            var next = index
            while next < bytes.endIndex, bytes[next] == 0x20 || (0x09...0x0D).contains(bytes[next]) {
                next = bytes.index(after: next)
            }
            if let start, next < bytes.endIndex, bytes[next] == UInt8(ascii: "(") { names.insert(sql[start..<end]) }
            index = next
        }
        return Set(names.lazy.map(String.init))
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
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
