import Backstage
import Foundation

/// Times an app's own upgrade chain, step by step, at each size: how long each step of each plan
/// takes on a generated container of the `from` version, what `Upgrader`'s estimate said
/// beforehand, and where the chain lands at 1 GB and 10 GB against the launch budget.
///
/// Each step runs as `backstage upgrade` in a child process (its own peak memory), on a fresh
/// copy of the same fixture every run; medians are reported.
public struct ChainBench {
    public var executable: URL
    public var catalog: CatalogFolder
    public var from: String
    public var to: String
    public var sizes: [Int64]
    public var runs: Int
    /// Where fixtures are generated (removed by the caller).
    public var workspace: URL
    public var budget = Upgrader.defaultBudget
    /// Called before each step with what it is, for progress.
    public var log: (String) -> Void = { _ in }
    /// Called before each timed step with the steps timed so far, the steps to time in all and
    /// what it is, for a progress line with the time left.
    public var progress: (_ done: Int, _ total: Int, _ what: String) -> Void = { _, _, _ in }

    public init(
        executable: URL, catalog: CatalogFolder, from: String, to: String, sizes: [Int64], runs: Int = 3, workspace: URL
    ) {
        self.executable = executable
        self.catalog = catalog
        self.from = from
        self.to = to
        self.sizes = sizes
        self.runs = max(1, runs)
        self.workspace = workspace
    }

    public func run() throws -> ChainBenchReport {
        let chain = try catalog.chain(from: from, to: to)
        // One plan file per step, so each is timed on its own.
        let stepsFolder = workspace.appending(path: "steps")
        try FileManager.default.createDirectory(at: stepsFolder, withIntermediateDirectories: true)
        var steps: [(plan: String, index: Int, file: URL, single: UpgradePlan)] = []
        for (plan, _) in chain {
            for (index, step) in plan.steps.enumerated() {
                let single = UpgradePlan(name: "\(plan.name) step \(index + 1)", steps: [step])
                let file = stepsFolder.appending(path: "\(steps.count).json")
                try JSONEncoder().encode(single).write(to: file)
                steps.append((plan.name, index, file, single))
            }
        }
        var results: [ChainBenchReport.Step] = []
        let start = try processStart()
        var timed = 0
        for size in sizes {
            let pristine = workspace.appending(path: "fixture-\(size)")
            log("generating \(formatBytes(size)) of \(catalog.manifest.app) \(from)")
            try FixtureGenerator(executable: executable, catalog: catalog).generate(
                FixtureSpec(layout: from, size: size, state: .clean, seed: 1), at: pristine)
            var samples = Array(repeating: [Double](), count: steps.count)
            var estimates = Array(repeating: [Double](), count: steps.count)
            var bytes = Array(repeating: Int64(0), count: steps.count)
            var peaks = Array(repeating: Int64(0), count: steps.count)
            var baselines = Array(repeating: [Double](), count: steps.count)
            var skipped = Array(repeating: String?.none, count: steps.count)
            for run in 1...runs {
                let root = workspace.appending(path: "run")
                try? FileManager.default.removeItem(at: root)
                let copied = try ChildProcess.run(URL(filePath: "/bin/cp"), ["-a", pristine.path, root.path])
                guard copied.status == 0 else {
                    throw BenchError(message: "copying the fixture failed: \(copied.stderr)")
                }
                let upgrader = Upgrader(container: catalog.container(at: root))
                for (index, step) in steps.enumerated() {
                    log("run \(run)/\(runs) at \(formatBytes(size)): \(step.single.name)")
                    progress(
                        timed, sizes.count * runs * steps.count,
                        "run \(run)/\(runs) at \(formatBytes(size)): \(step.single.name)")
                    timed += 1
                    let estimate = upgrader.estimate(step.single, budget: budget)
                    // A Core Data migration's plain SQL runs on a copy of the same store, as it is now.
                    let migration = step.single.steps[0].as(UpgradeStep.CoreDataMigration.self)
                    let baselineCopy = try migration.map {
                        try PlainSQLBaseline.copy(
                            StoreFileSet(main: $0.store.url(in: catalog.container(at: root))),
                            into: workspace.appending(path: "baseline"))
                    }
                    let measured = try ChildProcess.measure(
                        executable, ["upgrade", root.path, "--plan", step.file.path, "--json"], environment: nil,
                        capturingOutput: true)
                    guard measured.status == 0 else {
                        throw BenchError(message: "\(step.single.name) failed: \(measured.stderr)")
                    }
                    // A step that found nothing to do measured nothing: said, never shown as its time.
                    let decoder = JSONDecoder()
                    decoder.dateDecodingStrategy = .iso8601
                    let ran = try decoder.decode([UpgradeReport].self, from: Data(measured.stdout.utf8))
                    if let outcome = ran.first?.steps.first, outcome.outcome == .skipped {
                        skipped[index] = outcome.reason ?? "skipped"
                    }
                    // What the app waits: the step, not the start of the process that ran it.
                    samples[index].append(max(0, measured.seconds - start))
                    estimates[index].append(estimate.seconds)
                    bytes[index] = max(bytes[index], estimate.bytes)
                    peaks[index] = max(peaks[index], measured.peakBytes)
                    if let migration, let baselineCopy {
                        baselines[index].append(
                            try PlainSQLBaseline.seconds(of: migration.program, onStoreAt: baselineCopy))
                        try? FileManager.default.removeItem(at: baselineCopy.deletingLastPathComponent())
                    }
                }
            }
            for (index, step) in steps.enumerated() {
                var result = ChainBenchReport.Step(
                    size: size, plan: step.plan, index: step.index + 1, step: step.single.steps[0].description,
                    bytes: bytes[index], seconds: samples[index].median, estimate: estimates[index].median,
                    peakBytes: peaks[index])
                result.fastest = samples[index].min()
                result.slowest = samples[index].max()
                result.skipped = skipped[index]
                if !baselines[index].isEmpty, skipped[index] == nil {
                    result.baselineSeconds = baselines[index].median
                    result.baseline = PlainSQLBaseline.label
                }
                results.append(result)
            }
        }
        var report = ChainBenchReport(
            app: catalog.manifest.app, from: from, to: to, machine: BenchRunner.machine(), date: Date(), budget: budget,
            steps: results)
        report.processStart = start
        report.runs = runs
        return report
    }

