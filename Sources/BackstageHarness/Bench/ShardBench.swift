import Foundation

/// Shows, rather than claims, that a simulation's matrix scales out: the same matrix run unsharded
/// (one `backstage simulate … --json` process) and as each count of shards (that many
/// `simulate … --shard K/N --json` processes at once, then `simulate merge`), each merged report
/// compared with the unsharded one — the same units, runs, run identities in the same order and the
/// same verdict for each — with the wall time, the CPU time of every process (theirs and their
/// children's: the upgrades they killed and reran) and runs per second per core.
///
/// For example:
///
/// ```swift
/// let bench = ShardBench(
///     executable: backstage, matrix: ["--paths", "every", "--sizes", "100KB", "--crash-points", "3"],
///     shardCounts: [1, 2, 4, 8], workspace: scratch)
/// let report = try bench.run()
/// print(report.table)   // exit 1 when report.allMatch is false
/// ```
///
/// Each process runs with its own `TMPDIR` under `workspace`, so its fixtures and runs stay there.
/// The CPU time is GNU `time`'s user and system time of each process, which counts the children
/// it waited for.
public struct ShardBench {
    /// `backstage`.
    public var executable: URL
    /// The options of `backstage simulate` that choose the matrix (`--catalog`, `--paths` or
    /// `--from`/`--to`, `--sizes`, `--states`, `--crash-points`, `--plan`...), without `--shard`,
    /// `--json` or `--ci`.
    public var matrix: [String]
    /// The counts of shards to time; the unsharded run (1) is always timed first: it is the
    /// reference every merged report is compared with.
    public var shardCounts: [Int]
    /// Runs per count of shards; the median wall and CPU time are reported, with the spread.
    public var runs: Int
    /// Where the reports and each process's temporary folder go (removed by the caller).
    public var workspace: URL
    /// Called before each timed run with what it is, for progress.
    public var log: (String) -> Void = { _ in }

    public init(executable: URL, matrix: [String], shardCounts: [Int], runs: Int = 1, workspace: URL) {
        self.executable = executable
        self.matrix = matrix
        self.shardCounts = shardCounts
        self.runs = max(1, runs)
        self.workspace = workspace
    }

    /// The counts timed: 1 first, then the others in increasing order, each once.
    var counts: [Int] { [1] + Array(Set(shardCounts.filter { $0 > 1 })).sorted() }

    public func run() throws -> ShardBenchReport {
        guard FileManager.default.isExecutableFile(atPath: Self.time) else {
            throw BenchError(message: "CPU time is read by GNU time: install the Debian package `time`")
        }
        if let count = shardCounts.first(where: { !(1...256).contains($0) }) {
            throw BenchError(message: "\(count) shards: a count of shards is 1 to 256")
        }
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        let loadBefore = Self.loadAverage()
        var reference: SimulationReport?
        var rows: [ShardBenchReport.Row] = []
        for count in counts {
            var samples: [Sample] = []
            for run in 1...runs {
                log("\(count == 1 ? "unsharded" : "\(count) shards"), run \(run) of \(runs)")
                let sample = try measure(count, run: run)
                if reference == nil { reference = sample.report }
                samples.append(sample)
            }
            guard let reference else { break }
            rows.append(row(count, samples, against: reference))
        }
        let unsharded = rows.first?.wallSeconds ?? 0
        for index in rows.indices where rows[index].wallSeconds > 0 {
            rows[index].speedup = unsharded / (rows[index].wallSeconds + (rows[index].mergeSeconds ?? 0))
        }
        return ShardBenchReport(
            command: ["backstage", "simulate"] + matrix, machine: BenchRunner.machine(),
            cores: ProcessInfo.processInfo.activeProcessorCount, date: Date(), runsPerCount: runs,
            loadAverageBefore: loadBefore, loadAverageAfter: Self.loadAverage(), rows: rows)
    }

    /// One timed run of the matrix as `count` processes (1: unsharded), then their merge.
    struct Sample {
        var report: SimulationReport
        var wallSeconds: Double
        var cpuSeconds: Double
        /// Each process's own wall time, in shard order.
        var processSeconds: [Double]
        var mergeSeconds: Double?
    }

