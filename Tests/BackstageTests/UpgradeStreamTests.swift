import Backstage
import BackstageTestSupport
import Foundation
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

    /// The consumer cancels at the first event of each phase of each step: the loop throws
    /// `CancellationError` (never just ends), and the next run completes with every note.
    @Test func cancellingTheConsumerAtEachPhaseThrowsAndTheNextRunFinishes() async throws {
        let (reference, referenceContainer) = try notesContainer(size: "300KB")
        _ = reference
        var points: [(step: Int, phase: StepPhase)] = []
        for try await event in Upgrader(container: referenceContainer).run(try Self.notesChain()) {
            if case .progress(let progress) = event, progress.fractionDone < 1,
               !points.contains(where: { $0.step == progress.stepIndex && $0.phase == progress.phase }) {
                points.append((progress.stepIndex, progress.phase))
            }
        }
        let expected = try notes(in: referenceContainer)
        #expect(points.count >= 12)

        for point in points {
            let (scratch, container) = try notesContainer(size: "300KB")
            _ = scratch
            let consumer = Task {
                for try await event in Upgrader(container: container).run(try Self.notesChain()) {
                    if case .progress(let progress) = event, progress.stepIndex == point.step, progress.phase == point.phase {
                        withUnsafeCurrentTask { $0?.cancel() }
                    }
                }
            }
            let result = await consumer.result
            #expect(throws: CancellationError.self, "cancelled at step \(point.step) \(point.phase)") { try result.get() }
            // No waiting: the loop threw once the work had stopped, so the container is free.
            let report = try await Upgrader(container: container).upgrade(try Self.notesChain())
            #expect(!report.steps.isEmpty)
            #expect(try notes(in: container) == expected, "every note after a cancel at step \(point.step) \(point.phase)")
        }
    }
}
