import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// Splits one store into several by table, under the source's exclusive lock.
///
/// Each target is built in a temporary file beside its final name: schema first, rows copied with
/// `INSERT ... SELECT` (rowids kept), then indexes and triggers, Core Data metadata tables
/// (`Z_METADATA`, `Z_PRIMARYKEY`, `Z_MODELCACHE`) in every target, and the Core Data external
/// data files its rows reference. Every target is verified (each table's row count equals the
/// source's, counted by a ``SplitCensus`` while the rows are copied) and fsynced before the
/// journal says `verified`; then the temporaries are renamed into place and only then is the
/// source removed. A crash before `verified` is undone, after it finished, under the source's lock
/// and only for the source it verified (``recover()``).
struct SplitRun {
    let context: StepContext
    let step: UpgradeStep.Split

    static let coreDataMetadata: Set<String> = ["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"]

    init(context: StepContext, step: UpgradeStep.Split) {
        self.context = context
        self.step = step
    }

    /// Rebuilds the step from a journal record, for recovery.
    init(context: StepContext, record: UpgradeJournal) {
        let targets = (record.targets ?? []).map { UpgradeStep.Split.Target(store: $0, tables: []) }
        self.init(context: context, step: UpgradeStep.Split(store: record.source, into: targets))
    }

    var fileSystem: FileSystem { context.fileSystem }
    var source: StoreFileSet { StoreFileSet(main: step.store.url(in: context.container)) }
    var targets: [StoreFileSet] { step.into.map { StoreFileSet(main: $0.store.url(in: context.container)) } }

    /// True when the source store is still there (a cheap `stat`).
    static func isNeeded(_ step: UpgradeStep.Split, in container: AppContainer, fileSystem: FileSystem) -> Bool {
        fileSystem.exists(step.store, in: container)
    }

    func run(observing observer: MoveObserver) throws -> RelocationReport {
        var report = RelocationReport()
        let src = source
        guard fileSystem.exists(src.main.path) else { return report }
        for target in targets {
            if fileSystem.exists(target.main.path) {
                throw BackstageError(.destinationExists, path: target.main.path, during: .relocating)
            }
            report.quarantined += try context.quarantine.moveStaleFiles(of: target)
            try fileSystem.createDirectories(target.directory.path)
        }
        let record = UpgradeJournal(
            step: .split, phase: .journaled, source: step.store, destination: step.store,
            targets: step.into.map(\.store))
        observer.phase(.preflight)
        try context.journal.write(record)
        observer.phase(.journaled)
        var committed = false
        do {
            let lock = try StoreLock(path: src.main.path, timeout: context.busyTimeout, during: .upgrading)
            defer { lock.close() }
            // What the targets are built from, checked again before `verified` and kept in the journal.
            let locked = try StoreStamp.take(of: src, fileSystem: fileSystem)
            observer.phase(.locked)
            let plan = try lock.withConnection { db in try self.plan(db) }
            // Counted on the second core while this one copies; never outlives the lock (the
            // defers run in reverse order: the census stops before the lock is released).
            // Only what is copied: a discarded table's rows are not read.
            let copiedTables = Set(plan.tablesByTarget.joined())
            let census = try SplitCensus(
                store: src.main.path, tables: copiedTables.sorted(),
                shadows: plan.shadows.filter { copiedTables.contains($0.key) }.values.joined().sorted(),
                references: fileSystem.exists(src.externalDataFolder.path))
            var counted = false
            defer { if !counted { census.cancel() } }
            for target in targets { try removeTemporaries(target) }
            let copied = try buildTargets(plan, observer: observer)
            let counts = try census.wait()
            counted = true
            try counts.verify(copied: copied, targets: targets.map(\.temporaryMain.path))
            let external = try placeExternalData(tablesByTarget: plan.tablesByTarget, references: counts.references)
            for target in targets {
                try fileSystem.syncFile(target.temporaryMain.path)
                try fileSystem.syncDirectory(target.directory.path)
            }
            observer.phase(.copied)
            // SQLite's lock keeps SQLite's writers out, not a process truncating or replacing the file.
            let now = try StoreStamp.take(of: src, fileSystem: fileSystem)
            guard let locked, locked.change(to: now) == nil else {
                throw BackstageError(
                    .sourceChanged(reason: locked?.change(to: now) ?? "it appeared under the lock"),
                    path: src.main.path, during: .relocating)
            }
            var verified = record.with(phase: .verified)
            verified.externalDataTarget = external.bulk.map { step.into[$0].store }
            verified.verifiedSource = locked
            try context.journal.write(verified)
            observer.phase(.verified)
            if context.isCancelled() {
                throw BackstageError(.cancelled, path: "split \(step.store)", during: .upgrading)
            }
            committed = true
            try commitTemporaries(bulk: external.bulk)
            try context.journal.write(verified.with(phase: .committed))
            observer.phase(.committed)
            report.quarantined += try cleanUpExternalData(external)
            try removeSource(lockedBy: lock)
        } catch {
            if !committed {
                // Undone only when every temporary is gone: else the journal stays, and the next run's
                // recovery discards what is left before it splits again.
                var undone = true
                for target in targets {
                    do { try removeTemporaries(target) } catch let failure {
                        undone = false
                        context.logger.warning(
                            "a split's temporary could not be removed; the journal is kept",
                            metadata: ["store": "\(target.main.path)", "error": "\(failure)"])
                    }
                }
                if undone {
                    do { try context.journal.clear() } catch let failure {
                        context.logger.warning(
                            "the journal of an undone split stays; the next run clears it",
                            metadata: ["error": "\(failure)"])
                    }
                }
            }
            // SQLite's failures reading the source (its schema, under the lock) name the source.
            if let error = error as? DatabaseError {
                throw BackstageError(error, path: src.main.path, during: .upgrading)
            }
            throw error
        }
        try context.quarantine.removeCheckpointedSidecars(of: src)
        try fileSystem.syncDirectory(src.directory.path)
        observer.phase(.sourceRemoved)
        try context.journal.clear()
        observer.phase(.done)
        return report
    }

