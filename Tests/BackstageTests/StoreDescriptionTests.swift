import Backstage
import BackstageTestSupport
import Foundation
import GRDB
import Testing

@Suite struct StoreDescriptionTests {
    @Test func defaultsAreCoreDatas() throws {
        let description = StoreDescription(name: "Notes")
        let container = AppContainer.iOSSandbox(root: URL(filePath: "/tmp/App"))
        #expect(description.type == .sqlite)
        #expect(description.resolvedURL(in: container).path == "/tmp/App/Library/Application Support/Notes.sqlite")
        #expect(description.configuration == nil)
        #expect(description.isReadOnly == false)
        #expect(description.timeout == 240)
        #expect(description.sqlitePragmas.isEmpty)
        #expect(description.journalMode == "wal")
        #expect(description.shouldMigrateStoreAutomatically)
        #expect(description.allowsDocumentsLocation == false)
    }

    @Test func pragmasAreSetAndRemovedAndSurviveJSON() throws {
        var description = StoreDescription(name: "Notes")
        description.setPragma("DELETE", named: "journal_mode")
        description.setPragma("2000", named: "cache_size")
        description.setPragma(nil, named: "cache_size")
        #expect(description.journalMode == "delete")
        #expect(description.sqlitePragmas == ["journal_mode": "DELETE"])

        let decoded = try JSONDecoder().decode(StoreDescription.self, from: JSONEncoder().encode(description))
        #expect(decoded == description)
        // Core Data's keys that mean nothing here are not accepted silently: the description has
        // no such properties (loading is always off the caller's thread: loadStores() is async;
        // schemas change by migrations, never by inferred mapping models).
        let encoded = String(decoding: try JSONEncoder().encode(description), as: UTF8.self)
        #expect(!encoded.contains("shouldAddStoreAsynchronously") && !encoded.contains("shouldInferMappingModelAutomatically") && !encoded.contains("options"))
    }
}

@Suite struct StoreContainerTests {
    @Test func aDescriptionInsideDocumentsIsRefused() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Notes", container: app.container)
        stores.storeDescriptions = [StoreDescription(name: "Notes", url: app.documents.appending(path: "Notes.sqlite"))]

