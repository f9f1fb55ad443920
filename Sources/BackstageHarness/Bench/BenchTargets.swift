import Foundation

/// A performance target of Backstage's design, checked against the figures of one bench run.
///
/// A target is a limit on a ratio measured in that run — Backstage's case against the baseline a
/// user would pick instead, on the same data, side by side — checked warm and cold, or on a figure
/// of Backstage's own (its peak memory). Ratios are checked at the largest size the case and its
/// baseline were measured at, where the start of a process (about 30 ms) no longer dominates.
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

    /// The cases and baselines the targets compare, as `backstage bench` names them.
    public enum Name {
        public static let launchCheck = "needsUpgrade · nothing pending"
        /// The system calls the launch check cannot avoid: one `readlink` of the launch record and
        /// one `lstat` per folder it watches, in the same loop.
        public static let launchCheckCalls = "readlink + lstat per watched folder"
        public static let relocateCopy = "relocate · copy → /dev/shm"
        public static let relocateRename = "relocate · rename"
        public static let durableMove = "cp + fsync + rm + fsync → /dev/shm"
        public static let split = "split"
        public static let vacuumInto = "VACUUM INTO + fsync"
        public static let migrate = "migrate schema"
        public static let migrateShell = "sqlite3 shell, synchronous=FULL"
        public static let zip = "export zip (deflate 6)"
        public static let bsdtarZip = "bsdtar zip (deflate 6)"
        public static let zipIncompressible = "export zip · incompressible"
        public static let copyIncompressible = "cp + fsync · incompressible"
        public static let tarGz = "export tar.gz"
        public static let pigz = "tar -I pigz"
        public static let tarZst = "export tar.zst"
        public static let zstd = "tar -I 'zstd -T0'"
        public static func generate(_ app: String) -> String { "generate · \(app)" }
        public static func generateShell(_ app: String) -> String { "sqlite3 shell · \(app)" }
    }

    /// The targets of issue 31's table ("raised to the limit"), each a ratio measured side by side
    /// in one run, warm and cold, and the memory bounds, for the apps whose generation it timed.
    public static func designTargets(generating apps: [String]) -> [BenchTarget] {
        typealias N = Name
        return [
            BenchTarget(
                "needsUpgrade, nothing pending", .ratio(case: N.launchCheck, baseline: N.launchCheckCalls), atMost: 1.5),
            BenchTarget(
                "relocate across file systems", .ratio(case: N.relocateCopy, baseline: N.durableMove), atMost: 1.1),
            BenchTarget("split", .ratio(case: N.split, baseline: N.vacuumInto), atMost: 1.0),
            BenchTarget(
                "schema migration step (journal, lock, migration, checkpoint)",
                .ratio(case: N.migrate, baseline: N.migrateShell), atMost: 1.1),
        ]
            + apps.map { app in
                BenchTarget(
                    "generate \(app)", .ratio(case: N.generate(app), baseline: N.generateShell(app)), atMost: 1.2)
            }
            + [
                BenchTarget("export zip", .ratio(case: N.zip, baseline: N.bsdtarZip), atMost: 0.5),
                BenchTarget(
                    "export zip of incompressible files",
                    .ratio(case: N.zipIncompressible, baseline: N.copyIncompressible),
                    atMost: 1.2),
                BenchTarget("export tar.gz", .ratio(case: N.tarGz, baseline: N.pigz), atMost: 0.9),
                BenchTarget("export tar.zst", .ratio(case: N.tarZst, baseline: N.zstd), atMost: 0.9),
                BenchTarget("relocate by rename: memory flat", .peakMemory(case: N.relocateRename), atMost: 64),
                BenchTarget("relocate across file systems: memory flat", .peakMemory(case: N.relocateCopy), atMost: 64),
                BenchTarget("export zip: memory bounded", .peakMemory(case: N.zip), atMost: 64),
                BenchTarget("export tar.gz: memory bounded", .peakMemory(case: N.tarGz), atMost: 64),
            ]
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
        /// For a ratio: the cache its runs started with; nil for memory.
        public var cache: BenchCache?
        /// For a ratio: the smallest and largest ratio of a run, `value` being their median.
        public var low: Double?
        public var high: Double?

        /// "1.07×", or "1.07× (0.98–1.10)" with the spread over the runs.
        public var measuredWithSpread: String {
            guard let low, let high, high > low, value != nil else { return measured }
            return measured + " (" + Self.format(low, target.measure).dropLast() + "–"
                + Self.format(high, target.measure) + ")"
        }

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
        func verdict(_ value: Double?, bytes: Int64?, cache: BenchCache? = nil) -> BenchTarget.Check {
            BenchTarget.Check(
                target: target, bytes: bytes, value: value, met: value.map { $0 <= target.limit }, cache: cache)
        }
        func measured(_ name: String) -> [BenchResult] {
            results.filter { $0.name == name }.sorted { $0.bytes < $1.bytes }
        }
        switch target.measure {
        case .launchCheck:
            return [verdict(needsUpgradeMicroseconds > 0 ? needsUpgradeMicroseconds : nil, bytes: nil)]
        case .peakMemory(let name):
            guard let largest = measured(name).last, largest.peakBytes > 0 else { return [verdict(nil, bytes: nil)] }
            let peak = measured(name).filter { $0.bytes == largest.bytes }.map(\.peakBytes).max() ?? 0
            return [verdict(Double(peak) / Double(1 << 20), bytes: largest.bytes)]
        case .sizeIndependence(let name):
            let runs = measured(name).filter { $0.cache == .warm }
            guard let smallest = runs.first, let largest = runs.last, largest.bytes > smallest.bytes,
                smallest.seconds > 0
            else {
                return [verdict(nil, bytes: runs.last?.bytes)]
            }
            return [verdict(largest.seconds / smallest.seconds, bytes: largest.bytes)]
        case .ratio(let name, let baseline):
            let pairs = ratios.filter { $0.name == name && $0.baseline == baseline }
            let sizes: [Int64] =
                switch target.sizes {
                case .largest: pairs.map(\.bytes).max().map { [$0] } ?? []
                case .from(let bytes): Set(pairs.map(\.bytes).filter { $0 >= bytes }).sorted()
                }
            if sizes.isEmpty { return BenchCache.allCases.map { verdict(nil, bytes: nil, cache: $0) } }
            return sizes.flatMap { bytes in
                // The launch check is timed in process, at no size.
                let at = bytes == 0 ? nil : bytes
                return BenchCache.allCases.map { cache in
                    guard let pair = pairs.first(where: { $0.bytes == bytes && $0.cache == cache }) else {
                        return verdict(nil, bytes: at, cache: cache)
                    }
                    var check = verdict(pair.ratio, bytes: at, cache: cache)
                    check.low = pair.low
                    check.high = pair.high
                    return check
                }
            }
        }
    }

    /// The checks of one target at one size: its warm and cold checks (one check for memory).
    var targetRows: [[BenchTarget.Check]] {
        var rows: [[BenchTarget.Check]] = []
        for check in targets {
            if let index = rows.firstIndex(where: { $0[0].target == check.target && $0[0].bytes == check.bytes }) {
                rows[index].append(check)
            } else {
                rows.append([check])
            }
        }
        return rows
    }

    /// A row's mark: ✗ when any check missed, ✓ when every check measured met, – when none was measured.
    static func mark(_ row: [BenchTarget.Check]) -> String {
        let measured = row.compactMap(\.met)
        return measured.isEmpty ? "–" : measured.allSatisfy { $0 } ? "✓" : "✗"
    }

    /// " debug" after a figure measured on a debug build.
    private var debugMark: String { debugBuild == true ? " debug" : "" }

    /// One cache's figure of a row: "0.95× (0.93–0.99)", "not measured", or why cold is not available.
    private func figure(_ row: [BenchTarget.Check], _ cache: BenchCache?) -> String {
        guard let check = row.first(where: { $0.cache == cache }) else { return "—" }
        if check.value == nil, cache == .cold, let coldUnavailable { return "not available (\(coldUnavailable))" }
        return check.measuredWithSpread + (check.met == nil ? "" : debugMark)
    }

    /// The targets as Markdown: one row per target and size, warm and cold side by side.
    var targetsMarkdown: [String] {
        [
            "| target | at | warm: median (min–max) | cold: median (min–max) | limit | met |",
            "|---|---|---|---|---|---|",
        ]
            + targetRows.map { row in
                let memory = row[0].cache == nil
                return "| \(row[0].target.title) | \(row[0].bytes.map(Self.size) ?? "—") | "
                    + "\(figure(row, memory ? nil : .warm)) | \(memory ? "—" : figure(row, .cold)) | \(row[0].limit) | "
                    + "\(Self.mark(row)) |"
            }
    }

    /// The targets for a terminal, and a count of those met.
    var targetsTable: [String] {
        let rows = targetRows
        let measured = rows.filter { Self.mark($0) != "–" }
        var lines = [
            "targets: \(measured.filter { Self.mark($0) == "✓" }.count) of \(measured.count) met, warm and cold"
                + (measured.count < rows.count ? " (\(rows.count - measured.count) not measured)" : "")
        ]
        for row in rows {
            let at = row[0].bytes.map { " at " + Self.size($0) } ?? ""
            let figures =
                row[0].cache == nil
                ? figure(row, nil) : "warm \(figure(row, .warm)), cold \(figure(row, .cold))"
            lines.append("  \(Self.mark(row)) \(row[0].target.title)\(at): \(figures) (\(row[0].limit))")
        }
        return lines
    }
}