    private func measure(_ count: Int, run: Int) throws -> Sample {
        let folder = workspace.appending(path: "shards-\(count)-run-\(run)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let jobs = (1...count).map { index in
            Job(
                arguments: ["simulate"] + matrix + (count == 1 ? [] : ["--shard", "\(index)/\(count)"]) + ["--json"],
                folder: folder, name: count == 1 ? "unsharded" : "shard-\(index)-of-\(count)")
        }
        let start = ContinuousClock.now
        let launched = try jobs.map { try $0.launch(executable) }
        let finished = try zip(jobs, launched).map { job, process in try job.wait(process) }
        let wall = (ContinuousClock.now - start).seconds
        let reports = try zip(jobs, finished).map { job, figures in
            // 1: a run broke an invariant, which is a verdict to compare, not a failure of the bench.
            guard figures.status == 0 || figures.status == 1 else {
                throw BenchError(
                    message: "`backstage \(job.arguments.joined(separator: " "))` exited \(figures.status): "
                        + job.errors())
            }
            return (file: job.output.path, report: try Self.read(job.output))
        }
        var sample = Sample(
            report: reports[0].report, wallSeconds: wall, cpuSeconds: finished.map(\.cpuSeconds).reduce(0, +),
            processSeconds: finished.map(\.seconds))
        guard count > 1 else { return sample }
        let merge = Job(
            arguments: ["simulate", "merge", "--json"] + reports.map(\.file), folder: folder, name: "merged")
        let merged = try merge.wait(try merge.launch(executable))
        guard merged.status == 0 || merged.status == 1 else {
            throw BenchError(message: "`backstage simulate merge` exited \(merged.status): \(merge.errors())")
        }
        sample.report = try Self.read(merge.output)
        sample.mergeSeconds = merged.seconds
        sample.cpuSeconds += merged.cpuSeconds
        return sample
    }

    private func row(
        _ count: Int, _ samples: [Sample], against reference: SimulationReport
    )
        -> ShardBenchReport.Row
    {
        let walls = samples.map(\.wallSeconds), cpus = samples.map(\.cpuSeconds)
        let first = samples[0].report
        let cores = Double(min(count, ProcessInfo.processInfo.activeProcessorCount))
        let differences = samples.flatMap { Self.differences($0.report, from: reference) }
        let merges = samples.compactMap(\.mergeSeconds)
        // The spread of the shards' own times in the median run: how well the parts were balanced.
        let median = samples.sorted { $0.wallSeconds < $1.wallSeconds }[samples.count / 2]
        return ShardBenchReport.Row(
            shards: count, units: first.units, runs: first.runs.count,
            failedRuns: first.runs.filter { !$0.passed }.count,
            wallSeconds: walls.median, fastestWall: walls.min() ?? 0, slowestWall: walls.max() ?? 0,
            mergeSeconds: merges.isEmpty ? nil : merges.median, cpuSeconds: cpus.median,
            fastestShard: median.processSeconds.min() ?? 0, slowestShard: median.processSeconds.max() ?? 0,
            runsPerSecond: Double(first.runs.count) / max(walls.median, 1e-9),
            runsPerSecondPerCore: Double(first.runs.count) / max(walls.median, 1e-9) / cores,
            runsPerCPUSecond: Double(first.runs.count) / max(cpus.median, 1e-9), differences: differences)
    }

