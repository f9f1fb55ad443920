import BackstageModel
import BackstageSystem
import Foundation
import GRDB

extension StepKind {
    /// Splits a store by table: ``UpgradeStep/Split``.
    public static let split = StepKind(rawValue: "split")
}

extension StepPhase {
    /// The boundaries a split passes, in order.
    public static let splitBoundaries: [StepPhase] = [
        .preflight, .journaled, .locked, .copying, .copied, .verified, .committed, .sourceRemoved, .done,
    ]
}

extension UpgradeStep {
    /// Splits one store into several by table; listed tables are discarded as rebuildable.
    public static func split(_ step: Split) -> UpgradeStep { UpgradeStep(step) }

    /// ``split(_:)`` written inline.
    public static func split(_ store: ContainerLocation, into: [Split.Target], discard: [String] = []) -> UpgradeStep {
        .split(Split(store: store, into: into, discard: discard))
    }

    /// The parameters of ``UpgradeStep/split(_:)``.
    public struct Split: Sendable, Hashable, Codable {
        /// One store the split produces, and the tables it receives.
        public struct Target: Sendable, Hashable, Codable {
            public var store: ContainerLocation
            public var tables: [String]
            public init(store: ContainerLocation, tables: [String]) {
                self.store = store
                self.tables = tables
            }
        }
        public var store: ContainerLocation
        public var into: [Target]
        /// Tables dropped as rebuildable. Every table of the store must be in a target or here.
        public var discard: [String]
        public init(store: ContainerLocation, into: [Target], discard: [String] = []) {
            self.store = store
            self.into = into
            self.discard = discard
        }

        private enum CodingKeys: String, CodingKey { case store, into, discard }

        /// `discard` may be left out of a JSON plan, as in Swift: nothing is discarded.
        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            store = try container.decode(ContainerLocation.self, forKey: .store)
            into = try container.decode([Target].self, forKey: .into)
            discard = try container.decodeIfPresent([String].self, forKey: .discard) ?? []
        }
    }
}

extension UpgradeStep.Split: StepDefinition {
    package static let kind = StepKind.split
    package static let phases = StepPhase.splitBoundaries
    package static var journaled: any JournaledStep.Type { SplitRun.self }

    public var description: String {
        "split \(store) → \(into.map(\.store.description).joined(separator: ", "))"
            + (discard.isEmpty ? "" : " (discard \(discard.joined(separator: ", ")))")
    }

    package var locations: [ContainerLocation] { [store] + into.map(\.store) }

    package func firstLocation(where predicate: (ContainerLocation) -> Bool) -> ContainerLocation? {
        if predicate(store) { return store }
        return into.first { predicate($0.store) }?.store
    }

    package var storeFields: [(field: String, location: ContainerLocation)] {
        [("store", store)] + into.enumerated().map { ("into[\($0)].store", $1.store) }
    }

    package var launchLook: LaunchLook? { .store(store) }
    package var takes: ContainerLocation? { store }
    package var puts: [ContainerLocation] { into.map(\.store) }

    package var fieldProblems: [String] {
        var problems = [StepFields.problem(store, ".store")].compactMap { $0 }
        if into.isEmpty { problems.append(".into is empty: name the store (or stores) the tables go to") }
        for (index, target) in into.enumerated() {
            problems += [StepFields.problem(target.store, ".into[\(index)].store")].compactMap { $0 }
            if target.tables.isEmpty {
                problems.append(".into[\(index)].tables is empty: name the tables that go to \(target.store)")
            }
            problems += StepFields.tableProblems(target.tables, ".into[\(index)].tables")
        }
        return problems + StepFields.tableProblems(discard, ".discard")
    }

    package func contradiction(after flow: inout PlanFlow, at index: Int) -> (field: String, reason: String)? {
        if let contradiction = selfContradiction { return contradiction }
        if let reason = flow.consume(store, at: index) { return ("store", reason) }
        for (number, target) in into.enumerated() {
            if let reason = flow.produce(target.store, at: index) { return ("into[\(number)].store", reason) }
        }
        return nil
    }

    /// No target, a target that is the store itself or another target, a table in two places.
    private var selfContradiction: (field: String, reason: String)? {
        if into.isEmpty { return ("into", "names no target store: the split would only delete \(store)") }
        var placed: [String: String] = [:]
        for (number, target) in into.enumerated() {
            if target.store.sameFile(as: store) {
                return (
                    "into[\(number)].store", "names \(target.store), the store being split: a split writes new stores"
                )
            }
            if let other = into[..<number].firstIndex(where: { $0.store.sameFile(as: target.store) }) {
                return (
                    "into[\(number)].store",
                    "names \(target.store), as into[\(other)].store does: the second target would overwrite the first"
                )
            }
            for table in target.tables {
                if let earlier = placed[table.lowercased()] {
                    return (
                        "into[\(number)].tables",
                        "names table \(table), which \(earlier) already takes: a table goes to exactly one place"
                    )
                }
                placed[table.lowercased()] = "into[\(number)]"
            }
        }
        var discarded: Set<String> = []
        for table in discard {
            if let target = placed[table.lowercased()] {
                return (
                    "discard", "names table \(table), which \(target) takes: a table is kept or discarded, not both"
                )
            }
            if !discarded.insert(table.lowercased()).inserted { return ("discard", "names table \(table) twice") }
        }
        return nil
    }

