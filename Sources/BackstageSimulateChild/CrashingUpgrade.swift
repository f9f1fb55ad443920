import ArgumentParser
import Backstage
import BackstageCLI
import BackstageHarness
import Foundation

/// `backstage upgrade`, killed by SIGKILL at the request's step/phase boundary (`kind:phase@N`, the
/// Nth time that boundary is reached). A point the plans never reach is a usage error listing those
/// they do.
struct CrashingUpgrade: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade", abstract: "Run `backstage upgrade`, killed by SIGKILL at the request's crash point.")

    /// The request's crash point, for the command the parser makes.
    @TaskLocal static var crashAt: CrashPoint?

    @OptionGroup var upgrade: Upgrade

    func validate() throws { try Self.check(Self.crashAt, reachedBy: upgrade.plans) }

    /// A crash test that never crashes tests nothing: the point must be one the plans reach. (A plan
    /// that cannot be read is reported by the run, as an operational failure.)
    static func check(_ crashAt: CrashPoint?, reachedBy plans: [String]) throws {
        guard let crashAt, let loaded = try? plans.map({ try UpgradePlan.load(from: URL(filePath: $0)) })
        else { return }
        let reachable = CrashPoint.possibleBoundaries(of: UpgradePlan(chain: loaded))
        guard reachable.contains(crashAt) else {
            let listed =
                reachable.isEmpty
                ? "none (no step of them has a boundary)" : reachable.map(\.description).joined(separator: ", ")
            throw ValidationError(
                "the crash point \(crashAt) is not a boundary these plans reach, so nothing would be killed; they reach: \(listed)."
            )
        }
    }

    func run() async throws {
        guard let crashAt = Self.crashAt else { return try await upgrade.run(boundaryHook: nil) }
        do {
            try await upgrade.run(boundaryHook: { if $0 == crashAt { killedHere() } })
        } catch let status as ExitCode {
            Self.warnNotReached(crashAt)
            throw status
        }
        Self.warnNotReached(crashAt)
    }

    /// The `upgradeChain` request: the same upgrade, its values given rather than parsed, and the
    /// same crash point check; the exit status `upgrade` would exit with.
    static func status(of chain: SimulateChildRequest.UpgradeChain, crashAt: CrashPoint?) async -> Int32 {
        // What `upgrade`'s parser refuses (exit 2), refused here in its words.
        if let problem = Upgrade.usageProblem(plans: chain.plans, budget: chain.budget) {
            warn("error: \(problem)")
            return 2
        }
        do {
            try check(crashAt, reachedBy: chain.plans)
        } catch {
            warn("error: \(error)")
            return 2
        }
        let invocation: Upgrade.Invocation
        do {
            invocation = try Upgrade.Invocation(
                containerAt: chain.container, plans: chain.plans, budget: chain.budget, json: chain.json)
        } catch {
            warn("error: \(error)")
            return 3
        }
        var hook: (@Sendable (CrashPoint) -> Void)?
        if let crashAt { hook = { if $0 == crashAt { killedHere() } } }
        let status = await BackstageCommandLine.status(of: invocation, boundaryHook: hook)
        // Alive after the run (done, or a check failed): the point was never passed.
        if let crashAt, status == 0 || status == 1 { warnNotReached(crashAt) }
        return status
    }

    /// Still alive: the boundary exists in the plans but this run never passed it (its step had
    /// nothing to do, or a relocation renamed where it could have copied). Says so.
    private static func warnNotReached(_ crashAt: CrashPoint) {
        warn(
            "warning: the upgrade never reached the crash point \(crashAt): its step had nothing to do here or took "
                + "another path (a rename, not a copy); nothing was killed")
    }
}
