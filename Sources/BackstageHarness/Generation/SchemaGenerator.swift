import Backstage
import Foundation
import GRDB
import GRDBSQLite

/// Makes a store of any captured schema, at a chosen size and seed: the same seed gives the same
/// rows on every machine.
///
/// The schema is created as the app created it (tables, virtual tables, views, triggers, then the
/// indexes once the rows are in). Rows satisfy it by construction : `CHECK`
/// constraints give the values they allow, each `UNIQUE` group a column distinct row to row (or
/// its combinations enumerated), declared foreign keys the key of a real parent row; a constraint
/// over several columns or a trigger's `RAISE` is repaired from its columns and literals. Virtual
/// tables (RTREE, FTS) are filled through the virtual table, FTS tables with external content
/// rebuilt; triggers fire as rows go in, with the SQL functions and collations only the app
/// registers (Core Data's `NSCoreDataTriggerUpdateAffectedObjectValue`, ...) standing in. Core Data's conventions are kept: `Z_PK` counts up,
/// `Z_ENT` names an entity of the table, `Z_PRIMARYKEY.Z_MAX` is the largest key, `Z_METADATA`
/// carries the captured model hashes (in an XML plist, which Core Data reads like its binary one),
/// and large blobs become files in `_EXTERNAL_DATA`.
///
/// For example:
///
/// ```swift
/// let schema = try CatalogFolder(at: folder).schema(of: store)
/// let report = try SchemaGenerator(schema: schema, seed: 7).generate(into: StoreFileSet(main: url), bytes: 20_000_000)
/// ```
public struct SchemaGenerator: Sendable {
    public var schema: StoreSchema
    public var seed: UInt64
    /// The table a writer adds rows to; by default the one with the most captured rows.
    public var preferredMainTable: String?
    /// Rows each `INSERT` carries at most (1: a statement per row). The rows are the same either way.
    public var rowsPerStatement = RowBatches.largestBatch

    public init(schema: StoreSchema, seed: UInt64, mainTable: String? = nil) {
        self.schema = schema
        self.seed = seed
        self.preferredMainTable = mainTable
    }

    /// What was generated.
    public struct Report: Sendable, Hashable, Codable {
        /// Rows per table (and virtual table).
        public var rows: [String: Int]
        public var externalFiles: Int
        public var externalBytes: Int64
    }

    /// Creates the store at `store.main` (which must not exist) with about `bytes` of data.
    public func generate(into store: StoreFileSet, bytes: Int64) throws -> Report {
        guard !FileManager.default.fileExists(atPath: store.main.path) else {
            throw GeneratorError.exists(path: store.main.path)
        }
        let counts = try rowCounts(for: bytes)
        let queue = try DatabaseQueue(path: store.main.path, configuration: try configuration())
        let external = externalWriter(for: store)
        var report = Report(rows: [:], externalFiles: 0, externalBytes: 0)
        do {
            let populated = try populate(queue, counts: counts, external: external)
            report.rows = populated.rows
            try queue.read { db in try verify(db, counts: counts, keysChecked: populated.keysChecked) }
            try external?.finish()
            try queue.writeWithoutTransaction { db in
                _ = try String.fetchOne(
                    db, sql: "PRAGMA journal_mode = \(schema.journalMode == "wal" ? "WAL" : "DELETE")")
            }
            try queue.close()
        } catch {
            try? queue.close()
            try? FileManager.default.removeItem(at: store.main)
            throw error
        }
        report.externalFiles = external?.files ?? 0
        report.externalBytes = external?.bytes ?? 0
        return report
    }

    /// The tables (upper-cased) named in the body of a trigger.
    var tablesTriggersTouch: Set<String> {
        let tables = Set(schema.tableNames.map { $0.uppercased() })
        var touched: Set<String> = []
        for trigger in schema.objects where trigger.kind == .trigger {
            let sql = trigger.sql.uppercased()
            guard let begin = sql.range(of: "BEGIN") else { continue }
            let words = sql[begin.upperBound...].split { !($0.isLetter || $0.isNumber || $0 == "_") }
            for word in words where tables.contains(String(word)) { touched.insert(String(word)) }
        }
        return touched
    }

