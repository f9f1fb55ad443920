import Backstage
import Foundation
import GRDB

/// Captures a real store's schema, statistics and Core Data facts, reading a private copy: the
/// original, its `-wal`, `-shm` and `.Name_SUPPORT` folder are never opened by SQLite and stay
/// byte-identical. Nothing of the rows' content is kept: counts, shares and sizes only.
///
/// For example:
///
/// ```swift
/// let schema = try StoreCapture.capture(StoreFileSet(main: URL(filePath: "Photos.sqlite")))
/// schema.tables["ZASSET"]?.rows
/// ```
public enum StoreCapture {
    /// The schema of the store whose main file is `store.main`.
    ///
    /// - throws: `FileSystemError` when a file cannot be copied, `CatalogError` when it is not a
    ///   SQLite database or `integrity_check` finds it damaged (``StoreIntegrity``), a GRDB
    ///   `DatabaseError` when SQLite cannot read the copy.
    ///
    /// - parameter store: The store's file set; a private copy of it is read, never the original.
    /// - parameter appRows: Tables whose rows ship with the app (lookup tables): their rows are
    ///   kept verbatim, as `INSERT` statements, and reproduced in fixtures. No other row is kept.
    public static func capture(_ store: StoreFileSet, appRows: [String] = []) throws -> StoreSchema {
        let header = try FileSystem().readPrefix(store.main.path, count: 100)
        guard let parsed = SQLiteHeader(header) else {
            throw CatalogError.unreadableFile(
                path: store.main.path, reason: "it is not a SQLite database (no \"SQLite format 3\" header)")
        }
        var schema = try namingThePath(store) {
            try StoreInspector.withCopy(of: store) { db in
                // The rule of `fixture` and `simulate`: a damaged store is no schema to practise on.
                if let problem = try StoreIntegrity.problems(in: db).first {
                    throw CatalogError.unreadable(
                        path: store.main.path, reason: "SQLite's integrity_check reports \(problem)")
                }
                let objects = try Self.objects(db)
                var tables: [String: TableStatistics] = [:]
                let sizes = try Self.pageBytes(db)
                for object in objects where object.kind == .table {
                    tables[object.name] = try Self.statistics(of: object.name, bytes: sizes[object.name] ?? 0, in: db)
                }
                // A virtual table's size is its shadow tables'; its columns are measured through it.
                for object in objects where object.kind == .virtualTable {
                    let bytes = (object.shadowTables ?? []).reduce(Int64(0)) { $0 + (sizes[$1] ?? 0) }
                    tables[object.name] = try? Self.statistics(of: object.name, bytes: bytes, in: db)
                }
                let facts = try Self.coreDataFacts(db)
                var schema = StoreSchema(
                    journalMode: parsed.isWAL ? "wal" : "delete", pageSize: parsed.pageSize, objects: objects,
                    tables: tables, coreData: facts)
                try Self.captureHeader(into: &schema, db)
                schema.foreignKeyViolations = Self.foreignKeyViolations(db)
                for table in appRows {
                    guard
                        let name = objects.first(where: {
                            $0.kind == .table && $0.name.lowercased() == table.lowercased()
                        })?.name
                    else {
                        throw CatalogError.unreadable(
                            path: store.main.path, reason: "it has no table \(table) whose rows ship with the app")
                    }
                    schema.appRows = (schema.appRows ?? [:]).merging([name: try Self.insertStatements(of: name, in: db)]
                    ) { $1 }
                }
                return schema
            }
        }
        if var facts = schema.coreData {
            let external = store.externalDataFolder.path
            for name in (try? FileManager.default.contentsOfDirectory(atPath: external)) ?? [] {
                guard let status = try FileSystem().status(external + "/" + name), status.kind == .regular else {
                    continue
                }
                facts.externalFiles += 1
                facts.externalBytes += status.size
            }
            schema.coreData = facts
        }
        return schema
    }

