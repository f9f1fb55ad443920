import Foundation

extension UpgradePlan {
    /// Checks that the plan does not contradict itself, before anything is touched: a split's
    /// targets are distinct stores and each table goes to one place (a target, or `discard`),
    /// no step moves a store onto itself, a store is put in a place by at most one step (a
    /// relocation or a split's target), no step puts a store where an earlier step moved one
    /// away (the next run would move it again), no step works on a store an earlier step moved
    /// away, a migration runs before the step that creates its store never, and a migration
    /// identifier means one SQL per store.
    ///
    /// Locations are compared as a device's file system sees them: without case, `.` or empty
    /// components. ``Upgrader`` calls it before every run and dry run.
    ///
    /// ```swift
    /// let plan = try UpgradePlan.load(from: planFile)
    /// try plan.checkConsistency()
    /// ```
    ///
    /// - throws: ``UpgradeError/inconsistentPlan(plan:step:field:reason:)`` naming the first
    ///   contradiction: the plan, the step and the field.
    public func checkConsistency() throws(UpgradeError) {
        var flow = PlanFlow()
        for (index, step) in steps.enumerated() {
            let place = stepPlace(index)
            func refuse(_ field: String, _ reason: String) -> UpgradeError {
                .inconsistentPlan(plan: place.plan, step: place.step, field: "\(step.kind).\(field)", reason: reason)
            }
            for (field, location) in Self.storeFields(of: step) {
                if let reason = location.notAStore { throw refuse(field, reason) }
            }
            switch step {
            case .relocate(let relocate):
                if relocate.from.sameFile(as: relocate.to) {
                    throw refuse(
                        "to", "names \(relocate.to), the store's own location: a store cannot move onto itself")
                }
                if let reason = flow.consume(relocate.from, at: index, describe: stepPlace) {
                    throw refuse("from", reason)
                }
                if let reason = flow.produce(relocate.to, at: index, describe: stepPlace) { throw refuse("to", reason) }
            case .split(let split):
                if let (field, reason) = Self.contradiction(in: split) { throw refuse(field, reason) }
                if let reason = flow.consume(split.store, at: index, describe: stepPlace) {
                    throw refuse("store", reason)
                }
                for (number, target) in split.into.enumerated() {
                    if let reason = flow.produce(target.store, at: index, describe: stepPlace) {
                        throw refuse("into[\(number)].store", reason)
                    }
                }
            case .migrateSchema(let migrate):
                if let (field, reason) = Self.contradiction(in: migrate) { throw refuse(field, reason) }
                if let (field, reason) = flow.migrate(migrate, at: index, describe: stepPlace) {
                    throw refuse(field, reason)
                }
            case .quarantine:
                break
            }
        }
    }

    /// The fields of a step that name a store (not a quarantine's folder), with their locations.
    private static func storeFields(of step: UpgradeStep) -> [(String, ContainerLocation)] {
        switch step {
        case .relocate(let relocate): [("from", relocate.from), ("to", relocate.to)]
        case .split(let split):
            [("store", split.store)] + split.into.enumerated().map { ("into[\($0)].store", $1.store) }
        case .migrateSchema(let migrate): [("store", migrate.store)]
        case .quarantine: []
        }
    }

    /// The plan a step of this plan (or chain) comes from, and its number in that plan (from 1).
    func stepPlace(_ index: Int) -> (plan: String, step: Int) {
        var first = 0
        for part in chainParts ?? [] {
            if index < first + part.steps { return (part.name, index - first + 1) }
            first += part.steps
        }
        return (name, index + 1)
    }

