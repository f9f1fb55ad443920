import Foundation

/// What ``ScalingBench`` measured: time per file and peak RSS of each operation on each tree,
/// the large store's operations, and the targets checked on these figures.
public struct ScalingReport: Codable, Sendable {
    /// Peak RSS no operation may pass, at any size.
    public static let memoryLimit: Int64 = 64 << 20
    /// Time per file at the largest tree over that at the smallest, at most.
    public static let growthLimit = 1.5

    public struct TreeRow: Codable, Sendable, Equatable {
        public var shape: ScalingTree.Shape
        public var files: Int
        public var operation: String
        public var seconds: Double
        /// The child's peak resident memory.
        public var peakBytes: Int64
        /// The cache the run started with; nil in reports before the trees were timed cold, whose
        /// runs were warm only as far as the tree was still cached.
        public var cache: BenchCache?
        /// What the child read from the disk: near 0 for a warm run the page cache served whole.
        /// Nil in reports before it was measured.
        public var diskReadBytes: Int64?
        public var microsecondsPerFile: Double { seconds * 1e6 / Double(max(files, 1)) }

        public init(shape: ScalingTree.Shape, files: Int, operation: String, seconds: Double, peakBytes: Int64) {
            self.shape = shape
            self.files = files
            self.operation = operation
            self.seconds = seconds
            self.peakBytes = peakBytes
        }
    }

    /// One operation on the large store: Backstage's median time and peak, and when the operation
    /// has a baseline, the baseline's, timed in the same run on the same prepared input, alternating
    /// run by run. Reports written before the baselines were timed have none of the baseline's fields.
    public struct StoreRow: Codable, Sendable, Equatable {
        public var operation: String
        public var bytes: Int64
        /// The median of the runs.
        public var seconds: Double
        public var peakBytes: Int64
        /// The cache every run of both sides started with; nil in reports before it was chosen.
        public var cache: BenchCache?
        /// How many runs of each side; nil in reports of one run before runs were counted.
        public var runs: Int?
        /// The baseline's name, as ``BenchTarget/Name`` has it; nil for an operation without one.
        public var baseline: String?
        /// The baseline's command, as the report shows it: a shell script's text.
        public var baselineCommand: String?
        /// The baseline's median time and peak RSS.
        public var baselineSeconds: Double?
        public var baselinePeakBytes: Int64?
        /// What the baseline was checked to have done, such as "vacuum.sqlite: 4.0 MB".
        public var baselineDid: String?
        /// The median of the runs' ratios, each run's time over the same run's baseline's, and their
        /// smallest and largest.
        public var ratio: Double?
        public var ratioLow: Double?
        public var ratioHigh: Double?

        public init(operation: String, bytes: Int64, seconds: Double, peakBytes: Int64) {
            self.operation = operation
            self.bytes = bytes
            self.seconds = seconds
            self.peakBytes = peakBytes
        }
    }

    /// The design target (``BenchTarget/designTargets(generating:)``, the table the `--sizes` bench
    /// checks) that holds Backstage to the baseline named `baseline`, if any.
    static func designTarget(baseline: String) -> BenchTarget? {
        BenchTarget.designTargets(generating: []).first { target in
            if case .ratio(_, let name) = target.measure { return name == baseline }
            return false
        }
    }

    /// One target checked: what, the figure, and whether it is met.
    public struct Target: Codable, Sendable, Equatable {
        public var name: String
        public var figure: String
        public var met: Bool
    }

    public var date: Date
    public var machine: String
    public var debugBuild = false
    public var trees: [TreeRow] = []
    public var store: [StoreRow] = []
    public var notes: [String] = []

    public init(date: Date, machine: String) {
        self.date = date
        self.machine = machine
    }

    /// Each operation, shape and cache: time per file at the largest tree within ``growthLimit`` of
    /// that at the smallest (when two sizes were measured); every peak within ``memoryLimit``.
    public var targets: [Target] {
        var targets: [Target] = []
        let caches = trees.reduce(into: [BenchCache?]()) { caches, row in
            if !caches.contains(row.cache) { caches.append(row.cache) }
        }
        for cache in caches {
            for shape in ScalingTree.Shape.allCases {
                for operation in ScalingBench.treeOperations {
                    let rows = trees.filter { $0.shape == shape && $0.operation == operation && $0.cache == cache }
                        .sorted { $0.files < $1.files }
                    guard let first = rows.first, let last = rows.last, last.files > first.files else { continue }
                    let growth = last.microsecondsPerFile / max(first.microsecondsPerFile, 1e-9)
                    targets.append(
                        Target(
                            name: "\(operation) · \(shape.rawValue)\(cache.map { ", \($0)" } ?? ""): time per file at "
                                + "\(last.files) over \(first.files)",
                            figure: String(format: "%.2f×", growth), met: growth <= Self.growthLimit))
                }
            }
        }
        targets += storeTargets
        // Backstage's peaks only: a baseline is held to its time, not to Backstage's memory bound.
        let peak = (trees.map(\.peakBytes) + store.map(\.peakBytes)).max() ?? 0
        targets.append(
            Target(
                name: "peak RSS of every operation ≤ \(Self.megabytes(Self.memoryLimit))",
                figure: Self.megabytes(peak), met: peak <= Self.memoryLimit))
        return targets
    }