    /// Median seconds of a `backstage upgrade` with nothing to do (an empty container, an empty
    /// plan): the process start every measured step includes, and the app's own upgrade does not.
    private func processStart() throws -> Double {
        let root = workspace.appending(path: "process-start")
        try? FileManager.default.removeItem(at: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let plan = root.appending(path: "empty.json")
        try JSONEncoder().encode(UpgradePlan(name: "empty", steps: [])).write(to: plan)
        var samples: [Double] = []
        for _ in 0..<5 {
            let measured = try ChildProcess.measure(
                executable, ["upgrade", root.path, "--plan", plan.path], environment: nil)
            guard measured.status == 0 else { throw BenchError(message: "an empty upgrade failed: \(measured.stderr)") }
            samples.append(measured.seconds)
        }
        return samples.median
    }
}

/// The times of an app's upgrade chain, per step and size, with the estimates made beforehand.
public struct ChainBenchReport: Sendable, Hashable, Codable {
    public struct Step: Sendable, Hashable, Codable {
        /// The fixture's size.
        public var size: Int64
        public var plan: String
        /// The step's number in its plan, from 1.
        public var index: Int
        public var step: String
        /// The bytes the step reads or writes, as the estimate counts them.
        public var bytes: Int64
        /// Median wall time of the step, the start of the process that ran it taken off.
        public var seconds: Double
        /// What `Upgrader/estimate(_:budget:)` said before it ran.
        public var estimate: Double
        /// The fastest and the slowest run of the step, the start of the process taken off.
        public var fastest: Double?
        public var slowest: Double?

        public init(
            size: Int64, plan: String, index: Int, step: String, bytes: Int64, seconds: Double, estimate: Double,
            peakBytes: Int64
        ) {
            self.size = size
            self.plan = plan
            self.index = index
            self.step = step
            self.bytes = bytes
            self.seconds = seconds
            self.estimate = estimate
            self.peakBytes = peakBytes
        }
        /// Peak resident memory of the `backstage upgrade` that ran it.
        public var peakBytes: Int64
        /// Why the step had nothing to do in a run (its time is then that of finding so, not of its
        /// work); nil when it did its work in every run.
        public var skipped: String?
        /// For a Core Data migration: the median time of the same table rewrites in plain SQL on a
        /// copy of the same store (``baseline`` says how they ran), the target being ≤ 1.1× of it.
        public var baselineSeconds: Double?
        public var baseline: String?

