import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

extension CatalogInit {
    /// `--model` takes `--store` and none of the options that capture stores.
    func validateModel() throws {
        guard model != nil else { throw ValidationError("--store and --model-order go with --model App.xcdatamodeld.") }
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
        let made = try CoreDataCatalog.create(at: folder, from: model, store: store, app: app)
        var catalog = made.catalog
        for note in made.notes { Output.err("warning: \(note)") }
        try CoreDataCatalog.keep(model: url, mappings: mappings.map(Self.absolute), in: catalog)
        for path in stores {
            let version = try CoreDataCatalog.capture(StoreFileSet(main: Self.absolute(path)), into: &catalog)
            Output.err("captured \(path) into version \(version)")
        }
        if json {
            try Output.json(catalog.manifest)
        } else {
            Output.out(try CatalogShow.render(catalog))
        }
    }

    /// `path` made absolute against the working directory.
    static func absolute(_ path: String) -> URL {
        URL(
            filePath: path,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
    }
}
