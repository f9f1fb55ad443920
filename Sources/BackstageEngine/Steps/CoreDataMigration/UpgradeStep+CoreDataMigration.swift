import BackstageModel
import BackstageSystem
import Foundation
import GRDB

extension StepKind {
    /// Core Data's migration between two model versions: ``UpgradeStep/CoreDataMigration``.
    public static let coreDataMigration = StepKind(rawValue: "coreDataMigration")
}

extension UpgradeStep {
    /// Does to a Core Data store what Core Data's migration from one model version to the next does
    /// (``CoreDataMigrationProgram``), in one transaction: the tables rewritten, `Z_PRIMARYKEY` and
    /// `Z_METADATA` left as Core Data leaves them for the new version, every row kept.
    public static func coreDataMigration(_ step: CoreDataMigration) -> UpgradeStep { UpgradeStep(step) }

    /// The parameters of ``UpgradeStep/coreDataMigration(_:)``.
    public struct CoreDataMigration: Sendable, Hashable, Codable {
        /// The Core Data store.
        public var store: ContainerLocation
        /// What the migration does, compiled from the two model versions.
        public var program: CoreDataMigrationProgram
        /// `omitForTesting` runs a program whose version hashes are unknown, leaving them out of the
        /// metadata: for simulations and benches of the rewrites only. Refused by default.
        public var missingHashes: CoreDataMigrationProgram.MissingHashes?

        public init(
            store: ContainerLocation, program: CoreDataMigrationProgram,
            missingHashes: CoreDataMigrationProgram.MissingHashes? = nil
        ) {
            self.store = store
            self.program = program
            self.missingHashes = missingHashes
        }
    }
}

extension UpgradeStep.CoreDataMigration: StepDefinition {
    package static let kind = StepKind.coreDataMigration
    /// As a schema migration's: the whole program is one transaction, `migrating` inside it.
    package static let phases: [StepPhase] = [.journaled, .locked, .migrating, .migrated, .done]
    package static var journaled: any JournaledStep.Type { CoreDataMigrationRun.self }

    /// The id journal records and errors name: `Model 2 → Model 3`.
    var migrationID: String { "\(program.sourceVersion) → \(program.destinationVersion)" }

    public var description: String { "migrate Core Data \(store): \(migrationID)" }

    package var locations: [ContainerLocation] { [store] }

    package func firstLocation(where predicate: (ContainerLocation) -> Bool) -> ContainerLocation? {
        predicate(store) ? store : nil
    }

    package var storeFields: [(field: String, location: ContainerLocation)] { [("store", store)] }
    package var launchLook: LaunchLook? { .store(store) }

    package var fieldProblems: [String] {
        var problems = [StepFields.problem(store, ".store")].compactMap { $0 }
        if program.statements.isEmpty { problems.append(".program has no statement: compile it from the two models") }
        if !program.unresolved.isEmpty, missingHashes != .omitForTesting {
            problems.append(
                ".program is unresolved (\(program.unresolved.map(\.description).joined(separator: "; "))): "
                    + "give the destination's version hashes (a compiled model's VersionInfo.plist or a captured store)"
            )
        }
        return problems
    }

    package func contradiction(after flow: inout PlanFlow, at index: Int) -> (field: String, reason: String)? {
        flow.migrate(store, [(migrationID, program.sql.joined(separator: ";\n"))], at: index)
    }

    /// The store is there and is of the source version (``CoreDataMigrationProgram/storeVersion(in:)``:
    /// its metadata, else its schema); a store that cannot be read counts as needing the run, which
    /// then names what is wrong with it.
    package func isNeeded(in container: AppContainer, fileSystem: FileSystem, probe: inout some StoreProbe) -> Bool {
        guard probe.exists(store, in: container, fileSystem: fileSystem) else { return false }
        guard let version = try? CoreDataMigrationRun.storeVersion(of: store.filePath(in: container), program: program)
        else { return true }
        return version == .source
    }

