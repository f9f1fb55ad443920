import ArgumentParser
import Backstage
import BackstageFixtures
import BackstageHarness
import Foundation

extension FixtureState: ExpressibleByArgument {}
extension NotesWriter.Ending: ExpressibleByArgument {}

struct Fixture: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the container an old version of the sample Notes app left behind.",
        discussion: """
            Layouts v1–v4 come from the fixture catalog (Fixtures/): v1 keeps Notes.sqlite in Documents, \
            v2 in Application Support, v3 splits it into UserData.sqlite and Caches/Cache.sqlite, v4 keeps \
            one store per account. Later versions are built by running the catalog's upgrade plans from v1. \
            States are made for real: wal-pending and hot-journal by a writer process killed with SIGKILL, \
            interrupted by an upgrade killed mid-step, orphan-sidecars by a killed writer whose database is \
            then deleted. The same seed gives the same content.

            Example:
              backstage fixture /tmp/notes-v1 --layout v1 --size 2MB --state wal-pending --seed 7 --json
            """
    )

    @Argument(help: "The folder to create (it must not exist or be empty).", completion: .directory)
    var directory: String

    @Option(help: "The app version whose layout to write: v1, v2, v3 or v4.")
    var layout: String = "v1"

    @Option(help: "Approximate size of the stores and their external data, such as 500KB, 2MB, 1GB.")
    var size: String = "2MB"

    @Option(help: "clean, wal-pending, hot-journal, both-locations, interrupted or orphan-sidecars.")
    var state: FixtureState = .clean

    @Option(help: "The seed: the same seed gives the same content.")
    var seed: UInt64 = 1

    @Flag(help: "Print the manifest (per-table row counts and content hashes, documents) as JSON.")
    var json = false

    func validate() throws {
        guard FixtureCatalog.versions.contains(layout) else { throw ValidationError("--layout must be one of \(FixtureCatalog.versions.joined(separator: ", ")).") }
        guard FixtureSpec.parseSize(size) != nil else { throw ValidationError("--size \(size) is not a size: write a number with KB, MB or GB, such as 2MB.") }
    }

    func run() async throws {
        let root = URL(filePath: directory, relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)).standardizedFileURL
        let spec = FixtureSpec(layout: layout, size: FixtureSpec.parseSize(size) ?? 0, state: state, seed: seed)
        let started = ContinuousClock.now
        let executable = Executable.url
        let notes = try FixtureGenerator(executable: executable).generate(spec, at: root)
        let elapsed = ContinuousClock.now - started
        if json {
            try Output.json(try FixtureManifest.read(container: .iOSSandbox(root: root), spec: spec, notes: notes))
            return
        }
        var lines = ["\(layout) container, state \(state.rawValue), seed \(seed), \(notes) notes, at \(root.path) (\(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow))))"]
        for store in try FixtureCatalog.layout(layout).stores {
            lines.append("  \(store.store): \(store.tables.joined(separator: ", "))")
        }
        lines.append("  run with --json for per-table row counts and content hashes")
        Output.out(lines.joined(separator: "\n"))
    }
}

/// The killed writer of the fixture states: writes notes, then dies as asked. Runs in a child process.
struct FixtureWriter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fixture-writer",
        abstract: "Write sample notes into a store, then close or die by SIGKILL.",
        shouldDisplay: false
    )

    @Argument var store: String
    @Option var seed: UInt64 = 1
    @Option var first = 1
    @Option var count = 100
    @Option var tail = 10
    @Option var ending: NotesWriter.Ending = .close

    func run() throws {
        try NotesWriter(store: StoreFileSet(main: URL(filePath: store)), seed: seed).write(first: first, count: count, tail: tail, ending: ending)
    }
}
