import Backstage
import Foundation
import GRDB

/// Which crash points a simulation tries.
public enum CrashPoints: Sendable, Hashable, Codable {
    /// Every step/phase boundary of the plan chain.
    case all
    /// None: one uninterrupted run.
    case none
    /// The first `n` boundaries, spread evenly over the chain.
    case count(Int)
}

/// One simulated upgrade: a fixture, the plan chain killed at one point (or not), rerun, checked.
public struct SimulationRun: Sendable, Hashable, Codable {
    public var from: String
    public var to: String
    public var size: Int64
    public var state: FixtureState
    /// The `CrashPoint` killed at (`kind:phase@N`), `random:Nms` for a kill at a random instant,
    /// `power cut @N` for a power cut, or nil for an uninterrupted run: the run's label in reports.
    public var crashPoint: String?
    /// How the run was interrupted, nil when it was not: what to count runs by (never the label).
    public var interruption: Interruption?
    /// False when the crash point was never reached (the step had nothing to do in this state).
    public var crashed: Bool
    /// Runs needed after the crash to complete the chain.
    public var reruns: Int
    /// Wall time of the uninterrupted run or of the runs after the crash.
    public var seconds: Double
    /// True when the upgrade took longer than the launch budget: an app would be killed at launch.
    public var exceedsBudget: Bool
    /// The invariants that broke; empty when the run passed.
    public var failures: [String]

    public var passed: Bool { failures.isEmpty }

    /// How a simulated run was interrupted.
    public enum Interruption: String, Sendable, Hashable, Codable {
        /// Killed with SIGKILL at a step/phase boundary (a `CrashPoint`).
        case crashPoint
        /// Killed with SIGKILL at a random instant.
        case randomKill
        /// A power cut: the writes not yet synced may be lost.
        case powerCut
    }

    public init(
        from: String, to: String, size: Int64, state: FixtureState, crashPoint: String?, crashed: Bool, reruns: Int,
        seconds: Double, exceedsBudget: Bool, failures: [String], interruption: Interruption? = nil
    ) {
        self.from = from
        self.to = to
        self.size = size
        self.state = state
        self.crashPoint = crashPoint
        self.crashed = crashed
        self.reruns = reruns
        self.seconds = seconds
        self.exceedsBudget = exceedsBudget
        self.failures = failures
        self.interruption = interruption
    }
}

/// Rebuilds old layouts, runs the upgrade chain in a child process killed with SIGKILL at each
/// step/phase boundary, reruns it until it completes, and checks the invariants: every row kept
/// (per-table content hashes, mapped through the plans), no internal file in Documents, user
/// documents byte-identical, `integrity_check` ok on every store, no foreign-key violation the
/// fixture did not have (`ForeignKeyCensus`), no temporaries or journal left.
public struct Simulator: Sendable {
    public var executable: URL
    /// The app whose upgrades are simulated.
    public var catalog: CatalogFolder
    public var seed: UInt64 = 1
    public var budget: Double = Upgrader.defaultBudget
    /// Extra runs per size and state, each killed from outside at a random instant of the upgrade
    /// (not only at a boundary), reproducible from ``seed``.
    public var randomKills = 0
    /// Plan files to run, in order, instead of the catalog's chain from `from` to `to`: a candidate
    /// plan under test. The invariants stay those of the catalog's `to` layout, so a plan that loses
    /// rows, or leaves a table where the layout does not have it, fails.
    public var plans: [URL]?
    /// Power cuts to try besides the crash points: each cut of the chain's first run (recorded by a
    /// test build of `backstage`), with the writes not fsynced kept and lost; nil for none. See ``PowerCut``.
    public var powerCuts: PowerCutScope?
    /// Called as the simulation goes: before each fixture, and at each stage of each run (see
    /// ``SimulationProgress``), for a live progress line.
    public var onProgress: (@Sendable (SimulationProgress) -> Void)?

    public init(executable: URL, catalog: CatalogFolder) {
        self.executable = executable
        self.catalog = catalog
    }

    /// The boundaries the plans this simulator runs from `from` to `to` pass, in order, numbered
    /// by occurrence (`CrashPoint.boundaries(of:)` of their chain).
    public func crashPoints(from: String, to: String) throws -> [CrashPoint] {
        CrashPoint.boundaries(of: UpgradePlan(chain: try chain(from: from, to: to).map(\.plan)))
    }

    /// `n` crash points spread evenly over the boundaries after which something was written: a kill at
    /// a step's preflight (the checks passed, nothing changed) proves no more than one before the step,
    /// so a few crash points are not spent there. All of them when `n` is as many or more.
    public static func spread(_ n: Int, of all: [CrashPoint]) -> [CrashPoint] {
        let written = all.filter { $0.phase != .preflight }
        guard n < written.count else { return written }
        // The middle of each of n equal stretches: the first and last steps get theirs too.
        return (0..<n).map { written[(2 * $0 + 1) * written.count / (2 * n)] }
    }

