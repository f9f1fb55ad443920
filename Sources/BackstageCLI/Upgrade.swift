import ArgumentParser
import Backstage
import Foundation

package struct Upgrade: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Run upgrade plans on a container: relocate, split, migrate, quarantine.",
        discussion: """
            Each --plan is a JSON upgrade plan (see the DocC article "Upgrading an app's storage"); plans \
            run in the order given, as one chain. Steps already done are skipped, and a step a crash interrupted is \
            finished or undone first. The estimate is computed before anything is touched and compared \
            with --budget, the launch watchdog's budget. Plans that name their "version" record it when the \
            chain completes; a container a newer chain (one knowing these versions and more) upgraded is \
            refused with nothing changed (exit 3), in a dry run as in the run. A plan that contradicts itself (a \
            table in two targets, two steps putting a store in one place, a store moved away and back, steps in the \
            wrong order) is refused before anything is touched (exit 3), naming the plan, the step and the field. \
            Each skipped step says why (already done, absent: fresh install, up to date). A run that leaves internal \
            files in Documents no step accounts for (a store location with a typo), or finds a store the plan \
            migrates missing while its other stores are there, says so, does not record the version, and exits 1.

            Example:
              backstage upgrade ~/Containers/MyApp --plan Fixtures/Notes/plans/v1-to-v2.json --dry-run
            """
    )

    package init() {}

    @OptionGroup var options: ContainerOptions
    @OptionGroup var groups: AppGroupOptions

    @Option(
        name: .customLong("plan"), help: "A JSON upgrade plan (repeatable).", completion: .file(extensions: ["json"]))
    package var plans: [String] = []

    @Option(help: "The launch budget in seconds: the estimate says whether the upgrade fits in it.")
    var budget: Double = Upgrader.defaultBudget

    @Flag(help: "List the steps that would run, with estimates, and change nothing.")
    var dryRun = false

    @Option(help: "Seconds to wait for another process to release a store.")
    var timeout: Double = 5

    @Flag(help: "Print one JSON object.")
    var json = false

    @Flag(help: "Log each phase of each step, with its duration, on stderr.")
    var verbose = false

    package func validate() throws {
        if let problem = Self.usageProblem(plans: plans, budget: budget) { throw ValidationError(problem) }
    }

    /// What the command line refuses (exit 2) of these values, nil when nothing: the simulator's
    /// child, given them without a command line, refuses the same in the same words.
    package static func usageProblem(plans: [String], budget: Double) -> String? {
        if plans.isEmpty { return "Missing --plan FILE." }
        return budgetProblem(budget)
    }

    /// A launch budget no upgrade can meet (0 or less, infinite, not a number), said as usage.
    static func budgetProblem(_ budget: Double) -> String? {
        budget > 0 && budget.isFinite ? nil : "--budget must be more than 0 seconds."
    }

    struct DryRun: Encodable {
        var plan: String
        var needsUpgrade: Bool
        var needsUpgradeMicroseconds: Double
        var estimate: UpgradeEstimate
        /// What the run would not account for: the run would exit 1 and not record the version.
        var problems: [String]
    }

    package func run() async throws { try await run(boundaryHook: nil) }

    /// The run, with `boundaryHook` called at every step/phase boundary: the simulator's child
    /// (Sources/BackstageSimulateChild) kills itself there; `backstage` passes none.
    package func run(boundaryHook: (@Sendable (CrashPoint) -> Void)?) async throws {
        let invocation = Invocation(
            container: try groups.adding(to: try options.resolve(), layout: options.layout), plans: plans,
            budget: budget, timeout: timeout, json: json, verbose: verbose, dryRun: dryRun,
            resumeCommand: Self.resumeCommand())
        try await invocation.run(boundaryHook: boundaryHook)
    }

    /// What `backstage upgrade` was asked, for a caller that has the values without a command line:
    /// the simulator's child runs every crash state's upgrade from these, without the parser's
    /// reflection over the command, in a process started twice per state.
    package struct Invocation: Sendable {
        package var container: AppContainer
        package var plans: [String]
        package var budget: Double
        package var timeout: Double
        package var json: Bool
        package var verbose: Bool
        package var dryRun: Bool

        /// - parameter resumeCommand: the command a run stopped part way says to run again.
        package init(
            container: AppContainer, plans: [String], budget: Double = Upgrader.defaultBudget, timeout: Double = 5,
            json: Bool = false, verbose: Bool = false, dryRun: Bool = false, resumeCommand: String
        ) {
            self.container = container
            self.plans = plans
            self.budget = budget
            self.timeout = timeout
            self.json = json
            self.verbose = verbose
            self.dryRun = dryRun
            self.resumeCommand = resumeCommand
        }

        /// The invocation of an iOS-style container at `path` (`backstage upgrade PATH --plan …`), the
        /// App Groups it keeps under `Shared/AppGroup` with it.
        package init(containerAt path: String, plans: [String], budget: Double, json: Bool) throws {
            let container = try ContainerOptions.iOSContainer(at: path)
            self.init(
                container: container, plans: plans, budget: budget, json: json,
                resumeCommand: Upgrade.quoted(
                    ["backstage", "upgrade", container.documents.deletingLastPathComponent().path]
                        + plans.flatMap { ["--plan", $0] } + ["--budget", String(budget)]))
        }

        /// The command a run stopped part way says to run again.
        package var resumeCommand: String

        /// Runs the upgrade as `backstage upgrade` does, printing what it prints; throws what it
        /// exits with (``ExitCode``, or the error `Output.report` names).
        package func run(boundaryHook: (@Sendable (CrashPoint) -> Void)?) async throws {
            let loaded = try plans.map { try UpgradePlan.load(from: URL(filePath: $0)) }
            var upgrader = Upgrader(container: container, logger: DiagnosticLog.makeLogger(verbose: verbose))
            upgrader.busyTimeout = timeout
            upgrader.boundaryHook = boundaryHook
            // The plans run as one chain, and the dry run answers for that chain: each plan alone would
            // call storage a later plan reached "newer", so pending. A container a newer build upgraded
            // past the versions they reach is refused before anything is touched.
            let plan = UpgradePlan(chain: loaded)
            if dryRun {
                // The run's own checks, with the run's exit status: a dry run that passes, the run passes too.
                try upgrader.preflight(plan)
                let results = [
                    DryRun(
                        plan: plan.name, needsUpgrade: Upgrader.needsUpgrade(container, plan),
                        needsUpgradeMicroseconds: Upgrade.timeNeedsUpgrade(container, plan),
                        estimate: upgrader.estimate(plan, budget: budget), problems: try upgrader.unaccounted(plan))
                ]
                if json {
                    try Output.json(results)
                } else {
                    Output.out(results.map(Upgrade.render).joined(separator: "\n"))
                }
                for problem in results.flatMap(\.problems) {
                    Output.err("error: \(problem); a run would not record the version as reached: correct the plan")
                }
                if results.contains(where: { !$0.problems.isEmpty }) { throw ExitCode(ExitStatus.checkFailed) }
                return
            }
            try InterruptedImport.recover(in: container)
            var reports: [UpgradeReport] = []
            let progress = ProgressLine(enabled: !json && Output.stderrIsTerminal)
            // The steps this run completed: a failure after them says they stay done and how to resume.
            var completed: [(index: Int, step: String)] = []
            do {
                for try await event in upgrader.run(plan, budget: budget) {
                    switch event {
                    case .planned(let estimate):
                        if !json && estimate.exceedsBudget {
                            Output.err(
                                String(
                                    format:
                                        "warning: %@ is estimated at %.1f s, more than the %g s launch budget: run it behind a progress screen, not at launch",
                                    plan.name, estimate.seconds, budget))
                        }
                    case .progress(let p):
                        if p.phase == .done { completed.append((p.stepIndex, p.step)) }
                        progress.update(
                            "step \(p.stepIndex + 1)", fraction: p.fractionDone, detail: "\(p.phase.rawValue) \(p.step)"
                        )
                    case .finished(let report):
                        reports.append(report)
                    }
                }
            } catch {
                progress.finish()
                guard !completed.isEmpty else { throw error }
                throw StoppedPartway(cause: error, completed: completed, command: resumeCommand)
            }
            progress.finish()
            if json {
                try Output.json(reports)
            } else {
                Output.out(reports.map { Upgrade.render($0, container: container) }.joined(separator: "\n"))
            }
            // What the run could not account for is a problem found (exit 1): the version was not recorded.
            let problems = reports.flatMap(\.problems)
            if !problems.isEmpty {
                for problem in problems {
                    Output.err(
                        "error: \(problem); the version was not recorded as reached: correct the plan and run it again")
                }
                throw ExitCode(ExitStatus.checkFailed)
            }
        }
    }

    /// The median time of `needsUpgrade` over many calls, in microseconds.
    static func timeNeedsUpgrade(_ container: AppContainer, _ plan: UpgradePlan) -> Double {
        let clock = ContinuousClock()
        var samples: [Double] = []
        for _ in 0..<501 {
            let start = clock.now
            _ = Upgrader.needsUpgrade(container, plan)
            let elapsed = clock.now - start
            samples.append(elapsed.seconds * 1e6)
        }
        return samples.sorted()[samples.count / 2]
    }

    static func render(_ dry: DryRun) -> String {
        var lines = [
            String(
                format: "%@: %@ (needsUpgrade answered in %.1f µs)", dry.plan,
                dry.needsUpgrade
                    ? "upgrade needed"
                    : dry.problems.isEmpty
                        ? "nothing to do" : "no step would run, but the plan does not account for everything",
                dry.needsUpgradeMicroseconds)
        ]
        for step in dry.estimate.steps {
            lines.append(
                String(
                    format: "  step %d  %@  %@  ~%.2f s", step.index + 1, step.description, formatBytes(step.bytes),
                    step.seconds))
        }
        if !dry.estimate.steps.isEmpty {
            lines.append(
                String(
                    format: "  total ~%.2f s: %@ the %g s launch budget", dry.estimate.seconds,
                    dry.estimate.exceedsBudget ? "MORE than" : "within", dry.estimate.budget))
        }
        for problem in dry.problems { lines.append("  not accounted for: \(problem)") }
        return lines.joined(separator: "\n")
    }

    static func render(_ report: UpgradeReport, container: AppContainer) -> String {
        var lines = [
            "\(report.plan): \(report.steps.filter { $0.outcome != .skipped }.count) of \(report.steps.count) steps ran in \(String(format: "%.3f", report.seconds)) s"
        ]
        for line in report.relocation.recovered { lines.append("  recovered an interrupted step (\(line))") }
        for step in report.steps {
            let why = step.reason.map { "  (\($0))" } ?? ""
            lines.append(
                "  step \(step.index + 1)  \(step.outcome.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0))  \(step.description)\(why)"
            )
        }
        for item in report.relocation.quarantined {
            lines.append("  quarantined \(item.from) → \(item.to) (\(item.reason))")
        }
        for problem in report.problems { lines.append("  not accounted for: \(problem)") }
        return lines.joined(separator: "\n")
    }
}

/// A run that failed after some of its steps changed the container: what stays done, and the
/// command that resumes it.
struct StoppedPartway: Error, CustomStringConvertible {
    var cause: Error
    var completed: [(index: Int, step: String)]
    var command: String

    var description: String {
        let steps = completed.map { "step \($0.index + 1) (\($0.step))" }.joined(separator: ", ")
        let next = (completed.map(\.index).max() ?? 0) + 2
        return
            "\(Output.sentence(for: cause)); before it, this run completed \(steps), which stays done, and the step that failed "
            + "was undone or is finished by the next run: once the cause is corrected, `\(command)` resumes from step \(next)"
    }
}

extension Upgrade {
    /// This command line without the option that only traces it, quoted for a shell.
    static func resumeCommand() -> String {
        quoted(["backstage"] + CommandLine.arguments.dropFirst().filter { $0 != "--verbose" })
    }

    /// `words` as a shell reads them back: each quoted unless it is plain.
    static func quoted(_ words: [String]) -> String {
        words.map { word in
            word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:@".contains($0) }
                ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }
}
