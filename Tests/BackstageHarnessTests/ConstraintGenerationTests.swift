import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// The generator meets constraints by construction, at the smallest sizes too, and says which
/// table, column and constraint it cannot meet.
@Suite struct ConstraintGenerationTests {
    /// The schema of a store made from `sql` with `rows` (a capture of a small hand-made store).
    static func captured(_ sql: String, rows: String = "", in scratch: TemporaryDirectory) throws -> StoreSchema {
        let store = StoreFileSet(main: scratch.url.appending(path: "source.sqlite"))
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: store.main.path, configuration: configuration)
        try queue.write { db in
            try db.execute(sql: sql)
            if !rows.isEmpty { try db.execute(sql: rows) }
        }
        try queue.close()
        return try StoreCapture.capture(store)
    }

    @Test(arguments: [20_000, 60_000, 400_000])
    func wordListsRangesAndUniqueNamesHoldAtEverySize(_ bytes: Int) throws {
        let scratch = try TemporaryDirectory()
        let schema = try Self.captured("""
            CREATE TABLE athlete (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, code TEXT NOT NULL UNIQUE CHECK (length(code) = 3));
            CREATE TABLE workout (id INTEGER PRIMARY KEY, athleteId INTEGER NOT NULL REFERENCES athlete,
              kind TEXT NOT NULL CHECK (kind IN ('run','ride','swim','lift')), pace REAL CHECK (pace > 0 AND pace <= 1),
              zip TEXT CHECK (zip GLOB '[0-9][0-9][0-9][0-9]'), mail TEXT CHECK (mail LIKE '%@%'),
              n INTEGER CHECK (typeof(n) = 'integer'), startAt INTEGER, endAt INTEGER, CHECK (endAt >= startAt));
            CREATE TABLE totals (athleteId INTEGER PRIMARY KEY REFERENCES athlete, workouts INTEGER NOT NULL DEFAULT 0);
            """, rows: "INSERT INTO athlete VALUES (1, 'Ann', 'ann'); INSERT INTO workout (athleteId, kind, n) VALUES (1, 'run', 4);", in: scratch)
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        let report = try SchemaGenerator(schema: schema, seed: 3).generate(into: store, bytes: Int64(bytes))
        #expect(report.rows.values.allSatisfy { $0 > 0 }, "every table filled, the one empty at capture too: \(report.rows)")
        let verdict = try SchemaGeneratorTests.verdict(store)
        #expect(verdict["integrity"] == "ok")
        #expect(verdict["foreignKeys"] == "0", "every totals row is an athlete's")
        let broken = try DatabaseQueue(path: store.main.path).read { db in
            try Int.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM workout WHERE kind NOT IN ('run','ride','swim','lift') OR pace <= 0 OR pace > 1
                        OR zip NOT GLOB '[0-9][0-9][0-9][0-9]' OR mail NOT LIKE '%@%' OR typeof(n) NOT IN ('integer', 'null') OR endAt < startAt)
                     + (SELECT COUNT(*) - COUNT(DISTINCT name) FROM athlete) + (SELECT COUNT(*) FROM athlete WHERE length(code) != 3)
                """)
        }
        #expect(broken == 0)
    }

    @Test func aKeyOfTwoForeignKeysAndACompositeForeignKeyTakeRealParentRows() throws {
        let scratch = try TemporaryDirectory()
        let schema = try Self.captured("""
            CREATE TABLE orders (id INTEGER PRIMARY KEY, guid TEXT NOT NULL UNIQUE);
            CREATE TABLE product (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE "Order Details" (OrderID INTEGER NOT NULL REFERENCES orders(id), ProductID INTEGER NOT NULL REFERENCES product(id),
              Quantity INTEGER NOT NULL CHECK (Quantity > 0), PRIMARY KEY (OrderID, ProductID));
            CREATE TABLE shipment (id INTEGER PRIMARY KEY, orderGuid TEXT REFERENCES orders(guid), o INTEGER, p INTEGER,
              FOREIGN KEY (o, p) REFERENCES "Order Details"(OrderID, ProductID));
            CREATE UNIQUE INDEX shipment_once ON shipment(orderGuid, o);
            """, in: scratch)
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        let report = try SchemaGenerator(schema: schema, seed: 1).generate(into: store, bytes: 200_000)
        #expect((report.rows["Order Details"] ?? 0) > 0 && (report.rows["shipment"] ?? 0) > 0)
        #expect(try SchemaGeneratorTests.verdict(store)["foreignKeys"] == "0", "guids where guids belong, pairs of real order lines")
    }

    @Test func aForeignKeyARaiseTriggerEnforcesIsMetByTakingRealParents() throws {
        let scratch = try TemporaryDirectory()
        let schema = try Self.captured("""
            CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE note (id INTEGER PRIMARY KEY, personId INTEGER NOT NULL, body TEXT);
            CREATE TRIGGER note_person BEFORE INSERT ON note BEGIN
              SELECT RAISE(ABORT, 'no such person') WHERE (SELECT id FROM person WHERE id = NEW.personId) IS NULL;
            END;
            """, rows: "INSERT INTO person VALUES (1, 'a'), (2, 'b'); INSERT INTO note VALUES (1, 1, 'x'), (2, 2, 'y');", in: scratch)
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        let report = try SchemaGenerator(schema: schema, seed: 1).generate(into: store, bytes: 200_000)
        #expect((report.rows["note"] ?? 0) >= (report.rows["person"] ?? 0), "every note made, none refused by the trigger: \(report.rows)")
    }

    @Test func aKeyATriggerWritesForARowTheAppShipsIsGivenARealParent() throws {
        let scratch = try TemporaryDirectory()
        let schema = try Self.captured("""
            CREATE TABLE kind (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE log (id INTEGER PRIMARY KEY, kindId INTEGER NOT NULL REFERENCES kind(id), itemId INTEGER REFERENCES item(id));
            CREATE TRIGGER item_log AFTER INSERT ON item BEGIN INSERT INTO log (kindId, itemId) VALUES (0, NEW.id); END;
            """, rows: "INSERT INTO kind VALUES (0, 'created'); INSERT INTO item VALUES (1, 'a');", in: scratch)
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        _ = try SchemaGenerator(schema: schema, seed: 2).generate(into: store, bytes: 100_000)
        #expect(try SchemaGeneratorTests.verdict(store)["foreignKeys"] == "0", "the trigger's kind 0, which only the app's own rows have")
    }

    /// A row whose INSERT a trigger refuses is not in the store, nor is anything the trigger wrote
    /// before refusing it: every row is one the app could have written, and the rows reported are
    /// the rows there. (Without a journal, a refused statement kept both.) The tables the triggers
    /// feed are declared empty: their rows are the triggers' only, one per sighting.
    @Test(arguments: [
        // An AFTER trigger refuses the row once it is in: a NULL count, whose tally must not be NULL.
        """
        CREATE TABLE sighting (site INTEGER, seenAt INTEGER, code TEXT, count INTEGER CHECK (count >= 1),
          PRIMARY KEY (site, seenAt, code));
        CREATE TABLE tally (code TEXT, count INTEGER NOT NULL);
        CREATE TABLE totals (count INTEGER);
        INSERT INTO sighting (site, seenAt, code, count) VALUES (1, 1, 'a', 1), (1, 2, 'b', 2);
        CREATE TRIGGER sighting_tally AFTER INSERT ON sighting BEGIN
          INSERT INTO tally VALUES (NEW.code, NEW.count);
          INSERT INTO totals VALUES (NEW.count);
        END;
        """,
        // A BEFORE trigger writes its tally, then refuses the row in its second statement.
        """
        CREATE TABLE sighting (id INTEGER PRIMARY KEY, code TEXT UNIQUE COLLATE NOCASE, count INTEGER);
        CREATE TABLE tally (code TEXT, count INTEGER);
        CREATE TABLE totals (count INTEGER NOT NULL);
        INSERT INTO sighting (code, count) VALUES ('a', 1), ('b', 2);
        CREATE TRIGGER sighting_tally BEFORE INSERT ON sighting BEGIN
          INSERT INTO tally VALUES (NEW.code, NEW.count);
          INSERT INTO totals VALUES (NEW.count);
        END;
        """,
    ])
    func aRowATriggerRefusesLeavesNothingBehind(sql: String) throws {
        let scratch = try TemporaryDirectory()
        var schema = try Self.captured(sql, in: scratch)
        schema.emptyTables = ["tally", "totals"]
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        let report = try SchemaGenerator(schema: schema, seed: 3).generate(into: store, bytes: 200_000)
        let copy = scratch.url.appending(path: "copy.sqlite")
        try FileManager.default.copyItem(at: store.main, to: copy)
        let counted = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(*(c.execute("select count(*) from " + t).fetchone()[0] for t in ("sighting", "tally", "totals")))
            """, [copy.path])
        try #require(counted.status == 0, "\(counted.stderr)")
        let numbers = counted.stdout.split(separator: " ").compactMap {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        try #require(numbers.count == 3)
        let (sightings, tallies, totals) = (numbers[0], numbers[1], numbers[2])
        #expect(sightings > 100, "rows were made: \(report.rows)")
        #expect(tallies == sightings && totals == sightings, "the triggers' rows, one per sighting kept, none for a refused one: \(sightings) sightings, \(tallies) tallies, \(totals) totals")
        #expect(report.rows["sighting"] == sightings, "the rows reported are the rows there")
    }

    @Test func aSchemaThatCannotBeFilledIsNamedByTableColumnAndConstraint() throws {
        let scratch = try TemporaryDirectory()
        let schema = try Self.captured("CREATE TABLE impossible (id INTEGER PRIMARY KEY, x INTEGER NOT NULL CHECK (x > 5 AND x < 3));", in: scratch)
        let store = StoreFileSet(main: scratch.url.appending(path: "g.sqlite"))
        #expect {
            try SchemaGenerator(schema: schema, seed: 1).generate(into: store, bytes: 50_000)
        } throws: { error in
            let text = "\(error)"
            return text.contains("impossible") && text.contains("x") && text.contains("x > 5 AND x < 3")
        }
        #expect(!FileManager.default.fileExists(atPath: store.main.path), "nothing left behind")
    }
}
