import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation
import Logging

/// Runs an ``UpgradePlan`` on a container: decides in microseconds whether anything is pending,
/// estimates the work before touching anything, and runs the steps off the launch path with
/// progress, cancellation and crash recovery.
///
/// At launch:
///
/// ```swift
/// if Upgrader.needsUpgrade(container, plan) {          // a few stats and header reads
///     let upgrader = Upgrader(container: container)
///     for try await event in upgrader.run(plan, budget: 20) {
///         switch event {
///         case .planned(let estimate) where estimate.exceedsBudget: showProgressScreen()
///         case .progress(let progress): updateProgressBar(progress.fractionDone)
///         case .finished(let report): log(report)
///         default: break
///         }
///     }
/// }
/// ```
public struct Upgrader: Sendable {
    /// The launch watchdog's budget on iOS, about 20 seconds.
    public static let defaultBudget: Double = 20

    /// The container to upgrade.
    public let container: AppContainer
    /// Where diagnostics go. Backstage never bootstraps logging.
    public var logger: Logger
    /// How long to wait for another process to release a store, in seconds.
    public var busyTimeout: Double = 5
    /// How fast each kind of work goes, for estimates.
    public var throughput = Throughput()
    package var fileSystem = FileSystem()
    /// Called at every boundary of every step, numbered as ``CrashPoint/boundaries(of:)`` numbers
    /// them (crash tests kill the process here).
    package var boundaryHook: (@Sendable (CrashPoint) -> Void)?

    /// Creates an upgrader for `container`.
    public init(container: AppContainer, logger: Logger = Logger(label: "Backstage.Upgrader")) {
        self.container = container
        self.logger = logger
    }

    /// True when any step of `plan` has work to do, or a crashed step waits in the journal.
    ///
    /// It never opens SQLite: the launch record a completed run left (one `readlink`), a `stat` per
    /// store location, a 100-byte header read per migrated store, and, when the plan quarantines,
    /// one `stat` of the folder (a listing when it changed since the record). When nothing is
    /// pending it answers in microseconds, so it belongs on the launch path.
    ///
    /// Storage a newer build upgraded beyond the versions `plan` knows (see
    /// ``UpgradePlan/init(chain:)``) answers true: running the plan then throws
    /// ``BackstageError/Cause/newerStorage(version:known:)``, never "nothing to do".
    public static func needsUpgrade(_ container: AppContainer, _ plan: UpgradePlan) -> Bool {
        let fileSystem = FileSystem()
        // The steps are looked at while the record's bytes are on the stack: its stamps are read
        // from them, without copying them into strings and arrays.
        let answer = fileSystem.withLink(container.launchRecordPath) { bytes -> Bool in
            // Another format, damage: unreadable, so pending (a run writes it again).
            guard let view = LaunchRecordView(bytes) else { return true }
            if view.isUnknown(to: plan) { return true }
            // A crashed step waits in its journal, unless the record promises there is none.
            if JournalFile.mayWait(
                in: container, besideRecordThatPromised: view.promisesNoJournal, fileSystem: fileSystem)
            {
                return true
            }
            guard view.hasStamps else {
                return pendingStep(in: plan, container: container, fileSystem: fileSystem, vouch: nil)
            }
            // The vouch reads the view where it is: a pointer, not a copy of its stamps at every hand-over.
            return withUnsafePointer(to: view) { view in
                pendingStep(in: plan, container: container, fileSystem: fileSystem, vouch: LaunchVouch(view))
            }
        }
        if let answer { return answer }
        // No record: a crashed step; or something other than a link where the record belongs.
        // A guard without a record: a run started changing the storage and did not complete.
        if JournalFile.isWaiting(in: container, fileSystem: fileSystem) || fileSystem.exists(container.launchRecordPath)
            || (plan.knowsVersions && fileSystem.exists(DowngradeGuard.path(in: container)))
        {
            return true
        }
        return pendingStep(in: plan, container: container, fileSystem: fileSystem, vouch: nil)
    }

    private static func pendingStep(
        in plan: UpgradePlan, container: AppContainer, fileSystem: FileSystem, vouch: LaunchVouch?
    ) -> Bool {
        var probe = LaunchProbe(vouch: vouch)
        // The record answers what it can from the plan's questions (bytes, compared in place);
        // a step it does not rule out is asked the long way. Each step is read where the array
        // holds it: an array's subscript hands out a copy (a retain and a release of each string).
        return plan.steps.withUnsafeBufferPointer { steps in
            plan.launchQuestions.withQuestions { questions, bytes in
                for index in steps.indices {
                    if vouch != nil, index < questions.count, let question = questions[index],
                        probe.rulesOut(question, asking: bytes, in: container, fileSystem: fileSystem)
                    {
                        continue
                    }
                    if isNeeded(steps[index], container: container, fileSystem: fileSystem, probe: &probe) {
                        return true
                    }
                }
                return false
            }
        }
    }

