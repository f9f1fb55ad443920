import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// A container whose Documents hold user files (Unicode names, nested and empty folders), an
/// internal store with its WAL, a Core Data support folder, a dotfile and links in and out.
func documentsFixture() throws -> (TestContainer, [String: Data], TemporaryDirectory) {
    let app = try TestContainer()
    let files: [String: Data] = [
        "Trips/Lisbon — day 1.md": Data("# Lisbon\n".utf8),
        "Trips/Été/Café.txt": Data("crème brûlée\n".utf8),
        "Photos/北京/天坛.jpg": Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }),
        "Letter.txt": Data("dear".utf8),
    ]
    for (path, data) in files { try app.writeDocument(path, data) }
    try FileManager.default.createDirectory(at: app.documents.appending(path: "Empty Folder"), withIntermediateDirectories: true)
    try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 5, walOnly: 2)
    try app.writeDocument(".Notes_SUPPORT/_EXTERNAL_DATA/blob", Data(repeating: 1, count: 100))
    try app.writeDocument(".DS_Store", Data("x".utf8))
    let outside = try TemporaryDirectory()
    try Data("secret".utf8).write(to: outside.url.appending(path: "secret.txt"))
    try FileManager.default.createSymbolicLink(atPath: app.documents.appending(path: "Leak").path, withDestinationPath: outside.path)
    try FileManager.default.createSymbolicLink(atPath: app.documents.appending(path: "Shortcut.txt").path, withDestinationPath: "Letter.txt")
    return (app, files, outside)
}

/// Extracts an archive with an independent reader (Python's tarfile and zipfile; bsdtar for
/// zstd, which Python 3.11 cannot read; 7z from p7zip for 7z) and returns its regular files' bytes and its links.
func readBack(_ archive: URL, format: ArchiveFormat) throws -> (files: [String: Data], links: [String: String]) {
    let out = try TemporaryDirectory()
    let script = """
        import sys, tarfile, zipfile, os, subprocess, stat, json
        path, fmt, out = sys.argv[1], sys.argv[2], sys.argv[3]
        links = {}
        if fmt == "zip":
            z = zipfile.ZipFile(path)
            for info in z.infolist():
                if stat.S_ISLNK(info.external_attr >> 16):
                    links[info.filename] = z.read(info).decode()
                else:
                    z.extract(info, out)
        else:
            if fmt == "tar.zst":
                subprocess.run(["bsdtar", "-xf", path, "-C", out], check=True)
            elif fmt == "7z":
                subprocess.run(["7z", "x", "-o" + out, path], check=True, stdout=subprocess.DEVNULL)
            else:
                tarfile.open(path).extractall(out)
            for root, dirs, files in os.walk(out):
                for name in files + dirs:
                    full = os.path.join(root, name)
                    if os.path.islink(full):
                        links[os.path.relpath(full, out)] = os.readlink(full)
                        if os.path.isdir(full) or os.path.exists(full): pass
            for name in list(links):
                os.unlink(os.path.join(out, name))
        print(json.dumps(links))
        """
    let result = try PythonSQLite.run(script, [archive.path, format.rawValue, out.path])
    guard result.status == 0 else { throw Failure("reading \(archive.lastPathComponent): \(result.stderr)") }
    let links = try JSONDecoder().decode([String: String].self, from: Data(result.stdout.utf8))
    return (snapshot(out.url), links)
}

@Suite struct ExportTests {
    static let formats: [ArchiveFormat] = [.zip, .tar, .tarGz, .tarBz2, .tarXz, .tarZst, .sevenZip]

