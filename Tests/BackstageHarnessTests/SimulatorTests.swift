import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

@Suite struct SimulatorTests {
    static let soak = ProcessInfo.processInfo.environment["BACKSTAGE_SOAK"] != nil

    @Test func theCrashPointsCoverEveryBoundaryOfTheChain() throws {
        let points = try Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes()).crashPoints(from: "v1", to: "v4")
        #expect(points.count == 28)
        #expect(points.first == CrashPoint(.relocate, .preflight) && points.contains(CrashPoint(.relocate, .committed, occurrence: 2)))
        #expect(points.map(\.description).contains("split:verified@1") && points.contains(CrashPoint(.migrateSchema, .migrating)))
    }

    @Test func aPlanThatLosesRowsFailsNamingTheTable() throws {
        let scratch = try TemporaryDirectory()
        let plan = try lossyPlan(in: scratch.url)
        var simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
        simulator.plans = [plan]
        let runs = try simulator.simulate(from: "v1", to: "v2", sizes: [200_000], states: [.walPending], crashPoints: .count(2))
        #expect(runs.count == 2)
        #expect(runs.allSatisfy { !$0.passed && $0.crashed })
        #expect(runs.allSatisfy { $0.interruption == .crashPoint })
        #expect(runs.allSatisfy { $0.failures.contains { $0.hasPrefix("rows lost: ZNOTE") } })
        #expect(runs.allSatisfy { !$0.failures.contains { $0.contains("ZFOLDER") } }, "only the table that lost rows is named")
    }

    @Test func killsAtRandomInstantsAreRepairedToo() throws {
        var simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
        simulator.randomKills = Self.soak ? 100 : 4
        let runs = try simulator.simulate(from: "v1", to: "v4", sizes: [Self.soak ? 5_000_000 : 400_000], states: [.walPending], crashPoints: .none)
        #expect(runs.count == 1 + simulator.randomKills)
        #expect(runs.dropFirst().allSatisfy { $0.crashPoint?.hasPrefix("random:") == true })
        #expect(runs.first?.interruption == nil && runs.dropFirst().allSatisfy { $0.interruption == .randomKill })
        for run in runs where !run.passed {
            Issue.record("\(run.crashPoint ?? "-"): \(run.failures.joined(separator: "; "))")
        }
    }

    @Test func theWholeV1ToV4MatrixPassesWithACrashAtEveryBoundary() throws {
        let sizes: [Int64] = Self.soak ? [2_000_000, 20_000_000] : [150_000]
        let runs = try Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
            .simulate(from: "v1", to: "v4", sizes: sizes, states: FixtureState.allCases, crashPoints: .all)
        #expect(runs.count == 28 * FixtureState.allCases.count * sizes.count)
        let crashed = runs.filter { $0.crashed }.count
        #expect(crashed == runs.count, "every boundary is really reached and killed")
        for run in runs where !run.passed {
            Issue.record("\(run.state.rawValue) at \(run.crashPoint ?? "-"): \(run.failures.joined(separator: "; "))")
        }
    }
}

/// The v1 → v2 relocation, then a "cleanup" migration that deletes every other note: a plan
/// that loses rows, as a simulation must catch.
func lossyPlan(in folder: URL) throws -> URL {
    let url = folder.appending(path: "lossy.json")
    try Data(#"""
        {"name": "v1-to-v2-lossy", "steps": [
          {"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}},
          {"quarantine": {"folder": "documents/"}},
          {"migrateSchema": {"store": "applicationSupport/Notes.sqlite", "migrations": [
            {"id": "cleanup", "sql": "DELETE FROM ZNOTE WHERE Z_PK % 2 = 0"}]}}
        ]}
        """#.utf8).write(to: url)
    return url
}
