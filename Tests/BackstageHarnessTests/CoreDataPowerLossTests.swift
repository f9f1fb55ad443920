import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// A Core Data app whose store stays in Documents for two releases (Herbarium 1 and 2) before the
/// third moves it to Application Support: the upgrade between the first two is Core Data's
/// migration of the store where it is, cut by power losses.
@Suite struct CoreDataPowerLossTests {
    static let specimen1 = """
        <entity name="Specimen" representedClassName="Specimen" syncable="YES">
        <attribute name="taxon" attributeType="String"/>
        <attribute name="collectedOn" attributeType="Date" usesScalarValueType="NO"/>
        <attribute name="sheets" attributeType="Integer 16" defaultValueString="1" usesScalarValueType="YES"/>
        <attribute name="label" optional="YES" attributeType="String"/>
        </entity>
        """
    static let specimen2 = """
        <entity name="Specimen" representedClassName="Specimen" syncable="YES">
        <attribute name="taxon" attributeType="String"/>
        <attribute name="collectedOn" attributeType="Date" usesScalarValueType="NO"/>
        <attribute name="sheets" attributeType="Integer 16" defaultValueString="1" usesScalarValueType="YES"/>
        <attribute name="annotation" optional="YES" attributeType="String" renamingIdentifier="label"/>
        <attribute name="mounted" attributeType="Boolean" defaultValueString="NO" usesScalarValueType="YES"/>
        <attribute name="habitat" optional="YES" attributeType="String"/>
        </entity>
        """
    static let specimen3 = specimen2.replacingOccurrences(
        of: "</entity>", with: #"<attribute name="elevation" optional="YES" attributeType="Double" usesScalarValueType="YES"/></entity>"#)

    /// The catalog `catalog init --model` makes of the three versions, store in Documents.
    static func catalog(in scratch: URL) throws -> CatalogFolder {
        try ModelBundle.write(
            "Herbarium", versions: ModelBundle.numbered("Herbarium", [specimen1, specimen2, specimen3]),
            current: "Herbarium 3", in: scratch)
        let made = try runProcess(
            backstageExecutable,
            ["catalog", "init", "Catalog", "--model", "Herbarium.xcdatamodeld", "--store", "documents/Herbarium.sqlite"],
            currentDirectory: scratch)
        #expect(made.status == 0, "\(made.stderr)")
        let catalog = try CatalogFolder(at: scratch.appending(path: "Catalog"))
        #expect(catalog.manifest.versions.map(\.name) == ["Herbarium", "Herbarium-2", "Herbarium-3"])
        return catalog
    }

    /// The store's `-wal` is made by the first connection that opens it, and synced by the
    /// migration's: SQLite's unix VFS fsyncs Documents on that first sync (the WAL was opened to
    /// create), so the WAL's name is durable before the checkpoint writes one page of the main
    /// file. The recorder sees that fsync; without it a power cut mid-checkpoint would undo the
    /// WAL's creation and keep half a checkpoint: a store no file system would leave.
    @Test func theWALsFolderIsFsyncedBeforeTheCheckpointWritesTheStore() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.catalog(in: scratch.url)
        let root = scratch.url.appending(path: "device")
        let fixture = try runProcess(
            backstageExecutable,
            ["fixture", root.path, "--catalog", catalog.url.path, "--layout", "Herbarium", "--size", "150KB"])
        #expect(fixture.status == 0, "\(fixture.stderr)")
        let plan = try catalog.chain(from: "Herbarium", to: "Herbarium-2")[0].file.path
        let events = try PowerLossRun(
            executable: URL(filePath: backstageExecutable), scratch: scratch.url.appending(path: "power")
        ).record(.upgrade(arguments: [root.path, "--plan", plan]))

        let documents = root.appending(path: "Documents").standardizedFileURL.path
        let store = documents + "/Herbarium.sqlite"
        let walCreated = try #require(
            events.first { $0.operation == .create && $0.path == store + "-wal" }, "the upgrade opens the store in WAL mode")
        let checkpoint = try #require(
            events.first { $0.operation == .write && $0.path == store }, "the migration is checkpointed into the store")
        #expect(
            events.contains {
                $0.operation == .fsync && $0.path == documents && $0.index > walCreated.index
                    && $0.index < checkpoint.index
            }, "Documents fsynced between the WAL's creation (@\(walCreated.index)) and the checkpoint (@\(checkpoint.index))")
    }

    /// Every power cut of the migration in Documents, writes kept and (where unsynced) lost, then the next launch:
    /// the store is whole and migrated, and its own files in Documents (the store, its sidecars,
    /// a `-wal`/`-shm` left from before) are not "internal files left in Documents" — version 2
    /// keeps them there.
    @Test(arguments: [FixtureState.clean, .orphanSidecars])
    func everyPowerCutOfAMigrationInDocumentsIsRepaired(state: FixtureState) throws {
        let scratch = try TemporaryDirectory()
        var simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: try Self.catalog(in: scratch.url))
        simulator.powerCuts = PowerLossTests.scope
        let runs = try simulator.simulate(
            from: "Herbarium", to: "Herbarium-2", sizes: [150_000], states: [state], crashPoints: .none)
        let cuts = runs.filter { $0.crashPoint?.kind == .powerCut }
        #expect(cuts.count >= 10, "power cuts explored: \(cuts.count)")
        #expect(cuts.contains { $0.crashed && $0.crashPoint?.description.contains("(after write Documents/Herbarium.sqlite)") == true },
                "a cut in the checkpoint: \(cuts.map { $0.crashPoint?.description ?? "" })")
        #expect(runs.contains { $0.crashPoint == nil && $0.passed }, "the uninterrupted upgrade passes")
        for run in runs where !run.passed {
            Issue.record("\(run.crashPoint?.description ?? "uninterrupted"): \(run.failures.joined(separator: "; "))")
        }
    }
}
