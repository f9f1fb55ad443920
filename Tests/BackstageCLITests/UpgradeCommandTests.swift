import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// `backstage upgrade` killed with SIGKILL at every phase boundary of a split and of a schema
/// migration, then run again: the plan completes, identical to an uninterrupted run.
@Suite struct UpgradeCommandTests {
    static let plan = """
        {"name": "v1-to-v3", "steps": [
          {"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}},
          {"split": {"store": "applicationSupport/Notes.sqlite",
                     "into": [{"store": "applicationSupport/UserData.sqlite", "tables": ["ZFOLDER", "ZNOTE", "ZATTACHMENT"]},
                              {"store": "caches/Cache.sqlite", "tables": ["ZTHUMBNAIL"]}],
                     "discard": ["ZLOG"]}},
          {"migrateSchema": {"store": "applicationSupport/UserData.sqlite", "migrations": [
            {"id": "v3-pinned", "sql": "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER NOT NULL DEFAULT 0"},
            {"id": "v3-pin-first", "sql": "UPDATE ZNOTE SET ZPINNED = 1 WHERE Z_PK = 1"}]}}
        ]}
        """

    struct Crash: CustomTestStringConvertible, Sendable {
        var point: String
        var testDescription: String { point }
    }

    static let crashes: [Crash] = StepPhase.splitBoundaries.map { Crash(point: "split:\($0.rawValue)") }
        + StepPhase.migrationBoundaries.map { Crash(point: "migrateSchema:\($0.rawValue)") }

