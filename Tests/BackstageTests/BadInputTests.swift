import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Bad input gets a typed error naming the file and the cause, and the source stays byte-identical.
@Suite struct BadInputTests {
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func fullDestinationFailsClearlyAndLeavesTheSourceIdentical() async throws {
        let local = try TemporaryDirectory()
        let mount = try TestMount(tmpfs: "2m", creating: ["Application Support"])
        let app = try TestContainer(documents: local.url.appending(path: "Documents"), applicationSupport: mount.applicationSupport, keeping: local)
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 1500, walOnly: 200, bodyBytes: 2000)
        let before = snapshot(app.documentsStore())

        await #expect {
            try await Relocator(container: app.container).relocate()
        } throws: { error in
            guard case RelocationError.insufficientSpace(let path, let needed, let available) = error else { return false }
            return path == mount.applicationSupport.path && needed > available
        }
        #expect(snapshot(app.documentsStore()) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount.applicationSupport.path).filter { $0 != ".backstage" }.isEmpty)
    }

    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func readOnlyDestinationFailsClearlyAndLeavesTheSourceIdentical() async throws {
        let local = try TemporaryDirectory()
        let mount = try TestMount(tmpfs: "8m", readOnly: true, creating: ["Application Support"])
        let app = AppContainer(documents: local.url.appending(path: "Documents"), applicationSupport: mount.applicationSupport,
                               caches: local.url.appending(path: "Caches"), temporary: local.url.appending(path: "tmp"))
        try FileManager.default.createDirectory(at: app.documents, withIntermediateDirectories: true)
        let store = StoreFileSet(main: app.documents.appending(path: "Notes.sqlite"))
        try PythonSQLite.writeThenKill(store.main, committed: 50, walOnly: 10)
        let before = snapshot(store)

        await #expect {
            try await Relocator(container: app).relocate()
        } throws: { error in
            guard let error = error as? RelocationError, case .readOnlyDestination = error else { return false }
            return error.path.hasPrefix(mount.directory.path)
        }
        #expect(snapshot(store) == before)
    }

    @Test func truncatedStoreIsRefusedByName() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 500, journalMode: "delete", bodyBytes: 500)
        let handle = try FileHandle(forWritingTo: store.main)
        try handle.truncate(atOffset: 20_000)
        try handle.close()
        let before = snapshot(store)

        await #expect {
            try await Relocator(container: app.container).relocate()
        } throws: { error in
            guard case RelocationError.corruptStore(let path, let reason) = error else { return false }
            return path == store.main.path && reason.contains("truncated")
        }
        #expect(snapshot(store) == before)
    }

    @Test func corruptStoreIsRefusedByName() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 100, journalMode: "delete")
        // Keep the 100-byte header, destroy the schema page behind it.
        var bytes = try Data(contentsOf: store.main)
        bytes.replaceSubrange(100..<4096, with: Data(repeating: 0xA5, count: 3996))
        try bytes.write(to: store.main)
        let before = snapshot(store)

        await #expect {
            try await Relocator(container: app.container).relocate()
        } throws: { error in
            guard let error = error as? RelocationError else { return false }
            switch error {
            case .corruptStore(let path, _), .notADatabase(let path): return path == store.main.path
            default: return false
            }
        }
        #expect(snapshot(store) == before)
    }

    @Test func symlinkWhereAStoreShouldBeIsNeverFollowed() async throws {
        let app = try TestContainer()
        let outside = try TemporaryDirectory()
        let target = outside.url.appending(path: "Real.sqlite")
        try PythonSQLite.createStore(target, rows: 5)
        try FileManager.default.createSymbolicLink(at: app.documentsStore().main, withDestinationURL: target)
        let before = snapshot(outside.url)

        await #expect(throws: RelocationError.symlinkedStore(path: app.documentsStore().main.path)) {
            try await Relocator(container: app.container).relocate()
        }
        #expect(snapshot(outside.url) == before)
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path))
    }

    @Test func plainFileNamedSqliteIsNotADatabase() async throws {
        let app = try TestContainer()
        let url = try app.writeDocument("Export.sqlite", Data("id,title\n1,hello\n".utf8))

        // Found by the scan: it is a user document, left alone.
        let report = try await Relocator(container: app.container).relocate()
        #expect(report.nothingToDo)
        #expect(try Data(contentsOf: url) == Data("id,title\n1,hello\n".utf8))

        // Named explicitly: a typed error naming it.
        await #expect(throws: RelocationError.notADatabase(path: url.path)) {
            try await Relocator(container: app.container).relocate(RelocationOptions(stores: ["Export.sqlite"]))
        }
    }

    @Test func errorsReadAsOneSentenceNamingTheFile() {
        let error = RelocationError.storeInUse(path: "/data/Documents/Notes.sqlite", timeout: 5)
        #expect(error.description == "store in use: another process has /data/Documents/Notes.sqlite open (waited 5 s for its lock); close the app and run again")
        #expect(!error.description.contains("\n"))
    }
}

extension TestMount {
    var applicationSupport: URL { url.appending(path: "Application Support") }
}
