import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// Runs a migration with `foreignKeyChecks: deferred` and fails it when it adds a foreign-key
/// violation, without paying for a check of the whole store when the migration cannot have added one.
///
/// Real stores hold violations the app made with foreign keys off; only the ones a migration adds
/// fail it. A violation can appear only in a row of a child table the migration inserted or whose
/// key columns it updated, or in a child of a parent table whose rows it deleted, whose key columns
/// it updated, or which it dropped. GRDB reports every table a statement writes, trigger bodies
/// included, from SQLite's authorizer; a statement's first words say which tables it drops or gives
/// a new `REFERENCES` column. Only those children are checked (`PRAGMA foreign_key_check(table)`),
/// after the migration: adding a column and an index, the common migration, checks nothing. When a
/// checked table holds violations, the migration is rolled back to a savepoint, the same tables are
/// checked as they were, and the migration runs again: the violations it adds are the difference.
enum ForeignKeyGuard {
    static let savepoint = "backstage_foreign_keys"

    /// Runs `sql` in `db` (inside the migration's transaction) and throws the first violation it adds.
    static func execute(_ sql: String, in db: Database) throws {
        let written = WrittenTables()
        db.add(transactionObserver: written, extent: .observerLifetime)
        defer { db.remove(transactionObserver: written) }
        try db.execute(sql: "SAVEPOINT \(savepoint)")
        try MigrationSQL.execute(sql, in: db, onStatement: written.saw)
        let suspects = try written.childrenToCheck(in: db)
        let after = try ForeignKeyViolation.all(db, in: suspects)
        guard !after.isEmpty else {
            try db.execute(sql: "RELEASE \(savepoint)")
            return
        }
        // Some of these may be the store's own: compare with the same tables before the migration.
        try db.execute(sql: "ROLLBACK TO \(savepoint)")
        let existing = try Set(String.fetchAll(db, sql: "SELECT lower(name) FROM sqlite_schema WHERE type = 'table'"))
        let before = try ForeignKeyViolation.all(db, in: suspects.filter { existing.contains($0.lowercased()) })
        try MigrationSQL.execute(sql, in: db)
        let again = try ForeignKeyViolation.all(db, in: suspects)
        try db.execute(sql: "RELEASE \(savepoint)")
        if let added = again.subtracting(before).min() { throw added }
    }
}