        await #expect(throws: BackstageError(.insideDocuments, path: app.documents.appending(path: "Notes.sqlite").path, during: .loadingStores)) {
            try await stores.loadStores()
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: app.documents.path).isEmpty)

        // Through a link to Documents, too.
        let link = app.root.appending(path: "Innocent")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: app.documents)
        stores.storeDescriptions = [StoreDescription(name: "Notes", url: link.appending(path: "Sub/Notes.sqlite"))]
        await #expect(throws: BackstageError(.insideDocuments, path: link.appending(path: "Sub/Notes.sqlite").path, during: .loadingStores)) {
            try await stores.loadStores()
        }

        stores.storeDescriptions = [StoreDescription(name: "Notes", url: app.documents.appending(path: "Notes.sqlite"))]
        stores.storeDescriptions[0].allowsDocumentsLocation = true
        try await stores.loadStores()
        #expect(stores.url(for: nil) == app.documents.appending(path: "Notes.sqlite"))
    }

    @Test func twoConfigurationsPutTheirTablesInTwoFiles() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Notes", container: app.container, model: StoreModel(["UserData": ["note"], "Cache": ["thumbnail"]]))
        let cacheURL = app.container.caches.appending(path: "Cache.sqlite")
        stores.storeDescriptions = [
            StoreDescription(name: "UserData", configuration: "UserData"),
            StoreDescription(name: "Cache", url: cacheURL, configuration: "Cache"),
        ]
        try await stores.loadStores()
        try stores.write(table: "note") { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT); INSERT INTO note VALUES (1, 'hello')")
        }
        try stores.write(table: "thumbnail") { db in
            try db.execute(sql: "CREATE TABLE thumbnail (note INTEGER, size INTEGER); INSERT INTO thumbnail VALUES (1, 64)")
        }

        let joined = try stores.readAcrossStores { db in
            try Row.fetchOne(db, sql: "SELECT n.title, t.size FROM UserData.note n JOIN Cache.thumbnail t ON t.note = n.id")
        }
        #expect(joined?["title"] == "hello")
        #expect(throws: (any Error).self) {
            try stores.readAcrossStores { db in try db.execute(sql: "DELETE FROM UserData.note") }
        }
        try stores.close()

        #expect(try PythonSQLite.schema(StoreFileSet(main: app.applicationSupport.appending(path: "UserData.sqlite"))).tables == ["note"])
        #expect(try PythonSQLite.schema(StoreFileSet(main: cacheURL)).tables == ["thumbnail"])
    }

    @Test func switchingToATestStoreAndBackLeavesTheRealStoreByteIdentical() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Notes", container: app.container)
        try await stores.loadStores()
        let real = app.supportStore()
        try stores.write { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)")
            for n in 1...10 { try db.execute(sql: "INSERT INTO note (title) VALUES (?)", arguments: ["real \(n)"]) }
        }
        let test = app.root.appending(path: "Test.sqlite")
        try PythonSQLite.createStore(test, rows: 0)

        try await stores.switchStore(to: test)
        let before = snapshot(real)
        try stores.write { db in try db.execute(sql: "INSERT INTO note (title) VALUES ('test')") }
        #expect(snapshot(real) == before)
        try await stores.switchStore(to: real.main)
        #expect(try stores.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM note") } == 10)
        try stores.close()

        #expect(snapshot(real)["Notes.sqlite"] == before["Notes.sqlite"])
        #expect(try PythonSQLite.inspect(real).rows == 10)
        #expect(try PythonSQLite.inspect(StoreFileSet(main: test)).rows == 1)
    }

    @Test func concurrentWritersNeverWriteToTheOldStoreAfterTheSwitchReturns() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Notes", container: app.container)
        try await stores.loadStores()
        try stores.write { try $0.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)") }
        let other = app.applicationSupport.appending(path: "Other.sqlite")
        try PythonSQLite.createStore(other, rows: 0)

        let log = WriteLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    var n = 0
                    while !log.stopped {
                        n += 1
                        let title = "w\(writer)-\(n)"
                        let startedAfterSwitch = log.switched
                        try stores.write { try $0.execute(sql: "INSERT INTO note (title) VALUES (?)", arguments: [title]) }
                        log.record(title, startedAfterSwitch: startedAfterSwitch)
                        // Two cores mean two cooperative threads: let the test's own task run.
                        await Task.yield()
                    }
                }
            }
            let started = ContinuousClock.now + .seconds(30)
            repeat {
                try await Task.sleep(for: .milliseconds(150))
            } while log.all.isEmpty && ContinuousClock.now < started
            try await stores.switchStore(to: other)
            log.markSwitched(oldStore: snapshot(app.supportStore()))
            // Until a write begun after the switch is acknowledged (a loaded machine may take longer than
            // a fixed pause), at most 30 s: the test is about where writes go, not how fast.
            let deadline = ContinuousClock.now + .seconds(30)
            repeat {
                try await Task.sleep(for: .milliseconds(150))
            } while log.afterSwitch.isEmpty && ContinuousClock.now < deadline
            log.stop()
            try await group.waitForAll()
        }
        try stores.close()

        #expect(snapshot(app.supportStore()) == log.oldStoreAtSwitch)
        let old = try PythonSQLite.inspect(app.supportStore())
        let new = try PythonSQLite.inspect(StoreFileSet(main: other))
        #expect(old.rows + new.rows == log.all.count, "every acknowledged write is in exactly one store")
        #expect(old.titles.isDisjoint(with: log.afterSwitch), "no write begun after the switch reached the old store")
        #expect(log.afterSwitch.isSubset(of: new.titles))
        #expect(!log.afterSwitch.isEmpty && old.rows > 0, "both stores were written, or the test proves nothing")
    }

    @Test func twoAccountsNeverSeeEachOthersRows() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Notes", container: app.container)
        try await stores.loadStores()
        for account in ["alice", "bob"] {
            try await stores.accountStore(account).write { db in
                try db.execute(sql: "CREATE TABLE note (title TEXT); INSERT INTO note VALUES (?)", arguments: ["\(account)'s note"])
            }
        }

        let alice = try await stores.accountStore("alice").read { try String.fetchAll($0, sql: "SELECT title FROM note") }
        #expect(alice == ["alice's note"])
        #expect(FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: "Accounts/bob/Notes.sqlite").path))
        #expect(throws: BackstageError(.invalidAccountID("../bob"), path: "", during: .loadingStores)) { try stores.accountStore("../bob") }
    }

    @Test func aReadOnlyStoreRefusesWritesWithATypedError() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.supportStore().main, rows: 3)
        let stores = StoreContainer(name: "Notes", container: app.container)
        stores.storeDescriptions[0].isReadOnly = true
        try await stores.loadStores()

        #expect(try stores.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM note") } == 3)
        #expect(throws: BackstageError(.readOnlyStore, path: app.supportStore().main.path, during: .loadingStores)) {
            try stores.write { try $0.execute(sql: "DELETE FROM note") }
        }
        try stores.close()
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 3)
    }

    @Test func theBusyTimeoutWaitsForAnotherProcessesLockThenFailsClearly() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.supportStore().main, rows: 0)
        let stores = StoreContainer(name: "Notes", container: app.container)
        stores.storeDescriptions[0].timeout = 30
        try await stores.loadStores()

        // Held for 1 s: the write waits, and lands after the holder's commit.
        let brief = try PythonSQLite.holdWriteLock(app.supportStore().main, seconds: 1)
        try stores.write { try $0.execute(sql: "INSERT INTO note (title) VALUES ('mine')") }
        brief.waitUntilExit()
        let titles = try stores.read { try String.fetchAll($0, sql: "SELECT title FROM note ORDER BY id") }
        #expect(titles == ["holder", "mine"])
        try stores.close()

        // Held past the timeout: a typed error naming the file.
        let impatient = StoreContainer(name: "Notes", container: app.container)
        impatient.storeDescriptions[0].timeout = 0.3
        try await impatient.loadStores()
        let long = try PythonSQLite.holdWriteLock(app.supportStore().main, seconds: 60)
        defer { kill(long.processIdentifier, SIGKILL); long.waitUntilExit() }
        #expect(throws: BackstageError(.storeInUse(timeout: 0.3), path: app.supportStore().main.path, during: .loadingStores)) {
            try impatient.write { try $0.execute(sql: "INSERT INTO note (title) VALUES ('late')") }
        }
    }

    @Test func theSameFileIsNeverAddedTwice() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Notes", container: app.container)
        let url = app.applicationSupport.appending(path: "Shared.sqlite")
        stores.storeDescriptions = [
            StoreDescription(name: "A", url: url, configuration: "A"),
            StoreDescription(name: "B", url: app.applicationSupport.appending(path: "./Sub/../Shared.sqlite"), configuration: "B"),
        ]
        await #expect(throws: BackstageError(.duplicateStore, path: url.path, during: .loadingStores)) { try await stores.loadStores() }

        // Through a symbolic link to the same folder, and by switching onto a loaded file.
        let link = app.root.appending(path: "Link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: app.applicationSupport)
        stores.storeDescriptions[1] = StoreDescription(name: "B", url: link.appending(path: "Shared.sqlite"), configuration: "B")
        await #expect(throws: BackstageError(.duplicateStore, path: link.appending(path: "Shared.sqlite").path, during: .loadingStores)) { try await stores.loadStores() }
        stores.storeDescriptions[1] = StoreDescription(name: "B", configuration: "B")
        try await stores.loadStores()
        await #expect(throws: BackstageError(.duplicateStore, path: url.path, during: .loadingStores)) { try await stores.switchStore(configuration: "B", to: url) }
    }

    @Test func journalModeDeleteLeavesNoSidecarsAndPragmasAreApplied() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Notes", container: app.container)
        stores.storeDescriptions[0].setPragma("DELETE", named: "journal_mode")
        stores.storeDescriptions[0].setPragma("1234", named: "cache_size")
        try await stores.loadStores()
        try stores.write { try $0.execute(sql: "CREATE TABLE note (title TEXT); INSERT INTO note VALUES ('x')") }
        #expect(try stores.read { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == 1234)
        try stores.close()

        let store = app.supportStore()
        #expect(!FileManager.default.fileExists(atPath: store.sidecar(.wal).path))
        #expect(!FileManager.default.fileExists(atPath: store.sidecar(.shm).path))
        #expect(try PythonSQLite.schema(store).journalMode == "delete")
    }

    @Test func theDefaultStoreIsInWALMode() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Notes", container: app.container)
        try await stores.loadStores()
        try stores.write { try $0.execute(sql: "CREATE TABLE note (title TEXT)") }
        #expect(FileManager.default.fileExists(atPath: app.supportStore().sidecar(.wal).path))
        try stores.close()
        #expect(try PythonSQLite.schema(app.supportStore()).journalMode == "wal")
    }
}

