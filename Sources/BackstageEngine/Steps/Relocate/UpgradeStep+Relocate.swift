import BackstageModel
import BackstageSystem
import Foundation

extension StepKind {
    /// Moves a store: ``UpgradeStep/Relocate``.
    public static let relocate = StepKind(rawValue: "relocate")
}

extension StepPhase {
    /// The boundaries a move with `strategy` passes, in order.
    public static func boundaries(for strategy: RelocationStrategy) -> [StepPhase] {
        switch strategy {
        case .copy:
            [
                .preflight, .journaled, .locked, .copying, .copied, .verified, .committed, .supportMoved,
                .sourceRemoved, .done,
            ]
        case .rename, .auto: [.preflight, .journaled, .locked, .committed, .supportMoved, .sourceRemoved, .done]
        }
    }
}

extension UpgradeStep {
    /// Moves a store (database, sidecars, support folder) from one location to another, with the
    /// relocation engine: see ``Relocator``.
    public static func relocate(_ step: Relocate) -> UpgradeStep { UpgradeStep(step) }

    /// ``relocate(_:)`` written inline.
    public static func relocate(
        from: ContainerLocation, to: ContainerLocation, strategy: RelocationStrategy? = nil
    ) -> UpgradeStep {
        .relocate(Relocate(from: from, to: to, strategy: strategy))
    }

    /// The parameters of ``UpgradeStep/relocate(_:)``.
    public struct Relocate: Sendable, Hashable, Codable {
        public var from: ContainerLocation
        public var to: ContainerLocation
        public var strategy: RelocationStrategy?
        public init(from: ContainerLocation, to: ContainerLocation, strategy: RelocationStrategy? = nil) {
            self.from = from
            self.to = to
            self.strategy = strategy
        }
    }
}

extension UpgradeStep.Relocate: StepDefinition {
    package static let kind = StepKind.relocate
    package static let phases = StepPhase.boundaries(for: .copy)
    package static var journaled: any JournaledStep.Type { RelocateStep.self }

    public var description: String { "relocate \(from) → \(to)" }

    package var locations: [ContainerLocation] { [from, to] }

    package func firstLocation(where predicate: (ContainerLocation) -> Bool) -> ContainerLocation? {
        if predicate(from) { return from }
        return predicate(to) ? to : nil
    }

    package var storeFields: [(field: String, location: ContainerLocation)] { [("from", from), ("to", to)] }
    package var launchLook: LaunchLook? { .store(from) }
    package var takes: ContainerLocation? { from }
    package var puts: [ContainerLocation] { [to] }

    /// A copy's phases unless the strategy is `rename`.
    package var phases: [StepPhase] { strategy == .rename ? StepPhase.boundaries(for: .rename) : Self.phases }
    /// A relocation that may rename (`auto`) counted as a rename.
    package var plannedPhases: [StepPhase] { StepPhase.boundaries(for: strategy ?? .auto) }

    package var fieldProblems: [String] {
        [StepFields.problem(from, ".from"), StepFields.problem(to, ".to")].compactMap { $0 }
    }

    package func contradiction(after flow: inout PlanFlow, at index: Int) -> (field: String, reason: String)? {
        if from.sameFile(as: to) {
            return ("to", "names \(to), the store's own location: a store cannot move onto itself")
        }
        if let reason = flow.consume(from, at: index) { return ("from", reason) }
        if let reason = flow.produce(to, at: index) { return ("to", reason) }
        return nil
    }

    package func isNeeded(in container: AppContainer, fileSystem: FileSystem, probe: inout some StoreProbe) -> Bool {
        probe.exists(from, in: container, fileSystem: fileSystem)
    }

    package func estimate(_ estimator: inout StepEstimator) -> (bytes: Int64, seconds: Double)? {
        guard let bytes = estimator.size(from) else { return nil }
        let throughput = estimator.throughput
        let rename = throughput.rename + Double(bytes) / throughput.renameRate
        let seconds =
            estimator.sameDevice(from, to) && strategy != .copy ? rename : rename + Double(bytes) / throughput.copy
        estimator.produced[to] = bytes
        estimator.produced[from] = nil
        estimator.movedFrom[to] = estimator.movedFrom[from] ?? from
        return (bytes, seconds)
    }

    package func run(_ run: StepRun) throws -> StepOutcome {
        var move = RelocateStep(context: run.context, source: from, destination: to, strategy: strategy ?? .auto)
        let (from, to, earlier, later) = (from, to, run.earlier, run.later)
        move.olderDestination = { source, destination in
            CoreDataLineage.olderCopy(
                at: destination, than: source, from: from, to: to, earlier: earlier, later: later)
        }
        return StepOutcome(relocation: try run.run(move))
    }

    package func skipped(_ account: inout some StepAccount, at index: Int) -> (reason: String, problem: String?) {
        account.absent(from, made: [to], index: index)
    }

    /// A store already at the destination is a conflict: the source goes to quarantine, unless the
    /// one there is the older copy (``CoreDataLineage/olderCopy(at:than:from:to:earlier:later:)``),
    /// as the run decides.
    package func rehearse(_ rehearsal: inout some StepRehearsal, at index: Int) throws {
        let moving = rehearsal.store(at: from)
        guard !moving.isAbsent else { return }
        let present = rehearsal.store(at: to)
        var replaces = present.isAbsent
        if case .disk(let source) = moving, case .disk(let destination) = present {
            let steps = rehearsal.steps
            replaces =
                CoreDataLineage.olderCopy(
                    at: destination, than: source, from: from, to: to, earlier: steps[..<index],
                    later: steps[(index + 1)...]) != nil
        }
        if replaces { rehearsal.place(moving, at: to) }
        rehearsal.place(.absent, at: from)
    }
}
