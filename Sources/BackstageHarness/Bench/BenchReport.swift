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
    /// Whether the `backstage` that ran the cases was a debug build: every figure then says so.
    public var debugBuild: Bool?

    public init(
        date: Date, machine: String, runsPerCase: Int, sizes: [Int64], results: [BenchResult],
        needsUpgradeMicroseconds: Double, budget: Double, skipped: [String]
    ) {
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
        try measured.encodeIfPresent(
            needsUpgradeDocumentsChangedMicroseconds, forKey: .needsUpgradeDocumentsChangedMicroseconds)
        try measured.encode(budget, forKey: .budget)
        try measured.encode(skipped, forKey: .skipped)
        try measured.encodeIfPresent(debugBuild, forKey: .debugBuild)
        var derived = encoder.container(keyedBy: DerivedKeys.self)
        try derived.encode(ratios, forKey: .ratios)
        try derived.encode(projections, forKey: .projections)
        try derived.encode(targets, forKey: .targets)
    }

    /// "6.1 µs (12.9 µs once Documents changed since the last run)".
    static func launchCheck(_ report: BenchReport) -> String {
        let mark = report.debugBuild == true ? " debug" : ""
        let steady = String(format: "%.1f µs", report.needsUpgradeMicroseconds) + mark
        guard let changed = report.needsUpgradeDocumentsChangedMicroseconds else { return steady }
        return steady + String(format: " (%.1f µs", changed) + mark + " once Documents changed since the last run)"
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
                guard let baseline = results.first(where: { $0.name == name && $0.bytes == result.bytes }) else {
                    return nil
                }
                return Ratio(
                    name: result.name, bytes: result.bytes, seconds: result.seconds, peakBytes: result.peakBytes,
                    baseline: name, baselineSeconds: baseline.seconds,
                    ratio: result.seconds / max(baseline.seconds, 1e-9))
            }
        }
    }

    /// The projected time of each Backstage case at 1 GB and 10 GB, from its throughput at the
    /// largest size it was measured at (a rename is size-independent: that time is kept as is),
    /// with the spread: the same projection from the fastest and the slowest throughput of any run
    /// at any size measured.
    public struct Projection: Sendable, Hashable, Codable {
        public var name: String
        public var secondsAt1GB: Double
        public var secondsAt10GB: Double
        public var fitsBudgetAt1GB: Bool
        /// The largest size the case was measured at: a projection past 10× of it is an extrapolation.
        public var largestBytes: Int64
        /// The projection at 1 GB from the fastest and the slowest run's throughput.
        public var lowAt1GB: Double
        public var highAt1GB: Double

        /// How far past the largest size measured `bytes` is (1 GB is 100× past 10 MB).
        public func reach(_ bytes: Int64) -> Double { Double(bytes) / Double(max(largestBytes, 1)) }
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
            let rates = results.filter { $0.name == result.name }.flatMap { measured in
                measured.runs.map { constant ? $0 : $0 / Double(max(measured.bytes, 1)) * 1e9 }
            }
            return Projection(
                name: result.name, secondsAt1GB: at1, secondsAt10GB: at10, fitsBudgetAt1GB: at1 <= budget,
                largestBytes: result.bytes, lowAt1GB: rates.min() ?? at1, highAt1GB: rates.max() ?? at1)
        }
    }

    /// "1 GB 10.00 s (8.00 s–12.00 s over the runs and sizes measured), 100× past the 10 MB measured:
    /// an extrapolation".
    func projectionText(_ projection: Projection, at bytes: Int64) -> String {
        let scale = Double(bytes) / 1e9
        var text =
            "\(Self.size(bytes)) \(time(projection.secondsAt1GB * (projection.name.contains("rename") ? 1 : scale)))"
        if projection.highAt1GB > projection.lowAt1GB {
            let factor = projection.name.contains("rename") ? 1 : scale
            let low = Self.time(projection.lowAt1GB * factor), high = Self.time(projection.highAt1GB * factor)
            text += " (\(low)–\(high) over the runs and sizes measured)"
        }
        let reach = projection.reach(bytes)
        if reach > 10 && !projection.name.contains("rename") {
            text +=
                ", \(String(format: "%.0f", reach))× past the \(Self.size(projection.largestBytes)) measured: an extrapolation"
        }
        return text
    }

    /// A time as printed: with "debug" after it when the build was a debug build.
    func time(_ seconds: Double) -> String { Self.time(seconds) + (debugBuild == true ? " debug" : "") }

    /// A ratio as printed, or "—" when either time was under 1 ms.
    func ratio(_ seconds: Double, _ baseline: Double) -> String {
        (Self.ratioText(seconds, baseline) ?? "—") + (debugBuild == true ? " debug" : "")
    }

    /// The ratio table as Markdown.
    public var markdown: String {
        var lines = [
            "| size | Backstage | time | peak RSS | baseline | time | ratio |", "|---|---|---|---|---|---|---|",
        ]
        for row in ratios {
            lines.append(
                "| "
                    + [
                        Self.size(row.bytes), row.name, time(row.seconds),
                        row.peakBytes > 0 ? "\(row.peakBytes >> 20) MB" : "—",
                        row.baseline, time(row.baselineSeconds), ratio(row.seconds, row.baselineSeconds),
                    ].joined(separator: " | ") + " |"
            )
        }
        lines.append("")
        lines.append("`needsUpgrade` with nothing pending, Notes v1→v4 chain: \(Self.launchCheck(self)) per call.")
        lines.append("")
        lines.append(
            "| projected | 1 GB | 10 GB | within the \(String(format: "%g", budget)) s launch budget at 1 GB |")
        lines.append("|---|---|---|---|")
        for projection in projections {
            lines.append(
                "| \(projection.name) | \(projectionText(projection, at: 1_000_000_000)) | "
                    + "\(projectionText(projection, at: 10_000_000_000)) | \(projection.fitsBudgetAt1GB ? "yes" : "no") |"
            )
        }
        lines.append("")
        lines += targetsMarkdown
        if debugBuild == true {
            lines.insert(
                "**A debug build**: every time below is slower than a release build's, and says \"debug\".", at: 0)
            lines.insert("", at: 1)
        }
        return lines.joined(separator: "\n")
    }

    /// The ratio table for a terminal.
    public var table: String {
        func row(_ cells: [String]) -> String {
            let widths = [
                9, 34, debugBuild == true ? 16 : 10, 7, 30, debugBuild == true ? 16 : 10, debugBuild == true ? 13 : 7,
            ]
            return zip(cells, widths).enumerated().map { index, pair in
                let (text, width) = pair
                let padding = String(repeating: " ", count: max(0, width - text.count))
                return [2, 3, 5, 6].contains(index) ? padding + text : text + padding
            }.joined(separator: " ")
        }
        var lines = [row(["size", "Backstage", "time", "RSS", "baseline", "time", "ratio"])]
        for ratio in ratios {
            lines.append(
                row([
                    Self.size(ratio.bytes), ratio.name, time(ratio.seconds),
                    ratio.peakBytes > 0 ? "\(ratio.peakBytes >> 20) MB" : "—",
                    ratio.baseline, time(ratio.baselineSeconds), self.ratio(ratio.seconds, ratio.baselineSeconds),
                ]))
        }
        lines.append("needsUpgrade, nothing pending, Notes v1→v4 chain: \(Self.launchCheck(self)) per call")
        for projection in projections {
            lines.append(
                "projected \(projection.name): \(projectionText(projection, at: 1_000_000_000)); "
                    + projectionText(projection, at: 10_000_000_000)
                    + (projection.fitsBudgetAt1GB
                        ? "" : " (over the \(String(format: "%g", budget)) s launch budget at 1 GB)"))
        }
        lines += targetsTable
        if debugBuild == true {
            lines.insert("a debug build: every time below is slower than a release build's, and says \"debug\"", at: 0)
        }
        if !skipped.isEmpty { lines.append("skipped: " + skipped.joined(separator: "; ")) }
        return lines.joined(separator: "\n")
    }

    static func size(_ bytes: Int64) -> String { formatBytes(bytes) }

    /// A time as printed: "under 1 ms" for one too short to measure, never "0.0 ms".
    static func time(_ seconds: Double) -> String {
        seconds < 0.001
            ? "under 1 ms" : seconds < 1 ? String(format: "%.1f ms", seconds * 1000) : String(format: "%.2f s", seconds)
    }

    /// "2.00×", "0.0031×"; nil when either time was under 1 ms (no ratio of times too short to measure).
    static func ratioText(_ seconds: Double, _ baseline: Double) -> String? {
        guard seconds >= 0.001, baseline >= 0.001 else { return nil }
        let ratio = seconds / baseline
        return String(format: ratio >= 0.095 ? "%.2f×" : "%.2g×", ratio)
    }
}
