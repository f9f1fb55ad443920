import BackstageModel
import BackstageSystem
import Foundation
import GRDB
import Logging

/// One kind of upgrade step: its parameters, and everything the plan, the launch check, the
/// estimate, the run, the rehearsal and the run's account ask of a step of that kind. Each kind is
/// one type in its folder of `Steps/` (`Steps/Split/Split.swift`), with the journaled step that
/// runs it, and one line of ``StepKinds``; nothing else names it.
///
/// The plan holds a step as an ``UpgradeStep``, which wraps the kind's value; every layer above
/// loops over steps and asks them, never switching on their kinds.
package protocol StepDefinition: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The kind's name: the key of its JSON object, and what journal records and crash points call it.
    static var kind: StepKind { get }
    /// Every phase a step of this kind can pass, in order: the crash points `kind:phase` names.
    static var phases: [StepPhase] { get }
    /// The journaled step that runs it, whose recovery a journal record of this kind calls.
    static var journaled: any JournaledStep.Type { get }

    // MARK: What the plan asks

    /// Every location the step reads or writes.
    var locations: [ContainerLocation] { get }
    /// The first of ``locations`` that satisfies `predicate`, without building them (the launch
    /// check asks it of every step).
    func firstLocation(where predicate: (ContainerLocation) -> Bool) -> ContainerLocation?
    /// The fields that name a store, with their path below the step (`from`, `into[0].store`).
    var storeFields: [(field: String, location: ContainerLocation)] { get }
    /// What the launch check looks at: the store the step reads (nil for none), or the folder it
    /// cleans (a quarantine).
    var launchLook: LaunchLook? { get }
    /// The phases this step can pass, in order (a relocation that never copies passes fewer).
    var phases: [StepPhase] { get }
    /// The phases it passes when it runs as planned (a relocation that may rename, counted as a rename).
    var plannedPhases: [StepPhase] { get }
    /// What is wrong with the step's fields, each on its own, each starting with its path below
    /// the step (`.from is …`).
    var fieldProblems: [String] { get }
    /// What contradicts the step itself or the plan's earlier steps (``PlanFlow``): the field and why.
    func contradiction(after flow: inout PlanFlow, at index: Int) -> (field: String, reason: String)?
    /// The store the step takes further (moves or splits away), and the stores it puts in place.
    var takes: ContainerLocation? { get }
    var puts: [ContainerLocation] { get }

    // MARK: What a run asks

    /// True when the step may have something to do in `container`: cheap (a `stat`, a header),
    /// the launch check asks it. `probe` remembers what was found absent and what the launch record
    /// vouches for.
    func isNeeded(in container: AppContainer, fileSystem: FileSystem, probe: inout some StoreProbe) -> Bool
    /// The bytes the step will touch and its estimated time, nil when it has nothing to do;
    /// records what it will produce in `estimator` for the steps after it.
    func estimate(_ estimator: inout StepEstimator) -> (bytes: Int64, seconds: Double)?
    /// Runs the step, journaled, through `run`'s runner.
    func run(_ run: StepRun) throws -> StepOutcome
    /// Why the step had nothing to do (it was not needed), and a problem when that is not a sound reason.
    func skipped(_ account: inout some StepAccount, at index: Int) -> (reason: String, problem: String?)
    /// Tries the step on the empty copies of the schemas its stores will have (``StepRehearsal``):
    /// throws what its run would throw, before anything is changed.
    func rehearse(_ rehearsal: inout some StepRehearsal, at index: Int) throws
}

extension StepDefinition {
    package var phases: [StepPhase] { Self.phases }
    package var plannedPhases: [StepPhase] { phases }
    package var takes: ContainerLocation? { nil }
    package var puts: [ContainerLocation] { [] }
    package var launchLook: LaunchLook? { nil }
    package func rehearse(_ rehearsal: inout some StepRehearsal, at index: Int) throws {}
}

/// What the launch check looks at for one step.
package enum LaunchLook: Sendable {
    /// Whether a store is there.
    case store(ContainerLocation)
    /// Whether a folder holds strays.
    case folder(ContainerLocation)
}

