import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// A `wal-pending` fixture is what an app killed in WAL mode leaves: SQLite's automatic checkpoint
/// at 1,000 pages keeps the `-wal` about that size, and the rows committed since it live only there.
@Suite struct WALPendingFixtureTests {
    @Test(.timeLimit(.minutes(10)))
    func theWALHoldsCommittedRowsAndStaysTheSizeAnAppsAutomaticCheckpointLeaves() throws {
        let scratch = try TemporaryDirectory()
        // 30 MB: a writer that never checkpointed left a -wal of 1,236 pages here.
        let (container, manifest) = try generate("v1", .walPending, size: 30_000_000, in: scratch)
        let set = StoreFileSet(main: container.documents.appending(path: "Notes.sqlite"))
        let withWAL = try PythonSQLite.inspect(set, table: "ZNOTE", titleColumn: "ZTITLE")
        let mainOnly = try PythonSQLite.inspect(set, table: "ZNOTE", titleColumn: "ZTITLE", includingWAL: false)
        #expect(withWAL.rows > mainOnly.rows, "committed rows only in the -wal")
        #expect(withWAL.rows == manifest.stores["documents/Notes.sqlite"]?["ZNOTE"]?.rows)
        let pageSize = try PythonSQLite.run(
            "import sqlite3, sys; print(sqlite3.connect('file:' + sys.argv[1] + '?immutable=1', uri=True).execute('pragma page_size').fetchone()[0])",
            [set.main.path])
        let page = try #require(Int(pageSize.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let wal = try #require(try FileManager.default.attributesOfItem(atPath: set.sidecar(.wal).path)[.size] as? Int)
        // The WAL header, then frames of a 24-byte header and a page: 1,000 pages and a transaction's.
        #expect(wal <= 32 + 1_100 * (24 + page), "\(wal) bytes of -wal, \((wal - 32) / (24 + page)) frames")
        let main = try #require(try FileManager.default.attributesOfItem(atPath: set.main.path)[.size] as? Int)
        #expect(wal < main, "a -wal of \(wal) bytes beside a store of \(main)")
    }
}
