import Backstage
import Foundation
import GRDB

/// SQLite's `PRAGMA integrity_check`, each problem it reports confirmed by a second reading before
/// it counts: the one rule `catalog init`, `fixture` and `simulate` apply, so that a store is not
/// accepted by one and refused by another.
///
/// SQLite 3.40.1 (the system SQLite of Debian 12) reports `NULL value in T.c` on a valid
/// `WITHOUT ROWID` table whose `NOT NULL` column precedes a later primary-key column; SQLite 3.51
/// prints `ok` for the same file. Such a line counts only when a row of `T` really holds NULL in
/// `c`. A line about an index ordered by a collation only the app registers (read here through a
/// stand-in) is not counted either. Every other line counts as SQLite wrote it.
///
/// For example:
///
/// ```swift
/// let problems = try StoreIntegrity.problems(in: db)  // [] when the store is sound
/// ```
public enum StoreIntegrity {
    /// The problems of the store open in `db` that `integrity_check` reports and a second reading
    /// confirms, in SQLite's words (names of tables, columns and pages; never a row's values).
    /// `quick`: `quick_check`'s (every b-tree's structure and every row's `NOT NULL` and `CHECK`,
    /// without matching index entries to table rows): for a store SQLite itself just wrote.
    public static func problems(in db: Database, quick: Bool = false) throws -> [String] {
        let lines = try String.fetchAll(db, sql: quick ? "PRAGMA quick_check" : "PRAGMA integrity_check")
        if lines == ["ok"] { return [] }
        var confirmed: [String] = []
        // One reading per line's table and column (a line per row). `typeof()`, not `IS NULL`,
        // which SQLite answers from the NOT NULL declaration without reading the rows.
        var nulls: [String: Bool] = [:]
        for line in lines where line != "ok" {
            if nulls[line] == nil, let (table, column) = try nullValue(in: line, db: db) {
                nulls[line] =
                    try Row.fetchOne(
                        db,
                        sql:
                            "SELECT 1 FROM \(table.quotedSQLIdentifier) WHERE typeof(\(column.quotedSQLIdentifier)) = 'null' LIMIT 1"
                    ) != nil
            }
            if nulls[line] == false { continue }  // SQLite 3.40's false positive: no row holds NULL there
            // An index ordered by a collation only the app registers is read here through a
            // stand-in: its order cannot be confirmed, nor refuted, outside the app.
            if try indexUsesAppCollation(named: line, db: db) { continue }
            confirmed.append(line)
        }
        return confirmed
    }

    /// The table and column of a `NULL value in T.c` line about a `WITHOUT ROWID` table that
    /// declares `c` NOT NULL; nil for any other line.
    static func nullValue(in line: String, db: Database) throws -> (table: String, column: String)? {
        let prefix = "NULL value in "
        guard line.hasPrefix(prefix) else { return nil }
        let name = line.dropFirst(prefix.count)
        // Table and column names may hold dots: each split tried, the one naming a real column kept.
        var at = name.startIndex
        while let dot = name[at...].firstIndex(of: ".") {
            let table = String(name[..<dot]), column = String(name[name.index(after: dot)...])
            at = name.index(after: dot)
            let sql = try String.fetchOne(
                db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                arguments: [table])
            guard let sql,
                sql.range(of: #"WITHOUT\s+ROWID"#, options: [.regularExpression, .caseInsensitive]) != nil,
                try Row.fetchOne(
                    db, sql: "SELECT 1 FROM pragma_table_info(?) WHERE name = ? COLLATE NOCASE AND \"notnull\" = 1",
                    arguments: [table, column]) != nil
            else { continue }
            return (table, column)
        }
        return nil
    }

    /// Whether `line` is about the order of an index (`... index NAME`) or of a `WITHOUT ROWID`
    /// table's primary key (`row not in PRIMARY KEY order for T`) that compares a column by a
    /// collation SQLite does not have built in: declared in the index (`COLLATE unicase`) or on the
    /// table's column (Anki's `name text NOT NULL COLLATE unicase`).
    static func indexUsesAppCollation(named line: String, db: Database) throws -> Bool {
        let words = line.split(separator: " ").map(String.init)
        var indexes: [String] = []
        if let at = words.firstIndex(of: "index"), at + 1 < words.count { indexes.append(words[at + 1]) }
        if line.hasPrefix("row not in PRIMARY KEY order for "), let table = words.last {
            indexes += try String.fetchAll(
                db, sql: "SELECT name FROM pragma_index_list(?) WHERE origin = 'pk'", arguments: [table])
        }
        for index in indexes {
            let collations = try String.fetchAll(
                db, sql: "SELECT coll FROM pragma_index_xinfo(?) WHERE key = 1 AND coll IS NOT NULL",
                arguments: [index])
            if collations.contains(where: { !["binary", "nocase", "rtrim"].contains($0.lowercased()) }) {
                return true
            }
        }
        return false
    }
}
