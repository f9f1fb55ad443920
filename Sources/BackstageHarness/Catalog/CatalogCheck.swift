import Backstage
import Foundation
import GRDB

/// One problem `catalog check` found, named so a user can fix it.
public struct CatalogProblem: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The version the problem is in.
    public var version: String
    public var message: String

    public init(version: String, message: String) {
        self.version = version
        self.message = message
    }

    public var description: String { version.isEmpty ? message : "\(version): \(message)" }
}

/// Checks a catalog: every file it names is there and readable; every plan, run over the
/// stores of the version before, puts each table exactly where the next version says it is —
/// nothing named that does not exist, nothing left unaccounted for; each store's schema equals
/// its fresh install's where one was given; no shipped plan changed; every data check names a
/// store of its version and compiles against its schema.
public enum CatalogCheck {
    public static func problems(in catalog: CatalogFolder) -> [CatalogProblem] {
        var problems = fingerprintProblems(in: catalog, versions: catalog.manifest.versions, reportingMissing: true)
        var previous: CatalogVersion?
        for version in catalog.manifest.versions {
            func problem(_ message: String) { problems.append(CatalogProblem(version: version.name, message: message)) }
            var recorded: [ContainerLocation: StoreSchema] = [:]
            for store in version.stores {
                do {
                    let schema = try catalog.schema(of: store)
                    recorded[store.location] = schema
                    for table in store.tables where !schema.tableNames.contains(table) {
                        problem("table \(table) of \(store.location) is not in its schema \(store.schema)")
                    }
                    if let fresh = store.freshInstall {
                        let differences = try SchemaDescription(contentsOf: catalog.url.appending(path: fresh))
                            .differences(from: SchemaDescription(schema))
                        for difference in differences {
                            problem("\(store.location) differs from a fresh install (\(fresh)): \(difference)")
                        }
                    }
                } catch {
                    problem("\(error)")
                }
            }
            for check in version.checks ?? [] {
                guard let schema = recorded[check.store] else {
                    if !version.stores.contains(where: { $0.location == check.store }) {
                        problem("check \"\(check.name)\" queries \(check.store), which \(version.name) does not have")
                    }
                    continue
                }
                if let reason = check.queryProblem(against: schema) { problem("check \"\(check.name)\" \(reason)") }
            }
            if let previous {
                if let file = catalog.planURL(of: version) {
                    do {
                        let plan = try UpgradePlan.load(from: file)
                        problems += check(plan, from: previous, to: version)
                        problems += try lintProblems(of: plan, reaching: version.name, from: previous, in: catalog)
                    } catch {
                        problem("\(error)")
                    }
                } else {
                    problem("no plan reaches it from \(previous.name)")
                }
            }
            previous = version
        }
        do {
            problems += try CoreDataLint.findings(in: catalog).filter { $0.severity == .error }.map {
                CatalogProblem(version: $0.version, message: "\($0.place): \($0.message)")
            }
        } catch {
            problems.append(CatalogProblem(version: "", message: "\(error)"))
        }
        return problems
    }

    /// The errors ``CatalogLint`` finds in `plan` (what would fail or lose data on installs like the
    /// captured ones), as problems of version `name`.
    static func lintProblems(
        of plan: UpgradePlan, reaching name: String, from previous: CatalogVersion,
        in catalog: CatalogFolder
    ) throws -> [CatalogProblem] {
        try CatalogLint.findings(of: plan, reaching: name, from: previous, in: catalog).filter { $0.severity == .error }
            .map {
                CatalogProblem(version: name, message: "\($0.place): \($0.message)")
            }
    }

    /// Versions whose plan changed since it was added (every version but the newest has shipped),
    /// and, when `reportingMissing`, shipped versions with no fingerprint.
    static func fingerprintProblems(
        in catalog: CatalogFolder, versions: [CatalogVersion], reportingMissing: Bool
    ) -> [CatalogProblem] {
        var problems: [CatalogProblem] = []
        for (index, version) in versions.enumerated() {
            guard let file = catalog.planURL(of: version) else { continue }
            guard let frozen = version.frozen else {
                if reportingMissing && index < versions.count - 1 {
                    problems.append(
                        CatalogProblem(
                            version: version.name,
                            message:
                                "its plan \(version.plan ?? "") has no fingerprint: it was added before Backstage recorded them; the next `catalog add-version` records it as it is now"
                        ))
                }
                continue
            }
            // An unreadable plan is reported elsewhere.
            guard let current = try? PlanFingerprint(of: UpgradePlan.load(from: file)) else { continue }
            let changes = frozen.changes(to: current)
            guard !changes.isEmpty else { continue }
            let what = changes.joined(separator: "; ")
            if index < versions.count - 1 {
                problems.append(
                    CatalogProblem(
                        version: version.name,
                        message:
                            "has shipped, but its plan \(version.plan ?? "") changed since (\(what)): installs that already ran it will never run the change. Restore the plan and ship the correction as a new version (`backstage catalog add-version`)"
                    ))
            } else {
                problems.append(
                    CatalogProblem(
                        version: version.name,
                        message:
                            "its plan \(version.plan ?? "") changed since the version was added (\(what)); its recorded stores come from the old plan: add it again with `backstage catalog add-version DIR \(version.name) --plan FILE --replace`"
                    ))
            }
        }
        return problems
    }

