import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation
import GRDB
import Logging

/// Runs a plan's splits and migrations on empty in-memory copies of the schemas their stores will
/// have when each step runs, before anything is touched: a split naming a table the store lacks, or
/// separating tables its schema ties together (``SchemaTies``: a foreign key, a trigger, a view, a
/// full-text table's content, across two targets or into a discarded table), a migration whose SQL does not compile there (`no such table`) or would end Backstage's
/// transaction, is found by the dry run and refused by the run before its first step.
///
/// Only schemas are read (`sqlite_master` and the `grdb_migrations` identifiers), never a row,
/// with `immutable=1`: nothing is written, not even a `-shm`. A store whose `-wal` holds frames is
/// read as of its last checkpoint: a failure found there (a migration the `-wal` may already hold)
/// is left for the run to find on the store itself, but transaction control is refused all the same.
/// A migration step whose store is stamped up to date is not opened. A schema this SQLite
/// cannot rebuild (an unknown virtual-table module or collation) is not rehearsed: the run finds
/// out as it always did.
struct MigrationRehearsal {
    let container: AppContainer
    let fileSystem: FileSystem
    let logger: Logger

    func rehearse(_ plan: UpgradePlan) throws {
        var places = Places(
            container: container, fileSystem: fileSystem, logger: logger, plan: plan,
            account: RunAccount(plan: plan, container: container, fileSystem: fileSystem))
        for (index, step) in plan.steps.enumerated() {
            try step.definition.rehearse(&places, at: index)
        }
    }

    /// What is where at each step of the rehearsal: each location the steps so far changed, else the disk.
    private struct Places: StepRehearsal {
        let container: AppContainer
        let fileSystem: FileSystem
        let logger: Logger
        let plan: UpgradePlan
        let account: RunAccount
        private var places: [String: RehearsedStore] = [:]
        var steps: [UpgradeStep] { plan.steps }

        init(container: AppContainer, fileSystem: FileSystem, logger: Logger, plan: UpgradePlan, account: RunAccount) {
            self.container = container
            self.fileSystem = fileSystem
            self.logger = logger
            self.plan = plan
            self.account = account
        }

        func store(at location: ContainerLocation) -> RehearsedStore {
            if let known = places[location.fileKey] { return known }
            let path = location.filePath(in: container)
            return fileSystem.exists(path) ? .disk(path) : .absent
        }

        mutating func place(_ store: RehearsedStore, at location: ContainerLocation) {
            places[location.fileKey] = store
        }

        /// A store that is not, and will not be, where the step looks, a few letters from one that is:
        /// a typo. (A store the app makes only when a feature is first used is not refused: its name is
        /// not that close to another's.)
        func refuseTypo(of location: ContainerLocation, at index: Int) throws {
            guard !location.isPurgeable, account.laterStep(taking: location, after: index) == nil,
                !account.isProduced(location),
                let typo = account.closestPresent(to: location, where: { !store(at: $0).isAbsent }),
                RunAccount.looksLikeTypo(typo, of: location)
            else { return }
            let place = plan.stepPlace(index)
            throw BackstageError(
                .missingStore(plan: place.plan, step: place.step, closest: typo.description),
                path: location.description, during: .checkingPlan)
        }

        func schema(of store: RehearsedStore) throws -> (queue: DatabaseQueue, exact: Bool)? {
            switch store {
            case .absent, .unknown: return nil
            case .copy(let queue, let exact): return (queue, exact)
            case .disk(let path):
                do {
                    // Read `immutable=1`, the copy misses a `-wal`'s frames, and takes the pages of an
                    // interrupted transaction that a rollback journal left in the main file (SQLite
                    // rolls them back when it opens the store): either way, not exact. (A crash in
                    // COMMIT leaves the new schema written and its journal not yet deleted: taken as
                    // the schema, it refused the migration's rerun forever: "table already exists".)
                    let walHasFrames = ((try? fileSystem.status(path + "-wal"))?.size ?? 0) > 0
                    let journalIsThere = ((try? fileSystem.status(path + "-journal"))?.size ?? 0) > 0
                    return (try SchemaCopy.make(of: path), !walHasFrames && !journalIsThere)
                } catch {
                    // A store that cannot be read is the step's to report, with its own error, when it runs.
                    logger.notice("schema not rehearsed", metadata: ["store": "\(path)", "reason": "\(error)"])
                    return nil
                }
            }
        }
    }
}
