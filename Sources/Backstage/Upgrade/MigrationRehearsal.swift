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

    /// What is at a location at a step of the rehearsal.
    fileprivate enum Holder {
        /// The store on disk, untouched by the steps so far.
        case disk(String)
        /// The empty copy of the schema it will have; not `exact` when it was read from a store
        /// whose `-wal` holds frames (read as of its last checkpoint, without touching the `-shm`).
        case copy(DatabaseQueue, exact: Bool)
        /// Nothing, or a store whose schema could not be rebuilt.
        case absent
        case unknown
    }

    func rehearse(_ plan: UpgradePlan) throws {
        var places: [String: Holder] = [:]
        func holder(_ location: ContainerLocation) -> Holder {
            if let known = places[location.fileKey] { return known }
            let path = location.filePath(in: container)
            return fileSystem.exists(path) ? .disk(path) : .absent
        }
        let account = RunAccount(plan: plan, container: container, fileSystem: fileSystem)
        for (index, step) in plan.steps.enumerated() {
            switch step {
            case .relocate(let relocate):
                let moving = holder(relocate.from)
                guard !moving.isAbsent else { continue }
                // A store already at the destination is a conflict: the source goes to quarantine.
                if holder(relocate.to).isAbsent { places[relocate.to.fileKey] = moving }
                places[relocate.from.fileKey] = .absent
            case .split(let split):
                let source = holder(split.store)
                guard !source.isAbsent else { continue }
                let copy = try schema(of: source)
                let targets = try copy.flatMap { try self.split(split, of: $0.queue, exact: $0.exact) }
                for (index, target) in split.into.enumerated() {
                    places[target.store.fileKey] =
                        targets.map { .copy($0[index], exact: copy?.exact ?? false) } ?? .unknown
                }
                places[split.store.fileKey] = .absent
            case .migrateSchema(let migrate):
                let store = holder(migrate.store)
                // A store that is not, and will not be, where the migration looks, a few letters from one
                // that is: a typo. (A store the app makes only when a feature is first used is not
                // refused: its name is not that close to another's.)
                if store.isAbsent, !migrate.store.isPurgeable,
                    account.laterStep(taking: migrate.store, after: index) == nil,
                    !account.isProduced(migrate.store),
                    let typo = account.closestPresent(
                        to: migrate.store, where: { !holder($0).isAbsent }),
                    RunAccount.looksLikeTypo(typo, of: migrate.store)
                {
                    let place = plan.stepPlace(index)
                    throw UpgradeError.missingStore(
                        plan: place.plan, step: place.step, store: migrate.store.description, closest: typo.description)
                }
                // The store where it is, stamped as migrated since it last changed: not opened.
                if case .disk(let path) = store, path == migrate.store.filePath(in: container),
                    !MigrateRun.isNeeded(migrate, in: container, fileSystem: fileSystem)
                {
                    continue
                }
                guard let copy = try schema(of: store) else { continue }
                places[migrate.store.fileKey] =
                    try rehearse(migrate, on: copy.queue, exact: copy.exact)
                    ? .copy(copy.queue, exact: copy.exact) : .unknown
            case .quarantine:
                continue
            }
        }
    }

    /// The empty copy of what `holder` holds; nil when there is nothing or it cannot be rebuilt.
    private func schema(of holder: Holder) throws -> (queue: DatabaseQueue, exact: Bool)? {
        switch holder {
        case .absent, .unknown: return nil
        case .copy(let queue, let exact): return (queue, exact)
        case .disk(let path):
            do {
                let walHasFrames = ((try? fileSystem.status(path + "-wal"))?.size ?? 0) > 0
                return (try SchemaCopy.make(of: path), !walHasFrames)
            } catch {
                // A store that cannot be read is the step's to report, with its own error, when it runs.
                logger.notice("schema not rehearsed", metadata: ["store": "\(path)", "reason": "\(error)"])
                return nil
            }
        }
    }

    /// The targets of `split`, each an empty copy with its tables (as ``SplitRun`` builds them),
    /// after the same checks of the tables it names.
    private func split(_ split: UpgradeStep.Split, of source: DatabaseQueue, exact: Bool) throws -> [DatabaseQueue]? {
        let objects = try source.read { db in try SchemaCopy.objects(db) }
        let tables = Set(objects.filter { $0.type == "table" }.map(\.name))
        let named = Set(split.into.flatMap(\.tables) + split.discard)
        let path = split.store.filePath(in: container)
        // A tie the checkpointed schema already holds is refused whatever the -wal adds (only a schema
        // change dropping it, not yet checkpointed, could undo it; the split checks again under its lock):
        // a store whose last rows are only in its -wal is the common case, and it was let through.
        if let separation = SchemaTies(
            objects.map { SchemaObject(type: $0.type, name: $0.name, table: $0.table, sql: $0.sql) }
        ).separated(by: split).first {
            throw separation.error(splitting: path)
        }
        var finding: UpgradeError?
        if let table = named.sorted().first(where: { !tables.contains($0) }) {
            finding = .missingTable(store: path, table: table)
        } else if let table = tables.sorted().first(where: {
            !named.contains($0) && !SplitRun.coreDataMetadata.contains($0)
        }) {
            finding = .unassignedTable(store: path, table: table)
        }
        if let finding {
            // A schema read as of the last checkpoint may lack what the -wal adds: the split says so when it runs.
            guard exact else { return nil }
            throw finding
        }
        let metadata = SplitRun.coreDataMetadata.filter { tables.contains($0) && !named.contains($0) }
        do {
            return try split.into.map { target in
                let kept = Set(target.tables).union(metadata)
                return try SchemaCopy.build(
                    objects.filter { kept.contains($0.table) && $0.type != "view" }, applied: [])
            }
        } catch let error as SchemaCopy.Unbuildable {
            logger.notice("split targets not rehearsed", metadata: ["store": "\(path)", "reason": "\(error.reason)"])
            return nil
        }
    }

    /// Runs the step's pending migrations on `copy`, as ``MigrateRun`` runs them on the store.
    /// - returns: False when a migration failed on a copy that may lack what a `-wal` adds: the
    ///   run finds out on the store itself.
    private func rehearse(_ migrate: UpgradeStep.MigrateSchema, on copy: DatabaseQueue, exact: Bool) throws -> Bool {
        let path = migrate.store.filePath(in: container)
        var migrator = DatabaseMigrator()
        for migration in migrate.migrations {
            let sql = migration.sql
            // No foreign-key check: the copy has no rows, so a row the migration adds that refers to
            // one of the store's would fail here and not on the store. The run checks them.
            migrator.registerMigration(migration.id, foreignKeyChecks: .immediate) { db in
                try MigrationSQL.execute(sql, in: db)
            }
        }
        let applied = try copy.read { db in try migrator.appliedIdentifiers(db) }
        for migration in migrate.migrations where !applied.contains(migration.id) {
            do {
                try migrator.migrate(copy, upTo: migration.id)
            } catch let error as DatabaseError {
                guard exact else {
                    logger.notice(
                        "migration not rehearsed past a failure",
                        metadata: ["store": "\(path)", "id": "\(migration.id)"])
                    return false
                }
                throw UpgradeError.migrationWouldFail(
                    store: path, id: migration.id, message: error.message ?? "\(error.resultCode)")
            } catch let refusal as MigrationSQL.Refusal {
                throw UpgradeError.migrationRefused(
                    store: path, id: migration.id, statement: refusal.statement,
                    reason: refusal.reason + " (found before anything was changed)")
            }
        }
        return true
    }
}

