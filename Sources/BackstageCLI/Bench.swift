import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure migration and export speed against the baselines, on the same data, in one run.",
        discussion: """
            For each size: builds a v1 store of the sample app, a Documents tree and a tree of incompressible \
            files of that size, then times, interleaved run by run, each case as a child process (wall clock and \
            peak RSS) beside its baseline, warm (its data just read into the page cache) and cold (every cache \
            dropped before each run of either side: sync; echo 3 > /proc/sys/vm/drop_caches, which takes root; \
            without it the report says "cold: not available" and why): relocation by rename, and by copy to \
            /dev/shm against `cp` + fsync + `rm` + fsync of the source folder; a split against `VACUUM INTO` + \
            fsync; a schema migration step against the sqlite3 shell running the same SQL with \
            synchronous=FULL; export zip against bsdtar, and of the incompressible files against `cp` + fsync; \
            tar.gz against GNU `tar -I pigz` and tar.zst against `tar -I 'zstd -T0'` (every baseline fsyncs what \
            it writes); import against `bsdtar -xf`; fixture generation against the sqlite3 shell inserting the \
            same rows; and needsUpgrade in process against the readlink and lstat calls it cannot avoid. Prints \
            medians, ratios to each baseline with their spread over the runs, peak RSS and the projected time at \
            1 GB and 10 GB against the launch budget, then the targets checked on the run's own figures, warm and \
            cold, at the largest size (--json has them as "targets", each with "met").

            With --catalog DIR, or --from/--to: times that app's own upgrade chain instead, step by step at \
            each size, on a generated container of --from (default: its first version), with what the \
            Upgrader estimated before each step, the chain projected to 1 GB and 10 GB, and the verdict \
            against the launch budget.

            With --files: how cost grows with the number of files instead. For each count, a Documents tree \
            of that many small files, flat (16 folders) and deep (8 levels), kept in --workspace between runs, \
            through audit, relocation's scan, export (zip, tar.gz, tar.zst) and import, each once as a child process \
            for each --cache (warm: its input read just before; cold: every cache dropped): time per file, peak RSS \
            and what it read from the disk, checked against the targets (time per file at the largest count within \
            1.5× of the smallest's, for each cache; 64 MB at every size). --store-size adds one store of that size through \
            relocate (rename, copy), split and migrate, each but the rename beside the baseline the --sizes bench \
            holds it to (the same commands: `cp` + fsync + `rm` + fsync, `VACUUM INTO` + fsync, the sqlite3 shell \
            with synchronous=FULL), on the same prepared input, after one untimed run of the baseline, --runs times \
            interleaved (default 1 there) and for each --cache; the ratios are checked against the same targets. \
            --replot prints a saved report again.

            With --simulate-shards 1,2,4,8: how a simulate matrix scales out. The matrix (--catalog, \
            --from/--to or else every path, --sizes, default 100KB, --states, default clean, --crash-points, default \
            3) runs unsharded as one `backstage simulate … --json` process, then for each count N as N processes \
            at once (`--shard K/N --json`) and `backstage simulate merge`; each merged report must have the \
            unsharded run's units, runs, run identities in order and verdicts, else exit 1 naming the \
            differences. Prints per count the wall time (the slowest shard's, and each shard's own), the merge, \
            the speed-up, the CPU time of every process and its children (GNU time), runs per second, per second \
            per core (the cores the shards could use: at most the machine's) and per CPU second. --runs repeats \
            each count (default 1). A failing run is a verdict compared like any other, not a failure of the bench.

            A projection more than 10× past the largest size measured says so on its line, with its spread. \
            A debug build's times are several times a release build's: bench refuses one unless --allow-debug, \
            and then every time of Backstage says "debug" (the baselines' and the estimates' do not) and the \
            targets are listed but not judged. A release build exits 1 when a target it checked is missed, \
            naming each on stderr. --svg, --markdown and --json work in both modes.

            Example:
              backstage bench --sizes 10MB,600MB --svg perf.svg --markdown
              backstage bench --catalog Cookbook --from v1 --to v2 --sizes 10MB,100MB
              backstage bench --files 10000,100000 --workspace /var/tmp/scale
              backstage bench --simulate-shards 1,2,4,8 --sizes 100KB --crash-points 3
            """
    )

    @OptionGroup var catalogOption: CatalogOption
    @OptionGroup var missingHashes: MissingHashesOption

    @Option(help: "Time the catalog's chain from this version (default: its first).")
    var from: String?

    @Option(help: "Time the catalog's chain to this version (default: its last).")
    var to: String?

    @Option(help: "The launch budget in seconds the projections are compared with.")
    var budget: Double = Upgrader.defaultBudget

    @Option(
        help: "Comma-separated data sizes, such as 10MB,100MB,1GB (default: 10MB,100MB; with --simulate-shards, 100KB)."
    )
    var sizes: CommaSeparated<ByteCount>?

    @Option(
        help:
            "Runs per case; the median is reported, with the spread (default: 3; with --store-size or --simulate-shards, 1)."
    )
    var runs: Int?

    @Option(help: "The size the schema migration step is timed at, such as 1GB (default: every size).")
    var migrationSize: ByteCount?

    @Option(help: "Which caches to time each case with: warm, cold, or warm,cold.")
    var cache = CommaSeparated(BenchCache.allCases)

    @Option(help: "Where to generate the data (default: a new temporary folder, removed afterwards).")
    var workspace: String?

    @Option(help: "Comma-separated file counts, such as 10000,100000: time how cost grows with the files.")
    var files: CommaSeparated<FileCount>?

    @Option(help: "With --files, also time a store of this size (such as 10GB) through relocate, split and migrate.")
    var storeSize: ByteCount?

    @Option(
        help: ArgumentHelp(
            "Comma-separated counts of shards, such as 1,2,4,8: time a simulate matrix unsharded and as that many processes, merged.",
            valueName: "counts"))
    var simulateShards: CommaSeparated<Int>?

    @Option(help: "With --simulate-shards: the matrix's fixture states, comma-separated, or all (default: clean).")
    var states: FixtureStates?

    @Option(help: "With --simulate-shards: the matrix's crash points, all, none or a number (default: 3).")
    var crashPoints: CrashPoints?

    @Option(help: "Write the full report as JSON to this file.")
    var json: String?

    @Option(help: "Write the chart (time against size, log-log) as SVG to this file.")
    var svg: String?

    @Flag(help: "Print the ratio table as Markdown.")
    var markdown = false

    @Flag(help: "Measure even a debug build (every time of Backstage then says \"debug\"; targets are not judged).")
    var allowDebug = false

    @Option(
        help: ArgumentHelp(
            "Measure nothing: print the tables of a report saved by --json, and write its --svg.",
            valueName: "json"))
    var replot: String?

    @Option(
        name: .customLong("generate-catalog"),
        help: ArgumentHelp(
            "Also time fixture generation for this captured app against the sqlite3 shell (repeatable).",
            valueName: "dir"))
    var generateCatalogs: [String] = []

    @Option(
        name: .customLong("generate-schema"),
        help: ArgumentHelp(
            "Also time fixture generation for this SQL schema file against the sqlite3 shell (repeatable).",
            valueName: "file.sql"))
    var generateSchemas: [String] = []

    var parsedSizes: [Int64] { (sizes?.items ?? Self.defaultSizes).map(\.bytes) }

    static let defaultSizes = [ByteCount(10_000_000, written: "10MB"), ByteCount(100_000_000, written: "100MB")]

    func validate() throws {
        if let counts = simulateShards?.items {
            if let count = counts.first(where: { !(1...256).contains($0) }) {
                throw ValidationError("--simulate-shards: \(count) is not a count of shards (1 to 256).")
            }
            if files != nil || replot != nil || svg != nil || markdown {
                throw ValidationError(
                    "--simulate-shards times a simulate matrix: drop --files, --replot, --svg and --markdown.")
            }
        } else if states != nil || crashPoints != nil {
            throw ValidationError("--states and --crash-points choose the matrix of --simulate-shards.")
        }
        if files != nil, svg != nil || markdown {
            throw ValidationError("--svg and --markdown chart --sizes and --catalog runs: with --files, use --json.")
        }
        if let storeSize, files == nil {
            throw ValidationError("--store-size \(storeSize.defaultValueDescription) needs --files.")
        }
        guard (runs ?? 1) >= 1 else { throw ValidationError("--runs must be at least 1.") }
        guard !BuildConfiguration.isDebug || allowDebug || replot != nil else {
            throw ValidationError(
                """
                this backstage is a debug build, whose times are several times a release build's: build it with \
                `swift build -c release`, or pass --allow-debug to measure it anyway (every figure then says "debug").
                """)
        }
    }

    func run() async throws {
        let own = workspace == nil
        let folder = URL(
            filePath: workspace
                ?? FileManager.default.temporaryDirectory.appending(
                    path: "backstage-bench-\(UUID().uuidString.prefix(8))"
                ).path)
        defer { if own { try? FileManager.default.removeItem(at: folder) } }
        if let replot {
            try redraw(URL(filePath: replot))
            return
        }
        if let counts = simulateShards?.items {
            try runShards(counts, in: folder)
            return
        }
        if let counts = files?.items.map(\.count) {
            try runScaling(counts, in: folder)
            return
        }
        if catalogOption.catalog != nil || from != nil || to != nil {
            try runChain(in: folder)
            return
        }
        var runner = BenchRunner(executable: Executable.url, sizes: parsedSizes, runs: runs ?? 3, workspace: folder)
        runner.generationCatalogs = try generateCatalogs.map { try CatalogFolder(at: URL(filePath: $0)) }
        runner.generationSchemas = generateSchemas.map { URL(filePath: $0) }
        runner.migrationSize = migrationSize?.bytes
        runner.caches = cache.items
        let progress = ProgressLine(enabled: Output.stderrIsTerminal)
        progress.show(ProgressText(label: "bench", total: nil, unit: "runs", detail: "preparing the data"))
        runner.log = { line, _ in progress.show { $0.detail = line } }
        runner.progress = { done, total, what in progress.show { Self.count(&$0, done, total, what, progress) } }
        var report = try runner.run()
        progress.finish()
        if BuildConfiguration.isDebug { report.debugBuild = true }
        if let json {
            try Output.jsonData(report).write(to: URL(filePath: json))
        }
        if let svg {
            try Data(BenchChart.svg(report).utf8).write(to: URL(filePath: svg))
        }
        Output.out(markdown ? report.markdown : report.table)
        try Self.verdict(missed: report.missedTargets.map { $0.target.title }, of: report.targets.count)
    }

    /// Brings a progress text to `done` of `total` units timed, doing `what`.
    private static func count(
        _ text: inout ProgressText, _ done: Int, _ total: Int, _ what: String, _ progress: ProgressLine
    ) {
        while text.done < done { text.finishedOne(at: progress.elapsed) }
        text.total = total
        text.detail = what
    }

    /// Exit 1 when a release build missed a target it checked, naming each; a debug build's figures are
    /// labelled and never judged (a debug build misses every speed target by construction).
    static func verdict(missed: [String], of checked: Int) throws {
        guard !missed.isEmpty else { return }
        guard !BuildConfiguration.isDebug else {
            Output.err(
                "bench: \(missed.count) of \(checked) targets missed, not judged: this backstage is a debug build")
            return
        }
        Output.err(
            "bench: \(missed.count) of \(checked) targets missed: "
                + Array(Set(missed)).sorted().joined(separator: "; "))
        throw ExitCode(ExitStatus.checkFailed)
    }

    /// A saved report, drawn and printed again without measuring.
    private func redraw(_ file: URL) throws {
        let data: Data
        do { data = try Data(contentsOf: file) } catch {
            throw CLIError(description: "\(file.path) cannot be read: \(error.localizedDescription)")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        if let report = try? decoder.decode(BenchReport.self, from: data) {
            if let svg { try Data(BenchChart.svg(report).utf8).write(to: URL(filePath: svg)) }
            Output.out(markdown ? report.markdown : report.table)
        } else if let report = try? decoder.decode(ChainBenchReport.self, from: data) {
            if let svg { try Data(BenchChart.svg(report).utf8).write(to: URL(filePath: svg)) }
            Output.out(markdown ? report.markdown : report.table)
        } else if let report = try? decoder.decode(ScalingReport.self, from: data) {
            guard svg == nil, !markdown else {
                throw CLIError(
                    description: "\(file.path) is a --files report: it has no chart or Markdown, only its table")
            }
            Output.out(report.table)
        } else {
            throw CLIError(description: "\(file.path) is not a report that backstage bench --json wrote")
        }
    }

    /// How cost grows with the number of files, and a large store's operations.
    private func runScaling(_ counts: [Int], in folder: URL) throws {
        var bench = ScalingBench(executable: Executable.url, fileCounts: counts, workspace: folder)
        bench.storeBytes = storeSize?.bytes
        bench.storeRuns = runs ?? 1
        bench.caches = cache.items
        let report = try reported(debug: \.debugBuild, table: \.table) { log in
            bench.log = log
            return try bench.run()
        }
        try Self.verdict(missed: report.targets.filter { !$0.met }.map(\.name), of: report.targets.count)
    }

    /// Runs `body` behind a progress line showing what it logs, marks a debug build's report, writes
    /// it to `--json` and prints its table.
    private func reported<Report: Encodable>(
        debug: WritableKeyPath<Report, Bool>, table: KeyPath<Report, String>,
        _ body: (_ log: @escaping (String) -> Void) throws -> Report
    ) throws -> Report {
        let progress = ProgressLine(enabled: Output.stderrIsTerminal)
        progress.show(ProgressText(label: "bench", total: nil, unit: "runs"))
        var report = try body { line in progress.show { $0.detail = line } }
        progress.finish()
        if BuildConfiguration.isDebug { report[keyPath: debug] = true }
        if let json { try Output.jsonData(report).write(to: URL(filePath: json)) }
        Output.out(report[keyPath: table])
        return report
    }

    /// A simulate matrix unsharded and as `counts` shards, each merged report checked against the unsharded one.
    private func runShards(_ counts: [Int], in folder: URL) throws {
        var matrix = catalogOption.catalog == nil ? [] : ["--catalog", try catalogOption.load().url.path]
        if missingHashes.omitMissingHashes { matrix.append("--omit-missing-hashes") }
        if from != nil || to != nil {
            let names = try catalogOption.load().manifest.versions.map(\.name)
            matrix += ["--from", from ?? names.first ?? "", "--to", to ?? names.last ?? ""]
        } else {
            matrix += ["--paths", "every"]
        }
        matrix += [
            "--sizes",
            (sizes?.items ?? [ByteCount(100_000, written: "100KB")]).map(\.defaultValueDescription).joined(
                separator: ","),
        ]
        matrix += ["--states", states?.defaultValueDescription ?? "clean"]
        matrix += ["--crash-points", crashPoints?.defaultValueDescription ?? "3", "--budget", String(budget)]
        var bench = ShardBench(
            executable: Executable.url, matrix: matrix, shardCounts: counts, runs: runs ?? 1, workspace: folder)
        let report = try reported(debug: \.debugBuild, table: \.table) { log in
            bench.log = log
            return try bench.run()
        }
        if !report.allMatch {
            Output.err(
                "bench: a merged report differs from the unsharded one at "
                    + report.rows.filter { !$0.matches }.map { "\($0.shards) shards" }.joined(separator: ", "))
            throw ExitCode(ExitStatus.checkFailed)
        }
    }

    /// The app's own chain, step by step.
    private func runChain(in folder: URL) throws {
        let (catalog, omitted) = try missingHashes.load(
            try catalogOption.load(), scratch: folder.appending(path: "catalog-without-hashes"))
        let names = catalog.manifest.versions.map(\.name)
        var bench = ChainBench(
            executable: Executable.url, catalog: catalog, from: from ?? names.first ?? "", to: to ?? names.last ?? "",
            sizes: parsedSizes, runs: runs ?? 3, workspace: folder)
        bench.budget = budget
        let progress = ProgressLine(enabled: Output.stderrIsTerminal)
        progress.show(ProgressText(label: "bench", total: nil, unit: "steps"))
        bench.log = { line in progress.show { $0.detail = line } }
        bench.progress = { done, total, what in progress.show { Self.count(&$0, done, total, what, progress) } }
        var report = try bench.run()
        progress.finish()
        if BuildConfiguration.isDebug { report.debugBuild = true }
        if let json { try Output.jsonData(report).write(to: URL(filePath: json)) }
        if let svg { try Data(BenchChart.svg(report).utf8).write(to: URL(filePath: svg)) }
        Output.out(markdown ? report.markdown : report.table)
        if let note = MissingHashesOption.note(omitted) { Output.out(note) }
        let judged = report.estimateChecks.filter { $0.met != nil }
        try Self.verdict(
            missed: judged.filter { $0.met == false }.map { "estimate within ±30 % at \(formatBytes($0.size))" },
            of: judged.count)
    }
}

/// How this `backstage` was compiled: a debug build (`-Onone`, as `swift build` makes by default)
/// times several times slower than a release build, so `bench` says so or refuses.
enum BuildConfiguration {
    static var isDebug: Bool {
        #if DEBUG
            return true
        #else
            return false
        #endif
    }
}
