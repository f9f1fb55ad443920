import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

@Suite struct ImportTests {
    @Test(arguments: ExportTests.formats)
    func anExportedArchiveIsRestoredExactly(format: ArchiveFormat) async throws {
        let (source, files, _) = try documentsFixture()
        let archive = source.root.appending(path: "export.\(format.rawValue)")
        try await Exporter(container: source.container).export(to: archive, options: ExportOptions(format: format))
        let target = try TestContainer()

        let report = try await Importer(container: target.container).importArchive(archive)

        #expect(snapshot(target.documents) == files, "every document back, bytes identical, Unicode names intact")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: target.documents.appending(path: "Shortcut.txt").path) == "Letter.txt")
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: target.documents.appending(path: "Empty Folder").path, isDirectory: &isFolder) && isFolder.boolValue)
        let sourceTime = try FileManager.default.attributesOfItem(atPath: source.documents.appending(path: "Trips/Été/Café.txt").path)[.modificationDate] as? Date
        let targetTime = try FileManager.default.attributesOfItem(atPath: target.documents.appending(path: "Trips/Été/Café.txt").path)[.modificationDate] as? Date
        #expect(sourceTime.map { Int($0.timeIntervalSince1970) } == targetTime.map { Int($0.timeIntervalSince1970) }, "modification time kept")
        #expect(report.bytes == Int64(files.values.reduce(0) { $0 + $1.count }))
        #expect(paths(under: target.root, containing: ".backstage-tmp").isEmpty, "no staging folder left")
    }

    @Test func userFilesNamedLikeInternalOnesAreImported() async throws {
        let source = try TestContainer()
        try Lookalikes.write(into: source.documents)
        let archive = source.root.appending(path: "lookalikes.tar.gz")
        try await Exporter(container: source.container).export(to: archive, options: ExportOptions(format: .tarGz))
        let target = try TestContainer()

        try await Importer(container: target.container).importArchive(archive)

        #expect(snapshot(target.documents) == Lookalikes.visible, "Cargo.lock, an empty notes.db, Trip-journal... restored")
    }

    @Test(arguments: HostileArchive.allCases)
    func anUnsafeArchiveIsRefusedWithNothingWritten(hostile: HostileArchive) async throws {
        // The container sits alone in a folder of its own: an escaping entry would land in that
        // folder or above it, and nothing else writes there while the test runs.
        let surroundings = try TemporaryDirectory()
        let app = try TestContainer(base: surroundings.url)
        try app.writeDocument("Existing/kept.txt", Data("mine".utf8))
        try hostile.prepare(app)
        let archives = try TemporaryDirectory()
        let archive = try hostile.write(in: archives.url)
        let excluded: Set<String> = [app.root.lastPathComponent + "/Library/Application Support/.backstage"]
        let before = tree(surroundings.url, excluding: excluded)

        await #expect {
            try await Importer(container: app.container).importArchive(archive, options: ImportOptions(limits: hostile.limits))
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            switch (hostile.expected, error.reason) {
            case (.exceedsFreeSpace, .exceedsFreeSpace), (.compressionRatio, .archiveCompressionRatio): return error.archivePath == archive.path
            default: break
            }
            return error.reason == hostile.expected && error.archivePath == archive.path && !error.entryPath.isEmpty
        }
        #expect(tree(surroundings.url, excluding: excluded) == before, "Documents, the rest of the container and its surroundings unchanged")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/backstage-evil.txt"))
    }

    @Test func theErrorNamesTheArchiveTheEntryAndTheRule() async throws {
        let app = try TestContainer()
        let archives = try TemporaryDirectory()
        let archive = try HostileArchive.parentComponent.write(in: archives.url)
        do {
            try await Importer(container: app.container).importArchive(archive)
            Issue.record("a zip-slip archive was imported")
        } catch let error as ImportError {
            #expect(error.entryPath == "../evil.txt")
            #expect(error.description == "\(archive.path): entry ../evil.txt: its path climbs out of the folder with \"..\", refused")
        }
    }

    @Test func setuidAndSetgidBitsAreStripped() async throws {
        let app = try TestContainer()
        let archives = try TemporaryDirectory()
        let archive = archives.url.appending(path: "tool.tar")
        let result = try PythonSQLite.run("""
            import sys, tarfile, io
            with tarfile.open(sys.argv[1], "w") as t:
                i = tarfile.TarInfo("bin/tool"); i.mode = 0o6755; data = b"#!/bin/sh\\n"; i.size = len(data)
                t.addfile(i, io.BytesIO(data))
            """, [archive.path])
        #expect(result.status == 0)

        let report = try await Importer(container: app.container).importArchive(archive)

        let mode = try FileManager.default.attributesOfItem(atPath: app.documents.appending(path: "bin/tool").path)[.posixPermissions] as? Int
        #expect(mode == 0o755)
        #expect(report.strippedModes == ["bin/tool"])
    }

    @Test func aNameDifferingOnlyByCaseFromAnExistingDocumentIsRefused() async throws {
        let app = try TestContainer()
        try app.writeDocument("readme.txt", Data("mine".utf8))
        let archives = try TemporaryDirectory()
        let archive = try zipArchive(in: archives.url, ["README.txt": "theirs"])
        let before = snapshot(app.documents)
        await #expect(throws: ImportError(archivePath: archive.path, entryPath: "README.txt", reason: .caseCollision(with: "readme.txt"))) {
            try await Importer(container: app.container).importArchive(archive)
        }
        #expect(snapshot(app.documents) == before)
    }

    /// Entries of one folder far apart, a folder named after its files, deep paths climbing back up:
    /// every file arrives, none is taken for a duplicate or a collision of another.
    @Test func anArchiveWrittenInAnyOrderImportsEveryEntry() async throws {
        let app = try TestContainer()
        let archives = try TemporaryDirectory()
        let files = [
            "a/1": "one", "b/1": "two", "a/2": "three", "a/b/3": "four", "b/1x": "five", "c/d/e/f": "six",
            "c/d/g": "seven", "A1": "eight", "c/h": "nine", "a/b/c/d/e/f/g.txt": "ten",
        ]
        let order = ["a/1", "b/1", "a/2", "a/", "a/b/3", "b/1x", "c/d/e/f", "c/d/g", "A1", "c/h", "a/b/c/d/e/f/g.txt", "c/"]
        let archive = archives.url.appending(path: "order.tar")
        let list = archives.url.appending(path: "order.json")
        try JSONEncoder().encode(order.map { [$0, files[$0] ?? ""] }).write(to: list)
        let result = try PythonSQLite.run("""
            import sys, tarfile, io, json
            with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
                for name, text in json.load(open(sys.argv[2])):
                    i = tarfile.TarInfo(name.rstrip("/")); i.mtime = 1700000000
                    if name.endswith("/"):
                        i.type = tarfile.DIRTYPE; i.mode = 0o755; t.addfile(i)
                    else:
                        data = text.encode(); i.size = len(data); t.addfile(i, io.BytesIO(data))
            """, [archive.path, list.path])
        try #require(result.status == 0, "\(result.stderr)")
        let report = try await Importer(container: app.container).importArchive(archive)
        #expect(report.written == files.count)
        for (path, text) in files {
            #expect(try Data(contentsOf: app.documents.appending(path: path)) == Data(text.utf8), "\(path)")
        }
    }

    @Test func skipKeepsWhatDocumentsHas() async throws {
        let (app, archive, archives) = try conflictFixture()
        defer { _ = archives }
        let report = try await Importer(container: app.container).importArchive(archive, options: ImportOptions(onConflict: .skip))
        #expect(snapshot(app.documents) == ["Notes/a.txt": Data("mine".utf8), "Notes/b.txt": Data("new".utf8), "Other.txt": Data("mine too".utf8)])
        #expect(report.skipped == ["Notes/a.txt"])
    }

    @Test func replaceWritesTheArchivesFile() async throws {
        let (app, archive, archives) = try conflictFixture()
        defer { _ = archives }
        let report = try await Importer(container: app.container).importArchive(archive, options: ImportOptions(onConflict: .replace))
        #expect(snapshot(app.documents) == ["Notes/a.txt": Data("theirs".utf8), "Notes/b.txt": Data("new".utf8), "Other.txt": Data("mine too".utf8)])
        #expect(report.replaced == ["Notes/a.txt"])
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    @Test func keepBothImportsBesideUnderAFreeName() async throws {
        let (app, archive, archives) = try conflictFixture()
        try app.writeDocument("Notes/a 2.txt", Data("older copy".utf8))
        let report = try await Importer(container: app.container).importArchive(archive, options: ImportOptions(onConflict: .keepBoth))
        #expect(snapshot(app.documents) == [
            "Notes/a.txt": Data("mine".utf8), "Notes/a 2.txt": Data("older copy".utf8), "Notes/a 3.txt": Data("theirs".utf8),
            "Notes/b.txt": Data("new".utf8), "Other.txt": Data("mine too".utf8),
        ])
        #expect(report.renamed == [ImportReport.Renamed(from: "Notes/a.txt", to: "Notes/a 3.txt")])
        withExtendedLifetime(archives) {}
    }

    @Test func replaceNeverTurnsAFolderIntoAFile() async throws {
        let app = try TestContainer()
        try app.writeDocument("Photos/kept.jpg", Data("jpg".utf8))
        let archives = try TemporaryDirectory()
        let archive = try zipArchive(in: archives.url, ["Photos": "a file named like the folder", "new.txt": "new"])
        let before = snapshot(app.documents)
        await #expect(throws: ImportError(archivePath: archive.path, entryPath: "Photos", reason: .conflict(existing: "Photos"))) {
            try await Importer(container: app.container).importArchive(archive, options: ImportOptions(onConflict: .replace))
        }
        #expect(snapshot(app.documents) == before, "not even new.txt was moved in")
    }

    @Test func cancellingAnImportLeavesDocumentsAsItWas() async throws {
        let app = try TestContainer()
        try app.writeDocument("kept.txt", Data("mine".utf8))
        let archives = try TemporaryDirectory()
        var entries: [String: String] = [:]
        for n in 0..<2_000 { entries["many/f\(n).txt"] = String(repeating: "\(n)", count: 100) }
        let archive = try zipArchive(in: archives.url, entries)
        let before = tree(app.root, excluding: ["Library/Application Support/.backstage"])

        // The engine checks for cancellation before each entry and each block; stop it at the 1000th check (about 500 entries in).
        let checks = Counter()
        var progressEvents = 0
        #expect(throws: CancellationError.self) {
            try Importer(container: app.container).importAndWait(archive, progress: { _ in progressEvents += 1 }, isCancelled: { checks.increment() > 1_000 })
        }

        #expect(progressEvents >= 1, "progress was reported before the cancellation")
        #expect(tree(app.root, excluding: ["Library/Application Support/.backstage"]) == before)
    }

    @Test(arguments: ConflictPolicy.allCases)
    func aNameDifferingOnlyByNormalizationIsTheSameDocument(policy: ConflictPolicy) async throws {
        let app = try TestContainer()
        let nfd = "Cafe\u{301}.txt"
        try app.writeDocument(nfd, Data("mine".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: app.documents.path).map { Array($0.utf8) } == [Array(nfd.utf8)])
        let archives = try TemporaryDirectory()
        let archive = try zipArchive(in: archives.url, ["Caf\u{E9}.txt": "theirs"])

        let report = try await Importer(container: app.container).importArchive(archive, options: ImportOptions(onConflict: policy))

        let names = try FileManager.default.contentsOfDirectory(atPath: app.documents.path).sorted()
        switch policy {
        case .skip:
            #expect(names.map { Array($0.utf8) } == [Array(nfd.utf8)])
            #expect(try Data(contentsOf: app.documents.appending(path: nfd)) == Data("mine".utf8))
            #expect(report.skipped == [nfd])
        case .replace:
            #expect(names.map { Array($0.utf8) } == [Array(nfd.utf8)], "replaced under the name the user already had, never a second Café")
            #expect(try Data(contentsOf: app.documents.appending(path: nfd)) == Data("theirs".utf8))
        case .keepBoth:
            #expect(names == ["Cafe\u{301} 2.txt", nfd].sorted())
        }
    }

    @Test func aBackupRestoresIntoItsOwnContainer() async throws {
        let app = try TestContainer()
        let files: [String: Data] = ["Cafe\u{301}/Cre\u{300}me.txt": Data("nfd".utf8), "σοφία.txt": Data("greek".utf8), "Straße.txt": Data("street".utf8)]
        for (path, data) in files { try app.writeDocument(path, data) }
        for format in [ArchiveFormat.zip, .tarGz] {
            let archive = app.root.appending(path: "backup.\(format.rawValue)")
            try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: format))
            let skipped = try await Importer(container: app.container).importArchive(archive)
            #expect(skipped.skipped.count == files.count, "every document is already there: \(format)")
            try await Importer(container: app.container).importArchive(archive, options: ImportOptions(onConflict: .replace))
            #expect(snapshot(app.documents) == files)
            #expect(try FileManager.default.contentsOfDirectory(atPath: app.documents.appending(path: "Cafe\u{301}").path).count == 1, "no second spelling of a name")
        }
    }

    @Test func aNameDifferingByFullCaseFoldingFromAnExistingDocumentIsRefused() async throws {
        let app = try TestContainer()
        try app.writeDocument("Straße.txt", Data("mine".utf8))
        let archives = try TemporaryDirectory()
        let archive = try zipArchive(in: archives.url, ["STRASSE.txt": "theirs"])
        await #expect(throws: ImportError(archivePath: archive.path, entryPath: "STRASSE.txt", reason: .caseCollision(with: "Straße.txt"))) {
            try await Importer(container: app.container).importArchive(archive)
        }
    }

    @Test(.enabled(if: runningAsRoot, "a bind mount needs root"))
    func anImportIntoABindMountedDocumentsFolderWorks() async throws {
        let real = try TemporaryDirectory()
        let bound = try TestMount(binding: real.url)
        let keep = try TemporaryDirectory()
        let app = try TestContainer(documents: bound.url, applicationSupport: keep.url.appending(path: "Application Support"), keeping: keep)
        let archives = try TemporaryDirectory()
        let archive = try zipArchive(in: archives.url, ["Notes/a.txt": "one", "b.txt": "two"])

        try await Importer(container: app.container).importArchive(archive)

        #expect(snapshot(real.url) == ["Notes/a.txt": Data("one".utf8), "b.txt": Data("two".utf8)])
        #expect(paths(under: keep.url, containing: ".backstage-tmp").isEmpty)
    }

    @Test func anArchiveReachedThroughALinkIsImported() async throws {
        let app = try TestContainer()
        let archives = try TemporaryDirectory()
        let archive = try zipArchive(in: archives.url, ["a.txt": "through a link"])
        let link = archives.url.appending(path: "latest.zip")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: archive.lastPathComponent)

        let report = try await Importer(container: app.container).importArchive(link)

        #expect(snapshot(app.documents) == ["a.txt": Data("through a link".utf8)])
        #expect(report.archive == link.path)
    }

    @Test(arguments: DamagedArchive.allCases)
    func aDamagedArchiveIsRefusedWithNothingWritten(damage: DamagedArchive) async throws {
        let app = try TestContainer()
        let archives = try TemporaryDirectory()
        let archive = try damage.write(in: archives.url)

        await #expect {
            try await Importer(container: app.container).importArchive(archive)
        } throws: { error in
            guard let error = error as? ArchiveError else { return false }
            return error.archivePath == archive.path && error.message.hasPrefix(damage.messagePrefix)
        }
        #expect(snapshot(app.documents).isEmpty, "no damaged byte reaches Documents")
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    /// Archives other tools write, in the formats import reads (every one of libarchive's but
    /// xar), come back byte for byte: bsdtar's cpio, 7z, ustar, gnutar, pax, shar-less v7 tar,
    /// ISO 9660 and zip, each also compressed where the format allows.
    @Test(arguments: [
        ("cpio", "odc", ""), ("7z", "7zip", ""), ("tar", "ustar", "--bzip2"), ("tar", "gnutar", "--xz"),
        ("tar", "pax", "--lzma"), ("tar", "v7", "--zstd"), ("iso", "iso9660", ""), ("zip", "zip", ""),
        ("cpio", "newc", "--lz4"),
    ])
    func archivesOtherToolsWriteAreImported(suffix: String, format: String, filter: String) async throws {
        let folder = try TemporaryDirectory()
        let files = ["Trip/Notes.txt": Data("Day one\n".utf8), "Trip/photo.jpg": Data((0..<70_000).map { UInt8($0 % 251) })]
        let archive = try Self.bsdtar(files, as: "trip.\(suffix)", format: format, filter: filter, in: folder.url)
        let app = try TestContainer()

        try await Importer(container: app.container).importArchive(archive)

        #expect(snapshot(app.documents) == files, "\(format) \(filter): every file back")
    }

    /// A xar archive (read by libarchive only through libxml2, which Backstage does not load) is
    /// refused with an ``ArchiveError`` naming it, nothing written.
    @Test func aXarArchiveIsRefusedByName() async throws {
        let folder = try TemporaryDirectory()
        let archive = try Self.bsdtar(["Notes.txt": Data("Day one\n".utf8)], as: "notes.xar", format: "xar", in: folder.url)
        let app = try TestContainer()

        await #expect {
            try await Importer(container: app.container).importArchive(archive)
        } throws: { error in
            (error as? ArchiveError)?.archivePath == archive.path
        }
        #expect(snapshot(app.documents).isEmpty)
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    /// An archive refused before its first entry (a format import does not read, a file that is
    /// no archive) leaves the container's folder as it was: no Documents, no lock, no staging.
    @Test func anArchiveRefusedBeforeItsFirstEntryLeavesAnEmptyContainerEmpty() async throws {
        let folder = try TemporaryDirectory()
        let xar = try Self.bsdtar(["Notes.txt": Data("Day one\n".utf8)], as: "notes.xar", format: "xar", in: folder.url)
        let text = folder.url.appending(path: "notes.zip")
        try Data(String(repeating: "Not an archive, only text named like one.\n", count: 40).utf8).write(to: text)
        for archive in [xar, text] {
            let root = folder.url.appending(path: "App-\(archive.lastPathComponent)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: false)
            let container = AppContainer(
                documents: root.appending(path: "Documents"),
                applicationSupport: root.appending(path: "Library/Application Support"),
                caches: root.appending(path: "Library/Caches"), temporary: root.appending(path: "tmp"))

            await #expect {
                try await Importer(container: container).importArchive(archive)
            } throws: { error in
                (error as? ArchiveError)?.archivePath == archive.path
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).isEmpty, "\(archive.lastPathComponent)")
        }
    }

    /// `files` (paths under a folder of their own in `folder`) archived by bsdtar as `name`, in
    /// `format`, through `filter` (a bsdtar option such as `--xz`) when not empty.
    static func bsdtar(
        _ files: [String: Data], as name: String, format: String, filter: String = "", in folder: URL
    ) throws -> URL {
        let input = folder.appending(path: "in")
        for (path, data) in files {
            let url = input.appending(path: path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
        let archive = folder.appending(path: name)
        let tops = Set(files.keys.map { String($0.split(separator: "/")[0]) }).sorted()
        let written = try runProcess(
            "/usr/bin/bsdtar", (filter.isEmpty ? [] : [filter]) + ["--format", format, "-cf", archive.path, "-C", input.path] + tops)
        try #require(written.status == 0, "bsdtar: \(written.stderr)")
        return archive
    }

    @Test func aDamagedArchiveIsAnArchiveErrorNotAnEmptyImport() async throws {
        let (source, _, _) = try documentsFixture()
        let archive = source.root.appending(path: "export.tar.gz")
        try await Exporter(container: source.container).export(to: archive, options: ExportOptions(format: .tarGz))
        var bytes = try Data(contentsOf: archive)
        bytes = bytes.prefix(bytes.count / 2)
        try bytes.write(to: archive)
        let target = try TestContainer()
        await #expect(throws: ArchiveError.self) {
            try await Importer(container: target.container).importArchive(archive)
        }
        #expect(snapshot(target.documents).isEmpty)
    }

    @Test func storeSnapshotsOfAnExportAreReadPast() async throws {
        let (source, files, _) = try documentsFixture()
        try PythonSQLite.writeThenKill(source.supportStore().main, committed: 3, walOnly: 2)
        let archive = source.root.appending(path: "with-db.zip")
        let exported = try await Exporter(container: source.container).export(to: archive, options: ExportOptions(format: .zip, includeDatabase: true))
        let snapshots = [".backstage/databases/documents/Notes.sqlite", ".backstage/databases/applicationSupport/Notes.sqlite"]
        #expect(exported.databases == snapshots)
        let target = try TestContainer()

        let report = try await Importer(container: target.container).importArchive(archive)

        #expect(snapshot(target.documents) == files)
        #expect(report.skippedDatabases == snapshots)
    }
}

