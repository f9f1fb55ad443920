import Backstage
import Foundation

/// Builds the container an old version of an app left behind, for real, from its catalog: the
/// first version's stores made by the ``SchemaGenerator`` from their captured schemas, later
/// versions reached by running the catalog's own upgrade plans (a later version no plan reaches
/// yet, as in a catalog made from a Core Data model, is made from its own schemas the same way),
/// and each state made by what causes
/// it in the field — a writer process killed by SIGKILL, an upgrade killed mid-step.
public struct FixtureGenerator: Sendable {
    /// The `backstage` executable: killed writers and killed upgrades run in child processes, made by
    /// the `backstage-simulate-child` beside it.
    public var executable: URL
    /// The app whose layouts are built (the bundled Notes sample by default).
    public var catalog: CatalogFolder

    /// The user's documents to put in the container's Documents folder (copied as they are);
    /// nil: the Notes sample's documents for the bundled Notes catalog, none for another app's.
    public var documents: URL?

    public init(executable: URL, catalog: CatalogFolder, documents: URL? = nil) {
        self.executable = executable
        self.catalog = catalog
        self.documents = documents
    }

    /// Generates `spec` into `root`, which must not exist or be empty.
    ///
    /// - returns: The rows of the app's main table in the store it writes to (a killed writer's
    ///   committed rows included). Read the container's ``FixtureManifest`` with
    ///   ``FixtureManifest/read(container:spec:rows:)`` when you need it: it copies and hashes every
    ///   store, which costs more than writing it.
    @discardableResult
    public func generate(_ spec: FixtureSpec, at root: URL) throws -> Int {
        let version = try catalog.version(spec.layout)
        // Built from the newest version at or before it that no plan reaches: the first, or a
        // version whose plan is not written yet (a Core Data model's, before its migration is) or is
        // refused when read (a Core Data migration without the destination's version hashes).
        let upToIt = catalog.manifest.versions.prefix { $0.name != version.name } + [version]
        let refused = Set(try CoreDataCatalog.unresolvedPlans(in: catalog).map(\.version))
        guard
            let first = upToIt.last(where: { $0.plan == nil || refused.contains($0.name) })
                ?? catalog.manifest.versions.first
        else {
            throw CatalogError.unknownVersion(spec.layout, known: [])
        }
        let existed = FileManager.default.fileExists(atPath: root.path)
        if let existing = try? FileManager.default.contentsOfDirectory(atPath: root.path), !existing.isEmpty {
            throw FixtureError.notEmpty(path: root.path)
        }
        do {
            return try build(spec, version: version, first: first, at: root)
        } catch {
            // A failed fixture leaves nothing behind: the rerun finds the folder as it was.
            if existed {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [] {
                    try? FileManager.default.removeItem(at: root.appending(path: name))
                }
            } else {
                try? FileManager.default.removeItem(at: root)
            }
            throw error
        }
    }