    /// The storage version the last versioned plan reached in `container`, nil when none ran.
    public static func storageVersion(of container: AppContainer) -> String? {
        LaunchRecord.read(container, fileSystem: FileSystem())?.reached
    }

    static func isNeeded(_ step: UpgradeStep, container: AppContainer, fileSystem: FileSystem) -> Bool {
        var probe = PlainProbe()
        return isNeeded(step, container: container, fileSystem: fileSystem, probe: &probe)
    }

    /// - parameter probe: What this check found absent so far (a chain looks at a store's
    ///   location once even when several steps name it), and what the launch record vouches for.
    static func isNeeded(
        _ step: UpgradeStep, container: AppContainer, fileSystem: FileSystem, probe: inout some StoreProbe
    ) -> Bool {
        // A root the container cannot resolve: running the plan says which, never "nothing to do".
        if step.firstLocation(where: { !container.defines($0.root) }) != nil { return true }
        return step.definition.isNeeded(in: container, fileSystem: fileSystem, probe: &probe)
    }

    /// The pending steps of `plan` with the bytes they touch and their estimated time. Reads file
    /// sizes (a migration's: its database and `-wal`, not its support folder) and, for a migration,
    /// the store's schema and about one page in a hundred of the tables its statements name (what
    /// each statement does to them): nothing is locked or changed. A step whose input an earlier
    /// pending step will produce (a split of the store a relocation brings) is counted with that
    /// input's size.
    public func estimate(_ plan: UpgradePlan, budget: Double = Upgrader.defaultBudget) -> UpgradeEstimate {
        var steps: [UpgradeEstimate.Step] = []
        // Running such a plan throws before any step: there is nothing to estimate.
        guard container.undefinedAppGroup(in: plan) == nil else { return UpgradeEstimate(steps: [], budget: budget) }
        var estimator = StepEstimator(container: container, fileSystem: fileSystem, throughput: throughput)
        for (index, step) in plan.steps.enumerated() {
            guard let (bytes, seconds) = step.definition.estimate(&estimator) else { continue }
            steps.append(.init(index: index, description: step.description, bytes: bytes, seconds: seconds))
        }
        return UpgradeEstimate(steps: steps, budget: budget)
    }

    /// Everything a run checks before it changes anything, without changing anything: the plan
    /// does not contradict itself (``UpgradePlan/checkConsistency()``), every App Group it names
    /// has a folder, no newer build upgraded the storage past the versions the plan knows, and the
    /// splits and migrations work on the schemas their stores will have when each step runs
    /// (tried on empty in-memory copies of those schemas: every table a split names exists, no
    /// split separates tables a foreign key, a trigger, a view or a full-text table's content ties
    /// together, every migration's SQL runs there and never ends Backstage's transaction). A dry run that passes
    /// it fails at none of these when the run starts.
    ///
    /// - throws: ``BackstageError/Cause/inconsistentPlan(step:field:reason:)``,
    ///   ``BackstageError/Cause/undefinedAppGroup``, ``BackstageError/Cause/newerStorage(version:known:)``,
    ///   ``BackstageError/Cause/missingTable(table:)``, ``BackstageError/Cause/unassignedTable(table:)``,
    ///   ``BackstageError/Cause/tablesSeparated(table:tableStore:other:otherStore:tie:)``,
    ///   ``BackstageError/Cause/migrationWouldFail(id:message:)`` or
    ///   ``BackstageError/Cause/migrationRefused(id:statement:reason:)``.
    public func preflight(_ plan: UpgradePlan) throws {
        try plan.checkConsistency()
        try refuseUnrunnable(plan)
        try MigrationRehearsal(container: container, fileSystem: fileSystem, logger: logger).rehearse(plan)
    }

    private func refuseUnrunnable(_ plan: UpgradePlan) throws {
        try DowngradeGuard.check(plan, in: container, fileSystem: fileSystem)
        if let group = container.undefinedAppGroup(in: plan) {
            throw BackstageError(.undefinedAppGroup, path: group, during: .checkingPlan)
        }
        if !plan.versions.isEmpty, let stored = LaunchRecord.read(container, fileSystem: fileSystem),
            stored.isUnknown(to: plan.versions), let reached = stored.reached
        {
            let path = container.applicationSupport.path
            throw stored.isNewer(than: plan.versions)
                ? BackstageError(
                    .newerStorage(version: reached, known: plan.versions), path: path, during: .checkingPlan)
                : BackstageError(
                    .unknownStorage(version: reached, known: plan.versions), path: path, during: .checkingPlan)
        }
    }