        /// The step's time over its plain SQL baseline's.
        public var baselineRatio: Double? {
            guard let baselineSeconds, baselineSeconds > 0 else { return nil }
            return seconds / baselineSeconds
        }
    }

    /// A Core Data migration's plain SQL baseline: Backstage's step within 1.1× of it.
    public static let baselineTarget = 1.1

    /// One line per step timed beside a plain SQL baseline.
    var baselineLines: [String] {
        steps.compactMap { step in
            guard let baseline = step.baselineSeconds, let ratio = step.baselineRatio else { return nil }
            return "\(formatBytes(step.size)) \(step.label): \(time(step.seconds)), \(step.baseline ?? "plain SQL") "
                + "\(time(baseline)), ratio \(String(format: "%.2f", ratio))× (target ≤ \(Self.baselineTarget)×"
                // A debug build's ratio is listed, not judged: its Swift is slower, its SQLite is not.
                + (debugBuild == true
                    ? "; a debug build's figure, not judged)" : ratio <= Self.baselineTarget ? ", met)" : ", missed)")
        }
    }

    public var app: String
    public var from: String
    public var to: String
    public var machine: String
    public var date: Date
    public var budget: Double
    public var steps: [Step]
    /// The start of a `backstage upgrade` process, taken off every step's time (seconds).
    public var processStart: Double?
    /// Runs per step and size; each time is their median.
    public var runs: Int?
    /// Whether the `backstage` that ran the steps was a debug build: every figure then says so.
    public var debugBuild: Bool?

    public init(app: String, from: String, to: String, machine: String, date: Date, budget: Double, steps: [Step]) {
        self.app = app
        self.from = from
        self.to = to
        self.machine = machine
        self.date = date
        self.budget = budget
        self.steps = steps
    }

    /// The target on the Upgrader's estimate: the chain's estimate within ±30 % of its measured time,
    /// for stores of 10 MB to 1 GB. A size outside that range, or a chain under 50 ms (too short for
    /// a ratio to mean anything), is not judged, and says so.
    public struct EstimateCheck: Sendable, Hashable, Codable {
        public var size: Int64
        public var estimate: Double
        public var actual: Double
        /// Estimate over actual.
        public var ratio: Double
        /// nil when not judged (``reason`` says why).
        public var met: Bool?
        public var reason: String?
    }

    /// The estimate's target checked at each size measured.
    public var estimateChecks: [EstimateCheck] {
        Set(steps.map(\.size)).sorted().map { size in
            let actual = total(at: size)
            let estimate = steps.filter { $0.size == size }.reduce(0) { $0 + $1.estimate }
            let ratio = actual > 0 ? estimate / actual : 0
            var check = EstimateCheck(size: size, estimate: estimate, actual: actual, ratio: ratio)
            if size < 10_000_000 || size > 1_000_000_000 {
                check.reason = "the target covers 10 MB to 1 GB"
            } else if actual < 0.05 {
                check.reason = "under 50 ms: too short to judge"
            } else {
                check.met = (0.7...1.3).contains(ratio)
            }
            return check
        }
    }

    /// What the chain's estimate line says of the target at `size`.
    func estimateVerdict(at size: Int64) -> String {
        guard let check = estimateChecks.first(where: { $0.size == size }) else { return "" }
        if debugBuild == true, check.met != nil { return "; a debug build's figure, not judged against ±30 %" }
        switch check.met {
        case true?: return "; within ±30 %"
        case false?: return "; outside ±30 %: the estimate's target is missed"
        case nil: return "; not judged: \(check.reason ?? "")"
        }
    }

    /// The whole chain's median time at `size`.
    public func total(at size: Int64) -> Double { steps.filter { $0.size == size }.reduce(0) { $0 + $1.seconds } }

