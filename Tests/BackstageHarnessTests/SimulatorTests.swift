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
        #expect(runs.allSatisfy { $0.crashPoint?.kind == .crashPoint })
        #expect(runs.allSatisfy { $0.failures.contains { $0.hasPrefix("rows lost: ZNOTE") } })
        #expect(runs.allSatisfy { !$0.failures.contains { $0.contains("ZFOLDER") } }, "only the table that lost rows is named")
    }

    /// `--crash-points N` spends its N kills after something was written: never on a preflight, where
    /// the checks passed and nothing changed; spread over the chain, its first and last steps included.
    @Test func aFewCrashPointsAreSpentWhereSomethingWasWritten() throws {
        let simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
        let all = try simulator.crashPoints(from: "v1", to: "v4")
        let runs = try simulator.simulate(from: "v1", to: "v2", sizes: [150_000], states: [.clean], crashPoints: .count(3))
        #expect(runs.count == 3 && runs.allSatisfy { $0.crashPoint?.description.contains(":preflight@") == false }, "\(runs.map { $0.crashPoint?.description ?? "-" })")
        let chosen = Simulator.spread(3, of: all)
        #expect(chosen.count == 3 && chosen.allSatisfy { $0.phase != .preflight } && Set(chosen).count == 3)
        #expect(chosen.first?.kind == all.first?.kind && chosen.last?.kind == all.last { $0.phase != .preflight }?.kind, "\(chosen)")
        #expect(Simulator.spread(1_000, of: all) == all.filter { $0.phase != .preflight })
    }

    @Test func killsAtRandomInstantsAreRepairedToo() throws {
        var simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
        simulator.randomKills = Self.soak ? 100 : 4
        let runs = try simulator.simulate(from: "v1", to: "v4", sizes: [Self.soak ? 5_000_000 : 400_000], states: [.walPending], crashPoints: .none)
        #expect(runs.count == 1 + simulator.randomKills)
        #expect(runs.dropFirst().allSatisfy { $0.crashPoint?.description.hasPrefix("random:") == true })
        #expect(runs.first?.crashPoint == nil && runs.dropFirst().allSatisfy { $0.crashPoint?.kind == .randomKill })
        for run in runs where !run.passed {
            Issue.record("\(run.crashPoint?.description ?? "-"): \(run.failures.joined(separator: "; "))")
        }
    }

    /// Every boundary of the chain, killed, then repaired by the next launch: with a store whose last
    /// rows live only in its `-wal` (the state where a careless step loses rows). Under
    /// `BACKSTAGE_SOAK` every state at two larger sizes (`make soak`): 336 runs.
    @Test func everyBoundaryOfTheV1ToV4ChainIsKilledAndRepaired() throws {
        let sizes: [Int64] = Self.soak ? [2_000_000, 20_000_000] : [150_000]
        let states: [FixtureState] = Self.soak ? FixtureState.allCases : [.walPending]
        let runs = try Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
            .simulate(from: "v1", to: "v4", sizes: sizes, states: states, crashPoints: .all)
        #expect(runs.count == 28 * states.count * sizes.count)
        let crashed = runs.filter { $0.crashed }.count
        #expect(crashed == runs.count, "every boundary is really reached and killed")
        for run in runs where !run.passed {
            Issue.record("\(run.state.rawValue) at \(run.crashPoint?.description ?? "-"): \(run.failures.joined(separator: "; "))")
        }
    }

    /// Every other state an old app leaves (a hot journal, a store in both places, an upgrade
    /// already interrupted, orphan sidecars, a clean store), killed at seven boundaries spread over
    /// the chain — relocation, split and migration among them — and repaired. The whole matrix
    /// runs under `BACKSTAGE_SOAK` (above).
    @Test(arguments: FixtureState.allCases.filter { $0 != .walPending })
    func everyStateIsRepairedAfterAKill(_ state: FixtureState) throws {
        guard !Self.soak else { return }
        let runs = try Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
            .simulate(from: "v1", to: "v4", sizes: [150_000], states: [state], crashPoints: .count(7))
        #expect(runs.count == 7)
        #expect(Set(runs.compactMap { $0.crashPoint?.description.split(separator: ":").first }).count >= 3, "several steps: \(runs.compactMap(\.crashPoint))")
        #expect(runs.allSatisfy { $0.crashed }, "every boundary is really reached and killed")
        for run in runs where !run.passed {
            Issue.record("\(run.state.rawValue) at \(run.crashPoint?.description ?? "-"): \(run.failures.joined(separator: "; "))")
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