    /// How `report` differs from `reference` in what a merge must keep: the matrix's units, the runs,
    /// their identities in order, each run's verdict. Empty when they agree.
    ///
    /// For example, a merge that lost a run gives `["2 runs, the unsharded run has 3", ...]`.
    public static func differences(_ report: SimulationReport, from reference: SimulationReport) -> [String] {
        var found: [String] = []
        if report.units != reference.units {
            found.append("\(report.units) units in the matrix, the unsharded run has \(reference.units)")
        }
        if report.runs.count != reference.runs.count {
            found.append("\(report.runs.count) runs, the unsharded run has \(reference.runs.count)")
        }
        func name(_ run: SimulationRun) -> String {
            run.identity
                ?? "\(run.from)→\(run.to) \(run.size) \(run.state.rawValue) \(run.crashPoint.map { "\($0)" } ?? "none")"
        }
        let names = report.runs.map(name), expected = reference.runs.map(name)
        if names != expected {
            let missing = Set(expected).subtracting(names).sorted(), extra = Set(names).subtracting(expected).sorted()
            for identity in missing.prefix(5) { found.append("run \(identity) missing") }
            for identity in extra.prefix(5) { found.append("run \(identity) not in the unsharded run") }
            if missing.isEmpty && extra.isEmpty { found.append("the runs are in another order than the matrix's") }
        }
        let verdicts = Dictionary(reference.runs.map { (name($0), $0.passed) }, uniquingKeysWith: { a, _ in a })
        for run in report.runs {
            guard let expected = verdicts[name(run)], expected != run.passed else { continue }
            found.append(
                "run \(name(run)) \(run.passed ? "passed" : "failed (\(run.failures.joined(separator: "; ")))"), "
                    + "unsharded it \(expected ? "passed" : "failed")")
        }
        if report.passed != reference.passed {
            found.append(
                "verdict \(report.passed ? "passed" : "failed"), unsharded \(reference.passed ? "passed" : "failed")")
        }
        return found
    }

    private static func read(_ file: URL) throws -> SimulationReport {
        do {
            return try JSONDecoder().decode(SimulationReport.self, from: Data(contentsOf: file))
        } catch {
            throw BenchError(message: "\(file.path) is not a simulate --json report: \(error)")
        }
    }

    static let time = "/usr/bin/time"

    /// The first figure of /proc/loadavg: how busy the machine was besides the bench.
    static func loadAverage() -> Double? {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.flatMap {
            Double($0)
        }
    }

    /// One `backstage` process: its stdout to `name.json`, stderr to `name.err`, GNU time's figures
    /// to `name.time`, its own temporary folder.
    private struct Job {
        var arguments: [String]
        var folder: URL
        var name: String

        var output: URL { folder.appending(path: "\(name).json") }
        var errorFile: URL { folder.appending(path: "\(name).err") }
        var timeFile: URL { folder.appending(path: "\(name).time") }
        var temporary: URL { folder.appending(path: "\(name).tmp") }

        struct Figures {
            var status: Int32
            var seconds: Double
            var cpuSeconds: Double
        }

        func launch(_ executable: URL) throws -> Process {
            try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
            for file in [output, errorFile] {
                guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
                    throw BenchError(message: "\(file.path) cannot be created")
                }
            }
            let process = Process()
            process.executableURL = URL(filePath: ShardBench.time)
            process.arguments = ["-f", "%e %U %S", "-o", timeFile.path, executable.path] + arguments
            var environment = ProcessInfo.processInfo.environment
            environment["TMPDIR"] = temporary.path
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: output)
            process.standardError = try FileHandle(forWritingTo: errorFile)
            try process.run()
            return process
        }

        func wait(_ process: Process) throws -> Figures {
            process.waitUntilExit()
            for handle in [process.standardOutput, process.standardError] { try (handle as? FileHandle)?.close() }
            let status = process.terminationReason == .uncaughtSignal ? -1 : process.terminationStatus
            // GNU time's last line: elapsed, user and system seconds (a failed command's
            // "Command exited with non-zero status" line comes before it).
            let text = (try? String(contentsOf: timeFile, encoding: .utf8)) ?? ""
            let figures = text.split(separator: "\n").last?.split(separator: " ").compactMap { Double($0) } ?? []
            guard figures.count == 3 else {
                throw BenchError(
                    message: "GNU time wrote no figures for `backstage \(arguments.joined(separator: " "))`")
            }
            return Figures(status: status, seconds: figures[0], cpuSeconds: figures[1] + figures[2])
        }

        func errors() -> String {
            let text = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
            return text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").suffix(3)
                .joined(separator: " ")
        }
    }
}
