import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// SQLite's exclusive lock on a store, held from before the first byte moves until the
/// source is gone.
///
/// Opening the store rolls back a hot journal left by a killed transaction; under the lock the
/// WAL is checkpointed with `TRUNCATE`, so the main file holds every committed transaction.
/// The connection uses `locking_mode=EXCLUSIVE`, so the lock is not released between
/// statements, and another process's connection (even idle, in WAL mode) makes the lock fail
/// with `SQLITE_BUSY` after the busy timeout: see <https://www.sqlite.org/pragma.html#pragma_locking_mode>.
package final class StoreLock {
    private var queue: DatabaseQueue?
    let path: String
    /// True when the store is in WAL mode.
    let isWAL: Bool
    /// What the lock is taken for, named by its errors.
    let activity: BackstageError.Activity

    package init(path: String, timeout: Double, during activity: BackstageError.Activity) throws(BackstageError) {
        self.path = path
        self.activity = activity
        var configuration = Configuration()
        configuration.busyMode = .timeout(timeout)
        configuration.foreignKeysEnabled = false
        configuration.label = "Backstage.StoreLock"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            // The checkpoint syncs the main file before it truncates the -wal.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            self.queue = queue
            isWAL = try queue.inDatabase { db in
                let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? ""
                // Takes the EXCLUSIVE lock; in exclusive locking mode it is kept after COMMIT.
                try db.execute(sql: "BEGIN EXCLUSIVE TRANSACTION")
                try db.execute(sql: "COMMIT")
                if mode.lowercased() == "wal" {
                    let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                    if let busy: Int = row?[0], busy != 0 {
                        throw DatabaseError(resultCode: .SQLITE_BUSY, message: "checkpoint could not complete")
                    }
                }
                return mode.lowercased() == "wal"
            }
        } catch {
            try? queue?.close()
            throw Self.map(any: error, path: path, timeout: timeout, during: activity)
        }
    }

    /// Runs `body` on the locked connection: the only connection that can read the store now.
    package func withConnection<T>(_ body: (Database) throws -> T) throws -> T {
        guard let queue else { throw BackstageError(.lockReleased, path: path, during: activity) }
        return try queue.inDatabase(body)
    }

    /// Closes the connection and releases the lock.
    package func close() {
        try? queue?.close()
        queue = nil
    }

    deinit {
        close()
    }

    /// An error of opening or reading the store at `path`, typed: SQLite's by ``map(_:path:timeout:during:)``,
    /// anything else as ``BackstageError/init(_:path:during:)`` types it.
    static func map(
        any error: any Error, path: String, timeout: Double, during activity: BackstageError.Activity
    ) -> BackstageError {
        if let error = error as? DatabaseError { return map(error, path: path, timeout: timeout, during: activity) }
        return BackstageError(error, path: path, during: activity)
    }

    static func map(
        _ error: DatabaseError, path: String, timeout: Double, during activity: BackstageError.Activity
    ) -> BackstageError {
        let cause: BackstageError.Cause? =
            switch error.resultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED: .storeInUse(timeout: timeout)
            case .SQLITE_NOTADB: .notADatabase
            case .SQLITE_CORRUPT: .corruptStore(reason: error.message ?? "database disk image is malformed")
            default: nil
            }
        guard let cause else { return BackstageError(error, path: path, during: activity) }
        return BackstageError(cause, path: path, during: activity)
    }
}
