import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// Fixtures carry the data shapes real stores hold, on purpose and within every constraint: edge
/// values, the share of dangling references the captured store had, and tables left empty only
/// where the catalog says so.
@Suite struct DataShapeTests {
    @Test func everyKindOfColumnGetsEdgeValuesWhileEveryConstraintHolds() throws {
        let scratch = try TemporaryDirectory()
        let schema = try ConstraintGenerationTests.captured("""
            CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, code TEXT CHECK (length(code) <= 12),
              tag TEXT NOT NULL CHECK (length(tag) >= 1), n INTEGER, pos INTEGER NOT NULL CHECK (pos BETWEEN 1 AND 100),
              x REAL, data BLOB, guid TEXT UNIQUE);
            CREATE TABLE tally (id INTEGER PRIMARY KEY, label TEXT, count INTEGER, ratio REAL, payload BLOB, anything ANY) STRICT;
            """, in: scratch)
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        _ = try SchemaGenerator(schema: schema, seed: 5).generate(into: store, bytes: 300_000)

        let verdict = try SchemaGeneratorTests.verdict(store)
        #expect(verdict["integrity"] == "ok")
        #expect(verdict["foreignKeys"] == "0")
        let copy = try TemporaryDirectory()
        try FileManager.default.copyItem(at: store.main, to: copy.url.appending(path: "s.sqlite"))
        let result = try PythonSQLite.run("""
            import sqlite3, sys, json, math
            c = sqlite3.connect(sys.argv[1])
            col = lambda sql: [r[0] for r in c.execute(sql)]
            texts = col("select name from item union all select code from item union all select tag from item "
                        "union all select label from tally")
            texts = [t for t in texts if isinstance(t, str)]
            ints = col("select n from item union all select count from tally")
            reals = [r for r in col("select x from item union all select ratio from tally") if isinstance(r, float)]
            blobs = [b for b in col("select data from item union all select payload from tally") if isinstance(b, bytes)]
            out = {
              "nul": any("\\x00" in t for t in texts),
              "emoji": any(ord(ch) >= 0x1F300 for t in texts for ch in t),
              "rtl": any(0x0590 <= ord(ch) <= 0x06FF for t in texts for ch in t),
              "nonASCII": any(ord(ch) > 0x7F and ord(ch) < 0x0590 for t in texts for ch in t),
              "emptyText": "" in texts,
              "null": len(col("select id from item where name is null")) > 0,
              "longestCode": max(len(t) for t in col("select code from item where code is not null")) == 12,
              "int64max": 2**63 - 1 in ints, "int64min": -2**63 in ints,
              "edgeFloat": any((r == 0 and math.copysign(1, r) < 0) or (r != 0 and abs(r) < 2.2250738585072014e-308)
                               or abs(r) == 1.7976931348623157e308 for r in reals),
              "emptyBlob": b"" in blobs, "largeBlob": any(len(b) >= 8192 for b in blobs),
              "duplicate": len(col("select n from item where n is not null group by n having count(*) > 1")) > 0,
              "broken": c.execute("select (select count(*) from item where length(code) > 12 or tag is null or length(tag) < 1 "
                                  "or pos is null or pos not between 1 and 100) + (select count(*) - count(distinct guid) "
                                  "from item where guid is not null)").fetchone()[0],
            }
            print(json.dumps({k: int(v) for k, v in out.items()}))
            """, [copy.url.appending(path: "s.sqlite").path])
        #expect(result.status == 0, "\(result.stderr)")
        let found = try JSONDecoder().decode([String: Int].self, from: Data(result.stdout.utf8))
        for shape in ["nul", "emoji", "rtl", "nonASCII", "emptyText", "null", "longestCode", "int64max", "int64min", "edgeFloat",
                      "emptyBlob", "largeBlob", "duplicate"] {
            #expect(found[shape] == 1, "no \(shape) in the fixture")
        }
        #expect(found["broken"] == 0, "every CHECK, NOT NULL and UNIQUE holds")
    }

    @Test func theSameSeedGivesTheSameEdgeValues() throws {
        let scratch = try TemporaryDirectory()
        let schema = try ConstraintGenerationTests.captured("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b REAL, c BLOB);", in: scratch)
        var files: [Data] = []
        for name in ["one.sqlite", "two.sqlite"] {
            let store = StoreFileSet(main: scratch.url.appending(path: name))
            _ = try SchemaGenerator(schema: schema, seed: 9).generate(into: store, bytes: 100_000)
            files.append(try Data(contentsOf: store.main))
        }
        #expect(files[0] == files[1])
    }

