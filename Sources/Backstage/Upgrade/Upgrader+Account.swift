import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation

extension Upgrader {
    /// What a run of `plan` would report it could not account for, without running it: the
    /// problems of ``UpgradeReport/problems`` — internal files left in Documents that no step names
    /// (a store location with a typo, with the closest location the plan names), and steps that
    /// would be skipped for an unsound reason. A dry run gives this account, and so the run's exit
    /// status: a dry run that finds none, the run finds none either.
    ///
    /// For example:
    ///
    /// ```swift
    /// let problems = try Upgrader(container: container).unaccounted(plan)
    /// if !problems.isEmpty { print(problems.joined(separator: "\n")) }  // the run would not record the version
    /// ```
    public func unaccounted(_ plan: UpgradePlan) throws -> [String] {
        var account = RunAccount(plan: plan, container: container, fileSystem: fileSystem)
        var problems: [String] = []
        for (index, step) in plan.steps.enumerated()
        where !Self.isNeeded(step, container: container, fileSystem: fileSystem) {
            // A step whose store an earlier step makes is needed by the time the run reaches it.
            if step.locations.contains(where: { account.isProduced($0, before: index) }) { continue }
            if let problem = account.skipped(index).problem { problems.append(problem) }
        }
        return problems + (try account.unaccountedFiles())
    }
}
