import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Issue 54: a store's support folder goes where its database goes. With nothing declared, a Core
/// Data store in Documents (`Notes.sqlite`, its `-wal` and `-shm`, `.Notes_SUPPORT` with the
/// external data its rows reference) is the user's document as a whole: relocate leaves all of it
/// and quarantines none of it, audit lists it as the user's, export archives the database's copy
/// with its support folder and import brings both back; naming it with `--store` moves it whole.
@Suite struct UserStoreCompanionsCommandTests {
    /// A container that declares nothing, with a Core Data store in Documents whose last notes
    /// are only in its `-wal`; returns the external data files its rows reference.
    static func userCoreDataStore() throws -> (app: TestContainer, referenced: [String]) {
        let app = try TestContainer(declaring: [])
        let files = try CoreDataStore.create(app.documentsStore().main, notes: 120)
        let store = app.documentsStore()
        #expect(FileManager.default.fileExists(atPath: store.sidecar(.wal).path), "rows only in the -wal")
        #expect(try externalReferences(store).count == 12, "the store references its external data")
        return (app, files.referenced)
    }

    /// The external data names the rows of `store` reference (`ZATTACHMENT.ZDATA` as 0x02 + UUID, 38
    /// bytes: an inline blob of 300 random bytes may start with 0x02 too),
    /// read by Python's sqlite3 from a scratch copy of the main file and its `-wal`.
    static func externalReferences(_ store: StoreFileSet) throws -> [String] {
        let scratch = try TemporaryDirectory(prefix: "refs")
        for file in [store.main, store.sidecar(.wal)] where FileManager.default.fileExists(atPath: file.path) {
            try FileManager.default.copyItem(at: file, to: scratch.url.appending(path: file.lastPathComponent))
        }
        let result = try PythonSQLite.run(
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            for (blob,) in c.execute("select ZDATA from ZATTACHMENT where substr(ZDATA, 1, 1) = x'02' and length(ZDATA) < 100"):
                print(bytes(blob[1:]).rstrip(b"\\0").decode())
            """, [scratch.url.appending(path: store.fileName).path])
        guard result.status == 0 else { throw Failure("references of \(store.main.path): \(result.stderr)") }
        return result.stdout.split(separator: "\n").map(String.init)
    }

    /// The references of `store` that name no file of its support folder.
    static func dangling(_ store: StoreFileSet) throws -> [String] {
        try externalReferences(store).filter {
            !FileManager.default.fileExists(atPath: store.externalDataFolder.appending(path: $0).path)
        }
    }

    /// A zip of `archive`'s `.Notes_SUPPORT/` entries alone (the database left out), beside it in `folder`.
    static func supportOnly(_ archive: String, in folder: URL) throws -> String {
        let supportOnly = folder.appending(path: "support-only.zip").path
        let zip = try PythonSQLite.run(
            """
            import sys, zipfile
            src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], "w")
            for info in src.infolist():
                if info.filename.startswith(".Notes_SUPPORT/"): dst.writestr(info, src.read(info))
            dst.close()
            """, [archive, supportOnly])
        #expect(zip.status == 0, "\(zip.stderr)")
        return supportOnly
    }

    /// The regular files of the support folder of `store`, by path inside it, with their bytes.
    static func supportFiles(_ store: StoreFileSet) -> [String: Data] { snapshot(store.supportFolder) }

    @Test func relocateLeavesTheUsersStoreWithItsSupportFolderAndNamingItMovesThemTogether() throws {
        let (app, referenced) = try Self.userCoreDataStore()
        let before = snapshot(app.documents)
        let supportBefore = Self.supportFiles(app.documentsStore())
        #expect(supportBefore.count == referenced.count + 1, "the referenced files and one no row references")

        let undeclared = try runProcess(backstageExecutable, ["relocate", app.root.path])

        #expect(undeclared.status == 0, "\(undeclared.stderr)")
        #expect(undeclared.stdout.contains("Left Notes.sqlite: a database not declared by the app"))
        #expect(snapshot(app.documents) == before, "nothing of the user's store moved, its support folder neither")
        let quarantine = app.applicationSupport.appending(path: ".backstage/quarantine")
        #expect(snapshot(quarantine).isEmpty, "nothing quarantined")

        let named = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Notes.sqlite"])

        #expect(named.status == 0, "\(named.stderr)")
        let source = app.documentsStore(), moved = app.supportStore()
        for url in source.allPaths { #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.path) left behind") }
        #expect(Self.supportFiles(moved) == supportBefore, "the support folder moved whole, byte-identical")
        #expect(try Self.externalReferences(moved).count == 12)
        #expect(try Self.dangling(moved).isEmpty, "every external data reference resolves")
        #expect(try PythonSQLite.inspect(moved, table: "ZNOTE", titleColumn: "ZTITLE").rows == 125, "the -wal's rows too")
        #expect(snapshot(quarantine).isEmpty)
    }

    @Test func auditListsTheUsersSupportFolderWithItsDatabaseNotAsAnOrphan() throws {
        let (app, _) = try Self.userCoreDataStore()

        let json = try runProcess(backstageExecutable, ["audit", app.root.path, "--json"])
        let text = try runProcess(backstageExecutable, ["audit", app.root.path])

        #expect(json.status == 0 && text.status == 0, "\(json.stderr)\(text.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((report["findings"] as? [Any])?.isEmpty == true, "no internal file: \(json.stdout)")
        #expect((report["userDatabases"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == ["Notes.sqlite"])
        let support = try #require(report["userDatabaseSupport"] as? [[String: Any]])
        #expect(support.compactMap { $0["path"] as? String } == [".Notes_SUPPORT"])
        #expect(support.first?["kind"] as? String == "user-database-support")
        #expect(text.stdout.contains("Documents is clean"))
        #expect(text.stdout.contains(".Notes_SUPPORT") && text.stdout.contains("user db support"), "\(text.stdout)")
        #expect(!text.stdout.contains("core-data-support"))
    }

    @Test func exportArchivesTheUsersDatabaseWithItsSupportFolderAndImportBringsBothBack() throws {
        let (app, _) = try Self.userCoreDataStore()
        let supportBefore = Self.supportFiles(app.documentsStore())
        let archive = app.root.appending(path: "backup.tar.gz").path

        let exported = try runProcess(backstageExecutable, ["export", app.root.path, "-o", archive])

        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(!exported.stdout.contains("_SUPPORT"), "the support folder is not left out: \(exported.stdout)")
        // Read back by bsdtar, an independent reader.
        let extracted = try TemporaryDirectory(prefix: "extracted")
        let untar = try runProcess("/usr/bin/bsdtar", ["-xf", archive, "-C", extracted.path])
        #expect(untar.status == 0, "\(untar.stderr)")
        let inArchive = StoreFileSet(main: extracted.url.appending(path: "Notes.sqlite"))
        #expect(Self.supportFiles(inArchive) == supportBefore, "every file of the support folder, byte-identical")
        #expect(!FileManager.default.fileExists(atPath: inArchive.sidecar(.wal).path), "a consistent copy, no -wal")
        #expect(try PythonSQLite.inspect(inArchive, table: "ZNOTE", titleColumn: "ZTITLE").rows == 125)
        #expect(try Self.dangling(inArchive).isEmpty)

        let target = try TestContainer(declaring: [])
        let imported = try runProcess(backstageExecutable, ["import", archive, target.root.path])

        #expect(imported.status == 0, "\(imported.stderr)")
        let restored = target.documentsStore()
        #expect(Self.supportFiles(restored) == supportBefore, "the support folder came back with its database")
        #expect(try PythonSQLite.inspect(restored, table: "ZNOTE", titleColumn: "ZTITLE").rows == 125)
        #expect(try Self.externalReferences(restored).count == 12)
        #expect(try Self.dangling(restored).isEmpty, "every external data reference resolves after the import")
    }

    @Test func importRefusesTheSupportFolderOfAStoreTheAppDeclaresAsItRefusesTheStore() throws {
        let (app, _) = try Self.userCoreDataStore()
        let archive = app.root.appending(path: "backup.zip").path
        #expect(try runProcess(backstageExecutable, ["export", app.root.path, "-o", archive]).status == 0)
        // The same archive without its database: only the support folder and its files.
        let supportOnly = try Self.supportOnly(archive, in: app.root)

        for (file, refused) in [(archive, "Notes.sqlite"), (supportOnly, ".Notes_SUPPORT")] {
            let target = try TestContainer(declaring: ["Notes.sqlite"])
            let result = try runProcess(
                backstageExecutable, ["import", file, target.root.path, "--store", "Notes.sqlite"])

            #expect(result.status != 0, "\(file): \(result.stdout)")
            #expect(result.stderr.contains(refused), "\(file): \(result.stderr)")
            #expect(snapshot(target.documents).isEmpty, "\(file): nothing written into Documents")
        }
        // Into a container that declares nothing, the support folder alone has no database: an orphan.
        let target = try TestContainer(declaring: [])
        let orphan = try runProcess(backstageExecutable, ["import", supportOnly, target.root.path])
        #expect(orphan.status != 0 && orphan.stderr.contains(".Notes_SUPPORT"), "\(orphan.stderr)")
        #expect(snapshot(target.documents).isEmpty)
    }
}
