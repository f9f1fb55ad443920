import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// Many rows to an INSERT give the rows one INSERT per row gives, where rows are refused and
/// repaired in the middle of a batch too.
@Suite struct RowBatchTests {
    /// CHECKs over two columns the generator cannot meet by construction (about one row in seven
    /// refused, then repaired), a NOT NULL self-reference, AUTOINCREMENT, a table without a rowid
    /// alias and with a column named rowid, one whose INSERT trigger writes another table, then
    /// refuses some rows, and a WITHOUT ROWID table.
    static let schema = """
        CREATE TABLE person (id INTEGER PRIMARY KEY AUTOINCREMENT, a INTEGER NOT NULL, b INTEGER NOT NULL,
          manager INTEGER NOT NULL REFERENCES person(id), name TEXT UNIQUE, CHECK ((a + b) % 7 <> 3));
        CREATE TABLE reading (rowid TEXT, x INTEGER, y TEXT, CHECK ((x + length(y)) % 5 <> 1));
        CREATE TABLE item (id INTEGER PRIMARY KEY, qty INTEGER NOT NULL, owner INTEGER REFERENCES person(id));
        CREATE TABLE log (id INTEGER PRIMARY KEY, itemId INTEGER);
        CREATE TRIGGER item_log BEFORE INSERT ON item BEGIN
          INSERT INTO log (itemId) VALUES (NEW.id);
          SELECT RAISE(ABORT, 'refused') WHERE NEW.qty % 9 = 4;
        END;
        CREATE TABLE tag (label TEXT NOT NULL, personId INTEGER NOT NULL, PRIMARY KEY (label, personId)) WITHOUT ROWID;
        """

    @Test(arguments: [1 as UInt64, 2])
    func aBatchedStoreHoldsTheRowsOfAStatementPerRow(seed: UInt64) throws {
        let scratch = try TemporaryDirectory()
        let schema = try ConstraintGenerationTests.captured(
            Self.schema,
            rows: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
                INSERT INTO person SELECT i, i * 37 % 1000, i * 11 % 1000, 1, 'p' || i FROM n
                  WHERE (i * 37 % 1000 + i * 11 % 1000) % 7 <> 3;
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
                INSERT INTO reading SELECT 'r' || i, i * 53 % 1000, substr('abcdefghij', 1, i % 10) FROM n
                  WHERE (i * 53 % 1000 + i % 10) % 5 <> 1;
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
                INSERT INTO item SELECT i, i * 29 % 1000, 1 FROM n WHERE (i * 29 % 1000) % 9 <> 4;
                INSERT INTO tag VALUES ('t', 1);
                """, in: scratch)
        var oneByOne = SchemaGenerator(schema: schema, seed: seed)
        oneByOne.rowsPerStatement = 1
        let stores = ["one.sqlite", "batched.sqlite"].map { StoreFileSet(main: scratch.url.appending(path: $0)) }
        let single = try oneByOne.generate(into: stores[0], bytes: 400_000)
        let batched = try SchemaGenerator(schema: schema, seed: seed).generate(into: stores[1], bytes: 400_000)

        #expect(single.rows == batched.rows)
        #expect((batched.rows["person"] ?? 0) > 500, "enough rows for batches with refusals in them: \(batched.rows)")
        let logged = try DatabaseQueue(path: stores[1].main.path).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM log WHERE itemId NOT IN (SELECT id FROM item)")
        }
        #expect((logged ?? 0) > 0, "the trigger logged, then refused, some items")
        #expect(try StoreDigest.tables(of: stores[0]) == StoreDigest.tables(of: stores[1]), "the same rows, table by table")
        let broken = try DatabaseQueue(path: stores[1].main.path).read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM person WHERE (a + b) % 7 = 3)
                         + (SELECT COUNT(*) FROM reading WHERE (x + length(y)) % 5 = 1)
                         + (SELECT COUNT(*) FROM person WHERE manager NOT IN (SELECT id FROM person))
                    """)
        }
        #expect(broken == 0, "every CHECK met and every manager a person")
    }
}