    /// Runs the plan. The first event is the estimate, before anything is touched; then progress;
    /// then the report. Cancelling the task that iterates the stream stops the work at the next
    /// safe point: the step in progress is undone (or finished, if it had committed).
    ///
    /// - parameter plan: The plan (or chain) to run.
    /// - parameter budget: The launch budget the estimate is compared with, in seconds.
    /// - parameter refuseOverBudget: When true and the estimate exceeds `budget`, the stream ends
    ///   with ``BackstageError/Cause/overBudget(estimated:budget:)`` after the estimate, with nothing changed.
    public func run(
        _ plan: UpgradePlan, budget: Double = Upgrader.defaultBudget, refuseOverBudget: Bool = false
    ) -> WorkStream<UpgradeEvent> {
        let upgrader = self
        return WorkStream { yield, isCancelled, caughtUp in
            let report = try upgrader.runAndWait(
                plan, budget: budget, refuseOverBudget: refuseOverBudget, events: yield, isCancelled: isCancelled,
                caughtUp: caughtUp)
            yield(.finished(report))
        }
    }

    /// Runs the plan and returns its report.
    @discardableResult
    public func upgrade(_ plan: UpgradePlan, budget: Double = Upgrader.defaultBudget) async throws -> UpgradeReport {
        for try await event in run(plan, budget: budget) {
            if case .finished(let report) = event { return report }
        }
        // The stream ended without a report: the task was cancelled. Never an empty report, which
        // would read as "nothing was needed".
        throw CancellationError()
    }

