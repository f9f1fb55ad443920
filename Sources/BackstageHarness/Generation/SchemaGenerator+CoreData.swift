import Foundation
import GRDB

extension SchemaGenerator {
    /// `Z_PRIMARYKEY` lists every entity with its largest key; `Z_METADATA` carries the captured
    /// model's version hashes and identifiers in a binary plist, as Core Data writes it.
    func finishCoreData(_ db: Database) throws {
        guard let facts = schema.coreData else { return }
        if try db.tableExists("Z_PRIMARYKEY") {
            try db.execute(sql: "DELETE FROM Z_PRIMARYKEY")
            for entity in facts.entities {
                var max = 0
                if try db.tableExists(entity.table),
                    try db.columns(in: entity.table).contains(where: { $0.name == "Z_PK" })
                {
                    max =
                        try Int.fetchOne(
                            db, sql: "SELECT IFNULL(MAX(Z_PK), 0) FROM \(entity.table.quotedSQLIdentifier)") ?? 0
                }
                try db.execute(
                    sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)",
                    arguments: [entity.id, entity.name, entity.superID, max])
            }
        }
        if try db.tableExists("Z_METADATA") {
            var random = SeededRandom(seed: seed ^ 0x4D45_5441)
            let uuid = random.uuid()
            var hashes: [String: Data] = [:]
            for (entity, hash) in facts.versionHashes { hashes[entity] = Data(base64Encoded: hash) ?? Data() }
            let metadata = CoreDataMetadata(
                NSPersistenceFrameworkVersion: facts.persistenceFrameworkVersion, NSStoreModelVersionHashes: hashes,
                NSStoreModelVersionIdentifiers: facts.versionIdentifiers, NSStoreType: "SQLite",
                _NSAutoVacuumLevel: "2")
            // XML: its writer sorts the keys, so the same seed gives the same bytes. Encoded rather
            // than given to PropertyListSerialization as a [String: Any]: a statically linked
            // Foundation (`--static-swift-stdlib`) cannot bridge that dictionary and refuses it.
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .xml
            let data = try encoder.encode(metadata)
            try db.execute(sql: "DELETE FROM Z_METADATA")
            try db.execute(
                sql: "INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)", arguments: [uuid, data])
        }
    }
}
