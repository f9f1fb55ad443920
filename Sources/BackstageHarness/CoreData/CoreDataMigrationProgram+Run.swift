import Backstage
import Foundation
import GRDB

extension CoreDataMigrationProgram {
    /// Runs the program on the store at `path` in one transaction (all of it, or nothing).
    ///
    /// - throws: ``CoreDataMigrationError`` when something is unresolved (and `missingHashes` is
    ///   `.refuse`), a table holds rows of no entity, or `Z_METADATA` holds no plist; `DatabaseError`
    ///   from SQLite.
    public func run(onStoreAt path: String, missingHashes: MissingHashes = .refuse) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        do {
            try queue.inTransaction { db in
                try apply(to: db, missingHashes: missingHashes)
                return .commit
            }
        } catch let refusal as Refusal {
            switch refusal {
            case .unresolved(let problems): throw CoreDataMigrationError(reason: .unresolved(problems))
            case .metadataIsNotADictionary: throw CoreDataMigrationError(reason: .metadataIsNotADictionary)
            case .rowsOfNoEntity(let table, let rows, let entities):
                throw CoreDataMigrationError(reason: .rowsOfNoEntity(table: table, rows: rows, entities: entities))
            }
        }
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
