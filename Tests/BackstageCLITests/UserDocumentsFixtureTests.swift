import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A fixture of another app's catalog carries that app's documents, never the Notes sample's; a
/// failed one leaves nothing; reports say which table and where counts come from.
@Suite struct UserDocumentsFixtureTests {
    /// A catalog of a small app captured from `sql` (with `rows`).
    static func catalog(_ sql: String, rows: String, in scratch: TemporaryDirectory) throws -> URL {
        let store = scratch.url.appending(path: "Pulled/Logbook.sqlite")
        try FileManager.default.createDirectory(at: store.deletingLastPathComponent(), withIntermediateDirectories: true)
        let made = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2] + sys.argv[3]); c.commit()
            """, [store.path, sql, rows])
        guard made.status == 0 else { throw Failure(made.stderr) }
        let catalog = scratch.url.appending(path: "Logbook")
        let result = try runProcess(backstageExecutable, ["catalog", "init", catalog.path, "--from", store.path, "--at", "documents/Logbook.sqlite"])
        guard result.status == 0 else { throw Failure(result.stderr) }
        return catalog
    }

    static let schema = "CREATE TABLE entry (id INTEGER PRIMARY KEY, body TEXT); CREATE TABLE tag (id INTEGER PRIMARY KEY, name TEXT);"

    @Test func anotherAppsFixtureHoldsItsDocumentsNotTheNotesSamples() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.catalog(Self.schema, rows: "INSERT INTO entry (body) VALUES ('a'), ('b'), ('c');", in: scratch)
        let plain = scratch.url.appending(path: "plain")
        let made = try runProcess(backstageExecutable, ["fixture", plain.path, "--catalog", catalog.path, "--size", "100KB"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: plain.appending(path: "Documents").path) == ["Logbook.sqlite"], "no Notes documents")
        #expect(made.stdout.contains("rows in entry (the app's main table)"), "\(made.stdout)")

        let documents = scratch.url.appending(path: "MyDocuments")
        try FileManager.default.createDirectory(at: documents.appending(path: "Logs 2026"), withIntermediateDirectories: true)
        try Data("dive 1\n".utf8).write(to: documents.appending(path: "Logs 2026/Dive — 1.txt"))
        let given = scratch.url.appending(path: "given")
        #expect(try runProcess(backstageExecutable, ["fixture", given.path, "--catalog", catalog.path, "--size", "100KB", "--documents", documents.path]).status == 0)
        #expect(try Data(contentsOf: given.appending(path: "Documents/Logs 2026/Dive — 1.txt")) == Data("dive 1\n".utf8))
        #expect(!FileManager.default.fileExists(atPath: given.appending(path: "Documents/.notes-settings.json").path))

        let shown = try runProcess(backstageExecutable, ["catalog", "show", catalog.path])
        #expect(shown.stdout.contains("3 rows in the captured store"), "\(shown.stdout)")
    }

    @Test func rowsThatShipWithTheAppAreKeptVerbatimAndTheTriggersRelyingOnThemHold() throws {
        let scratch = try TemporaryDirectory()
        let store = scratch.url.appending(path: "Tasks.sqlite")
        let made = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.executescript('''CREATE TABLE status (id INTEGER PRIMARY KEY, label TEXT NOT NULL);
                CREATE TABLE task (id INTEGER PRIMARY KEY, statusId INTEGER NOT NULL DEFAULT 0, title TEXT);
                CREATE TRIGGER task_status BEFORE INSERT ON task BEGIN
                  SELECT RAISE(ABORT, 'unknown status') WHERE NOT EXISTS (SELECT 1 FROM status WHERE id = NEW.statusId); END;
                INSERT INTO status VALUES (0, 'none'), (1, 'open'), (2, 'done');
                INSERT INTO task (statusId, title) VALUES (0, 'a'), (1, 'b'), (2, 'c');''')
            c.commit()
            """, [store.path])
        #expect(made.status == 0, "\(made.stderr)")
        let catalog = scratch.url.appending(path: "Tasks")
        let captured = try runProcess(backstageExecutable, ["catalog", "init", catalog.path, "--from", store.path, "--at", "documents/Tasks.sqlite", "--app-rows", "status"])
        #expect(captured.status == 0, "\(captured.stderr)")
        let out = scratch.url.appending(path: "fx")
        let fixture = try runProcess(backstageExecutable, ["fixture", out.path, "--catalog", catalog.path, "--size", "200KB"])
        #expect(fixture.status == 0, "\(fixture.stderr)")
        let read = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("select * from status order by id").fetchall(), c.execute("select count(*) from task").fetchone()[0] > 100)
            """, [out.appending(path: "Documents/Tasks.sqlite").path])
        #expect(read.stdout == "[(0, 'none'), (1, 'open'), (2, 'done')] True\n", "\(read.stdout)\(read.stderr)")
        let missing = try runProcess(backstageExecutable, ["catalog", "init", scratch.url.appending(path: "Other").path, "--from", store.path,
                                                           "--at", "documents/Tasks.sqlite", "--app-rows", "statuses"])
        #expect(missing.status != 0 && missing.stderr.contains("statuses"), "\(missing.stderr)")
    }

    @Test func aTableDeclaredEmptyAtCaptureStaysEmptyInFixtures() throws {
        let scratch = try TemporaryDirectory()
        let store = scratch.url.appending(path: "Tasks.sqlite")
        let made = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.executescript('''CREATE TABLE task (id INTEGER PRIMARY KEY, title TEXT); CREATE TABLE log (id INTEGER PRIMARY KEY, line TEXT);
                CREATE TABLE tag (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO task (title) VALUES ('a'), ('b'); INSERT INTO log VALUES (1, 'x');''')
            c.commit()
            """, [store.path])
        #expect(made.status == 0, "\(made.stderr)")
        let catalog = scratch.url.appending(path: "Tasks")
        let captured = try runProcess(backstageExecutable, ["catalog", "init", catalog.path, "--from", store.path, "--at", "documents/Tasks.sqlite",
                                                            "--empty", "LOG"])
        #expect(captured.status == 0, "\(captured.stderr)")
        let out = scratch.url.appending(path: "fx")
        let fixture = try runProcess(backstageExecutable, ["fixture", out.path, "--catalog", catalog.path, "--size", "100KB"])
        #expect(fixture.status == 0, "\(fixture.stderr)")
        let read = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print([c.execute("select count(*) > 0 from " + t).fetchone()[0] for t in ("task", "log", "tag")])
            """, [out.appending(path: "Documents/Tasks.sqlite").path])
        #expect(read.stdout == "[1, 0, 1]\n", "log left empty, tag (empty at capture) given rows: \(read.stdout)\(read.stderr)")
        let missing = try runProcess(backstageExecutable, ["catalog", "init", scratch.url.appending(path: "Other").path, "--from", store.path,
                                                           "--at", "documents/Tasks.sqlite", "--empty", "logs"])
        #expect(missing.status != 0 && missing.stderr.contains("logs"), "\(missing.stderr)")
    }

    @Test func aFailedFixtureLeavesNothingBehind() throws {
        let scratch = try TemporaryDirectory()
        let catalog = try Self.catalog("CREATE TABLE impossible (id INTEGER PRIMARY KEY, x INTEGER NOT NULL CHECK (x > 5 AND x < 3));", rows: "", in: scratch)
        let out = scratch.url.appending(path: "out")
        let failed = try runProcess(backstageExecutable, ["fixture", out.path, "--catalog", catalog.path, "--size", "100KB"])
        #expect(failed.status != 0)
        #expect(failed.stderr.contains("impossible") && failed.stderr.contains("x > 5 AND x < 3"), "\(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path), "no half-built folder to block the rerun")
    }
}
