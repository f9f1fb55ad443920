import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A plan with a mistake in it, given to `backstage upgrade` as a new user would: refused before
/// anything moves, in one sentence naming the file and where the mistake is.
@Suite struct StrictPlanTests {
    /// A Workouts app whose store still lives in Documents.
    static func workoutsApp() throws -> TemporaryDirectory {
        let scratch = try TemporaryDirectory()
        try FileManager.default.createDirectory(
            at: scratch.url.appending(path: "app/Documents"), withIntermediateDirectories: true)
        let made = try PythonSQLite.run(
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("create table workout(id integer primary key autoincrement, name text, minutes integer check (minutes > 0))")
            c.executemany("insert into workout(name, minutes) values (?, ?)", [("run", 30), ("swim", 45), ("row", 20)])
            c.commit()
            """, [scratch.url.appending(path: "app/Documents/Workouts.sqlite").path])
        #expect(made.status == 0, "\(made.stderr)")
        return scratch
    }

    static let relocation =
        #"{"relocate": {"from": "documents/Workouts.sqlite", "to": "applicationSupport/Workouts.sqlite"}}"#

    @Test(arguments: [
        (
            #"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/Workouts.sqlite", "to": "applicationSupport/Workouts.sqlite", "stratgy": "copy"}}]}"#,
            #"unknown key "stratgy" in steps[0].relocate (line 1, column 127): correct its spelling or remove it"#
        ),
        (
            #"{"name": "v1-to-v2", "verison": "v2", "steps": [\#(relocation)]}"#,
            #"unknown key "verison" at the top level (line 1, column 22): correct its spelling or remove it"#
        ),
        (
            "{\"name\": \"v1-to-v2\",\n  \"steps\": [\n    {\"relocate\": {\"from\": \"documents/Workouts.sqlite\" \"to\": \"caches/W.sqlite\"}}]}",
            "JSON syntax error at line 3, column 55: found '\"' where JSON needs ',' or '}'"
        ),
        (
            "{\"name\": \"v1-to-v2\",\n  \"steps\": [\n    {\"relocate\": {\"from\": \"documents/Wor",
            "the file ends early at line 3, column 41, where JSON needs the closing '\"' of the string: is it truncated?"
        ),
        (
            #"{"name": "v1-to-v2", "name": "again", "steps": []}"#,
            #"the key "name" is written twice in one object (again at line 1, column 22)"#
        ),
        (
            #"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/Workouts.sqlite", "to": 2}}]}"#,
            "steps[0].relocate.to is not a string"
        ),
        (
            #"{"name": "v1-to-v2", "steps": [{"relocate": {"to": "applicationSupport/Workouts.sqlite"}}]}"#,
            #"steps[0].relocate has no "from", which it needs"#
        ),
        (
            #"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents", "to": "applicationSupport/Workouts.sqlite"}}]}"#,
            "steps[0].relocate.from documents does not name a store: write <root>/<path of the store>, such as applicationSupport/Notes.sqlite"
        ),
        (
            #"{"name": "v1-to-v2", "steps": [{"migrateSchema": {"store": "documents/Workouts.sqlite", "migrations": [{"id": "v2-kcal", "sql": "  -- later\n"}]}}]}"#,
            "steps[0].migrateSchema.migrations[0].sql holds no SQL statement: write the migration's SQL"
        ),
        (
            #"{"name": "v1-to-v2", "steps": [{"split": {"store": "documents/Workouts.sqlite", "into": []}}]}"#,
            "steps[0].split.into is empty: name the store (or stores) the tables go to"
        ),
        (#"{"name": "", "steps": [\#(relocation)]}"#, "name is empty: give the plan a name, such as v1-to-v2"),
        (
            #"{"name": "v1-to-v2", "version": "../v2", "steps": [\#(relocation)]}"#,
            "version ../v2 is not a version name: use letters, digits, '.', '-', '_' or '+', not starting with '.'"
        ),
    ])
    func aPlanWithAMistakeIsRefusedNamingWhereAndNothingMoves(plan: String, reason: String) throws {
        let scratch = try Self.workoutsApp()
        let file = scratch.url.appending(path: "v1-to-v2.json")
        try Data(plan.utf8).write(to: file)
        let before = snapshot(scratch.url.appending(path: "app"))

        for arguments in [["--dry-run"], []] {
            let result = try runProcess(
                backstageExecutable,
                ["upgrade", scratch.url.appending(path: "app").path, "--plan", file.path] + arguments)
            #expect(result.status == 3)
            #expect(result.stderr == "error: \(file.path) is not a valid upgrade plan: \(reason)\n")
        }
        #expect(snapshot(scratch.url.appending(path: "app")) == before, "nothing on disk changed")
    }

    @Test(arguments: [
        "relocate:comitted@1", "relocat:committed@x", "relocate:committed@0", "relocate:committed@", "committed",
    ])
    func aMistypedCrashPointIsAUsageErrorAndNothingRuns(point: String) throws {
        let scratch = try Self.workoutsApp()
        let file = scratch.url.appending(path: "v1-to-v2.json")
        try Data(#"{"name": "v1-to-v2", "steps": [\#(Self.relocation)]}"#.utf8).write(to: file)
        let before = snapshot(scratch.url.appending(path: "app"))

        // A CrashPoint cannot be mistyped in Swift: the mistake is in the request's JSON.
        let request = try JSONSerialization.data(withJSONObject: [
            "format": 1,
            "command": ["upgrade": ["arguments": [scratch.url.appending(path: "app").path, "--plan", file.path], "crashAt": point]],
        ])
        let result = try runProcess(simulateChildExecutable, [], input: request)

        #expect(result.status == 2 && result.killedBySignal == nil)
        #expect(
            result.stderr.hasPrefix("error: \"\(point)\" is not a crash point of upgrade (kind:phase[@N]); use one of: "),
            "\(result.stderr)")
        #expect(
            result.stderr.contains(" relocate:committed, ") && result.stderr.contains(" migrateSchema:migrating, ")
                && !result.stderr.dropLast().contains("\n"), "the forms are listed, in one sentence")
        #expect(snapshot(scratch.url.appending(path: "app")) == before, "nothing ran")
    }

    @Test(arguments: ["relocate:committed@2", "split:copied", "migrateSchema:migrated@1"])
    func aCrashPointThePlanNeverReachesIsAUsageErrorListingThoseItDoes(point: String) throws {
        let scratch = try Self.workoutsApp()
        let file = scratch.url.appending(path: "v1-to-v2.json")
        try Data(#"{"name": "v1-to-v2", "steps": [\#(Self.relocation)]}"#.utf8).write(to: file)
        let before = snapshot(scratch.url.appending(path: "app"))

        let result = try runSimulateChild(
            .upgrade(arguments: [scratch.url.appending(path: "app").path, "--plan", file.path], crashAt: try #require(CrashPoint(point))))

        #expect(result.status == 2 && result.killedBySignal == nil)
        let shown = point.contains("@") ? point : point + "@1"
        #expect(
            result.stderr.hasPrefix(
                "error: the crash point \(shown) is not a boundary these plans reach, so nothing would be killed; they reach: "
                    + "relocate:preflight@1, relocate:journaled@1, relocate:locked@1, relocate:copying@1,"),
            "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "relocate:committed@1, relocate:supportMoved@1, relocate:sourceRemoved@1, relocate:done@1."))
        #expect(snapshot(scratch.url.appending(path: "app")) == before, "nothing ran")
    }

    @Test func aCrashPointThisRunNeverPassesIsSaidAtTheEnd() throws {
        let scratch = try Self.workoutsApp()
        let file = scratch.url.appending(path: "v1-to-v2.json")
        try Data(#"{"name": "v1-to-v2", "steps": [\#(Self.relocation)]}"#.utf8).write(to: file)

        // A relocation may copy (across file systems): copying is one of its boundaries, but on one
        // file system it renames, and the run ends without passing it.
        let result = try runSimulateChild(.upgrade(arguments: [scratch.url.appending(path: "app").path, "--plan", file.path], crashAt: CrashPoint(.relocate, .copying)))

        #expect(result.status == 0 && result.killedBySignal == nil)
        #expect(result.stderr.contains("warning: the upgrade never reached the crash point relocate:copying@1"), "\(result.stderr)")
    }

    @Test func aCrashPointThePlanReachesKillsTheRunThere() throws {
        let scratch = try Self.workoutsApp()
        let file = scratch.url.appending(path: "v1-to-v2.json")
        try Data(#"{"name": "v1-to-v2", "steps": [\#(Self.relocation)]}"#.utf8).write(to: file)

        let result = try runSimulateChild(
            .upgrade(arguments: [scratch.url.appending(path: "app").path, "--plan", file.path], crashAt: CrashPoint(.relocate, .committed)))

        #expect(result.killedBySignal == SIGKILL)
        #expect(
            FileManager.default.fileExists(
                atPath: scratch.url.appending(path: "app/Library/Application Support/Workouts.sqlite").path))
    }
}
