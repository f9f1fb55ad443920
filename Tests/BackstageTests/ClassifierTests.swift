import Backstage
import BackstageTestSupport
import Foundation
import Testing

@Suite struct ClassifierTests {
    func kinds(_ app: TestContainer) throws -> [String: FileKind] {
        Dictionary(uniqueKeysWithValues: try FileClassifier(declarations: app.container.declaredStores).scan(app.documents).map { ($0.path, $0.kind) })
    }

    @Test func aDatabaseIsRecognisedByItsHeaderWhateverItsName() throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documents.appending(path: "notes.txt"), rows: 1, journalMode: "delete")
        try app.writeDocument("report.sqlite", Data("not a database".utf8))

        let kinds = try kinds(app)
        #expect(kinds["notes.txt"] == .userDatabase, "a database the app did not declare is the user's")
        #expect(kinds["report.sqlite"] == .document)
        let declared = try FileClassifier(declarations: StoreDeclarations(["notes.txt"])).scan(app.documents)
        #expect(declared.first { $0.path == "notes.txt" }?.kind == .database)
    }

    @Test func sidecarsBelongToTheirDatabaseAndOrphansAreRecognisedByMagic() throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 1, walOnly: 1)
        let wal = try Data(contentsOf: app.documentsStore().sidecar(.wal))
        try app.writeDocument("Gone.sqlite-wal", wal)
        try app.writeDocument("Trip-journal", Data("a diary".utf8))
        try app.writeDocument("Gone.db-journal", Data([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7] + [UInt8](repeating: 0, count: 500)))

        let kinds = try kinds(app)
        #expect(kinds["Notes.sqlite"] == .database)
        #expect(kinds["Notes.sqlite-wal"] == .wal)
        #expect(kinds["Notes.sqlite-shm"] == .shm)
        #expect(kinds["Gone.sqlite-wal"] == .orphanSidecar)
        #expect(kinds["Gone.db-journal"] == .orphanSidecar)
        #expect(kinds["Trip-journal"] == .document)
    }

    /// A folder's names are found again by binary search (a scan holds a few bytes a name, not a
    /// table of them): sidecars among a thousand names sorting before, between and after them
    /// still belong to their database, and an empty database to the journal beside it.
    @Test func sidecarsAreFoundAmongManyNames() throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 1, walOnly: 1)
        let journal = Data([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7] + [UInt8](repeating: 0, count: 500))
        try app.writeDocument("Empty.db", Data())
        try app.writeDocument("Empty.db-journal", journal)
        try app.writeDocument("Gone.db-journal", journal)
        for index in 0..<1_000 {
            for name in ["A \(index).txt", "Notes.sqlite \(index).txt", "Notes.sqlite-a\(index)", "z \(index).txt"] {
                try app.writeDocument(name, Data("note \(index)".utf8))
            }
        }

        let kinds = try kinds(app)
        #expect(kinds.count == 4_006)
        #expect(kinds["Notes.sqlite"] == .database)
        #expect(kinds["Notes.sqlite-wal"] == .wal)
        #expect(kinds["Notes.sqlite-shm"] == .shm)
        #expect(kinds["Empty.db"] == .userDatabase, "an empty database whose first transaction is in its journal")
        #expect(kinds["Empty.db-journal"] == .userDatabaseSidecar)
        #expect(kinds["Gone.db-journal"] == .orphanSidecar)
        #expect(kinds.filter { $0.value == .document }.count == 4_000)
    }

    @Test func supportFoldersLocksTemporariesAndDotfiles() throws {
        let app = try TestContainer()
        try app.writeDocument(".Notes_SUPPORT/_EXTERNAL_DATA/abc", Data(count: 1000))
        try app.writeDocument("app.lock", Data())
        try app.writeDocument(".Notes.sqlite.backstage-tmp", Data())
        try app.writeDocument(".DS_Store", Data("x".utf8))
        try app.writeDocument("Folder/Letter.txt", Data("hi".utf8))

        let entries = try FileClassifier(declarations: app.container.declaredStores).scan(app.documents)
        let support = try #require(entries.first { $0.path == ".Notes_SUPPORT" })
        #expect(support.kind == .coreDataSupport && support.bytes == 1000 && !support.isVisible)
        #expect(!entries.contains { $0.path.hasPrefix(".Notes_SUPPORT/") }, "a support folder is one entry")
        let kinds = try kinds(app)
        #expect(kinds["app.lock"] == .document, "a lock file of the user's (Cargo.lock) is a document")
        #expect(kinds[".Notes.sqlite.backstage-tmp"] == .backstageTemporary)
        #expect(kinds[".DS_Store"] == .hidden)
        #expect(kinds["Folder"] == .document)
        #expect(kinds["Folder/Letter.txt"] == .document)
    }

    /// Each folder is opened in its parent and its files are looked up in it (`openat`,
    /// `fstatat`): twelve levels down, a store is still found by its header and a declared one by
    /// its path, a link to a folder is an entry never descended, and an error names the whole path.
    @Test func deepFoldersAreWalkedFromTheirParents() throws {
        let app = try TestContainer()
        let deep = (1...12).map { "level \($0)" }.joined(separator: "/")
        try app.writeDocument(deep + "/Letter.txt", Data("hi".utf8))
        try PythonSQLite.createStore(app.documents.appending(path: deep + "/Mine.db"), rows: 1, journalMode: "delete")
        try app.writeDocument("Elsewhere/Inside.txt", Data("not here".utf8))
        try FileManager.default.createSymbolicLink(
            atPath: app.documents.appending(path: "level 1/Shortcut").path,
            withDestinationPath: app.documents.appending(path: "Elsewhere").path)

        let kinds = try kinds(app)
        #expect(kinds[deep + "/Mine.db"] == .userDatabase)
        #expect(kinds[deep + "/Letter.txt"] == .document)
        #expect(kinds["level 1/Shortcut"] == .document, "a link is an entry")
        #expect(!kinds.keys.contains("level 1/Shortcut/Inside.txt"), "a link to a folder is never followed")
        let declared = try FileClassifier(declarations: StoreDeclarations([deep + "/Mine.db"])).scan(app.documents)
        #expect(declared.first { $0.path == deep + "/Mine.db" }?.kind == .database)

        let faults = FaultInjector()
        faults.fail(.read, pathContains: "Mine.db", code: EIO)
        let failing = FileClassifier(fileSystem: FileSystem(faults: faults), declarations: app.container.declaredStores)
        #expect {
            try failing.scan(app.documents)
        } throws: { error in
            let error = error as? FileSystemError
            return error?.code == EIO && error?.path == app.documents.appending(path: deep + "/Mine.db").path
        }
    }

    /// A folder of many files has its headers read on two threads: each file is what it is in a
    /// folder of a few (read one by one), and a file that cannot be read stops the scan naming it.
    @Test(arguments: [10, 150])
    func aFolderOfManyFilesIsClassifiedAsOneOfAFew(documents: Int) throws {
        let app = try TestContainer()
        let folder = "Inbox"
        for index in 0..<documents where index != 5 {
            try app.writeDocument("\(folder)/note \(index).txt", Data("note \(index)\n".utf8))
        }
        try PythonSQLite.createStore(app.documents.appending(path: "\(folder)/note 5.txt"), rows: 1, journalMode: "delete")
        try PythonSQLite.writeThenKill(app.documents.appending(path: "\(folder)/Birds.db"), committed: 1, walOnly: 1)
        try app.writeDocument("\(folder)/Gone.db-journal", Data([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7] + [UInt8](repeating: 0, count: 500)))
        try app.writeDocument("\(folder)/Trip-journal", Data("a diary".utf8))
        try app.writeDocument("\(folder)/empty.db", Data())
        try app.writeDocument("\(folder)/Mine.sqlite", Data("SQLite format 3\0".utf8) + Data(repeating: 0, count: 84))

        let kinds = try kinds(app).filter { $0.key.hasPrefix(folder + "/") }
        var expected = Dictionary(uniqueKeysWithValues: (0..<documents).map { ("\(folder)/note \($0).txt", FileKind.document) })
        expected["\(folder)/note 5.txt"] = .userDatabase
        for name in ["Birds.db", "Mine.sqlite"] { expected["\(folder)/\(name)"] = .userDatabase }
        for name in ["Birds.db-wal", "Birds.db-shm"] { expected["\(folder)/\(name)"] = .userDatabaseSidecar }
        expected["\(folder)/Gone.db-journal"] = .orphanSidecar
        for name in ["Trip-journal", "empty.db"] { expected["\(folder)/\(name)"] = .document }
        #expect(kinds == expected)

        let faults = FaultInjector()
        faults.fail(.read, pathContains: "note 77.txt", code: EIO)
        faults.fail(.read, pathContains: "note 7.txt", code: EIO)
        let failing = FileClassifier(fileSystem: FileSystem(faults: faults), declarations: app.container.declaredStores)
        #expect {
            try failing.scan(app.documents)
        } throws: { error in
            let error = error as? FileSystemError
            return error?.code == EIO && error?.path == app.documents.appending(path: "\(folder)/note 7.txt").path
        }
    }

    @Test func auditListsInternalFilesOnly() throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 1, walOnly: 1)
        try app.writeDocument("Letter.txt", Data("hi".utf8))

        let report = try Auditor(container: app.container).audit()

        #expect(report.findings.map(\.path) == ["Notes.sqlite", "Notes.sqlite-shm", "Notes.sqlite-wal"])
        #expect(report.findings.allSatisfy { $0.visible && $0.bytes > 0 })
    }
}

