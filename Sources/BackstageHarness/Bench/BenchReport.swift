import Backstage
import Foundation

/// One measured case at one size: Backstage's median time and peak memory, or a baseline's.
public struct BenchResult: Sendable, Hashable, Codable {
    /// The case, such as `relocate · rename`.
    public var name: String
    /// What it is: `backstage` or `baseline`.
    public var kind: Kind
    /// The size of the data it worked on, in bytes.
    public var bytes: Int64
    /// The median wall-clock time of the runs.
    public var seconds: Double
    /// Every run's time, in run order.
    public var runs: [Double]
    /// The largest resident set of a run, in bytes (0 when measured in process).
    public var peakBytes: Int64
    /// For Backstage's cases: the baselines it is compared with.
    public var baselines: [String]

    public enum Kind: String, Sendable, Hashable, Codable { case backstage, baseline }

    public init(name: String, kind: Kind, bytes: Int64, runs: [Double], peakBytes: Int64, baselines: [String] = []) {
        self.name = name
        self.kind = kind
        self.bytes = bytes
        self.runs = runs
        self.seconds = runs.median
        self.peakBytes = peakBytes
        self.baselines = baselines
    }
}

/// What `backstage bench` measured: every case at every size, in one run on one machine.
public struct BenchReport: Sendable, Hashable, Codable {
    public var date: Date
    public var machine: String
    public var runsPerCase: Int
    public var sizes: [Int64]
    public var results: [BenchResult]
    /// `needsUpgrade` of the Notes v1→v4 chain on an up-to-date v4 container, median
    /// microseconds per call, Documents unchanged since the last run (the launch record vouches).
    public var needsUpgradeMicroseconds: Double
    /// The same after the user saved a file in Documents: the folder is listed.
    public var needsUpgradeDocumentsChangedMicroseconds: Double?
    /// The launch budget projections are made against, in seconds.
    public var budget: Double
    /// Cases left out and why (a tool missing, no room on /dev/shm).
    public var skipped: [String]

    public init(date: Date, machine: String, runsPerCase: Int, sizes: [Int64], results: [BenchResult],
                needsUpgradeMicroseconds: Double, budget: Double, skipped: [String]) {
        self.date = date
        self.machine = machine
        self.runsPerCase = runsPerCase
        self.sizes = sizes
        self.results = results
        self.needsUpgradeMicroseconds = needsUpgradeMicroseconds
        self.budget = budget
        self.skipped = skipped
    }

    private enum DerivedKeys: String, CodingKey { case ratios, projections, targets }

    /// Encodes what was measured and what follows from it: the ratios, the projections and the
    /// targets, so a script reading `--json` needs none of the arithmetic. Decoding reads back
    /// what was measured and derives the rest again.
    public func encode(to encoder: any Encoder) throws {
        var measured = encoder.container(keyedBy: CodingKeys.self)
        try measured.encode(date, forKey: .date)
        try measured.encode(machine, forKey: .machine)
        try measured.encode(runsPerCase, forKey: .runsPerCase)
        try measured.encode(sizes, forKey: .sizes)
        try measured.encode(results, forKey: .results)
        try measured.encode(needsUpgradeMicroseconds, forKey: .needsUpgradeMicroseconds)
        try measured.encodeIfPresent(needsUpgradeDocumentsChangedMicroseconds, forKey: .needsUpgradeDocumentsChangedMicroseconds)
        try measured.encode(budget, forKey: .budget)
        try measured.encode(skipped, forKey: .skipped)
        var derived = encoder.container(keyedBy: DerivedKeys.self)
        try derived.encode(ratios, forKey: .ratios)
        try derived.encode(projections, forKey: .projections)
        try derived.encode(targets, forKey: .targets)
    }

    /// "6.1 µs (12.9 µs once Documents changed since the last run)".
    static func launchCheck(_ report: BenchReport) -> String {
        let steady = String(format: "%.1f µs", report.needsUpgradeMicroseconds)
        guard let changed = report.needsUpgradeDocumentsChangedMicroseconds else { return steady }
        return steady + String(format: " (%.1f µs once Documents changed since the last run)", changed)
    }

    /// Rows of the ratio table: each Backstage case against each of its baselines, per size.
    public struct Ratio: Sendable, Hashable, Codable {
        public var name: String
        public var bytes: Int64
        public var seconds: Double
        public var peakBytes: Int64
        public var baseline: String
        public var baselineSeconds: Double
        public var ratio: Double
    }

