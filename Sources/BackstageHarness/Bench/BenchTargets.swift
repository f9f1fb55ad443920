import Foundation

/// A performance target of Backstage's design, checked against the figures of one bench run.
///
/// A target is a limit on a ratio measured in that run — Backstage's case against the baseline a
/// user would pick instead, on the same data — or on a figure of Backstage's own (its peak memory,
/// its launch check). Ratios are checked at the largest size both sides were measured at, where the
/// start of a process (about 30 ms) no longer dominates; generation at every size from 200 MB.
///
/// For example:
///
/// ```swift
/// for check in report.targets where check.met == false {
///     print("missed: \(check.target.title): \(check.measured)")
/// }
/// ```
public struct BenchTarget: Sendable, Hashable, Codable {
    /// What is measured, and against what.
    public enum Measure: Sendable, Hashable, Codable {
        /// The case's median time divided by the baseline's, on the same data.
        case ratio(case: String, baseline: String)
        /// The case's time at its largest size divided by its time at its smallest: a time
        /// independent of size stays near 1.
        case sizeIndependence(case: String)
        /// The case's peak resident memory, in MiB.
        case peakMemory(case: String)
        /// `needsUpgrade` with nothing pending, in microseconds per call.
        case launchCheck
    }

    /// Which sizes a target is checked at.
    public enum Sizes: Sendable, Hashable, Codable {
        /// The largest size the case (and its baseline) was measured at.
        case largest
        /// Every size the case was measured at from `bytes` up.
        case from(bytes: Int64)
    }

    /// What the target says, such as `relocate across file systems`.
    public var title: String
    public var measure: Measure
    /// The largest value that meets the target.
    public var limit: Double
    public var sizes: Sizes

    /// A target that `measure` meets when it is at most `limit`.
    ///
    /// - Parameters:
    ///   - title: What the target says, shown beside its verdict.
    ///   - measure: What is measured: a ratio to a baseline, a peak memory, the launch check.
    ///   - limit: The largest value that meets the target, in the measure's unit (×, MiB, µs).
    ///   - sizes: Where it is checked: the largest size measured (the default), or every size from one up.
    public init(_ title: String, _ measure: Measure, atMost limit: Double, sizes: Sizes = .largest) {
        self.title = title
        self.measure = measure
        self.limit = limit
        self.sizes = sizes
    }

    /// A generated store comes within a few percent of the size asked: 200 MB asked can weigh 193 MB.
    static let generationFrom: Int64 = 180_000_000

    /// The targets of DESIGN.md that `backstage bench` measures, for the apps whose generation it timed.
    public static func designTargets(generating apps: [String]) -> [BenchTarget] {
        let copy = "relocate · copy → /dev/shm", rename = "relocate · rename"
        return [
            BenchTarget(
                "relocate, same file system: time independent of size", .sizeIndependence(case: rename), atMost: 2),
            BenchTarget(
                "relocate across file systems, against a durable move", .ratio(case: copy, baseline: "mv → /dev/shm"),
                atMost: 1.3),
            BenchTarget(
                "relocate by rename, ≥ 100× faster than the naive row copy",
                .ratio(case: rename, baseline: "naive row copy"), atMost: 0.01),
            BenchTarget(
                "relocate across file systems, ≥ 5× faster than the naive row copy",
                .ratio(case: copy, baseline: "naive row copy → /dev/shm"), atMost: 0.2),
            BenchTarget("relocate by rename: memory flat", .peakMemory(case: rename), atMost: 64),
            BenchTarget("relocate across file systems: memory flat", .peakMemory(case: copy), atMost: 64),
            BenchTarget("needsUpgrade with nothing pending", .launchCheck, atMost: 10),
            BenchTarget("split a store", .ratio(case: "split", baseline: "VACUUM INTO"), atMost: 1.5),
            BenchTarget(
                "export zip on every core", .ratio(case: "export zip (deflate 6)", baseline: "bsdtar zip (deflate 6)"),
                atMost: 0.6),
            BenchTarget("export zip: memory bounded", .peakMemory(case: "export zip (deflate 6)"), atMost: 64),
            BenchTarget(
                "export tar.gz on every core", .ratio(case: "export tar.gz", baseline: "tar -I pigz"), atMost: 1.0),
            BenchTarget("export tar.gz: memory bounded", .peakMemory(case: "export tar.gz"), atMost: 64),
            BenchTarget(
                "export tar.zst with its defaults", .ratio(case: "export tar.zst", baseline: "tar -I 'zstd -T0'"),
                atMost: 1.0),
            BenchTarget("import", .ratio(case: "import tar.gz", baseline: "bsdtar -xf"), atMost: 1.2),
        ]
            + apps.map { app in
                BenchTarget(
                    "generate \(app) at the shell's speed",
                    .ratio(case: "generate · \(app)", baseline: "sqlite3 shell · \(app)"),
                    atMost: 2, sizes: .from(bytes: generationFrom))
            }
    }

