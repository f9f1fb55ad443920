import Foundation
import GRDB

/// A consistent copy of a live store made with SQLite's online backup API: the pages of one
/// read transaction, whatever the store's `-wal` holds and whoever writes meanwhile. The live
/// files are only read; the snapshot is one file in rollback-journal mode, with no sidecar.
///
/// ```swift
/// try StoreSnapshot.write(of: URL(filePath: "Notes.sqlite"), to: URL(filePath: "/tmp/Notes.sqlite"))
/// ```
public enum StoreSnapshot {
    /// Writes the snapshot of `store` at `destination` (which must not exist).
    ///
    /// - throws: ``StoreError/sqlite(path:code:message:)`` naming the store when it cannot be read
    ///   (corrupt, not a database, locked past `busyTimeout`).
    public static func write(of store: URL, to destination: URL, busyTimeout: Double = 5) throws {
        // Not `readonly`: a read-only connection to a WAL store creates `-wal` and `-shm` it cannot
        // remove, while a read-write one (kept from writing by query_only) checkpoints and removes
        // them on close when it is the last, leaving the container as it found it.
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA query_only = 1") }
        do {
            let source = try DatabaseQueue(path: store.path, configuration: configuration)
            defer { try? source.close() }
            let target = try DatabaseQueue(path: destination.path)
            try source.backup(to: target)
            try target.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
            }
            try target.close()
        } catch let error as DatabaseError {
            try? FileManager.default.removeItem(at: destination)
            throw StoreError.sqlite(path: store.path, code: error.resultCode.rawValue, message: error.message ?? "\(error)")
        }
    }
}
