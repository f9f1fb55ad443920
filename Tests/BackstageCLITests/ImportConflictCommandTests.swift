import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Issue 54: what `import` does with what Documents already has. keep-both never imports a copy of
/// it (a link with the same target, a folder holding it all); an entry whose path passes through a
/// link Documents has is refused, naming both; a user's database and its companions (sidecars,
/// `.Name_SUPPORT`) are one unit; a support folder alone is the companion of the database
/// Documents has.
@Suite struct ImportConflictCommandTests {
    typealias Companions = UserStoreCompanionsCommandTests

    /// Writes a tar at `path` with Python's tarfile: `add(t, name, data)`, `link(t, name, target)`.
    func tar(_ path: URL, _ script: String) throws {
        let result = try PythonSQLite.run(
            """
            import sys, tarfile, io
            path = sys.argv[1]
            def add(t, name, data):
                info = tarfile.TarInfo(name); info.size = len(data); info.mode = 0o644; info.mtime = 1700000000
                t.addfile(info, io.BytesIO(data))
            def link(t, name, target):
                info = tarfile.TarInfo(name); info.type = tarfile.SYMTYPE; info.linkname = target; info.mtime = 1700000000
                t.addfile(info)
            def folder(t, name):
                info = tarfile.TarInfo(name); info.type = tarfile.DIRTYPE; info.mode = 0o755; info.mtime = 1700000000
                t.addfile(info)
            t = tarfile.open(path, "w")
            \(script)
            t.close()
            """, [path.path])
        guard result.status == 0 else { throw Failure("python: \(result.stderr)") }
    }

    func link(_ path: URL) -> String? { try? FileManager.default.destinationOfSymbolicLink(atPath: path.path) }

    // MARK: keep-both never copies what Documents has