    /// A target checked at one size: the value measured, and whether it meets the limit.
    public struct Check: Sendable, Hashable, Codable {
        /// The target checked.
        public var target: BenchTarget
        /// The size of the data, in bytes; nil for the launch check.
        public var bytes: Int64?
        /// The measured value (a ratio, MiB or µs); nil when the run did not measure it.
        public var value: Double?
        /// nil when the run did not measure it (a tool missing, sizes too small, one size only).
        public var met: Bool?

        /// "1.07×", "51 MB", "7.2 µs", or "not measured".
        public var measured: String {
            guard let value else { return "not measured" }
            return Self.format(value, target.measure)
        }

        /// The limit in the same unit: "≤ 1.3×".
        public var limit: String { "≤ " + Self.format(target.limit, target.measure) }

        static func format(_ value: Double, _ measure: Measure) -> String {
            switch measure {
            case .ratio, .sizeIndependence: String(format: value < 0.1 ? "%.3f×" : "%.2f×", value)
            case .peakMemory: String(format: "%.0f MB", value)
            case .launchCheck: String(format: "%.1f µs", value)
            }
        }

        /// "✓", "✗" or "–".
        public var mark: String { met.map { $0 ? "✓" : "✗" } ?? "–" }
    }
}

extension BenchReport {
    /// The apps whose fixture generation this run timed (`generate · NAME`), in run order.
    var generatedApps: [String] {
        results.filter { $0.kind == .backstage && $0.name.hasPrefix("generate · ") }
            .map { String($0.name.dropFirst("generate · ".count)) }
            .reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
    }

    /// Every design target this run measured, each checked at its sizes. A target the run could not
    /// measure is listed with `met == nil`, so a missing tool never reads as a target met.
    public var targets: [BenchTarget.Check] {
        BenchTarget.designTargets(generating: generatedApps).flatMap(check)
    }

    /// The targets measured and missed.
    public var missedTargets: [BenchTarget.Check] { targets.filter { $0.met == false } }

    private func check(_ target: BenchTarget) -> [BenchTarget.Check] {
        func verdict(_ value: Double?, bytes: Int64?) -> BenchTarget.Check {
            BenchTarget.Check(target: target, bytes: bytes, value: value, met: value.map { $0 <= target.limit })
        }
        func measured(_ name: String) -> [BenchResult] {
            results.filter { $0.name == name }.sorted { $0.bytes < $1.bytes }
        }
        switch target.measure {
        case .launchCheck:
            return [verdict(needsUpgradeMicroseconds > 0 ? needsUpgradeMicroseconds : nil, bytes: nil)]
        case .peakMemory(let name):
            guard let largest = measured(name).last, largest.peakBytes > 0 else { return [verdict(nil, bytes: nil)] }
            return [verdict(Double(largest.peakBytes) / Double(1 << 20), bytes: largest.bytes)]
        case .sizeIndependence(let name):
            let runs = measured(name)
            guard let smallest = runs.first, let largest = runs.last, largest.bytes > smallest.bytes,
                smallest.seconds > 0
            else {
                return [verdict(nil, bytes: runs.last?.bytes)]
            }
            return [verdict(largest.seconds / smallest.seconds, bytes: largest.bytes)]
        case .ratio(let name, let baseline):
            let pairs = ratios.filter { $0.name == name && $0.baseline == baseline }.sorted { $0.bytes < $1.bytes }
            let checked: [BenchReport.Ratio] =
                switch target.sizes {
                case .largest: pairs.last.map { [$0] } ?? []
                case .from(let bytes): pairs.filter { $0.bytes >= bytes }
                }
            if checked.isEmpty { return [verdict(nil, bytes: nil)] }
            return checked.map { verdict($0.ratio, bytes: $0.bytes) }
        }
    }

    /// " debug" after a figure measured on a debug build.
    private var debugMark: String { debugBuild == true ? " debug" : "" }

    /// The targets as Markdown: one row per target and size.
    var targetsMarkdown: [String] {
        ["| target | at | measured | limit | met |", "|---|---|---|---|---|"]
            + targets.map { check in
                "| \(check.target.title) | \(check.bytes.map(Self.size) ?? "—") | \(check.measured)\(check.met == nil ? "" : debugMark) | \(check.limit) | \(check.mark) |"
            }
    }

    /// The targets for a terminal, and a count of those met.
    var targetsTable: [String] {
        let checks = targets
        let measured = checks.filter { $0.met != nil }
        var lines = [
            "targets: \(measured.filter { $0.met == true }.count) of \(measured.count) met"
                + (measured.count < checks.count ? " (\(checks.count - measured.count) not measured)" : "")
        ]
        for check in checks {
            let at = check.bytes.map { " at " + Self.size($0) } ?? ""
            lines.append(
                "  \(check.mark) \(check.target.title): \(check.measured)\(check.met == nil ? "" : debugMark)\(at) (\(check.limit))"
            )
        }
        return lines
    }
}
