import Backstage
import Foundation

/// Where a simulation is, reported as it goes (``Simulator/onProgress``): a run can take minutes, and
/// its line in the report only comes when it ends.
public struct SimulationProgress: Sendable, Hashable {
    /// Runs finished.
    public var runsDone: Int
    /// Runs in all, as far as known: the power cuts of a size and state are counted once recorded.
    public var runsTotal: Int
    /// The fixture's size and state.
    public var size: Int64
    public var state: FixtureState
    /// The run under way: its crash point (`kind:phase@N`), or what interrupts it; nil for an
    /// uninterrupted run or before the runs of a fixture start.
    public var run: String?
    /// What the simulator is doing.
    public var stage: Stage

    /// What the simulator is doing.
    public enum Stage: String, Sendable, Hashable, CaseIterable {
        /// Building the fixture the runs of a size and state start from.
        case generatingFixture = "generating the fixture"
        /// Recording the chain's disk operations, to know the power cuts to try.
        case recordingPowerCuts = "recording the disk operations"
        /// Running the chain until it is killed (or, uninterrupted, to its end).
        case interrupting = "running to the crash"
        /// Running the chain again until it completes.
        case resuming = "resuming"
        /// Checking the invariants.
        case checking = "checking the invariants"
    }

    public init(runsDone: Int, runsTotal: Int, size: Int64, state: FixtureState, run: String?, stage: Stage) {
        self.runsDone = runsDone
        self.runsTotal = runsTotal
        self.size = size
        self.state = state
        self.run = run
        self.stage = stage
    }

    /// What is under way, for a progress line: `2 MB wal-pending · relocate:copying@1 · resuming`.
    public var detail: String {
        var parts = ["\(formatBytes(size)) \(state.rawValue)"]
        if stage != .generatingFixture && stage != .recordingPowerCuts { parts.append(run ?? "no crash") }
        parts.append(stage == .interrupting && run == nil ? "running" : stage.rawValue)
        return parts.joined(separator: " · ")
    }
}
