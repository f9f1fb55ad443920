import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// Building the targets: each on a connection of its own that reads the locked source through the
/// bulk VFS, two at a time on two threads, while the step's thread reports their progress.
extension SplitRun {
    /// Builds every target, at most two at once, each on its own thread and connection, while this
    /// thread reports their progress and watches for cancellation (a failure or a cancellation
    /// interrupts the others). Returns the rows inserted, a dictionary a target, in target order.
    func buildTargets(_ plan: Plan, observer: MoveObserver) throws -> [[String: Int]] {
        let source = self.source
        let targets = self.targets
        let fileSystem = self.fileSystem
        // The first target keeps a Core Data source's store UUID; each other gets its own (SplitStoreIdentity).
        let identities = step.into.enumerated().map { $0.offset == 0 ? nil : $0.element.store.description }
        let total = Int64(max(plan.pageCount * plan.pageSize, 1))
        let work = TargetWork(count: targets.count)
        let threads = ThreadGroup()
        let workers = min(targets.count, max(1, min(ProcessInfo.processInfo.activeProcessorCount, 2)))
        for _ in 0..<workers {
            threads.start {
                while let index = work.next() {
                    let target = targets[index]
                    work.finish(index) {
                        let copier = try SplitRun.copier(reading: source.main.path)
                        defer { try? copier.close() }
                        try work.attach(copier, at: index)
                        let copied = try copier.inDatabase { db in
                            try SplitRun.build(
                                db, target: target, tables: plan.tablesByTarget[index], copying: plan,
                                identity: identities[index]
                            ) {
                                try work.progress(index, bytes: $0)
                            }
                        }
                        // Built and detached: its bytes reach the disk while the other target is copied
                        // and the census counts (the step's own fsync, after the verification, then
                        // finds nothing left).
                        try work.checkRunning()
                        try fileSystem.syncFile(target.temporaryMain.path)
                        return copied
                    }
                }
            }
        }
        var announced = false
        func report() {
            let bytes = work.bytes
            observer.progress(min(bytes, total), total)
            if bytes > 0 && !announced {
                announced = true
                observer.phase(.copying)
            }
        }
        while !threads.wait(timeout: 0.05) {
            report()
            if context.isCancelled() { work.cancel() }
        }
        report()
        if context.isCancelled() { throw BackstageError(.cancelled, path: "split \(step.store)", during: .upgrading) }
        if let (index, error) = work.failure {
            if let error = error as? DatabaseError {
                throw Self.copyFailure(error, source: source, target: targets[index])
            }
            throw error
        }
        return work.results
    }

    // MARK: - Building

    /// A connection that reads the store at `path`, which the caller holds locked (`immutable=1`:
    /// no lock of its own, never written), and writes the targets it attaches.
    static func copier(reading path: String) throws(BackstageError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        configuration.label = "Backstage.SplitCopy"
        do {
            return try DatabaseQueue(path: BulkCopy.sourceURI(path), configuration: configuration)
        } catch {
            throw BackstageError(error, path: path, during: .upgrading)
        }
    }

