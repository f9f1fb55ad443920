import Backstage
import Foundation
import GRDB

/// The invariants a simulated run is checked against, and what makes checking them cheap: table
/// digests reused while a store's bytes are the same, documents compared byte for byte.
extension Simulator {
    /// Where the store at `location` is after `steps`: where they moved it, or the stores they split
    /// it into; itself when no step takes it.
    static func places(of location: ContainerLocation, after steps: [UpgradeStep]) -> [ContainerLocation] {
        var current = [location]
        for step in steps {
            guard let taken = step.definition.takes,
                let index = current.firstIndex(where: { $0.sameFile(as: taken) })
            else { continue }
            current.remove(at: index)
            current += step.definition.puts
        }
        return current
    }

    /// The invariants, as the failures found.
    func check(
        root: URL, from: String, to: String, fixture: Fixture, facts: [String: StoreFacts],
        digests cache: inout [String: ReusedDigest]
    ) throws -> [String] {
        let (manifest, columns) = (fixture.manifest, fixture.columns)
        var failures: [String] = []
        let container = catalog.container(at: root)
        let target = try catalog.version(to)
        let steps = try chain(from: from, to: to).flatMap(\.plan.steps)
        let coreData = CoreDataHistoryCheck.coveredTables(steps)  // checked per entity by CoreDataHistoryCheck
        let discarded = Set(steps.compactMap { $0.as(UpgradeStep.Split.self) }.flatMap(\.discard)).union(
            coreData.replaced)
        var rewritten = Self.tablesWrittenByMigrations(steps).union(coreData.rewritten)
        // A split gives each store after the first a Core Data store UUID of its own (checked below).
        if steps.contains(where: { ($0.as(UpgradeStep.Split.self)?.into.count ?? 0) > 1 }) {
            rewritten.insert("z_metadata")
        }
        // Every row kept, where the plans say it goes.
        let source = try catalog.version(from)
        var digests: [String: [String: TableDigest]] = [:]
        for store in source.stores {
            guard let before = manifest.stores[store.location.description] else { continue }
            // Where the chain moved or split this store: a table found there is this store's
            // (Core Data's own tables are in every store, each its own).
            let places = Self.places(of: store.location, after: steps)
            for (table, digest) in before.sorted(by: { $0.key < $1.key }) where !discarded.contains(table) {
                // A virtual table's shadow tables (`<name>_data`, ...) live where it does.
                guard
                    let home = target.stores.first(where: { store in
                        store.tables.contains(table) && places.contains { $0.sameFile(as: store.location) }
                    })
                        ?? target.stores.first(where: { $0.tables.contains(table) })
                        ?? target.stores.first(where: { $0.tables.contains { table.hasPrefix($0 + "_") } })
                else {
                    failures.append("table \(table) has no store in \(to)")
                    continue
                }
                let set = StoreFileSet(main: home.location.url(in: container))
                guard FileManager.default.fileExists(atPath: set.main.path) else {
                    failures.append("\(home.location) is missing")
                    continue
                }
                // One copy and one pass per store, whatever the number of its tables.
                if digests[set.main.path] == nil {
                    digests[set.main.path] = try Self.digest(
                        set, columns: columns, key: "\(from) \(home.location)", cache: &cache)
                }
                let after = digests[set.main.path] ?? [:]
                let found = after[table]
                if found?.rows != digest.rows {
                    failures.append(
                        "\((found?.rows ?? 0) > digest.rows ? "rows added" : "rows lost"): \(table) had \(digest.rows) rows, "
                            + "\(home.location) has \(found?.rows ?? 0)")
                } else if found != digest && !rewritten.contains(table.lowercased()) {
                    failures.append(
                        "rows changed: the content of \(table) in \(home.location) differs from before the upgrade, and no migration writes to it"
                    )
                }
            }
        }
        // integrity_check on every store of the target layout (`facts`: the stores that are there).
        var uuids: [String: ContainerLocation] = [:]
        for store in target.stores {
            guard let found = facts[store.location.description] else { continue }
            let set = StoreFileSet(main: store.location.url(in: container))
            if let first = found.integrity.first { failures.append("integrity_check of \(store.location): \(first)") }
            // Core Data tells its stores apart by their UUID: no two share one.
            if let uuid = found.coreDataUUID {
                if let other = uuids[uuid] {
                    failures.append(
                        "\(other) and \(store.location) have one Core Data store UUID: Core Data cannot tell them apart"
                    )
                }
                uuids[uuid] = store.location
            }
            // Every external data file the rows reference is there (Core Data's _EXTERNAL_DATA).
            let missing = ExternalDataReferences.missing(found.referenced, in: set.externalDataFolder)
            if missing > 0 {
                failures.append(
                    "external data lost: \(missing) of the \(found.referenced.count) files the rows of \(store.location) reference are missing"
                )
            }
        }
        // No internal file visible; documents byte-identical; nothing temporary left. An older
        // version that itself keeps stores in Documents (an earlier release's layout, the --to of a
        // path that has not left Documents yet) keeps them there with their sidecars and support
        // folders, and — unless a quarantine step of the chain takes them out — the internal files
        // its own layout had there before the upgrade. The newest version keeping a store in
        // Documents is what this check exists to report.
        let isNewest = catalog.manifest.versions.last?.name == target.name
        var kept = isNewest ? [] : Self.pathsKeptInDocuments(by: target, in: container)
        if !kept.isEmpty, !steps.contains(where: { $0.as(UpgradeStep.Quarantine.self) != nil }) {
            kept += try Auditor(container: catalog.container(at: fixture.pristine)).audit().findings.map(\.path)
        }
        let left = try Auditor(container: container).audit().findings.map(\.path).filter { path in
            !kept.contains { path == $0 || path.hasPrefix($0 + "/") }
        }
        if !left.isEmpty {
            failures.append("internal files left in Documents: \(left.joined(separator: ", "))")
        }
        // The documents only (the stores' digests were taken above), compared byte for byte with
        // the fixture's: the verdict of their digests, without hashing them again.
        if try Self.documentsChanged(in: container, from: catalog.container(at: fixture.pristine), manifest: manifest) {
            failures.append("user documents changed")
        }
        let leftovers = (FileManager.default.subpaths(atPath: root.path) ?? []).filter {
            TemporaryName.isTemporary($0) || $0.hasSuffix(".backstage/journal.json")
        }
        if !leftovers.isEmpty { failures.append("left behind: \(leftovers.joined(separator: ", "))") }
        return failures
    }

