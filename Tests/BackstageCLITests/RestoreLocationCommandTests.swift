import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Issue 54: `import --restore-databases` puts a store where the app keeps it now. A snapshot of a
/// v1 store (in Documents) restored into a container of a later version goes where the plans'
/// relocations move it, never back into Documents, the folder users see; with nothing saying where
/// the app keeps it, it is refused, naming the location and why.
@Suite struct RestoreLocationCommandTests {
    static let notes = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "Fixtures/Notes")

    /// An export with `--include-database` of a v1 container: its store in Documents (42 rows), a letter.
    /// The source container is returned with it: the archive lies in its folder.
    func v1Backup() throws -> (archive: String, source: TestContainer) {
        let source = try TestContainer(declaring: ["Notes.sqlite"])
        try PythonSQLite.createStore(source.documentsStore().main, rows: 42)
        try source.writeDocument("Letter.txt", Data("dear".utf8))
        let archive = source.root.appending(path: "v1-backup.zip").path
        let exported = try runProcess(
            backstageExecutable, ["export", source.root.path, "-o", archive, "--include-database", "--store", "Notes.sqlite"])
        #expect(exported.status == 0, "\(exported.stderr)")
        return (archive, source)
    }

    func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }

    @Test(arguments: [
        ["--plan", notes.appending(path: "plans/v1-to-v2.json").path],
        ["--catalog", notes.path],
    ])
    func aV1SnapshotGoesWhereThePlansMoveTheStoreNotIntoDocuments(declaring: [String]) throws {
        let (archive, source) = try v1Backup()
        defer { withExtendedLifetime(source) {} }
        let target = try TestContainer(declaring: [])

        let result = try runProcess(
            backstageExecutable, ["import", archive, target.root.path, "--restore-databases"] + declaring)

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("stores restored: applicationSupport/Notes.sqlite"), "\(result.stdout)")
        #expect(result.stdout.contains("documents/Notes.sqlite → applicationSupport/Notes.sqlite"), "\(result.stdout)")
        let restored = try PythonSQLite.inspect(target.supportStore())
        #expect(restored.rows == 42 && restored.integrity == "ok")
        for url in target.documentsStore().allPaths { #expect(!exists(url), "\(url.path) in Documents") }
        #expect(FileManager.default.contents(atPath: target.documents.appending(path: "Letter.txt").path) == Data("dear".utf8))
    }

    @Test func aV1SnapshotWithNothingSayingWhereTheStoreLivesIsRefusedAndNothingIsWritten() throws {
        let (archive, source) = try v1Backup()
        defer { withExtendedLifetime(source) {} }
        let target = try TestContainer(declaring: [])

        let result = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--restore-databases"])

        #expect(result.status == 3, "\(result.stdout)")
        #expect(result.stderr.contains("entry .backstage/databases/documents/Notes.sqlite:"), "\(result.stderr)")
        #expect(result.stderr.contains("snapshot of documents/Notes.sqlite"), "the location and why: \(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.documents.path).isEmpty, "all or nothing")
        #expect(!exists(target.supportStore().main))
    }

    @Test func aV1SnapshotIntoAContainerThatMovedTheStoreOnIsRefusedNamingWhereItIs() throws {
        let (archive, source) = try v1Backup()
        defer { withExtendedLifetime(source) {} }
        let target = try TestContainer(declaring: [])
        try PythonSQLite.createStore(target.supportStore().main, rows: 9)

        let result = try runProcess(
            backstageExecutable, ["import", archive, target.root.path, "--restore-databases", "--store", "Notes.sqlite"])

        #expect(result.status == 3, "\(result.stdout)")
        #expect(result.stderr.contains("already has a store at applicationSupport/Notes.sqlite"), "\(result.stderr)")
        #expect(!exists(target.documentsStore().main), "never a second store in Documents")
        #expect(try PythonSQLite.inspect(target.supportStore()).rows == 9, "the store kept as it was")
    }

    @Test func aV1SnapshotGoesBackIntoDocumentsForAnAppThatKeepsItThere() throws {
        let (archive, source) = try v1Backup()
        defer { withExtendedLifetime(source) {} }
        let target = try TestContainer(declaring: [])

        let result = try runProcess(
            backstageExecutable, ["import", archive, target.root.path, "--restore-databases", "--store", "Notes.sqlite"])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("stores restored: documents/Notes.sqlite") && !result.stdout.contains("→"), "\(result.stdout)")
        #expect(try PythonSQLite.inspect(target.documentsStore()).rows == 42)
        #expect(!exists(target.supportStore().main))
    }
}