    /// Builds one target in its temporary file, attached to a copier connection; returns the rows
    /// inserted into each table. `progress` gets the target's bytes after each table. With an
    /// `identity` (the target's place in the container), a Core Data store's copy gets a store UUID
    /// of its own, derived from it (``SplitStoreIdentity``).
    static func build(
        _ db: Database, target: StoreFileSet, tables: [String], copying plan: Plan, identity: String? = nil,
        progress: (Int64) throws -> Void
    ) throws -> [String: Int] {
        try db.execute(
            sql: "ATTACH DATABASE ? AS backstage_target", arguments: [BulkCopy.targetURI(target.temporaryMain.path)])
        defer { try? db.execute(sql: "DETACH DATABASE backstage_target") }
        // The temporary is thrown away after a crash, so it needs no journal while it is built.
        try db.execute(sql: "PRAGMA backstage_target.page_size = \(plan.pageSize)")
        try db.execute(sql: "PRAGMA backstage_target.journal_mode = OFF")
        try db.execute(sql: "PRAGMA backstage_target.synchronous = OFF")
        let writeback = BackgroundWriteback(path: target.temporaryMain.path)
        defer { writeback.stop() }
        for pragma in ["user_version", "application_id"] {
            let value = try Int.fetchOne(db, sql: "PRAGMA main.\(pragma)") ?? 0
            try db.execute(sql: "PRAGMA backstage_target.\(pragma) = \(value)")
        }
        // Verified against the census: into its new, empty table SQLite inserted as many rows as the
        // source holds. Counting the target again would re-read everything SQLite just wrote, from
        // the page cache; a full quick_check, the whole file.
        var copied: [String: Int] = [:]
        func inserted(_ table: String) { copied[table] = db.changesCount }
        func written() throws -> Int64 {
            Int64(try Int.fetchOne(db, sql: "PRAGMA backstage_target.page_count") ?? 0) * Int64(plan.pageSize)
        }
        try db.inTransaction {
            func schema(_ type: String, of table: String) throws -> [String] {
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT sql FROM main.sqlite_master WHERE type = ? AND sql IS NOT NULL AND tbl_name = ? ORDER BY name",
                    arguments: [type, table])
            }
            for table in tables {
                guard let create = plan.sql[table] else { continue }
                try db.execute(sql: Self.qualify(create, schema: "backstage_target"))
                if let shadows = plan.shadows[table] {
                    // A virtual table: its index lives in its shadow tables, copied as they are
                    // (the module's own bookkeeping rows included), so it is the same index.
                    for shadow in shadows {
                        let name = shadow.quotedSQLIdentifier
                        try db.execute(sql: "DELETE FROM backstage_target.\(name)")
                        try db.execute(sql: "INSERT INTO backstage_target.\(name) SELECT * FROM main.\(name)")
                        inserted(shadow)
                    }
                    try progress(try written())
                    continue
                }
                let name = table.quotedSQLIdentifier
                let info = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(name))")
                let keys = info.filter { ($0["pk"] as Int) > 0 }
                let rowidIsKey = keys.count == 1 && (keys[0]["type"] as String).uppercased() == "INTEGER"
                let indexes = try schema("index", of: table)
                // A column named rowid (or _rowid_, oid) shadows that name of the real one.
                let rowid = RowidName.name(
                    amongColumns: try String.fetchAll(
                        db, sql: "SELECT name FROM pragma_table_xinfo(?, 'main')", arguments: [table]))
                let hidden =
                    plan.withoutRowID.contains(table) || rowidIsKey
                    ? nil : try rowid.map { try RowidSpan(db, table: table, rowid: $0) }
                if let hidden, let rowid, !hidden.mayTransfer(indexed: !indexes.isEmpty) {
                    copied[table] = try copyRowByRow(db, table: table, rowid: rowid, columns: info, indexes: indexes)
                } else {
                    // Like VACUUM: indexes first, then the bare INSERT ... SELECT *, which SQLite runs
                    // as a raw copy of the table's and the indexes' records, already in order (its
                    // transfer optimisation). The rowid is kept when it is the primary key, or carried
                    // by the index records; else SQLite numbers the rows 1, 2, 3… in rowid order.
                    for index in indexes {
                        try db.execute(sql: Self.qualify(index, schema: "backstage_target"))
                    }
                    try db.execute(sql: "INSERT INTO backstage_target.\(name) SELECT * FROM main.\(name)")
                    inserted(table)
                    // Whichever way SQLite ran it, the copy's rowids are the source's or 1 to the
                    // count: they are the source's exactly when both ends match. Else row by row.
                    if let hidden, let rowid,
                        try RowidSpan(db, table: table, rowid: rowid, schema: "backstage_target") != hidden
                    {
                        try db.execute(sql: "DELETE FROM backstage_target.\(name)")
                        copied[table] = try copyRowByRow(db, table: table, rowid: rowid, columns: info, indexes: [])
                    }
                }
                try progress(try written())
            }
            // Triggers last, so the copy fires none; a view goes where every table it reads is.
            for table in tables {
                for trigger in try schema("trigger", of: table) {
                    try db.execute(sql: Self.qualify(trigger, schema: "backstage_target"))
                }
            }
            for view in try Row.fetchAll(db, sql: "SELECT name, sql FROM main.sqlite_master WHERE type = 'view'") {
                let text: String = view["sql"]
                let reads = plan.sql.keys.filter {
                    text.range(of: "\\b\(NSRegularExpression.escapedPattern(for: $0))\\b", options: .regularExpression)
                        != nil
                }
                if !reads.isEmpty, reads.allSatisfy(tables.contains) {
                    try db.execute(sql: Self.qualify(text, schema: "backstage_target"))
                }
            }
            let placeholders = databaseQuestionMarks(count: tables.count)
            if try Bool.fetchOne(db, sql: "SELECT COUNT(*) > 0 FROM main.sqlite_master WHERE name = 'sqlite_sequence'")
                == true,
                try Bool.fetchOne(
                    db, sql: "SELECT COUNT(*) > 0 FROM backstage_target.sqlite_master WHERE name = 'sqlite_sequence'")
                    == true
            {
                try db.execute(
                    sql:
                        "INSERT INTO backstage_target.sqlite_sequence SELECT * FROM main.sqlite_sequence WHERE name IN (\(placeholders))",
                    arguments: StatementArguments(tables))
            }
            if let identity, tables.contains("Z_METADATA") {
                try SplitStoreIdentity.renew(db, schema: "backstage_target", location: identity)
            }
            return .commit
        }
        // Every page out of the VFS's hands before anything relies on the file (SQLite ignores a
        // close's failure); what follows writes through.
        try BulkCopy.flush(db, schema: "backstage_target")
        // The source's journal mode, written in the header; detaching checkpoints the one page.
        try db.execute(sql: "PRAGMA backstage_target.journal_mode = \(plan.isWAL ? "WAL" : "DELETE")")
        return copied
    }

    /// Copies `table`'s rows with their rowids named (SQLite's raw copy would renumber them), then
    /// builds `indexes` from the rows: 32 MiB for their sorts, the default page cache for the copies
    /// (a bigger one only spreads them over cold memory).
    /// - returns: The rows inserted.
    private static func copyRowByRow(
        _ db: Database, table: String, rowid: String, columns info: [Row], indexes: [String]
    ) throws -> Int {
        let name = table.quotedSQLIdentifier
        let list = ([rowid] + info.map { ($0["name"] as String).quotedSQLIdentifier }).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO backstage_target.\(name) (\(list)) SELECT \(list) FROM main.\(name)")
        let rows = db.changesCount
        let cache = try Int.fetchOne(db, sql: "PRAGMA main.cache_size") ?? -2000
        try db.execute(sql: "PRAGMA main.cache_size = -32768")
        defer { try? db.execute(sql: "PRAGMA main.cache_size = \(cache)") }
        for index in indexes {
            try db.execute(sql: Self.qualify(index, schema: "backstage_target"))
        }
        return rows
    }

    /// The smallest and largest rowid of a table without an INTEGER PRIMARY KEY, each read from an
    /// end of its b-tree (nil when it is empty).
    struct RowidSpan: Equatable {
        var first: Int64?
        var last: Int64?

        /// - parameter rowid: The name that reaches the rowid (``RowidName``).
        init(_ db: Database, table: String, rowid: String, schema: String = "main") throws {
            let name = "\(schema).\(table.quotedSQLIdentifier)"
            // One aggregate a query: SQLite reads min() or max() alone from the b-tree's end.
            first = try Int64.fetchOne(db, sql: "SELECT min(\(rowid)) FROM \(name)")
            last = try Int64.fetchOne(db, sql: "SELECT max(\(rowid)) FROM \(name)")
        }

        /// Whether the raw copy may keep the rowids: the index records carry them, or they may
        /// be 1 to the count (checked after the copy).
        func mayTransfer(indexed: Bool) -> Bool { indexed || first == nil || first == 1 }
    }

    /// Inserts `schema.` before the object name of a statement from `sqlite_master`, whose prefix
    /// SQLite normalises (`CREATE TABLE `, `CREATE UNIQUE INDEX `, `CREATE TRIGGER `...).
    static func qualify(_ sql: String, schema: String) -> String {
        for prefix in [
            "CREATE TABLE ", "CREATE UNIQUE INDEX ", "CREATE INDEX ", "CREATE TRIGGER ", "CREATE VIEW ",
            "CREATE VIRTUAL TABLE ",
        ]
        where sql.uppercased().hasPrefix(prefix) {
            return String(sql.prefix(prefix.count)) + schema + "." + String(sql.dropFirst(prefix.count))
        }
        return sql
    }
}

