import Backstage
import Foundation
import GRDB

/// The plain SQL a `coreDataMigration` step is compared with: the program's `plainSQLBaseline` (the
/// same table rewrites, without Core Data's bookkeeping or Backstage's journal) run by plain GRDB
/// on a copy of the same store, in one `IMMEDIATE` transaction with `synchronous = FULL`, as the
/// step runs it.
enum PlainSQLBaseline {
    /// The label reports print beside the baseline's time.
    static let label = "plain SQL (GRDB, one transaction)"

    /// Copies the files of the store at `store` (main, `-wal`, `-shm`, `-journal`) into `folder`
    /// and returns the copy's main file.
    static func copy(_ store: StoreFileSet, into folder: URL) throws -> URL {
        let manager = FileManager.default
        try? manager.removeItem(at: folder)
        try manager.createDirectory(at: folder, withIntermediateDirectories: true)
        for file in [store.main] + Sidecar.allCases.map(store.sidecar)
        where manager.fileExists(atPath: file.path) {
            try manager.copyItem(at: file, to: folder.appending(path: file.lastPathComponent))
        }
        return folder.appending(path: store.main.lastPathComponent)
    }

    /// Seconds `program`'s baseline takes on the store at `path` (the store is changed).
    static func seconds(of program: CoreDataMigrationProgram, onStoreAt path: URL) throws -> Double {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        MissingFunctions.configureAsTheApp(&configuration)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let started = Date()
        let queue = try DatabaseQueue(path: path.path, configuration: configuration)
        try queue.inTransaction(.immediate) { db in
            for statement in program.plainSQLBaseline { try db.execute(sql: statement) }
            return .commit
        }
        try queue.close()
        return Date().timeIntervalSince(started)
    }
}