    /// Every object of `sqlite_schema`, SQLite's own and the shadow tables of virtual tables
    /// excepted (a virtual table lists its shadow tables: they are created with it).
    static func objects(_ db: Database) throws -> [StoreSchema.Object] {
        let listed = try Row.fetchAll(db, sql: "SELECT name, type, wr FROM pragma_table_list WHERE schema = 'main'")
        var shadows: Set<String> = []
        var withoutRowID: Set<String> = []
        for row in listed {
            let name: String = row["name"]
            if (row["type"] as String) == "shadow" { shadows.insert(name) }
            if (row["wr"] as Int) == 1 { withoutRowID.insert(name) }
        }
        let rows = try Row.fetchAll(
            db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY rowid")
        var objects: [StoreSchema.Object] = []
        for row in rows {
            let name: String = row["name"], sql: String = row["sql"], type: String = row["type"]
            if name.hasPrefix("sqlite_") || shadows.contains(name) { continue }
            let kind: StoreSchema.Object.Kind
            switch type {
            case "table":
                kind =
                    sql.range(of: "CREATE VIRTUAL TABLE", options: [.caseInsensitive, .anchored]) != nil
                    ? .virtualTable : .table
            case "index": kind = .index
            case "view": kind = .view
            case "trigger": kind = .trigger
            default: continue
            }
            let owned = kind == .virtualTable ? shadows.filter { $0.hasPrefix(name + "_") }.sorted() : nil
            objects.append(
                .init(
                    kind: kind, name: name, table: row["tbl_name"], sql: sql, shadowTables: owned,
                    withoutRowID: withoutRowID.contains(name) ? true : nil))
        }
        return objects
    }

    /// `body`, with SQLite's refusal of a damaged or unreadable store turned into an error that
    /// names the store's file and what is wrong.
    static func namingThePath<T>(_ store: StoreFileSet, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw BackstageError(error, path: store.main.path, during: .loadingStores)
        }
    }

    /// The rows of `table` as `INSERT` statements of SQL literals (`quote()`), in rowid order.
    static func insertStatements(of table: String, in db: Database) throws -> [String] {
        let columns = try String.fetchAll(
            db, sql: "SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0", arguments: [table])
        let quoted = columns.map(\.quotedSQLIdentifier)
        let head = "INSERT INTO \(table.quotedSQLIdentifier) (\(quoted.joined(separator: ", "))) VALUES ("
        return try String.fetchAll(
            db,
            sql:
                "SELECT \(quoted.map { "quote(\($0))" }.joined(separator: " || ', ' || ")) FROM \(table.quotedSQLIdentifier)"
        )
        .map { head + $0 + ")" }
    }

    /// The header fields a fixture reproduces: `user_version`, `application_id`, the text
    /// encoding and the auto-vacuum mode (recorded only when not SQLite's default).
    static func captureHeader(into schema: inout StoreSchema, _ db: Database) throws {
        let version = try Int32.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let id = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        let encoding = try String.fetchOne(db, sql: "PRAGMA encoding") ?? "UTF-8"
        let vacuum = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0
        schema.userVersion = version == 0 ? nil : version
        schema.applicationID = id == 0 ? nil : id
        schema.textEncoding = encoding == "UTF-8" ? nil : encoding
        schema.autoVacuum = vacuum == 0 ? nil : vacuum
    }

    /// How many rows break each foreign key (`PRAGMA foreign_key_check`): counts per table and
    /// foreign key, never a row's content. Nil when there are none, or when SQLite cannot check
    /// (a foreign key into columns that are not a key: "foreign key mismatch").
    static func foreignKeyViolations(_ db: Database) -> [StoreSchema.ForeignKeyViolations]? {
        guard let rows = try? Row.fetchAll(db, sql: "PRAGMA foreign_key_check"), !rows.isEmpty else { return nil }
        var counts: [String: [Int: Int]] = [:]
        for row in rows {
            let table: String = row[0], id: Int = row[3]
            counts[table, default: [:]][id, default: 0] += 1
        }
        var found: [StoreSchema.ForeignKeyViolations] = []
        for (table, keys) in counts.sorted(by: { $0.key < $1.key }) {
            for (id, count) in keys.sorted(by: { $0.key < $1.key }) {
                let sql = "SELECT \"table\", \"from\" FROM pragma_foreign_key_list(?) WHERE id = ? ORDER BY seq"
                let key = (try? Row.fetchAll(db, sql: sql, arguments: [table, id])) ?? []
                guard let parent: String = key.first?["table"] else { continue }
                let columns = key.map { $0["from"] as String }
                found.append(.init(table: table, parent: parent, columns: columns, rows: count))
            }
        }
        return found.isEmpty ? nil : found
    }

    /// Bytes of each table's pages, from `dbstat` (0 when SQLite was built without it).
    static func pageBytes(_ db: Database) throws -> [String: Int64] {
        guard (try? db.execute(sql: "SELECT 1 FROM dbstat LIMIT 1")) != nil else { return [:] }
        var sizes: [String: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name") {
            sizes[row["name"]] = row["bytes"]
        }
        return sizes
    }

