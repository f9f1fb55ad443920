import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The Upgrader estimates a migration from what its statements do to the tables they name, sized
/// from the store's b-trees without reading them whole: an index on a small table costs little in a
/// big store, a rewrite of the big table a lot.
@Suite struct MigrationEstimateTests {
    /// A store with a big table of text rows, a table of blobs (overflow pages), a WITHOUT ROWID
    /// table, a small table and an index; checkpointed, so the main file holds every page.
    static func store(_ path: URL) throws {
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.executescript('''
              PRAGMA journal_mode=WAL;
              CREATE TABLE entry (id INTEGER PRIMARY KEY, day TEXT, body TEXT);
              CREATE TABLE photo (id INTEGER PRIMARY KEY, data BLOB);
              CREATE TABLE tag (entry INTEGER, name TEXT, PRIMARY KEY (entry, name)) WITHOUT ROWID;
              CREATE TABLE mood (id INTEGER PRIMARY KEY, name TEXT);
              CREATE INDEX entry_day ON entry(day);
            ''')
            db.executemany('INSERT INTO entry VALUES (?, ?, ?)',
                           ((i, '2024-%02d-%02d' % (i % 12 + 1, i % 28 + 1), 'e' * (100 + i % 300)) for i in range(30000)))
            db.executemany('INSERT INTO photo VALUES (?, ?)', ((i, bytes(20000 + i * 7)) for i in range(200)))
            db.executemany('INSERT INTO tag VALUES (?, ?)', ((i, 'tag%d' % (i % 9)) for i in range(20000)))
            db.executemany('INSERT INTO mood VALUES (?, ?)', ((i, 'm%d' % i) for i in range(20)))
            db.commit()
            db.execute('PRAGMA wal_checkpoint(TRUNCATE)')
            """
        let result = try PythonSQLite.run(script, [path.path])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// Each b-tree's bytes and entries against SQLite's own count (`dbstat`, `count(*)`), within 10 %.
    @Test func tableSizesMatchSQLitesOwnCount() throws {
        let app = try TestContainer()
        let path = app.supportStore("Journal.sqlite").main
        try Self.store(path)
        let measured = try BTreeSizes.read(path.path, fileSystem: FileSystem())
        let script = """
            import sqlite3, sys, json
            db = sqlite3.connect(sys.argv[1])
            sizes = dict(db.execute("SELECT lower(name), sum(pgsize) FROM dbstat GROUP BY name").fetchall())
            rows = {t: db.execute('SELECT count(*) FROM "%s"' % t).fetchone()[0] for t in ['entry', 'photo', 'tag', 'mood']}
            print(json.dumps({'sizes': sizes, 'rows': rows}))
            """
        let result = try PythonSQLite.run(script, [path.path])
        let truth = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as! [String: [String: Int64]]
        for name in ["entry", "photo", "tag", "mood", "entry_day"] {
            let expected = Double(truth["sizes"]![name]!), got = Double(measured.bytes[name] ?? 0)
            #expect(abs(got - expected) <= expected * 0.1, "\(name): \(got) bytes measured, dbstat says \(expected)")
        }
        for name in ["entry", "photo", "tag", "mood"] {
            let expected = Double(truth["rows"]![name]!), got = Double(measured.rows[name] ?? 0)
            #expect(abs(got - expected) <= expected * 0.1, "\(name): \(got) rows measured, count(*) says \(expected)")
        }
        #expect(measured.tableOfIndex["entry_day"] == "entry")
    }

    /// Sized for a migration that names tables: those and their indexes alone, the same figures;
    /// every b-tree as soon as one named table is not in the store.
    @Test func onlyTheNamedTablesAreSizedWhenAllExist() throws {
        let app = try TestContainer()
        let path = app.supportStore("Journal.sqlite").main
        try Self.store(path)
        let all = try BTreeSizes.read(path.path, fileSystem: FileSystem())
        let named = try BTreeSizes.read(path.path, fileSystem: FileSystem(), tables: ["entry", "mood"])
        #expect(Set(named.bytes.keys) == ["entry", "entry_day", "mood"])
        #expect(named.bytes.allSatisfy { all.bytes[$0.key] == $0.value })
        #expect(named.rows.allSatisfy { all.rows[$0.key] == $0.value })
        let missing = try BTreeSizes.read(path.path, fileSystem: FileSystem(), tables: ["entry", "diary"])
        #expect(missing.bytes == all.bytes && missing.rows == all.rows)
    }

    /// Whether this machine's temporary folder can drop a file's pages from the page cache, and
    /// say which are there (tmpfs keeps them all: nothing to measure there).
    static let pageCacheCanBeMeasured: Bool = {
        guard let folder = try? TemporaryDirectory(prefix: "cache") else { return false }
        let path = folder.url.appending(path: "probe").path
        let fileSystem = FileSystem()
        guard (try? Data(count: 1 << 16).write(to: URL(filePath: path))) != nil,
            (try? fileSystem.syncFile(path)) != nil, let file = try? fileSystem.openForReading(path)
        else { return false }
        file.forget(at: 0, count: 1 << 16)
        return file.isCached(at: 0, count: 4096) == false
    }()

    /// A migration's sorts (an index built on a large table) sort on helper threads, one a core up
    /// to 4: SQLite's sorter starts none unless the connection asks (`PRAGMA threads`).
    @Test func aMigrationsSortsMayUseTheCores() async throws {
        let app = try TestContainer()
        try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(
                .documents("Workout.sqlite"),
                [.init(id: "v2-sorter", sql: "CREATE TABLE sorter AS SELECT threads FROM pragma_threads")])
        }
        _ = try await Upgrader(container: app.container).upgrade(plan)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let threads = try PythonSQLite.inspect(
            app.documentsStore("Workout.sqlite"), table: "sorter", titleColumn: "CAST(threads AS TEXT)"
        ).titles
        #expect(threads == ["\(max(1, min(4, cores)))"], "\(cores) cores")
    }

    /// Sizing reads a page in a hundred or so. The pages it brought into the page cache leave it
    /// (a scan of the store that follows, the migration, would meet them and read the rest 4 KiB
    /// at a time), and the pages that were cached before stay.
    @Test(.enabled(if: pageCacheCanBeMeasured, "the temporary folder keeps every page cached (tmpfs)"))
    func sizingLeavesThePageCacheAsItFoundIt() throws {
        let app = try TestContainer()
        let path = app.supportStore("Journal.sqlite").main
        try Self.store(path)
        let fileSystem = FileSystem()
        try fileSystem.syncFile(path.path)
        let file = try fileSystem.openForReading(path.path)
        let size = try #require(try fileSystem.status(path.path)).size
        // Past the first MiB: what opening the store and reading its header bring in, and the
        // kernel's read-ahead around it, are the first pages.
        let pages = Array(stride(from: Int64(1 << 20), to: size, by: 4096))
        #expect(pages.count > 1000, "a store of \(size) bytes")
        func cached() -> Int { pages.count { file.isCached(at: $0, count: 4096) == true } }

        file.forget(at: 0, count: Int(size))
        #expect(cached() == 0)
        let cold = try BTreeSizes.read(path.path, fileSystem: fileSystem)
        #expect(cold.bytes["entry"] ?? 0 > 0)
        #expect(cached() == 0, "pages the sizing read stayed in the page cache")

        _ = try Data(contentsOf: path)
        #expect(cached() == pages.count)
        let warm = try BTreeSizes.read(path.path, fileSystem: fileSystem)
        #expect(warm.bytes == cold.bytes)
        #expect(cached() == pages.count, "pages cached before the sizing were dropped")
    }

    static func estimate(_ app: TestContainer, _ sql: String) -> Double {
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(.support("Journal.sqlite"), [.init(id: "v2", sql: sql)])
        }
        return Upgrader(container: app.container).estimate(plan).seconds
    }

    @Test func anEstimateFollowsWhatTheStatementsDoToTheTablesTheyName() throws {
        let app = try TestContainer()
        try Self.store(app.supportStore("Journal.sqlite").main)
        let plain = Self.estimate(app, "ALTER TABLE entry ADD COLUMN starred INTEGER")
        let smallIndex = Self.estimate(app, "CREATE INDEX mood_name ON mood(name)")
        let check = Self.estimate(
            app, "ALTER TABLE entry ADD COLUMN starred INTEGER NOT NULL DEFAULT 0 CHECK (starred IN (0, 1))")
        let bigIndex = Self.estimate(app, "CREATE INDEX entry_body ON entry(body)")
        let rewrite = Self.estimate(app, "UPDATE entry SET body = trim(body)")
        let both = Self.estimate(app, "CREATE INDEX entry_body ON entry(body); UPDATE entry SET body = trim(body)")
        #expect(plain == Upgrader(container: app.container).throughput.perStep, "a plain column costs the step only")
        #expect(
            smallIndex < plain + (bigIndex - plain) / 100,
            "an index on 20 rows: \(smallIndex) s, on 30,000: \(bigIndex) s")
        #expect(plain < check && check < bigIndex && bigIndex < rewrite, "\([plain, check, bigIndex, rewrite])")
        #expect(abs(both - (bigIndex + rewrite - plain)) < 1e-9, "statements add up")
        // Another migration in the same step adds its statements too.
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(
                .support("Journal.sqlite"),
                [
                    .init(id: "a", sql: "CREATE INDEX entry_body ON entry(body)"),
                    .init(id: "b", sql: "UPDATE entry SET body = trim(body)"),
                ])
        }
        #expect(abs(Upgrader(container: app.container).estimate(plan).seconds - both) < 1e-9)
    }

    @Test(arguments: [
        ("ALTER TABLE entry ADD COLUMN x TEXT", MigrationCost.Work.constant),
        ("alter table \"entry\" add x int check (x > 0)", .scan("entry")),
        ("ALTER TABLE main.entry DROP COLUMN body", .rewrite("entry")),
        ("ALTER TABLE entry RENAME TO diary", .constant),
        ("CREATE UNIQUE INDEX IF NOT EXISTS i ON [entry] (day)", .index("entry")),
        ("CREATE TABLE copy AS SELECT * FROM main.entry WHERE id > 3", .rewrite("entry")),
        ("CREATE TABLE fresh (id INTEGER PRIMARY KEY)", .constant),
        ("UPDATE OR IGNORE entry SET day = NULL", .rewrite("entry")),
        ("DELETE FROM entry WHERE id % 2 = 0", .rewrite("entry")),
        ("DELETE FROM entry", .overwrite("entry")),
        ("INSERT INTO archive SELECT * FROM entry", .rewrite("entry")),
        ("INSERT INTO mood VALUES (1, 'ok')", .constant),
        ("DROP TABLE IF EXISTS photo", .overwrite("photo")),
        ("DROP VIEW v", .constant),
        ("VACUUM", .wholeStore(rewrite: true)),
        ("-- a comment first\n/* and another */ CREATE INDEX i ON tag(name)", .index("tag")),
    ])
    func eachStatementIsKnownByWhatItDoes(_ statement: String, _ work: MigrationCost.Work) {
        #expect(MigrationCost.works(statement) == [work])
    }

    /// A trigger's body holds `;` that end nothing; a string literal too.
    @Test func statementsSplitWhereSQLiteSplitsThem() {
        let sql = """
            CREATE TRIGGER t AFTER INSERT ON entry BEGIN UPDATE mood SET name = 'a;b'; DELETE FROM tag; END;
            UPDATE entry SET body = ';'; CREATE INDEX i ON tag(name)
            """
        #expect(MigrationCost.works(sql) == [.constant, .rewrite("entry"), .index("tag")])
    }
}