    /// The chain's time projected to `bytes` (see ``projected(to:)``) with its spread: the lowest and
    /// the highest projection from the slope between any two sizes measured, with the fit's fixed
    /// cost (from one size: the fastest and slowest run's throughput instead).
    public func projectionSpread(to bytes: Int64) -> (low: Double, high: Double) {
        let sizes = Set(steps.map(\.size)).sorted()
        let fit = projected(to: bytes)
        guard sizes.count >= 2 else {
            guard let size = sizes.first, size > 0 else { return (fit, fit) }
            let mine = steps.filter { $0.size == size }
            let fastest = mine.reduce(0) { $0 + ($1.fastest ?? $1.seconds) }
            let slowest = mine.reduce(0) { $0 + ($1.slowest ?? $1.seconds) }
            return (fastest / Double(size) * Double(bytes), slowest / Double(size) * Double(bytes))
        }
        let fixed = max(0, fit - slope * Double(bytes))
        var projections: [Double] = []
        for (index, first) in sizes.enumerated() {
            for second in sizes[(index + 1)...] {
                let pairSlope = (total(at: second) - total(at: first)) / Double(second - first)
                if pairSlope > 0 { projections.append(fixed + pairSlope * Double(bytes)) }
            }
        }
        return (min(projections.min() ?? fit, fit), max(projections.max() ?? fit, fit))
    }

    /// The slope of the fit, in seconds per byte.
    var slope: Double { max(0, projected(to: 2_000_000_000) - projected(to: 1_000_000_000)) / 1e9 }

    /// Whether the chain took longer at the largest size than at the smallest.
    var growsWithSize: Bool {
        let sizes = Set(steps.map(\.size)).sorted()
        guard let first = sizes.first, let last = sizes.last else { return false }
        return total(at: last) > total(at: first)
    }

    /// The largest size measured.
    public var largestSize: Int64 { steps.map(\.size).max() ?? 0 }

    /// "1 GB: 1.62 s (1.40 s–1.90 s between the sizes measured), 100× past the 10 MB measured: an
    /// extrapolation — within the 20 s launch budget".
    func projectionLine(at target: Int64) -> String {
        let seconds = projected(to: target)
        let spread = projectionSpread(to: target)
        var text = "\(formatBytes(target)): \(time(seconds))"
        if spread.high > spread.low * 1.0001 {
            text += " (\(time(spread.low))–\(time(spread.high)) between the sizes measured)"
        }
        if Set(steps.map(\.size)).count >= 2, !growsWithSize {
            text += ", the times measured do not grow with the size: measure larger sizes"
        }
        let reach = Double(target) / Double(max(largestSize, 1))
        if reach > 10 {
            text +=
                ", \(String(format: "%.0f", reach))× past the \(formatBytes(largestSize)) measured: an extrapolation"
        }
        return text + " — "
            + (seconds <= budget
                ? "within the \(String(format: "%g", budget)) s launch budget"
                : "over the \(String(format: "%g", budget)) s launch budget: run the upgrade behind a progress screen, off the launch path")
    }

    /// A time as printed, with "debug" after it when the build was a debug build.
    func time(_ seconds: Double) -> String { BenchReport.time(seconds) + (debugBuild == true ? " debug" : "") }

    /// Estimate over actual, or "—" when either is under 1 ms.
    func accuracy(estimate: Double, actual: Double) -> String {
        guard let ratio = BenchReport.ratioText(estimate, actual) else { return "—" }
        return ratio + (debugBuild == true ? " debug" : "")
    }

