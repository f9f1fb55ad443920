import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Documents that is not a plain folder: a link to a folder elsewhere (on this disk or another),
/// or a bind mount (same device number, yet `rename` into Application Support fails with EXDEV).
@Suite struct FolderLayoutTests {
    /// An iOS-style container whose Documents is a link to `real`.
    func containerWithLinkedDocuments(to real: URL) throws -> TestContainer {
        let app = try TestContainer()
        try FileManager.default.removeItem(at: app.documents)
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: app.documents.path, withDestinationPath: real.path)
        return app
    }

    static var sharedMemoryAvailable: Bool { FileManager.default.isWritableFile(atPath: "/dev/shm") }

    @Test(arguments: [false, true])
    func aLinkedDocumentsFolderIsAuditedAndItsStoreRelocated(onAnotherDisk: Bool) async throws {
        if onAnotherDisk && !Self.sharedMemoryAvailable { return }
        let elsewhere = try TemporaryDirectory(base: onAnotherDisk ? URL(filePath: "/dev/shm") : FileManager.default.temporaryDirectory)
        let app = try containerWithLinkedDocuments(to: elsewhere.url.appending(path: "Docs"))
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 40, walOnly: 10)
        try app.writeDocument("Letter.txt", Data("hi".utf8))

        let audit = try Auditor(container: app.container).audit()
        #expect(audit.findings.map(\.path) == ["Notes.sqlite", "Notes.sqlite-shm", "Notes.sqlite-wal"], "the audit looks inside the linked folder")

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.strategy) == [onAnotherDisk ? .copy : .rename])
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 50)
        #expect(snapshot(elsewhere.url.appending(path: "Docs")) == ["Letter.txt": Data("hi".utf8)])
        #expect(try Auditor(container: app.container).audit().isClean)
    }

    @Test(.enabled(if: runningAsRoot, "a bind mount needs root"))
    func aBindMountedDocumentsFolderFallsBackToACopy() async throws {
        let real = try TemporaryDirectory()
        let bound = try TestMount(binding: real.url)
        let keep = try TemporaryDirectory()
        let app = try TestContainer(documents: bound.url, applicationSupport: keep.url.appending(path: "Application Support"), keeping: keep)
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 30, walOnly: 12)
        let device = { (path: String) in (try FileManager.default.attributesOfItem(atPath: path)[.systemNumber] as? Int) }
        #expect(try device(bound.url.path) == device(app.applicationSupport.path), "the same device number: only a rename can tell")

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.strategy) == [.copy])
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 42)
        #expect(snapshot(real.url).isEmpty, "nothing of the store left in Documents")
    }

    @Test(arguments: [false, true])
    func aLinkedApplicationSupportReceivesTheStore(onAnotherDisk: Bool) async throws {
        if onAnotherDisk && !Self.sharedMemoryAvailable { return }
        let elsewhere = try TemporaryDirectory(base: onAnotherDisk ? URL(filePath: "/dev/shm") : FileManager.default.temporaryDirectory)
        let app = try TestContainer()
        try FileManager.default.removeItem(at: app.applicationSupport)
        try FileManager.default.createSymbolicLink(atPath: app.applicationSupport.path, withDestinationPath: elsewhere.path)
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 20, walOnly: 5)

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.strategy) == [onAnotherDisk ? .copy : .rename])
        #expect(try PythonSQLite.inspect(StoreFileSet(main: elsewhere.url.appending(path: "Notes.sqlite"))).rows == 25)
        #expect(try Auditor(container: app.container).audit().isClean)
    }
}