extension MigrationRehearsal.Holder {
    fileprivate var isAbsent: Bool {
        if case .absent = self { return true }
        return false
    }
}

/// Empty in-memory copies of a store's schema.
enum SchemaCopy {
    struct Unbuildable: Error {
        var reason: String
    }

    /// One schema object, in creation order.
    struct Object {
        var type: String
        var name: String
        var table: String
        var sql: String
    }

    /// The objects of `db`'s schema that a copy creates: no SQLite table, no shadow table (its
    /// virtual table makes it), in the order they were created.
    static func objects(_ db: Database) throws -> [Object] {
        let shadows = Set(
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow'")
        )
        return try Row.fetchAll(
            db, sql: "SELECT type, name, tbl_name, sql FROM main.sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
        )
        .map { Object(type: $0["type"], name: $0["name"], table: $0["tbl_name"], sql: $0["sql"]) }
        .filter { !$0.name.hasPrefix("sqlite_") && !shadows.contains($0.name) }
    }

    /// A copy of the schema of the store at `path`, with the identifiers of the migrations it
    /// applied, read `immutable=1`: no lock, no `-shm`, no byte written; a `-wal`'s frames are not read.
    static func make(of path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "Backstage.MigrationRehearsal"
        let source: DatabaseQueue
        do {
            source = try DatabaseQueue(path: StoreFileSet.immutableURI(path), configuration: configuration)
        } catch {
            throw UpgradeError(error, path: path)
        }
        defer { try? source.close() }
        let found: [Object] = try source.read { db in try Self.objects(db) }
        let applied: [String] = try source.read { db in
            guard try db.tableExists("grdb_migrations") else { return [] }
            return try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        }
        return try build(found, applied: applied)
    }

    /// An in-memory database with `objects`, and `applied` recorded as GRDB records migrations.
    static func build(_ objects: [Object], applied: [String]) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let copy = try DatabaseQueue(configuration: configuration)
        do {
            try copy.writeWithoutTransaction { db in
                for object in objects { try db.execute(sql: object.sql) }
                for identifier in applied {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
                }
                try MissingFunctions.register(in: db)
            }
        } catch let error as DatabaseError {
            throw Unbuildable(reason: error.message ?? "\(error.resultCode)")
        }
        return copy
    }
}