    /// The synchronous engine. `caughtUp` is asked before each step starts and before the run is
    /// recorded complete: it waits until whoever receives `events` has taken them all (see
    /// ``WorkStream``), then says whether the run is cancelled; `isCancelled` by default.
    @discardableResult
    package func runAndWait(
        _ plan: UpgradePlan, budget: Double, refuseOverBudget: Bool = false,
        events: @escaping (UpgradeEvent) -> Void = { _ in }, isCancelled: @escaping () -> Bool = { false },
        caughtUp: (() -> Bool)? = nil
    ) throws -> UpgradeReport {
        let caughtUp = caughtUp ?? isCancelled
        let started = Date()
        // A plan that fails the preflight is refused before even the run's lock file is made; after
        // a crash, the rehearsal waits until the interrupted step is finished or undone.
        let journalWaiting = JournalFile.isWaiting(in: container, fileSystem: fileSystem)
        if journalWaiting { try plan.checkConsistency() } else { try preflight(plan) }
        var context = StepContext(
            container: container, fileSystem: fileSystem, logger: logger, busyTimeout: busyTimeout)
        context.isCancelled = isCancelled
        var runner = try StepRunner(context: context, kinds: StepKinds.journaled)
        defer { runner.release() }
        runner.boundaryHook = boundaryHook
        try refuseUnrunnable(plan)
        var relocation = RelocationReport()
        if journalWaiting { try DowngradeGuard.claim(plan, in: container, fileSystem: fileSystem) }
        if let recovered = try runner.recover() { relocation.recovered.append(recovered) }
        if journalWaiting {
            try MigrationRehearsal(container: container, fileSystem: fileSystem, logger: logger).rehearse(plan)
        }

        let estimate = estimate(plan, budget: budget)
        events(.planned(estimate))
        if refuseOverBudget && estimate.exceedsBudget {
            throw BackstageError(
                .overBudget(estimated: estimate.seconds, budget: budget), path: "", during: .checkingPlan)
        }
        var report = UpgradeReport(plan: plan.name, estimate: estimate)
        var account = RunAccount(plan: plan, container: container, fileSystem: fileSystem)
        var claimed = journalWaiting
        // A run refused before it changed anything puts back the records its claim replaced.
        var untouched: ClaimedRecords?
        var stepsRun = 0, loopEnded = false
        defer {
            if !loopEnded, stepsRun == 0, let untouched {
                do {
                    try untouched.restore(container, fileSystem: fileSystem)
                } catch {
                    // Still safe: the guard stays claimed, and an older build refuses this storage.
                    logger.warning("the refused run's records were not put back", metadata: ["error": "\(error)"])
                }
            }
        }
        let meter = ProgressMeter(estimate)
        func progress(
            _ index: Int, _ step: UpgradeStep, _ phase: StepPhase, bytesDone: Int64 = 0, bytesTotal: Int64 = 0
        ) {
            // A step that reports its own end is not reported ended twice by the runner.
            guard meter.isFirstReport(of: phase, step: index) else { return }
            let fraction = meter.advance(
                step: index, kind: step, phase: phase, bytesDone: bytesDone, bytesTotal: bytesTotal)
            events(
                .progress(
                    UpgradeProgress(
                        stepIndex: index, step: step.description, phase: phase, bytesDone: bytesDone,
                        bytesTotal: bytesTotal, fractionDone: fraction)))
        }

        for (index, step) in plan.steps.enumerated() {
            // A Cancel pressed on any event so far stops the run here: no further step starts.
            if caughtUp() { throw BackstageError(.cancelled, path: step.description, during: .upgrading) }
            let stepStarted = Date()
            guard Self.isNeeded(step, container: container, fileSystem: fileSystem) else {
                let (reason, problem) = account.skipped(index)
                report.steps.append(
                    .init(index: index, description: step.description, outcome: .skipped, seconds: 0, reason: reason))
                if let problem { report.problems.append(problem) }
                continue
            }
            if !claimed {
                // Before the first change: an older build must find that this chain ran, whatever becomes of the run.
                untouched = try ClaimedRecords(container, fileSystem: fileSystem)
                try DowngradeGuard.claim(plan, in: container, fileSystem: fileSystem)
                claimed = true
            }
            progress(index, step, .preflight)
            let onProgress = { (event: RelocationProgress) in
                progress(index, step, event.phase, bytesDone: event.bytesDone, bytesTotal: event.bytesTotal)
            }
            let outcome = try step.definition.run(
                StepRun(
                    context: context, runner: runner, earlier: plan.steps[..<index], later: plan.steps[(index + 1)...],
                    onProgress: onProgress))
            relocation.add(outcome.relocation)
            stepsRun += 1
            report.steps.append(
                .init(
                    index: index, description: step.description, outcome: outcome.unchanged == nil ? .done : .upToDate,
                    seconds: Date().timeIntervalSince(stepStarted), reason: outcome.unchanged))
            progress(index, step, .done)
        }
        loopEnded = true
        // Cancelled during the last step, which had committed and was finished: the run still
        // stops short of recording the plan as reached, and says so; the next run records it.
        if caughtUp(), let last = plan.steps.last {
            throw BackstageError(.cancelled, path: last.description, during: .upgrading)
        }
        report.problems += try account.unaccountedFiles()
        // A run that could not account for everything has not reached the plan's version.
        if report.problems.isEmpty { try LaunchRecord.update(after: plan, in: container, fileSystem: fileSystem) }
        if let last = plan.steps.indices.last {
            events(
                .progress(
                    UpgradeProgress(
                        stepIndex: last, step: plan.steps[last].description, phase: .done, bytesDone: 0,
                        bytesTotal: 0, fractionDone: meter.finish())))
        }
        report.relocation = relocation
        report.seconds = Date().timeIntervalSince(started)
        return report
    }
}

/// The locations one launch check found absent, so that a chain naming a store's location in
/// several steps (migrated by one plan, moved by the next) looks at it once.
struct LaunchProbe: StoreProbe {
    /// The last location found absent (a store checked by consecutive steps), kept without an array.
    private var absent: ContainerLocation?
    /// What the launch record vouches for; nil to look at everything.
    private var vouch: LaunchVouch?

    init(vouch: LaunchVouch? = nil) {
        self.vouch = vouch
    }

    mutating func exists(_ location: ContainerLocation, in container: AppContainer, fileSystem: FileSystem) -> Bool {
        if absent == location || vouch?.isAbsent(location, in: container, fileSystem: fileSystem) == true {
            return false
        }
        if fileSystem.exists(location, in: container) { return true }
        absent = location
        return false
    }

    mutating func statusAndPrefix(
        _ location: ContainerLocation, in container: AppContainer, count: Int, fileSystem: FileSystem
    ) -> (FileStatus, [UInt8])? {
        if absent == location || vouch?.isAbsent(location, in: container, fileSystem: fileSystem) == true { return nil }
        var missing = false
        let result = fileSystem.statusAndPrefix(location, in: container, count: count, absent: &missing)
        if missing { absent = location }
        return result
    }

    /// True when the launch record answers `question` so that its step has nothing to do.
    mutating func rulesOut(
        _ question: LaunchQuestions.Question, asking bytes: UnsafeRawBufferPointer, in container: AppContainer,
        fileSystem: FileSystem
    ) -> Bool {
        vouch?.rulesOut(question, asking: bytes, in: container, fileSystem: fileSystem) == true
    }

