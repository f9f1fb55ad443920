import BackstageModel
import BackstageSystem
import Foundation

extension UpgradePlan {
    /// Checks that the plan does not contradict itself, before anything is touched: a split's
    /// targets are distinct stores and each table goes to one place (a target, or `discard`),
    /// no step moves a store onto itself, a store is put in a place by at most one step (a
    /// relocation or a split's target), no step puts a store where an earlier step moved one
    /// away (the next run would move it again), no step works on a store an earlier step moved
    /// away, a migration runs before the step that creates its store never, and a migration
    /// identifier means one SQL per store.
    ///
    /// Locations are compared as a device's file system sees them: without case, `.` or empty
    /// components. ``Upgrader`` calls it before every run and dry run.
    ///
    /// ```swift
    /// let plan = try UpgradePlan.load(from: planFile)
    /// try plan.checkConsistency()
    /// ```
    ///
    /// - throws: ``BackstageError/Cause/inconsistentPlan(step:field:reason:)`` naming the first
    ///   contradiction: the plan, the step and the field.
    public func checkConsistency() throws(BackstageError) {
        var flow = PlanFlow(describe: stepPlace)
        for (index, step) in steps.enumerated() {
            let place = stepPlace(index)
            func refuse(_ field: String, _ reason: String) -> BackstageError {
                BackstageError(
                    .inconsistentPlan(step: place.step, field: "\(step.kind).\(field)", reason: reason),
                    path: place.plan, during: .checkingPlan)
            }
            for (field, location) in step.definition.storeFields {
                if let reason = location.notAStore { throw refuse(field, reason) }
            }
            if let (field, reason) = step.definition.contradiction(after: &flow, at: index) {
                throw refuse(field, reason)
            }
        }
    }

    /// The plan a step of this plan (or chain) comes from, and its number in that plan (from 1).
    package func stepPlace(_ index: Int) -> (plan: String, step: Int) {
        var first = 0
        for part in chainParts ?? [] {
            if index < first + part.steps { return (part.name, index - first + 1) }
            first += part.steps
        }
        return (name, index + 1)
    }
}
