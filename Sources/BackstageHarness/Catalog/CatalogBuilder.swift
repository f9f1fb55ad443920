import Backstage
import BackstageFixtures
import Foundation

/// Grows a catalog version by version: a new version is what the plan makes of the newest one,
/// run for real on a small generated container of it, each resulting store captured.
public enum CatalogBuilder {
    /// What `addVersion` found: the new version, or the problems that kept it out.
    public struct Outcome: Sendable {
        public var version: CatalogVersion?
        public var problems: [CatalogProblem]
    }

    /// Adds version `name`, reached from the newest by the plan at `planFile`, recording every
    /// store's schema as the plan leaves it. Nothing is written when the plan has problems
    /// (a table it loses, a store it names that is not there): they are returned instead.
    ///
    /// - parameter writable: The store the new version's app writes to; by default the one that
    ///   received the previous app's main table.
    public static func addVersion(_ name: String, plan planFile: URL, summary: String? = nil, writable: ContainerLocation? = nil,
                                  to catalog: inout CatalogFolder, executable: URL) throws -> Outcome {
        guard let newest = catalog.manifest.versions.last else { throw CatalogError.unknownVersion(name, known: []) }
        guard !catalog.manifest.versions.contains(where: { $0.name == name }) else {
            throw CatalogError.unreadable(path: catalog.url.appending(path: CatalogFolder.manifestName).path, reason: "it already has a version \(name)")
        }
        let plan = try UpgradePlan.load(from: planFile)
        let scratch = FileManager.default.temporaryDirectory.appending(path: "backstage-add-version-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let root = scratch.appending(path: "container")
        let generator = FixtureGenerator(executable: executable, catalog: catalog)
        try generator.generate(FixtureSpec(layout: newest.name, size: 300_000, state: .clean, seed: 1), at: root)
        let container = AppContainer.iOSSandbox(root: root)
        try Upgrader(container: container).runAndWait(plan, budget: .infinity)

        let previousMain = try newest.writableStore.flatMap { SchemaGenerator(schema: try catalog.schema(of: $0), seed: 0, mainTable: $0.mainTable).mainTable }
        var stores: [CatalogStore] = []
        var schemas: [(String, StoreSchema)] = []
        for root in [ContainerRoot.documents, .applicationSupport, .caches] {
            for entry in try FileClassifier().scan(container[root]) where entry.kind == .database && !entry.path.hasPrefix(".backstage") {
                let location = ContainerLocation(root, entry.path)
                let schema = try StoreCapture.capture(StoreFileSet(main: location.url(in: container)))
                let file = "stores/\(name)/\(root.rawValue)-\(entry.path.replacingOccurrences(of: "/", with: "-")).json"
                schemas.append((file, schema))
                let isWritable = writable.map { $0 == location } ?? previousMain.map(schema.tableNames.contains) ?? false
                let main = isWritable && previousMain.map(schema.tableNames.contains) == true ? previousMain : nil
                stores.append(CatalogStore(location: location, tables: schema.tableNames, writable: isWritable ? true : nil, mainTable: main, schema: file))
            }
        }
        let planPath = "plans/\(newest.name)-to-\(name).json"
        let version = CatalogVersion(name: name, summary: summary, plan: planPath, stores: stores)
        let problems = CatalogCheck.check(plan, from: newest, to: version)
        guard problems.isEmpty else { return Outcome(version: nil, problems: problems) }
        for (file, schema) in schemas { try catalog.write(schema, at: file) }
        let target = catalog.url.appending(path: planPath)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contentsOf: planFile).write(to: target, options: .atomic)
        catalog.manifest.versions.append(version)
        try catalog.writeManifest()
        return Outcome(version: version, problems: [])
    }
}
