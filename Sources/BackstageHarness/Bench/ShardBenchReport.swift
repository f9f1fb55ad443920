import Foundation

/// What ``ShardBench`` measured: per count of shards, the runs, the wall and CPU time, runs per
/// second per core, and whether the merged report is the unsharded one.
public struct ShardBenchReport: Sendable, Hashable, Codable {
    /// One count of shards (1: the unsharded run, the reference).
    public struct Row: Sendable, Hashable, Codable {
        public var shards: Int
        /// The matrix's units and the runs the (merged) report holds, and how many of them failed.
        public var units: Int
        public var runs: Int
        public var failedRuns: Int
        /// From the first process started to the last one ended (median over the runs, with the spread).
        public var wallSeconds: Double
        public var fastestWall: Double
        public var slowestWall: Double
        /// `simulate merge`'s own wall time (median); nil unsharded.
        public var mergeSeconds: Double?
        /// User + system time of every process and the children they waited for, the merge included (median).
        public var cpuSeconds: Double
        /// The fastest and slowest shard's own wall time in the median run: how well the parts were balanced.
        public var fastestShard: Double
        public var slowestShard: Double
        /// Runs over the shards' wall time; over that and the cores they could use (the shards, at most the
        /// machine's cores); over the CPU time.
        public var runsPerSecond: Double
        public var runsPerSecondPerCore: Double
        public var runsPerCPUSecond: Double
        /// The unsharded wall time over this count's wall time and merge: how the total falls.
        public var speedup: Double = 1
        /// How the (merged) report differs from the unsharded one (``ShardBench/differences(_:from:)``),
        /// in any run; empty when every run matched.
        public var differences: [String]

        /// The merged report has the unsharded run's units, runs, identities and verdicts.
        public var matches: Bool { differences.isEmpty }

        /// The total wall time: the shards, then their merge.
        public var totalSeconds: Double { wallSeconds + (mergeSeconds ?? 0) }
    }

    /// The simulate command (`backstage simulate` and the matrix's options).
    public var command: [String]
    public var machine: String
    public var cores: Int
    public var date: Date
    public var runsPerCount: Int
    /// The 1-minute load average before and after: other work on the machine shares its cores.
    public var loadAverageBefore: Double?
    public var loadAverageAfter: Double?
    public var rows: [Row]
    /// True when a debug build was measured.
    public var debugBuild = false

    /// Every merged report is the unsharded one.
    public var allMatch: Bool { rows.allSatisfy(\.matches) }

    /// The table `backstage bench --simulate-shards` prints.
    public var table: String {
        func seconds(_ value: Double) -> String { String(format: "%.2f", value) }
        func load(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "?" }
        var lines = [
            "simulate, unsharded and sharded (each shard its own process, all at once): "
                + command.joined(separator: " "),
            "machine: \(machine); load average \(load(loadAverageBefore)) before, \(load(loadAverageAfter)) after; "
                + "\(runsPerCount) run\(runsPerCount == 1 ? "" : "s") per count (median, min–max)"
                + (debugBuild ? "; debug build: every time is several times a release build's" : ""),
            "  shards  runs  failed  wall s              shard s (min–max)  merge s  total s  speedup  CPU s    "
                + "CPU/wall  runs/s  runs/s/core  runs/CPU s  merged = unsharded",
        ]
        for row in rows {
            let wall =
                runsPerCount > 1
                ? "\(seconds(row.wallSeconds)) (\(seconds(row.fastestWall))–\(seconds(row.slowestWall)))"
                : seconds(row.wallSeconds)
            let verdict =
                row.shards == 1
                ? (row.matches ? "reference" : "NO: the unsharded runs disagree")
                : (row.matches ? "yes" : "NO")
            lines.append(
                "  "
                    + [
                        String(row.shards).leftPadded(6), String(row.runs).leftPadded(4),
                        String(row.failedRuns).leftPadded(6), wall.padded(18),
                        "\(seconds(row.fastestShard))–\(seconds(row.slowestShard))".padded(17),
                        (row.mergeSeconds.map(seconds) ?? "-").leftPadded(7), seconds(row.totalSeconds).leftPadded(7),
                        (String(format: "%.2f", row.speedup) + "×").leftPadded(7),
                        seconds(row.cpuSeconds).padded(7),
                        String(format: "%.2f", row.cpuSeconds / max(row.wallSeconds, 1e-9)).leftPadded(8),
                        String(format: "%.2f", row.runsPerSecond).leftPadded(6),
                        String(format: "%.2f", row.runsPerSecondPerCore).leftPadded(11),
                        String(format: "%.2f", row.runsPerCPUSecond).leftPadded(10), verdict,
                    ].joined(separator: "  "))
        }
        for row in rows where !row.matches {
            lines.append("  \(row.shards) shards: " + row.differences.prefix(10).joined(separator: "; "))
        }
        lines.append(
            "  runs/s/core: runs over the wall time and the cores the processes could use (the shards, at most "
                + "\(cores)); past \(cores) processes on \(cores) cores the shards only share them")
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func padded(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
