import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The migration step's statement journal (the pages a savepoint or statement changed, kept to
/// roll it back) is written through the bulk VFS, 124 KiB at a time: a rollback inside a migration
/// still restores every page, and a journal that cannot be written fails the migration with every
/// committed row kept.
@Suite struct MigrationStatementJournalTests {
    /// Changes every row of 2.4 MB of notes and deletes a third of them in a savepoint, rolls the
    /// savepoint back (SQLite reads the changed pages back from the statement journal), then adds
    /// a table: only the table stays.
    static let plan = """
        {"name": "v2", "steps": [{"migrateSchema": {"store": "documents/Notes.sqlite", "migrations": [
          {"id": "v2-undo", "sql": "SAVEPOINT undo; \
        UPDATE note SET body = randomblob(length(body)), title = 'changed'; DELETE FROM note WHERE id % 3 = 0; \
        ROLLBACK TO undo; RELEASE undo; CREATE TABLE mark(x); INSERT INTO mark VALUES (1)"}]}}]}
        """

    func makeStore(_ app: TestContainer) throws -> URL {
        try PythonSQLite.createStore(app.documentsStore().main, rows: 800, bodyBytes: 3_000)
        let plan = app.root.appending(path: "plan.json")
        try Data(Self.plan.utf8).write(to: plan)
        return plan
    }

    @Test func aSavepointRolledBackInAMigrationRestoresEveryPage() throws {
        let app = try TestContainer()
        let plan = try makeStore(app)
        let before = try PythonSQLite.contentHashes(app.documentsStore()).tables

        let run = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path])
        #expect(run.status == 0, "\(run.stderr)")
        let after = try PythonSQLite.contentHashes(app.documentsStore()).tables
        #expect(after["note"] == before["note"], "every note as it was before the savepoint, byte for byte")
        #expect(Set(after.keys) == Set(before.keys).union(["mark"]), "the migration's table after the rollback stays")
        let notes = try PythonSQLite.inspect(app.documentsStore())
        #expect(notes.rows == 800 && notes.integrity == "ok")
    }

    /// The statement journal on a 1 MB disk: its write-out fails, the migration fails with it, and
    /// the store keeps every row it had, the migration's table absent.
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func aStatementJournalThatCannotBeWrittenFailsTheMigrationAndKeepsEveryRow() throws {
        let app = try TestContainer()
        let plan = try makeStore(app)
        let before = try PythonSQLite.contentHashes(app.documentsStore()).tables
        let full = try TestMount(tmpfs: "1m")

        var environment = ProcessInfo.processInfo.environment
        environment["SQLITE_TMPDIR"] = full.url.path
        let run = try runProcess(
            backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path], environment: environment)
        #expect(run.status == 3, "an operational failure: \(run.stderr)")
        #expect(try PythonSQLite.contentHashes(app.documentsStore()).tables == before, "every row kept, nothing added")
        #expect(try PythonSQLite.inspect(app.documentsStore()).integrity == "ok")
    }
}
