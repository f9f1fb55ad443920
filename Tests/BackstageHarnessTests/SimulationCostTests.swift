import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// What makes a simulated run cheap never changes its verdict: a table digest is reused only while
/// the store's bytes are the same, documents are compared byte for byte, and each run says where
/// its time went.
@Suite struct SimulationCostTests {
    @Test func aReusedDigestIsTakenAgainWhenTheStoreChanges() throws {
        let scratch = try TemporaryDirectory()
        let url = scratch.url.appending(path: "Workout.sqlite")
        try makeWorkoutStore(url)
        let set = StoreFileSet(main: url)
        var cache: [String: Simulator.ReusedDigest] = [:]
        let first = try Simulator.digest(set, columns: [:], key: "v1 store", cache: &cache)
        #expect(try Simulator.digest(set, columns: [:], key: "v1 store", cache: &cache) == first)
        let deleted = try PythonSQLite.run(
            "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('delete from workout where id = 3')\nc.close()",
            [url.path])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let after = try Simulator.digest(set, columns: [:], key: "v1 store", cache: &cache)
        #expect(first["workout"]?.rows == 19 && after["workout"]?.rows == 18, "the changed store is hashed again")
        #expect(after["exercise"] == first["exercise"])
    }

    @Test func aDocumentChangedByOneByteIsFound() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try CatalogFolder.notes()
        let pristine = scratch.url.appending(path: "pristine")
        let manifest = try FixtureManifest.generate(
            FixtureSpec(layout: "v1", size: 100_000, state: .clean, seed: 3), at: pristine,
            with: FixtureGenerator(executable: URL(filePath: backstageExecutable), catalog: catalog))
        let document = try #require(manifest.documents.first { $0.bytes > 0 })
        let copy = scratch.url.appending(path: "run")
        try FileManager.default.copyItem(at: pristine, to: copy)
        #expect(try !Simulator.documentsChanged(in: catalog.container(at: copy), from: catalog.container(at: pristine), manifest: manifest))
        let file = catalog.container(at: copy).documents.appending(path: document.path)
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count / 2] ^= 1
        try bytes.write(to: file)
        #expect(try Simulator.documentsChanged(in: catalog.container(at: copy), from: catalog.container(at: pristine), manifest: manifest))
    }

    /// Each run records where its time went, and the report sums it by kind of run.
    @Test func eachRunSaysWhereItsTimeWent() throws {
        var simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
        simulator.randomKills = 1
        let runs = try simulator.simulate(from: "v1", to: "v2", sizes: [100_000], states: [.clean], crashPoints: .count(1))
        #expect(runs.count == 3 && runs.allSatisfy(\.passed), "\(runs.map(\.failures))")
        let costs = runs.compactMap(\.cost)
        #expect(costs.count == 3 && costs.allSatisfy { $0.upgrade > 0 && $0.checks > 0 && $0.reset > 0 })
        #expect(costs[0].interrupted == 0 && costs[2].interrupted > 0, "the uninterrupted run first, the crash point's kill last")
        let breakdown = CostBreakdown(runs)
        #expect(breakdown.kinds.map(\.kind) == ["uninterrupted", "crash point", "random kill"])
        #expect(breakdown.kinds.allSatisfy { ($0.timesUpgrade ?? 0) > 1 }, "a run costs more than its upgrade alone")
    }
}
