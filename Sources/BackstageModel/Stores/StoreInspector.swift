import BackstageSystem
import Foundation
import GRDB

/// Reads a store without touching it: the file set is copied to a scratch folder first, because
/// opening a WAL database in place checkpoints and deletes its `-wal` when the last
/// connection closes.
///
/// ```swift
/// let counts = try StoreInspector.rowCounts(of: StoreFileSet(main: url))
/// counts["ZNOTE"]  // 1250
/// ```
public enum StoreInspector {
    /// The number of rows in each table of the store (SQLite's own tables excluded).
    ///
    /// - parameter store: The store to count; it is copied first and never opened in place.
    /// - parameter includingWAL: When false, the `-wal` is left out of the copy, so the counts
    ///   say what the main file alone holds.
    /// - throws: ``FileSystemError`` or a GRDB `DatabaseError`.
    public static func rowCounts(of store: StoreFileSet, includingWAL: Bool = true) throws -> [String: Int] {
        try withCopy(of: store, includingWAL: includingWAL) { db in
            var counts: [String: Int] = [:]
            let tables = try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            for table in tables {
                counts[table] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedSQLIdentifier)") ?? 0
            }
            return counts
        }
    }

    /// Runs `body` on a read-only connection to a scratch copy of the store.
    public static func withCopy<T>(
        of store: StoreFileSet, includingWAL: Bool = true, _ body: (Database) throws -> T
    ) throws -> T {
        let fileSystem = FileSystem()
        let scratch = FileManager.default.temporaryDirectory.appending(path: "backstage-inspect-\(UUID().uuidString)")
        try fileSystem.createDirectories(scratch.path)
        defer { try? fileSystem.removeTree(scratch.path) }
        let copy = StoreFileSet(main: scratch.appending(path: store.fileName))
        try fileSystem.copyFile(store.main.path, to: copy.main.path)
        if includingWAL, fileSystem.exists(store.sidecar(.wal).path) {
            try fileSystem.copyFile(store.sidecar(.wal).path, to: copy.sidecar(.wal).path)
        }
        if fileSystem.exists(store.sidecar(.journal).path) {
            try fileSystem.copyFile(store.sidecar(.journal).path, to: copy.sidecar(.journal).path)
        }
        var configuration = Configuration()
        MissingFunctions.configureAsTheApp(&configuration)
        let queue = try DatabaseQueue(path: copy.main.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(body)
    }
}
