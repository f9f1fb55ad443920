import BackstageSystem
import Foundation
import GRDB

/// Why Backstage could not do what it was asked: what it was doing, the user's file and the
/// cause, as GRDB's `DatabaseError` is SQLite's code, message and statement.
///
/// Every failure of relocation, of an upgrade plan and of the app's stores is one of these.
/// Match on ``cause``; ``path`` names the file (the store, the plan, the container folder) and
/// ``activity`` what was being done to it:
///
/// ```swift
/// do {
///     try await Relocator(container: container).relocate()
/// } catch let error as BackstageError {
///     switch error.cause {
///     case .storeInUse, .storeHeldOpen: showCloseOtherWindows()
///     case .insufficientSpace(let needed, _): askForSpace(needed)
///     default: report(error)  // one sentence naming error.path and the cause
///     }
/// }
/// ```
///
/// When a step fails, what it had not committed is undone and what it had committed is finished
/// by the next run: an error never means a store half moved. No error carries a row's value.
public struct BackstageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What Backstage was doing when it failed.
    public enum Activity: String, Sendable, Hashable, Codable {
        /// Moving or copying stores between the container's folders: a ``Relocator`` run, a
        /// `relocate` or `quarantine` step.
        case relocating = "relocating"
        /// Running an upgrade plan's steps: a split, a migration.
        case upgrading = "upgrading"
        /// Reading an upgrade plan and checking it against the container, before anything changed.
        case checkingPlan = "checking the plan"
        /// Taking the container's run lock, reading or writing its journal, and finishing or
        /// undoing the step an interrupted run left in it.
        case journaling = "keeping the journal"
        /// Opening, switching or writing the app's own stores (``StoreContainer``).
        case loadingStores = "loading stores"
    }

    /// The cause, typed: SQLite's result code, a system call's `errno`, a store in use, a plan
    /// refused before it ran...
    public enum Cause: Sendable, Hashable {
        // MARK: The store and its file

        /// Another process has the store open: its SQLite lock was not free within `timeout` seconds.
        case storeInUse(timeout: Double)
        /// Other processes have the store's file open, idle (a rollback-journal connection holds no
        /// lock between transactions, so SQLite's lock alone cannot see it). Found through `/proc`.
        case storeHeldOpen(processes: [Int32])
        /// The store's folder cannot be written to: the source could not be removed after the move,
        /// nor a hot journal rolled back. Nothing was changed.
        case readOnlySource
        /// The file does not start with SQLite's header and the app did not declare it a store (a
        /// declared store without the header, such as an encrypted one, is moved whole instead).
        case notADatabase
        /// The database is damaged or truncated.
        case corruptStore(reason: String)
        /// A symbolic link stands where a store file should be; Backstage never follows it.
        case symlinkedStore
        /// No store was found at ``BackstageError/path``.
        case storeNotFound
        /// A store already exists at ``BackstageError/path``.
        case destinationExists
        /// The destination folder cannot be written to.
        case readOnlyDestination
        /// The destination has not `needed` bytes free for a copy (`available` are).
        case insufficientSpace(needed: Int64, available: Int64)
        /// The rename strategy was asked for, but the store (``BackstageError/path``) and
        /// `destination` are on different file systems.
        case crossDevice(destination: String)
        /// The copy at ``BackstageError/path`` does not match its source; the source was kept.
        case verificationFailed
        /// The store's file changed while Backstage held its lock (another process truncated, grew
        /// or replaced it, which SQLite's lock cannot stop), or since a step verified it. What was
        /// copied was removed; the store was left as it is.
        case sourceChanged(reason: String)
        /// The store and its destination are the same root. Nothing was changed.
        case sameSourceAndDestination
        /// Backstage's own lock on the store was released before the work that needed it ran.
        case lockReleased

        // MARK: What SQLite and the system said

        /// SQLite failed on the store: `code` is its extended result code, `message` its own words.
        case sqlite(code: Int32, message: String)
        /// A system call failed: the call, the path it was given and its `errno`.
        case system(FileSystemError)
        /// The work was cancelled: the step in progress was undone or finished, never left half done.
        case cancelled

        // MARK: The container and its journal

        /// Another Backstage process is working on the container (its run lock is held).
        case containerBusy
        /// The upgrade journal cannot be read, or names a step this version does not know. It was
        /// left in place.
        case unreadableJournal(reason: String)
        /// The journal was written by a newer Backstage (its format `version`; this one reads up to
        /// `supported`), whose steps this version cannot finish or undo.
        case newerJournal(version: Int, supported: Int)
        /// The journal's step in progress is in the shared container of the App Group
        /// `identifier`, which this run's ``AppContainer`` has no folder for.
        case journalInUndefinedAppGroup(identifier: String)
        /// The work names the shared container of an App Group (``BackstageError/path`` is its
        /// identifier) the ``AppContainer`` has no folder for (see
        /// ``AppContainer/addingAppGroup(_:at:)``). Nothing was changed.
        case undefinedAppGroup
        /// A newer build of the app upgraded the container's storage to `version`, which this
        /// build's plans (knowing `known`) do not reach: an older build installed over a newer one.
        /// Nothing was changed.
        case newerStorage(version: String, known: [String])
        /// A build whose history parted from this one's upgraded the storage to `version`: this
        /// build's plans (knowing `known`) share an earlier version with it but not `version` (a
        /// sibling chain, v2 → v2.1, over storage a v3 build made). Nothing was changed.
        case unknownStorage(version: String, known: [String])

        // MARK: The plan

        /// The plan file cannot be read or is not a valid plan.
        case invalidPlan(reason: String)
        /// The plan contradicts itself (see ``UpgradePlan/checkConsistency()``): its step `step`
        /// (from 1), field `field` (such as `split.into[1].store`). Nothing was changed.
        case inconsistentPlan(step: Int, field: String, reason: String)
        /// Step `step` of plan `plan` migrates the store at ``BackstageError/path``, where no store
        /// is nor will be when it runs, a few letters from `closest`, where one is (a typo).
        case missingStore(plan: String, step: Int, closest: String)
        /// Table `table` of the store being split is in no target and not discarded.
        case unassignedTable(table: String)
        /// Table `table`, named by a split, is not in the store.
        case missingTable(table: String)
        /// A split of the store would separate two tables its schema ties together (`tie`: a
        /// foreign key, a trigger, a view, a full-text index's content, a virtual table's shadow
        /// table): it puts `table` in `tableStore` and `other` in `otherStore` (nil: discarded),
        /// where SQLite could no longer find one from the other. Found before anything changed.
        case tablesSeparated(table: String, tableStore: String?, other: String, otherStore: String?, tie: TableTie)
        /// Migration `id` failed; its transaction was rolled back.
        case migrationFailed(id: String, message: String)
        /// Migration `id`'s SQL would end or open the transaction Backstage runs it in (`COMMIT`,
        /// `BEGIN`, `ROLLBACK`, a `RELEASE` of a savepoint it did not open...): its statement
        /// `statement` (from 1) is refused before it runs, and the migration does not run.
        case migrationRefused(id: String, statement: Int, reason: String)
        /// Migration `id` would fail on the store as it will be when its step runs (found by
        /// running it on an empty copy of that schema before anything changed).
        case migrationWouldFail(id: String, message: String)
        /// The estimate, `estimated` seconds, exceeds the launch budget and the caller asked not
        /// to start. Nothing was changed.
        case overBudget(estimated: Double, budget: Double)
        /// A split being finished after a crash: the store's rows reference `referenced` Core Data
        /// external data files of which `missing` are not there. The journal keeps the step.
        case externalDataMissing(missing: Int, referenced: Int)

        // MARK: The app's stores

        /// The store description points into the user-visible Documents folder.
        case insideDocuments
        /// The same file is already loaded (by another description, configuration or account).
        case duplicateStore
        /// A write was attempted on a store loaded read-only.
        case readOnlyStore
        /// No loaded store serves the configuration `configuration`.
        case notLoaded(configuration: String)
        /// The model assigns table `table` to no configuration.
        case unknownTable(table: String)
        /// A pragma name or value that is not a plain identifier or number.
        case invalidPragma(name: String, value: String)
        /// An account identifier that cannot be a folder name.
        case invalidAccountID(String)

        /// An error Backstage did not raise, of the type named: the error itself is
        /// ``BackstageError/underlying``.
        case unexpected(type: String)
    }

    /// What Backstage was doing.
    public var activity: Activity
    /// The user's file the error is about: the store, the plan, the container's folder (for an App
    /// Group, its identifier; for an error about no file, such as an estimate over the budget, the
    /// empty string).
    public var path: String
    /// Why it failed.
    public var cause: Cause
    /// The error as it was thrown, when Backstage did not raise it itself (``Cause/unexpected(type:)``).
    /// It is not compared: two errors are equal when their activity, path and cause are.
    public var underlying: (any Error)?

    /// An error about the file at `path`.
    public init(_ cause: Cause, path: String, during activity: Activity) {
        self.activity = activity
        self.path = path
        self.cause = cause
    }

    /// Any error met while doing `activity` to the file at `path`, typed: Backstage's own as it is,
    /// SQLite's by its result code, a system call's by its `errno`, a cancellation as such, and
    /// anything else kept whole in ``underlying``.
    package init(_ error: any Error, path: String, during activity: Activity) {
        switch error {
        case let error as BackstageError: self = error
        case let error as FileSystemError: self.init(.system(error), path: path, during: activity)
        case is CancellationError: self.init(.cancelled, path: path, during: activity)
        case let error as DatabaseError:
            self.init(
                .sqlite(code: error.extendedResultCode.rawValue, message: error.message ?? "\(error.resultCode)"),
                path: path, during: activity)
        default:
            self.init(.unexpected(type: String(reflecting: type(of: error))), path: path, during: activity)
            underlying = error
        }
    }

    public static func == (lhs: BackstageError, rhs: BackstageError) -> Bool {
        lhs.activity == rhs.activity && lhs.path == rhs.path && lhs.cause == rhs.cause
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(activity)
        hasher.combine(path)
        hasher.combine(cause)
    }

    /// True when a rename failed because the two paths are on different mounts (`EXDEV`).
    package var isCrossDevice: Bool {
        if case .system(let error) = cause { return error.isCrossDevice }
        return false
    }

    /// One sentence naming the file and the cause, and what to do about it.
    public var description: String {
        switch cause {
        case .storeInUse(let timeout) where activity == .loadingStores:
            "\(path) is locked by another connection (waited \(timeout) s)"
        case .storeInUse(let timeout):
            "store in use: another process has \(path) open (waited \(Self.format(timeout)) s for its lock); close the app and run again"
        case .storeHeldOpen(let processes):
            "store in use: process \(processes.map(String.init).joined(separator: ", ")) has \(path) open; close the app and run again"
        case .readOnlySource:
            "cannot move the store out of \(path): the folder is read-only, so the source could not be removed; nothing was changed"
        case .notADatabase:
            "\(path) is not a SQLite database (its first 16 bytes are not \"SQLite format 3\")"
        case .corruptStore(let reason):
            "\(path) is a damaged database: \(reason)"
        case .symlinkedStore:
            "\(path) is a symbolic link; Backstage does not move stores through links"
        case .storeNotFound:
            "no store at \(path)"
        case .destinationExists:
            "a store already exists at \(path)"
        case .readOnlyDestination:
            "cannot write to \(path): the destination is read-only"
        case .insufficientSpace(let needed, let available):
            "not enough space in \(path): the copy needs \(needed) bytes, \(available) are free"
        case .crossDevice(let destination):
            "cannot rename \(path) to \(destination): they are on different file systems (use the copy strategy)"
        case .verificationFailed:
            "the copy at \(path) does not match its source; the source was kept"
        case .sourceChanged(let reason):
            "\(path) changed under Backstage's lock (\(reason)): another process wrote to it without SQLite's lock; what was copied from it was removed and the store left as it is; close the app and run again"
        case .sameSourceAndDestination:
            "the stores would move from \(path) to \(path): choose another destination; nothing was changed"
        case .lockReleased:
            "Backstage's lock on \(path) was released before the work that needed it; nothing more was done to the store"
        case .sqlite(let code, let message):
            SQLiteFailure.sentence(code: code, message: message, path: path)
        case .system(let error):
            error.description
        case .cancelled where activity == .relocating:
            "relocation of \(path) was cancelled; the source store was kept"
        case .cancelled:
            "the upgrade was cancelled during \(path); the container is consistent"
        case .containerBusy:
            "another Backstage process is working on this container (lock \(path) is held)"
        case .unreadableJournal(let reason):
            "cannot read the upgrade journal \(path): \(reason); it was left in place"
        case .newerJournal(let version, let supported):
            "the upgrade journal \(path) was written by a newer Backstage (format \(version); this one reads up to \(supported)): finish the upgrade with that version"
        case .journalInUndefinedAppGroup(let identifier):
            "the upgrade journal \(path) records a step in progress in the App Group \(identifier), which this container has no folder for: run again with that group's shared container (it was left in place)"
        case .undefinedAppGroup where activity == .relocating:
            "the container has no folder for the App Group \(path); nothing was changed: give its shared container (AppContainer.addingAppGroup, or --app-group \(path)=FOLDER)"
        case .undefinedAppGroup:
            "the plan names the App Group \(path), which this container has no folder for; nothing was changed: give its shared container (AppContainer.addingAppGroup, or --app-group \(path)=FOLDER)"
        case .newerStorage(let version, let known):
            "the app's storage (\(path)) was upgraded to \(version) by a newer build of the app; this build knows \(known.joined(separator: ", ")) and changed nothing: install the newer build again, or restore a backup this build made"
        case .unknownStorage(let version, let known):
            "the app's storage (\(path)) was upgraded to \(version), a version this build does not know (it knows \(known.joined(separator: ", "))): another line of the app's builds made it; nothing was changed: install a build whose plans know \(version), or restore a backup this build made"
        case .invalidPlan(let reason):
            "\(path) is not a valid upgrade plan: \(reason)"
        case .inconsistentPlan(let step, let field, let reason):
            "plan \(path), step \(step), \(field) \(reason); nothing was changed: correct the plan"
        case .missingStore(let plan, let step, let closest):
            "plan \(plan), step \(step) migrates \(path), where no store is nor will be then, though there is one at \(closest), which the plan also names; nothing was changed: correct the plan"
        case .unassignedTable(let table):
            "table \(table) of \(path) is in no target of the split and not discarded"
                + (table == "grdb_migrations"
                    ? " (it holds the ids of the migrations migrateSchema ran on the store: list it in the target "
                        + "that takes the tables they changed, so that none of them runs again there)" : "")
        case .missingTable(let table):
            "table \(table) named by the split is not in \(path)"
        case .tablesSeparated(let table, let tableStore, let other, let otherStore, let tie):
            "the split of \(path) would separate tables tied together: "
                + tie.separation(table: table, in: tableStore, other: other, in: otherStore)
                + "; nothing was changed: correct the plan"
        case .migrationFailed(let id, let message):
            "migration \(id) failed on \(path) and was rolled back: \(message)"
        case .migrationRefused(let id, let statement, let reason):
            "migration \(id) for \(path) was refused and did not run: in its statement \(statement), \(reason); take it out of the migration's SQL"
        case .migrationWouldFail(let id, let message):
            "migration \(id) would fail on \(path) (tried on an empty copy of its schema as it will be then): \(message); nothing was changed: correct the plan"
        case .overBudget(let estimated, let budget):
            String(
                format:
                    "the upgrade would take about %.1f s, more than the %.0f s launch budget; run it behind a progress screen",
                estimated, budget)
        case .externalDataMissing(let missing, let referenced):
            "\(missing) of the \(referenced) external data files the rows of \(path) reference are missing; the interrupted split was not completed and its journal is kept"
        case .insideDocuments:
            "\(path) is inside the user-visible Documents folder; put internal stores in Application Support (or set allowsDocumentsLocation)"
        case .duplicateStore:
            "\(path) is already loaded; the same store file cannot be added twice"
        case .readOnlyStore:
            "\(path) is loaded read-only; the write was refused"
        case .notLoaded(let configuration):
            "no store is loaded for configuration \(configuration)"
        case .unknownTable(let table):
            "table \(table) belongs to no configuration of the model"
        case .invalidPragma(let name, let value):
            "invalid pragma \(name) = \(value): names and values must be plain identifiers or numbers"
        case .invalidAccountID(let id):
            "\(id) cannot be an account identifier: use letters, digits, '-', '_' or '.'"
        case .unexpected:
            path.isEmpty
                ? "\(underlying.map { "\($0)" } ?? "unknown error")"
                : "\(path): \(underlying.map { "\($0)" } ?? "unknown error")"
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }
}