/// One step of an ``UpgradePlan``: a relocation, a split, a schema migration or a quarantine.
///
/// Made with the kind's function (``relocate(from:to:strategy:)``, ``split(_:into:discard:)``,
/// ``migrateSchema(_:_:)``, ``quarantine()``) or read from JSON, where a step is one object with
/// one key, its kind: `{"split": {...}}`. ``as(_:)`` gives the kind's parameters.
public struct UpgradeStep: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The kind's value.
    package let definition: any StepDefinition

    init(_ definition: some StepDefinition) {
        self.definition = definition
    }

    /// The step's kind: `relocate`, `split`, `migrateSchema` or `quarantine`.
    public var kind: StepKind { type(of: definition).kind }

    /// The step's parameters when it is of kind `Step` (``Split``, ``Relocate``…), else nil.
    ///
    /// ```swift
    /// let splits = plan.steps.compactMap { $0.as(UpgradeStep.Split.self) }
    /// ```
    public func `as`<Step>(_ type: Step.Type) -> Step? { definition as? Step }

    /// Every location the step reads or writes.
    public var locations: [ContainerLocation] { definition.locations }

    /// The first of ``locations`` that satisfies `predicate`, without building them.
    package func firstLocation(where predicate: (ContainerLocation) -> Bool) -> ContainerLocation? {
        definition.firstLocation(where: predicate)
    }

    public var description: String { definition.description }

    public static func == (lhs: UpgradeStep, rhs: UpgradeStep) -> Bool {
        AnyHashable(lhs.definition) == AnyHashable(rhs.definition)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(AnyHashable(definition)) }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// A step is one JSON object with one key, its kind: `{"split": {...}}`.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first,
            let kind = StepKinds.named(StepKind(rawValue: key.stringValue))
        else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "a step is an object with exactly one key: \(StepKinds.namesInWords)"))
        }
        self.init(try kind.decode(from: container, forKey: key))
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(definition, forKey: Key(stringValue: kind.rawValue))
    }
}

extension StepDefinition {
    /// A step of this kind, the value of `key`.
    fileprivate static func decode<Key: CodingKey>(
        from container: KeyedDecodingContainer<Key>, forKey key: Key
    ) throws -> Self {
        try container.decode(Self.self, forKey: key)
    }
}

// MARK: The contexts a step is asked in

/// What the launch check found absent so far and what the launch record vouches for (the upgrade
/// layer's launch probe), or nothing at all (``PlainProbe``).
package protocol StoreProbe {
    /// True when a file is at `location`.
    mutating func exists(_ location: ContainerLocation, in container: AppContainer, fileSystem: FileSystem) -> Bool
    /// The status of the file at `location` and its first `count` bytes; nil when there is none.
    mutating func statusAndPrefix(
        _ location: ContainerLocation, in container: AppContainer, count: Int, fileSystem: FileSystem
    ) -> (FileStatus, [UInt8])?
    /// True when the launch record vouches that `folder` has no stray.
    mutating func isQuiet(_ folder: ContainerLocation, in container: AppContainer, fileSystem: FileSystem) -> Bool
}

/// A probe that remembers nothing and is vouched for by nothing: every question looks at the disk.
package struct PlainProbe: StoreProbe {
    package init() {}

    package mutating func exists(
        _ location: ContainerLocation, in container: AppContainer, fileSystem: FileSystem
    ) -> Bool {
        fileSystem.exists(location, in: container)
    }

    package mutating func statusAndPrefix(
        _ location: ContainerLocation, in container: AppContainer, count: Int, fileSystem: FileSystem
    ) -> (FileStatus, [UInt8])? {
        var missing = false
        return fileSystem.statusAndPrefix(location, in: container, count: count, absent: &missing)
    }

    package mutating func isQuiet(
        _ folder: ContainerLocation, in container: AppContainer, fileSystem: FileSystem
    ) -> Bool { false }
}

/// What an estimate knows while it goes through a plan's steps: the container, the throughputs, and
/// what the earlier steps will have produced where.
package struct StepEstimator {
    let container: AppContainer
    let fileSystem: FileSystem
    let throughput: Throughput
    /// The bytes an earlier pending step puts at a location (nil: look at the disk).
    var produced: [ContainerLocation: Int64] = [:]
    /// Where a store an earlier step moves is now, to read its tables' sizes.
    var movedFrom: [ContainerLocation: ContainerLocation] = [:]

    package init(container: AppContainer, fileSystem: FileSystem, throughput: Throughput) {
        self.container = container
        self.fileSystem = fileSystem
        self.throughput = throughput
    }

    /// The bytes of the store at `location` (its database, `-wal` and, unless told otherwise,
    /// support folder), or what an earlier step puts there; nil when there is no store.
    func size(_ location: ContainerLocation, withSupportFolder: Bool = true) -> Int64? {
        if let bytes = produced[location] { return bytes }
        let store = StoreFileSet(main: location.url(in: container))
        guard fileSystem.exists(store.main.path) else { return nil }
        let files = [store.main, store.sidecar(.wal)] + (withSupportFolder ? [store.supportFolder] : [])
        return files.reduce(0) { $0 + ((try? fileSystem.treeSize($1.path)) ?? 0) }
    }

    /// True when both locations are (or will be made) on one file system.
    func sameDevice(_ a: ContainerLocation, _ b: ContainerLocation) -> Bool {
        func device(_ location: ContainerLocation) -> UInt64? {
            var url = location.url(in: container).deletingLastPathComponent()
            while !fileSystem.exists(url.path) && url.path != "/" { url.deleteLastPathComponent() }
            return (try? fileSystem.status(url.path))?.device
        }
        return device(a) == device(b)
    }
}

