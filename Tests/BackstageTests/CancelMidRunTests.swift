import Backstage
import BackstageTestSupport
import Foundation
import Synchronization
import Testing

/// Issue 54: an upgrade screen's Cancel, pressed on a progress event, must stop the run. The work
/// used to run ahead of its consumer: by the time the loop handled step 3's first `copying` event,
/// step 4 had run too and the stream ended as if finished. Cancelled from the event itself (no
/// sleep, no hook holding the work), several times since the bug was intermittent.
@Suite struct CancelMidRunTests {
    static let names = ["A.sqlite", "B.sqlite", "C.sqlite", "D.sqlite"]

    /// Four small stores in Documents, each copied (not renamed) to Application Support by its step.
    static func fourCopies() -> UpgradePlan {
        UpgradePlan(
            name: "four-copies", version: "v2",
            steps: names.map {
                UpgradeStep.relocate(
                    from: ContainerLocation(.documents, $0), to: ContainerLocation(.applicationSupport, $0),
                    strategy: .copy)
            })
    }

    static func fourStores() throws -> TestContainer {
        let app = try TestContainer(declaring: names)
        for name in names { try PythonSQLite.createStore(app.documentsStore(name).main, rows: 120) }
        return app
    }

    /// What the stream did: the steps (or stores) whose `done` arrived, and how it ended.
    struct Run: Sendable {
        var done: [String] = []
        var endedNormally = false
        var error: (any Error)?
    }

    @Test(.timeLimit(.minutes(10)))
    func cancellingOnStep3sFirstCopyingEventStopsBeforeStep4AndThrows() async throws {
        for iteration in 0..<5 {
            let app = try Self.fourStores()
            let untouched = snapshot(app.documentsStore("D.sqlite"))
            let inFlight = snapshot(app.documentsStore("C.sqlite"))
            let consumer = Task { () -> Run in
                var run = Run()
                do {
                    for try await event in Upgrader(container: app.container).run(Self.fourCopies()) {
                        guard case .progress(let progress) = event else { continue }
                        if progress.phase == .done { run.done.append(Self.names[progress.stepIndex]) }
                        // The Cancel: step 3 of 4 reports copying.
                        if progress.stepIndex == 2 && progress.phase == .copying {
                            withUnsafeCurrentTask { $0?.cancel() }
                        }
                    }
                    run.endedNormally = true
                } catch {
                    run.error = error
                }
                return run
            }
            let run = await consumer.value
            #expect(!run.endedNormally, "iteration \(iteration): the stream ended as if the upgrade had finished")
            #expect(run.error is CancellationError, "iteration \(iteration): \(String(describing: run.error))")
            try expectStopped(app, run: run, untouched: untouched, inFlight: inFlight, iteration: iteration)
            #expect(
                !FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path))
            #expect(Upgrader.storageVersion(of: app.container) == nil, "a cancelled run never records its version")

            // The next run finishes the plan, every row kept.
            try await Upgrader(container: app.container).upgrade(Self.fourCopies())
            for name in Self.names {
                #expect(try PythonSQLite.inspect(app.supportStore(name)).rows == 120, "\(name)")
            }
        }
    }

    /// Steps 1 and 2 completed; step 3 completed (its `done` arrived) or was undone (source as it
    /// was, nothing at the destination); step 4 never started.
    func expectStopped(
        _ app: TestContainer, run: Run, untouched: [String: Data], inFlight: [String: Data], iteration: Int
    ) throws {
        let exists = { (url: URL) in FileManager.default.fileExists(atPath: url.path) }
        for name in ["A.sqlite", "B.sqlite"] {
            #expect(run.done.contains(name), "iteration \(iteration): \(name) reported done")
            #expect(!exists(app.documentsStore(name).main) && exists(app.supportStore(name).main))
            #expect(try PythonSQLite.inspect(app.supportStore(name)).rows == 120)
        }
        #expect(!run.done.contains("D.sqlite"), "iteration \(iteration): \(run.done)")
        #expect(snapshot(app.documentsStore("D.sqlite")) == untouched, "iteration \(iteration): step 4 never ran")
        #expect(!exists(app.supportStore("D.sqlite").main), "iteration \(iteration): step 4's target absent")
        if run.done.contains("C.sqlite") {
            #expect(!exists(app.documentsStore("C.sqlite").main), "iteration \(iteration): step 3 completed")
            #expect(try PythonSQLite.inspect(app.supportStore("C.sqlite")).rows == 120)
        } else {
            #expect(snapshot(app.documentsStore("C.sqlite")) == inFlight, "iteration \(iteration): step 3 undone")
            #expect(!exists(app.supportStore("C.sqlite").main), "iteration \(iteration): step 3 undone")
            #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        }
    }

    /// The relocator's stream, the same way: cancelled on the first `copying` event of the third
    /// store to move, no fourth store starts, and the loop throws.
    @Test(.timeLimit(.minutes(10)))
    func cancellingARelocationOnTheThirdStoresCopyingEventMovesNoFourthStore() async throws {
        for iteration in 0..<5 {
            let app = try Self.fourStores()
            let before = Dictionary(uniqueKeysWithValues: Self.names.map { ($0, snapshot(app.documentsStore($0))) })
            let consumer = Task { () -> (Run, [String]) in
                var run = Run()
                var started: [String] = []
                do {
                    for try await event in Relocator(container: app.container).events(
                        RelocationOptions(strategy: .copy))
                    {
                        guard case .progress(let progress) = event else { continue }
                        if !started.contains(progress.store) { started.append(progress.store) }
                        if progress.phase == .done { run.done.append(progress.store) }
                        if progress.phase == .copying && started.count == 3 {
                            withUnsafeCurrentTask { $0?.cancel() }
                        }
                    }
                    run.endedNormally = true
                } catch {
                    run.error = error
                }
                return (run, started)
            }
            let (run, started) = await consumer.value
            #expect(!run.endedNormally, "iteration \(iteration)")
            #expect(run.error is CancellationError, "iteration \(iteration): \(String(describing: run.error))")
            #expect(started.count == 3, "iteration \(iteration): no fourth store started: \(started)")
            for name in Self.names {
                let moved = !FileManager.default.fileExists(atPath: app.documentsStore(name).main.path)
                if run.done.contains(name) {
                    #expect(moved, "\(name)")
                    #expect(try PythonSQLite.inspect(app.supportStore(name)).rows == 120, "\(name)")
                } else {
                    #expect(snapshot(app.documentsStore(name)) == before[name], "iteration \(iteration): \(name)")
                    #expect(!FileManager.default.fileExists(atPath: app.supportStore(name).main.path), "\(name)")
                }
            }
            #expect(run.done.count >= 2 && run.done.count <= 3, "iteration \(iteration): \(run.done)")
        }
    }
}
