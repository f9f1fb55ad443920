import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

extension ContainerLocation: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

struct Catalog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Describe your own app's storage history, captured from its real stores.",
        discussion: """
            A catalog is a folder: catalog.json lists the app's versions in order, with each version's stores \
            (where they live, which tables each holds) and the plan that reaches it; each store's schema and \
            statistics sit in a file of their own. fixture, simulate and bench take it with --catalog DIR.

            Example:
              backstage catalog init Cookbook --from ~/Pulled/Cookbook.sqlite --at documents/Cookbook.sqlite --app Cookbook
            """,
        subcommands: [
            CatalogInit.self, CatalogAddVersion.self, CatalogAddCheck.self, CatalogShow.self, CatalogCheckCommand.self,
            CatalogLintCommand.self,
        ]
    )
}

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
            as a warning on stderr. Versions after the first carry no plan yet (the Core Data migration is \
            not written): `catalog check` names them. The catalog keeps a copy of the model and of each \
            --mapping Name.xcmappingmodel, for `catalog lint`; --from STORE captures a store Core Data wrote \
            (its statistics and version hashes) into the model version that wrote it.

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

    @Flag(help: "Print the new catalog as JSON.")
    var json = false

    func validate() throws {
        if model != nil || store != nil || !modelOrder.isEmpty || !mappings.isEmpty { return try validateModel() }
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

struct CatalogCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a catalog: files present, every plan accounting for every table, shipped plans unchanged.",
        discussion: """
            Exits 1 with one line per problem: a catalog.json that is not valid (a syntax error, an unknown key, \
            a field without a usable value, two versions of one name), a schema file missing or unreadable, a table a store declares \
            that its schema lacks, a plan naming an unknown store or table, a table of the version before \
            that the plan neither keeps, moves, splits nor discards, a table the plan leaves where the next \
            version does not declare it, a store whose recorded schema differs from its fresh install's, a \
            shipped plan (any version but the newest) or migration changed since it was added, a data check \
            naming a store its version lacks, not compiling against its schema, or not one read-only query, \
            and every error `catalog lint` finds. Exits 3 when there is no catalog.json to read.

            Example:
              backstage catalog check Cookbook
            """
    )

    @Argument(help: "The catalog folder.", completion: .directory)
    var directory: String

    @Flag(help: #"Print {"problems":[{"version","message"}]}."#)
    var json = false

    struct Result: Encodable { var problems: [CatalogProblem] }

    func run() async throws {
        let catalog: CatalogFolder
        do {
            catalog = try CatalogFolder(at: URL(filePath: directory))
        } catch let error as CatalogError {
            // A catalog.json that is not valid is a problem the check found; one it cannot read is not.
            guard case .invalid = error else { throw error }
            if json {
                try Output.json(Result(problems: [CatalogProblem(version: "", message: error.description)]))
            } else {
                Output.out(error.description)
            }
            throw ExitCode(ExitStatus.checkFailed)
        }
        let problems = CatalogCheck.problems(in: catalog)
        if json {
            try Output.json(Result(problems: problems))
        } else if problems.isEmpty {
            Output.out("\(catalog.manifest.app): \(catalog.manifest.versions.count) version(s), no problem found")
        } else {
            for problem in problems { Output.out(problem.description) }
        }
        if !problems.isEmpty { throw ExitCode(ExitStatus.checkFailed) }
    }
}

struct CatalogAddVersion: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-version",
        abstract: "Add the version a plan reaches from the catalog's newest one.",
        discussion: """
            The plan is run for real on a small generated container of the newest version; every store it \
            leaves is captured as the new version's, and the plan is copied into the catalog and fingerprinted: \
            once a newer version follows, it has shipped and `catalog check` fails if it changes.

            --expect LOCATION=FILE gives the store (or .sql script) a fresh install of the new version creates \
            at LOCATION: the store the plan leaves there must have the same schema (tables and columns with \
            type, NOT NULL, default, primary key, collation and a generated column's expression; AUTOINCREMENT; \
            CHECK constraints, a column's equal to the same one on the table; indexes; foreign keys; triggers; \
            views; virtual tables). Its schema is kept in the catalog, and `catalog check` and `simulate` compare \
            with it too.

            When the plan names a store or table that is not there, has an error `catalog lint` finds, fails \
            on the generated container (a migration naming a missing table, say), leaves a table unaccounted for, or leaves a schema that \
            differs from a fresh install, nothing is written and each problem is printed (exit 1). A name \
            that is not a version name (letters, digits, '.', '-', '_', '+') is a usage error (exit 2); a \
            catalog, plan or --expect file that cannot be read, or a version name the catalog already has \
            without --replace, is exit 3.

            Example:
              backstage catalog add-version Cookbook v2 --plan v1-to-v2.json --expect applicationSupport/Cookbook.sqlite=fresh-v2.sqlite
            """
    )

    @Argument(help: "The catalog folder.", completion: .directory)
    var directory: String

    @Argument(help: "The new version's name.")
    var name: String

    @Option(help: "The plan that reaches it from the newest version.", completion: .file(extensions: ["json"]))
    var plan: String

    @Option(
        help:
            "The store the new version's app writes to (default: the one that received the previous app's main table).")
    var writable: ContainerLocation?

    @Option(help: "What changed in this version, for people.")
    var summary: String?

    @Option(
        help: ArgumentHelp(
            "The store (or .sql script) a fresh install of this version creates at LOCATION (repeatable).",
            valueName: "location=file"))
    var expect: [String] = []

    @Flag(help: "Replace the newest version of this name, which has not shipped yet (no version follows it).")
    var replace = false

    func parsedExpectations() throws -> [ContainerLocation: URL] {
        var result: [ContainerLocation: URL] = [:]
        for item in expect {
            guard let equals = item.firstIndex(of: "="), let location = ContainerLocation(String(item[..<equals])),
                item.index(after: equals) < item.endIndex
            else {
                throw ValidationError(
                    "--expect \(item): write LOCATION=FILE, such as applicationSupport/Cookbook.sqlite=fresh.sqlite.")
            }
            guard result[location] == nil else { throw ValidationError("--expect names \(location) twice.") }
            result[location] =
                URL(
                    filePath: String(item[item.index(after: equals)...]),
                    relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
                ).standardizedFileURL
        }
        return result
    }

    func validate() throws {
        if let reason = CatalogVersion.problem(withName: name) {
            throw ValidationError("The version name \(name) \(reason).")
        }
        _ = try parsedExpectations()
    }

    func run() async throws {
        var catalog = try CatalogFolder(at: URL(filePath: directory))
        let outcome = try CatalogBuilder.addVersion(
            name, plan: URL(filePath: plan), summary: summary, writable: writable, expect: try parsedExpectations(),
            replace: replace, to: &catalog, executable: Executable.url)
        guard outcome.problems.isEmpty else {
            for problem in outcome.problems { Output.out(problem.description) }
            throw ExitCode(ExitStatus.checkFailed)
        }
        Output.out(try CatalogShow.render(catalog))
    }
}