    /// Finishes (after `verified`) or undoes (before) a split a crash interrupted.
    ///
    /// A recovery vouches for what it removes: it finishes a split only under the source's lock
    /// (another process holding the source is "store in use", as for a run), and only while the
    /// source is the store the split verified (``StoreStamp``, kept in the journal). A source
    /// written since `verified` is redone: the targets built from it are discarded and the step
    /// runs again from the start. After `committed` the targets are authoritative: a source written
    /// since goes to quarantine, never deleted.
    func recover() throws -> String {
        guard let record = try context.journal.read() else { return "nothing to recover" }
        let phase = record.phase
        guard phase == .verified || phase == .committed else {
            for target in targets { try removeTemporaries(target) }
            try context.journal.clear()
            return "rolled back"
        }
        let bulk = record.externalDataTarget.flatMap { moved in step.into.firstIndex { $0.store == moved } }
        guard fileSystem.exists(source.main.path) else {
            // Removed after the commit: the targets are all there is.
            return try finish(record, bulk: bulk, sourceLock: nil, sourceChange: nil)
        }
        // Before the lock, whose checkpoint would fold a new -wal frame into the main file.
        let unlocked = try StoreStamp.take(of: source, fileSystem: fileSystem)
        let lock = try StoreLock.forRecovery(of: source, timeout: context.busyTimeout, fileSystem: fileSystem)
        defer { lock.close() }
        let change: String? =
            if let verified = record.verifiedSource {
                try verified.change(to: unlocked)
                    ?? verified.change(to: StoreStamp.take(of: source, fileSystem: fileSystem))
            } else {
                "the journal does not say what it was when the split verified it"
            }
        if let change, phase == .verified {
            context.logger.warning(
                "the source changed after the split verified it; the split runs again",
                metadata: ["store": "\(source.main.path)", "change": "\(change)"])
            try discardTargets(bulk: bulk)
            try context.journal.clear()
            return "rolled back: \(source.main.path) changed after it was verified (\(change)), so the split runs again"
        }
        return try finish(record, bulk: bulk, sourceLock: lock, sourceChange: change)
    }