    private func build(_ spec: FixtureSpec, version: CatalogVersion, first: CatalogVersion, at root: URL) throws -> Int
    {
        let container = catalog.container(at: root)
        for folder in container.roots {
            try FileManager.default.createDirectory(at: container[folder], withIntermediateDirectories: true)
        }
        try writeDocuments(container.documents, seed: spec.seed)
        var rows = try generateStores(of: first, size: spec.size, seed: spec.seed, in: container)
        let tail = max(4, rows / 10)
        let killedWriter: SchemaGenerator.Ending? =
            switch spec.state {
            case .walPending: .killBeforeCheckpoint
            case .hotJournal: .killMidTransaction
            default: nil
            }
        if version.name == first.name, let ending = killedWriter {
            try writeKilled(first, rows: tail, ending: ending, seed: spec.seed, in: container)
            rows += tail
        }
        // Later versions: the real upgrades from the first (all but the last when it is to be interrupted).
        let chain = try catalog.chain(from: first.name, to: version.name)
        let upgrader = Upgrader(container: container)
        for (plan, _) in spec.state == .interrupted ? Array(chain.dropLast()) : chain {
            try upgrader.runAndWait(plan, budget: .infinity)
        }
        // The version's app was used too: its new entities have rows.
        if !chain.isEmpty, spec.state != .interrupted {
            try fillEntitiesLeftEmpty(of: version, size: spec.size, seed: spec.seed, in: container)
        }
        switch spec.state {
        case .clean:
            break
        case .walPending, .hotJournal:
            if version.name != first.name, let ending = killedWriter {
                // The new version's app wrote more, and was killed.
                try writeKilled(version, rows: tail, ending: ending, seed: spec.seed ^ 0x5EED, in: container)
                rows += tail
            }
        case .bothLocations:
            // A backup restored the other copy: the app's store in the other of Documents and Application Support.
            guard let store = version.writableStore else { break }
            let other =
                store.location.root == .documents
                ? ContainerLocation(.applicationSupport, store.location.path)
                : ContainerLocation(.documents, (store.location.path as NSString).lastPathComponent)
            try copyStore(
                StoreFileSet(main: store.location.url(in: container)), to: StoreFileSet(main: other.url(in: container)))
        case .interrupted:
            try killUpgrade(into: version, first: first, container: container)
        case .orphanSidecars:
            try writeOrphanSidecars(of: first, seed: spec.seed, in: container)
        }
        return rows
    }

    /// Makes every store of `version` from its schema; `size` is shared by their captured sizes.
    /// - returns: The rows of the main table of the store the app writes to.
    private func generateStores(
        of version: CatalogVersion, size: Int64, seed: UInt64, in container: AppContainer
    ) throws -> Int {
        let schemas = try version.stores.map { try catalog.schema(of: $0) }
        let weights = schemas.map { schema in
            max(1, schema.tables.values.reduce(Int64(0)) { $0 + $1.bytes } + (schema.coreData?.externalBytes ?? 0))
        }
        let total = weights.reduce(0, +)
        var rows = 0
        for (index, store) in version.stores.enumerated() {
            let set = StoreFileSet(main: store.location.url(in: container))
            try FileManager.default.createDirectory(at: set.directory, withIntermediateDirectories: true)
            let generator = SchemaGenerator(
                schema: schemas[index], seed: seed ^ stableHash(store.location.description), mainTable: store.mainTable)
            let report = try generator.generate(into: set, bytes: size * weights[index] / total)
            try CoreDataFixturePass.apply(to: set, schema: schemas[index], version: version.name, catalog: catalog)
            if store == version.writableStore, let main = generator.mainTable { rows = report.rows[main] ?? 0 }
        }
        return rows
    }

    /// Runs a writer on the store `version`'s app writes to, in a child process that dies by SIGKILL.
    private func writeKilled(
        _ version: CatalogVersion, rows: Int, ending: SchemaGenerator.Ending, seed: UInt64, in container: AppContainer
    ) throws {
        guard let store = version.writableStore else {
            throw FixtureError.missingResource("a store of version \(version.name)")
        }
        try writeKilled(
            StoreFileSet(main: store.location.url(in: container)), schema: store.schema, rows: rows, ending: ending,
            seed: seed)
    }

    private func writeKilled(
        _ store: StoreFileSet, schema: String, rows: Int, ending: SchemaGenerator.Ending, seed: UInt64
    ) throws {
        let write = SimulateChildRequest.FixtureWrite(
            store: store.main.path, catalog: catalog.url.path, schema: schema, seed: seed, rows: rows, ending: ending)
        let outcome = try ChildProcess.run(SimulateChildRequest(.fixtureWriter(write)), beside: try childsBackstage())
        guard outcome.killedBySIGKILL else {
            throw FixtureError.writerFailed(
                path: store.main.path,
                reason: "it ended with status \(outcome.status) instead of being killed: \(outcome.stderr)")
        }
    }