/// What the concurrent writers of a switch test did.
final class WriteLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _all: [String] = []
    private var _afterSwitch: Set<String> = []
    private var _switched = false
    private var _stopped = false
    private var _oldStore: [String: Data] = [:]

    var switched: Bool { lock.withLock { _switched } }
    var stopped: Bool { lock.withLock { _stopped } }
    var all: [String] { lock.withLock { _all } }
    var afterSwitch: Set<String> { lock.withLock { _afterSwitch } }
    var oldStoreAtSwitch: [String: Data] { lock.withLock { _oldStore } }

    func record(_ title: String, startedAfterSwitch: Bool) {
        lock.withLock {
            _all.append(title)
            if startedAfterSwitch { _afterSwitch.insert(title) }
        }
    }

    func markSwitched(oldStore: [String: Data]) { lock.withLock { _switched = true; _oldStore = oldStore } }
    func stop() { lock.withLock { _stopped = true } }
}

/// A container that creates its stores: the description's migrations run on load, for every store.
@Suite struct StoreCreationTests {
    static let migrations: [UpgradeStep.MigrateSchema.Migration] = [
        .init(id: "v1-notes", sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT NOT NULL)"),
        .init(id: "v2-pinned", sql: "ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0; CREATE INDEX note_pinned ON note (pinned)"),
    ]

