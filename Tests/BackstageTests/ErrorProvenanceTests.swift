import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Errors say whose they are: a split's SQLite failure is the upgrade's, naming the store SQLite
/// failed on with SQLite's own code; a relocation that meets an interrupted upgrade step reports
/// that step's error, not an invented SQLite code.
@Suite struct ErrorProvenanceTests {
    /// A damaged page in the middle of the store being split: the rows cannot be read.
    @Test func aSplitOfADamagedStoreIsTheUpgradesSQLiteErrorNamingTheSource() async throws {
        let app = try TestContainer()
        let source = app.supportStore()
        try CoreDataStore.create(source.main, notes: 2_000, walOnlyNotes: 0)
        try Self.zeroMiddlePages(of: source.main)
        let before = try Data(contentsOf: source.main)

        await #expect {
            try await Upgrader(container: app.container).upgrade(splitPlan())
        } throws: { error in
            guard let error = error as? BackstageError, case .sqlite(let code, _) = error.cause, case let path = error.path else { return false }
            return path == source.main.path && code & 0xFF == 11
                && "\(error)".hasPrefix("\(source.main.path): the store is damaged")
        }
        #expect(try Data(contentsOf: source.main) == before, "the source's bytes are left as they were")
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty, "no temporary target is left")
        #expect(!FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: "UserData.sqlite").path))
    }

    /// The folder of one target is a full disk: SQLite cannot write its rows there.
    @Test(.enabled(if: runningAsRoot, "a small tmpfs needs root"))
    func aSplitOntoAFullDiskIsTheUpgradesSQLiteErrorNamingTheTarget() async throws {
        let local = try TemporaryDirectory()
        let caches = try TestMount(tmpfs: "256k")
        let container = AppContainer(
            documents: local.url.appending(path: "Documents"), applicationSupport: local.url.appending(path: "Support"),
            caches: caches.url, temporary: local.url.appending(path: "tmp"))
        let source = StoreFileSet(main: container.applicationSupport.appending(path: "Notes.sqlite"))
        try FileManager.default.createDirectory(at: container.applicationSupport, withIntermediateDirectories: true)
        try CoreDataStore.create(source.main, notes: 3_000, walOnlyNotes: 0)
        let before = try Data(contentsOf: source.main)
        let target = caches.url.appending(path: "Cache.sqlite").path

        await #expect {
            try await Upgrader(container: container).upgrade(splitPlan())
        } throws: { error in
            guard let error = error as? BackstageError, case .sqlite(let code, _) = error.cause, case let path = error.path else { return false }
            return path == target && code & 0xFF == 13 && "\(error)".hasPrefix("\(target): the disk is full")
        }
        #expect(try Data(contentsOf: source.main) == before, "the source's bytes are left as they were")
        #expect(try FileManager.default.contentsOfDirectory(atPath: caches.url.path) == [], "no temporary is left")
    }

    /// A relocation finds a split interrupted after `verified` whose target lost its external data
    /// files: it reports the split's error, store and counts, where it said "SQLite error -1".
    @Test func aRelocationReportsTheInterruptedSplitsOwnError() async throws {
        let app = try TestContainer()
        let target = app.supportStore("UserData.sqlite")
        let created = try CoreDataStore.create(target.main, notes: 40, walOnlyNotes: 0)
        #expect(!created.referenced.isEmpty)
        try FileManager.default.removeItem(at: target.supportFolder.appending(path: "_EXTERNAL_DATA"))
        try FileManager.default.createDirectory(at: app.container.backstageDirectory, withIntermediateDirectories: true)
        let journal = """
            {"version": 1, "step": "split", "phase": "verified", "source": "applicationSupport/Notes.sqlite",
            "destination": "applicationSupport/Notes.sqlite", "targets": ["applicationSupport/UserData.sqlite"],
            "startedAt": "2026-01-01T00:00:00Z"}
            """
        try Data(journal.utf8).write(to: app.container.backstageDirectory.appending(path: "journal.json"))

        await #expect {
            try await Relocator(container: app.container).relocate()
        } throws: { error in
            guard let error = error as? BackstageError,
                case .externalDataMissing(let missing, let referenced) = error.cause
            else { return false }
            return error.path == "applicationSupport/UserData.sqlite" && missing == referenced && missing > 0
                && !"\(error)".contains("SQLite error")
        }
        let journalPath = app.container.backstageDirectory.appending(path: "journal.json").path
        #expect(FileManager.default.fileExists(atPath: journalPath), "the journal is kept")
    }

    /// A migration for a file that is not a database: SQLite's refusal to open it is the
    /// upgrade's (it was a relocation's "not a database"), and the file is left as it was.
    @Test func aMigrationOfAFileThatIsNotADatabaseIsTheUpgradesSQLiteError() async throws {
        let app = try TestContainer()
        let store = app.supportStore("Workout.sqlite")
        try FileManager.default.createDirectory(at: app.applicationSupport, withIntermediateDirectories: true)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try garbage.write(to: store.main)
        let plan = UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(.support("Workout.sqlite"), [.init(id: "v2", sql: "CREATE TABLE t (x)")])
        }

        await #expect {
            try await Upgrader(container: app.container).upgrade(plan)
        } throws: { error in
            guard let error = error as? BackstageError, case .sqlite(let code, _) = error.cause, case let path = error.path else { return false }
            return path == store.main.path && code & 0xFF == 26
                && "\(error)".hasPrefix("\(store.main.path): the file is not a SQLite database")
        }
        #expect(try Data(contentsOf: store.main) == garbage)
    }

    /// Zeroes the pages of the middle half of `store`: b-tree pages of every table (their rows were
    /// written interleaved), so reading any table fails as `SQLITE_CORRUPT`; page 1 (the schema) stays.
    static func zeroMiddlePages(of store: URL) throws {
        let handle = try FileHandle(forUpdating: store)
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        let page: UInt64 = 4096
        let start = size / 4 / page * page
        try handle.seek(toOffset: start)
        handle.write(Data(count: Int(size / 2 / page * page)))
    }
}
