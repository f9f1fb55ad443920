import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// Power cuts, not only SIGKILL: every state a power cut could leave during an upgrade (writes
/// not fsynced lost, name changes whose folder was not fsynced undone), then the next launch's
/// recovery, then the simulator's invariants.
@Suite struct PowerLossTests {
    static let soak = ProcessInfo.processInfo.environment["BACKSTAGE_SOAK"] != nil
    static var scope: PowerCutScope { soak ? .all : .bounded(12) }

    func simulate(from: String, to: String, size: Int64 = 150_000, state: FixtureState = .walPending,
                  catalog: CatalogFolder? = nil) throws -> [SimulationRun] {
        var simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: try catalog ?? CatalogFolder.notes())
        simulator.powerCuts = Self.scope
        return try simulator.simulate(from: from, to: to, sizes: [size], states: [state], crashPoints: .none)
    }

    /// Every cut passes, at `minimum` places at least, some with unsynced writes lost (a place where
    /// every write was fsynced is one state, tried once).
    func expectEveryCutPasses(_ runs: [SimulationRun], atLeast minimum: Int) {
        let cuts = runs.filter { $0.crashPoint?.description.hasPrefix("power cut @") == true }
        let places = Set(cuts.compactMap { run -> Int? in
            guard case .powerCut(let cut) = run.crashPoint else { return nil }
            return cut.after
        })
        #expect(places.count >= minimum, "places cut: \(places.count), states: \(cuts.count)")
        #expect(cuts.contains { $0.crashPoint?.description.hasSuffix(", writes lost") == true }, "some cuts lose writes")
        #expect(runs.filter { $0.crashPoint?.kind == .powerCut } == cuts, "the typed fault counts the same runs")
        #expect(cuts.contains { $0.crashed }, "some cuts really interrupt the run")
        // Each cut names the operation before it, paths inside the container: "power cut @7 (after fsync Library/...)".
        #expect(cuts.allSatisfy { run in
            let label = run.crashPoint?.description ?? ""
            return label.contains(" (after ") && !label.contains(" (after create /") && !label.contains(" (after rename /")
        }, "\(cuts.map { $0.crashPoint?.description ?? "" }.prefix(4))")
        for run in runs where !run.passed {
            Issue.record("\(run.crashPoint?.description ?? "uninterrupted"): \(run.failures.joined(separator: "; "))")
        }
    }

    /// The log holds SQLite's own operations too (a VFS of test builds), numbered with
    /// Backstage's: the split's new stores written and fsynced, the migrated store's `-wal`.
    @Test func theRecorderSeesSQLitesWritesAndSyncsBesideBackstagesOwn() throws {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "c")
        #expect(try runProcess(backstageExecutable, ["fixture", root.path, "--layout", "v2", "--size", "200KB", "--state", "clean"]).status == 0)
        let plan = try CatalogFolder.notes().chain(from: "v2", to: "v3")[0].file.path
        let events = try PowerLossRun(executable: URL(filePath: backstageExecutable), scratch: scratch.url.appending(path: "power"))
            .record(.upgrade(arguments: [root.path, "--plan", plan]))
        // One numbering (an operation that failed changed nothing and leaves its number unused).
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.index < $1.index })
        let target = events.filter { $0.path.hasSuffix(".UserData.sqlite.backstage-tmp") }
        #expect(target.contains { $0.operation == .write && !$0.second.isEmpty }, "SQLite's pages, with their offsets")
        #expect(target.contains { $0.operation == .fsync })
        #expect(events.contains { $0.operation == .write && $0.path.hasSuffix("UserData.sqlite-wal") }, "the migration's commit")
        #expect(events.contains { $0.operation == .rename && $0.second.hasSuffix("/UserData.sqlite") }, "Backstage's own rename")
    }

    @Test func everyPowerCutOfARelocationIsRepaired() throws {
        expectEveryCutPasses(try simulate(from: "v1", to: "v2"), atLeast: 8)
    }

    /// Orphan `-wal`/`-shm` in Documents: v1 → v2's quarantine step moves them out.
    @Test func everyPowerCutOfAQuarantineIsRepaired() throws {
        expectEveryCutPasses(try simulate(from: "v1", to: "v2", state: .orphanSidecars), atLeast: 8)
    }

    /// The split of v2 → v3 renames Core Data's `_EXTERNAL_DATA` into the new store's support
    /// folder: a power cut after its commit must not lose one attachment.
    @Test func everyPowerCutOfASplitKeepsEveryAttachment() throws {
        expectEveryCutPasses(try simulate(from: "v2", to: "v3"), atLeast: 10)
    }

    @Test func everyPowerCutOfAPerAccountMoveIsRepaired() throws {
        expectEveryCutPasses(try simulate(from: "v3", to: "v4"), atLeast: 8)
    }

    /// Apple Photos' store (RTREE, Core Data triggers): captured, then relocated, split in two,
    /// migrated (a column and an index) and Documents quarantined, cut after its operations.
    @Test func everyPowerCutOfAnUpgradeOfApplePhotosStoreIsRepaired() throws {
        let scratch = try TemporaryDirectory()
        let store = try SharedStores.copy(.photos, into: scratch.url)
        let folder = scratch.url.appending(path: "Photos")
        #expect(try runProcess(backstageExecutable, ["catalog", "init", folder.path, "--from", store.main.path, "--at", "documents/Photos.sqlite"]).status == 0)
        let tables = try CatalogFolder(at: folder).version("v1").stores[0].tables
        let cache = ["ZMEDIAANALYSISASSETATTRIBUTES", "ZCOMPUTESYNCATTRIBUTES"]
        let library = tables.filter { !cache.contains($0) }
        let plan = UpgradePlan(name: "v1-to-v2") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Photos.sqlite"), to: ContainerLocation(.applicationSupport, "Photos.sqlite"))
            UpgradeStep.split(ContainerLocation(.applicationSupport, "Photos.sqlite"), into: [
                .init(store: ContainerLocation(.applicationSupport, "Library.sqlite"), tables: library),
                .init(store: ContainerLocation(.caches, "Analysis.sqlite"), tables: cache),
            ])
            UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Library.sqlite"), [
                .init(id: "v2-album-note", sql: "ALTER TABLE ZGENERICALBUM ADD COLUMN ZNOTE TEXT; CREATE INDEX ZGENERICALBUM_ZNOTE ON ZGENERICALBUM (ZNOTE);"),
            ])
            UpgradeStep.quarantine()
        }
        let planFile = scratch.url.appending(path: "v1-to-v2.json")
        try JSONEncoder().encode(plan).write(to: planFile)
        let added = try runProcess(backstageExecutable, ["catalog", "add-version", folder.path, "v2", "--plan", planFile.path, "--writable", "applicationSupport/Library.sqlite"])
        #expect(added.status == 0, "\(added.stdout) \(added.stderr)")
        expectEveryCutPasses(try simulate(from: "v1", to: "v2", size: 600_000, catalog: try CatalogFolder(at: folder)), atLeast: 10)
    }
}
