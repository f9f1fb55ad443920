import Backstage
import BackstageFixtures
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// Power cuts, not only SIGKILL: every state a power cut could leave during an upgrade (writes
/// not fsynced lost, name changes whose folder was not fsynced undone), then the next launch's
/// recovery, then the simulator's invariants.
@Suite struct PowerLossTests {
    static let soak = ProcessInfo.processInfo.environment["BACKSTAGE_SOAK"] != nil
    static var scope: PowerCutScope { soak ? .all : .bounded(24) }

    func simulate(from: String, to: String, size: Int64 = 150_000, scope: PowerCutScope = Self.scope) throws -> [SimulationRun] {
        var simulator = Simulator(executable: URL(filePath: backstageExecutable), catalog: try CatalogFolder.notes())
        simulator.powerCuts = scope
        return try simulator.simulate(from: from, to: to, sizes: [size], states: [.walPending], crashPoints: .none)
    }

    func expectEveryCutPasses(_ runs: [SimulationRun], atLeast minimum: Int) {
        let cuts = runs.filter { $0.crashPoint?.hasPrefix("power cut") == true }
        #expect(cuts.count >= minimum, "power cuts explored: \(cuts.count)")
        #expect(cuts.contains { $0.crashed }, "some cuts really interrupt the run")
        for run in runs where !run.passed {
            Issue.record("\(run.crashPoint ?? "uninterrupted"): \(run.failures.joined(separator: "; "))")
        }
    }

    @Test func everyPowerCutOfARelocationIsRepaired() throws {
        expectEveryCutPasses(try simulate(from: "v1", to: "v2"), atLeast: 10)
    }

    /// The split of v2 → v3 renames Core Data's `_EXTERNAL_DATA` into the new store's support
    /// folder: a power cut after its commit must not lose one attachment.
    @Test func everyPowerCutOfASplitKeepsEveryAttachment() throws {
        expectEveryCutPasses(try simulate(from: "v2", to: "v3"), atLeast: 20)
    }

    @Test func everyPowerCutOfAPerAccountMoveIsRepaired() throws {
        expectEveryCutPasses(try simulate(from: "v3", to: "v4"), atLeast: 10)
    }
}
