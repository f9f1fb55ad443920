import Backstage
import BackstageHarness
import Foundation

/// The killed writer of the fixture states: appends rows to a store of a catalog, then closes or
/// dies as asked.
enum FixtureWriter {
    static func write(_ request: SimulateChildRequest.FixtureWrite) throws {
        let folder = try CatalogFolder(at: URL(filePath: request.catalog))
        guard let entry = folder.manifest.versions.flatMap(\.stores).first(where: { $0.schema == request.schema })
        else {
            throw CatalogError.unreadable(path: request.schema, reason: "no store of the catalog has this schema file")
        }
        try SchemaGenerator(schema: try folder.schema(of: entry), seed: request.seed, mainTable: entry.mainTable)
            .append(to: StoreFileSet(main: URL(filePath: request.store)), rows: request.rows, ending: request.ending)
    }
}
