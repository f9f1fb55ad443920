import Backstage
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// The split counts rows and external data references on a second, unlocked connection while it
/// copies (``SplitCensus``): what it counts is what the split's verification compares with.
@Suite struct SplitCensusTests {
    /// Under the split's lock no ordinary connection can read the store, yet the census counts
    /// every row, those committed only in the `-wal` included (the lock checkpointed them), and
    /// names exactly the external files rows reference.
    @Test func theCensusUnderTheLockCountsEveryRowAndReferenceTheWALIncluded() throws {
        let app = try TestContainer()
        let store = app.supportStore()
        let files = try CoreDataStore.create(store.main, notes: 120, walOnlyNotes: 7)
        let lock = try StoreLock(path: store.main.path, timeout: 0.2, during: .upgrading)
        defer { lock.close() }
        #expect(throws: (any Error).self, "an ordinary reader is locked out") {
            try DatabaseQueue(path: store.main.path).read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM ZNOTE") }
        }

        let tables = ["Z_PRIMARYKEY", "Z_METADATA", "ZFOLDER", "ZNOTE", "ZATTACHMENT", "ZTHUMBNAIL", "ZLOG"]
        let counts = try SplitCensus(store: store.main.path, tables: tables, shadows: []).wait()

        let notes = 127
        let attachments = (1...notes).filter { $0 % 10 == 0 || $0 % 10 == 5 }.count
        #expect(counts.rows == ["Z_PRIMARYKEY": 3, "Z_METADATA": 1, "ZFOLDER": 3, "ZNOTE": notes, "ZATTACHMENT": attachments,
                                "ZTHUMBNAIL": notes, "ZLOG": notes])
        #expect(counts.references["ZATTACHMENT"] == Set(files.referenced))
        #expect(counts.references.filter { $0.key != "ZATTACHMENT" }.values.allSatisfy { $0.isEmpty })
        #expect(!files.referenced.contains(files.unreferenced))
    }

    /// A store without an external data folder is only counted: the same rows, no reference read.
    @Test func withoutReferencesTheCensusCountsTheSameRows() throws {
        let app = try TestContainer()
        let store = app.supportStore()
        try CoreDataStore.create(store.main, notes: 40, walOnlyNotes: 2)
        let lock = try StoreLock(path: store.main.path, timeout: 0.2, during: .upgrading)
        defer { lock.close() }
        let tables = ["ZFOLDER", "ZNOTE", "ZATTACHMENT", "ZTHUMBNAIL"]
        let full = try SplitCensus(store: store.main.path, tables: tables, shadows: []).wait()
        let counted = try SplitCensus(store: store.main.path, tables: tables, shadows: [], references: false).wait()
        #expect(counted.rows == full.rows && full.rows["ZNOTE"] == 42)
        #expect(counted.references.isEmpty && full.references["ZATTACHMENT"]?.isEmpty == false)
    }

    /// A target whose tables did not all receive the counted rows is named, and the split is not
    /// verified; a table the census never counted fails the same way.
    @Test func aTargetThatDiffersFromTheCensusIsNamed() throws {
        let counts = SplitCensus.Counts(rows: ["ZNOTE": 10, "ZLOG": 4, "Z_METADATA": 1])
        let targets = ["/c/UserData.sqlite.tmp", "/c/Cache.sqlite.tmp"]
        try counts.verify(copied: [["ZNOTE": 10, "Z_METADATA": 1], ["ZLOG": 4]], targets: targets)
        #expect(throws: BackstageError(.verificationFailed, path: targets[1], during: .upgrading)) {
            try counts.verify(copied: [["ZNOTE": 10, "Z_METADATA": 1], ["ZLOG": 3]], targets: targets)
        }
        #expect(throws: BackstageError(.verificationFailed, path: targets[0], during: .upgrading)) {
            try counts.verify(copied: [["ZNOTE": 10, "ZTHUMBNAIL": 0], ["ZLOG": 4]], targets: targets)
        }
    }

    /// The census opens the store by a `file:` URI: a folder named with the URI's own punctuation
    /// (`?`, `#`, `%20`) and non-ASCII letters is still the store's folder, and the split keeps
    /// every row.
    @Test(arguments: ["what? #1 100%20 done", "Été & Ω=1;x"])
    func aStoreInAFolderNamedWithURIPunctuationSplitsWithEveryRow(_ folder: String) async throws {
        let base = try TemporaryDirectory()
        let odd = base.url.appending(path: folder, directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: odd, withIntermediateDirectories: true)
        let app = try TestContainer(base: odd)
        let source = app.supportStore()
        try CoreDataStore.create(source.main, notes: 60, walOnlyNotes: 3)
        let before = try PythonSQLite.contentHashes(source)

        try await Upgrader(container: app.container).upgrade(splitPlan())

        let user = try PythonSQLite.contentHashes(StoreFileSet(main: app.applicationSupport.appending(path: "UserData.sqlite")))
        let cache = try PythonSQLite.contentHashes(StoreFileSet(main: app.container.caches.appending(path: "Cache.sqlite")))
        for table in CoreDataStore.userTables { #expect(user.tables[table] == before.tables[table], "\(table)") }
        for table in CoreDataStore.cacheTables { #expect(cache.tables[table] == before.tables[table], "\(table)") }
        #expect(!FileManager.default.fileExists(atPath: source.main.path))
    }

    @Test func theURIEncodesWhatSQLiteWouldReadAsItsOwn() {
        #expect(StoreFileSet.immutableURI("/a b/what?#%/N.sqlite") == "file:///a%20b/what%3F%23%25/N.sqlite?immutable=1")
    }
}