    /// A store whose database the user deleted through file sharing, leaving its `-wal` and `-shm`.
    private func writeOrphanSidecars(of first: CatalogVersion, seed: UInt64, in container: AppContainer) throws {
        guard let store = first.writableStore else { return }
        let base = ((store.location.path as NSString).lastPathComponent as NSString).deletingPathExtension
        let gone = StoreFileSet(main: container.documents.appending(path: "\(base) Backup.sqlite"))
        _ = try SchemaGenerator(schema: try catalog.schema(of: store), seed: seed ^ 0xDEAD, mainTable: store.mainTable)
            .generate(into: gone, bytes: 64_000)
        try writeKilled(gone, schema: store.schema, rows: 8, ending: .killBeforeCheckpoint, seed: seed ^ 0xDEAD)
        try FileManager.default.removeItem(at: gone.main)
        try? FileManager.default.removeItem(at: gone.supportFolder)
    }

    /// Kills the upgrade into `version` in its first step, half way; for a version no plan reaches
    /// (the first, or one whose plan is not written yet: the fixture is made from its own schemas),
    /// the upgrade out of it (at its lock).
    private func killUpgrade(into version: CatalogVersion, first: CatalogVersion, container: AppContainer) throws {
        let versions = catalog.manifest.versions
        let isFirst = version.name == first.name
        let next = versions.firstIndex { $0.name == version.name }.flatMap {
            versions.index(after: $0) < versions.endIndex ? versions[versions.index(after: $0)] : nil
        }
        guard let target = isFirst ? next : version, let planFile = catalog.planURL(of: target)
        else {
            throw FixtureError.writerFailed(
                path: catalog.url.path, reason: "version \(version.name) has no upgrade to interrupt")
        }
        let plan = try UpgradePlan.load(from: planFile)
        guard let first = plan.steps.first else {
            throw FixtureError.writerFailed(path: planFile.path, reason: "the plan has no step to interrupt")
        }
        let point: CrashPoint =
            switch first.kind {
            case .split: CrashPoint(.split, .copied)
            case .migrateSchema: CrashPoint(.migrateSchema, .migrating)
            case .relocate: CrashPoint(.relocate, isFirst ? .locked : .committed)
            default:
                // Any other kind (a Core Data migration, ...): half way through the phases it passes.
                CrashPoint(first.kind, first.definition.plannedPhases[first.definition.plannedPhases.count / 2])
            }
        let upgrade = SimulateChildRequest.Command.upgrade(
            arguments: [container.documents.deletingLastPathComponent().path, "--plan", planFile.path], crashAt: point)
        let outcome = try ChildProcess.run(SimulateChildRequest(upgrade), beside: try childsBackstage())
        guard outcome.killedBySIGKILL else {
            throw FixtureError.writerFailed(path: planFile.path, reason: "the upgrade was not killed at \(point)")
        }
    }

    /// ``executable``, once the `backstage-simulate-child` beside it, which runs the killed writers and
    /// upgrades, is found there.
    private func childsBackstage() throws -> URL {
        let child = ChildProcess.simulateChild(beside: executable)
        guard FileManager.default.isExecutableFile(atPath: child.path) else {
            throw FixtureError.executableNotFound(
                reason:
                    "\(child.path) is missing: killed writers and upgrades run it; build it beside backstage "
                    + "(`swift build --product backstage-simulate-child`) or install both (`make install`)")
        }
        return executable
    }

    private func copyStore(_ from: StoreFileSet, to: StoreFileSet) throws {
        let fm = FileManager.default
        try fm.createDirectory(at: to.directory, withIntermediateDirectories: true)
        try fm.copyItem(at: from.main, to: to.main)
        if fm.fileExists(atPath: from.sidecar(.wal).path) {
            try fm.copyItem(at: from.sidecar(.wal), to: to.sidecar(.wal))
        }
        if fm.fileExists(atPath: from.supportFolder.path) {
            try fm.copyItem(at: from.supportFolder, to: to.supportFolder)
        }
    }

