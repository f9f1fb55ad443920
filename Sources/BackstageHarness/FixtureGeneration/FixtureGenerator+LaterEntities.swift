import Backstage
import Foundation
import GRDB

extension FixtureGenerator {
    /// What the app of a later version wrote while it was used: in a store reached by upgrades from
    /// an older version's fixture, the tables of entities the migrations left without a row (an
    /// entity new in the version, a new many-to-many's join table) get rows generated from the
    /// version's schema, then the store keeps Core Data's invariants (``CoreDataFixturePass``:
    /// their keys reach live rows, `Z_MAX` covers them). Without it, a fixture of version N would
    /// hold no row of N's new entities, and the migration out of N would never meet one.
    ///
    /// Only for a catalog made from a Core Data model (its model knows every relationship); a table
    /// the catalog keeps empty on purpose stays empty.
    func fillEntitiesLeftEmpty(
        of version: CatalogVersion, size: Int64, seed: UInt64, in container: AppContainer
    )
        throws
    {
        guard try CoreDataCatalog.keptModel(of: catalog) != nil else { return }
        for store in version.stores {
            let schema = try catalog.schema(of: store)
            guard let facts = schema.coreData else { continue }
            let set = StoreFileSet(main: store.location.url(in: container))
            guard FileManager.default.fileExists(atPath: set.main.path) else { continue }
            let bookkeeping: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
            let entityTables = Set(facts.entities.map(\.table))
            let candidates = schema.tableNames.filter {
                !bookkeeping.contains($0) && !(schema.emptyTables ?? []).contains($0)
                    && (entityTables.contains($0) || $0.hasPrefix("Z_"))
            }
            let queue = try DatabaseQueue(path: set.main.path)
            let empty = try queue.read { db in
                try candidates.filter { table in
                    try db.tableExists(table)
                        && (try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.quotedSQLIdentifier)") ?? 0) == 0
                }
            }
            guard empty.contains(where: entityTables.contains) else {
                try queue.close()
                continue
            }
            // Rows of the version's own schema, made beside the store and copied in by column name.
            let scratch = FileManager.default.temporaryDirectory.appending(
                path: "backstage-fixture-\(UUID().uuidString)", directoryHint: .isDirectory)
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: scratch) }
            let fresh = StoreFileSet(main: scratch.appending(path: "fresh.sqlite"))
            _ = try SchemaGenerator(schema: schema, seed: seed ^ 0x4C41_5445, mainTable: store.mainTable)
                .generate(into: fresh, bytes: max(64_000, size / 8))
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "ATTACH DATABASE ? AS fresh", arguments: [fresh.main.path])
                try db.inTransaction {
                    for table in empty {
                        let columns = try db.columns(in: table).map(\.name.quotedSQLIdentifier).joined(separator: ", ")
                        let name = table.quotedSQLIdentifier
                        try db.execute(
                            sql: "INSERT INTO main.\(name) (\(columns)) SELECT \(columns) FROM fresh.\(name)")
                    }
                    return .commit
                }
                try db.execute(sql: "DETACH DATABASE fresh")
            }
            try queue.close()
            try CoreDataFixturePass.apply(to: set, schema: schema, version: version.name, catalog: catalog)
        }
    }
}
