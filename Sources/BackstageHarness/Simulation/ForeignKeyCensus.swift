import Backstage
import Foundation
import GRDB

/// Rows breaking a foreign key (`PRAGMA foreign_key_check`), counted per table in every store of a
/// layout: before the upgrade on the fixture, after it on the upgraded container. Real stores hold
/// violations the app made with foreign keys off, and fixtures carry the share the capture found:
/// only the ones the upgrade adds fail a run (a parent table a split left behind, parents a
/// migration deleted). Counts only, never a row.
struct ForeignKeyCensus: Sendable {
    /// Per store (as the catalog names it), per child table (lower-cased): the rows in violation.
    var stores: [String: [String: Int]] = [:]
    /// Tables whose check SQLite could not run (a foreign key into columns that are no key), per store.
    var unchecked: [String: Set<String>] = [:]

    /// The counts of the stores of `version` in `container` (read from private copies).
    init(of version: CatalogVersion, in container: AppContainer) throws {
        for store in version.stores {
            let set = StoreFileSet(main: store.location.url(in: container))
            guard FileManager.default.fileExists(atPath: set.main.path) else { continue }
            let name = store.location.description
            let (counts, failed) = try StoreInspector.withCopy(of: set) { db in try Self.count(db) }
            stores[name] = counts
            unchecked[name] = failed
        }
    }

    /// The counts the facts of an upgraded container's stores hold (``Simulator/storeFacts(of:in:cache:)``).
    init(_ facts: [String: Simulator.StoreFacts]) {
        for (name, store) in facts {
            stores[name] = store.foreignKeys.counts
            unchecked[name] = store.foreignKeys.unchecked
        }
    }

    /// Each table with a foreign key and its rows in violation; the tables the check failed on.
    static func count(_ db: Database) throws -> ([String: Int], Set<String>) {
        let children = try String.fetchAll(
            db,
            sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%references%' "
                + "AND name NOT LIKE 'sqlite_%'")
        var counts: [String: Int] = [:]
        var failed: Set<String> = []
        for table in children {
            do {
                counts[table.lowercased()] =
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pragma_foreign_key_check(?)", arguments: [table])
                    ?? 0
            } catch is DatabaseError {
                failed.insert(table.lowercased())
            }
        }
        return (counts, failed)
    }

    /// Per table, the rows in violation in whichever store holds it.
    private var byTable: [String: Int] {
        stores.values.reduce(into: [:]) { all, counts in all.merge(counts, uniquingKeysWith: +) }
    }

    /// The failures of `after` (the upgraded container) against `self` (before): a table with more
    /// rows in violation than it had, or whose check fails now and did not.
    func failures(after: ForeignKeyCensus) -> [String] {
        let before = byTable
        let failedBefore = unchecked.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        var failures: [String] = []
        for (store, counts) in after.stores.sorted(by: { $0.key < $1.key }) {
            for (table, rows) in counts.sorted(by: { $0.key < $1.key }) where rows > (before[table] ?? 0) {
                failures.append(
                    "foreign keys broken: \(rows) rows of \(table) in \(store) point at no row of their parent "
                        + "(PRAGMA foreign_key_check), \(before[table] ?? 0) before the upgrade")
            }
            for table in (after.unchecked[store] ?? []).subtracting(failedBefore).sorted() {
                failures.append(
                    "foreign keys of \(table) in \(store) cannot be checked (PRAGMA foreign_key_check fails) "
                        + "after the upgrade, and could before")
            }
        }
        return failures
    }
}
