import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The downgrade guard holds whatever a newer build's run did (killed, failed), and the launch
/// record holds plans of any length.
@Suite struct DowngradeGuardCommandTests {
    /// The Workouts app at v1 with the plans of two builds: the older knows v2, the newer v2 and v3.
    struct Builds {
        let app: TestContainer
        let v2: URL
        let v3: URL

        init(v3 json: String) throws {
            app = try TestContainer()
            try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
            v2 = app.root.appending(path: "v2.json")
            v3 = app.root.appending(path: "v3.json")
            try Data(
                #"{"name": "v1-to-v2", "version": "v2", "steps": [{"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}}]}"#
                    .utf8
            ).write(to: v2)
            try Data(json.utf8).write(to: v3)
        }

        func upgrade(_ plans: [URL], _ extra: [String] = [], crashAt: CrashPoint? = nil) throws -> ProcessResult {
            let arguments = [app.root.path] + plans.flatMap { ["--plan", $0.path] } + extra
            if let crashAt { return try runSimulateChild(.upgrade(arguments: arguments, crashAt: crashAt)) }
            return try runProcess(backstageExecutable, ["upgrade"] + arguments)
        }

        func expectOlderBuildRefused() throws {
            let before = snapshot(app.root)
            let older = UpgradePlan(chain: [try UpgradePlan.load(from: v2)])
            #expect(Upgrader.needsUpgrade(app.container, older), "never \"nothing to do\"")
            for extra in [["--dry-run"], []] {
                let result = try upgrade([v2], extra)
                #expect(result.status == 3, "\(extra): \(result.stdout)")
                #expect(
                    result.stderr.contains(
                        "was upgraded to v3 by a newer build of the app; this build knows v2 and changed nothing"),
                    "\(result.stderr)")
                #expect(snapshot(app.root) == before, "\(extra)")
            }
        }
    }

    static let split = """
        {"name": "v2-to-v3", "version": "v3", "steps": [{"split": {"store": "applicationSupport/Workout.sqlite", "into": [
          {"store": "applicationSupport/Data.sqlite", "tables": ["workout", "exercise"]}, {"store": "caches/Log.sqlite", "tables": ["log"]}]}}]}
        """

    /// The newer build was killed in the middle of its split: the older build does not "recover"
    /// (finish or undo) the newer build's step; the newer build does.
    @Test func anOlderBuildNeverRecoversANewerBuildsKilledStep() throws {
        let builds = try Builds(v3: Self.split)
        let killed = try builds.upgrade([builds.v2, builds.v3], crashAt: CrashPoint(.split, .copied))
        #expect(killed.killedBySignal == SIGKILL)
        try builds.expectOlderBuildRefused()
        #expect(try builds.upgrade([builds.v2, builds.v3]).status == 0)
        #expect(
            try PythonSQLite.inspect(builds.app.supportStore("Data.sqlite"), table: "workout", titleColumn: "name").rows
                == 19)
    }

    /// The newer build's run failed after its relocation: the older build does not call that
    /// storage its own ("nothing to do") and record its version over it.
    @Test func anOlderBuildNeverForgetsANewerBuildsFailedRun() throws {
        let builds = try Builds(
            v3: """
                {"name": "v2-to-v3", "version": "v3", "steps": [{"migrateSchema": {"store": "applicationSupport/Workout.sqlite", "migrations": [
                  {"id": "v3-one-name", "sql": "CREATE UNIQUE INDEX one_name ON workout(substr(name, 1, 3))"}]}}]}
                """)
        let failed = try builds.upgrade([builds.v2, builds.v3])
        #expect(failed.status == 3, "\(failed.stderr)")
        try builds.expectOlderBuildRefused()
        #expect(Upgrader.storageVersion(of: builds.app.container) == nil)
    }

    /// A plan of 300 steps naming long store locations: its launch record used to exceed what a
    /// symbolic link holds, failing every rerun after the store moved.
    @Test func aLongPlanCompletesAndItsRerunHasNothingToDo() throws {
        let builds = try Builds(v3: Self.split)
        let folder = String(repeating: "f", count: 40)
        let steps = (0..<300).map { index in
            #"{"relocate": {"from": "documents/\#(folder)/Old-\#(index).sqlite", "to": "applicationSupport/\#(folder)/Old-\#(index).sqlite"}}"#
        }
        let long = builds.app.root.appending(path: "long.json")
        try Data(#"{"name": "v2-to-v3", "version": "v3", "steps": [\#(steps.joined(separator: ","))]}"#.utf8).write(
            to: long)
        for _ in 0..<2 {
            let run = try builds.upgrade([builds.v2, long])
            #expect(run.status == 0, "\(run.stderr)")
        }
        #expect(Upgrader.storageVersion(of: builds.app.container) == "v3")
        let dry = try builds.upgrade([builds.v2, long], ["--dry-run"])
        #expect(dry.status == 0 && dry.stdout.hasPrefix("v1-to-v2 → v2-to-v3: nothing to do"), "\(dry.stdout)")
        #expect(
            try PythonSQLite.inspect(builds.app.supportStore("Workout.sqlite"), table: "workout", titleColumn: "name")
                .rows == 19)
    }
}