/// The tables a migration's statements write, as SQLite's authorizer reports them to GRDB, and the
/// tables the statements' own words drop, rename or give a foreign key.
final class WrittenTables: TransactionObserver {
    /// Tables that got rows, or whose columns in `updated` changed: as children, their keys may dangle.
    private(set) var insertedInto: Set<String> = []
    private(set) var updated: [String: Set<String>] = [:]
    /// Tables that lost rows or were dropped: as parents, their children's keys may dangle.
    private(set) var deleted: Set<String> = []
    /// Tables given a new column with `REFERENCES`.
    private(set) var referencing: Set<String> = []
    /// Old name → new name, for tables renamed after they were written (the twelve-step rebuild).
    private(set) var renamed: [String: String] = [:]

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        switch eventKind {
        case .insert(let table): insertedInto.insert(table.lowercased())
        case .delete(let table): deleted.insert(table.lowercased())
        case .update(let table, let columns):
            updated[table.lowercased(), default: []].formUnion(columns.map { $0.lowercased() })
        }
        // Only the kinds matter: GRDB then reports no row to this observer.
        return false
    }

    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseDidCommit(_ db: Database) {}
    func databaseDidRollback(_ db: Database) {}

    /// Reads a statement's first words: `DROP TABLE t`, `ALTER TABLE t RENAME TO u`,
    /// `ALTER TABLE t ADD [COLUMN] … REFERENCES …`.
    func saw(_ statement: String) {
        var words = SQLWords(statement)
        guard let verb = words.next()?.uppercased(), verb == "DROP" || verb == "ALTER",
            words.next()?.uppercased() == "TABLE"
        else { return }
        var name = words.next()
        if verb == "DROP", name?.uppercased() == "IF" {
            _ = words.next()  // EXISTS
            name = words.next()
        }
        // `schema.table`: the table is the word after the dot.
        var next = words.next()
        if next == "." {
            name = words.next()
            next = words.next()
        }
        guard let table = name?.lowercased() else { return }
        if verb == "DROP" {
            deleted.insert(table)
            return
        }
        switch next?.uppercased() {
        case "RENAME":
            var word = words.next()
            guard word?.uppercased() == "TO" else { return }  // RENAME [COLUMN] a TO b: keys keep their values
            word = words.next()
            if let new = word?.lowercased() { renamed[table] = new }
        case "ADD":
            // A text search: a `REFERENCES` in a comment or a default's string only adds a check.
            if statement.uppercased().contains("REFERENCES") { referencing.insert(table) }
        default:
            return
        }
    }

    /// The child tables whose rows may now point at no row, as named after the migration.
    func childrenToCheck(in db: Database) throws -> [String] {
        // Nothing written that a key could depend on (an index, a plain column): nothing to read.
        guard !insertedInto.isEmpty || !updated.isEmpty || !deleted.isEmpty || !referencing.isEmpty else { return [] }
        // The tables that have a foreign key, in one query (most stores have none).
        let tables = try String.fetchAll(
            db,
            sql: """
                SELECT DISTINCT m.name FROM sqlite_schema AS m, pragma_foreign_key_list(m.name) \
                WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                """)
        var suspects: [String] = []
        var primaryKeys: [String: [String]] = [:]
        for table in tables {
            let keys = try ForeignKey.all(of: table, in: db)
            guard !keys.isEmpty else { continue }
            if try keys.contains(where: {
                try wroteAsChild($0, table.lowercased()) || changedAsParent($0, in: db, primaryKeys: &primaryKeys)
            }) {
                suspects.append(table)
            }
        }
        return suspects
    }

    /// The name `table` has after the migration's renames.
    private func current(_ table: String) -> String {
        var name = table
        var seen: Set<String> = []
        while let new = renamed[name], seen.insert(name).inserted { name = new }
        return name
    }

    private func wrote(_ names: some Sequence<String>, as table: String) -> Bool {
        names.contains { current($0) == table }
    }

    private func wroteAsChild(_ key: ForeignKey, _ child: String) -> Bool {
        wrote(insertedInto, as: child) || wrote(referencing, as: child)
            || updated.contains { written, columns in
                current(written) == child && !columns.isDisjoint(with: key.columns)
            }
    }

    /// - parameter primaryKeys: Each parent's primary key once read, so that it is read once a
    ///   check however many keys and written tables name it.
    private func changedAsParent(
        _ key: ForeignKey, in db: Database, primaryKeys: inout [String: [String]]
    ) throws -> Bool {
        // A parent dropped, then rebuilt under its old name, counts under both names.
        let parent = key.parent
        if deleted.contains(parent) || wrote(deleted, as: parent) { return true }
        let columns = updated.filter { written, _ in current(written) == parent || written == parent }.values
        guard !columns.isEmpty else { return false }
        var parentColumns = key.parentColumns ?? primaryKeys[parent]
        if parentColumns == nil {
            parentColumns = try ForeignKey.primaryKey(of: parent, in: db)
            primaryKeys[parent] = parentColumns
        }
        let keyColumns = (parentColumns ?? []) + ["rowid", "_rowid_", "oid"]
        return parentColumns?.isEmpty != false || columns.contains { !$0.isDisjoint(with: keyColumns) }
    }
}

/// One foreign key of a child table, names lowercased.
struct ForeignKey {
    var parent: String
    var columns: Set<String>
    /// Nil when the key names no columns: it references the parent's primary key.
    var parentColumns: [String]?

    static func all(of table: String, in db: Database) throws -> [ForeignKey] {
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            arguments: [table])
        var keys: [Int: ForeignKey] = [:]
        for row in rows {
            let id: Int = row[0]
            var key = keys[id] ?? ForeignKey(parent: (row[1] as String).lowercased(), columns: [], parentColumns: [])
            key.columns.insert((row[2] as String).lowercased())
            if let to = row[3] as String? {
                key.parentColumns?.append(to.lowercased())
            } else {
                key.parentColumns = nil
            }
            keys[id] = key
        }
        return keys.keys.sorted().compactMap { keys[$0] }
    }

    /// The parent's primary-key columns (its rowid alias included).
    static func primaryKey(of table: String, in db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_info(?) WHERE pk > 0", arguments: [table])
    }
}
