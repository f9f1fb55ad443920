import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Every error is `error: ` and one sentence on stderr, with the exit status of the CLI contract,
/// and nothing on disk changes.
@Suite struct OneVoiceTests {
    @Test func aUsageErrorIsOneSentenceAndExitsTwo() throws {
        let result = try runProcess(backstageExecutable, ["relocate", "/tmp", "--strategy", "teleport"])

        #expect(result.status == 2)
        #expect(
            result.stderr.hasPrefix("error: ") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(!result.stderr.contains("Usage:") && !result.stderr.contains("Error:"))
        #expect(result.stderr.contains("'teleport'") && result.stderr.contains("'auto', 'rename' or 'copy'"), "\(result.stderr)")
    }

    @Test func aMissingAppGroupFolderIsAnOperationalErrorNamingTheOptionAndIsNeverCreated() throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 3)
        let nope = app.root.appending(path: "Nope")

        let result = try runProcess(
            backstageExecutable,
            [
                "relocate", app.root.path, "--store", "Notes.sqlite",
                "--app-group", "group.com.example.notes=\(nope.path)", "--to", "group.com.example.notes",
            ])

        #expect(result.status == 3)
        #expect(
            result.stderr
                == "error: --app-group group.com.example.notes=\(nope.path): \(nope.path) is not a folder; give the App Group's existing shared container\n"
        )
        #expect(!FileManager.default.fileExists(atPath: nope.path))
        #expect(FileManager.default.fileExists(atPath: app.documentsStore().main.path))
    }

    @Test func aGroupWithoutItsFolderIsAnOperationalErrorNamingTheOption() throws {
        let app = try TestContainer()

        let result = try runProcess(
            backstageExecutable, ["relocate", app.root.path, "--to", "group.com.example.notes"])

        #expect(result.status == 3)
        #expect(
            result.stderr
                == "error: group.com.example.notes has no folder: add --app-group group.com.example.notes=FOLDER\n")
    }

    @Test func anImportIntoAContainerThatDoesNotExistIsRefusedAndNothingIsCreated() throws {
        let scratch = try TemporaryDirectory()
        let source = try TestContainer()
        try source.writeDocument("Letter.txt", Data("dear".utf8))
        let archive = scratch.path + "/letters.zip"
        #expect(try runProcess(backstageExecutable, ["export", source.root.path, "-o", archive]).status == 0)
        let typo = scratch.path + "/Contaner"

        let result = try runProcess(backstageExecutable, ["import", archive, typo])

        #expect(result.status == 3)
        #expect(result.stderr == "error: \(typo) is not a folder\n")
        #expect(!FileManager.default.fileExists(atPath: typo))
    }

    @Test func anArchiveInsideTheDocumentsBeingExportedIsRefused() throws {
        let app = try TestContainer()
        try app.writeDocument("Letter.txt", Data("dear".utf8))
        let inside = app.documents.appending(path: "backup.zip").path

        let result = try runProcess(backstageExecutable, ["export", app.root.path, "-o", inside])

        #expect(result.status == 3)
        #expect(
            result.stderr
                == "error: \(inside) is inside \(app.documents.path), the folder being exported: write the archive elsewhere\n"
        )
        #expect(!FileManager.default.fileExists(atPath: inside))
    }

    @Test func importSaysHowManyDocumentsItWroteAndSkipsTheSameBytes() throws {
        let source = try TestContainer()
        try source.writeDocument("finish line.jpg", Data(repeating: 7, count: 3000))
        try source.writeDocument("Trips/Lisbon.md", Data("# Lisbon".utf8))
        try PythonSQLite.createStore(source.documentsStore().main, rows: 5)
        let archive = source.root.appending(path: "b.zip").path
        #expect(
            try runProcess(
                backstageExecutable,
                ["export", source.root.path, "--store", "Notes.sqlite", "-o", archive, "--include-database"]
            ).status == 0)
        let target = try TestContainer()

        let first = try runProcess(
            backstageExecutable,
            ["import", archive, target.root.path, "--store", "Notes.sqlite", "--on-conflict", "keep-both"])
        let second = try runProcess(
            backstageExecutable,
            ["import", archive, target.root.path, "--store", "Notes.sqlite", "--on-conflict", "keep-both"])

        #expect(first.status == 0 && first.stdout.hasPrefix("Imported 2 documents "), "\(first.stdout)\(first.stderr)")
        #expect(second.status == 0 && second.stdout.hasPrefix("Imported 0 documents "), "\(second.stdout)")
        #expect(
            second.stdout.contains("already there with the same bytes: Trips/Lisbon.md, finish line.jpg"),
            "\(second.stdout)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: target.documents.path).sorted() == [
                "Trips", "finish line.jpg",
            ])
    }

    @Test func importRestoresTheStoreSnapshotsWhenAsked() throws {
        let source = try TestContainer()
        try source.writeDocument("Letter.txt", Data("dear".utf8))
        try PythonSQLite.createStore(source.supportStore().main, rows: 6)
        let archive = source.root.appending(path: "b.tar.gz").path
        #expect(
            try runProcess(backstageExecutable, ["export", source.root.path, "-o", archive, "--include-database"])
                .status == 0)
        let target = try TestContainer()

        let result = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--restore-databases"])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.hasPrefix("Imported 1 document ")
                && result.stdout.contains("; stores restored: applicationSupport/Notes.sqlite"), "\(result.stdout)")
        #expect(try PythonSQLite.inspect(target.supportStore()).rows == 6)
    }

    @Test func aTarCutAtAnEntryBoundaryExitsThreeAsTruncatedAndWritesNothing() throws {
        let target = try TestContainer()
        let archive = target.root.appending(path: "cut.tar").path
        let python = try PythonSQLite.run("""
            import sys, tarfile, io
            buf = io.BytesIO(); t = tarfile.open(fileobj=buf, mode='w', format=tarfile.USTAR_FORMAT)
            for name, size in [('a.txt', 700), ('b.txt', 10), ('c.txt', 5)]:
                info = tarfile.TarInfo(name); info.size = size; t.addfile(info, io.BytesIO(b'x' * size))
                if name == 'b.txt': end = buf.tell()
            t.close()
            open(sys.argv[1], 'wb').write(buf.getvalue()[:end])
            """, [archive])
        #expect(python.status == 0, "\(python.stderr)")

        let result = try runProcess(backstageExecutable, ["import", archive, target.root.path])

        #expect(result.status == 3)
        #expect(result.stderr == "error: \(archive): the archive is truncated: it ends after an entry, without a tar's end-of-archive blocks\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.documents.path).isEmpty)
    }
}
