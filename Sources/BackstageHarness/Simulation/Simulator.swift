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
    /// test build of `backstage`), with the writes not fsynced kept and, where there are some, lost; nil
    /// for none. See ``PowerCut``.
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
    func chain(from: String, to: String) throws -> [(plan: UpgradePlan, file: String)] {
        if let plans { return try plans.map { (try UpgradePlan.load(from: $0), $0.path) } }
        return try catalog.chain(from: from, to: to).map { ($0.plan, $0.file.path) }
    }

    /// Runs the matrix of one path, calling `progress` after each run.
    public func simulate(
        from: String, to: String, sizes: [Int64], states: [FixtureState], crashPoints: CrashPoints,
        progress: (SimulationRun) -> Void = { _ in }
    ) throws -> [SimulationRun] {
        let units = try self.units(
            paths: [UpgradePath(from: from, to: to)], sizes: sizes, states: states, crashPoints: crashPoints)
        return try run(units, progress: progress)
    }

    /// What one fixture gives every run that starts from it: built once, cloned per run.
    struct Fixture {
        var pristine: URL
        var manifest: FixtureManifest
        var columns: [String: [String]]
        var violations: ForeignKeyCensus
        var seconds: Double
    }

    /// Runs `units` in order (a shard's part of ``units(paths:sizes:states:crashPoints:downgrades:)``,
    /// or all of them), calling `progress` after each run. Each fixture (layout, size, state) is
    /// built once and cloned for each run that starts from it. `positions` are the units' positions
    /// in the whole matrix, recorded in each run (``SimulationRun/unit``); their order in `units` when nil.
    public func run(
        _ units: [SimulationUnit], positions: [Int]? = nil, progress: (SimulationRun) -> Void = { _ in }
    ) throws -> [SimulationRun] {
        let scratch = FileManager.default.temporaryDirectory.appending(
            path: "backstage-simulate-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: scratch) }
        var runs: [SimulationRun] = []
        var fixtures: [SimulationUnit.FixtureKey: Fixture] = [:]
        var digests: [String: ReusedDigest] = [:]
        var schemas: [String: CatalogFolder.ExpectedSchema] = [:]
        var storeFacts: [String: ReusedFacts] = [:]
        // Power cuts are counted once recorded.
        var total = units.reduce(0) { total, unit in
            switch unit.kind {
            case .uninterrupted(let kills): total + 1 + kills
            default: total + 1
            }
        }
        for (position, unit) in units.enumerated() {
            let (from, to, size, state) = (unit.path.from, unit.path.to, unit.size, unit.state)
            func report(_ stage: SimulationProgress.Stage, _ run: String? = nil) {
                onProgress?(
                    SimulationProgress(
                        runsDone: runs.count, runsTotal: total, size: size, state: state, run: run, stage: stage))
            }
            let fixture: Fixture
            if let built = fixtures[unit.fixture] {
                fixture = built
            } else {
                report(.generatingFixture)
                fixture = try makeFixture(unit.fixture, in: scratch, number: fixtures.count)
                fixtures[unit.fixture] = fixture
            }
            // An upgrade into `from` killed half way (the interrupted state of a version after the
            // first): the next build carries the plan into `from` too, as every build carries its
            // chain, and the rows to keep are those of the version before, where that upgrade began.
            // (Given only the plans out of `from`, the upgrade found none of `from`'s stores, skipped
            // every step as a fresh install, and the checks found no row to miss.)
            let start = state == .interrupted ? try versionBefore(from) ?? from : from
            let before = try catalog.dataCheckResultsBefore(
                upgrading: start, to: to, in: catalog.container(at: fixture.pristine))
            // A Core Data migration's tables are checked per entity: rows kept, attributes' values kept.
            let coreData = try CoreDataHistoryCheck(
                catalog: catalog, from: start, to: to, steps: chain(from: start, to: to).flatMap(\.plan.steps))
            let coreDataBefore = try coreData?.snapshot(in: catalog.container(at: fixture.pristine), before: true)
            var kills: [(Kill, String)] = []
            // Random instants are fractions of the unit's uninterrupted run, which runs first.
            var baseline = 0.05
            switch unit.kind {
            case .crashPoint(let point):
                guard try crashPoints(from: from, to: to).contains(point) else {
                    throw SimulationError.unknownCrashPoint(point, path: unit.path.description)
                }
                kills = [(.boundary(point), point.description)]
            case .uninterrupted(let randomKills):
                var random = SeededRandom(
                    seed: seed ^ UInt64(size) &* 31 ^ UInt64(FixtureState.allCases.firstIndex(of: state) ?? 0))
                kills = [(.boundary(nil), "none")]
                kills += (0..<randomKills).map { index in
                    (.randomInstant(Double(random.next() % 1000) / 1000), "random#\(index + 1)")
                }
            case .powerCuts(let limit):
                report(.recordingPowerCuts)
                let cuts = try self.powerCuts(
                    from: start, to: to, pristine: fixture.pristine, scratch: scratch,
                    scope: limit.map(PowerCutScope.bounded) ?? .all)
                kills = cuts.map { (.powerCut($0), $0.description) }
                total += kills.count - 1
            case .downgrade(let version):
                kills = [(.downgrade(version), SimulationRun.Fault.downgrade(to: version).description)]
            }
            var next = 0
            while next < kills.count {
                let (kill, label) = kills[next]
                next += 1
                let root = scratch.appending(path: "run")
                // The reset counts the last run's container removed as well as the fixture cloned.
                var clock = ContinuousClock.now
                try? FileManager.default.removeItem(at: root)
                try Self.clone(fixture.pristine, to: root)
                var cost = RunCost(reset: Self.lap(&clock))
                var run: SimulationRun
                switch kill {
                case .boundary(let point):
                    run = try execute(
                        from: start, to: to, root: root, crashPoint: point, cost: &cost,
                        stage: { report($0, point?.description) })
                    if point == nil { baseline = max(baseline, run.seconds) }
                case .randomInstant(let fraction):
                    let delay = fraction * baseline
                    run = try execute(
                        from: start, to: to, root: root, crashPoint: nil, killAfter: delay, cost: &cost,
                        stage: { report($0, Self.randomKill(after: delay).description) })
                case .powerCut(let cut):
                    var effect = PowerCut.Effect()
                    run = try execute(
                        from: start, to: to, root: root, crashPoint: nil, powerCut: cut, scratch: scratch, cost: &cost,
                        stage: { report($0, cut.description) }, cutEffect: { effect = $0 })
                    // The writes-lost state was left out where the recorded run had fsynced every write
                    // before the cut; where this run, cut there, left one unsynced, it is tried too.
                    var lost = cut
                    lost.losesUnsyncedWrites = true
                    if !cut.losesUnsyncedWrites, effect.unsyncedWrites > 0,
                        !kills.contains(where: { $0.1 == lost.description })
                    {
                        kills.insert((.powerCut(lost), lost.description), at: next)
                        total += 1
                    }
                case .downgrade(let version):
                    // Both builds as shipped: each carries its whole chain, from the first version.
                    let first = catalog.manifest.versions.first?.name ?? from
                    run = try execute(from: first, to: to, root: root, crashPoint: nil, cost: &cost)
                    run.from = from
                    run.crashPoint = .downgrade(to: version)
                    report(.interrupting, label)
                    run.failures += try downgrade(root: root, to: version, upgradedTo: to)
                }
                run.size = size
                run.state = state
                run.identity = unit.runIdentity(label)
                run.unit = positions?[position] ?? position
                report(.checking, run.crashPoint?.description)
                clock = ContinuousClock.now
                run.from = from
                // A container the checks cannot read (a store SQLite calls malformed, a file gone)
                // is this run's failure, named with the file and the cause: the other runs go on.
                do {
                    let facts = try Self.storeFacts(
                        of: catalog.version(to), in: catalog.container(at: root), cache: &storeFacts)
                    run.failures += try check(
                        root: root, from: start, to: to, fixture: fixture, facts: facts, digests: &digests)
                    run.failures += fixture.violations.failures(after: ForeignKeyCensus(facts))
                    run.failures +=
                        try coreData?.failures(before: coreDataBefore, in: catalog.container(at: root)) ?? []
                    run.failures += try catalog.schemaFailures(
                        of: to, found: facts.mapValues(\.schema), expected: &schemas)
                    run.failures += try catalog.dataCheckFailures(
                        of: to, in: catalog.container(at: root), before: before)
                } catch {
                    run.failures.append("the checks could not read the container after the upgrade: \(error)")
                }
                cost.checks = Self.lap(&clock)
                run.cost = cost
                runs.append(run)
                progress(run)
            }
        }
        return runs
    }

    /// Builds the fixture `key` names in `scratch`, with what every run from it compares against.
    private func makeFixture(_ key: SimulationUnit.FixtureKey, in scratch: URL, number: Int) throws -> Fixture {
        var clock = ContinuousClock.now
        let pristine = scratch.appending(path: "fixture-\(number)")
        let spec = FixtureSpec(layout: key.layout, size: key.size, state: key.state, seed: seed)
        let manifest = try FixtureManifest.generate(
            spec, at: pristine, with: FixtureGenerator(executable: executable, catalog: catalog))
        let version = try catalog.version(key.layout)
        return Fixture(
            pristine: pristine, manifest: manifest,
            columns: try Self.columns(of: version, in: catalog.container(at: pristine)),
            violations: try ForeignKeyCensus(of: version, in: catalog.container(at: pristine)),
            seconds: Self.lap(&clock))
    }

    /// Copies a fixture for one run: the same folders, bytes, modes and links, each file in one
    /// kernel copy, nothing fsynced (`FileSystem.cloneTree`).
    static func clone(_ pristine: URL, to root: URL) throws {
        try FileSystem().cloneTree(pristine.path, to: root.path)
    }

    /// The seconds since `clock`, which becomes now.
    static func lap(_ clock: inout ContinuousClock.Instant) -> Double {
        let now = ContinuousClock.now
        defer { clock = now }
        let elapsed = clock.duration(to: now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    /// The kill `delay` seconds into a run, to the millisecond (rounded as `%.0f` rounds).
    static func randomKill(after delay: Double) -> SimulationRun.Fault {
        .randomKill(milliseconds: Int((delay * 1000).rounded(.toNearestOrEven)))
    }

    private enum Kill {
        case boundary(CrashPoint?)
        case randomInstant(Double)
        case powerCut(PowerCut)
        case downgrade(String)
    }

    /// The build of `version` launched on storage upgraded to `upgradedTo`: it must refuse (exit 3,
    /// the downgrade guard) and leave every file as it was. The failures found.
    private func downgrade(root: URL, to version: String, upgradedTo: String) throws -> [String] {
        let first = catalog.manifest.versions.first?.name ?? version
        let files = try catalog.chain(from: first, to: version).map(\.file.path)
        let before = try Self.snapshot(root)
        let result = try ChildProcess.run(
            executable, ["upgrade", root.path, "--budget", String(budget)] + files.flatMap { ["--plan", $0] })
        var failures: [String] = []
        if result.status != 3 {
            failures.append(
                "the \(version) build launched after \(upgradedTo) did not refuse (exit \(result.status)): \(result.stderr)"
            )
        }
        if try Self.snapshot(root) != before {
            failures.append("the \(version) build launched after \(upgradedTo) changed the storage")
        }
        return failures
    }

    /// The power cuts to try: the chain run once on a copy of `pristine`, recorded, gives its operations.
    private func powerCuts(
        from: String, to: String, pristine: URL, scratch: URL, scope: PowerCutScope
    ) throws -> [PowerCut] {
        let root = scratch.appending(path: "recorded")
        try? FileManager.default.removeItem(at: root)
        try Self.clone(pristine, to: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let recorder = PowerLossRun(executable: executable, scratch: scratch.appending(path: "power"))
        let events = try recorder.record(
            .upgrade(arguments: try upgradeChain(from: from, to: to, root: root).arguments))
        let limit: Int? =
            switch scope {
            case .all: nil
            case .bounded(let limit): limit
            }
        return PowerCut.cuts(after: PowerLossRun.cuts(of: events, limit: limit), of: events, root: root)
    }

    /// The version before `name` in the catalog, whose plan reaches it; nil for the first.
    private func versionBefore(_ name: String) throws -> String? {
        let versions = catalog.manifest.versions.map(\.name)
        guard let index = versions.firstIndex(of: name) else {
            throw CatalogError.unknownVersion(name, known: versions)
        }
        // A version no plan reaches (its plan not written yet, or refused) is made from its own
        // schemas: its interrupted state is an upgrade out of it, as for the first.
        let refused = try CoreDataCatalog.unresolvedPlans(in: catalog).contains { $0.version == name }
        let reached = catalog.manifest.versions[index].plan != nil && !refused
        return index > 0 && reached ? versions[index - 1] : nil
    }

    /// The upgrade from `from` to `to` of the container at `root`: the chain's plans, the budget.
    private func upgradeChain(
        from: String, to: String, root: URL, json: Bool = false
    ) throws
        -> SimulateChildRequest.UpgradeChain
    {
        SimulateChildRequest.UpgradeChain(
            container: root.path, plans: try chain(from: from, to: to).map(\.file), budget: budget, json: json)
    }

    private func execute(
        from: String, to: String, root: URL, crashPoint: CrashPoint?, killAfter delay: Double? = nil,
        powerCut: PowerCut? = nil, scratch: URL? = nil, cost: inout RunCost,
        stage: (SimulationProgress.Stage) -> Void = { _ in }, cutEffect: (PowerCut.Effect) -> Void = { _ in }
    ) throws -> SimulationRun {
        let upgrade = try upgradeChain(from: from, to: to, root: root)
        var run = SimulationRun(
            from: from, to: to, size: 0, state: .clean, crashPoint: crashPoint.map(SimulationRun.Fault.crashPoint),
            crashed: false, reruns: 0, seconds: 0, exceedsBudget: false, failures: [])
        if crashPoint != nil || delay != nil || powerCut != nil { stage(.interrupting) }
        var clock = ContinuousClock.now
        if let powerCut, let scratch {
            run.crashPoint = .powerCut(powerCut)
            let runner = PowerLossRun(executable: executable, scratch: scratch.appending(path: "power"))
            let cut = try runner.run(.upgrade(arguments: upgrade.arguments), cut: powerCut)
            run.crashed = cut.cut
            cutEffect(cut.effect)
        } else if let crashPoint {
            let killed = try ChildProcess.run(
                SimulateChildRequest(.upgradeChain(upgrade, crashAt: crashPoint)), beside: executable)
            run.crashed = killed.killedBySIGKILL
            if !run.crashed && killed.status != 0 {
                run.failures.append("the interrupted run failed: \(killed.stderr)")
            } else if !run.crashed {
                // Not an "ok": the crash this run was to test never happened.
                run.failures.append(
                    "crash point \(crashPoint) never fired: the upgrade ended without passing it (a step with "
                        + "nothing to do on this fixture passes no boundary: `upgrade` says why it skips one)")
            }
        } else if let delay {
            run.crashPoint = Self.randomKill(after: delay)
            run.crashed =
                try ChildProcess.run(SimulateChildRequest(.upgradeChain(upgrade)), beside: executable, killAfter: delay)
                .killedBySIGKILL
        }
        let interrupted = Self.lap(&clock)
        let interrupting = crashPoint != nil || delay != nil || powerCut != nil
        if interrupting { cost.interrupted = interrupted }
        stage(interrupting ? .resuming : .interrupting)
        let started = Date()
        for attempt in 1...3 {
            // The next launch: the same upgrade `backstage upgrade --json` runs, through the child,
            // which takes its values without parsing a command line.
            var next = upgrade
            next.json = true
            let result = try ChildProcess.run(
                SimulateChildRequest(.upgradeChain(next)), beside: executable, capturingOutput: true)
            let wall = Self.lap(&clock)
            // The upgrade's own time, as the run reports it; the rest is starting the process,
            // loading the plans and writing the report.
            let own = Self.reportedSeconds(result.stdout).map { min($0, wall) } ?? wall
            cost.upgrade += own
            cost.processStart += wall - own
            // An uninterrupted run's (and a downgrade's) first upgrade is the run itself, not a rerun.
            run.reruns = interrupting ? attempt : attempt - 1
            if result.status == 0 { break }
            if attempt == 3 { run.failures.append("the upgrade did not complete after 3 runs: \(result.stderr)") }
        }
        run.seconds = Date().timeIntervalSince(started)
        run.exceedsBudget = run.seconds > budget
        return run
    }

    /// The seconds `upgrade --json` reports for its plans, nil when its output is not that.
    static func reportedSeconds(_ json: String) -> Double? {
        struct Report: Decodable { var seconds: Double }
        guard let reports = try? JSONDecoder().decode([Report].self, from: Data(json.utf8)) else { return nil }
        return reports.reduce(0) { $0 + $1.seconds }
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
}
