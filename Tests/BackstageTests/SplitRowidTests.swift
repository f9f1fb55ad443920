import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A split keeps every row with its rowid, whatever carries it: an INTEGER PRIMARY KEY, the index
/// records SQLite copies raw, or, for a table with neither, the numbering 1, 2, 3… of the raw copy
/// only when the source's rowids are exactly those; other rowids are copied row by row.
@Suite struct SplitRowidTests {
    /// Each table's rows as `rowid|hex(record)`, read by Python's sqlite3.
    static func rows(_ path: URL, tables: [String]) throws -> [String: [String]] {
        let script = """
            import sqlite3, sys, json
            db = sqlite3.connect(sys.argv[1])
            out = {}
            for t in sys.argv[2:]:
                # A column named rowid shadows the real one, which _rowid_ still reaches.
                extra = ' || ":" || quote("rowid")' if t.startswith('shadowed') else ''
                out[t] = ['%d|%s' % (r[0], r[1]) for r in db.execute(
                    'SELECT _rowid_, hex(a) || ":" || quote(b)%s FROM "%s" ORDER BY _rowid_' % (extra, t))]
            print(json.dumps(out))
            """
        let result = try PythonSQLite.run(script, [path.path] + tables)
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode([String: [String]].self, from: Data(result.stdout.utf8))
    }

    static let tables = ["dense", "gaps", "negative", "indexed", "empty", "aliased", "shadowed", "shadowedIndexed"]

    @Test func everyRowKeepsItsRowidWhateverCarriesIt() async throws {
        let app = try TestContainer()
        let source = app.supportStore("Diary.sqlite").main
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.executescript('''
              PRAGMA journal_mode=WAL;
              CREATE TABLE dense (a BLOB, b TEXT);
              CREATE TABLE gaps (a BLOB, b TEXT);
              CREATE TABLE negative (a BLOB, b TEXT);
              CREATE TABLE indexed (a BLOB, b TEXT);
              CREATE INDEX indexed_b ON indexed(b);
              CREATE TABLE empty (a BLOB, b TEXT);
              CREATE TABLE aliased (id INTEGER PRIMARY KEY, a BLOB, b TEXT);
              CREATE TABLE log (line TEXT);
              CREATE TABLE shadowed (a BLOB, b TEXT, rowid TEXT);
              CREATE TABLE shadowedIndexed (a BLOB, b TEXT, rowid INTEGER);
              CREATE INDEX shadowed_b ON shadowedIndexed(b);
            ''')
            for t in ['shadowed', 'shadowedIndexed']:
                db.executemany('INSERT INTO "%s"(_rowid_, a, b, rowid) VALUES (?, ?, ?, ?)' % t,
                               ((i * 3 + 5, bytes([i % 256]) * (i % 300), 'row %d' % i, 3000 - i) for i in range(1, 1001)))
            for t in ['dense', 'gaps', 'negative', 'indexed']:
                db.executemany('INSERT INTO "%s"(rowid, a, b) VALUES (?, ?, ?)' % t,
                               ((i, bytes([i % 256]) * (i % 700), 'row %d' % i) for i in range(1, 3001)))
            db.execute('DELETE FROM gaps WHERE rowid % 7 = 0')
            db.execute('DELETE FROM indexed WHERE rowid % 5 = 0')
            db.execute('UPDATE negative SET rowid = -rowid WHERE rowid < 10')
            db.executemany('INSERT INTO aliased VALUES (?, ?, ?)', ((i * 2, b'x' * i, 'a%d' % i) for i in range(1, 500)))
            db.execute("INSERT INTO log VALUES ('kept')")
            db.commit()
            """
        let made = try PythonSQLite.run(script, [source.path])
        #expect(made.status == 0, "\(made.stderr)")
        let before = try Self.rows(source, tables: Self.tables)
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.split(
                .support("Diary.sqlite"),
                into: [
                    .init(store: .support("Entries.sqlite"), tables: Self.tables),
                    .init(store: .support("Log.sqlite"), tables: ["log"]),
                ])
        }
        try await Upgrader(container: app.container).upgrade(plan)
        let after = try Self.rows(app.supportStore("Entries.sqlite").main, tables: Self.tables)
        for table in Self.tables {
            let changed = zip(after[table] ?? [], before[table] ?? []).filter { $0 != $1 }.count
            #expect(
                after[table]?.count == before[table]?.count && changed == 0,
                "\(table): \(after[table]?.count ?? 0) rows of \(before[table]?.count ?? 0), \(changed) changed")
        }
        #expect(before["gaps"]?.count == 3000 - 428 && before["empty"] == [])
        #expect(before["shadowed"]?.first == "8|01:'row 1':'2999'", "the real rowid, beside the column named rowid")
    }
}
