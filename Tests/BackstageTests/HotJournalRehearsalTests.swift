import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A store left with a hot rollback journal by a crash mid-transaction holds, in its main file,
/// pages of that transaction that SQLite rolls back when it opens the store. The dry run of a
/// migration must not take them for the store's schema: found after a power cut inside a Core Data
/// migration, whose rerun was refused ("table ZLOCATION already exists") on every launch.
@Suite struct HotJournalRehearsalTests {
    @Test func aMigrationIsNotRefusedForATableOnlyAnUncommittedTransactionCreated() async throws {
        let app = try TestContainer()
        let store = app.supportStore()
        try FileManager.default.createDirectory(at: store.directory, withIntermediateDirectories: true)
        // The state a crash inside COMMIT leaves: the main file written (a table `tag` in its schema),
        // the journal not yet deleted. Made by keeping the journal as it was just before COMMIT.
        let made = try PythonSQLite.run(
            """
            import sqlite3, shutil, sys
            path = sys.argv[1]
            c = sqlite3.connect(path, isolation_level=None)
            c.execute("pragma journal_mode=delete")
            c.execute("create table note(id integer primary key, title text, body blob)")
            c.execute("begin")
            c.executemany("insert into note(title, body) values (?, randomblob(1500))", [("note %d" % i,) for i in range(300)])
            c.execute("commit")
            # A tiny cache: the transaction spills, so its journal is synced, as a commit's is.
            c.execute("pragma cache_size=2")
            c.execute("begin")
            c.execute("create table tag(id integer primary key, label text)")
            c.execute("insert into tag(label) select title from note")
            shutil.copy(path + "-journal", path + ".kept")
            c.execute("commit")
            c.close()
            shutil.move(path + ".kept", path + "-journal")
            raw = sqlite3.connect("file:" + path + "?immutable=1", uri=True)
            print(raw.execute("select count(*) from sqlite_master where name = 'tag'").fetchone()[0])
            """, [store.main.path])
        #expect(made.status == 0, "\(made.stderr)")
        // Read without rolling the journal back, the main file has the table; SQLite rolls it back.
        #expect(made.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "\(made.stdout)")
        let journal = try #require(try? FileManager.default.attributesOfItem(atPath: store.sidecar(.journal).path)[.size] as? Int)
        #expect(journal > 0, "a hot journal must be there before the upgrade")

        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(
                ContainerLocation(.applicationSupport, "Notes.sqlite"),
                [.init(id: "v2-tags", sql: "CREATE TABLE tag (id INTEGER PRIMARY KEY, label TEXT NOT NULL)")])
        }
        try await Upgrader(container: app.container).upgrade(plan)

        let after = try PythonSQLite.run(
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("select count(*) from note").fetchone()[0], c.execute("select count(*) from tag").fetchone()[0],
                  c.execute("pragma integrity_check").fetchone()[0])
            """, [store.main.path])
        #expect(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "300 0 ok", "\(after.stdout) \(after.stderr)")
    }
}
