import Backstage
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// The bulk VFS the split copies through (`Sources/CBackstageSQLite`): a store read through it,
/// 124 KiB at a time, reads as it does through SQLite alone, and a copy written through it, its
/// pages gathered, is the same store, whatever the page size.
@Suite struct BulkCopyTests {
    /// A store of `rows` rows a table: small rows, rows of a blob that fits its page, rows of one
    /// that spills onto overflow pages; an index; written by SQLite alone.
    static func makeSource(_ path: String, pageSize: Int, rows: Int) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
            try db.execute(sql: "VACUUM")
            try db.execute(
                sql: """
                    CREATE TABLE item(id INTEGER PRIMARY KEY, title TEXT, body BLOB);
                    CREATE INDEX item_title ON item(title);
                    CREATE TABLE note(tag TEXT, data BLOB);
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                      INSERT INTO item SELECT i, 'title ' || (i * 7 % 101), randomblob(i * 37 % (3 * \(pageSize))) FROM n;
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
                      INSERT INTO note SELECT 'tag ' || i, zeroblob(i % 50) || randomblob(i % 700) FROM n;
                    """)
        }
        try queue.close()
    }

    @Test(arguments: [512, 1024, 4096, 16384, 65536])
    func aCopyThroughTheVFSIsTheSameStoreAsItsSource(pageSize: Int) throws {
        let scratch = try TemporaryDirectory()
        let source = scratch.path + "/source.sqlite", target = scratch.path + "/target.sqlite"
        try Self.makeSource(source, pageSize: pageSize, rows: 1_500)
        let expected = try DatabaseQueue(path: source).read { db in
            try ["item", "note"].map { try Row.fetchAll(db, sql: "SELECT rowid, * FROM \($0) ORDER BY rowid") }
        }
        #expect(BulkCopy.vfs != nil, "the VFS is registered")

        // As the split copies: the store's exclusive lock held (the VFS reads ahead only then), the
        // source read through the VFS without locks of its own, the target attached with its writes
        // gathered, the transfer optimisation's raw copy, then the flush.
        let lock = try StoreLock(path: source, timeout: 5, during: .upgrading)
        defer { lock.close() }
        let copier = try DatabaseQueue(path: BulkCopy.sourceURI(source))
        try copier.inDatabase { db in
            try db.execute(sql: "ATTACH DATABASE ? AS t", arguments: [BulkCopy.targetURI(target)])
            try db.execute(sql: "PRAGMA t.page_size = \(pageSize)")
            try db.execute(sql: "PRAGMA t.journal_mode = OFF")
            try db.execute(sql: "PRAGMA t.synchronous = OFF")
            try db.inTransaction {
                try db.execute(sql: "CREATE TABLE t.item(id INTEGER PRIMARY KEY, title TEXT, body BLOB)")
                try db.execute(sql: "CREATE INDEX t.item_title ON item(title)")
                try db.execute(sql: "INSERT INTO t.item SELECT * FROM main.item")
                try db.execute(sql: "CREATE TABLE t.note(tag TEXT, data BLOB)")
                try db.execute(sql: "INSERT INTO t.note(rowid, tag, data) SELECT rowid, tag, data FROM main.note")
                return .commit
            }
            let read = try ["item", "note"].map { try Row.fetchAll(db, sql: "SELECT rowid, * FROM main.\($0) ORDER BY rowid") }
            #expect(read == expected, "read ahead, the source reads as it does without the VFS")
            try BulkCopy.flush(db, schema: "t")
            try db.execute(sql: "DETACH DATABASE t")
        }
        try copier.close()

        let copy = try DatabaseQueue(path: target)
        try copy.read { db in
            #expect(try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"])
            #expect(try Int.fetchOne(db, sql: "PRAGMA page_size") == pageSize)
            let copied = try ["item", "note"].map { try Row.fetchAll(db, sql: "SELECT rowid, * FROM \($0) ORDER BY rowid") }
            #expect(copied == expected, "every row, byte for byte, at the page size \(pageSize)")
        }
    }

    /// A target on a disk that fills while its pages are held: the write-out fails, and the
    /// failure stays with the file, so the flush the split asks for before closing it reports it
    /// too, rather than saying "written" for pages that never reached the disk.
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func aWriteOutThatFailsIsReportedByEveryLaterCall() throws {
        let scratch = try TemporaryDirectory()
        let mount = try TestMount(tmpfs: "1m")
        let source = scratch.path + "/source.sqlite", target = mount.url.path + "/target.sqlite"
        try Self.makeSource(source, pageSize: 4096, rows: 1_500)
        let copier = try DatabaseQueue(path: BulkCopy.sourceURI(source))
        try copier.inDatabase { db in
            try db.execute(sql: "ATTACH DATABASE ? AS t", arguments: [BulkCopy.targetURI(target)])
            try db.execute(sql: "PRAGMA t.journal_mode = OFF")
            try db.execute(sql: "PRAGMA t.synchronous = OFF")
            let copied = Result {
                try db.inTransaction {
                    try db.execute(sql: "CREATE TABLE t.item(id INTEGER PRIMARY KEY, title TEXT, body BLOB)")
                    try db.execute(sql: "INSERT INTO t.item SELECT * FROM main.item")
                    return .commit
                }
            }
            #expect(throws: DatabaseError.self, "the copy does not fit a 1 MB disk") { try copied.get() }
            #expect(throws: DatabaseError.self, "the failed write-out is reported again") {
                try BulkCopy.flush(db, schema: "t")
            }
            try? db.execute(sql: "DETACH DATABASE t")
        }
        try copier.close()
    }
}