    func configuration() throws -> Configuration {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        // As SQLite's default build, and the app, read the schema: "text" in a trigger is a string.
        configuration.acceptsDoubleQuotedStringLiterals = true
        let functions = try stubFunctions()
        configuration.prepareDatabase { db in
            for function in functions { db.add(function: function) }
            MissingFunctions.standInCollations(in: db)
        }
        return configuration
    }

    /// Creates the schema in `queue`'s empty database and inserts `counts` rows per table, in one
    /// transaction; returns the rows per table.
    ///
    /// - returns: Rows per table, and whether a key may name no row (a trigger, the app's rows or
    ///   a reference not taken from a parent row), its foreign keys then checked and repaired:
    ///   otherwise every key is a parent row's by construction.
    func populate(
        _ queue: DatabaseQueue, counts: [String: Int], external: ExternalDataWriter?
    ) throws -> (rows: [String: Int], keysChecked: Bool) {
        // Without a journal a refused statement keeps what it wrote: a trigger's writes, and the
        // refused row itself when an AFTER trigger fails — rows the app could never have written.
        // Where a trigger fires on the generator's INSERTs and UPDATEs, the journal stays in memory
        // and a refused statement leaves nothing; elsewhere a refused INSERT writes nothing but the
        // rows before it in its batch, which ``RowBatches`` counts.
        let journal =
            schema.objects.contains { $0.kind == .trigger && RowBatches.triggerEvent($0.sql) != "delete" }
            ? "MEMORY" : "OFF"
        try queue.writeWithoutTransaction { db in
            try db.execute(
                sql: "PRAGMA page_size = \(schema.pageSize); PRAGMA journal_mode = \(journal); PRAGMA synchronous = OFF"
            )
            if let encoding = schema.textEncoding { try db.execute(sql: "PRAGMA encoding = '\(encoding)'") }
            if let mode = schema.autoVacuum { try db.execute(sql: "PRAGMA auto_vacuum = \(mode)") }
        }
        var rows: [String: Int] = [:]
        var keysChecked = false
        // Indexes go in after the rows (faster), but those of tables a trigger reads or writes go
        // in first: without them each firing scans the table, and generation turns quadratic
        // (Apple Photos: every asset inserted updates the faces WHERE ZASSETFORFACE = NEW.Z_PK).
        let early = tablesTriggersTouch
        try queue.inTransaction { db in
            for object in schema.objects where object.kind != .index { try create(object, in: db) }
            for object in schema.objects where object.kind == .index && early.contains(object.table.uppercased()) {
                try create(object, in: db)
            }
            let maker = ValueMaker(external: external)
            for (table, inserts) in (schema.appRows ?? [:]).sorted(by: { $0.key < $1.key }) {
                for insert in inserts {
                    try create(.init(kind: .table, name: table, table: table, sql: insert), in: db)
                }
            }
            for table in try insertionOrder(db) {
                let count = counts[table] ?? 0
                // Triggers may have added rows already (a history table fed by inserts): keys continue after them.
                let existing = try existingRows(table, in: db)
                rows[table] =
                    count == 0
                    ? 0 : try fill(table, rows: (existing + 1)...(existing + count), maker: maker, in: db) + existing
            }
            // Triggers write rows of their own, and change or delete others, after a table is filled:
            // the rows of the tables they touch are those the store ends with.
            for table in rows.keys where early.contains(table.uppercased()) {
                rows[table] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedSQLIdentifier)") ?? 0
            }
            try rebuildExternalContent(db)
            for object in schema.objects where object.kind == .index && !early.contains(object.table.uppercased()) {
                try create(object, in: db)
            }
            // `foreign_key_check` reads every row of every table with a key (a seventh of a
            // generation): only where a key may name no row — one a trigger or the app's rows
            // wrote, or one the rows could not take from a parent row.
            if maker.keys.unsure || schema.objects.contains(where: { $0.kind == .trigger })
                || !(schema.appRows ?? [:]).isEmpty
            {
                keysChecked = true
                try repairForeignKeys(db)
            }
            try leaveDanglingReferences(db, rows: rows)
            if schema.coreData != nil { try finishCoreData(db) }
            try writeHeader(db)
            return .commit
        }
        return (rows, keysChecked)
    }

    /// How the writer of ``append(to:rows:ending:)`` stops.
    public enum Ending: String, Sendable, Hashable, Codable, CaseIterable {
        /// Commits the rows in one transaction and closes.
        case close
        /// WAL mode, as an app: commits the rows in small transactions with SQLite's automatic
        /// checkpoint at 1,000 pages, the last one with it off, then dies by SIGKILL. The rows
        /// committed since the last checkpoint (the last transaction at least) live only in the
        /// `-wal`, which stays about the size an app's leaves (1,000 pages and a transaction).
        case killBeforeCheckpoint = "kill-before-checkpoint"
        /// Rollback-journal mode: commits the rows, then dies by SIGKILL in the middle of a
        /// transaction that spilled pages to the database (tiny page cache): a hot journal.
        case killMidTransaction = "kill-mid-transaction"
    }

    /// The table the app writes most to, where a writer's new rows go: the ordinary table with the
    /// most captured rows (Core Data's bookkeeping aside).
    public var mainTable: String? {
        if let preferredMainTable, schema.tables[preferredMainTable] != nil { return preferredMainTable }
        return schema.tables.filter { name, _ in
            schema.objects.first { $0.name == name }?.kind == .table
                && !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(name)
        }.max { ($0.value.rows, $0.value.bytes, $1.key) < ($1.value.rows, $1.value.bytes, $0.key) }?.key
    }

    /// Appends `rows` rows to ``mainTable`` of the existing store, continuing its keys, and stops
    /// as `ending` says: the fixture states of a killed app are made by a real process dying.
    public func append(to store: StoreFileSet, rows: Int, ending: Ending) throws {
        guard let table = mainTable else { return }
        var configuration = try configuration()
        configuration.prepareDatabase { db in
            switch ending {
            case .close: break
            // An app's WAL connection (GRDB's pools): checkpoints every 1,000 pages, syncs at them.
            case .killBeforeCheckpoint:
                try db.execute(
                    sql: "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 1000; PRAGMA synchronous = NORMAL")
            case .killMidTransaction: try db.execute(sql: "PRAGMA journal_mode = DELETE")
            }
        }
        let queue = try DatabaseQueue(path: store.main.path, configuration: configuration)
        let external = externalWriter(for: store)
        let maker = ValueMaker(external: external)
        // Rows continue after the last key (a WITHOUT ROWID table: after its row count).
        let start = try queue.read { db in
            try existingRows(table, in: db)
                + (schema.objects.first { $0.name == table }?.withoutRowID == true
                    ? Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedSQLIdentifier)") ?? 0 : 0)
        }
        switch ending {
        case .close:
            try queue.inTransaction { db in
                _ = try fill(table, rows: (start + 1)...(start + rows), maker: maker, in: db)
                return .commit
            }
            try external?.finish()
            try queue.close()
        case .killBeforeCheckpoint:
            try queue.writeWithoutTransaction { db in
                _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                // The table's plan (its parents' keys) read once, not once a transaction.
                let plan = try tablePlan(table, in: db)
                let perTransaction = try rowsPerTransaction(existing: start, in: db)
                var row = start + 1
                while row <= start + rows {
                    let last = min(start + rows, row + perTransaction - 1)
                    // The last transaction is never checkpointed: the -wal holds committed rows.
                    if last == start + rows { try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
                    try db.inTransaction {
                        _ = try fill(table, rows: row...last, maker: maker, plan: plan, in: db)
                        return .commit
                    }
                    row = last + 1
                }
            }
            try external?.finish()
            kill(getpid(), SIGKILL)
        case .killMidTransaction:
            try queue.inTransaction { db in
                _ = try fill(table, rows: (start + 1)...(start + rows), maker: maker, in: db)
                return .commit
            }
            try external?.finish()
            try queue.writeWithoutTransaction { db in
                // synchronous=OFF: a spill need not wait for a journal sync, so SQLite writes the
                // least recently used page, an old changed one too, not only pages past the file's end.
                try db.execute(sql: "PRAGMA cache_size = 2; PRAGMA synchronous = OFF")
                try db.execute(sql: "BEGIN IMMEDIATE")
                do {
                    // Never committed: about half the rows deleted and more added, so the tiny cache
                    // spills changed pages into the database file itself.
                    try db.execute(sql: "DELETE FROM \(table.quotedSQLIdentifier) WHERE abs(random()) % 2 = 0")
                    _ = try fill(
                        table, rows: (start + rows + 1)...(start + rows + max(rows * 4, 200)), maker: maker, in: db)
                } catch {
                    try? db.execute(sql: "ROLLBACK")
                    throw error
                }
                try external?.finish()
                kill(getpid(), SIGKILL)
            }
        }
    }

    /// Rows per transaction of a killed WAL writer: about 32 pages' worth, by the store's bytes per
    /// existing row (an overestimate: other tables count too), so one transaction adds little to
    /// the 1,000 pages the automatic checkpoint keeps the `-wal` to.
    private func rowsPerTransaction(existing rows: Int, in db: Database) throws -> Int {
        let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
        let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
        let perRow = max(1, pages * pageSize / max(1, rows))
        return max(1, 32 * pageSize / perRow)
    }

    private func externalWriter(for store: StoreFileSet) -> ExternalDataWriter? {
        guard schema.coreData != nil else { return nil }
        return ExternalDataWriter(folder: store.externalDataFolder, averageSize: externalAverage)
    }

    /// The captured average size of a Core Data external file (32 KiB when the capture had none).
    var externalAverage: Int {
        guard let facts = schema.coreData, facts.externalFiles > 0 else { return 32_768 }
        return Int(facts.externalBytes / Int64(facts.externalFiles))
    }

    // MARK: Creating

    private func create(_ object: StoreSchema.Object, in db: Database) throws {
        do {
            try db.execute(sql: object.sql)
        } catch let error as DatabaseError {
            throw GeneratorError.schema(object: object.name, message: error.message ?? "\(error)")
        }
    }

    /// The largest rowid of a table that has one (0 when empty, or for WITHOUT ROWID and virtual tables).
    private func existingRows(_ table: String, in db: Database) throws -> Int {
        guard let object = schema.objects.first(where: { $0.name == table }), object.kind == .table,
            object.withoutRowID != true
        else { return 0 }
        return try Int.fetchOne(db, sql: "SELECT IFNULL(MAX(rowid), 0) FROM \(table.quotedSQLIdentifier)") ?? 0
    }

    /// Tables parents first (declared foreign keys), then the rest in creation order.
    func insertionOrder(_ db: Database) throws -> [String] {
        let tables = schema.tableNames
        var parents: [String: Set<String>] = [:]
        for table in tables where schema.objects.first(where: { $0.name == table })?.kind == .table {
            let list = try Row.fetchAll(db, sql: "SELECT \"table\" FROM pragma_foreign_key_list(?)", arguments: [table])
            parents[table] = Set(list.map { $0["table"] as String } + triggerReferences(of: table).map(\.parent))
                .subtracting([table])
        }
        var ordered: [String] = []
        var placed: Set<String> = []
        func place(_ table: String, _ depth: Int) {
            guard !placed.contains(table), depth < 64 else { return }
            for parent in (parents[table] ?? []).sorted() where tables.contains(parent) { place(parent, depth + 1) }
            if placed.insert(table).inserted { ordered.append(table) }
        }
        for table in tables { place(table, 0) }
        return ordered
    }

    // MARK: Filling

    /// Inserts rows numbered `rows` (keys continue from an existing table's last one); returns
    /// how many went in (fewer when the table's unique combinations run out).
    func fill(
        _ table: String, rows numbers: ClosedRange<Int>, maker: ValueMaker, plan given: TablePlan? = nil,
        in db: Database
    ) throws -> Int {
        let rows = numbers.upperBound
        let plan = try given ?? tablePlan(table, in: db)
        let plans = plan.columns
        guard !plans.isEmpty else { return 0 }
        if let demanded = plan.references.first(where: { $0.demanded != nil && $0.count == 0 })?.demanded {
            throw GeneratorError.noParent(
                table: table, trigger: demanded.trigger, column: demanded.column, parent: demanded.parent,
                condition: demanded.condition ?? "")
        }
        let isVirtual = schema.objects.first { $0.name == table }?.kind == .virtualTable
        let sql =
            "INSERT INTO \(table.quotedSQLIdentifier) (\(plans.map(\.name.quotedSQLIdentifier).joined(separator: ", "))) VALUES (\(plans.map { _ in "?" }.joined(separator: ", ")))"
        let statement = try db.makeStatement(sql: sql)  // bound and stepped row by row, in insert
        var random = SeededRandom(seed: seed ^ stableHash(table) ^ UInt64(numbers.lowerBound) &* 0x2545_F491_4F6C_DD1D)
        let rtree =
            isVirtual && (schema.objects.first { $0.name == table }?.sql.uppercased().contains("USING RTREE") ?? false)
        let memory = RepairMemory()
        var inserted = 0, failedInARow = 0
        var failure: GeneratorError?
        let capacity = plan.capacity
        let batches =
            rtree || rowsPerStatement < 2
            ? nil : try RowBatches(table, plan: plan, schema: schema, maker: maker, rows: rowsPerStatement, in: db)
        var row = numbers.lowerBound
        while row <= numbers.upperBound {
            if let capacity, row - 1 >= capacity { break }
            // A constraint no repair meets: 64 rows refused in a row end the table (fast, and named).
            if failedInARow >= 64 { break }
            // Many rows to a statement while they go in; a refused one goes in alone, with its repairs.
            if let batches, case let count = batches.nextCount(of: min(rows, capacity ?? .max) - row + 1), count > 1 {
                var maker = maker
                maker.arena = batches.arena
                let (went, refused) = try batches.insert(row, count: count, plan: plan, random: &random) {
                    try makeRow(plan, row: $0, rows: rows, maker: maker, random: &$1)
                }
                (inserted, row) = (inserted + went, row + went)
                if went > 0 { failedInARow = 0 }
                if !refused { continue }
            }
            let values =
                rtree
                ? rtreeRow(row, dimensions: (plans.count - 1) / 2, random: &random)
                : try makeRow(plan, row: row, rows: rows, maker: maker, random: &random)
            do {
                try insert(
                    statement, values, table: table, plan: plan, row: row, rows: rows, maker: maker, memory: memory,
                    random: &random)
                inserted += 1
                failedInARow = 0
                for reference in plan.references { reference.appendKey(of: values, number: row) }
            } catch let error as GeneratorError {
                // A row that cannot be made is left out; a table none of whose rows can be, fails.
                failure = failure ?? error
                failedInARow += 1
            }
            row += 1
        }
        if !plan.keysHold { maker.keys.unsure = true }
        // (Rows a trigger made already may hold every key there is: `totals` of each athlete.)
        if inserted == 0, let failure,
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedSQLIdentifier)") == 0
        {
            throw failure
        }
        return inserted
    }

    /// One row's values: drawn, then each foreign key given a real parent's key (or NULL where
    /// allowed), and the enumerated parts their combination for this row.
    func makeRow(
        _ plan: TablePlan, row: Int, rows: Int, maker: ValueMaker, random: inout SeededRandom
    ) throws -> [DatabaseValue] {
        var values: [DatabaseValue] = []
        values.reserveCapacity(plan.columns.count)
        for (index, column) in plan.columns.enumerated() {
            maker.arena?.column = index
            values.append(try maker.value(column, row: row, rows: rows, random: &random))
        }
        let choices = plan.enumeration.isEmpty ? [] : plan.choices(for: row - 1)
        if let order = plan.sharingOrder {
            chooseSharedReferences(plan, order: order, choices: choices, row: row, values: &values, random: &random)
        } else {
            chooseReferences(plan, choices: choices, row: row, values: &values, random: &random)
        }
        for (at, part) in plan.enumeration.enumerated() {
            if case .column(let index) = part.part, let list = plan.columns[index].domain?.values, !list.isEmpty {
                values[index] = list[choices[at] % list.count]
            }
        }
        return values
    }

    /// Each foreign key of the row given a real parent's key (or NULL where allowed).
    private func chooseReferences(
        _ plan: TablePlan, choices: [Int], row: Int, values: inout [DatabaseValue], random: inout SeededRandom
    ) {
        for reference in plan.references {
            let tuple = parentKey(reference, choices: choices, row: row, values: values, random: &random)
            for (position, index) in reference.indices.enumerated() where index >= 0 {
                values[index] =
                    tuple.map { $0[$0.startIndex + position] }
                    ?? (plan.columns[index].notNull ? values[index] : .null)
                if tuple == nil && plan.columns[index].notNull { reference.madeUp = true }
            }
        }
    }

    /// The parent key `reference` takes in this row, chosen on its own: the enumerated parent, NULL
    /// (at the captured share, where allowed), a random parent, or for the first row of a
    /// self-reference the row itself; nil when none is to be had.
    func parentKey(
        _ reference: ReferencePlan, choices: [Int], row: Int, values: [DatabaseValue], random: inout SeededRandom
    ) -> ArraySlice<DatabaseValue>? {
        let parents = reference.count
        if let at = reference.enumerated {
            return parents == 0 ? nil : reference.tuple(choices[at] % parents)
        } else if reference.nullable && random.unit() < reference.nullShare {
            return nil
        } else if parents > 0 {
            return reference.tuple(Int(random.next() % UInt64(parents)))
        } else if let own = reference.ownColumns {
            return ArraySlice(own.map { $0 >= 0 ? values[$0] : row.databaseValue })
        }
        return nil
    }

    private func rtreeRow(_ row: Int, dimensions: Int, random: inout SeededRandom) -> [DatabaseValue] {
        var values: [DatabaseValue] = [row.databaseValue]
        for _ in 0..<dimensions {
            let low = random.unit() * 180 - 90
            values += [low.databaseValue, (low + random.unit()).databaseValue]
        }
        return values
    }

    /// The plan of each column that takes a value (generated columns are left to SQLite).
    func columnPlans(_ table: String, in db: Database) throws -> [ColumnPlan] {
        try tablePlan(table, in: db).columns
    }
}