    /// The plans to run with the files that hold them: ``plans`` when given, else the catalog's chain.
    private func chain(from: String, to: String) throws -> [(plan: UpgradePlan, file: String)] {
        if let plans { return try plans.map { (try UpgradePlan.load(from: $0), $0.path) } }
        return try catalog.chain(from: from, to: to).map { ($0.plan, $0.file.path) }
    }

    /// Runs the matrix, calling `progress` after each run.
    public func simulate(
        from: String, to: String, sizes: [Int64], states: [FixtureState], crashPoints: CrashPoints,
        progress: (SimulationRun) -> Void = { _ in }
    ) throws -> [SimulationRun] {
        let all = try self.crashPoints(from: from, to: to)
        let points: [CrashPoint?] =
            switch crashPoints {
            case .none: [nil]
            case .all: all
            case .count(let n): n == 0 ? [nil] : Self.spread(n, of: all)
            }
        let scratch = FileManager.default.temporaryDirectory.appending(
            path: "backstage-simulate-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: scratch) }
        var runs: [SimulationRun] = []
        // Random instants need an uninterrupted run first; power cuts are counted once recorded.
        let perState = points.count + (randomKills > 0 && !points.contains(nil) ? 1 : 0) + randomKills
        var total = sizes.count * states.count * perState
        for size in sizes {
            for state in states {
                func report(_ stage: SimulationProgress.Stage, _ run: String? = nil) {
                    onProgress?(
                        SimulationProgress(
                            runsDone: runs.count, runsTotal: total, size: size, state: state, run: run, stage: stage))
                }
                report(.generatingFixture)
                let pristine = scratch.appending(path: "fixture-\(size)-\(state.rawValue)")
                let spec = FixtureSpec(layout: from, size: size, state: state, seed: seed)
                let manifest = try FixtureManifest.generate(
                    spec, at: pristine, with: FixtureGenerator(executable: executable, catalog: catalog))
                let columns = try Self.columns(of: catalog.version(from), in: catalog.container(at: pristine))
                let violations = try ForeignKeyCensus(of: catalog.version(from), in: catalog.container(at: pristine))
                let coreData = try CoreDataHistoryCheck(
                    catalog: catalog, from: from, to: to, steps: chain(from: from, to: to).flatMap(\.plan.steps))
                let coreDataBefore = try coreData?.snapshot(in: catalog.container(at: pristine), before: true)
                let before = try catalog.dataCheckResultsBefore(
                    upgrading: from, to: to, in: catalog.container(at: pristine))
                var random = SeededRandom(
                    seed: seed ^ UInt64(size) &* 31 ^ UInt64(FixtureState.allCases.firstIndex(of: state) ?? 0))
                var baseline = 0.05
                // Random instants are fractions of an uninterrupted run's time, so one runs first.
                let boundaries = randomKills > 0 && !points.contains(nil) ? [nil] + points : points
                var kills: [Kill] =
                    boundaries.map { Kill.boundary($0) }
                    + (0..<randomKills).map { _ in Kill.randomInstant(Double(random.next() % 1000) / 1000) }
                if let powerCuts {
                    report(.recordingPowerCuts)
                    kills += try self.powerCuts(
                        from: from, to: to, pristine: pristine, scratch: scratch, scope: powerCuts
                    ).map(Kill.powerCut)
                    total += kills.count - perState
                }
                for kill in kills {
                    let root = scratch.appending(path: "run")
                    try? FileManager.default.removeItem(at: root)
                    try FileManager.default.copyItem(at: pristine, to: root)
                    var run: SimulationRun
                    switch kill {
                    case .boundary(let point):
                        run = try execute(
                            from: from, to: to, root: root, crashPoint: point,
                            stage: { report($0, point?.description) })
                        if point == nil { baseline = max(baseline, run.seconds) }
                    case .randomInstant(let fraction):
                        let delay = fraction * baseline
                        run = try execute(
                            from: from, to: to, root: root, crashPoint: nil, killAfter: delay,
                            stage: { report($0, String(format: "random:%.0fms", delay * 1000)) })
                    case .powerCut(let cut):
                        run = try execute(
                            from: from, to: to, root: root, crashPoint: nil, powerCut: cut, scratch: scratch,
                            stage: { report($0, cut.description) })
                    }
                    run.size = size
                    run.state = state
                    report(.checking, run.crashPoint)
                    run.failures += try check(root: root, from: from, to: to, manifest: manifest, columns: columns)
                    run.failures += violations.failures(
                        after: try ForeignKeyCensus(of: catalog.version(to), in: catalog.container(at: root)))
                    run.failures +=
                        try coreData?.failures(before: coreDataBefore, in: catalog.container(at: root)) ?? []
                    run.failures += try catalog.schemaFailures(of: to, in: catalog.container(at: root))
                    run.failures += try catalog.dataCheckFailures(
                        of: to, in: catalog.container(at: root), before: before)
                    runs.append(run)
                    progress(run)
                }
            }
        }
        return runs
    }

    private enum Kill {
        case boundary(CrashPoint?)
        case randomInstant(Double)
        case powerCut(PowerCut)
    }

    /// The power cuts to try: the chain run once on a copy of `pristine`, recorded, gives its operations.
    private func powerCuts(
        from: String, to: String, pristine: URL, scratch: URL, scope: PowerCutScope
    ) throws -> [PowerCut] {
        let root = scratch.appending(path: "recorded")
        try? FileManager.default.removeItem(at: root)
        try FileManager.default.copyItem(at: pristine, to: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let recorder = PowerLossRun(executable: executable, scratch: scratch.appending(path: "power"))
        let events = try recorder.record(try upgradeArguments(from: from, to: to, root: root))
        let limit: Int? =
            switch scope {
            case .all: nil
            case .bounded(let limit): limit
            }
        return PowerCut.cuts(after: PowerLossRun.cuts(of: events, limit: limit), of: events, root: root)
    }

    private func upgradeArguments(from: String, to: String, root: URL) throws -> [String] {
        let files = try chain(from: from, to: to).map(\.file)
        return ["upgrade", root.path, "--budget", String(budget)] + files.flatMap { ["--plan", $0] }
    }

    private func execute(
        from: String, to: String, root: URL, crashPoint: CrashPoint?, killAfter delay: Double? = nil,
        powerCut: PowerCut? = nil, scratch: URL? = nil, stage: (SimulationProgress.Stage) -> Void = { _ in }
    ) throws -> SimulationRun {
        let base = try upgradeArguments(from: from, to: to, root: root)
        var run = SimulationRun(
            from: from, to: to, size: 0, state: .clean, crashPoint: crashPoint?.description, crashed: false,
            reruns: 0, seconds: 0, exceedsBudget: false, failures: [], interruption: crashPoint.map { _ in .crashPoint }
        )
        if crashPoint != nil || delay != nil || powerCut != nil { stage(.interrupting) }
        if let powerCut, let scratch {
            run.crashPoint = powerCut.description
            run.interruption = .powerCut
            let runner = PowerLossRun(executable: executable, scratch: scratch.appending(path: "power"))
            run.crashed = try runner.run(base, cut: powerCut).cut
        } else if let crashPoint {
            let killed = try ChildProcess.run(
                ChildProcess.simulateChild(beside: executable), base + ["--crash-at", crashPoint.description])
            run.crashed = killed.killedBySIGKILL
            if !run.crashed && killed.status != 0 {
                run.failures.append("the interrupted run failed: \(killed.stderr)")
            }
        } else if let delay {
            run.crashPoint = String(format: "random:%.0fms", delay * 1000)
            run.interruption = .randomKill
            run.crashed = try ChildProcess.run(executable, base, killAfter: delay).killedBySIGKILL
        }
        stage(crashPoint != nil || delay != nil || powerCut != nil ? .resuming : .interrupting)
        let started = Date()
        for attempt in 1...3 {
            let result = try ChildProcess.run(executable, base)
            run.reruns = attempt
            if result.status == 0 { break }
            if attempt == 3 { run.failures.append("the upgrade did not complete after 3 runs: \(result.stderr)") }
        }
        run.seconds = Date().timeIntervalSince(started)
        run.exceedsBudget = run.seconds > budget
        return run
    }

    /// Tables a migration of `steps` writes rows of (`UPDATE`, `INSERT`, `DELETE`, `REPLACE` naming
    /// them), lower-cased: their content may change by design, so they are checked by row count,
    /// and data checks say what their content must be.
    static func tablesWrittenByMigrations(_ steps: [UpgradeStep]) -> Set<String> {
        var tables: Set<String> = []
        for step in steps.compactMap({ $0.as(UpgradeStep.MigrateSchema.self) }) {
            for migration in step.migrations {
                let tokens = SQLTokens.tokens(migration.sql)
                for (index, token) in tokens.enumerated()
                where [.word("update"), .word("into"), .word("from")].contains(token) {
                    // UPDATE t, INSERT/REPLACE INTO t, DELETE FROM t (a SELECT's FROM reads only: harmless to include).
                    if index + 1 < tokens.count, case .word(let name) = tokens[index + 1] {
                        if token == .word("from"), index > 0, tokens[index - 1] != .word("delete") { continue }
                        tables.insert(name)
                    }
                }
            }
        }
        return tables
    }

    /// The columns of every table of the `from` layout's stores, to hash them the same way after a
    /// migration added columns.
    private static func columns(of version: CatalogVersion, in container: AppContainer) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for store in version.stores {
            let set = StoreFileSet(main: store.location.url(in: container))
            guard FileManager.default.fileExists(atPath: set.main.path) else { continue }
            try StoreInspector.withCopy(of: set) { db in
                for table in store.tables {
                    // Generated columns too: `SELECT *` (the fixture's digest) has them.
                    result[table] = try String.fetchAll(
                        db, sql: "SELECT name FROM pragma_table_xinfo(?) WHERE hidden != 1", arguments: [table])
                }
            }
        }
        return result
    }

    /// The invariants, as the failures found.
    private func check(
        root: URL, from: String, to: String, manifest: FixtureManifest, columns: [String: [String]]
    ) throws -> [String] {
        var failures: [String] = []
        let container = catalog.container(at: root)
        let target = try catalog.version(to)
        let steps = try chain(from: from, to: to).flatMap(\.plan.steps)
        let coreData = CoreDataHistoryCheck.coveredTables(steps)  // checked per entity by CoreDataHistoryCheck
        let discarded = Set(steps.compactMap { $0.as(UpgradeStep.Split.self) }.flatMap(\.discard)).union(
            coreData.replaced)
        let rewritten = Self.tablesWrittenByMigrations(steps).union(coreData.rewritten)
        // Every row kept, where the plans say it goes.
        let source = try catalog.version(from)
        var digests: [String: [String: TableDigest]] = [:]
        for store in source.stores {
            guard let before = manifest.stores[store.location.description] else { continue }
            for (table, digest) in before.sorted(by: { $0.key < $1.key }) where !discarded.contains(table) {
                // A virtual table's shadow tables (`<name>_data`, ...) live where it does.
                guard
                    let home = target.stores.first(where: { $0.tables.contains(table) })
                        ?? target.stores.first(where: { $0.tables.contains { table.hasPrefix($0 + "_") } })
                else {
                    failures.append("table \(table) has no store in \(to)")
                    continue
                }
                let set = StoreFileSet(main: home.location.url(in: container))
                guard FileManager.default.fileExists(atPath: set.main.path) else {
                    failures.append("\(home.location) is missing")
                    continue
                }
                // One copy and one pass per store, whatever the number of its tables.
                if digests[set.main.path] == nil {
                    digests[set.main.path] = try StoreDigest.tables(of: set, columns: columns)
                }
                let after = digests[set.main.path] ?? [:]
                let found = after[table]
                if found?.rows != digest.rows {
                    failures.append(
                        "rows lost: \(table) had \(digest.rows) rows, \(home.location) has \(found?.rows ?? 0)")
                } else if found != digest && !rewritten.contains(table.lowercased()) {
                    failures.append(
                        "rows changed: the content of \(table) in \(home.location) differs from before the upgrade, and no migration writes to it"
                    )
                }
            }
        }
        // integrity_check on every store of the target layout.
        for store in target.stores {
            let set = StoreFileSet(main: store.location.url(in: container))
            guard FileManager.default.fileExists(atPath: set.main.path) else { continue }
            let (result, referenced) = try StoreInspector.withCopy(of: set) { db in
                (try StoreIntegrity.problems(in: db), try ExternalDataReferences.referenced(db))
            }
            if let first = result.first { failures.append("integrity_check of \(store.location): \(first)") }
            // Every external data file the rows reference is there (Core Data's _EXTERNAL_DATA).
            let missing = ExternalDataReferences.missing(referenced, in: set.externalDataFolder)
            if missing > 0 {
                failures.append(
                    "external data lost: \(missing) of the \(referenced.count) files the rows of \(store.location) reference are missing"
                )
            }
        }
        // No internal file visible; documents byte-identical; nothing temporary left.
        let audit = try Auditor(container: container).audit()
        if !audit.isClean {
            failures.append("internal files left in Documents: \(audit.findings.map(\.path).joined(separator: ", "))")
        }
        let after = try FixtureManifest.read(container: container, spec: manifest.spec, rows: manifest.rows)
        if after.documents != manifest.documents || after.emptyFolders != manifest.emptyFolders {
            failures.append("user documents changed")
        }
        let leftovers = (FileManager.default.subpaths(atPath: root.path) ?? []).filter {
            TemporaryName.isTemporary($0) || $0.hasSuffix(".backstage/journal.json")
        }
        if !leftovers.isEmpty { failures.append("left behind: \(leftovers.joined(separator: ", "))") }
        return failures
    }
}
