import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// Export and import say what they did, and do only what they say.
@Suite struct ArchiveWordTests {
    func tar(_ path: URL, _ script: String) throws {
        let result = try PythonSQLite.run(
            """
            import sys, tarfile, io
            path = sys.argv[1]
            def add(t, name, data, mode=0o644):
                info = tarfile.TarInfo(name); info.size = len(data); info.mode = mode; info.mtime = 1700000000
                t.addfile(info, io.BytesIO(data))
            \(script)
            """, [path.path])
        guard result.status == 0 else { throw Failure("python: \(result.stderr)") }
    }

    @Test func anArchiveInsideTheDocumentsBeingExportedIsRefused() async throws {
        let app = try TestContainer()
        try app.writeDocument("Letter.txt", Data("dear".utf8))
        let inside = app.documents.appending(path: "backup.zip")

        await #expect(
            throws: ExportError(archivePath: inside.path, reason: .insideDocuments(documents: app.documents.path))
        ) {
            try await Exporter(container: app.container).export(to: inside, options: ExportOptions(format: .zip))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: app.documents.path) == ["Letter.txt"])
    }

    @Test func importCountsTheEntriesItWroteNotTheOnesItRead() async throws {
        let app = try TestContainer()
        try app.writeDocument("Trips/Lisbon.md", Data("# Lisbon".utf8))
        try app.writeDocument("Letter.txt", Data("dear".utf8))
        try PythonSQLite.createStore(app.documentsStore().main, rows: 5)
        let archive = app.root.appending(path: "with-store.zip")
        try await Exporter(container: app.container).export(
            to: archive, options: ExportOptions(format: .zip, includeDatabase: true))

        let target = try TestContainer()
        let first = try await Importer(container: target.container).importArchive(archive)
        let second = try await Importer(container: target.container).importArchive(archive)

        #expect(first.entries == 4, "Trips/, Trips/Lisbon.md, Letter.txt and the store's snapshot were read")
        #expect(first.written == 2 && first.bytes == 12, "two documents; the snapshot is read past")
        #expect(second.written == 0 && second.bytes == 0 && Set(second.skipped) == ["Trips/Lisbon.md", "Letter.txt"])
    }

    @Test func keepBothNeverMakesAByteIdenticalCopy() async throws {
        let source = try TestContainer()
        try source.writeDocument("finish line.jpg", Data(repeating: 7, count: 5000))
        let archive = source.root.appending(path: "photos.tar")
        try await Exporter(container: source.container).export(to: archive, options: ExportOptions(format: .tar))
        let target = try TestContainer()
        try target.writeDocument("finish line.jpg", Data(repeating: 1, count: 5000))
        let keepBoth = ImportOptions(onConflict: .keepBoth)

        let first = try await Importer(container: target.container).importArchive(archive, options: keepBoth)
        let second = try await Importer(container: target.container).importArchive(archive, options: keepBoth)

        #expect(first.renamed == [.init(from: "finish line.jpg", to: "finish line 2.jpg")] && first.written == 1)
        #expect(second.renamed.isEmpty && second.identical == ["finish line 2.jpg"] && second.written == 0)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: target.documents.path).sorted() == [
                "finish line 2.jpg", "finish line.jpg",
            ])
    }

    @Test func anImportIntoAContainerThatDoesNotExistIsRefusedAndNothingIsCreated() async throws {
        let scratch = try TemporaryDirectory()
        try Data("x".utf8).write(to: scratch.url.appending(path: "a.txt"))
        let archive = scratch.url.appending(path: "a.tar")
        try tar(archive, "t = tarfile.open(path, 'w'); add(t, 'a.txt', b'x'); t.close()")
        let typo = scratch.url.appending(path: "Contaner")

        await #expect(throws: FileSystemError.self) {
            try await Importer(container: .iOSSandbox(root: typo)).importArchive(archive)
        }
        #expect(!FileManager.default.fileExists(atPath: typo.path))
    }

    @Test func restrictiveModesAreImportedReadableAndWritableByTheOwner() async throws {
        let app = try TestContainer()
        let archive = app.root.appending(path: "modes.tar")
        try tar(
            archive,
            "t = tarfile.open(path, 'w'); add(t, 'w.txt', b'write only', 0o200); add(t, 'none.txt', b'nothing', 0o000); t.close()"
        )

        let report = try await Importer(container: app.container).importArchive(archive)

        #expect(report.written == 2)
        for name in ["w.txt", "none.txt"] {
            let mode = try #require(
                try FileManager.default.attributesOfItem(atPath: app.documents.appending(path: name).path)[
                    .posixPermissions] as? Int)
            #expect(mode & 0o600 == 0o600, "\(name): \(String(mode, radix: 8))")
        }
    }

    @Test(arguments: ["tar", "tar.gz"])
    func aTarCutAtAnEntryBoundaryIsRefusedAsTruncated(format: String) async throws {
        let app = try TestContainer()
        let archive = app.root.appending(path: "cut.\(format)")
        // Three entries, then cut right after the second one's data: no third file, no end blocks.
        try tar(
            archive,
            """
            import gzip
            buf = io.BytesIO(); t = tarfile.open(fileobj=buf, mode='w', format=tarfile.USTAR_FORMAT)
            add(t, 'a.txt', b'a' * 600); add(t, 'b.txt', b'b' * 100); end = buf.tell(); add(t, 'c.txt', b'c' * 10); t.close()
            data = buf.getvalue()[:end]
            open(path, 'wb').write(gzip.compress(data) if path.endswith('.gz') else data)
            """)

        await #expect {
            try await Importer(container: app.container).importArchive(archive)
        } throws: { error in
            (error as? ArchiveError)?.description.contains("truncated") == true
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: app.documents.path).isEmpty)
    }
}

