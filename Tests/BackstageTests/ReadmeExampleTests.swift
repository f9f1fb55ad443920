import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The README's Swift examples, run here so they always compile and do what they say (the
/// `// doc:` regions are checked against the documentation by DocumentationTests).
@Suite struct ReadmeExampleTests {
    @Test func theReadmeExampleMovesTheStoreOut() async throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore("MyApp.sqlite").main, committed: 10, walOnly: 10)
        let appRoot = app.root
        var printed: [String] = []
        func print(_ line: String) { printed.append(line) }

        // doc: README.md#1
        let container = AppContainer.iOSSandbox(root: appRoot)
            .declaringStores(StoreDeclarations(["MyApp.sqlite"]))   // the app's own; any other database is the user's
        let audit = try Auditor(container: container).audit()
        if !audit.isClean {
            let report = try await Relocator(container: container).relocate()
            for store in report.moved {
                print("\(store.store) moved to Application Support by \(store.strategy)")
            }
        }
        // end doc

        #expect(printed == ["MyApp.sqlite moved to Application Support by rename"])
        #expect(try PythonSQLite.inspect(app.supportStore("MyApp.sqlite")).rows == 20)
    }

    @Test func theStoreContainerExampleSwitchesToATestStoreAndBack() async throws {
        let app = try TestContainer()
        let appRoot = app.root
        let testStoreURL = app.root.appending(path: "Test.sqlite")

        // doc: README.md#2
        let stores = StoreContainer(name: "Notes", container: .iOSSandbox(root: appRoot))
        stores.storeDescriptions[0].timeout = 10                        // busy timeout, 240 s by default
        try await stores.loadStores()                                   // Library/Application Support/Notes.sqlite
        try stores.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS note (id INTEGER PRIMARY KEY, title TEXT)")
            try db.execute(sql: "INSERT INTO note (title) VALUES ('real')")
        }
        let realStoreURL = try #require(stores.url(for: nil))
        try await stores.switchStore(to: testStoreURL)                  // a test database swapped in
        try stores.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS note (id INTEGER PRIMARY KEY, title TEXT)")
            try db.execute(sql: "INSERT INTO note (title) VALUES ('test')")
        }
        try await stores.switchStore(to: realStoreURL)                  // and swapped back, untouched
        let titles = try stores.read { db in try String.fetchAll(db, sql: "SELECT title FROM note") }
        // end doc

        #expect(titles == ["real"])
        try stores.close()
        #expect(try PythonSQLite.inspect(StoreFileSet(main: testStoreURL)).titles == ["test"])
    }

    /// The DocC article "Upgrading an app's storage" shows one plan in Swift and in JSON: they must agree.
    @Test func theUpgradeArticlesSwiftAndJSONPlansAreTheSamePlan() throws {
        // doc: Sources/Backstage/Backstage.docc/UpgradingStorage.md#0
        let userData = ContainerLocation(.applicationSupport, "UserData.sqlite")
        let plan = UpgradePlan(name: "v1-to-v3") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"),
                                 to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
            UpgradeStep.quarantine()
            UpgradeStep.split(ContainerLocation(.applicationSupport, "Notes.sqlite"), into: [
                .init(store: userData, tables: ["ZFOLDER", "ZNOTE", "ZATTACHMENT"]),
                .init(store: ContainerLocation(.caches, "Cache.sqlite"), tables: ["ZTHUMBNAIL"]),
            ], discard: ["ZLOG"])
            UpgradeStep.migrateSchema(userData, [
                .init(id: "v3-pinned", sql: "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER NOT NULL DEFAULT 0"),
            ])
        }
        // end doc
        let article = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../Sources/Backstage/Backstage.docc/UpgradingStorage.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        let json = try #require(text.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        #expect(try JSONDecoder().decode(UpgradePlan.self, from: Data(json.utf8)) == plan)
    }
}