    public var ratios: [Ratio] {
        results.filter { $0.kind == .backstage }.flatMap { result in
            result.baselines.compactMap { name -> Ratio? in
                guard let baseline = results.first(where: { $0.name == name && $0.bytes == result.bytes }) else { return nil }
                return Ratio(name: result.name, bytes: result.bytes, seconds: result.seconds, peakBytes: result.peakBytes,
                             baseline: name, baselineSeconds: baseline.seconds, ratio: result.seconds / max(baseline.seconds, 1e-9))
            }
        }
    }

    /// The projected time of each Backstage case at 1 GB and 10 GB, from its throughput at the
    /// largest size it was measured at (a rename is size-independent: that time is kept as is).
    public struct Projection: Sendable, Hashable, Codable {
        public var name: String
        public var secondsAt1GB: Double
        public var secondsAt10GB: Double
        public var fitsBudgetAt1GB: Bool
    }

    public var projections: [Projection] {
        var largest: [String: BenchResult] = [:]
        var order: [String] = []
        // Generation is the harness's work, not the app's: no launch budget applies to it.
        for result in results where result.kind == .backstage && !result.name.hasPrefix("generate") {
            if largest[result.name] == nil { order.append(result.name) }
            if result.bytes >= largest[result.name]?.bytes ?? 0 { largest[result.name] = result }
        }
        return order.compactMap { largest[$0] }.map { result in
            let constant = result.name.contains("rename")
            let perByte = result.seconds / Double(max(result.bytes, 1))
            let at1 = constant ? result.seconds : perByte * 1e9
            let at10 = constant ? result.seconds : perByte * 1e10
            return Projection(name: result.name, secondsAt1GB: at1, secondsAt10GB: at10, fitsBudgetAt1GB: at1 <= budget)
        }
    }

    /// The ratio table as Markdown.
    public var markdown: String {
        var lines = ["| size | Backstage | time | peak RSS | baseline | time | ratio |", "|---|---|---|---|---|---|---|"]
        for row in ratios {
            lines.append("| \(Self.size(row.bytes)) | \(row.name) | \(Self.time(row.seconds)) | \(row.peakBytes > 0 ? "\(row.peakBytes >> 20) MB" : "—") | \(row.baseline) | \(Self.time(row.baselineSeconds)) | \(String(format: "%.2f×", row.ratio)) |")
        }
        lines.append("")
        lines.append("`needsUpgrade` with nothing pending, Notes v1→v4 chain: \(Self.launchCheck(self)) per call.")
        lines.append("")
        lines.append("| projected | 1 GB | 10 GB | within the \(String(format: "%g", budget)) s launch budget at 1 GB |")
        lines.append("|---|---|---|---|")
        for projection in projections {
            lines.append("| \(projection.name) | \(Self.time(projection.secondsAt1GB)) | \(Self.time(projection.secondsAt10GB)) | \(projection.fitsBudgetAt1GB ? "yes" : "no") |")
        }
        lines.append("")
        lines += targetsMarkdown
        return lines.joined(separator: "\n")
    }

    /// The ratio table for a terminal.
    public var table: String {
        func row(_ cells: [String]) -> String {
            let widths = [9, 34, 10, 7, 30, 10, 7]
            return zip(cells, widths).enumerated().map { index, pair in
                let (text, width) = pair
                let padding = String(repeating: " ", count: max(0, width - text.count))
                return [2, 3, 5, 6].contains(index) ? padding + text : text + padding
            }.joined(separator: " ")
        }
        var lines = [row(["size", "Backstage", "time", "RSS", "baseline", "time", "ratio"])]
        for ratio in ratios {
            lines.append(row([Self.size(ratio.bytes), ratio.name, Self.time(ratio.seconds), ratio.peakBytes > 0 ? "\(ratio.peakBytes >> 20) MB" : "—",
                              ratio.baseline, Self.time(ratio.baselineSeconds), String(format: "%.2f×", ratio.ratio)]))
        }
        lines.append("needsUpgrade, nothing pending, Notes v1→v4 chain: \(Self.launchCheck(self)) per call")
        for projection in projections {
            lines.append("projected \(projection.name): 1 GB \(Self.time(projection.secondsAt1GB)), 10 GB \(Self.time(projection.secondsAt10GB))"
                         + (projection.fitsBudgetAt1GB ? "" : " (over the \(String(format: "%g", budget)) s launch budget at 1 GB)"))
        }
        lines += targetsTable
        if !skipped.isEmpty { lines.append("skipped: " + skipped.joined(separator: "; ")) }
        return lines.joined(separator: "\n")
    }

    static func size(_ bytes: Int64) -> String { formatBytes(bytes) }

    static func time(_ seconds: Double) -> String {
        seconds < 1 ? String(format: "%.1f ms", seconds * 1000) : String(format: "%.2f s", seconds)
    }
}