/// What a step runs with: the context every step shares and the runner that journals it.
package struct StepRun {
    let context: StepContext
    let runner: StepRunner
    let onProgress: (RelocationProgress) -> Void
    /// The plan's steps before this one, with their indices in the plan.
    let earlier: ArraySlice<UpgradeStep>
    /// The plan's steps after this one, with their indices in the plan.
    let later: ArraySlice<UpgradeStep>

    /// Runs `step` through the runner: its preflight, then its run, its boundaries reported.
    func run<Step: JournaledStep>(_ step: Step) throws -> Step.Outcome {
        try runner.run(step, onProgress: onProgress)
    }

    package init(
        context: StepContext, runner: StepRunner, earlier: ArraySlice<UpgradeStep> = [],
        later: ArraySlice<UpgradeStep> = [], onProgress: @escaping (RelocationProgress) -> Void
    ) {
        self.context = context
        self.runner = runner
        self.earlier = earlier
        self.later = later
        self.onProgress = onProgress
    }
}

/// What a step did, for the run's report.
package struct StepOutcome {
    /// What it moved and set aside.
    package var relocation = RelocationReport()
    /// Why it changed nothing though it ran (`up to date`), nil when it did its work.
    package var unchanged: String?
}

/// What a run's account answers a step that had nothing to do (the upgrade layer's run account).
package protocol StepAccount {
    /// The container the run works on.
    var container: AppContainer { get }
    /// The steps of the plan (or chain) the run runs.
    var steps: [UpgradeStep] { get }
    /// The plan and the step number (from 1) of the step at `index`, as errors and reports name it.
    func place(of index: Int) -> (plan: String, step: Int)
    /// True when a file is at `location`.
    func exists(_ location: ContainerLocation) -> Bool
    /// Why a step that takes `source` further, making `made`, found nothing there.
    mutating func absent(
        _ source: ContainerLocation, made: [ContainerLocation], index: Int
    ) -> (reason: String, problem: String?)
    /// Why a step that changes the store at `store` in place found none there: a later step took it
    /// further, a fresh install, a purgeable folder, or (a problem) a typo of a store that is there.
    mutating func absentInPlace(_ store: ContainerLocation, index: Int) -> (reason: String, problem: String?)
}

/// What is at a location at one step of a rehearsal.
package enum RehearsedStore {
    /// The store on disk, untouched by the steps so far.
    case disk(String)
    /// The empty copy of the schema it will have; not `exact` when it was read from a store
    /// whose `-wal` holds frames (read as of its last checkpoint, without touching the `-shm`).
    case copy(DatabaseQueue, exact: Bool)
    /// Nothing.
    case absent
    /// A store whose schema could not be rebuilt.
    case unknown

    package var isAbsent: Bool {
        if case .absent = self { return true }
        return false
    }
}

/// A rehearsal of a plan on empty copies of its stores' schemas (the upgrade layer's), as a step sees it.
package protocol StepRehearsal {
    var container: AppContainer { get }
    var fileSystem: FileSystem { get }
    var logger: Logger { get }
    /// The steps of the plan (or chain) rehearsed.
    var steps: [UpgradeStep] { get }
    /// What is at `location` now, in the rehearsal.
    mutating func store(at location: ContainerLocation) -> RehearsedStore
    /// Puts `store` at `location`, for the steps after this one.
    mutating func place(_ store: RehearsedStore, at location: ContainerLocation)
    /// The empty copy of what `store` holds; nil when there is nothing or it cannot be rebuilt.
    func schema(of store: RehearsedStore) throws -> (queue: DatabaseQueue, exact: Bool)?
    /// Throws ``BackstageError/Cause/missingStore(plan:step:closest:)`` when no store is, or will be, at
    /// `store` and one a few letters away is: the plan misspelled it.
    mutating func refuseTypo(of store: ContainerLocation, at index: Int) throws
}

extension StepRehearsal {
    /// The empty copy of the schema of the store a step changes in place (a migration) at `location`;
    /// nil when there is none, or when it is on disk where it was and `isNeeded` says it has nothing
    /// to do (stamped as migrated since it last changed: not opened). A store absent a few letters
    /// from one that is there is refused (``refuseTypo(of:at:)``).
    mutating func copyToChange(
        _ location: ContainerLocation, at index: Int,
        isNeeded: (AppContainer, FileSystem, inout PlainProbe) -> Bool
    ) throws -> (queue: DatabaseQueue, exact: Bool)? {
        let current = store(at: location)
        if current.isAbsent { try refuseTypo(of: location, at: index) }
        var probe = PlainProbe()
        if case .disk(let path) = current, path == location.filePath(in: container),
            !isNeeded(container, fileSystem, &probe)
        {
            return nil
        }
        return try schema(of: current)
    }
}

extension StepRun {
    /// Runs a step that changes a store in place and says whether it changed anything: "up to date"
    /// when it did not.
    func runInPlace<Step: JournaledStep>(_ step: Step) throws -> StepOutcome where Step.Outcome == Bool {
        var outcome = StepOutcome()
        if try !run(step) { outcome.unchanged = "up to date" }
        return outcome
    }
}

extension StepAccount {
    /// Why a step that changes `store` in place had nothing to do: up to date, or no store there.
    mutating func skippedInPlace(_ store: ContainerLocation, index: Int) -> (reason: String, problem: String?) {
        exists(store) ? ("up to date", nil) : absentInPlace(store, index: index)
    }
}
