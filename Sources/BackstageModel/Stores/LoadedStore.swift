import BackstageSystem
import Foundation
import GRDB

/// One open store of a ``StoreContainer``: a `DatabasePool` in WAL mode, a `DatabaseQueue`
/// for the other journal modes and in memory.
final class LoadedStore: @unchecked Sendable {
    let description: StoreDescription
    let url: URL?
    let writer: any DatabaseWriter
    let identity: FileIdentity?

    init(description: StoreDescription, url: URL?) throws {
        self.description = description
        self.url = url
        var configuration = Configuration()
        configuration.readonly = description.isReadOnly
        configuration.busyMode = .timeout(description.timeout)
        configuration.label = description.configuration ?? description.name
        let pragmas = try description.sqlitePragmas.sorted { $0.key < $1.key }.map { name, value in
            guard Self.isPlain(name), Self.isPlain(value) else {
                throw BackstageError(.invalidPragma(name: name, value: value), path: "", during: .loadingStores)
            }
            return (name, value)
        }
        let journalMode = description.journalMode
        let readOnly = description.isReadOnly
        configuration.prepareDatabase { db in
            // Core Data stores' triggers call functions only Core Data registers.
            try MissingFunctions.register(in: db)
            for (name, value) in pragmas where name != "journal_mode" {
                try db.execute(sql: "PRAGMA \(name) = \(value)")
            }
            if journalMode != "wal" && !readOnly {
                try db.execute(sql: "PRAGMA journal_mode = \(journalMode)")
            }
        }
        let path = url?.path ?? ""
        do {
            if let url {
                if journalMode == "wal" {
                    writer = try DatabasePool(path: url.path, configuration: configuration)
                } else {
                    writer = try DatabaseQueue(path: url.path, configuration: configuration)
                }
            } else {
                writer = try DatabaseQueue(configuration: configuration)
            }
        } catch let error as DatabaseError {
            throw Self.map(error, path: path, timeout: description.timeout)
        }
        identity = url.map(FileIdentity.init)
        if description.shouldMigrateStoreAutomatically && !description.isReadOnly && !description.migrations.isEmpty {
            var migrator = DatabaseMigrator()
            for migration in description.migrations {
                let sql = migration.sql
                migrator.registerMigration(migration.id) { db in try db.execute(sql: sql) }
            }
            do {
                try migrator.migrate(writer)
            } catch let error as DatabaseError {
                try? writer.close()
                throw BackstageError(error, path: path, during: .loadingStores)
            }
        }
    }

    /// Turns SQLite's read-only and busy errors into ``BackstageError`` causes naming the file.
    func mapErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where [.SQLITE_READONLY, .SQLITE_BUSY].contains(error.resultCode) {
            throw Self.map(error, path: url?.path ?? ":memory:", timeout: description.timeout)
        }
    }

    func close() throws {
        try writer.close()
    }

    static func map(_ error: DatabaseError, path: String, timeout: Double) -> BackstageError {
        switch error.resultCode {
        case .SQLITE_READONLY: BackstageError(.readOnlyStore, path: path, during: .loadingStores)
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            BackstageError(.storeInUse(timeout: timeout), path: path, during: .loadingStores)
        default: BackstageError(error, path: path, during: .loadingStores)
        }
    }

    private static func isPlain(_ text: String) -> Bool {
        !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
    }
}

/// What makes two paths the same store file: the resolved path, and the device and inode when
/// the file exists (so a hard link or a symlinked folder is recognised).
struct FileIdentity: Equatable, Sendable {
    var path: String
    var inode: UInt64?
    var device: UInt64?

    init(_ url: URL) {
        path = FileSystem().canonicalPath(url.path)
        if let status = try? FileSystem().status(path) {
            inode = status.inode
            device = status.device
        }
    }

    static func == (lhs: FileIdentity, rhs: FileIdentity) -> Bool {
        if let a = lhs.inode, let b = rhs.inode, lhs.device == rhs.device { return a == b }
        return lhs.path == rhs.path
    }

}