    @Test(arguments: formats)
    func anIndependentReaderFindsExactlyTheUsersDocuments(format: ArchiveFormat) async throws {
        let (app, files, outside) = try documentsFixture()
        let archive = app.root.appending(path: "export.\(format.rawValue)")

        let report = try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: format))

        #expect(FileManager.default.fileExists(atPath: outside.url.appending(path: "secret.txt").path), "the link leaving Documents led somewhere during the export")
        let contents = try readBack(archive, format: format)
        #expect(contents.files == files, "Unicode names intact, bytes identical, nothing internal, nothing from outside")
        #expect(contents.links == ["Shortcut.txt": "Letter.txt"], "a link inside Documents is kept as a link; the one leaving it is not archived")
        #expect(report.leftOut == [
            LeftOut(path: ".DS_Store", reason: .hidden),
            LeftOut(path: ".Notes_SUPPORT", reason: .internalFile(.coreDataSupport)),
            LeftOut(path: "Leak", reason: .linkOutside),
            LeftOut(path: "Notes.sqlite", reason: .internalFile(.database)),
            LeftOut(path: "Notes.sqlite-shm", reason: .internalFile(.shm)),
            LeftOut(path: "Notes.sqlite-wal", reason: .internalFile(.wal)),
        ], "every entry left out is reported with its reason")
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    @Test func everyLookalikeOfAnInternalFileIsExported() async throws {
        let app = try TestContainer()
        try Lookalikes.write(into: app.documents)
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 2, walOnly: 1)
        let archive = app.root.appending(path: "export.zip")

        let report = try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .zip))

        #expect(try readBack(archive, format: .zip).files == Lookalikes.visible, "Cargo.lock, empty notes.db, Trip-journal... all archived")
        #expect(report.leftOut.map(\.path) == ["Code/.git.lck", "Notes.sqlite", "Notes.sqlite-shm", "Notes.sqlite-wal"])
    }

    @Test(arguments: formats)
    func theSameDocumentsGiveAByteIdenticalArchive(format: ArchiveFormat) async throws {
        let (app, _, _) = try documentsFixture()
        let first = app.root.appending(path: "first.\(format.rawValue)")
        let second = app.root.appending(path: "second.\(format.rawValue)")
        _ = try await Exporter(container: app.container).export(to: first, options: ExportOptions(format: format))
        // Read every file (atime), change permissions: neither may change the archive.
        try shell("cat '\(app.documents.path)'/Letter.txt > /dev/null; touch -a '\(app.documents.path)/Letter.txt'; chmod 600 '\(app.documents.path)/Letter.txt'")
        _ = try await Exporter(container: app.container).export(to: second, options: ExportOptions(format: format))
        #expect(try Data(contentsOf: first) == Data(contentsOf: second))
    }

    @Test func sourceDateEpochClampsModificationTimes() async throws {
        let (app, _, _) = try documentsFixture()
        let archive = app.root.appending(path: "clamped.tar")
        _ = try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .tar, sourceDateEpoch: 1_000_000_000))
        let result = try PythonSQLite.run("""
            import sys, tarfile
            print(sorted(set(m.mtime for m in tarfile.open(sys.argv[1]).getmembers())))
            """, [archive.path])
        #expect(result.stdout == "[1000000000]\n")
    }

    /// Each entry keeps its own modification time and whether it is executable, as the walk read
    /// them: a document, an executable script, a folder and a link, each with a time of its own.
    @Test func entriesKeepTheirOwnTimesAndExecutableBits() async throws {
        let app = try TestContainer()
        try app.writeDocument("Scripts/build.sh", Data("#!/bin/sh\n".utf8))
        try app.writeDocument("Notes/plan.md", Data("# Plan\n".utf8))
        let documents = app.documents.path
        try shell(
            """
            cd '\(documents)' && chmod 751 Scripts/build.sh && chmod 600 Notes/plan.md && ln -s plan.md Notes/latest \\
            && touch -h -d @1500000000 Notes/latest && touch -d @1600000000 Scripts/build.sh \\
            && touch -d @1300000000 Notes/plan.md && touch -d @1400000000 Notes Scripts
            """)
        let archive = app.root.appending(path: "times.tar")
        _ = try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .tar, sourceDateEpoch: nil))
        let result = try PythonSQLite.run("""
            import sys, tarfile
            for m in sorted(tarfile.open(sys.argv[1]).getmembers(), key=lambda m: m.name):
                print(m.name, oct(m.mode), m.mtime)
            """, [archive.path])
        #expect(
            result.stdout == """
                Notes 0o755 1400000000
                Notes/latest 0o777 1500000000
                Notes/plan.md 0o644 1300000000
                Scripts 0o755 1400000000
                Scripts/build.sh 0o755 1600000000

                """)
    }

    @Test func includeDatabaseAddsAConsistentSnapshotAndLeavesTheLiveStoreAlone() async throws {
        let (app, files, _) = try documentsFixture()
        let store = app.supportStore()
        try PythonSQLite.writeThenKill(store.main, committed: 5, walOnly: 3)
        // -shm is SQLite's shared-memory index, rebuilt by any reader after a crash: not content.
        let live = snapshot(store).filter { !$0.key.hasSuffix("-shm") }
        let archive = app.root.appending(path: "with-db.zip")

        let report = try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .zip, includeDatabase: true))

        #expect(snapshot(store).filter { !$0.key.hasSuffix("-shm") } == live, "the live store and its -wal are byte-identical")
        let contents = try readBack(archive, format: .zip)
        #expect(contents.files.filter { !$0.key.hasPrefix(".backstage/") } == files)
        #expect(!contents.files.keys.contains { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") }, "never a sidecar")
        let scratch = try TemporaryDirectory()
        let copy = scratch.url.appending(path: "snapshot.sqlite")
        try contents.files[".backstage/databases/applicationSupport/Notes.sqlite"]?.write(to: copy)
        let rows = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("select count(*) from note").fetchone()[0], c.execute("pragma journal_mode").fetchone()[0])
            """, [copy.path])
        #expect(rows.stdout == "8 delete\n", "the rows only in the -wal are in the snapshot, which is one self-contained file")
        #expect(report.databases.contains(".backstage/databases/applicationSupport/Notes.sqlite"))
        #expect(contents.files[".backstage/databases/documents/.Notes_SUPPORT/_EXTERNAL_DATA/blob"] == Data(repeating: 1, count: 100),
                "Core Data's external data goes with its store's snapshot")
    }

    @Test func cancellingAnExportLeavesNoArchive() throws {
        let (app, _, _) = try documentsFixture()
        let archive = app.root.appending(path: "cancelled.tar.gz")
        let checks = Counter()
        #expect(throws: CancellationError.self) {
            try Exporter(container: app.container).exportAndWait(to: archive, options: ExportOptions(format: .tarGz), isCancelled: { checks.increment() > 3 })
        }
        #expect(!FileManager.default.fileExists(atPath: archive.path))
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }
}

/// The export screen's Cancel: the consumer's loop throws once the export has stopped and
/// removed its partial archive, never just ends as if the archive were written.
@Suite struct ExportStreamTests {
    /// However late the cancellation lands (the export runs on its own thread and may finish
    /// first on a busy machine), the loop tells the truth: it throws `CancellationError` only when
    /// no archive was left, and ends without an error only when the archive is complete.
    @Test func cancellingTheTaskThatIteratesAnExportThrowsOnceTheArchiveIsGone() async throws {
        let (app, _, _) = try documentsFixture()
        for index in 0..<40 {
            try app.writeDocument("Big/\(index).bin", Data((0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }))
        }
        let archive = app.root.appending(path: "cancelled.zip")
        let consumer = Task { () -> Bool in
            var finished = false
            for try await event in Exporter(container: app.container).events(to: archive, options: ExportOptions(format: .zip, level: 9, threads: 1)) {
                switch event {
                case .progress: withUnsafeCurrentTask { $0?.cancel() }
                case .finished: finished = true
                }
            }
            return finished
        }
        switch await consumer.result {
        case .success(let finished):
            #expect(finished, "a loop that ends without an error delivered the report")
            #expect(try readBack(archive, format: .zip).files.count >= 40, "and the archive is complete")
        case .failure(let error):
            #expect(error is CancellationError, "\(error)")
            // No waiting: the loop threw only after the work had stopped and cleaned up.
            #expect(!FileManager.default.fileExists(atPath: archive.path))
        }
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }
}

@Suite struct ExportFailureTests {
    @Test(.enabled(if: runningAsRoot, "a read-only mount needs root"))
    func aStoreOnAReadOnlyDiskIsNamedWithTheCauseNotACode() async throws {
        let staging = try TemporaryDirectory()
        try PythonSQLite.writeThenKill(staging.url.appending(path: "Notes.sqlite"), committed: 5, walOnly: 2)
        try FileManager.default.removeItem(at: staging.url.appending(path: "Notes.sqlite-shm"))
        let mount = try TestMount(tmpfs: "8m")
        try shell("cp -a '\(staging.path)/.' '\(mount.url.path)/' && mount -o remount,ro '\(mount.url.path)'")
        let keep = try TemporaryDirectory()
        let app = try TestContainer(documents: keep.url.appending(path: "Documents"), applicationSupport: mount.url, keeping: keep)
        let archive = keep.url.appending(path: "out.zip")

        do {
            try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .zip, includeDatabase: true))
            Issue.record("a store whose -shm cannot be created was snapshotted")
        } catch {
            let text = "\(error)"
            #expect(text.contains(mount.url.appending(path: "Notes.sqlite").path), "\(text)")
            #expect(text.contains("read-only"), "the cause in words: \(text)")
        }
        #expect(!FileManager.default.fileExists(atPath: archive.path))
    }
}
