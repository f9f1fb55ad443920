import BackstageSystem
import Foundation

/// Why an upgrade could not run. Every case names the file or the step.
public enum UpgradeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The plan file cannot be read or is not a valid plan.
    case invalidPlan(path: String, reason: String)
    /// A table of a store being split is in no target and not discarded.
    case unassignedTable(store: String, table: String)
    /// A table named by a split is not in the store.
    case missingTable(store: String, table: String)
    /// A split of `store` would separate two tables its schema ties together (`tie`: a foreign key,
    /// a trigger, a view, a full-text index's content, a virtual table's shadow table): it puts
    /// `table` in `tableStore` and `other` in `otherStore` (nil: discarded), where SQLite could no
    /// longer find one from the other. Found before anything was changed.
    case tablesSeparated(
        store: String, table: String, tableStore: String?, other: String, otherStore: String?, tie: TableTie)
    /// A migration failed; its transaction was rolled back.
    case migrationFailed(store: String, id: String, message: String)
    /// A migration's SQL would end or open the transaction Backstage runs it in (`COMMIT`,
    /// `BEGIN`, `ROLLBACK`, a `RELEASE` of a savepoint it did not open...): statement `statement`
    /// (from 1) is refused before it runs, and the migration does not run.
    case migrationRefused(store: String, id: String, statement: Int, reason: String)
    /// A migration would fail on the store as it will be when its step runs (found by running it
    /// on an empty copy of that schema before anything was changed). Nothing was changed.
    case migrationWouldFail(store: String, id: String, message: String)
    /// Step `step` of the plan named `plan` migrates `store`, where no store is nor will be when
    /// the step runs, a few letters from `closest`, a location the plan names where a store is (a
    /// typo). Nothing was changed.
    case missingStore(plan: String, step: Int, store: String, closest: String)
    /// The plan contradicts itself (see ``UpgradePlan/checkConsistency()``): `step` (from 1) of
    /// the plan named `plan`, its field `field` (such as `split.into[1].store`). Nothing was changed.
    case inconsistentPlan(plan: String, step: Int, field: String, reason: String)
    /// A relocation error during a `relocate`, `split` or `quarantine` step.
    case relocation(RelocationError)
    /// The work was cancelled; the step in progress was undone or finished, never left half done.
    case cancelled(step: String)
    /// The estimate exceeds the launch budget and the caller asked not to start.
    case overBudget(estimated: Double, budget: Double)
    /// A newer build of the app upgraded the container's storage to `version`, which this build's
    /// plans (knowing `known`) do not reach: an older build installed over a newer one. Nothing
    /// was changed.
    case newerStorage(container: String, version: String, known: [String])
    /// A build of the app whose history parted from this one's upgraded the container's storage
    /// to `version`: this build's plans (knowing `known`) share an earlier version with it but do
    /// not know `version` (a sibling chain, v2 → v2.1, over storage a v3 build made). Its stores
    /// are not where this build's plans look, so running them would read as a fresh install.
    /// Nothing was changed.
    case unknownStorage(container: String, version: String, known: [String])
    /// A step names the shared container of an App Group the ``AppContainer`` has no folder
    /// for (see ``AppContainer/addingAppGroup(_:at:)``). Nothing was changed.
    case undefinedAppGroup(String)
    /// A split being finished after a crash: the rows of `store` reference Core Data external
    /// data files that are not there. The step is not completed; the journal keeps it.
    case externalDataMissing(store: String, missing: Int, referenced: Int)
    /// SQLite failed on the store at `path` while a step read or wrote it (a split copying its
    /// rows, say): `code` is SQLite's extended result code, `message` its own words. A step that
    /// had not committed was undone; one that had is finished by the next run.
    case sqlite(path: String, code: Int32, message: String)
    /// A step failed on the file at `path` for a cause that is none of the above: the error as it
    /// was thrown is kept in `underlying`.
    case failed(path: String, underlying: UnderlyingError)

    /// The file the error is about: the store, the plan or the container (for an estimate over
    /// the budget, which is about no file, the empty string).
    public var path: String {
        switch self {
        case .invalidPlan(let path, _), .sqlite(let path, _, _), .failed(let path, _): path
        case .unassignedTable(let store, _), .missingTable(let store, _), .migrationFailed(let store, _, _),
            .migrationRefused(let store, _, _, _), .migrationWouldFail(let store, _, _),
            .missingStore(_, _, let store, _), .externalDataMissing(let store, _, _),
            .tablesSeparated(let store, _, _, _, _, _):
            store
        case .inconsistentPlan(let plan, _, _, _): plan
        case .relocation(let error): error.path
        case .cancelled(let step): step
        case .overBudget: ""
        case .newerStorage(let container, _, _), .unknownStorage(let container, _, _): container
        case .undefinedAppGroup(let identifier): identifier
        }
    }

    public var description: String {
        switch self {
        case .sqlite(let path, let code, let message):
            SQLiteFailure.sentence(code: code, message: message, path: path)
        case .failed(let path, let underlying): "\(path): \(underlying)"
        case .externalDataMissing(let store, let missing, let referenced):
            "\(missing) of the \(referenced) external data files the rows of \(store) reference are missing; the interrupted split was not completed and its journal is kept"
        case .undefinedAppGroup(let identifier):
            "the plan names the App Group \(identifier), which this container has no folder for; nothing was changed: give its shared container (AppContainer.addingAppGroup, or --app-group \(identifier)=FOLDER)"
        case .invalidPlan(let path, let reason): "\(path) is not a valid upgrade plan: \(reason)"
        case .unassignedTable(let store, let table):
            "table \(table) of \(store) is in no target of the split and not discarded"
        case .missingTable(let store, let table): "table \(table) named by the split is not in \(store)"
        case .tablesSeparated(let store, let table, let tableStore, let other, let otherStore, let tie):
            "the split of \(store) would separate tables tied together: "
                + tie.separation(table: table, in: tableStore, other: other, in: otherStore)
                + "; nothing was changed: correct the plan"
        case .migrationFailed(let store, let id, let message):
            "migration \(id) failed on \(store) and was rolled back: \(message)"
        case .migrationRefused(let store, let id, let statement, let reason):
            "migration \(id) for \(store) was refused and did not run: in its statement \(statement), \(reason); take it out of the migration's SQL"
        case .migrationWouldFail(let store, let id, let message):
            "migration \(id) would fail on \(store) (tried on an empty copy of its schema as it will be then): \(message); nothing was changed: correct the plan"
        case .missingStore(let plan, let step, let store, let closest):
            "plan \(plan), step \(step) migrates \(store), where no store is nor will be then, though there is one at \(closest), which the plan also names; nothing was changed: correct the plan"
        case .inconsistentPlan(let plan, let step, let field, let reason):
            "plan \(plan), step \(step), \(field) \(reason); nothing was changed: correct the plan"
        case .relocation(let error): error.description
        case .cancelled(let step): "the upgrade was cancelled during \(step); the container is consistent"
        case .newerStorage(let container, let version, let known):
            "the app's storage (\(container)) was upgraded to \(version) by a newer build of the app; this build knows \(known.joined(separator: ", ")) and changed nothing: install the newer build again, or restore a backup this build made"
        case .unknownStorage(let container, let version, let known):
            "the app's storage (\(container)) was upgraded to \(version), a version this build does not know (it knows \(known.joined(separator: ", "))): another line of the app's builds made it; nothing was changed: install a build whose plans know \(version), or restore a backup this build made"
        case .overBudget(let estimated, let budget):
            String(
                format:
                    "the upgrade would take about %.1f s, more than the %.0f s launch budget; run it behind a progress screen",
                estimated, budget)
        }
    }
}
