import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

extension SchemaGenerator.Ending: ExpressibleByArgument {}

/// The killed writer of the fixture states: appends rows to a store of a catalog, then closes or
/// dies as asked.
struct FixtureWriter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fixture-writer",
        abstract: "Append generated rows to a store, then close or die by SIGKILL (the fixture states' writer)."
    )

    @Argument(help: "The store to append to.")
    var store: String

    @Option(help: "The catalog folder whose schema the rows follow.")
    var catalog: String

    @Option(help: "The store's schema file, relative to the catalog.")
    var schema: String

    @Option(help: "The seed: the same seed gives the same rows.")
    var seed: UInt64 = 1

    @Option(help: "How many rows to append.")
    var rows = 10

    @Option(help: "How the writer ends: \(SchemaGenerator.Ending.allCases.map(\.rawValue).joined(separator: ", ")).")
    var ending: SchemaGenerator.Ending = .close

    func run() throws {
        let folder = try CatalogFolder(at: URL(filePath: catalog))
        guard let entry = folder.manifest.versions.flatMap(\.stores).first(where: { $0.schema == schema }) else {
            throw CatalogError.unreadable(path: schema, reason: "no store of the catalog has this schema file")
        }
        try SchemaGenerator(schema: try folder.schema(of: entry), seed: seed, mainTable: entry.mainTable).append(
            to: StoreFileSet(main: URL(filePath: store)), rows: rows, ending: ending)
    }
}
