import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
            fsynced kept and lost and the name changes whose folder was not fsynced undone, then the next launch \
            and the same invariants. The recorded and cut runs are made by backstage-simulate-child, built and \
            installed beside backstage (release builds too): it installs the disk recorder, which neither \
            backstage nor the libraries an app links carry.

            Example:
              backstage simulate --from v1 --to v4 --sizes 2MB --states all --crash-points all
              backstage simulate --from v2 --to v3 --sizes 200KB --states clean --crash-points none --power-loss
            """
    )

    @OptionGroup var catalogOption: CatalogOption
    @OptionGroup var missingHashes: MissingHashesOption

    @Option(help: "The version to start from.")
    var from = "v1"

    @Option(help: "The version to upgrade to.")
    var to = "v4"

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

    @Flag(help: "Print every run as JSON.")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Also write the runs as JUnit XML to this file (one test case per run; a broken invariant is its failure), for CI.",
            valueName: "file"), completion: .file(extensions: ["xml"]))
    var junit: String?

    @Option(
        name: .customLong("plan"),
        help: ArgumentHelp(
            "A plan file to run instead of the catalog's chain (repeat for several, in order): a candidate plan under test, checked against the --to layout.",
            valueName: "file"))
    var plans: [String] = []

    func validate() throws {
        if catalogOption.catalog == nil, let versions = try? CatalogFolder.notes().manifest.versions.map(\.name) {
            for version in [from, to] where !versions.contains(version) {
                throw ValidationError(
                    "\(version) is not a version of the Notes sample\(NearestName.didYouMean(version, among: versions)): "
                        + "use \(versions.joined(separator: ", ")).")
            }
            if let a = versions.firstIndex(of: from), let b = versions.firstIndex(of: to), a > b {
                throw ValidationError("--from must not be newer than --to.")
            }
        }
        guard randomKills >= 0 else { throw ValidationError("--random-kills must be 0 or more.") }
    }

    struct Summary: Encodable {
        var runs: [SimulationRun]
        var crashPointsTried: [String]
        /// The power-cut states tried (each cut twice: unsynced writes kept, then lost), and how many failed.
        var powerLossStates: Int
        var powerLossFailures: Int
        var passed: Bool
        var seconds: Double
        /// The versions whose Core Data migration ran without version hashes (`--omit-missing-hashes`).
        var versionHashesOmitted: [String]?
    }

    func run() async throws {
        let scratch = FileManager.default.temporaryDirectory.appending(path: "backstage-hashes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let (catalog, omitted) = try missingHashes.load(try catalogOption.load(), scratch: scratch)
        var simulator = Simulator(executable: Executable.url, catalog: catalog)
        simulator.seed = seed
        simulator.budget = budget
        if !plans.isEmpty { simulator.plans = plans.map { URL(filePath: $0) } }
        simulator.randomKills = randomKills
        if powerLoss { simulator.powerCuts = powerCuts }
        let started = Date()
        // Live on a terminal: runs done of all, the run's crash point and stage, the time left.
        let progress = ProgressLine(enabled: !json && Output.stderrIsTerminal)
        progress.show(ProgressText(label: "simulate", total: nil, unit: "runs"))
        simulator.onProgress = { state in
            progress.show { text in
                while text.done < state.runsDone { text.finishedOne(at: progress.elapsed) }
                text.total = state.runsTotal
                text.detail = state.detail
            }
        }
        let runs = try simulator.simulate(
            from: from, to: to, sizes: sizes.items.map(\.bytes), states: states.states, crashPoints: crashPoints
        )
        progress.finish()
        let cuts = runs.filter { $0.interruption == .powerCut }
        let summary = Summary(
            runs: runs, crashPointsTried: Array(Set(runs.compactMap(\.crashPoint))).sorted(),
            powerLossStates: cuts.count,
            powerLossFailures: cuts.filter { !$0.passed }.count, passed: runs.allSatisfy(\.passed),
            seconds: Date().timeIntervalSince(started))
        if let junit {
            let xml = JUnitReport.xml(
                runs, suite: "\(try catalogOption.load().manifest.app) \(from) → \(to)", seconds: summary.seconds)
            try FileSystem().writeAtomically(
                Array(xml.utf8),
                to: URL(
                    filePath: junit,
                    relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
                ).path)
        }
        if json {
            var summary = summary
            if !omitted.isEmpty { summary.versionHashesOmitted = omitted.map(\.version) }
            try Output.json(summary)
        } else {
            Output.out(Self.render(summary, from: from, to: to))
        }
        if !json, let note = MissingHashesOption.note(omitted) { Output.out(note) }
        if !summary.passed { throw ExitCode(ExitStatus.checkFailed) }
    }

    static func render(_ summary: Summary, from: String, to: String) -> String {
        var lines = [
            "\(from) → \(to): \(summary.runs.count) runs, \(summary.runs.filter(\.passed).count) passed, \(summary.runs.filter { !$0.passed }.count) failed (\(String(format: "%.1f", summary.seconds)) s)"
        ]
        if summary.powerLossStates > 0 {
            lines.append(
                "  power loss: \(summary.powerLossStates) states explored, \(summary.powerLossFailures) failed")
        }
        lines.append("  size       state            crash point                  crashed  reruns  seconds  result")
        for run in summary.runs {
            let result =
                run.passed
                ? (run.exceedsBudget ? "ok, would be killed at launch" : "ok")
                : "FAILED: " + run.failures.joined(separator: "; ")
            lines.append(
                "  "
                    + [
                        formatBytes(run.size).padding(toLength: 9, withPad: " ", startingAt: 0),
                        run.state.rawValue.padding(toLength: 16, withPad: " ", startingAt: 0),
                        (run.crashPoint ?? "none").padding(toLength: 28, withPad: " ", startingAt: 0),
                        (run.crashed ? "yes" : "no").padding(toLength: 7, withPad: " ", startingAt: 0),
                        String(run.reruns).padding(toLength: 6, withPad: " ", startingAt: 0),
                        String(format: "%7.3f", run.seconds), result,
                    ].joined(separator: "  "))
        }
        return lines.joined(separator: "\n")
    }
}