struct CatalogAddCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-check",
        abstract: "Declare a query whose result must hold after an upgrade to a version.",
        discussion: """
            `simulate` runs every check of its --to version after every run and names the check that fails. \
            With --unchanged, the result (every row and column) must be what the same query returned before \
            the upgrade, on the first store of the version upgraded from where it runs; with --equals VALUE, \
            the query must return that one value (NULL, a number or text).

            The query must be exactly one read-only statement that returns rows (a SELECT), compiling against \
            the store's recorded schema: SQLite prepares it and says whether it could change the store. A \
            check the version already has is kept unless --replace is given (the replaced check is printed).

            Exit status: 0 when the check was added or replaced; 1 when it was refused (not one read-only \
            query, not compiling, its name taken without --replace), with nothing written; 2 for a usage \
            error; 3 when the catalog cannot be read or written.

            Examples:
              backstage catalog add-check Cookbook v3 "no favourite unset" --store applicationSupport/Cookbook.sqlite \\
                --sql "SELECT count(*) FROM ZRECIPE WHERE ZFAVORITE IS NULL" --equals 0
              backstage catalog add-check Cookbook v3 "recipes kept" --store applicationSupport/Cookbook.sqlite \\
                --sql "SELECT count(*), total(length(ZTITLE)) FROM ZRECIPE" --unchanged
            """
    )

    @Argument(help: "The catalog folder.", completion: .directory)
    var directory: String

    @Argument(help: "The version the check holds after.")
    var version: String

    @Argument(help: "The check's name, for reports.")
    var name: String

    @Option(help: "The store of that version it queries.")
    var store: ContainerLocation

    @Option(help: "One read-only SELECT.")
    var sql: String

    @Option(help: "The one value the query must return: NULL, a number or text.")
    var equals: String?

    @Flag(help: "The result must be the same before and after the upgrade.")
    var unchanged = false

    @Flag(help: "Replace the version's check of this name (the one it replaces is printed).")
    var replace = false

    func validate() throws {
        guard (equals != nil) != unchanged else {
            throw ValidationError("Give exactly one of --equals VALUE and --unchanged.")
        }
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ValidationError("Give the check a name, for reports.")
        }
        guard !sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ValidationError("--sql is empty: give one SELECT.")
        }
    }

    func run() async throws {
        var catalog = try CatalogFolder(at: URL(filePath: directory))
        guard let index = catalog.manifest.versions.firstIndex(where: { $0.name == version }) else {
            throw CatalogError.unknownVersion(version, known: catalog.manifest.versions.map(\.name))
        }
        let existing = catalog.manifest.versions[index].checks?.first { $0.name == name }
        if let existing, !replace {
            Output.out(
                "\(version): it already has a check \"\(name)\" (\(Self.describe(existing))): "
                    + "give another name, or --replace to replace it")
            throw ExitCode(ExitStatus.checkFailed)
        }
        let check = DataCheck(
            name: name, store: store, sql: sql, expect: equals.map { .equals(CheckValue(parsing: $0)) } ?? .unchanged)
        var updated = catalog
        updated.manifest.versions[index].checks = (catalog.manifest.versions[index].checks ?? []).map {
            $0.name == name ? check : $0
        }
        if existing == nil {
            updated.manifest.versions[index].checks = (updated.manifest.versions[index].checks ?? []) + [check]
        }
        let problems = CatalogCheck.problems(in: updated).filter {
            $0.version == version && $0.message.hasPrefix("check \"\(name)\"")
        }
        guard problems.isEmpty else {
            for problem in problems { Output.out(problem.description) }
            throw ExitCode(ExitStatus.checkFailed)
        }
        catalog = updated
        try catalog.writeManifest()
        let count = catalog.manifest.versions[index].checks?.count ?? 0
        if let existing {
            Output.out("\(version): check \"\(name)\" replaced (it was \(Self.describe(existing)); \(count) check(s))")
        } else {
            Output.out("\(version): check \"\(name)\" added (\(count) check(s))")
        }
    }

    static func describe(_ check: DataCheck) -> String {
        let expectation =
            switch check.expect {
            case .unchanged: "unchanged by the upgrade"
            case .equals(let value): "= \(value)"
            }
        return "\(check.sql) on \(check.store), \(expectation)"
    }
}
