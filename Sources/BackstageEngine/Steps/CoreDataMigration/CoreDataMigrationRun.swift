import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// Runs a ``CoreDataMigrationProgram`` on its store: journaled, the store opened as the app opens it
/// (Core Data's functions registered for its triggers), the whole program one `IMMEDIATE` transaction
/// with `synchronous = FULL`. A crash or a power cut before the commit leaves the store as it was
/// (SQLite rolls the transaction back), after it the store of the new version; recovery only clears
/// the journal, and a rerun finds the store's metadata naming the destination and does nothing.
struct CoreDataMigrationRun: JournaledStep {
    static let kind = StepKind.coreDataMigration
    let context: StepContext
    let step: UpgradeStep.CoreDataMigration

    var subject: String { step.store.path }
    private var path: String { step.store.filePath(in: context.container) }

    /// Which version the store at `path` is of (``CoreDataMigrationProgram/storeVersion(in:)``),
    /// read without writing anything.
    static func storeVersion(
        of path: String, program: CoreDataMigrationProgram
    ) throws
        -> CoreDataMigrationProgram.StoreVersion
    {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "Backstage.CoreDataMigration"
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in try program.storeVersion(in: db) }
    }

    /// - returns: Why the store was left as it was (of the destination version already, or of
    ///   neither version: checked under its lock); nil when the program ran.
    func run(observing observer: MoveObserver) throws -> String? {
        guard context.fileSystem.exists(path) else { return "absent: no store at \(step.store)" }
        try context.journal.write(
            UpgradeJournal(step: Self.kind, phase: .journaled, source: step.store, destination: step.store))
        observer.phase(.journaled)
        var configuration = Configuration()
        configuration.busyMode = .timeout(context.busyTimeout)
        configuration.foreignKeysEnabled = false
        MissingFunctions.configureAsTheApp(&configuration)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA threads = \(MigrateRun.sorterThreads)")
        }
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: BulkCopy.migrationURI(path), configuration: configuration)
        } catch let error as DatabaseError {
            if error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                throw BackstageError(.storeInUse(timeout: context.busyTimeout), path: path, during: .upgrading)
            }
            throw BackstageError(error, path: path, during: .upgrading)
        }
        defer { try? queue.close() }
        let heartbeat = MigrationHeartbeat(observer: observer, phase: .locked)
        heartbeat.install(on: queue)
        defer { heartbeat.uninstall(from: queue) }
        let program = step.program
        let half = max(1, program.statements.count / 2)
        var unchanged: String?
        do {
            try queue.inTransaction(.immediate) { db in
                observer.phase(.locked)
                // Under the lock: a store already of the destination version (another run, the app's own
                // Core Data), or of neither (a later step of the chain ran), is left alone.
                if let reason = try program.storeVersion(in: db).reason {
                    unchanged = reason
                    return .rollback
                }
                if context.isCancelled() {
                    throw BackstageError(.cancelled, path: step.description, during: .upgrading)
                }
                try program.apply(to: db, missingHashes: step.missingHashes ?? .refuse) { done in
                    // Inside the transaction: a crash here leaves nothing of the migration.
                    if done == half {
                        heartbeat.phase = .migrating
                        observer.phase(.migrating)
                    }
                }
                return .commit
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_INTERRUPT && context.isCancelled() {
            throw BackstageError(.cancelled, path: step.description, during: .upgrading)
        } catch let error as DatabaseError {
            if error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                throw BackstageError(.storeInUse(timeout: context.busyTimeout), path: path, during: .upgrading)
            }
            throw BackstageError(
                .migrationFailed(id: step.migrationID, message: error.message ?? "\(error.resultCode)"), path: path,
                during: .upgrading)
        } catch let refusal as CoreDataMigrationProgram.Refusal {
            throw BackstageError(
                .migrationFailed(id: step.migrationID, message: refusal.description), path: path, during: .upgrading)
        }
        observer.phase(.migrated)
        try queue.close()
        try context.journal.clear()
        observer.phase(.done)
        return unchanged
    }

    /// The program is one transaction: a crash rolled it back, or it had committed. Either way the
    /// store is whole; a rerun migrates it when its metadata does not name the destination.
    static func recover(_ record: UpgradeJournal, in context: StepContext) throws -> String {
        try context.journal.clear()
        return "the Core Data migration in progress was rolled back by SQLite, or had committed"
    }
}
