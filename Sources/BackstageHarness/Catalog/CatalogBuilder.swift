import Backstage
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
    /// (a table it loses, a store it names that is not there, a schema that differs from a fresh
    /// install's): they are returned instead.
    ///
    /// - parameter name: The new version's name, such as `v3`.
    /// - parameter planFile: The JSON plan that upgrades the newest version's storage to it.
    /// - parameter summary: A line about the version, for `catalog show`.
    /// - parameter catalog: The catalog, whose manifest gains the version.
    /// - parameter executable: The `backstage` executable fixtures of the newest version are made with.
    /// - parameter writable: The store the new version's app writes to; by default the one that
    ///   received the previous app's main table.
    /// - parameter expect: Per location, the store file (or `.sql` script) a fresh install of the
    ///   new version creates: the store the plan leaves there must have the same schema (see
    ///   ``SchemaDescription``). The fresh install's schema is kept in the catalog, so `catalog
    ///   check` and `simulate` compare with it too.
    /// - parameter replace: Replace the newest version, when it is `name` and has not shipped (no
    ///   version follows it). A shipped version is never replaced: a correction ships as a new one.
    public static func addVersion(
        _ name: String, plan planFile: URL, summary: String? = nil, writable: ContainerLocation? = nil,
        expect: [ContainerLocation: URL] = [:], replace: Bool = false,
        to catalog: inout CatalogFolder, executable: URL
    ) throws -> Outcome {
        if let reason = CatalogVersion.problem(withName: name) { throw CatalogError.invalidName(name, reason: reason) }
        var manifest = catalog.manifest
        if let existing = manifest.versions.firstIndex(where: { $0.name == name }) {
            guard existing == manifest.versions.count - 1, replace else {
                let path = catalog.url.appending(path: CatalogFolder.manifestName).path
                throw existing == manifest.versions.count - 1
                    ? CatalogError.duplicateVersion(name, catalog: path)
                    : CatalogError.shipped(version: name, newest: manifest.versions.last?.name ?? name)
            }
            guard existing > 0 else {
                throw CatalogError.invalidName(
                    name, reason: "is the captured first version: capture it again with `catalog init`")
            }
            manifest.versions.removeLast()
        } else if replace {
            throw CatalogError.unknownVersion(name, known: manifest.versions.map(\.name))
        }
        guard let newest = manifest.versions.last else { throw CatalogError.unknownVersion(name, known: []) }
        // The newest version ships with this one: its plan must be the one its stores were recorded
        // from. (Versions with no fingerprint yet are frozen as they are below.)
        var problems = CatalogCheck.fingerprintProblems(
            in: catalog, versions: manifest.versions, reportingMissing: false)
        let plan = try UpgradePlan.load(from: planFile)
        problems += try CatalogCheck.lintProblems(of: plan, reaching: name, from: newest, in: catalog)
        let scratch = FileManager.default.temporaryDirectory.appending(
            path: "backstage-add-version-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let root = scratch.appending(path: "container")
        var previousCatalog = catalog
        previousCatalog.manifest = manifest
        let generator = FixtureGenerator(executable: executable, catalog: previousCatalog)
        try generator.generate(FixtureSpec(layout: newest.name, size: 300_000, state: .clean, seed: 1), at: root)
        let groups = Set(previousCatalog.appGroups).union(
            plan.steps.flatMap(\.locations).compactMap(\.root.appGroupIdentifier))
        let container = AppContainer.iOSSandbox(root: root, appGroups: groups.sorted())
        do {
            try Upgrader(container: container).runAndWait(plan, budget: .infinity)
        } catch {
            // Named by the plan's locations, never by the scratch container's paths.
            var sentence = "\(error)"
            for root in container.roots.sorted(by: { container[$0].path.count > container[$1].path.count }) {
                sentence = sentence.replacingOccurrences(of: container[root].path + "/", with: root.rawValue + "/")
            }
            let cause = CatalogProblem(
                version: name,
                message: "the plan \(planFile.path) fails on a container of \(newest.name): \(sentence)")
            return Outcome(version: nil, problems: problems + [cause])
        }

        let previousMain = try newest.writableStore.flatMap {
            SchemaGenerator(schema: try catalog.schema(of: $0), seed: 0, mainTable: $0.mainTable).mainTable
        }
        var stores: [CatalogStore] = []
        var schemas: [(String, StoreSchema)] = []
        var freshInstalls: [(String, String)] = []
        for root in container.roots where root != .temporary {
            for entry in try FileClassifier(declarations: .everyDatabase).scan(container[root])
            where entry.kind == .database && !entry.path.hasPrefix(".backstage") {
                let location = ContainerLocation(root, entry.path)
                let storeURL = location.url(in: container)
                let schema = try StoreCapture.capture(StoreFileSet(main: storeURL))
                let base = "stores/\(name)/\(root.rawValue)-\(entry.path.replacingOccurrences(of: "/", with: "-"))"
                schemas.append((base + ".json", schema))
                var freshInstall: String?
                if let expected = expect[location] {
                    let differences = try SchemaDescription(contentsOf: expected).differences(
                        from: SchemaDescription(contentsOf: storeURL))
                    problems += differences.map {
                        CatalogProblem(
                            version: name, message: "\(location) differs from a fresh install (\(expected.path)): \($0)"
                        )
                    }
                    freshInstall = base + ".fresh-install.sql"
                    freshInstalls.append(
                        (
                            freshInstall!,
                            try SchemaDescription.statements(contentsOf: expected).map { $0 + ";\n" }.joined()
                        ))
                }
                let isWritable =
                    writable.map { $0 == location } ?? previousMain.map(schema.tableNames.contains) ?? false
                let main = isWritable && previousMain.map(schema.tableNames.contains) == true ? previousMain : nil
                stores.append(
                    CatalogStore(
                        location: location, tables: schema.tableNames, writable: isWritable ? true : nil,
                        mainTable: main, schema: base + ".json", freshInstall: freshInstall))
            }
        }
        for location in expect.keys.sorted(by: { $0.description < $1.description })
        where !stores.contains(where: { $0.location == location }) {
            problems.append(
                CatalogProblem(
                    version: name,
                    message:
                        "--expect names \(location), but the plan leaves no store there (it leaves \(stores.map(\.location.description).joined(separator: ", ")))"
                ))
        }
        let planPath = "plans/\(newest.name)-to-\(name).json"
        let version = CatalogVersion(
            name: name, summary: summary, plan: planPath, stores: stores, frozen: try PlanFingerprint(of: plan))
        problems += CatalogCheck.check(plan, from: newest, to: version)
        guard problems.isEmpty else { return Outcome(version: nil, problems: problems) }
        if replace { try? FileManager.default.removeItem(at: catalog.url.appending(path: "stores/\(name)")) }
        for (file, schema) in schemas { try catalog.write(schema, at: file) }
        for (file, sql) in freshInstalls {
            try Data(sql.utf8).write(to: catalog.url.appending(path: file), options: .atomic)
        }
        let target = catalog.url.appending(path: planPath)
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contentsOf: planFile).write(to: target, options: .atomic)
        // Versions added before plans were fingerprinted are frozen as they are now.
        for index in manifest.versions.indices where manifest.versions[index].frozen == nil {
            if let file = catalog.planURL(of: manifest.versions[index]) {
                manifest.versions[index].frozen = try PlanFingerprint(of: UpgradePlan.load(from: file))
            }
        }
        manifest.versions.append(version)
        catalog.manifest = manifest
        try catalog.writeManifest()
        return Outcome(version: version, problems: [])
    }
}