    /// A split that contradicts itself: no target, a target that is the store itself or another
    /// target, a table in two places.
    private static func contradiction(in split: UpgradeStep.Split) -> (field: String, reason: String)? {
        if split.into.isEmpty { return ("into", "names no target store: the split would only delete \(split.store)") }
        var placed: [String: String] = [:]
        for (number, target) in split.into.enumerated() {
            if target.store.sameFile(as: split.store) {
                return (
                    "into[\(number)].store", "names \(target.store), the store being split: a split writes new stores"
                )
            }
            if let other = split.into[..<number].firstIndex(where: { $0.store.sameFile(as: target.store) }) {
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
        for table in split.discard {
            if let target = placed[table.lowercased()] {
                return (
                    "discard", "names table \(table), which \(target) takes: a table is kept or discarded, not both"
                )
            }
            if !discarded.insert(table.lowercased()).inserted { return ("discard", "names table \(table) twice") }
        }
        return nil
    }

    /// A migration step that contradicts itself: an identifier used twice, a migration without SQL.
    private static func contradiction(in migrate: UpgradeStep.MigrateSchema) -> (field: String, reason: String)? {
        for (number, migration) in migrate.migrations.enumerated() {
            if let other = migrate.migrations[..<number].firstIndex(where: { $0.id == migration.id }) {
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
        return nil
    }
}

/// Where the steps seen so far put stores, took them from, and migrated them: one place per
/// location, compared as a device's file system compares names.
private struct PlanFlow {
    private var movedAway: [String: Int] = [:]
    private var putBy: [String: Int] = [:]
    /// Migrations of a store no earlier step put there: a later step must not put one there.
    private var migratedFirst: [String: Int] = [:]
    /// Each store's migration identifiers and their SQL, with the first step that gave them.
    private var migrations: [String: (step: Int, sql: [String: String])] = [:]

    typealias Describe = (Int) -> (plan: String, step: Int)

    private static func name(_ index: Int, _ describe: Describe) -> String {
        let place = describe(index)
        return "step \(place.step) of \(place.plan)"
    }

    /// A step takes the store at `location` away (a relocation's source, a split's store).
    mutating func consume(_ location: ContainerLocation, at index: Int, describe: Describe) -> String? {
        let key = location.fileKey
        if let earlier = movedAway[key] {
            return
                "names \(location), which \(Self.name(earlier, describe)) already moved away: "
                + "this step would never find it"
        }
        movedAway[key] = index
        putBy[key] = nil
        return nil
    }

    /// A step puts a store at `location` (a relocation's destination, a split's target).
    mutating func produce(_ location: ContainerLocation, at index: Int, describe: Describe) -> String? {
        let key = location.fileKey
        if let earlier = movedAway[key] {
            return
                "names \(location), which \(Self.name(earlier, describe)) moves a store away from: "
                + "every run would find it there again and move it again"
        }
        if let earlier = putBy[key] {
            return
                "names \(location), where \(Self.name(earlier, describe)) already puts a store: "
                + "this one would overwrite it"
        }
        if let earlier = migratedFirst[key] {
            return
                "names \(location), which \(Self.name(earlier, describe)) migrates "
                + "before this step puts a store there: the steps are in the wrong order"
        }
        putBy[key] = index
        return nil
    }

    mutating func migrate(_ migrate: UpgradeStep.MigrateSchema, at index: Int, describe: Describe) -> (String, String)?
    {
        let key = migrate.store.fileKey
        if let earlier = movedAway[key] {
            return (
                "store",
                "names \(migrate.store), which \(Self.name(earlier, describe)) moved away: "
                    + "the migration would never run"
            )
        }
        // Changed in place: a copy of a store's identifiers at each of its steps makes a long plan quadratic.
        let first = migrations[key]?.step ?? index
        for (number, migration) in migrate.migrations.enumerated() {
            if let sql = migrations[key]?.sql[migration.id], sql != migration.sql {
                return (
                    "migrations[\(number)].sql",
                    "differs from the SQL \(Self.name(first, describe)) gives migration \"\(migration.id)\" "
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

extension ContainerLocation {
    /// The location as a device's file system compares it: root, then the path without empty or
    /// `.` components, without case (Apple file systems are case-insensitive by default).
    var fileKey: String {
        rootKey + "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/").lowercased()
    }

    private var rootKey: String { root.rawValue }

    /// Why the location cannot be a store's: a root or a folder (the step would move or open a
    /// whole folder), a sidecar of another store, or a name too long for a store
    /// (``ContainerLocation/storeNameTooLong``). Nil for a store's location.
    var notAStore: String? {
        let name = path.split(separator: "/").last { $0 != "." }.map(String.init) ?? ""
        if name.isEmpty || path.hasSuffix("/") {
            return "names \(self), a folder: a store's location names its database file"
        }
        for suffix in ["-wal", "-shm", "-journal"] where name.hasSuffix(suffix) {
            return "names \(self), a sidecar (\(suffix)) of another store: a store's location names its database file"
        }
        return storeNameTooLong
    }

    /// True when both locations name one file on a device.
    func sameFile(as other: ContainerLocation) -> Bool { fileKey == other.fileKey }
}
