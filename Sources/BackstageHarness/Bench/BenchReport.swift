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
    /// Whether each run started with its data in the page cache or after the cache was dropped.
    public var cache: BenchCache
    /// What was run, such as `"$1" "$2" "VACUUM INTO '$3'" && sync -f "$3"` (a shell script's
    /// text, its arguments numbered): a baseline says exactly what it does.
    public var command: String?

    public enum Kind: String, Sendable, Hashable, Codable { case backstage, baseline }

    public init(
        name: String, kind: Kind, bytes: Int64, runs: [Double], peakBytes: Int64, baselines: [String] = [],
        cache: BenchCache = .warm
    ) {
        self.name = name
        self.kind = kind
        self.bytes = bytes
        self.runs = runs
        self.seconds = runs.median
        self.peakBytes = peakBytes
        self.baselines = baselines
        self.cache = cache
    }

    /// Reads a result; one saved before the cache was recorded was measured warm.
    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        name = try values.decode(String.self, forKey: .name)
        kind = try values.decode(Kind.self, forKey: .kind)
        bytes = try values.decode(Int64.self, forKey: .bytes)
        seconds = try values.decode(Double.self, forKey: .seconds)
        runs = try values.decode([Double].self, forKey: .runs)
        peakBytes = try values.decode(Int64.self, forKey: .peakBytes)
        baselines = try values.decode([String].self, forKey: .baselines)
        cache = try values.decodeIfPresent(BenchCache.self, forKey: .cache) ?? .warm
        command = try values.decodeIfPresent(String.self, forKey: .command)
    }
}

