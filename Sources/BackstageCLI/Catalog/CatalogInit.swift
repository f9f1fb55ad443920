import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct CatalogInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Capture real stores as the first version of a new catalog.",
        discussion: """
            Each --from STORE is read from a private copy (with its -wal; the original, its sidecars and its \
            .Name_SUPPORT folder are never opened and stay byte-identical) and recorded at --at LOCATION: the \
            whole schema (tables, WITHOUT ROWID tables, virtual tables with their shadow tables, indexes, \
            triggers, views), per-column statistics (value kinds and sizes, null and distinct shares, blob \
            sizes, the share of Core Data external data) and Core Data facts (entities from Z_PRIMARYKEY, the \
            model's version hashes and identifiers from Z_METADATA). Never a row's content.

            With --model App.xcdatamodeld --store LOCATION instead, the catalog is made from the app's Core Data \
            model: one version per model version (named after it, a space made '-'), in Finder's order of \
            their names unless --model-order gives the shipped order, each with the store Core Data creates \
            for it (Z-tables, columns in Core Data's order, join tables, indexes, Z_PRIMARYKEY, Z_METADATA). \
            A current version that is not the newest, and every convention no real store proved, is printed \
            as a warning on stderr. Between consecutive versions a plan runs Core Data's migration \
            (coreDataMigration: inferred, or following the --mapping model given for the pair; a custom \
            migration policy takes --policy-sql Entity=FILE), with the destination's version hashes from \
            --momd App.momd, else a captured store, else reproduced; when none gives them the plan says so and \
            is refused until they are given. The catalog keeps a copy of the model and of each \
            --mapping Name.xcmappingmodel, for `catalog lint`; --from STORE captures a store Core Data wrote \
            (its statistics and version hashes) into the model version that wrote it. A version whose \
            configurations part its entities gets one store per configuration (--configuration-store \
            NAME=LOCATION, else in --store's folder, out of Documents), reached from one store by the migration and a split. \
            The newest version, the release being built, keeps a store that the older ones kept in Documents in \
            Application Support (--newest-store LOCATION chooses the place): its plan relocates the store first, \
            runs the migration there, and quarantines what is left of internal files in Documents.

            Examples:
              backstage catalog init Cookbook --from Pulled/Cookbook.sqlite --at documents/Cookbook.sqlite --app Cookbook
              backstage catalog init Recipes --model Recipes.xcdatamodeld --store documents/Recipes.sqlite
              backstage catalog init Recipes --model Recipes.xcdatamodeld --store documents/Recipes.sqlite \
                --mapping Recipes2to3.xcmappingmodel --from Pulled/Recipes.sqlite
            """
    )

    @Argument(help: "The catalog folder to create.", completion: .directory)
    var directory: String

    @Option(
        name: .customLong("from"),
        help: ArgumentHelp("A store file to capture (repeat with --at for several).", valueName: "store"))
    var stores: [String] = []

    @Option(
        name: .customLong("at"),
        help: ArgumentHelp(
            "Where that store lives in the app's container: documents/Name.sqlite, applicationSupport/..., caches/...",
            valueName: "location"))
    var locations: [ContainerLocation] = []

    @Option(help: "The name of the captured version.")
    var version = "v1"

    @Option(help: "The app's name (default: the first store's name).")
    var app: String?

    @Option(
        name: .customLong("app-rows"),
        help: ArgumentHelp(
            "A table whose rows ship with the app (a lookup table, rows its triggers rely on): kept verbatim and put in every fixture (repeatable).",
            valueName: "table"))
    var appRows: [String] = []

    @Option(
        name: .customLong("empty"),
        help: ArgumentHelp(
            "A table the app keeps empty on purpose: fixtures leave it without rows; every other table gets rows "
                + "(repeatable).",
            valueName: "table"))
    var emptyTables: [String] = []

    @Option(
        help: ArgumentHelp(
            "A Core Data model (App.xcdatamodeld, or one .xcdatamodel) to make the catalog from instead of --from: one version per model version.",
            valueName: "model"),
        completion: .directory)
    var model: String?

    @Option(
        name: .customLong("store"),
        help: ArgumentHelp(
            "With --model: where the app's store lives, such as documents/App.sqlite.", valueName: "location"))
    var store: ContainerLocation?

    @Option(
        name: .customLong("newest-store"),
        help: ArgumentHelp(
            "With --model: where the newest model version (the release being built) keeps its store (default: where --store is, or the same path in Application Support when --store is in Documents: the upgrade to it relocates the store there first, and quarantines what is left in Documents).",
            valueName: "location"))
    var newestStore: ContainerLocation?

    @Option(
        name: .customLong("model-order"),
        help: ArgumentHelp(
            "With --model: the model versions in the order the app shipped them, when Finder's order of their names is not it (repeat, oldest first).",
            valueName: "version"))
    var modelOrder: [String] = []

    @Option(
        name: .customLong("mapping"),
        help: ArgumentHelp(
            "With --model: a mapping model (Name.xcmappingmodel) the app ships for one pair of model versions (repeatable).",
            valueName: "mapping"),
        completion: .directory)
    var mappings: [String] = []

    @Option(
        name: .customLong("momd"),
        help: ArgumentHelp(
            "With --model: the compiled model (App.momd, from the app's build) whose VersionInfo.plist gives every version's version hashes.",
            valueName: "momd"),
        completion: .directory)
    var momd: String?

    @Option(
        name: .customLong("policy-sql"),
        help: ArgumentHelp(
            "With --model: the SQL that does what a mapping model's custom migration policy does for one destination entity, as Entity=FILE (repeatable); kept in the catalog's model/policies.",
            valueName: "entity=file"))
    var policySQL: [String] = []

    @Option(
        name: .customLong("configuration-store"),
        help: ArgumentHelp(
            "With --model: where the store of one of the model's configurations lives, as NAME=LOCATION, such as Cloud=applicationSupport/Cloud.sqlite (repeatable; default: in --store's folder, named after the configuration, in Application Support when --store is in Documents).",
            valueName: "name=location"))
    var configurationStores: [String] = []

    @Flag(help: "Print the new catalog as JSON.")
    var json = false

    func validate() throws {
        if model != nil || store != nil || newestStore != nil || !modelOrder.isEmpty || !mappings.isEmpty || momd != nil
            || !policySQL.isEmpty
            || !configurationStores.isEmpty
        {
            return try validateModel()
        }
        guard !stores.isEmpty else { throw ValidationError("Give at least one --from STORE --at LOCATION.") }
        guard stores.count == locations.count else {
            throw ValidationError(
                "Give one --at LOCATION for each --from STORE (\(stores.count) --from, \(locations.count) --at).")
        }
        guard Set(locations).count == locations.count else {
            throw ValidationError("Two stores cannot live at the same --at location.")
        }
        if let reason = CatalogVersion.problem(withName: version) {
            throw ValidationError("--version \(version) \(reason).")
        }
        for location in locations {
            if let reason = location.storeNameTooLong { throw ValidationError("--at \(reason).") }
        }
        for location in locations where location.path.isEmpty || location.path.hasSuffix("/") {
            throw ValidationError(
                "--at \(location) does not name a store: write <root>/<path of the store>, such as documents/Notes.sqlite."
            )
        }
    }

    func run() async throws {
        let folder = URL(
            filePath: directory,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
        if FileManager.default.fileExists(atPath: folder.appending(path: CatalogFolder.manifestName).path) {
            throw CatalogError.exists(path: folder.path)
        }
        if let model { return try runFromModel(model, at: folder) }
        var captured: [CatalogStore] = []
        var schemas: [(String, StoreSchema)] = []
        for (index, (store, location)) in zip(stores, locations).enumerated() {
            let url = URL(
                filePath: store,
                relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
            ).standardizedFileURL
            let set = StoreFileSet(main: url)
            // The tables named are looked for in each store; a store without them keeps none.
            let tables =
                try appRows.isEmpty
                ? []
                : StoreCapture.capture(set).tableNames.filter { name in
                    appRows.contains { $0.lowercased() == name.lowercased() }
                }
            var schema = try StoreCapture.capture(set, appRows: tables)
            let empty = schema.tableNames.filter { name in
                emptyTables.contains { $0.lowercased() == name.lowercased() }
            }
            schema.emptyTables = empty.isEmpty ? nil : empty
            let file =
                "stores/\(version)/\(location.root.rawValue)-\(location.path.replacingOccurrences(of: "/", with: "-")).json"
            schemas.append((file, schema))
            captured.append(
                CatalogStore(
                    location: location, tables: schema.tableNames, writable: index == 0 ? true : nil, schema: file))
        }
        for table in appRows
        where !schemas.contains(where: { $0.1.appRows?.keys.contains { $0.lowercased() == table.lowercased() } == true }
        ) {
            throw ValidationError("--app-rows \(table): no store given with --from has a table of that name.")
        }
        for table in emptyTables
        where !schemas.contains(where: { _, schema in
            schema.emptyTables?.contains { $0.lowercased() == table.lowercased() } == true
        }) {
            throw ValidationError("--empty \(table): no store given with --from has a table of that name.")
        }
        let name = app ?? URL(filePath: stores[0]).deletingPathExtension().lastPathComponent
        let catalog = CatalogFolder(
            creating: folder,
            manifest: CatalogManifest(
                app: name,
                versions: [CatalogVersion(name: version, summary: "captured from real stores", stores: captured)]))
        for (file, schema) in schemas { try catalog.write(schema, at: file) }
        try catalog.writeManifest()
        if json {
            try Output.json(catalog.manifest)
        } else {
            Output.out(try CatalogShow.render(catalog))
        }
    }
}
