import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

extension CatalogInit {
    /// `--model` takes `--store` and none of the options that capture stores.
    func validateModel() throws {
        guard model != nil else {
            throw ValidationError(
                "--store, --newest-store, --model-order, --mapping, --momd, --policy-sql and --configuration-store go "
                    + "with --model "
                    + "App.xcdatamodeld.")
        }
        guard let store else {
            throw ValidationError(
                "Give --store LOCATION with --model: where the app's store lives, such as documents/App.sqlite.")
        }
        guard locations.isEmpty, appRows.isEmpty, emptyTables.isEmpty else {
            throw ValidationError(
                "--model makes the catalog from the model: leave out --at, --app-rows and --empty (--from STORE "
                    + "captures a store Core Data wrote into the model version that wrote it).")
        }
        guard version == "v1" else {
            throw ValidationError("--model names each version after its model version: leave out --version.")
        }
        for pair in configurationStores { _ = try Self.configurationStore(pair) }
        if let newestStore, newestStore.path.isEmpty || newestStore.path.hasSuffix("/") {
            throw ValidationError(
                "--newest-store \(newestStore) does not name a store: write <root>/<path of the store>, such as "
                    + "applicationSupport/App.sqlite.")
        }
        if store.path.isEmpty || store.path.hasSuffix("/") {
            throw ValidationError(
                "--store \(store) does not name a store: write <root>/<path of the store>, such as documents/App.sqlite."
            )
        }
    }

    /// Makes the catalog at `folder` from the model at `path`.
    func runFromModel(_ path: String, at folder: URL) throws {
        guard let store else { throw ValidationError("Give --store LOCATION with --model.") }
        let url = URL(
            filePath: path,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
        let model = try CoreDataModelReader.read(url, order: modelOrder.isEmpty ? nil : modelOrder)
        let places = Dictionary(
            try configurationStores.map(Self.configurationStore), uniquingKeysWith: { _, last in last })
        let made = try CoreDataCatalog.create(
            at: folder, from: model, store: store, newestStore: newestStore, app: app, configurationStores: places)
        var catalog = made.catalog
        for note in made.notes { Output.err("warning: \(note)") }
        try CoreDataCatalog.keep(model: url, mappings: mappings.map(Self.absolute), in: catalog)
        for path in stores {
            let version = try CoreDataCatalog.capture(StoreFileSet(main: Self.absolute(path)), into: &catalog)
            Output.err("captured \(path) into version \(version)")
        }
        var policies: [String: String] = [:]
        for pair in policySQL {
            let (entity, file) = try Self.policy(pair)
            policies[entity] = try String(contentsOf: Self.absolute(file), encoding: .utf8)
        }
        let sources = CoreDataCatalog.PlanSources(compiledModel: momd.map(Self.absolute), policySQL: policies)
        for note in try CoreDataCatalog.writePlans(in: &catalog, sources: sources) { Output.err("warning: \(note)") }
        if json {
            try Output.json(catalog.manifest)
        } else {
            Output.out(try CatalogShow.render(catalog))
        }
    }

    /// `Entity=FILE` of `--policy-sql`.
    static func policy(_ pair: String) throws -> (entity: String, file: String) {
        let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw ValidationError("--policy-sql \(pair): write Entity=FILE, such as Post=post-policy.sql.")
        }
        return (parts[0], parts[1])
    }

    /// `NAME=LOCATION` of `--configuration-store`.
    static func configurationStore(_ pair: String) throws -> (String, ContainerLocation) {
        let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, let location = ContainerLocation(parts[1]),
            !location.path.isEmpty, !location.path.hasSuffix("/")
        else {
            throw ValidationError(
                "--configuration-store \(pair): write NAME=LOCATION, such as Cloud=applicationSupport/Cloud.sqlite.")
        }
        return (parts[0], location)
    }

    /// `path` made absolute against the working directory.
    static func absolute(_ path: String) -> URL {
        URL(
            filePath: path,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
    }
}
