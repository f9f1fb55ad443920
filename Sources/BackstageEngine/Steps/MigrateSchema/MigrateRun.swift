import BackstageModel
import BackstageSystem
import Foundation
import GRDB
import GRDBSQLite

/// Applies SQL migrations by identifier with GRDB's `DatabaseMigrator`: each migration runs in its
/// own transaction and is recorded in `grdb_migrations`, so a crash rolls back the one in progress
/// and a rerun applies only what is missing.
///
/// After success the store's identity (device and inode) and schema cookie (bytes 40–43 of the
/// header) are stamped in `applicationSupport/.backstage/schema/`, so `isNeeded(_:in:fileSystem:)`
/// answers from a `stat` and a header read, without opening SQLite. The cookie only grows over a
/// database's life (each schema change, each GRDB pool open), so the app using its store, even
/// migrating its own schema, never makes the check say "pending"; a store replaced by another file
/// (a restored backup, an older copy moved in) or overwritten with an older copy (a lower cookie)
/// does, and the next run opens it once and applies what it lacks.
struct MigrateRun {
    let context: StepContext
    let step: UpgradeStep.MigrateSchema

    var store: StoreFileSet { StoreFileSet(main: step.store.url(in: context.container)) }

    /// The helper threads a migration's sorts may start besides its own (`PRAGMA threads`): one a
    /// core, at most 4.
    static let sorterThreads = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))

    func run(observing observer: MoveObserver) throws -> Bool {
        guard context.fileSystem.exists(store.main.path) else { return false }
        let record = UpgradeJournal(
            step: .migrateSchema, phase: .journaled, source: step.store, destination: step.store)
        try context.journal.write(record)
        observer.phase(.journaled)
        var configuration = Configuration()
        configuration.busyMode = .timeout(context.busyTimeout)
        let checks = step.foreignKeyChecks ?? .deferred
        configuration.foreignKeysEnabled = checks == .immediate
        // A migration that updates rows of a Core Data store fires its triggers, which call
        // functions only Core Data registers (and collations only the app registers).
        MissingFunctions.configureAsTheApp(&configuration)
        // Each migration's commit reaches the disk before the journal says `migrated`, whatever
        // the SQLite build's default (some compile WAL connections to NORMAL). And its sorts (an
        // index built, an ORDER BY) sort and merge their runs on helper threads, which SQLite's
        // sorter starts only when asked: an index on a text column of the bench's 10 GB store,
        // built by the `sqlite3` shell, 1.72–1.80 s with 2 threads, 1.99–2.14 s with none.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA threads = \(Self.sorterThreads)")
        }
        let queue: DatabaseQueue
        do {
            // The statement journal and sorts' spill files gathered; the store and its -wal written through.
            queue = try DatabaseQueue(path: BulkCopy.migrationURI(store.main.path), configuration: configuration)
        } catch let error as DatabaseError {
            // Another process's lock is "store in use", as for every step; anything else is SQLite's
            // failure to open the store the migration is for.
            if error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                throw BackstageError(
                    .storeInUse(timeout: context.busyTimeout), path: store.main.path, during: .upgrading)
            }
            throw BackstageError(error, path: store.main.path, during: .upgrading)
        }
        defer { try? queue.close() }
        var migrator = DatabaseMigrator()
        for migration in step.migrations {
            let sql = migration.sql
            // GRDB's own deferred check fails on any violation, old ones too, and quotes the row.
            migrator.registerMigration(migration.id, foreignKeyChecks: .immediate) { db in
                if checks == .deferred {
                    try ForeignKeyGuard.execute(sql, in: db)
                } else {
                    try MigrationSQL.execute(sql, in: db)
                }
            }
        }
        let applied = try queue.read { db in try migrator.appliedIdentifiers(db) }
        observer.phase(.locked)
        let heartbeat = MigrationHeartbeat(observer: observer, phase: .locked)
        heartbeat.install(on: queue)
        defer { heartbeat.uninstall(from: queue) }
        // Each migration commits on its own: one that fails after others leaves them applied, and says so.
        var appliedNow: [String] = []
        for migration in step.migrations where !applied.contains(migration.id) {
            if context.isCancelled() {
                throw BackstageError(.cancelled, path: "migrate \(step.store)", during: .upgrading)
            }
            let kept =
                appliedNow.isEmpty
                ? "" : " (\(appliedNow.joined(separator: ", ")), applied before it in this step, stay applied)"
            do {
                try migrator.migrate(queue, upTo: migration.id)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_INTERRUPT && context.isCancelled() {
                throw BackstageError(.cancelled, path: "migrate \(step.store)", during: .upgrading)
            } catch let error as DatabaseError {
                throw BackstageError(
                    .migrationFailed(id: migration.id, message: (error.message ?? "\(error.resultCode)") + kept),
                    path: store.main.path, during: .upgrading)
            } catch let refusal as MigrationSQL.Refusal {
                throw BackstageError(
                    .migrationRefused(id: migration.id, statement: refusal.statement, reason: refusal.reason + kept),
                    path: store.main.path, during: .upgrading)
            } catch let violation as ForeignKeyViolation {
                throw BackstageError(
                    .migrationFailed(id: migration.id, message: violation.description + kept), path: store.main.path,
                    during: .upgrading)
            }
            appliedNow.append(migration.id)
            observer.phase(.migrating)
            heartbeat.phase = .migrating
        }
        let ran = !appliedNow.isEmpty
        observer.phase(.migrated)
        // Bring the header up to date, so the stamp matches what a header read sees.
        try queue.writeWithoutTransaction { db in
            if try String.fetchOne(db, sql: "PRAGMA journal_mode")?.lowercased() == "wal" {
                _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
        }
        try queue.close()
        try stamp()
        try context.journal.clear()
        observer.phase(.done)
        return ran
    }

    /// What the check compares with: which file was migrated, and its schema cookie then.
    struct Stamp: Equatable {
        var cookie: UInt32
        var device: UInt64
        var inode: UInt64

        var text: String { "\(cookie) \(device) \(inode)" }

        static func read(
            _ step: UpgradeStep.MigrateSchema, in container: AppContainer, fileSystem: FileSystem
        ) -> Stamp? {
            guard let bytes = try? fileSystem.readPrefix(stampPath(step, in: container), count: 64) else { return nil }
            let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
            guard fields.count == 3, let cookie = UInt32(fields[0]), let device = UInt64(fields[1]),
                let inode = UInt64(fields[2])
            else { return nil }
            return Stamp(cookie: cookie, device: device, inode: inode)
        }
    }

    private func stamp() throws {
        let header = try context.fileSystem.readPrefix(store.main.path, count: 100)
        guard let status = try context.fileSystem.status(store.main.path) else { return }
        let url = URL(filePath: Self.stampPath(step, in: context.container))
        try context.fileSystem.createDirectories(url.deletingLastPathComponent().path)
        let stamp = Stamp(cookie: Self.cookie(header), device: status.device, inode: status.inode)
        try context.fileSystem.writeAtomically(Array(stamp.text.utf8), to: url.path)
    }

    static func cookie(_ header: [UInt8]) -> UInt32 {
        header.count >= 44
            ? UInt32(header[40]) << 24 | UInt32(header[41]) << 16 | UInt32(header[42]) << 8 | UInt32(header[43]) : 0
    }

    /// One stamp per store and list of migrations: FNV-1a of the location and the identifiers.
    static func stampPath(_ step: UpgradeStep.MigrateSchema, in container: AppContainer) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in ([step.store.description] + step.migrations.map(\.id)).joined(separator: "\u{0}").utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return ContainerLocation(.applicationSupport, ".backstage/schema/" + String(hash, radix: 16)).filePath(
            in: container)
    }
}

