import BackstageModel
import BackstageSystem
import Foundation
import GRDB

extension StepKind {
    /// Applies SQL migrations: ``UpgradeStep/MigrateSchema``.
    public static let migrateSchema = StepKind(rawValue: "migrateSchema")
}

extension StepPhase {
    /// The boundaries a schema migration passes, in order.
    public static let migrationBoundaries: [StepPhase] = [.journaled, .locked, .migrating, .migrated, .done]
}

extension UpgradeStep {
    /// Applies SQL migrations by identifier with GRDB's `DatabaseMigrator`; each runs once.
    public static func migrateSchema(_ step: MigrateSchema) -> UpgradeStep { UpgradeStep(step) }

    /// ``migrateSchema(_:)`` written inline.
    public static func migrateSchema(_ store: ContainerLocation, _ migrations: [MigrateSchema.Migration]) -> UpgradeStep
    {
        .migrateSchema(MigrateSchema(store: store, migrations: migrations))
    }

    /// The parameters of ``UpgradeStep/migrateSchema(_:)``.
    public struct MigrateSchema: Sendable, Hashable, Codable {
        /// One migration: an identifier recorded in `grdb_migrations`, and its SQL.
        public typealias Migration = SchemaMigration

        /// How foreign keys are checked while the migrations run, as GRDB's `DatabaseMigrator`
        /// offers: `immediate` (enforced statement by statement), `deferred` (off while a
        /// migration runs, then only the violations it added fail it: a store that already held
        /// some, as real stores do, still migrates), `none` (not checked). Deferred by default.
        public enum ForeignKeyChecks: String, Sendable, Hashable, Codable { case immediate, deferred, none }

        public var store: ContainerLocation
        public var migrations: [Migration]
        public var foreignKeyChecks: ForeignKeyChecks?
        public init(store: ContainerLocation, migrations: [Migration], foreignKeyChecks: ForeignKeyChecks? = nil) {
            self.store = store
            self.migrations = migrations
            self.foreignKeyChecks = foreignKeyChecks
        }
    }
}

extension UpgradeStep.MigrateSchema: StepDefinition {
    package static let kind = StepKind.migrateSchema
    package static let phases = StepPhase.migrationBoundaries
    package static var journaled: any JournaledStep.Type { MigrateRun.self }

    public var description: String { "migrate \(store): \(migrations.map(\.id).joined(separator: ", "))" }

    package var locations: [ContainerLocation] { [store] }

    package func firstLocation(where predicate: (ContainerLocation) -> Bool) -> ContainerLocation? {
        predicate(store) ? store : nil
    }

    package var storeFields: [(field: String, location: ContainerLocation)] { [("store", store)] }
    package var launchLook: LaunchLook? { .store(store) }

    package var fieldProblems: [String] {
        var problems = [StepFields.problem(store, ".store")].compactMap { $0 }
        if migrations.isEmpty { problems.append(".migrations is empty: give at least one {\"id\", \"sql\"}") }
        var seen: Set<String> = []
        for (index, migration) in migrations.enumerated() {
            let place = ".migrations[\(index)]"
            if migration.id.trimmingCharacters(in: .whitespaces).isEmpty {
                problems.append("\(place).id is empty: give each migration an identifier, such as v2-add-rating")
            } else if !seen.insert(migration.id).inserted {
                problems.append(
                    "\(place).id \(migration.id) is the identifier of an earlier migration of this step: each has its own"
                )
            }
            if StepFields.isBlank(sql: migration.sql) {
                problems.append("\(place).sql holds no SQL statement: write the migration's SQL")
            }
        }
        return problems
    }

    package func contradiction(after flow: inout PlanFlow, at index: Int) -> (field: String, reason: String)? {
        for (number, migration) in migrations.enumerated() {
            if let other = migrations[..<number].firstIndex(where: { $0.id == migration.id }) {
                return (
                    "migrations[\(number)].id",
                    "is \"\(migration.id)\", as migrations[\(other)].id is: "
                        + "each identifier runs once, so the second would never run"
                )
            }
            if migration.sql.allSatisfy(\.isWhitespace) {
                return (
                    "migrations[\(number)].sql",
                    "is empty: migration \"\(migration.id)\" would be recorded as applied without changing anything"
                )
            }
        }
        return flow.migrate(store, migrations.map { ($0.id, $0.sql) }, at: index)
    }