    /// The paths, relative to Documents, that `version`'s stores in Documents occupy in `container`:
    /// each store's file, its sidecars and its Core Data support folder.
    package static func pathsKeptInDocuments(by version: CatalogVersion, in container: AppContainer) -> [String] {
        let documents = container.documents.standardizedFileURL.path + "/"
        return version.stores.filter { $0.location.root == .documents }.flatMap { store in
            StoreFileSet(main: store.location.url(in: container)).allPaths.map {
                String($0.standardizedFileURL.path.dropFirst(documents.count))
            }
        }
    }

    /// True when the user's documents (and empty folders) of `container` are not those of the
    /// fixture `pristine` that `manifest` describes, byte for byte.
    package static func documentsChanged(
        in container: AppContainer, from pristine: AppContainer, manifest: FixtureManifest
    ) throws -> Bool {
        let after = try FixtureManifest.documents(in: container, digesting: false)
        guard after.documents.map(\.path) == manifest.documents.map(\.path), after.emptyFolders == manifest.emptyFolders
        else { return true }
        return after.documents.contains { document in
            (try? Data(contentsOf: container.documents.appending(path: document.path)))
                != (try? Data(contentsOf: pristine.documents.appending(path: document.path)))
        }
    }

    /// A store's table digests with the bytes of the files they were taken from.
    package struct ReusedDigest {
        var files: [Data?]
        var tables: [String: TableDigest]
    }

    /// The digests of `set`'s tables: those of the last store digested under `key` when the store's
    /// files (main, `-wal`, `-journal`) hold the same bytes — the same bytes have the same rows —
    /// else taken again. Comparing the bytes costs a read; hashing every row costs far more.
    package static func digest(
        _ set: StoreFileSet, columns: [String: [String]], key: String, cache: inout [String: ReusedDigest]
    ) throws -> [String: TableDigest] {
        let files = ["", "-wal", "-journal"].map { try? Data(contentsOf: URL(filePath: set.main.path + $0)) }
        if let reused = cache[key], reused.files == files { return reused.tables }
        let tables = try StoreDigest.tables(of: set, columns: columns)
        cache[key] = ReusedDigest(files: files, tables: tables)
        return tables
    }

    /// Every file under `root` with a digest of its bytes.
    static func snapshot(_ root: URL) throws -> [String: String] {
        var files: [String: String] = [:]
        for path in FileManager.default.subpaths(atPath: root.path) ?? [] {
            var isFolder: ObjCBool = false
            let url = root.appending(path: path)
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), !isFolder.boolValue
            else { continue }
            files[path] = SHA256.hash(try Data(contentsOf: url))
        }
        return files
    }
}