    package func isNeeded(in container: AppContainer, fileSystem: FileSystem, probe: inout some StoreProbe) -> Bool {
        probe.exists(store, in: container, fileSystem: fileSystem)
    }

    /// The rows are rewritten; the external data is renamed or linked, and copied (so counted,
    /// every file measured) only to a target on another file system.
    package func estimate(_ estimator: inout StepEstimator) -> (bytes: Int64, seconds: Double)? {
        let copiesExternalData = !into.allSatisfy { estimator.sameDevice(store, $0.store) }
        guard let bytes = estimator.size(store, withSupportFolder: copiesExternalData) else { return nil }
        for target in into { estimator.produced[target.store] = bytes / Int64(max(into.count, 1)) }
        estimator.produced[store] = nil
        return (bytes, estimator.throughput.splitSetup + Double(bytes) / estimator.throughput.split)
    }

    package func run(_ run: StepRun) throws -> StepOutcome {
        let result = try run.run(SplitRun(context: run.context, step: self))
        var outcome = StepOutcome()
        outcome.relocation.quarantined = result.quarantined
        return outcome
    }

    package func skipped(_ account: inout some StepAccount, at index: Int) -> (reason: String, problem: String?) {
        account.absent(store, made: into.map(\.store), index: index)
    }

    /// Builds the targets' empty copies, as ``SplitRun`` builds them, after the same checks of the
    /// tables the split names.
    package func rehearse(_ rehearsal: inout some StepRehearsal, at index: Int) throws {
        let source = rehearsal.store(at: store)
        guard !source.isAbsent else { return }
        let copy = try rehearsal.schema(of: source)
        let targets = try copy.flatMap { try self.targets(of: $0.queue, exact: $0.exact, rehearsal) }
        for (index, target) in into.enumerated() {
            rehearsal.place(targets.map { .copy($0[index], exact: copy?.exact ?? false) } ?? .unknown, at: target.store)
        }
        rehearsal.place(.absent, at: store)
    }

    /// The targets, each an empty copy with its tables; nil when they cannot be built (a schema read
    /// as of its last checkpoint may lack what the `-wal` adds: the split says so when it runs).
    private func targets(
        of source: DatabaseQueue, exact: Bool, _ rehearsal: some StepRehearsal
    ) throws -> [DatabaseQueue]? {
        let objects = try source.read { db in try SchemaCopy.objects(db) }
        let tables = Set(objects.filter { $0.type == "table" }.map(\.name))
        let named = Set(into.flatMap(\.tables) + discard)
        let path = store.filePath(in: rehearsal.container)
        // A tie the checkpointed schema already holds is refused whatever the -wal adds (only a schema
        // change dropping it, not yet checkpointed, could undo it; the split checks again under its lock):
        // a store whose last rows are only in its -wal is the common case, and it was let through.
        if let separation = SchemaTies(
            objects.map { SchemaObject(type: $0.type, name: $0.name, table: $0.table, sql: $0.sql) }
        ).separated(by: self).first {
            throw separation.error(splitting: path)
        }
        var finding: BackstageError.Cause?
        if let table = named.sorted().first(where: { !tables.contains($0) }) {
            finding = .missingTable(table: table)
        } else if let table = tables.sorted().first(where: {
            !named.contains($0) && !SplitRun.coreDataMetadata.contains($0)
        }) {
            finding = .unassignedTable(table: table)
        }
        if let finding {
            guard exact else { return nil }
            throw BackstageError(finding, path: path, during: .checkingPlan)
        }
        let metadata = SplitRun.coreDataMetadata.filter { tables.contains($0) && !named.contains($0) }
        do {
            return try into.map { target in
                let kept = Set(target.tables).union(metadata)
                return try SchemaCopy.build(
                    objects.filter { kept.contains($0.table) && $0.type != "view" }, applied: [])
            }
        } catch let error as SchemaCopy.Unbuildable {
            rehearsal.logger.notice(
                "split targets not rehearsed", metadata: ["store": "\(path)", "reason": "\(error.reason)"])
            return nil
        }
    }
}

extension SchemaTies {
    /// The ties `split` breaks, its tables placed as it says (a table it does not name, such as Core
    /// Data's metadata that every target gets, breaks none).
    package func separated(by split: UpgradeStep.Split) -> [Separation] {
        var places: [String: Place] = [:]
        for target in split.into {
            for table in target.tables { places[table.lowercased()] = .store(target.store.description) }
        }
        for table in split.discard { places[table.lowercased()] = .discarded }
        return separated { places[$0] }
    }
}