    /// Row count and per-column shares and sizes, in one pass over the table.
    static func statistics(of table: String, bytes: Int64, in db: Database) throws -> TableStatistics {
        let columns = try Row.fetchAll(
            db, sql: "SELECT name, type FROM pragma_table_xinfo(?) WHERE hidden = 0", arguments: [table])
        let quotedTable = table.quotedSQLIdentifier
        var parts = ["COUNT(*)"]
        for column in columns {
            let c = (column["name"] as String).quotedSQLIdentifier
            parts += [
                "SUM(\(c) IS NULL)", "SUM(typeof(\(c)) = 'integer')", "SUM(typeof(\(c)) = 'real')",
                "SUM(typeof(\(c)) = 'text')", "SUM(typeof(\(c)) = 'blob')",
                "AVG(CASE WHEN typeof(\(c)) IN ('text', 'blob') THEN length(CAST(\(c) AS BLOB)) END)",
                "MAX(CASE WHEN typeof(\(c)) IN ('text', 'blob') THEN length(CAST(\(c) AS BLOB)) END)",
                "COUNT(DISTINCT \(c))",
                // abs() of the smallest integer overflows: a store holding it is measured as one holding the largest.
                "MAX(CASE WHEN typeof(\(c)) = 'integer' THEN abs(max(\(c), -9223372036854775807)) END)",
                // Core Data's reference to an external file: 0x02, a UUID's 36 characters, a NUL
                // (a blob that merely starts with 0x02 is not one).
                "SUM(typeof(\(c)) = 'blob' AND length(\(c)) = 38 AND substr(\(c), 1, 1) = x'02' AND substr(\(c), 38, 1) = x'00')",
            ]
        }
        // SQLite allows 2,000 result columns: very wide tables are measured in slices.
        var values: [DatabaseValue] = []
        let perColumn = 10
        let slice = 150
        let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(quotedTable)") ?? 0
        for start in stride(from: 0, to: columns.count, by: slice) {
            let range = (1 + start * perColumn)..<(1 + min(columns.count, start + slice) * perColumn)
            let row = try Row.fetchOne(db, sql: "SELECT \(parts[range].joined(separator: ", ")) FROM \(quotedTable)")
            values += row.map { Array($0.databaseValues) } ?? []
        }
        func number(_ index: Int) -> Double {
            guard index < values.count else { return 0 }
            return Double.fromDatabaseValue(values[index]) ?? 0
        }
        let rows = Double(max(total, 1))
        var statistics: [ColumnStatistics] = []
        for (i, column) in columns.enumerated() {
            let base = i * perColumn
            let nonNull = max(Double(total) - number(base), 1)
            let blobs = max(number(base + 4), 1)
            let magnitude = UInt64(max(0, number(base + 8)))
            statistics.append(
                ColumnStatistics(
                    name: column["name"], declaredType: column["type"] ?? "",
                    nullFraction: total == 0 ? 1 : number(base) / rows, integerFraction: number(base + 1) / rows,
                    realFraction: number(base + 2) / rows,
                    textFraction: number(base + 3) / rows, blobFraction: number(base + 4) / rows,
                    averageBytes: number(base + 5), maxBytes: Int(number(base + 6)),
                    distinctRatio: total == 0 ? 1 : min(1, number(base + 7) / nonNull),
                    integerBits: magnitude == 0 ? 0 : 64 - magnitude.leadingZeroBitCount,
                    externalFraction: number(base + 4) == 0 ? 0 : number(base + 9) / blobs))
        }
        return TableStatistics(rows: total, bytes: bytes, columns: statistics)
    }

    /// Core Data's entities and model metadata, when `Z_PRIMARYKEY` is there.
    static func coreDataFacts(_ db: Database) throws -> CoreDataFacts? {
        guard try db.tableExists("Z_PRIMARYKEY") else { return nil }
        let rows = try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT")
        var names: [Int: (name: String, superID: Int)] = [:]
        for row in rows { names[row["Z_ENT"]] = (row["Z_NAME"] ?? "", row["Z_SUPER"] ?? 0) }
        func root(_ id: Int) -> String {
            var current = id
            var hops = 0
            while let entry = names[current], entry.superID != 0, hops < 64 { current = entry.superID; hops += 1 }
            return names[current]?.name ?? ""
        }
        let entities = names.sorted { $0.key < $1.key }.map { id, entry in
            CoreDataFacts.Entity(id: id, name: entry.name, superID: entry.superID, table: "Z" + root(id).uppercased())
        }
        var hashes: [String: String] = [:]
        var identifiers: [String] = []
        var framework: Int?
        if try db.tableExists("Z_METADATA"),
            let plist = try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA LIMIT 1"),
            let dictionary = try? PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any]
        {
            for (entity, hash) in dictionary["NSStoreModelVersionHashes"] as? [String: Any] ?? [:] {
                if let data = hash as? Data { hashes[entity] = data.base64EncodedString() }
            }
            identifiers = (dictionary["NSStoreModelVersionIdentifiers"] as? [Any] ?? []).map { "\($0)" }
            framework = (dictionary["NSPersistenceFrameworkVersion"] as? NSNumber)?.intValue
        }
        return CoreDataFacts(
            entities: entities, versionHashes: hashes, versionIdentifiers: identifiers, externalFiles: 0,
            externalBytes: 0, persistenceFrameworkVersion: framework)
    }
}