    package func isNeeded(in container: AppContainer, fileSystem: FileSystem, probe: inout some StoreProbe) -> Bool {
        MigrateRun.isNeeded(self, in: container, fileSystem: fileSystem, probe: &probe)
    }

    /// The database is rewritten, never its external data: not listed, not counted. Its time comes
    /// from the statements and the sizes of the tables they name (``MigrationCost``).
    package func estimate(_ estimator: inout StepEstimator) -> (bytes: Int64, seconds: Double)? {
        var probe = PlainProbe()
        let pending =
            estimator.produced[store] != nil
            || isNeeded(in: estimator.container, fileSystem: estimator.fileSystem, probe: &probe)
        guard pending, let bytes = estimator.size(store, withSupportFolder: false) else { return nil }
        let at = estimator.movedFrom[store] ?? store
        return (bytes, estimator.throughput.perStep + seconds(at: at, bytes: bytes, estimator))
    }

    /// What the migrations cost on the store now at `location`, from their statements and its
    /// tables' sizes; by its bytes alone when it cannot be read (not there yet, not SQLite).
    private func seconds(at location: ContainerLocation, bytes: Int64, _ estimator: StepEstimator) -> Double {
        let path = location.filePath(in: estimator.container)
        let works = migrations.flatMap { MigrationCost.works($0.sql) }
        // Only the b-trees the statements touch are read (a fifth of a 1 GB store's interior pages
        // when one table of five is migrated), unless one touches the whole store.
        var named: Set<String>? = []
        for work in works {
            switch work {
            case .constant: continue
            case .scan(let table), .index(let table), .rewrite(let table), .overwrite(let table):
                named?.insert(table.lowercased())
            case .wholeStore: named = nil
            }
        }
        guard let sizes = try? BTreeSizes.read(path, fileSystem: estimator.fileSystem, tables: named) else {
            return Double(bytes) / estimator.throughput.migrate
        }
        return MigrationCost.seconds(works, sizes: sizes, storeBytes: bytes, rates: estimator.throughput.migrationRates)
    }

    package func run(_ run: StepRun) throws -> StepOutcome {
        try run.runInPlace(MigrateRun(context: run.context, step: self))
    }

    package func skipped(_ account: inout some StepAccount, at index: Int) -> (reason: String, problem: String?) {
        account.skippedInPlace(store, index: index)
    }

    /// Runs the pending migrations on the empty copy of the schema the store will have, as
    /// ``MigrateRun`` runs them on the store.
    package func rehearse(_ rehearsal: inout some StepRehearsal, at index: Int) throws {
        guard
            let copy = try rehearsal.copyToChange(
                store, at: index, isNeeded: { isNeeded(in: $0, fileSystem: $1, probe: &$2) })
        else { return }
        let migrated = try rehearse(on: copy.queue, exact: copy.exact, rehearsal)
        rehearsal.place(migrated ? .copy(copy.queue, exact: copy.exact) : .unknown, at: store)
    }

    /// - returns: False when a migration failed on a copy that may lack what a `-wal` adds: the
    ///   run finds out on the store itself.
    private func rehearse(on copy: DatabaseQueue, exact: Bool, _ rehearsal: some StepRehearsal) throws -> Bool {
        let path = store.filePath(in: rehearsal.container)
        var migrator = DatabaseMigrator()
        for migration in migrations {
            let sql = migration.sql
            // No foreign-key check: the copy has no rows, so a row the migration adds that refers to
            // one of the store's would fail here and not on the store. The run checks them.
            migrator.registerMigration(migration.id, foreignKeyChecks: .immediate) { db in
                try MigrationSQL.execute(sql, in: db)
            }
        }
        let applied = try copy.read { db in try migrator.appliedIdentifiers(db) }
        for migration in migrations where !applied.contains(migration.id) {
            do {
                try migrator.migrate(copy, upTo: migration.id)
            } catch let error as DatabaseError {
                guard exact else {
                    rehearsal.logger.notice(
                        "migration not rehearsed past a failure",
                        metadata: ["store": "\(path)", "id": "\(migration.id)"])
                    return false
                }
                throw BackstageError(
                    .migrationWouldFail(id: migration.id, message: error.message ?? "\(error.resultCode)"), path: path,
                    during: .checkingPlan)
            } catch let refusal as MigrationSQL.Refusal {
                throw BackstageError(
                    .migrationRefused(
                        id: migration.id, statement: refusal.statement,
                        reason: refusal.reason + " (found before anything was changed)"), path: path, during: .upgrading
                )
            }
        }
        return true
    }
}
