import Foundation
import GRDB

extension CoreDataMigrationProgram {
    /// What the runner does when the program's version hashes are unknown.
    public enum MissingHashes: Sendable, Hashable {
        /// Refuse to run (``CoreDataMigrationError/Reason/unresolved(_:)``): the store would be
        /// refused by the app.
        case refuse
        /// Run, and leave `NSStoreModelVersionHashes` out of the metadata: for tests and benches of
        /// the table rewrites only, never for a store an app will open.
        case omitForTesting
    }

    /// Runs every statement on `db`, which must be inside a transaction the caller commits.
    ///
    /// - throws: ``CoreDataMigrationError`` when something is unresolved (and `missingHashes` is
    ///   `.refuse`) or `Z_METADATA` holds no plist; `DatabaseError` from SQLite.
    public func apply(to db: Database, missingHashes: MissingHashes = .refuse) throws {
        if !unresolved.isEmpty, missingHashes == .refuse {
            throw CoreDataMigrationError(reason: .unresolved(unresolved))
        }
        for statement in statements {
            switch statement {
            case .sql(let sql): try db.execute(sql: sql)
            case .writeMetadata:
                guard let row = try Row.fetchOne(db, sql: "SELECT Z_VERSION, Z_PLIST FROM Z_METADATA"),
                    let existing = row["Z_PLIST"] as Data?
                else { throw CoreDataMigrationError(reason: .metadataIsNotADictionary) }
                let version: Int64 = row["Z_VERSION"]
                let rewritten = try Self.rewrittenMetadataPlist(existing, with: metadata)
                try db.execute(
                    sql: "UPDATE Z_METADATA SET Z_PLIST = ? WHERE Z_VERSION = ?", arguments: [rewritten, version])
            }
        }
    }

    /// Runs the program on the store at `path` in one transaction (all of it, or nothing).
    public func run(onStoreAt path: String, missingHashes: MissingHashes = .refuse) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.inTransaction { db in
            try apply(to: db, missingHashes: missingHashes)
            return .commit
        }
        try queue.close()
    }
}

/// Where a model version's Core Data version hashes can be read.
public enum CoreDataVersionHashes {
    /// The hashes of version `version` from a compiled model's `VersionInfo.plist`
    /// (`NSManagedObjectModel_VersionHashes`, version name → entity → 32 bytes).
    public static func fromCompiledModel(_ versionInfo: URL, version: String) throws -> [String: Data]? {
        let data = try Data(contentsOf: versionInfo)
        let plist = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        let versions = (plist as? [String: Any])?["NSManagedObjectModel_VersionHashes"] as? [String: Any]
        return versions?[version] as? [String: Data]
    }

    /// The hashes `Z_METADATA` records in the store at `path` (open a copy: a WAL store's `-wal`
    /// is checkpointed when the last connection closes).
    public static func fromStore(atPath path: String) throws -> [String: Data]? {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let data = try queue.read { db in try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA") }
        try queue.close()
        guard let data else { return nil }
        let plist = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        return (plist as? [String: Any])?["NSStoreModelVersionHashes"] as? [String: Data]
    }
}
