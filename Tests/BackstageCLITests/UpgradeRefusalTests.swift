import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// `backstage upgrade` refuses plans that would lose rows or lie, before anything moves, with one
/// sentence and the same exit status in a dry run and a run.
@Suite struct UpgradeRefusalTests {
    /// A container of the Workouts app (`Documents/Workout.sqlite`, 19 workouts) and a plan file.
    struct Workouts {
        let app: TestContainer
        let plan: URL

        init(plan json: String) throws {
            app = try TestContainer()
            try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
            plan = app.root.appending(path: "plan.json")
            try Data(json.utf8).write(to: plan)
        }

        func upgrade(_ extra: [String] = []) throws -> ProcessResult {
            try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path] + extra)
        }

        var workouts: Int {
            get throws { try PythonSQLite.inspect(app.documentsStore("Workout.sqlite"), table: "workout", titleColumn: "name").rows }
        }
    }

    /// The data loss of issue 27: both targets name one store. It used to exit 0 with the source
    /// deleted and only the second target's tables kept.
    @Test func aSplitWhoseTargetsNameOneStoreIsRefusedByTheRunAndTheDryRun() throws {
        let workouts = try Workouts(plan: """
            {"name": "v2", "steps": [{"split": {"store": "documents/Workout.sqlite", "into": [
              {"store": "applicationSupport/Data.sqlite", "tables": ["workout", "exercise"]},
              {"store": "applicationSupport/Data.sqlite", "tables": ["log"]}]}}]}
            """)
        let before = snapshot(workouts.app.root)
        for extra in [["--dry-run"], [], ["--json"]] {
            let result = try workouts.upgrade(extra)
            #expect(result.status == 3, "\(extra)")
            #expect(result.stderr == "error: plan v2, step 1, split.into[1].store names applicationSupport/Data.sqlite, as into[0].store does: "
                    + "the second target would overwrite the first; nothing was changed: correct the plan\n")
            #expect(snapshot(workouts.app.root) == before)
        }
        #expect(try workouts.workouts == 19)
    }
}
