import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct CatalogShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a catalog's versions, stores and tables.",
        discussion: """
            Example:
              backstage catalog show Cookbook --json
            """
    )

    @Argument(help: "The catalog folder.", completion: .directory)
    var directory: String

    @Flag(help: "Print the manifest and every store's schema as one JSON object.")
    var json = false

    struct Full: Encodable {
        var manifest: CatalogManifest
        var schemas: [String: StoreSchema]
    }

    func run() async throws {
        let catalog = try CatalogFolder(at: URL(filePath: directory))
        if json {
            var schemas: [String: StoreSchema] = [:]
            for store in catalog.manifest.versions.flatMap(\.stores) {
                schemas[store.schema] = try catalog.schema(of: store)
            }
            try Output.json(Full(manifest: catalog.manifest, schemas: schemas))
        } else {
            Output.out(try Self.render(catalog))
        }
    }

    static func render(_ catalog: CatalogFolder) throws -> String {
        var lines = ["\(catalog.manifest.app): \(catalog.manifest.versions.count) version(s) in \(catalog.url.path)"]
        for version in catalog.manifest.versions {
            lines.append(
                "  \(version.name)" + (version.plan.map { "  (reached by \($0))" } ?? "")
                    + (version.summary.map { ": \($0)" } ?? ""))
            for store in version.stores {
                let schema = try catalog.schema(of: store)
                let rows = schema.tables.values.reduce(0) { $0 + $1.rows }
                let bytes = schema.tables.values.reduce(Int64(0)) { $0 + $1.bytes }
                let counts = Dictionary(grouping: schema.objects, by: \.kind).mapValues(\.count)
                var line =
                    "    \(store.location)\(store.writable == true ? " (written by the app)" : ""): \(store.tables.count) tables, "
                line +=
                    "\(counts[.index] ?? 0) indexes, \(counts[.trigger] ?? 0) triggers, \(counts[.view] ?? 0) views, \(counts[.virtualTable] ?? 0) virtual tables; "
                // A captured version's counts are the real store's; a later one's, those of the
                // fixture add-version upgraded to record it (generated rows, not the user's).
                let source =
                    version.plan == nil ? "rows in the captured store" : "rows in the fixture add-version upgraded"
                line += "\(rows) \(source), \(formatBytes(bytes)), \(schema.journalMode) journal"
                if let coreData = schema.coreData {
                    line +=
                        "; Core Data: \(coreData.entities.count) entities, \(coreData.externalFiles) external files (\(formatBytes(coreData.externalBytes)))"
                }
                if let fresh = store.freshInstall { line += "; fresh install: \(fresh)" }
                lines.append(line)
            }
            for check in version.checks ?? [] {
                let expectation =
                    switch check.expect {
                    case .unchanged: "unchanged by the upgrade"
                    case .equals(let value): "= \(value)"
                    }
                lines.append("    check \"\(check.name)\" on \(check.store): \(check.sql) \(expectation)")
            }
        }
        return lines.joined(separator: "\n")
    }
}
