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
            get throws {
                try PythonSQLite.inspect(app.documentsStore("Workout.sqlite"), table: "workout", titleColumn: "name")
                    .rows
            }
        }
    }

    /// The data loss of issue 27: both targets name one store. It used to exit 0 with the source
    /// deleted and only the second target's tables kept.
    @Test func aSplitWhoseTargetsNameOneStoreIsRefusedByTheRunAndTheDryRun() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v2", "steps": [{"split": {"store": "documents/Workout.sqlite", "into": [
                  {"store": "applicationSupport/Data.sqlite", "tables": ["workout", "exercise"]},
                  {"store": "applicationSupport/Data.sqlite", "tables": ["log"]}]}}]}
                """)
        let before = snapshot(workouts.app.root)
        for extra in [["--dry-run"], [], ["--json"]] {
            let result = try workouts.upgrade(extra)
            #expect(result.status == 3, "\(extra)")
            #expect(
                result.stderr
                    == "error: plan v2, step 1, split.into[1].store names applicationSupport/Data.sqlite, as into[0].store does: "
                    + "the second target would overwrite the first; nothing was changed: correct the plan\n")
            #expect(snapshot(workouts.app.root) == before)
        }
        #expect(try workouts.workouts == 19)
    }

    /// Issue 27: a migration with its own `COMMIT;` then a `DELETE` said "rolled back" while the
    /// DELETE stayed (19 rows to 0). Now the dry run and the run refuse it before anything moves.
    @Test func aMigrationThatCommitsIsRefusedByTheDryRunAndTheRun() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v2", "steps": [
                  {"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}},
                  {"migrateSchema": {"store": "applicationSupport/Workout.sqlite", "migrations": [
                    {"id": "v2-tidy", "sql": "UPDATE workout SET name = 'x' WHERE id = 1; -- then\\n commit; DELETE FROM workout"}]}}]}
                """)
        let before = snapshot(workouts.app.root)
        for extra in [["--dry-run"], []] {
            let result = try workouts.upgrade(extra)
            #expect(result.status == 3, "\(extra)")
            #expect(
                result.stderr.hasPrefix(
                    "error: migration v2-tidy for \(workouts.app.supportStore("Workout.sqlite").main.path) was refused and did not run: "
                        + "in its statement 2, COMMIT would end or open the transaction Backstage runs the migration in"
                ), "\(result.stderr)")
            #expect(!result.stderr.contains("rolled back"))
            #expect(snapshot(workouts.app.root) == before, "\(extra)")
        }
        #expect(try workouts.workouts == 19)
    }

    /// The dry run used to say "upgrade needed ... within the launch budget" for a migration of a
    /// table that does not exist; the run then moved the store and failed.
    @Test func aDryRunFindsAMigrationOfAMissingTable() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v2", "steps": [
                  {"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}},
                  {"migrateSchema": {"store": "applicationSupport/Workout.sqlite", "migrations": [
                    {"id": "v2-notes", "sql": "ALTER TABLE workouts ADD COLUMN notes TEXT"}]}}]}
                """)
        let before = snapshot(workouts.app.root)
        for extra in [["--dry-run"], []] {
            let result = try workouts.upgrade(extra)
            #expect(result.status == 3, "\(extra)")
            #expect(
                result.stderr
                    == "error: migration v2-notes would fail on \(workouts.app.supportStore("Workout.sqlite").main.path) (tried on an empty copy "
                    + "of its schema as it will be then): no such table: workouts; nothing was changed: correct the plan\n"
            )
            #expect(snapshot(workouts.app.root) == before)
        }
    }

    /// A newer build's chain upgraded the storage: the dry run of the older chain is refused with
    /// the run's exit status and sentence, not "upgrade needed" with exit 0.
    @Test func aDryRunOnStorageANewerBuildUpgradedIsRefusedAsTheRunIs() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v1-to-v2", "version": "v2", "steps": [
                  {"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}}]}
                """)
        let newer = workouts.app.root.appending(path: "v3.json")
        try Data(
            #"{"name": "v2-to-v3", "version": "v3", "steps": [{"relocate": {"from": "applicationSupport/Workout.sqlite", "to": "applicationSupport/Accounts/1/Workout.sqlite"}}]}"#
                .utf8
        ).write(to: newer)
        #expect(try workouts.upgrade(["--plan", newer.path]).status == 0)
        let before = snapshot(workouts.app.root)
        let run = try workouts.upgrade()
        let dry = try workouts.upgrade(["--dry-run"])
        #expect(run.status == 3 && dry.status == 3)
        #expect(
            dry.stderr == run.stderr && run.stderr.contains("was upgraded to v3 by a newer build of the app"),
            "\(run.stderr)")
        #expect(dry.stdout.isEmpty)
        #expect(snapshot(workouts.app.root) == before)
    }

    /// Issue 27: a typo in a relocation's source printed "0 of 1 steps ran ... skipped", exit 0, and
    /// recorded the version as reached while the store stayed in Documents.
    @Test func aStoreThePlanMissesInDocumentsIsNamedAndTheVersionIsNotRecorded() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v1-to-v2", "version": "v2", "steps": [
                  {"relocate": {"from": "documents/Workouts.sqlite", "to": "applicationSupport/Workout.sqlite"}}, {"quarantine": {}}]}
                """)
        let before = snapshot(workouts.app.root)
        for _ in 0..<2 {
            let result = try workouts.upgrade()
            #expect(result.status == 1)
            #expect(
                result.stdout.contains(
                    "step 1  skipped     relocate documents/Workouts.sqlite → applicationSupport/Workout.sqlite  (absent: no store at documents/Workouts.sqlite)"
                ),
                "\(result.stdout)")
            #expect(
                result.stderr
                    == "error: Documents still holds Workout.sqlite (database), which no step of the plan accounts for; the closest location "
                    + "the plan names is documents/Workouts.sqlite; the version was not recorded as reached: correct the plan and run it again\n"
            )
            #expect(snapshot(workouts.app.root).filter { !$0.key.contains(".backstage/") } == before)
        }
        #expect(Upgrader.storageVersion(of: workouts.app.container) == nil)
        let json = try workouts.upgrade(["--json"])
        #expect(
            json.status == 1
                && json.stdout.contains("\"problems\" : [\n      \"Documents still holds Workout.sqlite (database)"),
            "\(json.stdout)")

        // The dry run gives the run's account and its exit status, not "nothing to do" and 0.
        let dry = try workouts.upgrade(["--dry-run"])
        #expect(dry.status == 1, "\(dry.stdout)\(dry.stderr)")
        #expect(dry.stdout.contains("v1-to-v2: no step would run, but the plan does not account for everything"), "\(dry.stdout)")
        #expect(
            dry.stderr
                == "error: Documents still holds Workout.sqlite (database), which no step of the plan accounts for; the closest location "
                + "the plan names is documents/Workouts.sqlite; a run would not record the version as reached: correct the plan\n",
            "\(dry.stderr)")
        #expect(snapshot(workouts.app.root).filter { !$0.key.contains(".backstage/") } == before, "a dry run writes nothing")
    }

    /// The user's own databases beside the app's store are documents (issue 28): a run that moves
    /// the app's store completes, records its version and leaves them byte for byte.
    @Test func theUsersOwnDatabasesInDocumentsAreNeitherMovedNorCountedAgainstTheRun() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v1-to-v2", "version": "v2", "steps": [
                  {"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}}, {"quarantine": {}}]}
                """)
        try PythonSQLite.createStore(workouts.app.documents.appending(path: "notes.db"), rows: 12, journalMode: "wal")
        try FileManager.default.createDirectory(at: workouts.app.documents.appending(path: "Finance"), withIntermediateDirectories: true)
        try PythonSQLite.createStore(workouts.app.documents.appending(path: "Finance/Budget.sqlite"), rows: 5, journalMode: "delete")
        let users = snapshot(workouts.app.documents).filter { !$0.key.hasPrefix("Workout.sqlite") }
        let result = try workouts.upgrade()
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(Upgrader.storageVersion(of: workouts.app.container) == "v2")
        #expect(snapshot(workouts.app.documents) == users, "the user's databases stay, byte for byte; the app's store left")
        #expect(FileManager.default.fileExists(atPath: workouts.app.supportStore("Workout.sqlite").main.path))
    }

    /// A typo in a migration's store: the migration used to be skipped and the dry run said "nothing to do".
    @Test func aMigrationOfAStoreThatWillNotBeThereIsRefusedBeforeAnythingMoves() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v2", "steps": [
                  {"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}},
                  {"migrateSchema": {"store": "applicationSupport/Workouts.sqlite", "migrations": [{"id": "v2", "sql": "ALTER TABLE workout ADD COLUMN notes TEXT"}]}}]}
                """)
        let before = snapshot(workouts.app.root)
        for extra in [["--dry-run"], []] {
            let result = try workouts.upgrade(extra)
            #expect(result.status == 3)
            #expect(
                result.stderr
                    == "error: plan v2, step 2 migrates applicationSupport/Workouts.sqlite, where no store is nor will be then, though there is "
                    + "one at applicationSupport/Workout.sqlite, which the plan also names; nothing was changed: correct the plan\n"
            )
            #expect(snapshot(workouts.app.root) == before)
        }
    }

    /// Every skipped step says why, in text and JSON: on a fresh install, and when already done.
    @Test func skippedStepsSayWhy() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v2", "version": "v2", "steps": [
                  {"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}},
                  {"migrateSchema": {"store": "applicationSupport/Workout.sqlite", "migrations": [{"id": "v2", "sql": "ALTER TABLE workout ADD COLUMN notes TEXT"}]}}]}
                """)
        #expect(try workouts.upgrade().status == 0)
        let again = try workouts.upgrade()
        #expect(again.status == 0)
        #expect(
            again.stdout.contains(
                "step 1  skipped     relocate documents/Workout.sqlite → applicationSupport/Workout.sqlite  (already done)"
            ), "\(again.stdout)")
        #expect(
            again.stdout.contains("step 2  skipped     migrate applicationSupport/Workout.sqlite: v2  (up to date)"),
            "\(again.stdout)")

        let fresh = try TestContainer()
        let json = try runProcess(
            backstageExecutable, ["upgrade", fresh.root.path, "--plan", workouts.plan.path, "--json"])
        #expect(json.status == 0)
        #expect(
            json.stdout.components(separatedBy: "\"reason\" : \"absent: fresh install\"").count == 3, "\(json.stdout)")
        #expect(Upgrader.storageVersion(of: fresh.container) == "v2")
    }

    /// A migration that fails on the rows (its schema lets it pass the preflight) after the
    /// relocation before it moved the store: the error says what stays done and how to resume.
    @Test func aFailureAfterAStepChangedTheContainerSaysWhatStaysDoneAndHowToResume() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v2", "steps": [
                  {"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}},
                  {"migrateSchema": {"store": "applicationSupport/Workout.sqlite", "migrations": [
                    {"id": "v2-one-name", "sql": "CREATE UNIQUE INDEX one_name ON workout(substr(name, 1, 3))"}]}}]}
                """)
        let result = try workouts.upgrade()
        #expect(result.status == 3)
        #expect(
            result.stderr.hasPrefix(
                "error: migration v2-one-name failed on \(workouts.app.supportStore("Workout.sqlite").main.path) and was rolled back: "
                    + "UNIQUE constraint failed"), "\(result.stderr)")
        #expect(
            result.stderr.hasSuffix(
                "; before it, this run completed step 1 (relocate documents/Workout.sqlite → applicationSupport/Workout.sqlite), "
                    + "which stays done, and the step that failed was undone or is finished by the next run: once the cause is corrected, "
                    + "`backstage upgrade \(workouts.app.root.path) --plan \(workouts.plan.path)` resumes from step 2\n"
            ), "\(result.stderr)")
        let moved = workouts.app.supportStore("Workout.sqlite")
        #expect(try PythonSQLite.inspect(moved, table: "workout", titleColumn: "name").rows == 19)
        #expect(try PythonSQLite.schema(moved).tables.contains("workout"))
    }

    /// A store the app makes only when a feature is first used is absent on many devices: its
    /// migration is skipped with the reason, never refused.
    @Test func aMigrationOfAStoreTheAppHasNotMadeYetIsSkippedWithItsReason() throws {
        let workouts = try Workouts(
            plan: """
                {"name": "v2", "version": "v2", "steps": [
                  {"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}},
                  {"migrateSchema": {"store": "applicationSupport/Challenges.sqlite", "migrations": [{"id": "v2", "sql": "CREATE TABLE badge(id INTEGER PRIMARY KEY)"}]}}]}
                """)
        let result = try workouts.upgrade()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "step 2  skipped     migrate applicationSupport/Challenges.sqlite: v2  (absent: no store at applicationSupport/Challenges.sqlite)"
            ),
            "\(result.stdout)")
        #expect(Upgrader.storageVersion(of: workouts.app.container) == "v2")
    }
}