/// Documents with `Notes/a.txt` and `Other.txt`; an archive with `Notes/a.txt` (different bytes) and `Notes/b.txt`.
func conflictFixture() throws -> (TestContainer, URL, TemporaryDirectory) {
    let app = try TestContainer()
    try app.writeDocument("Notes/a.txt", Data("mine".utf8))
    try app.writeDocument("Other.txt", Data("mine too".utf8))
    let archives = try TemporaryDirectory()
    let archive = try zipArchive(in: archives.url, ["Notes/a.txt": "theirs", "Notes/b.txt": "new"])
    return (app, archive, archives)
}

/// A zip written by Python's zipfile.
func zipArchive(in folder: URL, _ entries: [String: String]) throws -> URL {
    let url = folder.appending(path: "archive-\(UUID().uuidString.prefix(6)).zip")
    let list = folder.appending(path: "entries-\(UUID().uuidString.prefix(6)).json")
    try JSONEncoder().encode(entries).write(to: list)
    defer { try? FileManager.default.removeItem(at: list) }
    let result = try PythonSQLite.run("""
        import sys, zipfile, json
        with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
            for name, text in sorted(json.load(open(sys.argv[2])).items()): z.writestr(name, text)
        """, [url.path, list.path])
    guard result.status == 0 else { throw Failure(result.stderr) }
    return url
}

