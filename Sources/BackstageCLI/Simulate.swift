import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Prove an upgrade path keeps every row, with crashes injected at every step boundary.",
        discussion: """
            For each size and state: builds the --from container with `backstage fixture`, runs the catalog's \
            plans up to --to in a child process killed by SIGKILL at a step/phase boundary, reruns it until it \
            completes, then checks the invariants: every row kept (per-table content hashes, mapped through the \
            plans), no internal file in Documents, user documents byte-identical, integrity_check ok on every \
            store, no temporaries or journal left, every store's schema equal to a fresh install's (or to the \
            schema recorded for --to), every data check of --to holding, and the time against the launch \
            budget. Exits 1 when an invariant breaks; --junit FILE writes the runs as JUnit XML for CI.

            With --power-loss, also every state a power cut could leave: the chain runs once recorded (every \
            operation backstage makes on the disk), then once cut after each operation, with the writes not yet \
            fsynced kept and (where there are some) lost and the name changes whose folder was not fsynced undone, then the next launch \
            and the same invariants. Every run is made by backstage-simulate-child, built and installed beside \
            backstage (release builds too): it carries the crash hooks and the disk recorder, which neither \
            backstage nor the libraries an app links carry.

            With --paths every, the fleet's matrix: every path a device can take (each version to the latest, \
            each pair it skips versions between, each single step), and after each the downgrade: the build of \
            the version before --to launched on the upgraded storage must refuse and change nothing. --list \
            prints the matrix's units (one a line; --json for JSON) without running them. --shard K/N runs the \
            K-th of N parts of the matrix, balanced by expected cost, and its --json report records the \
            catalog's fingerprint, the seed, the matrix's options and the shard; `backstage simulate merge` \
            combines the shards' reports into one. --ci github|gitlab --shards N prints the CI configuration \
            that runs the shards and the merge.

            Example:
              backstage simulate --from v1 --to v4 --sizes 2MB --states all --crash-points all
              backstage simulate --from v2 --to v3 --sizes 200KB --states clean --crash-points none --power-loss
              backstage simulate --paths every --sizes 2MB --crash-points 3 --list
              backstage simulate --paths every --sizes 2MB --crash-points 3 --shard 2/4 --json > shard-2.json
              backstage simulate --paths every --sizes 2MB --crash-points 3 --ci github --shards 4
            """,
        subcommands: [SimulateMerge.self]
    )

    @OptionGroup var catalogOption: CatalogOption
    @OptionGroup var missingHashes: MissingHashesOption

    @Option(help: "The version to start from (default: the catalog's first).")
    var from: String?

    @Option(help: "The version to upgrade to (default: the catalog's last).")
    var to: String?

    @Option(help: "every: every upgrade path of the catalog and the downgrade after each, instead of --from/--to.")
    var paths: PathsChoice?

    @Flag(help: "Print the matrix's units, one a line (with --json, as JSON), without running them.")
    var list = false

    @Option(help: ArgumentHelp("Run only the K-th of N balanced parts of the matrix.", valueName: "K/N"))
    var shard: Shard?

    @Option(
        help: "Print the CI configuration (github or gitlab) that runs the matrix as --shards shards, then merges them."
    )
    var ci: CIWorkflow?

    @Option(help: "With --ci: how many shards.")
    var shards = 4

    @Option(
        help: ArgumentHelp(
            "With --ci: the shell command each job runs first to put backstage and backstage-simulate-child on its PATH (default: a check that stops the job saying backstage is missing).",
            valueName: "command"))
    var install: String?

    @Option(help: "Comma-separated fixture sizes, such as 500KB,2MB.")
    var sizes = CommaSeparated([ByteCount(1_000_000, written: "1MB")])

    @Option(help: "Comma-separated states, or all.")
    var states = FixtureStates.all

    @Option(help: "all (every boundary), none (uninterrupted runs) or a number of boundaries spread over the chain.")
    var crashPoints = CrashPoints.all

    @Option(help: "Extra runs per size and state, each killed by SIGKILL at a random instant of the upgrade.")
    var randomKills = 0

    @Flag(help: "Also try every state a power cut could leave (backstage-simulate-child records the disk operations).")
    var powerLoss = false

    @Option(help: "With --power-loss: all (a cut after every operation) or at most this many cuts.")
    var powerCuts = PowerCutScope.all

    @Option(help: "The launch budget in seconds: slower runs are flagged \"would be killed at launch\".")
    var budget: Double = Upgrader.defaultBudget

    @Option(help: "The fixtures' seed.")
    var seed: UInt64 = 1

    @OptionGroup var output: SimulateOutput

    @Option(
        name: .customLong("plan"),
        help: ArgumentHelp(
            "A plan file to run instead of the catalog's chain (repeat for several, in order): a candidate plan under test, checked against the --to layout.",
            valueName: "file"))
    var plans: [String] = []

    func validate() throws {
        if let problem = Upgrade.budgetProblem(budget) { throw ValidationError(problem) }
        if paths != nil && (from != nil || to != nil) {
            throw ValidationError("--paths every simulates every path of the catalog: drop --from and --to.")
        }
        if catalogOption.catalog == nil, let versions = try? CatalogFolder.notes().manifest.versions.map(\.name) {
            for version in [from, to].compactMap({ $0 }) where !versions.contains(version) {
                throw ValidationError(
                    "\(version) is not a version of the Notes sample\(NearestName.didYouMean(version, among: versions)): "
                        + "use \(versions.joined(separator: ", ")).")
            }
            if let a = versions.firstIndex(of: from ?? versions.first ?? ""),
                let b = versions.firstIndex(of: to ?? versions.last ?? ""), a > b
            {
                throw ValidationError("--from must not be newer than --to.")
            }
        }
        guard randomKills >= 0 else { throw ValidationError("--random-kills must be 0 or more.") }
        if paths != nil && !plans.isEmpty {
            throw ValidationError("--plan runs a candidate plan on one path: use --from/--to, not --paths every.")
        }
        guard (1...256).contains(shards) else {
            throw ValidationError("--shards must be 1 to 256 (a CI matrix holds at most 256 jobs).")
        }
        if shard != nil && ci != nil { throw ValidationError("--ci prints the shards' configuration: drop --shard.") }
        if install != nil && ci == nil {
            throw ValidationError("--install goes with --ci: it is the fragment's install step.")
        }
    }

    /// The path --from and --to choose: the catalog's first and last version unless given.
    func path(of catalog: CatalogFolder) -> UpgradePath {
        let versions = catalog.manifest.versions.map(\.name)
        return UpgradePath(from: from ?? versions.first ?? "", to: to ?? versions.last ?? "")
    }

    /// The paths the options choose.
    func upgradePaths(of catalog: CatalogFolder) -> [UpgradePath] {
        paths == nil ? [path(of: catalog)] : UpgradePath.every(catalog.manifest.versions.map(\.name))
    }

    /// The options that choose the matrix, normalised: what shards of one matrix share.
    func matrixOptions(of catalog: CatalogFolder) -> [String] {
        let path = path(of: catalog)
        var words = paths == nil ? ["--from", path.from, "--to", path.to] : ["--paths", "every"]
        words += ["--sizes", sizes.items.map { String($0.bytes) }.joined(separator: ",")]
        words += ["--states", states.states.map(\.rawValue).joined(separator: ",")]
        words += ["--crash-points", crashPoints.defaultValueDescription, "--random-kills", String(randomKills)]
        if powerLoss { words += ["--power-loss", "--power-cuts", powerCuts.defaultValueDescription] }
        words += ["--budget", String(budget)]
        if missingHashes.omitMissingHashes { words.append("--omit-missing-hashes") }
        return words + plans.flatMap { ["--plan", $0] }
    }

    func run() async throws {
        let scratch = FileManager.default.temporaryDirectory.appending(path: "backstage-hashes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let (catalog, omitted) = try missingHashes.load(try catalogOption.load(), scratch: scratch)
        var simulator = Simulator(executable: Executable.url, catalog: catalog)
        simulator.seed = seed
        simulator.budget = budget
        if !plans.isEmpty {
            // --omit-missing-hashes holds for the plans given as for the catalog's own.
            simulator.plans = try plans.map { plan in
                let file = URL(filePath: plan)
                return missingHashes.omitMissingHashes
                    ? try CoreDataCatalog.planFileOmittingMissingHashes(at: file, in: scratch.appending(path: "plans"))
                    : file
            }
        }
        simulator.randomKills = randomKills
        if powerLoss { simulator.powerCuts = powerCuts }
        if let ci {
            let catalogWords = catalogOption.catalog.map { ["--catalog", $0] } ?? []
            // The CI runs the fragment in a checkout of the repository, not in this folder.
            if let folder = catalogOption.catalog, folder.hasPrefix("/") || folder.split(separator: "/").contains("..")
            {
                Output.err(
                    "warning: the fragment names the catalog \(folder), which a CI runner's checkout does not have: "
                        + "run this from the repository's root with --catalog relative to it")
            }
            Output.out(
                ci.fragment(
                    simulate: ["backstage", "simulate"] + catalogWords + matrixOptions(of: catalog) + [
                        "--seed", String(seed),
                    ],
                    shards: shards, install: install
                ).trimmingCharacters(in: .newlines))
            return
        }
        let units = try simulator.units(
            paths: upgradePaths(of: catalog), sizes: sizes.items.map(\.bytes), states: states.states,
            crashPoints: crashPoints, downgrades: paths != nil)
        if units.isEmpty {
            throw ValidationError(
                "\(catalogOption.catalog ?? "The Notes sample") has a single version: there is no upgrade path to simulate."
            )
        }
        let positions = shard.map { $0.positions(in: units) } ?? Array(units.indices)
        if list {
            let listed = positions.map { units[$0] }
            if output.json {
                try Output.json(listed)
            } else {
                Output.out(listed.map(\.description).joined(separator: "\n"))
            }
            return
        }
        let started = Date()
        // Live on a terminal: runs done of all, the run's crash point and stage, the time left.
        let progress = ProgressLine(enabled: !output.json && Output.stderrIsTerminal)
        progress.show(ProgressText(label: "simulate", total: nil, unit: "runs"))
        simulator.onProgress = { state in
            progress.show { text in
                while text.done < state.runsDone { text.finishedOne(at: progress.elapsed) }
                text.total = state.runsTotal
                text.detail = state.detail
            }
        }
        let runs = try simulator.run(positions.map { units[$0] }, positions: positions)
        let title = paths == nil ? "\(path(of: catalog).from) → \(path(of: catalog).to)" : "every path"
        progress.finish()
        var report = SimulationReport(
            app: catalog.manifest.app, catalog: try catalog.fingerprint(), seed: seed,
            command: matrixOptions(of: catalog),
            shard: shard, units: units.count, unitsRun: positions, runs: runs,
            seconds: Date().timeIntervalSince(started))
        if !omitted.isEmpty { report.versionHashesOmitted = omitted.map(\.version) }
        if let junit = output.junit {
            try Self.writeJUnit(report, title: title, to: junit)
        }
        if output.json {
            try Output.json(report)
        } else {
            Output.out(Self.render(report, title: title))
        }
        if !output.json, let note = MissingHashesOption.note(omitted) { Output.out(note) }
        if !report.passed { throw ExitCode(ExitStatus.checkFailed) }
    }

    /// Writes `report`'s runs as JUnit XML to `file` (relative to the current folder).
    static func writeJUnit(_ report: SimulationReport, title: String, to file: String) throws {
        let xml = JUnitReport.xml(report.runs, suite: "\(report.app) \(title)", seconds: report.seconds)
        try FileSystem().writeAtomically(
            Array(xml.utf8),
            to: URL(
                filePath: file,
                relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
            ).path)
    }

    static func render(_ summary: SimulationReport, title: String) -> String {
        var lines = [
            "\(title)\(summary.shard.map { " (shard \($0))" } ?? ""): \(summary.runs.count) runs, \(summary.runs.filter(\.passed).count) passed, \(summary.runs.filter { !$0.passed }.count) failed (\(String(format: "%.1f", summary.seconds)) s)"
        ]
        if summary.powerLossStates > 0 {
            lines.append(
                "  power loss: \(summary.powerLossStates) states explored, \(summary.powerLossFailures) failed")
        }
        if !summary.costs.kinds.isEmpty { lines.append(summary.costs.text) }
        // The path of each run when the report holds several. No value is cut short (a crash point
        // or path cut short would name another).
        func path(_ run: SimulationRun) -> String { "\(run.from)→\(run.to)" }
        func point(_ run: SimulationRun) -> String { run.crashPoint?.description ?? "none" }
        let paths = Set(summary.runs.map(path)).count > 1
        let pathWidth = summary.runs.map { path($0).count }.max() ?? 0
        // A power cut's label (the operation it follows, a path) can be long: such a one is printed
        // whole past the column, the others stay aligned.
        let pointWidth = min(48, max(28, summary.runs.map { point($0).count }.max() ?? 0))
        func pad(_ text: String, _ width: Int) -> String {
            text.count >= width ? text : text.padding(toLength: width, withPad: " ", startingAt: 0)
        }
        lines.append(
            (paths ? "  " + pad("path", pathWidth) : "")
                + [
                    "  size     ", "state           ", pad("crash point", pointWidth), "crashed", "reruns", "seconds",
                    "result",
                ]
                .joined(separator: "  "))
        for run in summary.runs {
            let result =
                run.passed
                ? (run.exceedsBudget ? "ok, would be killed at launch" : "ok")
                : "FAILED: " + run.failures.joined(separator: "; ")
            lines.append(
                (paths ? "  " + pad(path(run), pathWidth) : "") + "  "
                    + [
                        pad(formatBytes(run.size), 9), pad(run.state.rawValue, 16), pad(point(run), pointWidth),
                        pad(run.crashed ? "yes" : "no", 7), pad(String(run.reruns), 6),
                        String(format: "%7.3f", run.seconds), result,
                    ].joined(separator: "  "))
        }
        return lines.joined(separator: "\n")
    }
}

/// `--paths`: which upgrade paths to simulate besides `--from/--to`.
enum PathsChoice: String, ExpressibleByArgument, CaseIterable {
    /// Every path a device can take, and the downgrade after each.
    case every
}

extension Shard: ExpressibleByArgument {
    /// `K/N`, 1 ≤ K ≤ N.
    public init?(argument: String) { self.init(argument) }
}

extension CIWorkflow: ExpressibleByArgument {}

/// Where `simulate` and `simulate merge` write their report: shared, so that argument-parser hands
/// the values to the subcommand as well as to its parent.
struct SimulateOutput: ParsableArguments {
    @Flag(help: "Print every run as JSON.")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Also write the runs as JUnit XML to this file (one test case per run; a broken invariant is its failure), for CI.",
            valueName: "file"), completion: .file(extensions: ["xml"]))
    var junit: String?
}