@Suite struct AppContainerTests {
    @Test func iOSSandboxDerivesEveryRootFromOneFolder() {
        let container = AppContainer.iOSSandbox(root: URL(filePath: "/tmp/App"))
        #expect(container.documents.path == "/tmp/App/Documents")
        #expect(container.applicationSupport.path == "/tmp/App/Library/Application Support")
        #expect(container.caches.path == "/tmp/App/Library/Caches")
        #expect(container.temporary.path == "/tmp/App/tmp")
        #expect(container.quarantineDirectory.path == "/tmp/App/Library/Application Support/.backstage/quarantine")
    }

    @Test func xdgReadsOnlyTheEnvironmentItIsGiven() {
        let explicit = AppContainer.xdg(appName: "Notes", environment: [
            "HOME": "/home/ana", "XDG_DATA_HOME": "/data", "XDG_DOCUMENTS_DIR": "/docs", "XDG_CACHE_HOME": "/cache",
        ])
        #expect(explicit.documents.path == "/docs/Notes")
        #expect(explicit.applicationSupport.path == "/data/Notes")
        #expect(explicit.caches.path == "/cache/Notes")

        let defaults = AppContainer.xdg(appName: "Notes", environment: ["HOME": "/home/ana"])
        #expect(defaults.documents.path == "/home/ana/Documents/Notes")
        #expect(defaults.applicationSupport.path == "/home/ana/.local/share/Notes")
        #expect(defaults.caches.path == "/home/ana/.cache/Notes")
        #expect(defaults.temporary.path == "/tmp/Notes")
    }
}