    @Test func aNewStoreAndANewAccountStoreAreCreatedWithTheirSchemaWhereTheirDescriptionSays() async throws {
        let app = try TestContainer()
        let stores = StoreContainer(name: "Cache", container: app.container)
        var description = StoreDescription(name: "Cache", url: app.container.caches.appending(path: "Cache.sqlite"))
        description.migrations = Self.migrations
        stores.storeDescriptions = [description]
        try await stores.loadStores()

        try stores.write { db in try db.execute(sql: "INSERT INTO note (title, pinned) VALUES ('created by its description', 1)") }
        let account = try stores.accountStore("bob")
        try await account.write { db in try db.execute(sql: "INSERT INTO note (title) VALUES ('bob''s')") }
        try stores.close()

        let accountFile = app.container.caches.appending(path: "Accounts/bob/Cache.sqlite")
        #expect(FileManager.default.fileExists(atPath: accountFile.path), "a Caches store's account stays in Caches")
        #expect(!FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: "Accounts").path))
        let schema = try PythonSQLite.schema(StoreFileSet(main: accountFile))
        #expect(schema.tables.contains("note") && schema.tables.contains("grdb_migrations"))
    }

    @Test func aStoreUpgradedByAPlanAndAFreshStoreAgree() async throws {
        let app = try TestContainer()
        // An installed v1: only the first migration ran, by the app of the day.
        let old = StoreContainer(name: "Notes", container: app.container)
        var v1 = StoreDescription(name: "Notes")
        v1.migrations = Array(Self.migrations.prefix(1))
        old.storeDescriptions = [v1]
        try await old.loadStores()
        try old.write { db in try db.execute(sql: "INSERT INTO note (title) VALUES ('kept')") }
        try old.close()
        // v2 upgrades it with a plan whose migrateSchema step lists the same ids.
        try await Upgrader(container: app.container).upgrade(UpgradePlan(name: "v2") {
            UpgradeStep.migrateSchema(ContainerLocation(.applicationSupport, "Notes.sqlite"), Self.migrations)
        })
        // Loading it with v2's description runs nothing again; a fresh install gets the same schema.
        let upgraded = StoreContainer(name: "Notes", container: app.container)
        var v2 = StoreDescription(name: "Notes")
        v2.migrations = Self.migrations
        upgraded.storeDescriptions = [v2]
        try await upgraded.loadStores()
        let notes = try upgraded.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM note") }
        try upgraded.close()
        let fresh = StoreContainer(name: "Fresh", container: app.container)
        var freshDescription = StoreDescription(name: "Fresh")
        freshDescription.migrations = Self.migrations
        fresh.storeDescriptions = [freshDescription]
        try await fresh.loadStores()
        try fresh.close()

        #expect(notes == 1)
        let sql = { (name: String) throws -> String in
            try PythonSQLite.run("""
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1])
                print(sorted(r[0] for r in c.execute("select sql from sqlite_master where name not like 'sqlite_%' and sql is not null")))
                print(sorted(r[0] for r in c.execute("select identifier from grdb_migrations")))
                """, [app.applicationSupport.appending(path: name).path]).stdout
        }
        #expect(try sql("Notes.sqlite") == sql("Fresh.sqlite"), "same tables, index and migration history")
    }
}
