import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

extension FixtureState: ExpressibleByArgument {}

struct Fixture: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fixture",
        abstract: "Write the container an old version of an app left behind.",
        discussion: """
            The layouts come from a catalog (--catalog; the bundled Notes sample by default, versions v1–v4). \
            The first version's stores are generated from their captured schemas at --size; later versions \
            are built by running the catalog's upgrade plans from the first. States are made for real: \
            wal-pending and hot-journal by a writer process killed with SIGKILL, interrupted by an upgrade \
            killed mid-step, orphan-sidecars by a killed writer whose database is then deleted. The same \
            seed gives the same content.

            Example:
              backstage fixture /tmp/notes-v1 --layout v1 --size 2MB --state wal-pending --seed 7 --json
            """
    )

    @Argument(help: "The folder to create (it must not exist or be empty).", completion: .directory)
    var directory: String

    @OptionGroup var catalogOption: CatalogOption

    @Option(
        help: "The version whose layout to write (default: the catalog's first; the Notes sample: v1, v2, v3 or v4).")
    var layout: String?

    @Option(
        help: ArgumentHelp(
            "A folder of the app's documents to put in Documents (default: the Notes sample's for the bundled catalog, none for another app's).",
            valueName: "dir"),
        completion: .directory)
    var documents: String?

    @Option(help: "Approximate size of the stores and their external data, such as 500KB, 2MB, 1GB.")
    var size = ByteCount(2_000_000, written: "2MB")

    @Option(help: "clean, wal-pending, hot-journal, both-locations, interrupted or orphan-sidecars.")
    var state: FixtureState = .clean

    @Option(help: "The seed: the same seed gives the same content.")
    var seed: UInt64 = 1

    @Flag(help: "Print the manifest (per-table row counts and content hashes, documents) as JSON.")
    var json = false

    func validate() throws {
        if catalogOption.catalog == nil, let layout, let notes = try? CatalogFolder.notes(),
            !notes.manifest.versions.contains(where: { $0.name == layout })
        {
            throw ValidationError(
                "--layout must be one of \(notes.manifest.versions.map(\.name).joined(separator: ", ")).")
        }
    }

    func run() async throws {
        let catalog = try catalogOption.load()
        guard let layout = layout ?? catalog.manifest.versions.first?.name else {
            throw ValidationError("the catalog has no version")
        }
        let version = try catalog.version(layout)
        // Made from its own schema when its plan is refused: say what such a store lacks.
        let refused = try CoreDataCatalog.unresolvedPlans(in: catalog)
        for plan in refused where plan.version == layout {
            Output.err(
                "warning: \(layout)'s plan is refused (\(plan.reason)): its store is made from its own schema, "
                    + "without NSStoreModelVersionHashes, which the app's Core Data would refuse to open")
        }
        // Made from a later version's schemas than the first when no plan reaches that one: say so,
        // the container is then no proof of the upgrades before it.
        let upToIt = catalog.manifest.versions.prefix { $0.name != layout } + [version]
        if let base = upToIt.last(where: { $0.plan == nil }), base.name != catalog.manifest.versions.first?.name {
            let then = base.name == layout ? "" : ", then upgraded to \(layout) by the catalog's plans"
            Output.err(
                "note: no plan reaches \(base.name) yet: its stores are made from its own schemas\(then), "
                    + "not by upgrading \(catalog.manifest.versions.first?.name ?? "the first version")'s")
        }
        let root = URL(
            filePath: directory,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
        let spec = FixtureSpec(layout: layout, size: size.bytes, state: state, seed: seed)
        let started = ContinuousClock.now
        let given = documents.map {
            URL(
                filePath: $0,
                relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
            ).standardizedFileURL
        }
        let rows = try FixtureGenerator(executable: Executable.url, catalog: catalog, documents: given).generate(
            spec, at: root)
        let elapsed = ContinuousClock.now - started
        if json {
            try Output.json(try FixtureManifest.read(container: catalog.container(at: root), spec: spec, rows: rows))
            return
        }
        let main = try version.writableStore.flatMap { store in
            SchemaGenerator(schema: try catalog.schema(of: store), seed: seed, mainTable: store.mainTable).mainTable
        }
        var lines = [
            "\(layout.hasPrefix(catalog.manifest.app) ? layout : "\(catalog.manifest.app) \(layout)") container, state \(state.rawValue), seed \(seed), \(rows) rows in \(main.map { "\($0) (the app's main table)" } ?? "the app's main table"), at \(root.path) (\(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow))))"
        ]
        for store in version.stores {
            lines.append("  \(store.location): \(store.tables.joined(separator: ", "))")
        }
        lines.append("  run with --json for per-table row counts and content hashes")
        Output.out(lines.joined(separator: "\n"))
    }
}