/// A counter a synchronous callback can bump.
final class Counter: @unchecked Sendable {
    private var value = 0
    private let lock = NSLock()

    func increment() -> Int { lock.withLock { value += 1; return value } }
}

@Suite struct ImportFailureTests {
    @Test(.enabled(if: runningAsRoot, "a small tmpfs needs root"))
    func aFullDiskIsNamedInDocumentsNotInTheStagingFolder() async throws {
        let mount = try TestMount(tmpfs: "2m")
        let keep = try TemporaryDirectory()
        let app = try TestContainer(documents: mount.url, applicationSupport: keep.url.appending(path: "Application Support"), keeping: keep)
        try app.writeDocument("mine.txt", Data("kept".utf8))
        let archives = try TemporaryDirectory()
        let archive = archives.url.appending(path: "big.tar")
        let made = try PythonSQLite.run("""
            import sys, tarfile, io, os
            with tarfile.open(sys.argv[1], "w") as t:
                data = os.urandom(3 << 20); i = tarfile.TarInfo("Photos/big.bin"); i.size = len(data)
                t.addfile(i, io.BytesIO(data))
            """, [archive.path])
        #expect(made.status == 0)

        do {
            try await Importer(container: app.container).importArchive(archive, options: ImportOptions(limits: ImportLimits(maxTotalBytes: 1 << 30)))
            Issue.record("3 MiB imported into a 2 MiB disk")
        } catch let error as FileSystemError {
            #expect(error.isOutOfSpace)
            #expect(error.path == mount.url.appending(path: "Photos/big.bin").path, "the user's path, never the staging folder: \(error)")
        }
        #expect(snapshot(mount.url) == ["mine.txt": Data("kept".utf8)], "nothing left behind, the user's file untouched")
    }
}