    /// What the program's statements cost on the tables they reach (``CoreDataMigrationCost``), sized
    /// from the store's b-trees; by the store's bytes when they cannot be read.
    package func estimate(_ estimator: inout StepEstimator) -> (bytes: Int64, seconds: Double)? {
        var probe = PlainProbe()
        let pending =
            estimator.produced[store] != nil
            || isNeeded(in: estimator.container, fileSystem: estimator.fileSystem, probe: &probe)
        guard pending, let bytes = estimator.size(store, withSupportFolder: false) else { return nil }
        let path = (estimator.movedFrom[store] ?? store).filePath(in: estimator.container)
        let works = CoreDataMigrationCost.works(program)
        let sizes = try? BTreeSizes.read(
            path, fileSystem: estimator.fileSystem, tables: CoreDataMigrationCost.tables(works))
        let seconds = CoreDataMigrationCost.seconds(
            works, sizes: sizes, storeBytes: bytes, rates: estimator.throughput.coreDataMigrationRates)
        return (bytes, estimator.throughput.perStep + seconds)
    }

    package func run(_ run: StepRun) throws -> StepOutcome {
        var outcome = StepOutcome()
        outcome.unchanged = try run.run(CoreDataMigrationRun(context: run.context, step: self))
        return outcome
    }

    /// Why the step had nothing to do: the store's version as the program tells it (``CoreDataMigrationProgram/StoreVersion/reason``), or no store there.
    ///
    /// A store of neither version is sound only when a later Core Data migration of the plan knows
    /// it (the store is further along the chain already). Otherwise it is a problem, and the run
    /// does not record the version as reached: an older copy a relocation kept (a restored backup),
    /// or a store of another model, left as it is, would be opened by the new build as if migrated.
    package func skipped(_ account: inout some StepAccount, at index: Int) -> (reason: String, problem: String?) {
        let path = store.filePath(in: account.container)
        guard account.exists(store),
            let version = try? CoreDataMigrationRun.storeVersion(of: path, program: program),
            let reason = version.reason
        else { return account.skippedInPlace(store, index: index) }
        guard case .other = version else { return (reason, nil) }
        switch CoreDataLineage.later(knowing: path, at: store, in: account.steps[(index + 1)...]) {
        case .known(let later):
            let place = account.place(of: later)
            return ("\(reason); step \(place.step) of \(place.plan) takes it from its version", nil)
        case .cannotTell:
            return (reason, nil)
        case .unknown:
            let place = account.place(of: index)
            return (
                reason,
                "step \(place.step) of \(place.plan) migrates Core Data \(store) from \(program.sourceVersion) to "
                    + "\(program.destinationVersion), but the store there is \(reason), and no later step of the "
                    + "plan knows its version: it was left as it is (an older copy kept in its place, such as a "
                    + "restored backup, or a store of another model)"
            )
        }
    }

    /// Runs the program's SQL on the empty copy of the schema the store will have: a statement that
    /// does not compile there fails the dry run, before anything is changed.
    package func rehearse(_ rehearsal: inout some StepRehearsal, at index: Int) throws {
        let current = rehearsal.store(at: store)
        guard
            let copy = try rehearsal.copyToChange(
                store, at: index, isNeeded: { isNeeded(in: $0, fileSystem: $1, probe: &$2) })
        else { return }
        // A store on disk that a relocation before brings here, of neither version: left alone when a
        // later step takes it from its version (or may have: a step of another kind), else refused
        // by its version, which says more than its schema's failure would (an older copy, a release
        // whose plan is missing).
        if case .disk(let path) = current,
            let version = try? CoreDataMigrationRun.storeVersion(of: path, program: program),
            case .other = version, let reason = version.reason
        {
            let later = rehearsal.steps[(index + 1)...]
            guard case .unknown = CoreDataLineage.later(knowing: path, at: store, in: later) else { return }
            throw BackstageError(
                .migrationWouldFail(id: migrationID, message: "the store is \(reason)"),
                path: store.filePath(in: rehearsal.container), during: .checkingPlan)
        }
        do {
            try copy.queue.inTransaction { db in
                try program.apply(to: db, missingHashes: .omitForTesting, metadata: false)
                return .commit
            }
            rehearsal.place(.copy(copy.queue, exact: copy.exact), at: store)
        } catch let error as DatabaseError {
            let path = store.filePath(in: rehearsal.container)
            guard copy.exact else {
                rehearsal.logger.notice(
                    "Core Data migration not rehearsed past a failure", metadata: ["store": "\(path)"])
                rehearsal.place(.unknown, at: store)
                return
            }
            throw BackstageError(
                .migrationWouldFail(id: migrationID, message: error.message ?? "\(error.resultCode)"), path: path,
                during: .checkingPlan)
        }
    }
}
