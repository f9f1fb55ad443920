import BackstageSystem
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
    /// - throws: ``BackstageError/Cause/sqlite(code:message:)`` naming the store when it cannot be read
    ///   (corrupt, not a database, locked past `busyTimeout`).
    public static func write(of store: URL, to destination: URL, busyTimeout: Double = 5) throws {
        // With a `-wal` present (the app is running, or was killed), a read-only connection reads
        // it without touching the live files. Without one, a read-only connection to a WAL store
        // would create `-wal` and `-shm` it cannot remove; a read-write one kept from writing by
        // query_only removes them on close, leaving the container as it found it.
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        if FileManager.default.fileExists(atPath: store.path + "-wal") {
            configuration.readonly = true
        } else {
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA query_only = 1") }
        }
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
            throw BackstageError(error, path: store.path, during: .loadingStores)
        }
    }
}