    @Test func aStoreHoldingTheSmallestIntegerIsCaptured() throws {
        let scratch = try TemporaryDirectory()
        let schema = try ConstraintGenerationTests.captured("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER);",
                                                            rows: "INSERT INTO t VALUES (1, -9223372036854775808), (2, 5);", in: scratch)
        #expect((schema.tables["t"]?.columns.first { $0.name == "n" }?.integerBits ?? 0) >= 63, "measured, not refused")
    }

    static let family = """
        CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE child (id INTEGER PRIMARY KEY, parentId INTEGER REFERENCES parent, note TEXT);
        """

    /// 10 parents and 30 children, `dangling` of them pointing at no parent.
    static func familyRows(dangling: Int) -> String {
        var sql = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30) "
        sql += "INSERT INTO parent SELECT i, 'p' || i FROM n WHERE i <= 10; "
        sql += "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30) "
        sql += "INSERT INTO child SELECT i, CASE WHEN i <= \(dangling) THEN 900 + i ELSE 1 + i % 10 END, 'n' FROM n;"
        return sql
    }

    @Test func aStoreWithViolationsGivesFixturesWithAboutThatShareOfDanglingReferences() throws {
        let scratch = try TemporaryDirectory()
        let schema = try ConstraintGenerationTests.captured(Self.family, rows: Self.familyRows(dangling: 3), in: scratch)
        #expect(schema.foreignKeyViolations == [.init(table: "child", parent: "parent", columns: ["parentId"], rows: 3)])

        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        let report = try SchemaGenerator(schema: schema, seed: 2).generate(into: store, bytes: 200_000)
        let children = try #require(report.rows["child"])
        let dangling = try DatabaseQueue(path: store.main.path).read { db in
            try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count
        }
        #expect(children > 30)
        let share = Double(dangling) / Double(children)
        #expect(share > 0.05 && share < 0.15, "\(dangling) of \(children) children dangle (a tenth at capture)")
        #expect(try SchemaGeneratorTests.verdict(store)["foreignKeys"] == String(dangling))
    }

    @Test func aStoreWithoutViolationsGivesFixturesWithout() throws {
        let scratch = try TemporaryDirectory()
        let schema = try ConstraintGenerationTests.captured(Self.family, rows: Self.familyRows(dangling: 0), in: scratch)
        #expect(schema.foreignKeyViolations == nil)
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        _ = try SchemaGenerator(schema: schema, seed: 2).generate(into: store, bytes: 200_000)
        #expect(try SchemaGeneratorTests.verdict(store)["foreignKeys"] == "0")
    }

    @Test func violationsAndEmptyTablesAreRecordedInTheCatalogAsItsJSONSchemaSays() throws {
        let scratch = try TemporaryDirectory()
        let store = scratch.url.appending(path: "Family.sqlite")
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false  // as the app had them: off
        let queue = try DatabaseQueue(path: store.path, configuration: configuration)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: Self.family + "CREATE TABLE log (id INTEGER PRIMARY KEY, line TEXT);" + Self.familyRows(dangling: 3))
        }
        try queue.close()
        let folder = scratch.url.appending(path: "catalog")
        let made = try runProcess(backstageExecutable, ["catalog", "init", folder.path, "--from", store.path, "--at", "documents/Family.sqlite",
                                                        "--empty", "log"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try CatalogFormatTests.validate(folder) == "valid\n")
        let catalog = try CatalogFolder(at: folder)
        let schema = try catalog.schema(of: try #require(catalog.manifest.versions.first?.stores.first))
        #expect(schema.foreignKeyViolations == [.init(table: "child", parent: "parent", columns: ["parentId"], rows: 3)])
        #expect(schema.emptyTables == ["log"])
    }

    @Test func aTableTheCatalogMarksEmptyStaysEmptyAndTheOthersGetRows() throws {
        let scratch = try TemporaryDirectory()
        var schema = try ConstraintGenerationTests.captured("""
            CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT);
            CREATE TABLE log (id INTEGER PRIMARY KEY, line TEXT);
            CREATE TABLE tag (id INTEGER PRIMARY KEY, name TEXT);
            """, rows: "INSERT INTO note VALUES (1, 'a'), (2, 'b'); INSERT INTO log VALUES (1, 'x');", in: scratch)
        schema.emptyTables = ["LOG"]
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        let report = try SchemaGenerator(schema: schema, seed: 4).generate(into: store, bytes: 100_000)
        let counts = try DatabaseQueue(path: store.main.path).read { db in
            try ["note", "log", "tag"].map { try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \($0)") ?? 0 }
        }
        #expect(counts[1] == 0 && report.rows["log"] == 0, "the table marked empty")
        #expect(counts[0] > 0 && counts[2] > 0, "the others, the one empty at capture too: \(counts)")
    }
}