    /// Finishes a split past `verified`: commits the targets, checks their external data, and removes
    /// the source under `sourceLock`, or quarantines it when it changed since it was verified.
    private func finish(
        _ record: UpgradeJournal, bulk: Int?, sourceLock: StoreLock?, sourceChange: String?
    ) throws -> String {
        try commitTemporaries(bulk: bulk)
        try context.journal.write(record.with(phase: .committed))
        // What each target's rows reference, read back from them: the recovery vouches for it.
        let referencedBy = try targets.map { target in
            let lock = try StoreLock(path: target.main.path, timeout: context.busyTimeout, during: .upgrading)
            defer { lock.close() }
            do {
                return try lock.withConnection { db in try ExternalDataReferences.referenced(db) }
            } catch let error as DatabaseError {
                throw BackstageError(error, path: target.main.path, during: .upgrading)
            }
        }
        try verifyExternalData(referencedBy: referencedBy)
        if bulk != nil {
            _ = try cleanUpExternalData(ExternalData(referencedBy: referencedBy, bulk: bulk))
        } else if fileSystem.exists(source.main.path) || fileSystem.exists(source.supportFolder.path) {
            // Every referenced external file was linked or copied before `verified`; the rest is kept.
            let referenced = Set(targets.flatMap { (try? fileSystem.contents(of: $0.externalDataFolder.path)) ?? [] })
            _ = try cleanUpExternalData(ExternalData(referencedBy: [referenced], bulk: nil))
        }
        var outcome = "completed"
        if let sourceChange, fileSystem.exists(source.main.path) {
            // Still under the lock: the rows written to it since are kept, whole, beside the targets.
            let kept = try context.quarantine.move(source.main, reason: .conflict)
            outcome =
                "completed: \(source.main.path) changed after it was verified (\(sourceChange)), so it is kept at \(kept.to)"
        } else {
            try fileSystem.removeFile(source.main.path)
        }
        try fileSystem.removeTree(source.supportFolder.path)
        sourceLock?.close()
        try context.quarantine.removeCheckpointedSidecars(of: source)
        try fileSystem.syncDirectory(source.directory.path)
        try context.journal.clear()
        return outcome
    }

    /// Undoes a split whose journal says `verified` but whose source is no longer what it verified:
    /// the targets built from it (their temporaries, and those the interrupted commit had renamed into
    /// place) are discarded, not authoritative, and the source's external data folder comes back
    /// from the target it was renamed into. The source, authoritative, is left as it is.
    private func discardTargets(bulk: Int?) throws {
        let external = source.externalDataFolder
        for (index, target) in targets.enumerated() {
            if index == bulk, fileSystem.exists(target.externalDataFolder.path), !fileSystem.exists(external.path) {
                try fileSystem.createDirectories(source.supportFolder.path)
                try fileSystem.rename(target.externalDataFolder.path, to: external.path)
                try fileSystem.syncDirectory(source.supportFolder.path)
                try fileSystem.syncDirectory(target.supportFolder.path)
            }
            try removeTemporaries(target)
            // The run refused a target already there: one at its final name is this split's own.
            try fileSystem.removeFile(target.main.path)
            try context.quarantine.removeCheckpointedSidecars(of: target)
            try fileSystem.removeTree(target.supportFolder.path)
            try fileSystem.syncDirectory(target.directory.path)
        }
    }

    /// Throws when a target's rows reference external data files it does not have: the split is
    /// then not completed (the journal stays, the source's remaining files are kept).
    private func verifyExternalData(referencedBy: [Set<String>]) throws {
        for (index, target) in targets.enumerated() {
            let missing = ExternalDataReferences.missing(
                referencedBy[index], in: target.externalDataFolder, fileSystem: fileSystem)
            if missing > 0 {
                throw BackstageError(
                    .externalDataMissing(missing: missing, referenced: referencedBy[index].count),
                    path: step.into[index].store.description, during: .upgrading)
            }
        }
    }

    // MARK: - Planning

    /// What the split copies where, read from the source's schema (rows are counted by the census).
    struct Plan: Sendable {
        var tablesByTarget: [[String]]
        var sql: [String: String]
        var withoutRowID: Set<String>
        /// Each virtual table's shadow tables: created by its `CREATE VIRTUAL TABLE`, copied with it.
        var shadows: [String: [String]] = [:]
        var pageSize: Int
        var pageCount: Int
        var isWAL: Bool
    }

