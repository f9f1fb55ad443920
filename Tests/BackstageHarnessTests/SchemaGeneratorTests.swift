import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import GRDB
import Testing

@Suite struct SchemaGeneratorTests {
    /// The schema of a real store from ../shared, captured from a copy.
    static func captured(_ store: SharedStores.Store) throws -> StoreSchema {
        let scratch = try TemporaryDirectory()
        return try StoreCapture.capture(try SharedStores.copy(store, into: scratch.url))
    }

    /// integrity_check, foreign_key_check, the FTS/RTREE checks and the schema, read by Python from a copy.
    static func verdict(_ store: StoreFileSet) throws -> [String: String] {
        let copy = try TemporaryDirectory()
        try FileManager.default.copyItem(at: store.main, to: copy.url.appending(path: "s.sqlite"))
        if FileManager.default.fileExists(atPath: store.sidecar(.wal).path) {
            try FileManager.default.copyItem(at: store.sidecar(.wal), to: copy.url.appending(path: "s.sqlite-wal"))
        }
        let result = try PythonSQLite.run("""
            import sqlite3, sys, json, hashlib
            c = sqlite3.connect(sys.argv[1])
            out = {"integrity": c.execute("pragma integrity_check").fetchone()[0],
                   "foreignKeys": str(len(c.execute("pragma foreign_key_check").fetchall())),
                   "schema": hashlib.sha256("\\n".join(sorted(r[0] for r in c.execute("select sql from sqlite_master where sql is not null"))).encode()).hexdigest()}
            for (name, sql) in c.execute("select name, sql from sqlite_master where sql like 'CREATE VIRTUAL TABLE%'").fetchall():
                if "RTREE" in sql.upper():
                    out["rtree:" + name] = str(c.execute("select rtreecheck(?)", (name,)).fetchone()[0])
            rows = 0
            for (t,) in c.execute("select name from sqlite_master where type = 'table'").fetchall():
                rows += c.execute('select count(*) from "%s"' % t).fetchone()[0]
            out["rows"] = str(rows)
            print(json.dumps(out))
            """, [copy.url.appending(path: "s.sqlite").path])
        guard result.status == 0 else { throw Failure(result.stderr) }
        return try JSONDecoder().decode([String: String].self, from: Data(result.stdout.utf8))
    }