    /// The chain's time projected to `bytes`: a straight line `fixed + perByte × size` fitted to the
    /// sizes measured (least squares; through the origin when only one size was measured), so a
    /// step's fixed cost, such as starting a process, is not multiplied by the size.
    public func projected(to bytes: Int64) -> Double {
        let points = Set(steps.map(\.size)).sorted().map { (Double($0), total(at: $0)) }
        guard let last = points.last, last.0 > 0 else { return 0 }
        var perByte = last.1 / last.0
        var fixed = 0.0
        if points.count >= 2 {
            let n = Double(points.count)
            let mx = points.reduce(0) { $0 + $1.0 } / n
            let my = points.reduce(0) { $0 + $1.1 } / n
            let sxx = points.reduce(0) { $0 + ($1.0 - mx) * ($1.0 - mx) }
            let sxy = points.reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) }
            if sxx > 0, sxy > 0 {
                perByte = sxy / sxx
                fixed = max(0, my - perByte * mx)
            }
        }
        return fixed + perByte * Double(bytes)
    }

    /// The table printed on a terminal: step names whole, the column as wide as the longest.
    public var table: String {
        var lines = ["\(app) \(from) → \(to), per step (median of runs), on \(machine)"]
        if debugBuild == true {
            lines.append("  a debug build: every time below is slower than a release build's, and says \"debug\"")
        }
        let width = max(4, steps.map { $0.label.count }.max() ?? 0)
        let timeWidth = debugBuild == true ? 16 : 10
        func pad(_ text: String, _ count: Int) -> String {
            text.padding(toLength: max(count, text.count), withPad: " ", startingAt: 0)
        }
        lines.append(
            "  "
                + [
                    pad("size", 8), pad("step", width), pad("time", timeWidth), pad("estimate", timeWidth),
                    pad("est/actual", debugBuild == true ? 16 : 10), "peak RSS",
                ]
                .joined(separator: "  "))
        for step in steps {
            lines.append(
                "  "
                    + [
                        pad(formatBytes(step.size), 8), pad(step.label, width), pad(time(step.seconds), timeWidth),
                        pad(BenchReport.time(step.estimate), timeWidth),
                        pad(accuracy(estimate: step.estimate, actual: step.seconds), debugBuild == true ? 16 : 10),
                        formatBytes(step.peakBytes),
                    ].joined(separator: "  "))
            if let skipped = step.skipped {
                lines.append("  " + pad("", 8) + "  skipped, nothing measured: \(skipped)")
            }
        }
        for size in Set(steps.map(\.size)).sorted() {
            let actual = total(at: size)
            let estimate = steps.filter { $0.size == size }.reduce(0) { $0 + $1.estimate }
            lines.append(
                "  chain at \(formatBytes(size)): \(time(actual)), estimated \(BenchReport.time(estimate))"
                    + (actual >= 0.001
                        ? " (\(accuracy(estimate: estimate, actual: actual))\(estimateVerdict(at: size)))" : ""))
        }
        for line in baselineLines { lines.append("  beside plain SQL: " + line) }
        if let processStart {
            lines.append(
                "  times leave out the start of the backstage process that ran each step (\(time(processStart)))")
        }
        for target in [Int64(1_000_000_000), 10_000_000_000] {
            lines.append("  projected at " + projectionLine(at: target))
        }
        return lines.joined(separator: "\n")
    }

    /// The same as Markdown: a table of the steps, the chain's totals and its projections.
    public var markdown: String {
        var lines: [String] = []
        if debugBuild == true {
            lines += [
                "**A debug build**: every measured time below is slower than a release build's, and says \"debug\" "
                    + "(the estimates are the model's, not measured).", "",
            ]
        }
        lines += [
            "\(app) \(from) → \(to), per step (median of runs), on \(machine)", "",
            "| size | step | time | estimate | est/actual | peak RSS |", "|---|---|---|---|---|---|",
        ]
        for step in steps {
            let name = step.label.replacingOccurrences(of: "|", with: "\\|")
            lines.append(
                "| \(formatBytes(step.size)) | \(name) | \(time(step.seconds)) | \(BenchReport.time(step.estimate)) | "
                    + "\(accuracy(estimate: step.estimate, actual: step.seconds)) | \(formatBytes(step.peakBytes)) |")
        }
        for step in steps {
            if let skipped = step.skipped {
                lines += ["", "\(formatBytes(step.size)) \(step.label) was skipped, nothing measured: \(skipped)"]
            }
        }
        lines.append("")
        for line in baselineLines { lines.append("- beside plain SQL: " + line) }
        for size in Set(steps.map(\.size)).sorted() {
            lines.append("- chain at \(formatBytes(size)): \(time(total(at: size)))")
        }
        for target in [Int64(1_000_000_000), 10_000_000_000] {
            lines.append("- projected at " + projectionLine(at: target))
        }
        return lines.joined(separator: "\n")
    }
}

extension ChainBenchReport.Step {
    /// "v2-to-v3 #1: migrate (…)", whole.
    public var label: String { "\(plan) #\(index): \(step)" }
}
