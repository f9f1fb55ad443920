import Backstage
import Foundation
import GRDB

/// What the checks after a run read from each upgraded store, taken from one private copy of it
/// instead of one copy per check, and reused while the store holds the same bytes.
extension Simulator {
    /// One upgraded store as the checks see it.
    struct StoreFacts {
        /// `integrity_check`'s confirmed problems.
        var integrity: [String]
        /// The external data files its rows reference.
        var referenced: Set<String>
        /// Rows breaking a foreign key per child table, and the tables whose check fails.
        var foreignKeys: (counts: [String: Int], unchecked: Set<String>)
        var schema: SchemaDescription
        /// Its Core Data store UUID (`Z_METADATA.Z_UUID`), nil when it is not a Core Data store.
        var coreDataUUID: String?
    }

    /// The facts of a store with the bytes of the files they were read from.
    struct ReusedFacts {
        var files: [Data?]
        var facts: StoreFacts
    }

    /// The facts of each store of `version` in `container` that is there, by location
    /// (`applicationSupport/Notes.sqlite`): those of the last run when the store's files (main,
    /// `-wal`, `-journal`: what a private copy holds) have the same bytes, else read again from one
    /// copy. The same bytes give the same answers; comparing them costs a read, a copy and its
    /// checks far more.
    static func storeFacts(
        of version: CatalogVersion, in container: AppContainer, cache: inout [String: ReusedFacts]
    ) throws -> [String: StoreFacts] {
        var result: [String: StoreFacts] = [:]
        for store in version.stores {
            let set = StoreFileSet(main: store.location.url(in: container))
            guard FileManager.default.fileExists(atPath: set.main.path) else { continue }
            let key = "\(version.name) \(store.location)"
            let files = ["", "-wal", "-journal"].map { try? Data(contentsOf: URL(filePath: set.main.path + $0)) }
            if let reused = cache[key], reused.files == files {
                result[store.location.description] = reused.facts
                continue
            }
            let facts = try StoreInspector.withCopy(of: set) { db in
                StoreFacts(
                    integrity: try StoreIntegrity.problems(in: db),
                    referenced: try ExternalDataReferences.referenced(db),
                    foreignKeys: try ForeignKeyCensus.count(db), schema: try SchemaDescription(db),
                    coreDataUUID: try db.tableExists("Z_METADATA")
                        ? try String.fetchOne(db, sql: "SELECT Z_UUID FROM Z_METADATA") : nil)
            }
            cache[key] = ReusedFacts(files: files, facts: facts)
            result[store.location.description] = facts
        }
        return result
    }
}