    @Test(arguments: crashes)
    func killedAtABoundaryThenRerunCompletesThePlan(_ crash: Crash) throws {
        let app = try TestContainer()
        let files = try CoreDataStore.create(app.documentsStore().main, notes: 120, walOnlyNotes: 10)
        let before = try PythonSQLite.contentHashes(app.documentsStore())
        let plan = app.root.appending(path: "plan.json")
        try Data(Self.plan.utf8).write(to: plan)

        let killed = try runSimulateChild(.upgrade(arguments: [app.root.path, "--plan", plan.path], crashAt: try #require(CrashPoint(crash.point))))
        #expect(killed.killedBySignal == SIGKILL, "the upgrade must really be interrupted at \(crash.point)")
        let rerun = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path])
        #expect(rerun.status == 0, "\(rerun.stderr)")

        let userData = StoreFileSet(main: app.applicationSupport.appending(path: "UserData.sqlite"))
        let after = try PythonSQLite.contentHashes(userData)
        for table in ["ZFOLDER", "ZATTACHMENT", "Z_METADATA", "Z_PRIMARYKEY"] { #expect(after.tables[table] == before.tables[table], "\(table)") }
        let notes = try PythonSQLite.inspect(userData, table: "ZNOTE", titleColumn: "ZTITLE")
        #expect(notes.rows == 130 && notes.integrity == "ok")
        let pinned = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("select sum(ZPINNED), count(*) from ZNOTE").fetchone(), c.execute("select count(*) from grdb_migrations").fetchone()[0])
            """, [userData.main.path])
        #expect(pinned.stdout == "(1, 130) 2\n", "each migration applied exactly once")
        #expect(try PythonSQLite.contentHashes(StoreFileSet(main: app.container.caches.appending(path: "Cache.sqlite"))).tables["ZTHUMBNAIL"] == before.tables["ZTHUMBNAIL"])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: userData.supportFolder.appending(path: "_EXTERNAL_DATA").path)) == Set(files.referenced))
        for url in StoreFileSet(main: app.applicationSupport.appending(path: "Notes.sqlite")).allPaths {
            #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.lastPathComponent) left behind")
        }
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path))
        #expect(try Auditor(container: app.container).audit().isClean)

        let again = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path, "--dry-run", "--json"])
        #expect(again.status == 0 && again.stdout.contains("\"needsUpgrade\" : false"))
    }

    /// The launch record a completed run leaves promises that no journal is beside it, so the
    /// launch check does not look for one. A later plan's step killed after its commit leaves a
    /// store that looks moved and a journal that says the step is not finished: the check must
    /// still say pending, and the rerun must finish the step and leave a record again.
    @Test func aStepKilledAfterItsCommitIsPendingThoughItsStoreLooksMoved() throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 20)
        try app.writeDocument(".Notes_SUPPORT/_EXTERNAL_DATA/blob", Data(repeating: 7, count: 10_000))
        let first = app.root.appending(path: "v2.json"), second = app.root.appending(path: "v3.json")
        try Data(#"{"name": "v2", "version": "v2", "steps": [{"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}}]}"#.utf8).write(to: first)
        try Data(#"{"name": "v3", "version": "v3", "steps": [{"relocate": {"from": "applicationSupport/Notes.sqlite", "to": "applicationSupport/Accounts/1/Notes.sqlite", "strategy": "rename"}}]}"#.utf8).write(to: second)
        let chain = UpgradePlan(chain: [try UpgradePlan.load(from: first), try UpgradePlan.load(from: second)])
        let record = app.container.backstageDirectory.appending(path: "launch").path

        let v2 = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", first.path])
        #expect(v2.status == 0, "\(v2.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: record).hasPrefix("backstage-launch 2\nreached v2"))
        #expect(Upgrader.needsUpgrade(app.container, chain))

        let killed = try runSimulateChild(.upgrade(arguments: [app.root.path, "--plan", first.path, "--plan", second.path], crashAt: CrashPoint(.relocate, .committed)))
        #expect(killed.killedBySignal == SIGKILL)
        let moved = StoreFileSet(main: app.applicationSupport.appending(path: "Accounts/1/Notes.sqlite"))
        #expect(FileManager.default.fileExists(atPath: moved.main.path), "killed after the commit: the store is at its new place")
        #expect(FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: ".Notes_SUPPORT").path), "its support folder is not")
        #expect(Upgrader.needsUpgrade(app.container, chain), "the journal says the step is not finished")

        let rerun = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", first.path, "--plan", second.path])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try PythonSQLite.inspect(moved).rows == 20)
        #expect(FileManager.default.fileExists(atPath: moved.supportFolder.appending(path: "_EXTERNAL_DATA/blob").path))
        #expect(!Upgrader.needsUpgrade(app.container, chain))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: record).hasPrefix("backstage-launch 2\nreached v3"))
    }

    @Test func dryRunListsPendingStepsWithEstimatesAndChangesNothing() throws {
        let app = try TestContainer()
        try CoreDataStore.create(app.documentsStore().main, notes: 50)
        let plan = app.root.appending(path: "plan.json")
        try Data(Self.plan.utf8).write(to: plan)
        let before = snapshot(app.root)

        let result = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path, "--dry-run"])

        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("v1-to-v3: upgrade needed (needsUpgrade answered in ") == true)
        #expect(lines.contains { $0.hasPrefix("  step 1  relocate documents/Notes.sqlite → applicationSupport/Notes.sqlite") })
        #expect(lines.last?.hasSuffix("within the 20 s launch budget") == true)
        #expect(snapshot(app.root) == before)
    }

    /// The shipped plans passed together are one chain: on a container they brought to v4, the dry
    /// run says nothing to do, not "upgrade needed" for each plan that alone would find v4 newer.
    @Test func aDryRunOfEveryShippedPlanOnAnUpToDateContainerSaysNothingToDo() throws {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "c")
        #expect(try runProcess(backstageExecutable, ["fixture", root.path, "--layout", "v1", "--size", "200KB", "--state", "clean"]).status == 0)
        let plans = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "Fixtures/Notes/plans")
        let arguments = ["v1-to-v2", "v2-to-v3", "v3-to-v4"].flatMap { ["--plan", plans.appending(path: "\($0).json").path] }
        let pending = try runProcess(backstageExecutable, ["upgrade", root.path, "--dry-run"] + arguments)
        #expect(pending.status == 0 && pending.stdout.hasPrefix("v1-to-v2 → v2-to-v3 → v3-to-v4: upgrade needed"), "\(pending.stdout)")
        #expect(try runProcess(backstageExecutable, ["upgrade", root.path] + arguments).status == 0)

        let dry = try runProcess(backstageExecutable, ["upgrade", root.path, "--dry-run"] + arguments)
        #expect(dry.status == 0 && dry.stdout.hasPrefix("v1-to-v2 → v2-to-v3 → v3-to-v4: nothing to do"), "\(dry.stdout)")
        #expect(!dry.stdout.contains("upgrade needed"))
    }

    @Test func aMissingPlanIsAUsageErrorAndABadOneIsNamed() throws {
        let app = try TestContainer()
        #expect(try runProcess(backstageExecutable, ["upgrade", app.root.path]).status == 2)
        let plan = app.root.appending(path: "bad.json")
        try Data(#"{"name": "x", "steps": [{"teleport": {}}]}"#.utf8).write(to: plan)
        let result = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path])
        #expect(result.status == 3)
        #expect(result.stderr.hasPrefix("error: \(plan.path) is not a valid upgrade plan"))
    }

    @Test func aFailingMigrationIsAnOperationalFailureInOneSentence() throws {
        let app = try TestContainer()
        try CoreDataStore.create(app.documentsStore().main, notes: 5)
        let plan = app.root.appending(path: "plan.json")
        try Data(#"{"name": "broken", "steps": [{"migrateSchema": {"store": "documents/Notes.sqlite", "migrations": [{"id": "m1", "sql": "ALTER TABLE ZNOPE ADD COLUMN X INTEGER"}]}}]}"#.utf8).write(to: plan)
        let before = try PythonSQLite.contentHashes(app.documentsStore())

        let result = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path])

        #expect(result.status == 3, "not a usage error: \(result.stderr)")
        #expect(result.stderr.hasPrefix("error: ") && result.stderr.contains("ZNOPE") && !result.stderr.contains("Usage:"), "\(result.stderr)")
        #expect(try PythonSQLite.contentHashes(app.documentsStore()) == before, "the failed migration changed nothing")
    }
}
