import Backstage
import BackstageFixtures
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

    public init(executable: URL, catalog: CatalogFolder, from: String, to: String, sizes: [Int64], runs: Int = 3, workspace: URL) {
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
        for size in sizes {
            let pristine = workspace.appending(path: "fixture-\(size)")
            log("generating \(formatBytes(size)) of \(catalog.manifest.app) \(from)")
            try FixtureGenerator(executable: executable, catalog: catalog).generate(FixtureSpec(layout: from, size: size, state: .clean, seed: 1), at: pristine)
            var samples = Array(repeating: [Double](), count: steps.count)
            var estimates = Array(repeating: [Double](), count: steps.count)
            var bytes = Array(repeating: Int64(0), count: steps.count)
            var peaks = Array(repeating: Int64(0), count: steps.count)
            for run in 1...runs {
                let root = workspace.appending(path: "run")
                try? FileManager.default.removeItem(at: root)
                let copied = try ChildProcess.run(URL(filePath: "/bin/cp"), ["-a", pristine.path, root.path])
                guard copied.status == 0 else { throw BenchError(message: "copying the fixture failed: \(copied.stderr)") }
                let upgrader = Upgrader(container: catalog.container(at: root))
                for (index, step) in steps.enumerated() {
                    log("run \(run)/\(runs) at \(formatBytes(size)): \(step.single.name)")
                    let estimate = upgrader.estimate(step.single, budget: budget)
                    let measured = try ChildProcess.measure(executable, ["upgrade", root.path, "--plan", step.file.path], environment: nil)
                    guard measured.status == 0 else { throw BenchError(message: "\(step.single.name) failed: \(measured.stderr)") }
                    // What the app waits: the step, not the start of the process that ran it.
                    samples[index].append(max(0, measured.seconds - start))
                    estimates[index].append(estimate.seconds)
                    bytes[index] = max(bytes[index], estimate.bytes)
                    peaks[index] = max(peaks[index], measured.peakBytes)
                }
            }
            for (index, step) in steps.enumerated() {
                results.append(.init(size: size, plan: step.plan, index: step.index + 1, step: step.single.steps[0].description, bytes: bytes[index],
                                     seconds: samples[index].median, estimate: estimates[index].median, peakBytes: peaks[index]))
            }
        }
        var report = ChainBenchReport(app: catalog.manifest.app, from: from, to: to, machine: BenchRunner.machine(), date: Date(), budget: budget, steps: results)
        report.processStart = start
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
            let measured = try ChildProcess.measure(executable, ["upgrade", root.path, "--plan", plan.path], environment: nil)
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
        /// Peak resident memory of the `backstage upgrade` that ran it.
        public var peakBytes: Int64
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

    /// The whole chain's median time at `size`.
    public func total(at size: Int64) -> Double { steps.filter { $0.size == size }.reduce(0) { $0 + $1.seconds } }

    /// The chain's time projected to `bytes`: a straight line `fixed + perByte × size` fitted to the
    /// sizes measured (least squares; through the origin when only one size was measured), so a
    /// step's fixed cost, such as starting a process, is not multiplied by the size.
    public func projected(to bytes: Int64) -> Double {
        let points = Set(steps.map(\.size)).sorted().map { (Double($0), total(at: $0)) }
        guard let last = points.last, last.0 > 0 else { return 0 }
        var perByte = last.1 / last.0, fixed = 0.0
        if points.count >= 2 {
            let n = Double(points.count)
            let mx = points.reduce(0) { $0 + $1.0 } / n, my = points.reduce(0) { $0 + $1.1 } / n
            let sxx = points.reduce(0) { $0 + ($1.0 - mx) * ($1.0 - mx) }, sxy = points.reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) }
            if sxx > 0, sxy > 0 {
                perByte = sxy / sxx
                fixed = max(0, my - perByte * mx)
            }
        }
        return fixed + perByte * Double(bytes)
    }

    /// The table printed on a terminal.
    public var table: String {
        var lines = ["\(app) \(from) → \(to), per step (median of runs), on \(machine)"]
        lines.append("  size      step                                                          time       estimate   est/actual  peak RSS")
        for step in steps {
            let name = "\(step.plan) #\(step.index): \(step.step)"
            let clipped = name.count > 60 ? String(name.prefix(59)) + "…" : name
            lines.append("  " + [formatBytes(step.size).padding(toLength: 8, withPad: " ", startingAt: 0), clipped.padding(toLength: 60, withPad: " ", startingAt: 0),
                                 BenchReport.time(step.seconds).padding(toLength: 9, withPad: " ", startingAt: 0),
                                 BenchReport.time(step.estimate).padding(toLength: 9, withPad: " ", startingAt: 0),
                                 String(format: "%9.2f×", step.seconds > 0 ? step.estimate / step.seconds : 0), formatBytes(step.peakBytes)].joined(separator: "  "))
        }
        for size in Set(steps.map(\.size)).sorted() {
            let actual = total(at: size)
            let estimate = steps.filter { $0.size == size }.reduce(0) { $0 + $1.estimate }
            lines.append("  chain at \(formatBytes(size)): \(BenchReport.time(actual)), estimated \(BenchReport.time(estimate))"
                + String(format: " (%.2f×)", actual > 0 ? estimate / actual : 0))
        }
        if let processStart {
            lines.append("  times leave out the start of the backstage process that ran each step (\(BenchReport.time(processStart)))")
        }
        for target in [Int64(1_000_000_000), 10_000_000_000] {
            let seconds = projected(to: target)
            lines.append("  projected at \(formatBytes(target)): \(BenchReport.time(seconds)) — " + (seconds <= budget
                ? "within the \(String(format: "%g", budget)) s launch budget"
                : "over the \(String(format: "%g", budget)) s launch budget: run the upgrade behind a progress screen, off the launch path"))
        }
        return lines.joined(separator: "\n")
    }
}