    /// True when the launch record vouches that `folder` has no stray: it found none there, and
    /// the folder has not changed since.
    mutating func isQuiet(_ folder: ContainerLocation, in container: AppContainer, fileSystem: FileSystem) -> Bool {
        vouch?.isQuiet(folder, in: container, fileSystem: fileSystem) == true
    }
}

/// What the launch record vouches for: each folder it stamped, once found unchanged since the run
/// that wrote it (same device, inode and change time, one `lstat` the first time a step asks),
/// still has no stray if it had none, and still lacks the stores the run saw absent from it, since
/// adding or renaming an entry changes that time.
struct LaunchVouch {
    /// The record's bytes and stamps, read in place (valid while the check runs).
    private let view: UnsafePointer<LaunchRecordView>
    /// Bit i: stamp i was compared with its folder; `unchanged` bit i: it matched.
    private var compared: UInt64 = 0
    private var unchanged: UInt64 = 0

    init(_ view: UnsafePointer<LaunchRecordView>) {
        self.view = view
    }

    mutating func isQuiet(_ folder: ContainerLocation, in container: AppContainer, fileSystem: FileSystem) -> Bool {
        Self.withBytes(of: folder.path) { path in
            guard let found = stamp(root: folder.root, folder: UnsafeRawBufferPointer(path), name: nil) else {
                return false
            }
            return isUnchanged(found, folder, in: container, fileSystem: fileSystem)
        }
    }

    /// Calls `body` with the UTF-8 bytes of `text`, in place (a native string, what a plan holds:
    /// no copy, no retain), else from a copy.
    private static func withBytes<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = text
        return copy.withUTF8(body)
    }

    /// True when the record rules out `question`'s step: its folder is stamped quiet (a
    /// quarantine) or with its store's name absent, and is unchanged.
    mutating func rulesOut(
        _ question: LaunchQuestions.Question, asking bytes: UnsafeRawBufferPointer, in container: AppContainer,
        fileSystem: FileSystem
    ) -> Bool {
        let folder = UnsafeRawBufferPointer(rebasing: bytes[question.folderWord])
        let name = question.isQuarantine ? nil : UnsafeRawBufferPointer(rebasing: bytes[question.name])
        guard let found = view.pointee.stamp(folder: folder, absent: name) else { return false }
        return isUnchanged(
            found,
            ContainerLocation(
                ContainerRoot(standard: question.root),
                String(decoding: UnsafeRawBufferPointer(rebasing: bytes[question.folderPath]), as: UTF8.self)),
            in: container, fileSystem: fileSystem)
    }

    /// True when `location` is directly in a stamped folder, under a name recorded absent, and
    /// the folder is unchanged.
    mutating func isAbsent(_ location: ContainerLocation, in container: AppContainer, fileSystem: FileSystem) -> Bool {
        Self.withBytes(of: location.path) { path in
            // The folder's path and the name, split at the last `/` on the bytes.
            var start = path.count
            while start > 0, path[start - 1] != UInt8(ascii: "/") { start -= 1 }
            let folder = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(path)[..<max(start - 1, 0)])
            let name = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(path)[start...])
            guard let found = stamp(root: location.root, folder: folder, name: name) else { return false }
            // The folder's location is made only when its stamp was not compared yet this check.
            return isUnchanged(
                found, ContainerLocation(location.root, start == 0 ? "" : String(decoding: folder, as: UTF8.self)),
                in: container, fileSystem: fileSystem)
        }
    }

    /// The stamp of the folder `root`/`folder` (a quiet one when `name` is nil; else one listing
    /// `name` absent): its position among the stamps and what it recorded.
    private func stamp(
        root: ContainerRoot, folder: UnsafeRawBufferPointer, name: UnsafeRawBufferPointer?
    ) -> LaunchRecord.FoundStamp? {
        Self.withBytes(of: root.rawValue) { raw in
            view.pointee.stamp(folder: UnsafeRawBufferPointer(raw), folder, absent: name)
        }
    }

    private mutating func isUnchanged(
        _ found: LaunchRecord.FoundStamp, _ folder: @autoclosure () -> ContainerLocation, in container: AppContainer,
        fileSystem: FileSystem
    ) -> Bool {
        guard found.index < 64 else { return found.matches(fileSystem.status(folder(), in: container)) }
        let bit = UInt64(1) << UInt64(found.index)
        if compared & bit == 0 {
            compared |= bit
            if found.matches(fileSystem.status(folder(), in: container)) { unchanged |= bit }
        }
        return unchanged & bit != 0
    }
}
