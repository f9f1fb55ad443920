import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// What only a non-root user meets: permission bits are enforced. Runs `backstage` as `nobody`
/// through setpriv (the test itself needs root to switch users).
@Suite struct NonRootTests {
    static let canSwitchUser = runningAsRoot && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// Runs `backstage` as nobody on a container it owns.
    func asNobody(_ arguments: [String]) throws -> ProcessResult {
        try runProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", backstageExecutable] + arguments)
    }

    func containerOwnedByNobody() throws -> TestContainer {
        let app = try TestContainer()
        try shell("chmod 755 '\(app.root.path)' && chown -R 65534:65534 '\(app.root.path)'")
        return app
    }

    @Test(.enabled(if: canSwitchUser, "switching to nobody needs root and setpriv"))
    func anUnreadableDocumentStopsTheExportByNameAndLeavesNoArchive() throws {
        let app = try containerOwnedByNobody()
        try app.writeDocument("Letter.txt", Data("dear".utf8))
        let secret = try app.writeDocument("Private/diary.txt", Data("mine".utf8))
        try shell("chown -R 65534:65534 '\(app.documents.path)' && chmod 000 '\(secret.path)'")
        let archive = app.root.appending(path: "out.zip")

        let result = try asNobody(["export", app.root.path, "--store", "Notes.sqlite", "-o", archive.path])

        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("error: ") && result.stderr.contains(secret.path) && result.stderr.contains("Permission denied"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: archive.path), "no archive that silently lacks the diary")
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    @Test(.enabled(if: canSwitchUser, "switching to nobody needs root and setpriv"))
    func restrictiveModesAreImportedReadableAndWritableByTheOwner() throws {
        let app = try containerOwnedByNobody()
        let archive = app.root.appending(path: "modes.tar")
        let python = try PythonSQLite.run("""
            import sys, tarfile, io
            t = tarfile.open(sys.argv[1], 'w')
            for name, data, mode in [('w.txt', b'write only', 0o200), ('none.txt', b'nothing', 0o000)]:
                info = tarfile.TarInfo(name); info.size = len(data); info.mode = mode
                t.addfile(info, io.BytesIO(data))
            t.close()
            """, [archive.path])
        #expect(python.status == 0)
        try shell("chmod 644 '\(archive.path)'")

        let result = try asNobody(["import", archive.path, app.root.path])
        let readBack = try runProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/cat",
                                                           app.documents.appending(path: "w.txt").path, app.documents.appending(path: "none.txt").path])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(readBack.status == 0 && readBack.stdout == "write onlynothing", "the owner reads what it imported: \(readBack.stderr)")
    }

    @Test(.enabled(if: canSwitchUser, "switching to nobody needs root and setpriv"))
    func aDocumentsFolderTheUserCannotWriteIsAReadOnlySourceAndNothingMoves() throws {
        let app = try containerOwnedByNobody()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 8, walOnly: 3)
        try shell("chown -R 65534:65534 '\(app.root.path)' && chmod 555 '\(app.documents.path)'")
        let before = snapshot(app.documentsStore())

        let result = try asNobody(["relocate", app.root.path, "--store", "Notes.sqlite"])

        #expect(result.status == 3)
        #expect(result.stderr == "error: cannot move the store out of \(app.documents.path): the folder is read-only, so the source could not be removed; nothing was changed\n", "\(result.stderr)")
        #expect(snapshot(app.documentsStore()) == before)
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path))
    }
}
