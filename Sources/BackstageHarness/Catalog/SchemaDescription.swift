import Backstage
import Foundation
import GRDB

/// A database schema as SQLite understands it, independent of how its SQL was written: what a
/// fresh install and an upgraded install must agree on.
///
/// Tables are compared column by column (declared type, `NOT NULL`, default, primary key,
/// collation, a generated column's expression; not their order, which `ALTER TABLE ADD COLUMN`
/// cannot choose), with their foreign keys, `UNIQUE` and `CHECK` constraints (a column's `CHECK`
/// equals the same one declared on the table), `AUTOINCREMENT`, `WITHOUT ROWID` and `STRICT`;
/// indexes by their columns, uniqueness and partial condition; triggers, views and virtual tables
/// by their definition, with whitespace, case and identifier quoting normalized. SQLite's own
/// tables and GRDB's `grdb_migrations` (bookkeeping a fresh install may not have) are left out.
///
/// ```swift
/// let upgraded = try SchemaDescription(contentsOf: URL(filePath: "Upgraded/Cookbook.sqlite"))
/// let fresh = try SchemaDescription(contentsOf: URL(filePath: "cookbook-v3.sql"))
/// for difference in fresh.differences(from: upgraded) { print(difference) }
/// ```
public struct SchemaDescription: Sendable, Hashable, Codable {
    public struct Column: Sendable, Hashable, Codable {
        public var name: String
        /// The declared type, upper-cased with whitespace normalized ("" when none).
        public var type: String
        public var notNull: Bool
        /// The default's SQL, normalized; nil when none.
        public var defaultValue: String?
        /// 1-based position in the primary key, 0 when not part of it.
        public var primaryKey: Int
        /// The declared collation, lower-cased; nil for the default (`BINARY`).
        public var collation: String?
        /// `GENERATED ALWAYS AS` expression columns: SQLite's `hidden` (2 virtual, 3 stored).
        public var generated: Int
        /// A generated column's expression, normalized; nil for other columns.
        public var expression: String?
    }

    public struct ForeignKey: Sendable, Hashable, Codable, CustomStringConvertible {
        public var columns: [String]
        public var table: String
        public var referencedColumns: [String]
        public var onUpdate: String
        public var onDelete: String

        public var description: String {
            "(\(columns.joined(separator: ", "))) REFERENCES \(table)(\(referencedColumns.joined(separator: ", ")))"
                + (onUpdate == "NO ACTION" ? "" : " ON UPDATE \(onUpdate)")
                + (onDelete == "NO ACTION" ? "" : " ON DELETE \(onDelete)")
        }
    }

    public struct Table: Sendable, Hashable, Codable {
        public var name: String
        public var columns: [Column]
        public var withoutRowID: Bool
        public var strict: Bool
        public var foreignKeys: [ForeignKey]
        /// The column lists of its `UNIQUE` constraints (not its primary key), sorted.
        public var uniqueConstraints: [[String]]
        /// True when its integer primary key is `AUTOINCREMENT` (row ids never reused).
        public var autoincrement: Bool
        /// Its `CHECK` constraints, the columns' and the table's alike, normalized and sorted.
        public var checks: [String]
    }

    public struct Index: Sendable, Hashable, Codable, CustomStringConvertible {
        public var name: String
        public var table: String
        /// Its key columns, `DESC` and `COLLATE` written out; an expression column is its SQL.
        public var columns: [String]
        public var unique: Bool
        /// The `WHERE` of a partial index, normalized.
        public var condition: String?

        public var description: String {
            "\(unique ? "UNIQUE " : "")INDEX \(name) ON \(table)(\(columns.joined(separator: ", ")))"
                + (condition.map { " WHERE \($0)" } ?? "")
        }
    }

    /// A trigger, view or virtual table: its normalized `CREATE` statement.
    public struct Definition: Sendable, Hashable, Codable {
        public var name: String
        public var sql: String
    }

    /// Keyed by lower-cased name (SQLite names are case-insensitive).
    public var tables: [String: Table] = [:]
    public var indexes: [String: Index] = [:]
    public var triggers: [String: Definition] = [:]
    public var views: [String: Definition] = [:]
    public var virtualTables: [String: Definition] = [:]

    static func isBookkeeping(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.hasPrefix("sqlite_") || lower == "grdb_migrations"
    }