/// A row whose foreign key points at no row, named by its table and rowid (never its values:
/// they are the user's).
struct ForeignKeyViolation: Error, Hashable, Comparable, CustomStringConvertible {
    var table: String
    var rowid: Int64?
    var parent: String
    var key: Int

    static func < (a: Self, b: Self) -> Bool { (a.table, a.rowid ?? -1, a.key) < (b.table, b.rowid ?? -1, b.key) }

    /// The violations in the rows of the child tables `tables` (`PRAGMA foreign_key_check(table)`).
    static func all(_ db: Database, in tables: [String]) throws -> Set<ForeignKeyViolation> {
        var violations: Set<ForeignKeyViolation> = []
        for table in tables {
            for row in try Row.fetchAll(db, sql: "SELECT * FROM pragma_foreign_key_check(?)", arguments: [table]) {
                violations.insert(ForeignKeyViolation(table: row[0], rowid: row[1], parent: row[2], key: row[3]))
            }
        }
        return violations
    }

    var description: String {
        "it leaves the row \(rowid.map { "with rowid \($0)" } ?? "(WITHOUT ROWID)") of table \(table) with a foreign key to \(parent) that matches no row"
    }
}

/// Reports a migration's work every 100 ms while SQLite runs it (a statement that rebuilds a large
/// table can take seconds), and interrupts it when the upgrade is cancelled: the migration's
/// transaction is then rolled back, nothing of it stays.
final class MigrationHeartbeat {
    private let observer: MoveObserver
    var phase: StepPhase
    private var last = ContinuousClock.now

    init(observer: MoveObserver, phase: StepPhase) {
        self.observer = observer
        self.phase = phase
    }

    /// Installs SQLite's progress handler on `queue`'s connection; ``uninstall(from:)`` takes it off.
    func install(on queue: DatabaseQueue) {
        queue.inDatabase { db in install(on: db) }
    }

    /// Takes the handler off, before this object goes (a closed queue has no connection left to call it).
    func uninstall(from queue: DatabaseQueue) {
        queue.inDatabase { db in
            if let connection = db.sqliteConnection { sqlite3_progress_handler(connection, 0, nil, nil) }
        }
        withExtendedLifetime(self) {}
    }

    /// Installs SQLite's progress handler on `db` (every 10,000 virtual machine instructions); the
    /// handler lives as long as this object, which outlives the connection's migrations.
    func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_progress_handler(
            db.sqliteConnection, 10_000,
            { context in
                guard let context else { return 0 }
                return Unmanaged<MigrationHeartbeat>.fromOpaque(context).takeUnretainedValue().tick()
            }, context)
    }

    /// Nonzero interrupts the statement.
    private func tick() -> Int32 {
        if observer.isCancelled() { return 1 }
        let now = ContinuousClock.now
        if now - last >= .milliseconds(100) {
            last = now
            observer.heartbeat(phase)
        }
        return 0
    }
}

extension MigrateRun: JournaledStep {
    static let kind = StepKind.migrateSchema
    var subject: String { step.store.path }

    /// Each migration is one SQLite transaction: a crash rolled back the one in progress, and those
    /// the step applied before it stay; a rerun applies what is missing.
    static func recover(_ record: UpgradeJournal, in context: StepContext) throws -> String {
        try context.journal.clear()
        return "rolled back the migration in progress, kept those it had completed"
    }
}