    /// Runs `plan` over the tables of `from`'s stores and compares the outcome with `to`'s stores.
    static func check(_ plan: UpgradePlan, from: CatalogVersion, to: CatalogVersion) -> [CatalogProblem] {
        var problems: [CatalogProblem] = []
        func problem(_ message: String) { problems.append(CatalogProblem(version: to.name, message: message)) }
        do { try plan.checkConsistency() } catch { problem(error.description) }
        var stores: [ContainerLocation: Set<String>] = [:]
        for store in from.stores { stores[store.location, default: []].formUnion(store.tables) }
        // Stores a migration ran on: its SQL may create or drop tables (and GRDB adds grdb_migrations).
        var migrated: Set<ContainerLocation> = []
        for (index, step) in plan.steps.enumerated() {
            let place = "plan \(plan.name), step \(index + 1) (\(step.kind))"
            if let relocate = step.as(UpgradeStep.Relocate.self) {
                guard let tables = stores.removeValue(forKey: relocate.from) else {
                    problem("\(place) moves \(relocate.from), which \(from.name) does not have")
                    continue
                }
                stores[relocate.to, default: []].formUnion(tables)
                if migrated.remove(relocate.from) != nil { migrated.insert(relocate.to) }
            } else if let split = step.as(UpgradeStep.Split.self) {
                guard let tables = stores.removeValue(forKey: split.store) else {
                    problem("\(place) splits \(split.store), which is not there at that step")
                    continue
                }
                // Core Data's bookkeeping goes to every target, as the split step does.
                let bookkeeping = tables.intersection(["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"])
                var placed: Set<String> = bookkeeping
                for target in split.into {
                    stores[target.store, default: []].formUnion(bookkeeping)
                    for table in target.tables where !tables.contains(table) {
                        problem(
                            "\(place) puts table \(table) in \(target.store), but \(split.store) has no table \(table)")
                    }
                    stores[target.store, default: []].formUnion(target.tables.filter(tables.contains))
                    placed.formUnion(target.tables)
                }
                for table in split.discard where !tables.contains(table) {
                    problem("\(place) discards table \(table), which \(split.store) does not have")
                }
                for table in tables.subtracting(placed).subtracting(split.discard).sorted() {
                    problem(
                        "\(place) leaves table \(table) of \(split.store) unaccounted for: keep, move or discard it")
                }
            } else if let migration = step.as(UpgradeStep.CoreDataMigration.self) {
                // Core Data's migration names every table it reads, keeps, drops and writes: the store's
                // tables become the destination version's.
                guard let tables = stores[migration.store] else {
                    problem("\(place) migrates \(migration.store), which is not there at that step")
                    continue
                }
                let program = migration.program
                let read = Set(program.tablesRead + program.keptTables + program.droppedTables)
                for table in read.subtracting(tables).sorted() {
                    problem(
                        "\(place) reads table \(table) of \(migration.store) (model version \(program.sourceVersion)), "
                            + "which is not there at that step")
                }
                stores[migration.store] = tables.subtracting(read).union(program.keptTables)
                    .union(program.rewrites.map(\.table))
            } else if let migrate = step.as(UpgradeStep.MigrateSchema.self) {
                if stores[migrate.store] == nil {
                    problem("\(place) migrates \(migrate.store), which is not there at that step")
                }
                migrated.insert(migrate.store)
            }
        }
        for store in to.stores {
            let declared = Set(store.tables)
            let arrived = stores.removeValue(forKey: store.location) ?? []
            if migrated.contains(store.location) { continue }
            for table in declared.subtracting(arrived).sorted() where !from.stores.isEmpty {
                if arrived.isEmpty && !stores.values.contains(where: { $0.contains(table) }) {
                    problem("\(store.location) declares table \(table), but the plan brings it nowhere")
                } else {
                    problem("\(store.location) declares table \(table), but the plan puts it elsewhere")
                }
            }
        }
        for (location, tables) in stores.sorted(by: { $0.key.description < $1.key.description }) {
            for table in tables.sorted() {
                problem("the plan leaves table \(table) in \(location), which \(to.name) does not declare")
            }
        }
        return problems
    }
}