    @Test(arguments: SharedStores.Store.allCases)
    func aGeneratedStoreOfARealSchemaIsSoundAndHasThatSchema(store: SharedStores.Store) throws {
        let schema = try Self.captured(store)
        let scratch = try TemporaryDirectory()
        let original = try SharedStores.copy(store, into: scratch.url)
        let generated = StoreFileSet(main: scratch.url.appending(path: "generated.sqlite"))

        let report = try SchemaGenerator(schema: schema, seed: 42).generate(into: generated, bytes: 3_000_000)

        let verdict = try Self.verdict(generated)
        #expect(verdict["integrity"] == "ok")
        #expect(verdict["foreignKeys"] == "0")
        for (key, value) in verdict where key.hasPrefix("rtree:") { #expect(value == "ok", "\(key)") }
        #expect(verdict["schema"] == (try Self.verdict(original))["schema"], "every table, index, trigger and view as the app created them")
        #expect(report.rows.values.reduce(0, +) > schema.tables.values.reduce(0) { $0 + $1.rows }, "scaled up from the capture")
        let size = try FileManager.default.attributesOfItem(atPath: generated.main.path)[.size] as? Int64 ?? 0
        #expect(size + report.externalBytes > 1_500_000 && size + report.externalBytes < 4_500_000, "within ±50 % of 3 MB: \(size)")
    }

    /// The size asked is the size made, whatever the schema: Apple Photos' 82 tables and 453
    /// indexes once came out at a fifth of it, from captured page sizes taken as row sizes.
    @Test(arguments: SharedStores.Store.allCases)
    func aGeneratedStoreWeighsAboutTheSizeAsked(store: SharedStores.Store) throws {
        let schema = try Self.captured(store)
        let scratch = try TemporaryDirectory()
        let generated = StoreFileSet(main: scratch.url.appending(path: "generated.sqlite"))
        let asked: Int64 = 16_000_000

        let report = try SchemaGenerator(schema: schema, seed: 3).generate(into: generated, bytes: asked)

        let size = (try FileManager.default.attributesOfItem(atPath: generated.main.path)[.size] as? Int64 ?? 0) + report.externalBytes
        #expect(abs(Double(size - asked)) < Double(asked) * 0.15, "within 15 % of 16 MB: \(size)")
    }

    /// A blob that merely starts with 0x02 is not Core Data's reference to an external file (0x02,
    /// a UUID, a NUL): counting it as one made generated stores write external files the app never had.
    @Test func onlyCoreDataReferencesCountAsExternalData() throws {
        let scratch = try TemporaryDirectory()
        let store = StoreFileSet(main: scratch.url.appending(path: "App.sqlite"))
        let queue = try DatabaseQueue(path: store.main.path)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
                INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 4);
                CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGES BLOB, ZIMAGE BLOB);
                """)
            let reference = Data([0x02] + Array("0B8E2F4A-6C1D-4E7B-9A3F-5D2C8B1E7F60".utf8) + [0x00])
            for n in 1...4 {
                try db.execute(sql: "INSERT INTO ZITEM VALUES (?, 1, 1, ?, ?)", arguments: [n, Data([0x02, UInt8(n), 0x7F]), n % 2 == 0 ? reference : Data([0x01, 0x05])])
            }
        }
        try queue.close()

        let schema = try StoreCapture.capture(store)

        let columns = schema.tables["ZITEM"]?.columns ?? []
        #expect(columns.first { $0.name == "ZCHANGES" }?.externalFraction == 0)
        #expect(columns.first { $0.name == "ZIMAGE" }?.externalFraction == 0.5)
    }

    /// The bench's baseline writes Core Data external data as the generator does: with the shell's
    /// `writefile()`, one file per reference, each reference naming a file that is there.
    @Test func theShellBaselineWritesTheExternalDataItsRowsReference() throws {
        let scratch = try TemporaryDirectory()
        let store = StoreFileSet(main: scratch.url.appending(path: "App.sqlite"))
        let queue = try DatabaseQueue(path: store.main.path)
        try FileManager.default.createDirectory(at: store.supportFolder.appending(path: "_EXTERNAL_DATA"), withIntermediateDirectories: true)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZIMAGE BLOB)")
            for n in 1...20 {
                let name = UUID().uuidString
                try Data(count: 3000).write(to: store.supportFolder.appending(path: "_EXTERNAL_DATA/\(name)"))
                try db.execute(sql: "INSERT INTO ZITEM VALUES (?, 1, 1, ?)", arguments: [n, n % 2 == 0 ? Data([0x02] + Array(name.utf8) + [0x00]) : Data(count: 50)])
            }
        }
        try queue.close()
        let script = try SchemaGenerator(schema: try StoreCapture.capture(store), seed: 1).shellScript(rows: ["ZITEM": 400], externalDataFolder: "ext")
        let run = scratch.url.appending(path: "run")
        try FileManager.default.createDirectory(at: run.appending(path: "ext"), withIntermediateDirectories: true)
        try Data(script.utf8).write(to: run.appending(path: "script.sql"))

        let result = try runProcess("/bin/sh", ["-c", "cd '\(run.path)' && sqlite3 made.sqlite '.read script.sql'"])

        #expect(result.status == 0, "\(result.stderr)")
        let references = try DatabaseQueue(path: run.appending(path: "made.sqlite").path).read { db in
            try Data.fetchAll(db, sql: "SELECT ZIMAGE FROM ZITEM WHERE length(ZIMAGE) = 38 AND substr(ZIMAGE, 1, 1) = x'02'")
        }.map { String(decoding: $0.dropFirst().dropLast(), as: UTF8.self) }
        let files = try FileManager.default.contentsOfDirectory(atPath: run.appending(path: "ext").path)
        #expect(references.count > 100 && references.count < 300, "about half the rows: \(references.count)")
        #expect(Set(references).count == references.count, "a file of its own for each reference")
        #expect(Set(files) == Set(references) && references.allSatisfy { UUID(uuidString: $0) != nil })
        let sizes = try files.map { try FileManager.default.attributesOfItem(atPath: run.appending(path: "ext/\($0)").path)[.size] as? Int ?? 0 }
        #expect(sizes.allSatisfy { $0 > 1000 } && Set(sizes).count > 10, "files of varied, real sizes")
    }

    @Test func theSameSeedGivesTheSameRowsAndAnotherSeedOthers() throws {
        let schema = try Self.captured(.notes)
        let scratch = try TemporaryDirectory()
        let stores = (1...3).map { StoreFileSet(main: scratch.url.appending(path: "g\($0).sqlite")) }
        _ = try SchemaGenerator(schema: schema, seed: 5).generate(into: stores[0], bytes: 500_000)
        _ = try SchemaGenerator(schema: schema, seed: 5).generate(into: stores[1], bytes: 500_000)
        _ = try SchemaGenerator(schema: schema, seed: 6).generate(into: stores[2], bytes: 500_000)
        let digests = try stores.map { try StoreDigest.tables(of: $0) }
        #expect(digests[0] == digests[1])
        #expect(digests[0] != digests[2])
    }
}

@Suite struct CookbookGeneratorTests {
    @Test func aStoreWithFTS5WithoutRowIDForeignKeysChecksATriggerAndAViewIsGeneratedSound() throws {
        let scratch = try TemporaryDirectory()
        let original = StoreFileSet(main: scratch.url.appending(path: "Cookbook.sqlite"))
        try CookbookStore.make(at: original.main)
        let schema = try StoreCapture.capture(original)
        #expect(schema.objects.first { $0.name == "ingredient" }?.withoutRowID == true)
        #expect(schema.objects.first { $0.kind == .virtualTable }?.shadowTables?.count == 5, "FTS5's _config, _content, _data, _docsize, _idx")
        let generated = StoreFileSet(main: scratch.url.appending(path: "generated.sqlite"))

        let report = try SchemaGenerator(schema: schema, seed: 9).generate(into: generated, bytes: 2_000_000)

        let verdict = try SchemaGeneratorTests.verdict(generated)
        #expect(verdict["integrity"] == "ok")
        #expect(verdict["foreignKeys"] == "0", "every recipe's author and every ingredient's recipe exist")
        #expect(verdict["schema"] == (try SchemaGeneratorTests.verdict(original))["schema"])
        let checks = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("insert into recipe_search(recipe_search) values ('integrity-check')")
            print(c.execute("select count(*) from recipe where servings not between 1 and 24 or favorite not in (0, 1)").fetchone()[0],
                  c.execute("select count(*) from recipe_search").fetchone()[0] > 0,
                  c.execute("select count(*) from history").fetchone()[0] >= c.execute("select count(*) from recipe").fetchone()[0],
                  c.execute("select count(*) from favorites").fetchone()[0] > 0)
            """, [generated.main.path])
        #expect(checks.stdout == "0 True True True\n", "CHECKs held, FTS5 index sound, the trigger fired for every recipe, the view reads: \(checks.stdout) \(checks.stderr)")
        #expect((report.rows["recipe"] ?? 0) > 300, "scaled up from the 300 recipes captured")
    }

    /// Columns declared or named as dates get dates, as the app wrote them (text `YYYY-MM-DD
    /// HH:MM:SS` or `YYYY-MM-DD`, integers Unix times), not words an app's date parser rejects; other
    /// text stays text. (The edge rows keep their edge values.)
    @Test func dateColumnsHoldDatesAnAppCanParse() throws {
        let scratch = try TemporaryDirectory()
        let original = StoreFileSet(main: scratch.url.appending(path: "Planner.sqlite"))
        let made = try PythonSQLite.run(
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("CREATE TABLE task (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created_at TEXT NOT NULL, "
                      "due DATE, stamp DATETIME, updated_at INTEGER, is_done INTEGER NOT NULL DEFAULT 0)")
            for i in range(200):
                c.execute("INSERT INTO task VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (i + 1, "water the plants %d" % i, "2024-03-%02d 08:15:00" % (i % 28 + 1),
                           None if i % 5 == 0 else "2024-04-%02d" % (i % 28 + 1), "2024-05-01 10:00:00",
                           1700000000 + i * 3600, i % 2))
            c.commit()
            """, [original.main.path])
        #expect(made.status == 0, "\(made.stderr)")
        let schema = try StoreCapture.capture(original)
        let generated = StoreFileSet(main: scratch.url.appending(path: "generated.sqlite"))
        _ = try SchemaGenerator(schema: schema, seed: 3).generate(into: generated, bytes: 300_000)
        let checked = try PythonSQLite.run(
            """
            import sqlite3, sys, re, datetime
            c = sqlite3.connect(sys.argv[1])
            # Rows 1-10 and every 29th carry the edge values a migration must carry (EdgeValues), on purpose.
            rows = c.execute("SELECT title, created_at, due, stamp, updated_at, is_done FROM task "
                             "WHERE id > 10 AND id % 29 <> 0").fetchall()
            bad = 0
            for title, created, due, stamp, updated, done in rows:
                for value, form in ((created, "%Y-%m-%d %H:%M:%S"), (due, "%Y-%m-%d"), (stamp, "%Y-%m-%d %H:%M:%S")):
                    if value is None: continue
                    try: datetime.datetime.strptime(value, form)
                    except Exception: bad += 1
                if updated is not None and not (946684800 <= updated < 2000000000): bad += 1
                if done not in (0, 1): bad += 1
            words = sum(1 for r in rows if isinstance(r[0], str) and not re.match(r"^\\d{4}-", r[0]))
            print(len(rows) > 150, bad, words == len(rows))
            """, [generated.main.path])
        #expect(checked.stdout == "True 0 True\n", "dates parse, flags stay flags, titles stay text: \(checked.stdout) \(checked.stderr)")
    }
}