    @Test func keepBothNeverImportsACopyOfALinkOrAFolderDocumentsAlreadyHas() throws {
        let source = try TestContainer(declaring: [])
        try source.writeDocument("Letter.txt", Data("dear".utf8))
        try source.writeDocument("Trips/Lisbon.md", Data("# Lisbon".utf8))
        try FileManager.default.createSymbolicLink(
            atPath: source.documents.appending(path: "Shortcut.txt").path, withDestinationPath: "Letter.txt")
        try FileManager.default.createDirectory(
            at: source.documents.appending(path: "Empty Folder"), withIntermediateDirectories: true)
        let archive = source.root.appending(path: "docs.tar").path
        #expect(try runProcess(backstageExecutable, ["export", source.root.path, "-o", archive]).status == 0)

        // The same link as the archive's: nothing to import.
        let same = try TestContainer(declaring: [])
        try FileManager.default.createSymbolicLink(
            atPath: same.documents.appending(path: "Shortcut.txt").path, withDestinationPath: "Letter.txt")
        let once = try runProcess(backstageExecutable, ["import", archive, same.root.path, "--on-conflict", "keep-both"])
        #expect(once.status == 0, "\(once.stderr)")
        #expect(!once.stdout.contains("Shortcut 2.txt") && once.stdout.contains("same bytes: Shortcut.txt"), "\(once.stdout)")
        #expect(!FileManager.default.fileExists(atPath: same.documents.appending(path: "Shortcut 2.txt").path))

        // A link elsewhere, files where the archive has folders: copies the first time, never again.
        let target = try TestContainer(declaring: [])
        try FileManager.default.createSymbolicLink(
            atPath: target.documents.appending(path: "Shortcut.txt").path, withDestinationPath: "Other.txt")
        try target.writeDocument("Trips", Data("a file".utf8))
        try target.writeDocument("Empty Folder", Data("a file too".utf8))
        let first = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--on-conflict", "keep-both"])
        #expect(first.status == 0, "\(first.stderr)")
        for renamed in ["Shortcut.txt → Shortcut 2.txt", "Trips → Trips 2", "Empty Folder → Empty Folder 2"] {
            #expect(first.stdout.contains(renamed), "\(first.stdout)")
        }
        let afterFirst = treeDigest(target.documents)

        let second = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--on-conflict", "keep-both"])

        #expect(second.status == 0, "\(second.stderr)")
        #expect(!second.stdout.contains("imported beside existing"), "\(second.stdout)")
        for same in ["Shortcut 2.txt", "Trips 2", "Empty Folder 2", "Letter.txt"] {
            #expect(second.stdout.contains(same), "\(same) named as already there: \(second.stdout)")
        }
        #expect(treeDigest(target.documents) == afterFirst, "no third copy of anything")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: target.documents.path).sorted() == [
                "Empty Folder", "Empty Folder 2", "Letter.txt", "Shortcut 2.txt", "Shortcut.txt", "Trips", "Trips 2",
            ])
        #expect(link(target.documents.appending(path: "Shortcut.txt")) == "Other.txt")
        #expect(link(target.documents.appending(path: "Shortcut 2.txt")) == "Letter.txt")
        #expect(
            FileManager.default.contents(atPath: target.documents.appending(path: "Trips 2/Lisbon.md").path)
                == Data("# Lisbon".utf8))
    }

    // MARK: an entry through a link of Documents is refused

    @Test(arguments: ["skip", "replace", "keep-both"])
    func anEntryThroughALinkDocumentsHasIsRefusedNamingTheEntryAndTheLink(policy: String) throws {
        let target = try TestContainer(declaring: [])
        try target.writeDocument("Real/kept.txt", Data("mine".utf8))
        try target.writeDocument("Nested/readme.txt", Data("nested".utf8))
        try target.writeDocument("Letter.txt", Data("dear".utf8))
        let fileManager = FileManager.default
        try fileManager.createSymbolicLink(atPath: target.documents.appending(path: "Linked").path, withDestinationPath: "Real")
        try fileManager.createSymbolicLink(
            atPath: target.documents.appending(path: "Nested/Inside").path, withDestinationPath: "../Real")
        try fileManager.createSymbolicLink(
            atPath: target.documents.appending(path: "Note link").path, withDestinationPath: "Letter.txt")
        let scratch = try TemporaryDirectory()
        let cases: [(archive: String, entry: String, link: String)] = [
            ("add(t, 'Fresh.txt', b'new'); add(t, 'Linked/new.txt', b'through')", "Linked/new.txt", "Linked"),
            ("folder(t, 'Nested'); add(t, 'Nested/Inside/deep/new.txt', b'through')", "Nested/Inside/deep/new.txt", "Nested/Inside"),
            ("add(t, 'Note link/x.txt', b'under a link to a file')", "Note link/x.txt", "Note link"),
        ]
        let before = treeDigest(target.documents)
        for (index, item) in cases.enumerated() {
            let archive = scratch.url.appending(path: "\(index).tar")
            try tar(archive, item.archive)

            let result = try runProcess(
                backstageExecutable, ["import", archive.path, target.root.path, "--on-conflict", policy])

            #expect(result.status == 3, "\(item.entry) under --on-conflict \(policy): \(result.stdout)")
            #expect(result.stderr.contains("entry \(item.entry):"), "the entry named: \(result.stderr)")
            #expect(result.stderr.contains("\(item.link), a link Documents already has"), "the link named: \(result.stderr)")
            #expect(treeDigest(target.documents) == before, "nothing written, through the link or beside it")
        }
        #expect(!fileManager.fileExists(atPath: target.documents.appending(path: "Real/new.txt").path))
    }

    // MARK: a user's database and its companions are one unit

    /// An archive of a user's Core Data store (consistent copy and support folder), the bytes of its
    /// support folder, and a container whose Documents already has another `Notes.sqlite` of the
    /// user's with a support folder of its own.
    func userStoreArchiveAndOtherNotes() throws -> (
        archive: String, support: [String: Data], target: TestContainer, source: TestContainer
    ) {
        let (app, _) = try Companions.userCoreDataStore()
        let support = Companions.supportFiles(app.documentsStore())
        let archive = app.root.appending(path: "backup.tar.gz").path
        let exported = try runProcess(backstageExecutable, ["export", app.root.path, "-o", archive])
        #expect(exported.status == 0, "\(exported.stderr)")
        let target = try TestContainer(declaring: [])
        try PythonSQLite.createStore(target.documentsStore().main, rows: 3, journalMode: "delete")
        try target.writeDocument(".Notes_SUPPORT/_EXTERNAL_DATA/mine", Data("the other store's".utf8))
        return (archive, support, target, app)
    }

    @Test func keepBothRenamesTheDatabaseAndItsSupportFolderTogether() throws {
        let (archive, support, target, source) = try userStoreArchiveAndOtherNotes()
        defer { withExtendedLifetime(source) {} }
        let original = snapshot(target.documentsStore())

        let result = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--on-conflict", "keep-both"])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Notes.sqlite → Notes 2.sqlite"), "\(result.stdout)")
        #expect(result.stdout.contains(".Notes_SUPPORT → .Notes 2_SUPPORT"), "\(result.stdout)")
        let copy = StoreFileSet(main: target.documents.appending(path: "Notes 2.sqlite"))
        #expect(Companions.supportFiles(copy) == support, "the copy's support folder, byte-identical")
        #expect(try PythonSQLite.inspect(copy, table: "ZNOTE", titleColumn: "ZTITLE").rows == 125)
        #expect(try Companions.externalReferences(copy).count == 12)
        #expect(try Companions.dangling(copy).isEmpty, "every external data reference of the copy resolves")
        #expect(snapshot(target.documentsStore()) == original, "the other store and its support folder untouched")
        let afterFirst = treeDigest(target.documents)

        let again = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--on-conflict", "keep-both"])

        #expect(again.status == 0, "\(again.stderr)")
        #expect(!again.stdout.contains("Notes 3"), "\(again.stdout)")
        #expect(again.stdout.contains("same bytes: Notes 2.sqlite, .Notes 2_SUPPORT"), "\(again.stdout)")
        #expect(treeDigest(target.documents) == afterFirst)

        // The same database, with a file of its external data lost: that file joins it, no third copy.
        let lost = try #require(try Companions.externalReferences(copy).first)
        try FileManager.default.removeItem(at: copy.externalDataFolder.appending(path: lost))
        let mended = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--on-conflict", "keep-both"])

        #expect(mended.status == 0, "\(mended.stderr)")
        #expect(!mended.stdout.contains("Notes 3") && !mended.stdout.contains("_EXTERNAL_DATA/\(lost) 2"), "\(mended.stdout)")
        #expect(treeDigest(target.documents) == afterFirst, "the lost file back, nothing else written")
        #expect(try Companions.dangling(copy).isEmpty)
    }

    @Test func keepBothRenamesTheSidecarsAnArchiveCarriesWithTheirDatabase() throws {
        let (app, _) = try Companions.userCoreDataStore()
        let support = Companions.supportFiles(app.documentsStore())
        // Documents as it is on disk, the live -wal and -shm included (a tar made by hand).
        let archive = app.root.appending(path: "raw.tar").path
        let tarred = try runProcess("/usr/bin/bsdtar", ["-cf", archive, "-C", app.documents.path, "."])
        #expect(tarred.status == 0, "\(tarred.stderr)")
        let target = try TestContainer(declaring: [])
        try PythonSQLite.createStore(target.documentsStore().main, rows: 3, journalMode: "delete")
        let original = snapshot(target.documentsStore())

        let result = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--on-conflict", "keep-both"])

        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: target.documents.path).sorted()
        #expect(names == [".Notes 2_SUPPORT", "Notes 2.sqlite", "Notes 2.sqlite-shm", "Notes 2.sqlite-wal", "Notes.sqlite"])
        let copy = StoreFileSet(main: target.documents.appending(path: "Notes 2.sqlite"))
        #expect(try PythonSQLite.inspect(copy, table: "ZNOTE", titleColumn: "ZTITLE").rows == 125, "the -wal's rows with it")
        #expect(Companions.supportFiles(copy) == support)
        #expect(try Companions.dangling(copy).isEmpty)
        #expect(snapshot(target.documentsStore()) == original, "no -wal of another database beside Notes.sqlite")
        #expect(try PythonSQLite.inspect(target.documentsStore()).rows == 3)
    }

    @Test func skipKeepsTheDatabaseAndItsSupportFolderTogether() throws {
        let (archive, _, target, source) = try userStoreArchiveAndOtherNotes()
        defer { withExtendedLifetime(source) {} }
        let before = treeDigest(target.documents)

        let result = try runProcess(backstageExecutable, ["import", archive, target.root.path])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("kept 2 existing: Notes.sqlite, .Notes_SUPPORT"), "\(result.stdout)")
        #expect(treeDigest(target.documents) == before, "no external data of the archive's store merged into the other's")
    }

    @Test func replaceReplacesTheDatabaseWithItsSupportFilesAndRefusesToLeaveItsWALBehind() throws {
        let (archive, support, target, source) = try userStoreArchiveAndOtherNotes()
        defer { withExtendedLifetime(source) {} }

        let result = try runProcess(backstageExecutable, ["import", archive, target.root.path, "--on-conflict", "replace"])

        #expect(result.status == 0, "\(result.stderr)")
        let store = target.documentsStore()
        #expect(try PythonSQLite.inspect(store, table: "ZNOTE", titleColumn: "ZTITLE").rows == 125)
        #expect(try Companions.dangling(store).isEmpty, "every external data reference resolves")
        #expect(Companions.supportFiles(store).filter { support[$0.key] != nil } == support)

        // Documents' database has committed rows in its -wal: replacing its main file alone would
        // let SQLite apply that -wal to the archive's database.
        let (withWAL, _) = try Companions.userCoreDataStore()
        let before = treeDigest(withWAL.documents, includingSharedMemory: false)
        let refused = try runProcess(backstageExecutable, ["import", archive, withWAL.root.path, "--on-conflict", "replace"])

        #expect(refused.status == 3, "\(refused.stdout)")
        #expect(refused.stderr.contains("entry Notes.sqlite:") && refused.stderr.contains("Notes.sqlite-wal"), "\(refused.stderr)")
        #expect(treeDigest(withWAL.documents, includingSharedMemory: false) == before, "nothing replaced")
    }

    @Test func aSupportFolderAloneJoinsTheDatabaseDocumentsHas() throws {
        let (app, _) = try Companions.userCoreDataStore()
        let support = Companions.supportFiles(app.documentsStore())
        let archive = app.root.appending(path: "backup.zip").path
        #expect(try runProcess(backstageExecutable, ["export", app.root.path, "-o", archive]).status == 0)
        let supportOnly = try Companions.supportOnly(archive, in: app.root)
        let target = try TestContainer(declaring: [])
        #expect(try runProcess(backstageExecutable, ["import", archive, target.root.path]).status == 0)
        let store = target.documentsStore()
        // The user lost some of the database's external data, and all of it.
        let lost = try #require(try Companions.externalReferences(store).first)
        try FileManager.default.removeItem(at: store.externalDataFolder.appending(path: lost))
        #expect(try Companions.dangling(store) == [lost])

        for _ in 0..<2 {
            let result = try runProcess(backstageExecutable, ["import", supportOnly, target.root.path])

            #expect(result.status == 0, "\(result.stderr)")
            #expect(Companions.supportFiles(store) == support, "the support folder whole again")
            #expect(try Companions.dangling(store).isEmpty, "every external data reference resolves")
            try FileManager.default.removeItem(at: store.supportFolder)
        }
    }
}