    private func plan(_ db: Database) throws -> Plan {
        let tables = try Row.fetchAll(
            db, sql: "SELECT name, sql FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        // Shadow tables (an RTREE's _node, an FTS5's _data...) are not named in plans: they move
        // with their virtual table, by its own name.
        let listed = try Row.fetchAll(db, sql: "SELECT name, type FROM pragma_table_list WHERE schema = 'main'")
        let shadowNames = Set(listed.filter { ($0["type"] as String) == "shadow" }.map { $0["name"] as String })
        let virtualNames = listed.filter { ($0["type"] as String) == "virtual" }.map { $0["name"] as String }
        var shadows: [String: [String]] = [:]
        for name in virtualNames { shadows[name] = shadowNames.filter { $0.hasPrefix(name + "_") }.sorted() }
        var sql: [String: String] = [:]
        for row in tables where !shadowNames.contains(row["name"] as String) { sql[row["name"]] = row["sql"] }
        let named = Set(step.into.flatMap(\.tables) + step.discard)
        for table in named where sql[table] == nil {
            throw BackstageError(.missingTable(table: table), path: source.main.path, during: .checkingPlan)
        }
        for table in sql.keys.sorted() where !named.contains(table) && !Self.coreDataMetadata.contains(table) {
            throw BackstageError(.unassignedTable(table: table), path: source.main.path, during: .checkingPlan)
        }
        // What ties the tables together (foreign keys, triggers, views, full-text content) stays in one store.
        let objects = try Row.fetchAll(
            db,
            sql: "SELECT type, name, tbl_name, sql FROM main.sqlite_master WHERE type IN ('table', 'view', 'trigger') "
                + "AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        )
        .map { SchemaObject(type: $0["type"], name: $0["name"], table: $0["tbl_name"], sql: $0["sql"]) }
        .filter { !shadowNames.contains($0.name) }
        if let separation = SchemaTies(objects).separated(by: step).first {
            throw separation.error(splitting: source.main.path)
        }
        let metadata = Self.coreDataMetadata.filter { sql[$0] != nil && !named.contains($0) }.sorted()
        let withoutRowID = Set(sql.filter { $0.value.uppercased().contains("WITHOUT ROWID") }.keys)
        return Plan(
            tablesByTarget: step.into.map { $0.tables + metadata },
            sql: sql, withoutRowID: withoutRowID, shadows: shadows,
            pageSize: try Int.fetchOne(db, sql: "PRAGMA main.page_size") ?? 4096,
            pageCount: try Int.fetchOne(db, sql: "PRAGMA main.page_count") ?? 0,
            isWAL: (try String.fetchOne(db, sql: "PRAGMA main.journal_mode"))?.lowercased() == "wal")
    }

    // MARK: - Core Data external data

    /// The external data files each target's rows reference, and the target that takes the source's
    /// `_EXTERNAL_DATA` folder whole.
    struct ExternalData {
        /// The names each target's rows reference, in target order.
        var referencedBy: [Set<String>]
        /// The target (an index in ``SplitRun/targets``) whose support folder receives the source's
        /// folder in one rename at the commit, nil when every file is linked or copied one by one.
        var bulk: Int?

        var all: Set<String> { referencedBy.reduce(into: []) { $0.formUnion($1) } }
    }

    /// Before `verified`, gives each target the files its rows reference. The target referencing
    /// the most takes the source's folder whole at the commit, in one rename: a split of a store
    /// with ten thousand attachments would otherwise spend more time linking them one by one, and
    /// unlinking them from the source, than copying its rows. The source is untouched until then,
    /// so a crash before `verified` still leaves it whole. The other targets get hard links (the files
    /// are write-once, and the source's names go only after the commit), or copies across mounts.
    /// A reference is a BLOB of byte 0x02 then the file's UUID (Core Data's external-storage marker).
    private func placeExternalData(tablesByTarget: [[String]], references: [String: Set<String>]) throws -> ExternalData
    {
        let external = source.externalDataFolder
        guard fileSystem.exists(external.path) else {
            return ExternalData(referencedBy: targets.map { _ in [] }, bulk: nil)
        }
        let referencedBy = tablesByTarget.map { tables in
            tables.reduce(into: Set<String>()) { $0.formUnion(references[$1] ?? []) }
        }
        var bulk = referencedBy.indices.max { referencedBy[$0].count < referencedBy[$1].count }
        if let index = bulk, !canRenameExternalData(to: targets[index], naming: referencedBy[index]) { bulk = nil }
        for (index, target) in targets.enumerated() where index != bulk {
            let folder = target.temporarySupportFolder.appending(path: "_EXTERNAL_DATA")
            for name in referencedBy[index].sorted() where fileSystem.exists(external.appending(path: name).path) {
                try fileSystem.createDirectories(folder.path)
                try fileSystem.linkOrCopy(external.appending(path: name).path, to: folder.appending(path: name).path)
            }
            if fileSystem.exists(folder.path) { try fileSystem.syncDirectory(folder.path) }
        }
        return ExternalData(referencedBy: referencedBy, bulk: bulk)
    }

    /// Whether the source's external data folder can be renamed beside `target`: a hard link from
    /// it succeeds there. (Two mounts of one device share `st_dev`, yet a rename between them fails
    /// with `EXDEV`; a link fails the same way.)
    private func canRenameExternalData(to target: StoreFileSet, naming names: Set<String>) -> Bool {
        let external = source.externalDataFolder
        guard let name = names.sorted().first(where: { fileSystem.exists(external.appending(path: $0).path) }) else {
            return false
        }
        let probe = Self.linkProbe(of: target)
        do {
            try fileSystem.createDirectories(target.directory.path)
            try? fileSystem.removeFile(probe)
            try fileSystem.createHardLink(probe, to: external.appending(path: name).path)
            try fileSystem.removeFile(probe)
            return true
        } catch {
            try? fileSystem.removeFile(probe)
            return false
        }
    }

    /// After the commit: the files of the moved folder its target does not reference are removed
    /// when another target has its own link or copy, quarantined when no target references them
    /// (nothing is silently deleted). Without a moved folder, the source's unreferenced files are quarantined.
    private func cleanUpExternalData(_ external: ExternalData) throws -> [RelocationReport.QuarantinedFile] {
        let folder =
            if let bulk = external.bulk {
                targets[bulk].externalDataFolder
            } else {
                source.externalDataFolder
            }
        guard fileSystem.exists(folder.path) else { return [] }
        let kept = external.bulk.map { external.referencedBy[$0] } ?? []
        let all = external.all
        var moved: [RelocationReport.QuarantinedFile] = []
        for name in try fileSystem.contents(of: folder.path) where !kept.contains(name) {
            if external.bulk != nil && all.contains(name) {
                try fileSystem.removeFile(folder.appending(path: name).path)
            } else if !all.contains(name) {
                moved.append(
                    try context.quarantine.move(folder.appending(path: name), reason: .unreferencedExternalData))
            }
        }
        return moved
    }

    // MARK: - Commit

    /// Renames every temporary into place: support folder first (for the `bulk` target, the source's
    /// external data folder into it), then the database. Each rename is skipped once done, so a
    /// commit a crash interrupted is finished by running this again.
    private func commitTemporaries(bulk: Int?) throws {
        let external = source.externalDataFolder
        for (index, target) in targets.enumerated() {
            if fileSystem.exists(target.temporarySupportFolder.path) && !fileSystem.exists(target.supportFolder.path) {
                try fileSystem.rename(target.temporarySupportFolder.path, to: target.supportFolder.path)
            }
            let moved = target.externalDataFolder
            if index == bulk, fileSystem.exists(external.path), !fileSystem.exists(moved.path) {
                try fileSystem.createDirectories(target.supportFolder.path)
                try fileSystem.rename(external.path, to: moved.path)
                // Both folders the rename changed: the new name is durable only once its own
                // folder is fsynced (the target's folder holds the support folder, not its entries).
                try fileSystem.syncDirectory(target.supportFolder.path)
                try fileSystem.syncDirectory(source.supportFolder.path)
            }
            if fileSystem.exists(target.temporaryMain.path) {
                try fileSystem.rename(target.temporaryMain.path, to: target.main.path)
            }
            try fileSystem.syncDirectory(target.directory.path)
        }
    }

    /// SQLite's failure while rows were copied into `target`'s temporary: a damaged page is the
    /// source's (the rows are read from it), anything else (the target's folder read-only, a full
    /// disk) is the target's, which SQLite was writing.
    static func copyFailure(_ error: DatabaseError, source: StoreFileSet, target: StoreFileSet) -> BackstageError {
        let sourceSide = [ResultCode.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode)
        return BackstageError(error, path: sourceSide ? source.main.path : target.main.path, during: .upgrading)
    }

    private func removeSource(lockedBy lock: StoreLock) throws {
        try fileSystem.removeFile(source.main.path)
        try fileSystem.removeTree(source.supportFolder.path)
        lock.close()
    }

    /// The hard link ``canRenameExternalData(to:naming:)`` makes and removes beside a target.
    static func linkProbe(of target: StoreFileSet) -> String {
        target.directory.appending(path: TemporaryName.beside(target.main.lastPathComponent, suffix: "link-probe")).path
    }

    private func removeTemporaries(_ target: StoreFileSet) throws {
        try fileSystem.removeFile(Self.linkProbe(of: target))
        try fileSystem.removeTree(target.temporaryMain.path)
        try fileSystem.removeTree(target.temporarySupportFolder.path)
        for sidecar in Sidecar.allCases {
            try fileSystem.removeFile(target.temporaryMain.path + sidecar.rawValue)
        }
    }
}

extension SplitRun: JournaledStep {
    static let kind = StepKind.split
    var subject: String { step.store.path }

    static func recover(_ record: UpgradeJournal, in context: StepContext) throws -> String {
        try SplitRun(context: context, record: record).recover()
    }
}
