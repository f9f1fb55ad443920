import BackstageModel
import BackstageSystem
import Foundation

/// Where the steps seen so far put stores, took them from, and migrated them: one place per
/// location, compared as a device's file system compares names.
package struct PlanFlow {
    private var movedAway: [String: Int] = [:]
    private var putBy: [String: Int] = [:]
    /// Migrations of a store no earlier step put there: a later step must not put one there.
    private var migratedFirst: [String: Int] = [:]
    /// Each store's migration identifiers and their SQL, with the first step that gave them.
    private var migrations: [String: (step: Int, sql: [String: String])] = [:]

    /// The plan a step comes from, and its number in that plan (from 1).
    private let describe: (Int) -> (plan: String, step: Int)

    package init(describe: @escaping (Int) -> (plan: String, step: Int)) {
        self.describe = describe
    }

    /// `step N of plan`, for the step at `index`.
    package func name(_ index: Int) -> String {
        let place = describe(index)
        return "step \(place.step) of \(place.plan)"
    }

    /// A step takes the store at `location` away (a relocation's source, a split's store).
    package mutating func consume(_ location: ContainerLocation, at index: Int) -> String? {
        let key = location.fileKey
        if let earlier = movedAway[key] {
            return
                "names \(location), which \(name(earlier)) already moved away: "
                + "this step would never find it"
        }
        movedAway[key] = index
        putBy[key] = nil
        return nil
    }

    /// A step puts a store at `location` (a relocation's destination, a split's target).
    package mutating func produce(_ location: ContainerLocation, at index: Int) -> String? {
        let key = location.fileKey
        if let earlier = movedAway[key] {
            return
                "names \(location), which \(name(earlier)) moves a store away from: "
                + "every run would find it there again and move it again"
        }
        if let earlier = putBy[key] {
            return
                "names \(location), where \(name(earlier)) already puts a store: "
                + "this one would overwrite it"
        }
        if let earlier = migratedFirst[key] {
            return
                "names \(location), which \(name(earlier)) migrates "
                + "before this step puts a store there: the steps are in the wrong order"
        }
        putBy[key] = index
        return nil
    }

    /// A step changes the store at `store` in place, with the migrations `given` (identifier and SQL): none
    /// may give an identifier another SQL than an earlier step gave it on the same store.
    package mutating func migrate(
        _ store: ContainerLocation, _ given: [(id: String, sql: String)], at index: Int
    ) -> (String, String)? {
        let key = store.fileKey
        if let earlier = movedAway[key] {
            return (
                "store",
                "names \(store), which \(name(earlier)) moved away: "
                    + "the migration would never run"
            )
        }
        // Changed in place: a copy of a store's identifiers at each of its steps makes a long plan quadratic.
        let first = migrations[key]?.step ?? index
        for (number, migration) in given.enumerated() {
            if let sql = migrations[key]?.sql[migration.id], sql != migration.sql {
                return (
                    "migrations[\(number)].sql",
                    "differs from the SQL \(name(first)) gives migration \"\(migration.id)\" "
                        + "on the same store: a store that ran the first would never run this one"
                )
            }
            migrations[key, default: (first, [:])].sql[migration.id] = migration.sql
        }
        // A store a step put there is migrated after it was made: in order.
        if putBy[key] == nil, migratedFirst[key] == nil { migratedFirst[key] = index }
        return nil
    }
}