/// Why a store could not be generated.
public enum GeneratorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store's file exists already.
    case exists(path: String)
    /// An object of the schema cannot be created.
    case schema(object: String, message: String)
    /// No row of `table` meets a constraint on `column` (its columns, comma-separated).
    case constraint(table: String, column: String, message: String)
    /// No row of `table` gets past `trigger`'s `RAISE`, which reads `columns` of the new row.
    case trigger(table: String, trigger: String, columns: [String], message: String)
    /// `trigger` accepts a row of `table` only when `column` names a row of `parent` meeting
    /// `condition` (SQL of the schema), and no row of `parent` does.
    case noParent(table: String, trigger: String, column: String, parent: String, condition: String)
    /// The generated store breaks a rule of its own schema: `rows` rows of `table` break `constraint`.
    case broken(table: String, constraint: String, rows: Int)
    /// No row of `table` could be made, though the captured store had `captured`.
    case empty(table: String, captured: Int)
    /// SQLite's `integrity_check` reports `problem` of the generated store, and a second reading confirms it.
    case damaged(problem: String)

    public var description: String {
        switch self {
        case .trigger(let table, let trigger, let columns, let message):
            "no row of \(table) that its trigger \(trigger) accepts could be made (the trigger reads "
                + "\(columns.isEmpty ? "no column of the new row" : columns.joined(separator: ", ")) and says: \(message))"
        case .noParent(let table, let trigger, let column, let parent, let condition):
            "no row of \(table) that its trigger \(trigger) accepts could be made: \(column) must name a row of "
                + "\(parent) where \(condition), and no row of \(parent) is one"
        case .broken(let table, let constraint, let rows):
            "the generated store breaks its own schema: \(rows) row\(rows == 1 ? "" : "s") of \(table) break \(constraint)"
        case .empty(let table, let captured):
            "no row of \(table) could be made, though the captured store had \(captured)"
        case .damaged(let problem): "the generated store fails SQLite's integrity_check: \(problem)"
        case .exists(let path): "\(path) already exists; the generator writes new stores only"
        case .schema(let object, let message): "cannot create \(object) of the captured schema: \(message)"
        case .constraint(let table, let column, let message):
            "no row of \(table) satisfying its constraint on \(column) could be made (\(message))"
        }
    }
}