    /// The schema of the database `db` is connected to.
    public init(_ db: Database) throws {
        let objects = try StoreCapture.objects(db).filter {
            !Self.isBookkeeping($0.name) && !Self.isBookkeeping($0.table)
        }
        var flags: [String: (withoutRowID: Bool, strict: Bool)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, wr, strict FROM pragma_table_list WHERE schema = 'main'") {
            flags[row["name"]] = ((row["wr"] as Int) == 1, (row["strict"] as Int) == 1)
        }
        for object in objects {
            let key = object.name.lowercased()
            switch object.kind {
            case .table:
                tables[key] = try Self.table(object, flags: flags[object.name] ?? (false, false), in: db)
            case .virtualTable:
                virtualTables[key] = Definition(name: object.name, sql: SQLTokens.normalized(object.sql))
            case .view:
                views[key] = Definition(name: object.name, sql: SQLTokens.normalized(object.sql))
            case .trigger:
                triggers[key] = Definition(name: object.name, sql: SQLTokens.normalized(object.sql))
            case .index:
                indexes[key] = try Self.index(object, in: db)
            }
        }
    }

    /// The schema of a store file (read from a private copy; the original is never opened) or of
    /// a `.sql` script (run in an in-memory database).
    ///
    /// - throws: `CatalogError/unreadableFile(path:reason:)` naming the file when it is neither.
    public init(contentsOf url: URL) throws {
        self = try Self.withDatabase(contentsOf: url) { db in try SchemaDescription(db) }
    }

    /// The schema a catalog recorded, rebuilt in an in-memory database from its statements.
    public init(_ schema: StoreSchema) throws {
        self = try Self.withDatabase(recorded: schema) { db in try SchemaDescription(db) }
    }

    /// The `CREATE` statements of a store file or `.sql` script's schema, in creation order
    /// (shadow tables of virtual tables and SQLite's own tables left out): what a catalog keeps of
    /// a fresh install.
    static func statements(contentsOf url: URL) throws -> [String] {
        try withDatabase(contentsOf: url) { db in try StoreCapture.objects(db).map(\.sql) }
    }

    /// Runs `body` on a private copy of a store file, or on an in-memory database the `.sql`
    /// script at `url` built.
    static func withDatabase<T>(contentsOf url: URL, _ body: (Database) throws -> T) throws -> T {
        if url.pathExtension.lowercased() == "sql" {
            let script: String
            do { script = try String(contentsOf: url, encoding: .utf8) } catch {
                throw CatalogError.unreadableFile(path: url.path, reason: UpgradePlan.readFailure(error, at: url))
            }
            return try inMemory(
                path: url.path,
                build: { db in
                    try standIns(for: script, in: db)
                    try db.execute(sql: script)
                }, body)
        }
        let header: [UInt8]
        do { header = try FileSystem().readPrefix(url.path, count: 100) } catch {
            throw CatalogError.unreadableFile(path: url.path, reason: error.reason)
        }
        guard SQLiteHeader(header) != nil else {
            throw CatalogError.unreadableFile(path: url.path, reason: "it is neither a SQLite database nor a .sql file")
        }
        return try StoreInspector.withCopy(of: StoreFileSet(main: url), body)
    }

    /// Runs `body` on an in-memory database holding the recorded schema (no rows).
    static func withDatabase<T>(recorded schema: StoreSchema, _ body: (Database) throws -> T) throws -> T {
        try inMemory(
            path: "the recorded schema",
            build: { db in
                try standIns(for: schema.objects.map(\.sql).joined(separator: ";\n"), in: db)
                for object in schema.objects { try db.execute(sql: object.sql) }
            }, body)
    }

    /// Stand-ins for the functions `sql` calls that only the app registers (a CHECK calling one
    /// is refused at `CREATE TABLE` without them).
    private static func standIns(for sql: String, in db: Database) throws {
        for name in try MissingFunctions.missing(in: sql, db: db) { db.add(function: MissingFunctions.standIn(name)) }
    }

    private static func inMemory<T>(
        path: String, build: (Database) throws -> Void, _ body: (Database) throws -> T
    ) throws -> T {
        var configuration = Configuration()
        MissingFunctions.configureAsTheApp(&configuration)
        let queue = try DatabaseQueue(configuration: configuration)
        do {
            try queue.write(build)
        } catch let error as DatabaseError {
            throw CatalogError.unreadableFile(
                path: path,
                reason: "SQLite refused it: \(error.message ?? "\(error.resultCode)")"
                    + (error.sql.map { " (in \($0.prefix(120)))" } ?? ""))
        }
        return try queue.read(body)
    }