    /// The user's documents: those given, copied; for the bundled Notes sample, its own (nested
    /// folders, Unicode names, an empty folder, a large file); for another app's catalog, none.
    private func writeDocuments(_ documents: URL, seed: UInt64) throws {
        if let given = self.documents {
            for name in try FileManager.default.contentsOfDirectory(atPath: given.path) {
                try FileManager.default.copyItem(at: given.appending(path: name), to: documents.appending(path: name))
            }
            return
        }
        guard let sample = try? CatalogFolder.notes(),
            sample.url.standardizedFileURL.path == catalog.url.standardizedFileURL.path
        else { return }
        var random = SeededRandom(seed: seed ^ 0xD0C5)
        let files: [(String, Data)] = [
            ("Trips/Lisbon — day 1.md", Data("# Lisbon\n\nPastéis de nata at 9, tram 28 at 10.\n".utf8)),
            ("Trips/Été 2026/Café menu.txt", Data("Café crème 2,50 €\nCroissant 1,80 €\n".utf8)),
            (
                "Reports/2026/Q1 résumé.csv",
                Data("month,notes\njan,\(random.next() % 100)\nfeb,\(random.next() % 100)\n".utf8)
            ),
            ("Photos/北京/天坛.jpg", Data(random.bytes(96_000))),
            ("Scans/receipt 0042.pdf", Data(random.bytes(40_000))),
            ("Large/archive.bin", Data(random.bytes(1_048_576))),
            (".notes-settings.json", Data("{\"theme\": \"dark\"}\n".utf8)),
        ]
        for (path, data) in files {
            let url = documents.appending(path: path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            // Written, not fsynced (Data.write(to:) fsyncs each file): test data, as the stores' are.
            let file = try FileSystem().createNewFile(url.path, mode: 0o644)
            defer { file.close() }
            var failed: Error?
            data.withUnsafeBytes { bytes in
                do { try file.write(bytes, at: 0) } catch { failed = error }
            }
            if let failed { throw failed }
        }
        try FileManager.default.createDirectory(
            at: documents.appending(path: "Empty Folder"), withIntermediateDirectories: true)
    }
}

extension FixtureManifest {
    /// Generates `spec` at `root` with `generator` and reads its manifest.
    public static func generate(
        _ spec: FixtureSpec, at root: URL, with generator: FixtureGenerator
    ) throws -> FixtureManifest {
        let rows = try generator.generate(spec, at: root)
        return try read(container: generator.catalog.container(at: root), spec: spec, rows: rows)
    }

    /// Reads the manifest of a container: every store found in its roots (App Groups included,
    /// the temporary folder not), and the documents.
    public static func read(container: AppContainer, spec: FixtureSpec, rows: Int) throws -> FixtureManifest {
        var stores: [String: [String: TableDigest]] = [:]
        for root in container.roots where root != .temporary {
            for entry in try FileClassifier(declarations: .everyDatabase).scan(container[root])
            where entry.kind == .database && !entry.path.hasPrefix(".backstage") {
                let location = ContainerLocation(root, entry.path)
                stores[location.description] = try StoreDigest.tables(
                    of: StoreFileSet(main: location.url(in: container)))
            }
        }
        let (documents, empty) = try self.documents(in: container)
        return FixtureManifest(spec: spec, rows: rows, stores: stores, documents: documents, emptyFolders: empty)
    }

    /// The user's documents of a container (path, size, digest) and its empty folders in Documents:
    /// the part of ``read(container:spec:rows:)`` that reads no store.
    /// Without `digesting`, each document's digest is left empty.
    static func documents(
        in container: AppContainer, digesting: Bool = true
    ) throws -> (documents: [Document], emptyFolders: [String]) {
        var documents: [Document] = []
        var empty: [String] = []
        for entry in try FileClassifier(declarations: .everyDatabase).scan(container.documents)
        where !entry.kind.isInternal {
            let url = container.documents.appending(path: entry.path)
            if entry.isDirectory {
                if (try? FileManager.default.contentsOfDirectory(atPath: url.path))?.isEmpty == true {
                    empty.append(entry.path)
                }
            } else {
                let data = try Data(contentsOf: url)
                documents.append(
                    Document(path: entry.path, bytes: Int64(data.count), sha256: digesting ? SHA256.hash(data) : ""))
            }
        }
        return (documents, empty)
    }
}
