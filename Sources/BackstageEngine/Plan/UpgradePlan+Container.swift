import BackstageModel
import BackstageSystem
import Foundation

/// What a plan says about a container: the App Groups it needs, the stores it declares in Documents.
extension AppContainer {
    /// The first App Group a step of `plan` names that this container has no folder for.
    package func undefinedAppGroup(in plan: UpgradePlan) -> String? {
        for step in plan.steps {
            if let location = step.firstLocation(where: { !defines($0.root) }) { return location.root.rawValue }
        }
        return nil
    }
}

extension StoreDeclarations {
    /// Declares every store in Documents that a step of `plan` reads or writes.
    public init(plan: UpgradePlan) {
        self.init(plan.steps.flatMap(\.locations).filter { $0.root == .documents }.map(\.path))
    }
}