    /// Each store operation timed against a baseline that a design target names: its median ratio
    /// (with the spread over the runs) within the target's limit.
    var storeTargets: [Target] {
        store.compactMap { row in
            guard let baseline = row.baseline, let ratio = row.ratio,
                let target = Self.designTarget(baseline: baseline)
            else { return nil }
            let cache = row.cache.map { ", \($0)" } ?? ""
            var figure = Self.ratio(ratio)
            if let low = row.ratioLow, let high = row.ratioHigh, high > low {
                figure += " (\(Self.ratio(low).dropLast())–\(Self.ratio(high)))"
            }
            return Target(
                name: "\(target.title) · store of \(BenchReport.size(row.bytes))\(cache): \(row.operation) over "
                    + "\(baseline) ≤ \(Self.ratio(target.limit))",
                figure: figure, met: ratio <= target.limit)
        }
    }

    static func ratio(_ value: Double) -> String { String(format: "%.2f×", value) }

    /// The plain-text tables: one line per tree and operation, the store's, then the targets.
    public var table: String {
        let debug = debugBuild ? " (debug build)" : ""
        var lines = [
            "Scaling\(debug) — \(machine), trees one run each per cache; peak RSS and disk reads of the child process"
        ]
        lines.append(
            pad("shape", 6) + pad("files", 10, right: true) + "  " + pad("cache", 6) + pad("operation", 16)
                + pad("time", 10, right: true) + pad("µs/file", 10, right: true) + pad("peak RSS", 11, right: true)
                + pad("disk read", 11, right: true))
        for row in trees {
            lines.append(
                pad(row.shape.rawValue, 6) + pad("\(row.files)", 10, right: true) + "  "
                    + pad(row.cache?.rawValue ?? "", 6) + pad(row.operation, 16)
                    + pad(String(format: "%.2f s", row.seconds), 10, right: true)
                    + pad(String(format: "%.1f", row.microsecondsPerFile), 10, right: true)
                    + pad(Self.megabytes(row.peakBytes), 11, right: true)
                    + pad(row.diskReadBytes.map(Self.megabytes) ?? "", 11, right: true))
        }
        if !store.isEmpty { lines += [""] + storeTable }
        lines += notes.map { "note: \($0)" }
        lines.append("")
        lines += targets.map { "\($0.met ? "met   " : "MISSED") \($0.name): \($0.figure)" }
        return lines.joined(separator: "\n")
    }

    /// The store's lines: each operation (its cache and runs), then its baseline's time, peak and the ratio.
    private var storeTable: [String] {
        var lines = [
            pad("store", 10) + pad("cache", 6) + pad("operation", 28) + pad("time", 10, right: true)
                + pad("peak RSS", 11, right: true) + "  " + pad("baseline", 36) + pad("time", 10, right: true)
                + pad("peak RSS", 11, right: true) + pad("ratio", 8, right: true)
        ]
        for row in store {
            var line =
                pad(BenchReport.size(row.bytes), 10) + pad(row.cache?.rawValue ?? "", 6) + pad(row.operation, 28)
                + pad(BenchReport.time(row.seconds), 10, right: true)
                + pad(Self.megabytes(row.peakBytes), 11, right: true)
            if let baseline = row.baseline, let seconds = row.baselineSeconds, let ratio = row.ratio {
                line +=
                    "  " + pad(baseline, 36) + pad(BenchReport.time(seconds), 10, right: true)
                    + pad(Self.megabytes(row.baselinePeakBytes ?? 0), 11, right: true)
                    + pad(Self.ratio(ratio), 8, right: true)
                if let low = row.ratioLow, let high = row.ratioHigh, high > low {
                    line += " (\(Self.ratio(low).dropLast())–\(Self.ratio(high)))"
                }
            } else if row.baseline == nil, row.cache != nil {
                line += "  (no baseline target)"
            }
            lines.append(line)
        }
        if let runs = store.compactMap(\.runs).max(), runs > 1 {
            lines.append(
                "\(runs) runs of each side, interleaved: median time, and the median of the runs' ratios (min–max)")
        }
        var shown: Set<String> = []
        for row in store {
            guard let name = row.baseline, let command = row.baselineCommand, shown.insert(name).inserted else {
                continue
            }
            lines.append("baseline \(name): \(command)")
        }
        return lines
    }

    static func megabytes(_ bytes: Int64) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }

    private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let gap = String(repeating: " ", count: max(0, width - text.count))
        return right ? gap + text : text + gap
    }

    enum CodingKeys: String, CodingKey {
        case date, machine, debugBuild, trees, store, notes, targets
    }

    public init(from decoder: Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        date = try values.decode(Date.self, forKey: .date)
        machine = try values.decode(String.self, forKey: .machine)
        debugBuild = try values.decodeIfPresent(Bool.self, forKey: .debugBuild) ?? false
        trees = try values.decode([TreeRow].self, forKey: .trees)
        store = try values.decodeIfPresent([StoreRow].self, forKey: .store) ?? []
        notes = try values.decodeIfPresent([String].self, forKey: .notes) ?? []
    }

    public func encode(to encoder: Encoder) throws {
        var values = encoder.container(keyedBy: CodingKeys.self)
        try values.encode(date, forKey: .date)
        try values.encode(machine, forKey: .machine)
        try values.encode(debugBuild, forKey: .debugBuild)
        try values.encode(trees, forKey: .trees)
        try values.encode(store, forKey: .store)
        try values.encode(notes, forKey: .notes)
        try values.encode(targets, forKey: .targets)
    }
}
