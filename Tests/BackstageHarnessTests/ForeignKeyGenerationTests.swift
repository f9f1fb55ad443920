import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// The generator checks a store's foreign keys only where a key may name no parent row; these
/// schemas have keys of every kind it must not take on trust, and of the kind it does.
@Suite struct ForeignKeyGenerationTests {
    /// Text keys (whose edge values hold a NUL), a child key of another affinity, a key to a
    /// UNIQUE column, a composite key, a self-reference to text, and plain integer keys.
    static let schema = """
        CREATE TABLE tag (name TEXT PRIMARY KEY, colour TEXT);
        CREATE TABLE owner (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT);
        CREATE TABLE place (country TEXT NOT NULL, city TEXT NOT NULL, note TEXT, PRIMARY KEY (country, city));
        CREATE TABLE item (id INTEGER PRIMARY KEY, tag TEXT NOT NULL REFERENCES tag(name),
          ownerEmail TEXT REFERENCES owner(email), ownerText TEXT REFERENCES owner(id),
          country TEXT, city TEXT, title TEXT, FOREIGN KEY (country, city) REFERENCES place(country, city));
        CREATE TABLE person (handle TEXT PRIMARY KEY, mentor TEXT REFERENCES person(handle), bio TEXT);
        CREATE TABLE note (id INTEGER PRIMARY KEY, itemId INTEGER NOT NULL REFERENCES item(id),
          ownerId INTEGER REFERENCES owner(id), body TEXT);
        """

    static func store(in folder: URL) throws -> StoreFileSet {
        let store = StoreFileSet(main: folder.appending(path: "App.sqlite"))
        let queue = try DatabaseQueue(path: store.main.path)
        try queue.write { db in
            try db.execute(sql: schema)
            try db.execute(
                sql: """
                    INSERT INTO tag VALUES ('red', 'f00'), ('blue', '00f');
                    INSERT INTO owner VALUES (1, 'a@example.com', 'Ann'), (2, 'b@example.com', 'Bo');
                    INSERT INTO place VALUES ('PT', 'Lisbon', NULL), ('FR', 'Paris', 'rain');
                    INSERT INTO item VALUES (1, 'red', 'a@example.com', '1', 'PT', 'Lisbon', 'lamp'),
                      (2, 'blue', NULL, '2', 'FR', 'Paris', 'desk');
                    INSERT INTO person VALUES ('ann', NULL, 'x'), ('bo', 'ann', 'y');
                    INSERT INTO note VALUES (1, 1, 1, 'hello'), (2, 2, NULL, 'world');
                    """)
        }
        try queue.close()
        return store
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func everyGeneratedForeignKeyNamesARow(seed: UInt64) throws {
        let scratch = try TemporaryDirectory()
        let schema = try StoreCapture.capture(try Self.store(in: scratch.url))
        let generated = StoreFileSet(main: scratch.url.appending(path: "generated.sqlite"))

        let report = try SchemaGenerator(schema: schema, seed: seed).generate(into: generated, bytes: 400_000)

        let verdict = try SchemaGeneratorTests.verdict(generated)
        #expect(verdict["integrity"] == "ok")
        let violations = try DatabaseQueue(path: generated.main.path).read { db in
            try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").map { "\($0[0] as String) → \($0[2] as String)" }
        }
        #expect(verdict["foreignKeys"] == "0", "every key of every table names a parent row: \(violations)")
        for table in ["tag", "owner", "place", "item", "person", "note"] {
            #expect((report.rows[table] ?? 0) > 2, "\(table) was filled")
        }
    }

    /// A parent's text key holding a NUL (an edge value) is taken whole: the rows referring to it
    /// hold that very key, not the text before the NUL, which named no row and had every foreign
    /// key of the store checked and repaired.
    @Test func aTextKeyHoldingANulIsTakenWhole() throws {
        let scratch = try TemporaryDirectory()
        let schema = try StoreCapture.capture(try Self.store(in: scratch.url))
        let generated = StoreFileSet(main: scratch.url.appending(path: "generated.sqlite"))

        _ = try SchemaGenerator(schema: schema, seed: 1).generate(into: generated, bytes: 400_000)

        let (parents, children) = try DatabaseQueue(path: generated.main.path).read { db in
            let nul = "instr(CAST(city AS BLOB), x'00') > 0"
            return (
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM place WHERE \(nul)") ?? 0,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item WHERE \(nul) AND (country, city) IN (SELECT country, city FROM place)") ?? 0
            )
        }
        #expect(parents > 0, "places whose city holds a NUL")
        #expect(children > 0, "items of those places")
        #expect(try SchemaGeneratorTests.verdict(generated)["foreignKeys"] == "0")
    }
}