/// The targets a split's workers build: which is next, each one's bytes so far, result or error, and
/// its connection (to interrupt it when another fails or the split is cancelled).
private final class TargetWork: @unchecked Sendable {
    private let lock = NSLock()
    private var taken = 0
    private var written: [Int64]
    private var outcomes: [Result<[String: Int], any Error>?]
    private var copiers: [DatabaseQueue?]
    private var stopped = false

    /// What a worker throws when the split stops: another failed first, or it was cancelled.
    struct Stopped: Error {}

    init(count: Int) {
        written = Array(repeating: 0, count: count)
        outcomes = Array(repeating: nil, count: count)
        copiers = Array(repeating: nil, count: count)
    }

    /// The next target to build, nil when every one is taken or the split stopped.
    func next() -> Int? {
        lock.withLock {
            guard !stopped, taken < outcomes.count else { return nil }
            taken += 1
            return taken - 1
        }
    }

    func attach(_ copier: DatabaseQueue, at index: Int) throws {
        try lock.withLock {
            if stopped { throw Stopped() }
            copiers[index] = copier
        }
    }

    func progress(_ index: Int, bytes: Int64) throws {
        try lock.withLock {
            if stopped { throw Stopped() }
            written[index] = bytes
        }
    }

    /// Throws ``Stopped`` once the split has stopped (another target failed, or it was cancelled).
    func checkRunning() throws {
        try lock.withLock { if stopped { throw Stopped() } }
    }

