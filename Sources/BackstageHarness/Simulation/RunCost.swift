import Foundation

/// Where one simulated run's time went, in seconds: the upgrade's own work against what the
/// simulation adds around it.
public struct RunCost: Sendable, Hashable, Codable {
    /// Removing the last run's container and cloning the fixture into this run's.
    public var reset: Double
    /// The run that was killed (or cut), from its process start to the kill; 0 for a run that was
    /// not interrupted.
    public var interrupted: Double
    /// The reruns' time outside the upgrade itself: starting the process, loading the catalog's
    /// plans, writing the report.
    public var processStart: Double
    /// The time the reruns' upgrades report for themselves: the upgrade itself (for an interrupted
    /// run, the part resumed after the kill).
    public var upgrade: Double
    /// The invariants checked after the run: row hashes, integrity, audit, schema, data checks.
    public var checks: Double

    public init(
        reset: Double = 0, interrupted: Double = 0, processStart: Double = 0, upgrade: Double = 0, checks: Double = 0
    ) {
        self.reset = reset
        self.interrupted = interrupted
        self.processStart = processStart
        self.upgrade = upgrade
        self.checks = checks
    }

    /// The run's whole time.
    public var total: Double { reset + interrupted + processStart + upgrade + checks }

    /// The sum of two costs, part by part.
    public static func + (a: RunCost, b: RunCost) -> RunCost {
        RunCost(
            reset: a.reset + b.reset, interrupted: a.interrupted + b.interrupted,
            processStart: a.processStart + b.processStart, upgrade: a.upgrade + b.upgrade, checks: a.checks + b.checks)
    }

    /// The cost divided by `n`, part by part.
    public func divided(by n: Int) -> RunCost {
        let d = Double(max(n, 1))
        return RunCost(
            reset: reset / d, interrupted: interrupted / d, processStart: processStart / d, upgrade: upgrade / d,
            checks: checks / d)
    }
}

/// The mean cost of the runs of each kind (uninterrupted, crash point, random kill, power cut,
/// downgrade), with the ratio of a run's whole time to the uninterrupted upgrade's own time.
public struct CostBreakdown: Sendable, Hashable, Codable {
    public struct Kind: Sendable, Hashable, Codable {
        public var kind: String
        public var runs: Int
        /// The mean of the runs' costs.
        public var mean: RunCost
        /// A run's mean whole time over the mean own time of the uninterrupted upgrades (nil when
        /// there were none).
        public var timesUpgrade: Double?
    }

    public var kinds: [Kind]

    /// The breakdown of `runs`, by kind, kinds in a fixed order.
    public init(_ runs: [SimulationRun]) {
        func kind(_ run: SimulationRun) -> String {
            switch run.crashPoint?.kind {
            case nil: "uninterrupted"
            case .crashPoint: "crash point"
            case .randomKill: "random kill"
            case .powerCut: "power cut"
            case .downgrade: "downgrade"
            }
        }
        let measured = runs.filter { $0.cost != nil }
        let upgrades = measured.filter { kind($0) == "uninterrupted" }.compactMap(\.cost)
        let upgrade = upgrades.isEmpty ? nil : upgrades.reduce(0) { $0 + $1.upgrade } / Double(upgrades.count)
        kinds = ["uninterrupted", "crash point", "random kill", "power cut", "downgrade"].compactMap { name in
            let costs = measured.filter { kind($0) == name }.compactMap(\.cost)
            guard !costs.isEmpty else { return nil }
            let mean = costs.reduce(RunCost(), +).divided(by: costs.count)
            return Kind(
                kind: name, runs: costs.count, mean: mean,
                timesUpgrade: upgrade.flatMap { $0 > 0 ? mean.total / $0 : nil })
        }
    }

    /// A table: one line per kind, the mean seconds of each part.
    public var text: String {
        var lines = ["  cost per run (mean s)  runs   reset  interrupted  process  upgrade  checks   total  × upgrade"]
        for kind in kinds {
            let m = kind.mean
            lines.append(
                "  " + kind.kind.padding(toLength: 21, withPad: " ", startingAt: 0)
                    + String(
                        format: "%5d  %6.3f  %11.3f  %7.3f  %7.3f  %6.3f  %6.3f  ", kind.runs, m.reset, m.interrupted,
                        m.processStart, m.upgrade, m.checks, m.total)
                    + (kind.timesUpgrade.map { String(format: "%.1f×", $0) } ?? "-"))
        }
        return lines.joined(separator: "\n")
    }
}
