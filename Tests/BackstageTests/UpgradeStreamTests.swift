import Backstage
import BackstageTestSupport
import Foundation
import Synchronization
import Testing

/// What an app's upgrade screen relies on: a fraction that moves, and a Cancel that throws once
/// the container is consistent.
@Suite struct UpgradeStreamTests {
    static let plans = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Fixtures/Notes/plans")

    static func notesChain() throws -> UpgradePlan {
        UpgradePlan(chain: try ["v1-to-v2", "v2-to-v3", "v3-to-v4"].map { try UpgradePlan.load(from: plans.appending(path: "\($0).json")) })
    }

    func notesContainer(size: String, state: String = "wal-pending") throws -> (TemporaryDirectory, AppContainer) {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "c")
        let made = try runProcess(backstageExecutable, ["fixture", root.path, "--layout", "v1", "--size", size, "--state", state])
        #expect(made.status == 0, "\(made.stderr)")
        return (scratch, .iOSSandbox(root: root))
    }

    func notes(in container: AppContainer) throws -> Int {
        let store = StoreFileSet(main: container.applicationSupport.appending(path: "Accounts/1001/UserData.sqlite"))
        return try PythonSQLite.inspect(store, table: "ZNOTE", titleColumn: "Z_PK").rows
    }

    @Test func theFractionOfAWholeChainGrowsToOneOnlyAtTheEnd() async throws {
        // Orphan sidecars in Documents: the quarantine step has work too.
        let (scratch, container) = try notesContainer(size: "20MB", state: "orphan-sidecars")
        _ = scratch
        var fractions: [Double] = []
        var kinds: Set<String> = []
        for try await event in Upgrader(container: container).run(try Self.notesChain()) {
            if case .progress(let progress) = event {
                fractions.append(progress.fractionDone)
                kinds.insert(String(progress.step.prefix { $0 != " " }))
            }
        }
        #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 }, "monotonic: \(fractions)")
        #expect(Set(fractions).count >= 20, "\(Set(fractions).count) distinct values")
        #expect(fractions.last == 1.0 && fractions.dropLast().allSatisfy { $0 < 1 })
        #expect(kinds == ["relocate", "split", "migrate", "quarantine"], "every step kind reports: \(kinds)")
    }

    /// A migration statement that runs for a while: the bar keeps moving (an event at least
    /// every 100 ms or so), and a Cancel interrupts the statement, whose transaction is rolled back.
    static func slowMigration(rows: Int = 5_000_000) -> UpgradePlan {
        UpgradePlan(name: "slow") {
            UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), [
                .init(id: "v2-numbers", sql: """
                    CREATE TABLE numbers AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \(rows))
                    SELECT x FROM c;
                    """),
            ])
        }
    }

    @Test func aLongMigrationStatementReportsProgressAndCanBeCancelled() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.supportStore().main, rows: 50, journalMode: "wal")
        var beats: [Double] = []
        for try await event in Upgrader(container: app.container).run(Self.slowMigration()) {
            if case .progress(let progress) = event, progress.phase == .locked { beats.append(progress.fractionDone) }
        }
        #expect(beats.count >= 4, "heartbeats while the statement ran: \(beats.count)")
        #expect(Set(beats).count >= 3 && zip(beats, beats.dropFirst()).allSatisfy { $0 <= $1 }, "\(beats)")

        let other = try TestContainer()
        try PythonSQLite.createStore(other.supportStore().main, rows: 50, journalMode: "wal")
        let consumer = Task {
            var locked = 0
            // Long enough (tens of seconds) that the cancellation lands while it runs, however busy the machine.
            for try await event in Upgrader(container: other.container).run(Self.slowMigration(rows: 100_000_000)) {
                // The second event at `locked` is a heartbeat: the statement is running.
                if case .progress(let progress) = event, progress.phase == .locked {
                    locked += 1
                    if locked == 2 { withUnsafeCurrentTask { $0?.cancel() } }
                }
            }
        }
        let result = await consumer.result
        #expect(throws: CancellationError.self) { try result.get() }
        let tables = try PythonSQLite.run("""
            import sqlite3, sys
            print(sorted(r[0] for r in sqlite3.connect(sys.argv[1]).execute("select name from sqlite_master where type = 'table'")))
            """, [other.supportStore().main.path])
        #expect(!tables.stdout.contains("numbers"), "the interrupted migration left nothing: \(tables.stdout)")
        try await Upgrader(container: other.container).upgrade(Self.slowMigration())
    }

    /// The consumer's task is cancelled at each boundary of each step (the step held there until
    /// the cancellation has landed): the loop throws `CancellationError` (never just ends), and the
    /// next run completes with every note.
    @Test func cancellingTheConsumerAtEachBoundaryThrowsAndTheNextRunFinishes() async throws {
        let (reference, referenceContainer) = try notesContainer(size: "300KB")
        _ = reference
        let boundaries = Boundaries()
        var recorder = Upgrader(container: referenceContainer)
        recorder.boundaryHook = { point in boundaries.append(point.description) }
        try await recorder.upgrade(try Self.notesChain())
        let expected = try notes(in: referenceContainer)
        let points = boundaries.all
        #expect(points.count >= 20)

        for (index, point) in points.enumerated() {
            let (scratch, container) = try notesContainer(size: "300KB")
            _ = scratch
            var upgrader = Upgrader(container: container)
            let gate = CallGate(at: index)
            upgrader.boundaryHook = { point in gate.hook(point.description, point.phase) }
            let consumer = Task {
                for try await _ in upgrader.run(try Self.notesChain()) {}
            }
            gate.cancel(consumer)
            let result = await consumer.result
            #expect(throws: CancellationError.self, "cancelled at \(point)") { try result.get() }
            // No waiting: the loop threw once the work had stopped, so the container is free.
            let report = try await Upgrader(container: container).upgrade(try Self.notesChain())
            #expect(!report.steps.isEmpty)
            #expect(try notes(in: container) == expected, "every note after a cancel at \(point)")
        }
    }
}

/// The boundaries a run passed, in order.
final class Boundaries: Sendable {
    private let list = Mutex<[String]>([])
    func append(_ point: String) { list.withLock { $0.append(point) } }
    var all: [String] { list.withLock { $0 } }
}

/// Holds a run at its `index`-th boundary until the task iterating it has been cancelled.
final class CallGate: Sendable {
    private let index: Int
    private let calls = Mutex(0)
    private let reached = Flag(), cancelled = Flag()

    init(at index: Int) { self.index = index }

    var hook: @Sendable (String, StepPhase) -> Void {
        { [self] _, _ in
            let call = calls.withLock { count in
                defer { count += 1 }
                return count
            }
            guard call == index else { return }
            reached.set()
            for _ in 0..<6000 where !cancelled.get() { Thread.sleep(forTimeInterval: 0.01) }
        }
    }

    func cancel<T: Sendable>(_ task: Task<T, any Error>) {
        let reached = self.reached, cancelled = self.cancelled
        Thread.detachNewThread {
            while !reached.get() { Thread.sleep(forTimeInterval: 0.005) }
            task.cancel()
            cancelled.set()
        }
    }
}