/// An archive made with `includeDatabase` offers its store snapshots, and import restores them.
@Suite struct RestoreDatabasesTests {
    @Test func theSnapshotsOfAnArchiveAreRestoredWhereTheyCameFromWithEveryRow() async throws {
        let source = try TestContainer()
        try source.writeDocument("Letter.txt", Data("dear".utf8))
        try PythonSQLite.writeThenKill(source.supportStore().main, committed: 30, walOnly: 12)
        try source.writeDocument(
            "../Library/Application Support/.Notes_SUPPORT/_EXTERNAL_DATA/blob", Data(repeating: 9, count: 300))
        let archive = source.root.appending(path: "backup.zip")
        let exported = try await Exporter(container: source.container).export(
            to: archive, options: ExportOptions(format: .zip, includeDatabase: true))
        #expect(exported.databases == [".backstage/databases/applicationSupport/Notes.sqlite"])
        let target = try TestContainer()

        let report = try await Importer(container: target.container).importArchive(
            archive, options: ImportOptions(restoreDatabases: true))

        #expect(report.restoredDatabases == ["applicationSupport/Notes.sqlite"] && report.skippedDatabases.isEmpty)
        let restored = try PythonSQLite.inspect(target.supportStore())
        #expect(restored.rows == 42 && restored.integrity == "ok")
        #expect(
            FileManager.default.contents(
                atPath: target.supportStore().supportFolder.appending(path: "_EXTERNAL_DATA/blob").path)?.count == 300)
        #expect(
            FileManager.default.contents(atPath: target.documents.appending(path: "Letter.txt").path)
                == Data("dear".utf8))
        #expect(paths(under: target.root, containing: ".backstage-tmp").isEmpty)
    }

    @Test func aSnapshotWhoseLocationHasAStoreIsRefusedAndNothingIsWritten() async throws {
        let source = try TestContainer()
        try source.writeDocument("Letter.txt", Data("dear".utf8))
        try PythonSQLite.createStore(source.supportStore().main, rows: 4)
        let archive = source.root.appending(path: "backup.tar")
        try await Exporter(container: source.container).export(
            to: archive, options: ExportOptions(format: .tar, includeDatabase: true))
        let target = try TestContainer()
        try PythonSQLite.createStore(target.supportStore().main, rows: 9)
        let before = snapshot(target.applicationSupport)

        await #expect(
            throws: ImportError(
                archivePath: archive.path, entryPath: ".backstage/databases/applicationSupport/Notes.sqlite",
                reason: .storeExists(location: "applicationSupport/Notes.sqlite"))
        ) {
            try await Importer(container: target.container).importArchive(
                archive, options: ImportOptions(restoreDatabases: true))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.documents.path).isEmpty)
        #expect(
            snapshot(target.applicationSupport).filter { !$0.key.hasPrefix(".backstage/") } == before,
            "the store kept as it was")
    }
}
