import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// The index of names an import has seen keeps a short fingerprint of each name's hash, not the
/// name: thousands of names in hundreds of folders must all arrive (none taken for a folder, a
/// duplicate or a collision by a fingerprint that matches by chance), and a name that does come
/// back, exactly or in another case, thousands of entries later, must still be refused.
@Suite struct ImportNameIndexTests {
    static let folders = 300
    static let filesPerFolder = 15

    /// A tar of `folders` × `filesPerFolder` small files, folder by folder, then `extra` entries.
    static func archive(in folder: URL, extra: [String] = []) throws -> URL {
        let archive = folder.appending(path: "many.tar")
        let script = """
            import sys, tarfile, io
            folders, per, extra = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
            def add(t, name):
                data = name.encode(); i = tarfile.TarInfo(name); i.size = len(data); i.mtime = 1700000000
                t.addfile(i, io.BytesIO(data))
            with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
                for f in range(folders):
                    for n in range(per): add(t, f"Folder {f}/Sub {f % 7}/file {n}.txt")
                for name in extra: add(t, name)
            """
        let result = try PythonSQLite.run(script, [archive.path, "\(folders)", "\(filesPerFolder)"] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        return archive
    }

    @Test func thousandsOfNamesInHundredsOfFoldersAllArrive() async throws {
        let app = try TestContainer()
        let archives = try TemporaryDirectory()
        let archive = try Self.archive(in: archives.url)

        let report = try await Importer(container: app.container).importArchive(archive)

        #expect(report.written == Self.folders * Self.filesPerFolder)
        let files = snapshot(app.documents)
        #expect(files.count == Self.folders * Self.filesPerFolder)
        for (path, data) in files where data != Data(path.utf8) { Issue.record("\(path) has another file's bytes") }
    }

    @Test(arguments: [
        ("Folder 3/Sub 3/file 4.txt", ImportError.Reason.duplicate),
        ("FOLDER 3/sub 3/File 4.TXT", ImportError.Reason.caseCollision(with: "Folder 3")),
        ("Folder 299/Sub 5/FILE 14.txt", ImportError.Reason.caseCollision(with: "Folder 299/Sub 5/file 14.txt")),
    ])
    func aNameComingBackThousandsOfEntriesLaterIsRefused(name: String, reason: ImportError.Reason) async throws {
        let app = try TestContainer()
        let archives = try TemporaryDirectory()
        let archive = try Self.archive(in: archives.url, extra: [name])

        await #expect(throws: ImportError(archivePath: archive.path, entryPath: name, reason: reason)) {
            try await Importer(container: app.container).importArchive(archive)
        }
        #expect(snapshot(app.documents).isEmpty, "nothing of a refused archive lands in Documents")
    }
}
