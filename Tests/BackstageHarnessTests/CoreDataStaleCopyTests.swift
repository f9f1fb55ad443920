import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// A Core Data store of a version no migration of the plan knows, where a migration expects the
/// app's store: an older copy a backup restored beside the app's (both-locations), or a plan run
/// on a store that skipped a release. The app's own store must be the one that is migrated, and a
/// store left unmigrated must never be reported as upgraded.
@Suite struct CoreDataStaleCopyTests {
    /// Rows of `table` in the store at `url`, read from a copy (the original is never opened).
    static func rows(_ table: String, in url: URL, scratch: URL) throws -> Int {
        let copy = scratch.appending(path: "read-\(UUID().uuidString).sqlite")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path + suffix)
        }
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        return try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM \(table)") ?? 0 }
    }

    /// The store's model version identifiers (the test's model numbers its versions 1, 2, 3).
    static func modelVersion(of url: URL, scratch: URL) throws -> [String] {
        let copy = scratch.appending(path: "meta-\(UUID().uuidString).sqlite")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path + suffix)
        }
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        let plist = try queue.read { try Data.fetchOne($0, sql: "SELECT Z_PLIST FROM Z_METADATA") } ?? Data()
        let decoded = try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any]
        return decoded?["NSStoreModelVersionIdentifiers"] as? [String] ?? []
    }

    static func fixture(_ catalog: CatalogFolder, layout: String, state: String, at root: URL) throws {
        let made = try runProcess(
            backstageExecutable,
            [
                "fixture", root.path, "--catalog", catalog.url.path, "--layout", layout, "--size", "120KB",
                "--state", state,
            ])
        #expect(made.status == 0, "\(made.stderr)")
    }

    /// A device of the three-version Herbarium app (its store in Documents until version 3, or in
    /// Documents for good with `inDocuments`) left by `layout` in `state`, with its store's two
    /// places and the chain's `--plan` arguments.
    struct Device {
        let scratch: TemporaryDirectory
        let catalog: CatalogFolder
        let root: URL
        var documents: URL { root.appending(path: "Documents/Herbarium.sqlite") }
        var support: URL { root.appending(path: "Library/Application Support/Herbarium.sqlite") }
        var quarantine: URL { root.appending(path: "Library/Application Support/.backstage/quarantine") }

        func plans(from: String = "Herbarium", to: String = "Herbarium-3") throws -> [String] {
            try catalog.chain(from: from, to: to).flatMap { ["--plan", $0.file.path] }
        }
    }

    static func device(layout: String, state: String, inDocuments: Bool = false) throws -> Device {
        let scratch = try TemporaryDirectory()
        let catalog =
            inDocuments
            ? try catalogInDocuments(in: scratch.url) : try CoreDataPowerLossTests.catalog(in: scratch.url)
        let root = scratch.url.appending(path: "device")
        try fixture(catalog, layout: layout, state: state, at: root)
        return Device(scratch: scratch, catalog: catalog, root: root)
    }

    /// Herbarium 1 and 2 keep the store in Documents, 3 in Application Support. A backup restored
    /// a Herbarium 1 copy into Application Support, and the app went on in Documents: the chain
    /// migrates the Documents store to 2, then the relocation meets the old copy. The app's store
    /// moves and is migrated to 3 with every row; the old copy goes to quarantine; the run is ok.
    @Test func anOlderCopyAtTheDestinationGoesToQuarantineAndTheAppsStoreMoves() throws {
        let device = try Self.device(layout: "Herbarium", state: "both-locations")
        let (scratch, catalog, root) = (device.scratch, device.catalog, device.root)
        let documents = device.documents
        let support = device.support
        #expect(FileManager.default.fileExists(atPath: support.path), "the fixture put the restored copy there")
        // The app went on: one specimen deleted since the backup, so the two copies differ.
        let deleted = try PythonSQLite.run(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                + "c.execute('delete from ZSPECIMEN where Z_PK = (select min(Z_PK) from ZSPECIMEN)'); c.commit(); c.close()",
            [documents.path])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let rows = try Self.rows("ZSPECIMEN", in: documents, scratch: scratch.url)
        let restored = try Self.rows("ZSPECIMEN", in: support, scratch: scratch.url)
        #expect(rows > 0 && rows == restored - 1)

        let plans = try device.plans()
        let upgrade = try runProcess(backstageExecutable, ["upgrade", root.path] + plans)
        #expect(upgrade.status == 0, "\(upgrade.stdout)\n\(upgrade.stderr)")

        #expect(!FileManager.default.fileExists(atPath: documents.path), "the app's store left Documents")
        #expect(try Self.modelVersion(of: support, scratch: scratch.url) == ["3"])
        #expect(try Self.rows("ZSPECIMEN", in: support, scratch: scratch.url) == rows, "every row of the app's store")
        #expect(try catalog.schemaFailures(of: "Herbarium-3", in: catalog.container(at: root)).isEmpty)
        let quarantine = root.appending(path: "Library/Application Support/.backstage/quarantine")
        let quarantined = paths(under: quarantine, containing: "Herbarium.sqlite")
        let copy = try #require(quarantined.first { $0.hasSuffix("/applicationSupport/Herbarium.sqlite") }, "\(quarantined)")
        #expect(try Self.modelVersion(of: quarantine.appending(path: copy), scratch: scratch.url) == ["1"],
                "the restored copy is kept, as it was")
        #expect(Upgrader.storageVersion(of: catalog.container(at: root)) == "Herbarium-3")
    }

    /// Power cuts (writes kept and lost) after each operation that takes the older copy to
    /// quarantine, up to the move of the app's store: the next launch completes the upgrade with
    /// the app's rows, and the older copy is in quarantine, never back in the app's place.
    @Test func powerCutsWhileTheOlderCopyGoesToQuarantineLoseNothing() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try CoreDataPowerLossTests.catalog(in: scratch.url)
        let pristine = scratch.url.appending(path: "pristine")
        try Self.fixture(catalog, layout: "Herbarium", state: "both-locations", at: pristine)
        let deleted = try PythonSQLite.run(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                + "c.execute('delete from ZSPECIMEN where Z_PK = (select min(Z_PK) from ZSPECIMEN)'); c.commit(); c.close()",
            [pristine.appending(path: "Documents/Herbarium.sqlite").path])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let rows = try Self.rows("ZSPECIMEN", in: pristine.appending(path: "Documents/Herbarium.sqlite"), scratch: scratch.url)
        let root = scratch.url.appending(path: "device")
        func reset() throws {
            try? FileManager.default.removeItem(at: root)
            try shell("cp -a '\(pristine.path)' '\(root.path)'")
        }
        let plans = try catalog.chain(from: "Herbarium", to: "Herbarium-3").flatMap { ["--plan", $0.file.path] }
        let command = SimulateChildRequest.Command.upgrade(arguments: [root.path] + plans)
        let runner = PowerLossRun(
            executable: URL(filePath: backstageExecutable), scratch: scratch.url.appending(path: "power"))
        try reset()
        let events = try runner.record(command)
        let support = root.appending(path: "Library/Application Support").standardizedFileURL.path
        // From the older copy's rename into quarantine to the journal of the app's store's move.
        let first = try #require(
            events.first { $0.operation == .rename && $0.path == support + "/Herbarium.sqlite" && $0.second.contains("/quarantine/") },
            "the older copy is renamed into quarantine")
        let journal = try #require(
            events.first { $0.index > first.index && $0.operation == .rename && $0.second.hasSuffix("/journal.json") },
            "the move's journal is written after")
        // The database, then its sidecars, each renamed and both folders fsynced; then the journal.
        let window = events.filter { $0.index >= first.index && $0.index <= journal.index }
        #expect(window.filter { $0.operation == .rename }.count >= 3, "\(window.map { "\($0.operation) \($0.path)" })")
        for event in window {
            for loses in [false, true] {
                try reset()
                let cut = PowerCut(after: event.index + 1, losesUnsyncedWrites: loses)
                _ = try runner.run(command, cut: cut)
                let next = try runProcess(backstageExecutable, ["upgrade", root.path] + plans)
                let label = "cut after @\(event.index) \(event.operation) \(event.path)\(loses ? ", writes lost" : "")"
                #expect(next.status == 0, "\(label): \(next.stderr)")
                let store = root.appending(path: "Library/Application Support/Herbarium.sqlite")
                #expect(try Self.modelVersion(of: store, scratch: scratch.url) == ["3"], "\(label)")
                #expect(try Self.rows("ZSPECIMEN", in: store, scratch: scratch.url) == rows, "\(label): the app's rows")
                let quarantine = root.appending(path: "Library/Application Support/.backstage/quarantine")
                let copies = paths(under: quarantine, containing: "Herbarium.sqlite").filter { $0.hasSuffix(".sqlite") }
                #expect(
                    try copies.contains { try Self.modelVersion(of: quarantine.appending(path: $0), scratch: scratch.url) == ["1"] },
                    "\(label): the older copy kept in quarantine: \(copies)")
            }
        }
    }

    /// The older copy open in another process (a backup agent reading it): it is not renamed away
    /// under its reader; the run stops before the move, naming the process, with both copies where
    /// they were, and the next run, once it is closed, completes.
    @Test func anOlderCopyHeldOpenElsewhereIsNotQuarantinedUnderItsReader() throws {
        let device = try Self.device(layout: "Herbarium", state: "both-locations")
        let (scratch, root) = (device.scratch, device.root)
        let documents = device.documents
        let support = device.support
        let restored = try Data(contentsOf: support)
        let plans = try device.plans()

        let holder = try PythonSQLite.holdWriteLockWithoutWriting(support, seconds: 60)
        let refused = try runProcess(backstageExecutable, ["upgrade", root.path] + plans)
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        #expect(refused.status != 0, "\(refused.stdout)\n\(refused.stderr)")
        #expect(refused.stderr.contains("process \(holder.processIdentifier) has"), "\(refused.stderr)")
        #expect(try Data(contentsOf: support) == restored, "the older copy is where it was, as it was")
        #expect(FileManager.default.fileExists(atPath: documents.path), "the app's store has not moved")

        let upgraded = try runProcess(backstageExecutable, ["upgrade", root.path] + plans)
        #expect(upgraded.status == 0, "\(upgraded.stdout)\n\(upgraded.stderr)")
        #expect(try Self.modelVersion(of: support, scratch: scratch.url) == ["3"])
    }

    /// A copy at the destination of no version the chain knows (another model's store): nothing
    /// proves it older, so it is never quarantined for the source; the dry run finds that the
    /// migration cannot run on it and refuses the chain with nothing changed.
    @Test func aCopyOfNoKnownVersionIsNeverTakenForTheOlder() throws {
        let device = try Self.device(layout: "Herbarium", state: "both-locations")
        let (catalog, root) = (device.catalog, device.root)
        let documents = device.documents
        let support = device.support
        try FileManager.default.removeItem(at: support)
        let made = try PythonSQLite.run(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('create table ledger(x)'); "
                + "c.execute('insert into ledger values (1)'); c.commit(); c.close()",
            [support.path])
        #expect(made.status == 0, "\(made.stderr)")
        let (foreign, live) = (try Data(contentsOf: support), try Data(contentsOf: documents))
        let plans = try device.plans()
        let upgrade = try runProcess(backstageExecutable, ["upgrade", root.path] + plans)
        #expect(upgrade.status != 0, "\(upgrade.stdout)\n\(upgrade.stderr)")
        #expect(upgrade.stderr.contains("migration Herbarium 2 → Herbarium 3 would fail"), "\(upgrade.stderr)")
        #expect(try Data(contentsOf: support) == foreign, "the store that was there stays, untouched")
        #expect(try Data(contentsOf: documents) == live, "the app's store is as it was")
        #expect(paths(under: root.appending(path: "Library/Application Support/.backstage"), containing: "Herbarium").isEmpty)
        #expect(Upgrader.storageVersion(of: catalog.container(at: root)) == nil)
    }

    /// The copies are of one version (both-locations at Herbarium 2): nothing tells which is older,
    /// so the store already at the destination stays and the source goes to quarantine, as before.
    @Test func copiesOfOneVersionKeepTheStoreAtTheDestination() throws {
        let device = try Self.device(layout: "Herbarium-2", state: "both-locations")
        let (scratch, catalog, root) = (device.scratch, device.catalog, device.root)
        let support = device.support
        let before = try Data(contentsOf: support)
        let plan = try catalog.chain(from: "Herbarium-2", to: "Herbarium-3")[0].file.path
        let upgrade = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan])
        #expect(upgrade.status == 0, "\(upgrade.stdout)\n\(upgrade.stderr)")
        #expect(try Self.modelVersion(of: support, scratch: scratch.url) == ["3"])
        #expect(try Data(contentsOf: support) != before, "the store that was there was migrated")
        let quarantined = paths(under: root.appending(path: "Library/Application Support/.backstage/quarantine"),
                                containing: "Herbarium.sqlite")
        #expect(quarantined.contains { $0.hasSuffix("/documents/Herbarium.sqlite") }, "\(quarantined)")
    }

    /// The catalog of the three versions, every one keeping the store in Documents.
    static func catalogInDocuments(in scratch: URL) throws -> CatalogFolder {
        try ModelBundle.write(
            "Herbarium",
            versions: ModelBundle.numbered(
                "Herbarium",
                [CoreDataPowerLossTests.specimen1, CoreDataPowerLossTests.specimen2, CoreDataPowerLossTests.specimen3]),
            current: "Herbarium 3", in: scratch)
        let made = try runProcess(
            backstageExecutable,
            [
                "catalog", "init", "Catalog", "--model", "Herbarium.xcdatamodeld", "--store",
                "documents/Herbarium.sqlite", "--newest-store", "documents/Herbarium.sqlite",
            ], currentDirectory: scratch)
        #expect(made.status == 0, "\(made.stderr)")
        return try CatalogFolder(at: scratch.appending(path: "Catalog"))
    }

    /// A plan from Herbarium 2 run on a Herbarium 1 store where it is (a release skipped, its plan
    /// not shipped): the migration cannot take it, and the run says so (exit 1, the step named),
    /// leaves the store as it was, and does not record Herbarium 3 as reached.
    @Test func aStoreOfAVersionNoMigrationKnowsIsAProblemNotAnUpgrade() throws {
        let device = try Self.device(layout: "Herbarium", state: "clean", inDocuments: true)
        let (catalog, root) = (device.catalog, device.root)
        let store = root.appending(path: "Documents/Herbarium.sqlite")
        let before = try Data(contentsOf: store)
        let plan = try catalog.chain(from: "Herbarium-2", to: "Herbarium-3")[0].file.path
        let upgrade = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan])
        #expect(upgrade.status == 1, "\(upgrade.stdout)\n\(upgrade.stderr)")
        #expect(upgrade.stderr.contains("step 1 of Herbarium-2-to-Herbarium-3 migrates Core Data"), "\(upgrade.stderr)")
        #expect(upgrade.stderr.contains("no later step of the plan knows its version"), "\(upgrade.stderr)")
        #expect(try Data(contentsOf: store) == before, "the store is as it was")
        #expect(Upgrader.storageVersion(of: catalog.container(at: root)) == nil)
    }

    /// The same plan, with the relocation before the migration: the dry run, on an empty copy of
    /// the store's schema, finds that the store moving in is of neither version, and refuses with
    /// nothing changed (the store still in Documents), naming the versions.
    @Test func aStoreOfAVersionNoMigrationKnowsIsRefusedBeforeItMoves() throws {
        let device = try Self.device(layout: "Herbarium", state: "clean")
        let (catalog, root) = (device.catalog, device.root)
        let store = root.appending(path: "Documents/Herbarium.sqlite")
        let before = try Data(contentsOf: store)
        let plan = try catalog.chain(from: "Herbarium-2", to: "Herbarium-3")[0].file.path
        let upgrade = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan])
        #expect(upgrade.status != 0, "\(upgrade.stdout)\n\(upgrade.stderr)")
        #expect(upgrade.stderr.contains("the store is not of Herbarium 2 nor Herbarium 3"), "\(upgrade.stderr)")
        #expect(try Data(contentsOf: store) == before, "the store is where it was, as it was")
        #expect(!FileManager.default.fileExists(atPath: root.appending(path: "Library/Application Support/Herbarium.sqlite").path))
    }

    /// A chain from Herbarium 1 run on a store already of Herbarium 3 in Documents (every version
    /// keeps it there; the launch record lost): the first migration meets a store of neither of its
    /// versions, which a later one knows. That is no problem: the run ends ok, the store untouched.
    @Test func aStoreFurtherAlongTheChainIsNoProblem() throws {
        let device = try Self.device(layout: "Herbarium-3", state: "clean", inDocuments: true)
        let (catalog, root) = (device.catalog, device.root)
        let container = catalog.container(at: root)
        try? FileManager.default.removeItem(atPath: container.launchRecordPath)
        let store = root.appending(path: "Documents/Herbarium.sqlite")
        let before = try Data(contentsOf: store)
        let plans = try device.plans()
        let upgrade = try runProcess(backstageExecutable, ["upgrade", root.path, "--json"] + plans)
        #expect(upgrade.status == 0, "\(upgrade.stdout)\n\(upgrade.stderr)")
        #expect(upgrade.stdout.contains("takes it from its version"), "\(upgrade.stdout)")
        #expect(try Data(contentsOf: store) == before, "the store is as it was")
    }
}