/// How a timed run found the page cache: `warm`, its data read into the cache just before (a user
/// working on files they just used), or `cold`, every cache dropped just before
/// (`sync; echo 3 > /proc/sys/vm/drop_caches`: the first launch after a reboot).
public enum BenchCache: String, Sendable, Hashable, Codable, CaseIterable { case warm, cold }

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
    /// Why the cold runs were not made (the page cache could not be dropped); nil when they were
    /// made or not asked for.
    public var coldUnavailable: String?

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
        try measured.encodeIfPresent(coldUnavailable, forKey: .coldUnavailable)
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

    /// Rows of the ratio table: each Backstage case against each of its baselines, per size and cache.
    public struct Ratio: Sendable, Hashable, Codable {
        public var name: String
        public var bytes: Int64
        public var seconds: Double
        public var peakBytes: Int64
        public var baseline: String
        public var baselineSeconds: Double
        /// The median of the runs' ratios, each run's case over the same run's baseline (timed
        /// side by side); the ratio of the medians when the two were not run as often.
        public var ratio: Double
        /// The smallest and the largest ratio of a run.
        public var low: Double
        public var high: Double
        public var cache: BenchCache
    }

    public var ratios: [Ratio] {
        results.filter { $0.kind == .backstage }.flatMap { result in
            result.baselines.compactMap { name -> Ratio? in
                guard
                    let baseline = results.first(where: {
                        $0.name == name && $0.bytes == result.bytes && $0.cache == result.cache
                    })
                else { return nil }
                let paired =
                    result.runs.count == baseline.runs.count && result.runs.count > 1
                    ? zip(result.runs, baseline.runs).map { $0 / max($1, 1e-12) }
                    : [result.seconds / max(baseline.seconds, 1e-12)]
                return Ratio(
                    name: result.name, bytes: result.bytes, seconds: result.seconds, peakBytes: result.peakBytes,
                    baseline: name, baselineSeconds: baseline.seconds, ratio: paired.median,
                    low: paired.min() ?? 0, high: paired.max() ?? 0, cache: result.cache)
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
        for result in results
        where result.kind == .backstage && result.cache == .warm && result.bytes > 0
            && !result.name.hasPrefix("generate")
        {
            if largest[result.name] == nil { order.append(result.name) }
            if result.bytes >= largest[result.name]?.bytes ?? 0 { largest[result.name] = result }
        }
        return order.compactMap { largest[$0] }.map { result in
            let constant = result.name.contains("rename")
            let perByte = result.seconds / Double(max(result.bytes, 1))
            let at1 = constant ? result.seconds : perByte * 1e9
            let at10 = constant ? result.seconds : perByte * 1e10
            let rates = results.filter { $0.name == result.name && $0.cache == .warm }.flatMap { measured in
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

    /// A ratio row's figures: the size ("in process" for the launch check), both times, the ratio
    /// with its spread over the runs ("1.02× (0.98–1.10)"), "—" when a time was under 1 ms.
    func cells(_ row: Ratio) -> [String] {
        let inProcess = row.bytes == 0
        func time(_ seconds: Double) -> String {
            inProcess
                ? String(format: "%.1f µs", seconds * 1e6) + (debugBuild == true ? " debug" : "") : self.time(seconds)
        }
        var ratio = Self.ratioText(row)
        if ratio != nil, row.high > row.low {
            ratio! += " (" + String(format: "%.2f–%.2f", row.low, row.high) + ")"
        }
        return [
            inProcess ? "in process" : Self.size(row.bytes), row.cache.rawValue, row.name, time(row.seconds),
            // The baseline is a tool of the system (cp, sqlite3, bsdtar): how backstage was built says
            // nothing of its time, which is never labelled "debug".
            row.peakBytes > 0 ? "\(row.peakBytes >> 20) MB" : "—", row.baseline,
            inProcess ? String(format: "%.1f µs", row.baselineSeconds * 1e6) : Self.time(row.baselineSeconds),
            (ratio ?? "—") + (debugBuild == true ? " debug" : ""),
        ]
    }

    /// Each baseline's command, once, in run order.
    var baselineCommands: [(String, String)] {
        var seen: Set<String> = []
        return results.filter { $0.kind == .baseline }.compactMap { result in
            guard let command = result.command, seen.insert(result.name).inserted else { return nil }
            return (result.name, command)
        }
    }

    /// "cold: not available (why)" when the cold runs could not be made.
    var coldNote: String? { coldUnavailable.map { "cold: not available (\($0))" } }

    /// The ratio table as Markdown.
    public var markdown: String {
        var lines = [
            "| size | cache | Backstage | time | peak RSS | baseline | time | ratio (min–max of the runs) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in ratios { lines.append("| " + cells(row).joined(separator: " | ") + " |") }
        if let coldNote { lines += ["", coldNote + "."] }
        let commands = baselineCommands
        if !commands.isEmpty { lines += ["", "What each baseline ran:", ""] + commands.map { "- \($0.0): `\($0.1)`" } }
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
                "**A debug build**: every time of Backstage below is slower than a release build's, and says \"debug\" (the baselines' are not).",
                at: 0)
            lines.insert("", at: 1)
        }
        return lines.joined(separator: "\n")
    }

    /// The ratio table for a terminal.
    public var table: String {
        let debug = debugBuild == true
        func row(_ cells: [String]) -> String {
            let widths = [10, 5, 30, debug ? 16 : 10, 7, 34, debug ? 16 : 10, debug ? 25 : 19]
            return zip(cells, widths).enumerated().map { index, pair in
                let (text, width) = pair
                let padding = String(repeating: " ", count: max(0, width - text.count))
                return [3, 4, 6, 7].contains(index) ? padding + text : text + padding
            }.joined(separator: " ")
        }
        var lines = [row(["size", "cache", "Backstage", "time", "RSS", "baseline", "time", "ratio (min–max)"])]
        for ratio in ratios { lines.append(row(cells(ratio))) }
        if let coldNote { lines.append(coldNote) }
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
            lines.insert(
                "a debug build: every time of Backstage below is slower than a release build's, and says \"debug\" (the baselines' are not)",
                at: 0)
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

    /// A row's ratio, the median of its runs' ratios, as the targets state it: "0.95×"; nil when
    /// either time was under 1 ms (a launch check, timed over many calls in process, always has one).
    static func ratioText(_ row: Ratio) -> String? {
        guard row.bytes == 0 || (row.seconds >= 0.001 && row.baselineSeconds >= 0.001) else { return nil }
        return String(format: row.ratio >= 0.095 ? "%.2f×" : "%.2g×", row.ratio)
    }

    /// "2.00×", "0.0031×"; nil when either time was under 1 ms (no ratio of times too short to measure).
    static func ratioText(_ seconds: Double, _ baseline: Double) -> String? {
        guard seconds >= 0.001, baseline >= 0.001 else { return nil }
        let ratio = seconds / baseline
        return String(format: ratio >= 0.095 ? "%.2f×" : "%.2g×", ratio)
    }
}