    /// Runs `body` for target `index` and keeps its outcome; a failure stops the others.
    func finish(_ index: Int, _ body: () throws -> [String: Int]) {
        let outcome = Result { try body() }
        lock.withLock {
            copiers[index] = nil
            outcomes[index] = outcome
        }
        if case .failure = outcome { cancel() }
    }

    /// Stops every worker at its next table, interrupting the statement each runs.
    func cancel() {
        let running = lock.withLock {
            stopped = true
            return copiers.compactMap { $0 }
        }
        for copier in running { copier.interrupt() }
    }

    var bytes: Int64 { lock.withLock { written.reduce(0, +) } }

    /// The first target that failed for a reason of its own (not stopped, not interrupted because
    /// another failed), else the first that failed at all.
    var failure: (Int, any Error)? {
        lock.withLock {
            var first: (Int, any Error)?
            for (index, outcome) in outcomes.enumerated() {
                guard case .failure(let error) = outcome else { continue }
                let secondary = error is Stopped || (error as? DatabaseError)?.resultCode == .SQLITE_INTERRUPT
                if !secondary { return (index, error) }
                if first == nil { first = (index, error) }
            }
            return first
        }
    }

    var results: [[String: Int]] {
        lock.withLock { outcomes.map { (try? $0?.get()) ?? [:] } }
    }
}