    private static func table(
        _ object: StoreSchema.Object, flags: (withoutRowID: Bool, strict: Bool), in db: Database
    ) throws -> Table {
        let collations = SQLTokens.columnCollations(inCreateTable: object.sql)
        let clauses = SQLTokens.tableClauses(inCreateTable: object.sql)
        let columns = try Row.fetchAll(
            db, sql: "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?)",
            arguments: [object.name]
        ).compactMap { row -> Column? in
            let hidden: Int = row["hidden"]
            guard hidden != 1 else { return nil }  // a virtual table's hidden columns
            let name: String = row["name"]
            return Column(
                name: name, type: SQLTokens.normalizedType(row["type"] ?? ""), notNull: row["notnull"] as Int == 1,
                defaultValue: (row["dflt_value"] as String?).map(SQLTokens.normalized), primaryKey: row["pk"],
                collation: collations[name.lowercased()], generated: hidden,
                expression: hidden >= 2 ? clauses.generated[name.lowercased()] : nil)
        }
        var keys: [Int: ForeignKey] = [:]
        for row in try Row.fetchAll(
            db,
            sql:
                "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            arguments: [object.name])
        {
            let id: Int = row["id"]
            var key =
                keys[id]
                ?? ForeignKey(
                    columns: [], table: (row["table"] as String).lowercased(), referencedColumns: [],
                    onUpdate: row["on_update"], onDelete: row["on_delete"])
            key.columns.append(row["from"])
            key.referencedColumns.append((row["to"] as String?) ?? "")
            keys[id] = key
        }
        var uniques: [[String]] = []
        for row in try Row.fetchAll(
            db, sql: "SELECT name FROM pragma_index_list(?) WHERE origin = 'u'", arguments: [object.name])
        {
            uniques.append(
                try String.fetchAll(
                    db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [row["name"] as String])
            )
        }
        return Table(
            name: object.name, columns: columns, withoutRowID: flags.withoutRowID, strict: flags.strict,
            foreignKeys: keys.values.sorted { $0.description < $1.description },
            uniqueConstraints: uniques.sorted { $0.joined(separator: ",") < $1.joined(separator: ",") },
            autoincrement: clauses.autoincrement, checks: clauses.checks)
    }

    private static func index(_ object: StoreSchema.Object, in db: Database) throws -> Index {
        let unique =
            try Int.fetchOne(
                db, sql: "SELECT \"unique\" FROM pragma_index_list(?) WHERE name = ?",
                arguments: [object.table, object.name]) == 1
        let keyColumns = try Row.fetchAll(
            db, sql: "SELECT cid, name, \"desc\", coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno",
            arguments: [object.name])
        let expressions = SQLTokens.indexTerms(inCreateIndex: object.sql)
        let columns = keyColumns.enumerated().map { position, row -> String in
            let cid: Int = row["cid"]
            var term =
                cid == -2
                ? (position < expressions.count ? expressions[position] : "<expression>")
                : (row["name"] as String? ?? "rowid").lowercased()
            if let collation = row["coll"] as String?, collation.uppercased() != "BINARY" {
                term += " COLLATE \(collation.lowercased())"
            }
            if (row["desc"] as Int) == 1 { term += " DESC" }
            return term
        }
        return Index(
            name: object.name, table: object.table.lowercased(), columns: columns, unique: unique,
            condition: SQLTokens.whereClause(inCreateIndex: object.sql))
    }

    /// What differs between this schema (the expected one, such as a fresh install's) and
    /// `actual` (such as the upgraded store's), one difference per column, index, key, trigger,
    /// view or virtual table; empty when they agree.
    public func differences(from actual: SchemaDescription) -> [SchemaDifference] {
        var found: [SchemaDifference] = []
        func compare<T>(
            _ kind: String, _ expected: [String: T], _ actual: [String: T], name: (T) -> String,
            detail: (T, T) -> [String]
        ) {
            for key in Set(expected.keys).union(actual.keys).sorted() {
                switch (expected[key], actual[key]) {
                case (let e?, nil):
                    found.append(
                        SchemaDifference(object: "\(kind) \(name(e))", message: "missing from the upgraded store"))
                case (nil, let a?):
                    found.append(
                        SchemaDifference(
                            object: "\(kind) \(name(a))", message: "only in the upgraded store, not in a fresh install")
                    )
                case (let e?, let a?):
                    for message in detail(e, a) {
                        found.append(SchemaDifference(object: "\(kind) \(name(e))", message: message))
                    }
                default: break
                }
            }
        }
        compare("table", tables, actual.tables, name: \.name, detail: Self.tableDifferences)
        compare("index", indexes, actual.indexes, name: \.name) { e, a in
            var messages: [String] = []
            if e.table != a.table {
                messages.append("on table \(e.table) in a fresh install, on \(a.table) in the upgraded store")
            }
            if e.columns != a.columns {
                messages.append(
                    "columns (\(e.columns.joined(separator: ", "))) in a fresh install, (\(a.columns.joined(separator: ", "))) in the upgraded store"
                )
            }
            if e.unique != a.unique {
                messages.append(
                    e.unique
                        ? "UNIQUE in a fresh install, not in the upgraded store"
                        : "UNIQUE in the upgraded store, not in a fresh install")
            }
            if e.condition != a.condition {
                messages.append(
                    "partial condition \(e.condition.map { "WHERE \($0)" } ?? "none") in a fresh install, \(a.condition.map { "WHERE \($0)" } ?? "none") in the upgraded store"
                )
            }
            return messages
        }
        for (kind, expected, actual) in [
            ("trigger", triggers, actual.triggers), ("view", views, actual.views),
            ("virtual table", virtualTables, actual.virtualTables),
        ] {
            compare(kind, expected, actual, name: \.name) { e, a in
                e.sql == a.sql ? [] : ["defined as `\(e.sql)` in a fresh install, `\(a.sql)` in the upgraded store"]
            }
        }
        return found
    }

    private static func tableDifferences(_ e: Table, _ a: Table) -> [String] {
        var messages: [String] = []
        let actualColumns = Dictionary(
            a.columns.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        let expectedNames = Set(e.columns.map { $0.name.lowercased() })
        for column in e.columns {
            guard let other = actualColumns[column.name.lowercased()] else {
                messages.append("column \(column.name) missing from the upgraded store")
                continue
            }
            func differs(_ what: String, _ x: String, _ y: String) {
                messages.append("column \(column.name): \(what) \(x) in a fresh install, \(y) in the upgraded store")
            }
            if column.type != other.type {
                differs("type", column.type.isEmpty ? "none" : column.type, other.type.isEmpty ? "none" : other.type)
            }
            if column.notNull != other.notNull {
                differs("NOT NULL", column.notNull ? "set" : "not set", other.notNull ? "set" : "not set")
            }
            if column.defaultValue != other.defaultValue {
                differs("default", column.defaultValue ?? "none", other.defaultValue ?? "none")
            }
            if column.primaryKey != other.primaryKey {
                differs("primary key position", String(column.primaryKey), String(other.primaryKey))
            }
            if column.collation != other.collation {
                differs("collation", column.collation ?? "binary", other.collation ?? "binary")
            }
            if column.generated != other.generated {
                differs("generated", column.generated == 0 ? "no" : "yes", other.generated == 0 ? "no" : "yes")
            }
            if column.generated != 0, other.generated != 0, column.expression != other.expression {
                differs("generated as", "`\(column.expression ?? "?")`", "`\(other.expression ?? "?")`")
            }
        }
        for column in a.columns where !expectedNames.contains(column.name.lowercased()) {
            messages.append("column \(column.name) only in the upgraded store")
        }
        if e.withoutRowID != a.withoutRowID {
            messages.append(
                "WITHOUT ROWID \(e.withoutRowID ? "in a fresh install only" : "in the upgraded store only")")
        }
        if e.strict != a.strict {
            messages.append("STRICT \(e.strict ? "in a fresh install only" : "in the upgraded store only")")
        }
        if e.autoincrement != a.autoincrement {
            messages.append(
                "AUTOINCREMENT \(e.autoincrement ? "in a fresh install only" : "in the upgraded store only")")
        }
        for check in e.checks where !a.checks.contains(check) {
            messages.append("CHECK (\(check)) missing from the upgraded store")
        }
        for check in a.checks where !e.checks.contains(check) {
            messages.append("CHECK (\(check)) only in the upgraded store")
        }
        for key in Set(e.foreignKeys).subtracting(a.foreignKeys).sorted(by: { $0.description < $1.description }) {
            messages.append("foreign key \(key) missing from the upgraded store")
        }
        for key in Set(a.foreignKeys).subtracting(e.foreignKeys).sorted(by: { $0.description < $1.description }) {
            messages.append("foreign key \(key) only in the upgraded store")
        }
        for unique in e.uniqueConstraints where !a.uniqueConstraints.contains(unique) {
            messages.append("UNIQUE (\(unique.joined(separator: ", "))) missing from the upgraded store")
        }
        for unique in a.uniqueConstraints where !e.uniqueConstraints.contains(unique) {
            messages.append("UNIQUE (\(unique.joined(separator: ", "))) only in the upgraded store")
        }
        return messages
    }
}

/// One way an upgraded schema differs from a fresh install's.
public struct SchemaDifference: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What differs: `table ZRECIPE`, `index ZRECIPE_ZTITLE_INDEX`, `trigger ...`.
    public var object: String
    public var message: String

    public var description: String { "\(object): \(message)" }
}
