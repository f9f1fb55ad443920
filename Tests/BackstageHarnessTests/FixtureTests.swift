import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The generator of the bundled Notes catalog (or of `catalog`), run by the tests' `backstage`.
func fixtureGenerator(_ catalog: CatalogFolder? = nil) throws -> FixtureGenerator {
    FixtureGenerator(executable: URL(filePath: backstageExecutable), catalog: try catalog ?? CatalogFolder.notes())
}

func generate(_ layout: String, _ state: FixtureState, size: Int64 = 200_000, seed: UInt64 = 11, catalog: CatalogFolder? = nil,
              in directory: TemporaryDirectory) throws -> (AppContainer, FixtureManifest) {
    let root = directory.url.appending(path: "\(layout)-\(state.rawValue)-\(seed)")
    let generator = try fixtureGenerator(catalog)
    let manifest = try FixtureManifest.generate(FixtureSpec(layout: layout, size: size, state: state, seed: seed), at: root, with: generator)
    return (generator.catalog.container(at: root), manifest)
}

@Suite struct FixtureTests {
    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hash([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hash(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hash(Array(repeating: UInt8(ascii: "a"), count: 1000)) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test func theSameSeedGivesTheSameContainerAndAnotherSeedDoesNot() throws {
        let scratch = try TemporaryDirectory()
        let (_, first) = try generate("v3", .clean, seed: 5, in: scratch)
        let again = try FixtureManifest.generate(FixtureSpec(layout: "v3", size: 200_000, state: .clean, seed: 5), at: scratch.url.appending(path: "again"), with: try fixtureGenerator())
        let (_, other) = try generate("v3", .clean, seed: 6, in: scratch)
        #expect(first.stores == again.stores && first.documents == again.documents)
        #expect(first.stores != other.stores)
        #expect(first.emptyFolders == ["Empty Folder"])
        #expect(first.documents.contains { $0.path == "Photos/北京/天坛.jpg" })
    }

    @Test(arguments: [Int64(300_000), 3_000_000])
    func theSizeIsRespectedWithinHalf(size: Int64) throws {
        let scratch = try TemporaryDirectory()
        let (container, _) = try generate("v1", .clean, size: size, in: scratch)
        let store = StoreFileSet(main: container.documents.appending(path: "Notes.sqlite"))
        // The database file itself, and every file of its support folder (subpaths of a file is empty on Linux).
        let files = [store.main.path] + (FileManager.default.subpaths(atPath: store.supportFolder.path) ?? []).map { store.supportFolder.path + "/" + $0 }
        let bytes = files.reduce(Int64(0)) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int64) ?? 0) }
        #expect(Double(bytes) > Double(size) * 0.5 && Double(bytes) < Double(size) * 1.5, "\(bytes) bytes for \(size)")
    }

    @Test(arguments: ["v1", "v3"])
    func walPendingReallyHasCommittedRowsOnlyInTheWAL(layout: String) throws {
        let scratch = try TemporaryDirectory()
        let (container, manifest) = try generate(layout, .walPending, in: scratch)
        let store = try #require(try CatalogFolder.notes().version(layout).writableStore).location
        let set = StoreFileSet(main: store.url(in: container))
        let withWAL = try PythonSQLite.inspect(set, table: "ZNOTE", titleColumn: "ZTITLE")
        let mainOnly = try PythonSQLite.inspect(set, table: "ZNOTE", titleColumn: "ZTITLE", includingWAL: false)
        #expect(withWAL.rows > mainOnly.rows)
        #expect(withWAL.rows == manifest.stores[store.description]?["ZNOTE"]?.rows)
    }

    @Test(arguments: ["v1", "v2", "v4"])
    func hotJournalReallyHasAHotJournal(layout: String) throws {
        let scratch = try TemporaryDirectory()
        let (container, manifest) = try generate(layout, .hotJournal, in: scratch)
        let location = try #require(try CatalogFolder.notes().version(layout).writableStore).location
        let store = StoreFileSet(main: location.url(in: container))
        let journal = try Data(contentsOf: store.sidecar(.journal))
        #expect(Array(journal.prefix(8)) == [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7], "a journal with a valid header")
        // The database file holds pages of the transaction that never committed: rolling the journal
        // back (on a copy) changes its bytes...
        let raw = try PythonSQLite.run("""
            import sqlite3, sys, shutil, tempfile, os, hashlib
            d = tempfile.mkdtemp(); main = os.path.join(d, "s.sqlite")
            shutil.copy(sys.argv[1], main); shutil.copy(sys.argv[1] + "-journal", main + "-journal")
            before = hashlib.sha256(open(main, "rb").read()).hexdigest()
            c = sqlite3.connect(main); c.execute("select count(*) from sqlite_master").fetchone(); c.close()
            print(before != hashlib.sha256(open(main, "rb").read()).hexdigest(), os.path.exists(main + "-journal"))
            """, [store.main.path])
        #expect(raw.stdout == "True False\n", "the killed transaction reached the database file and the journal undid it: \(raw.stdout)")
        // ...leaving exactly the committed rows.
        let rolledBack = try PythonSQLite.inspect(store, table: "ZNOTE", titleColumn: "ZTITLE")
        #expect(rolledBack.rows == manifest.stores[location.description]?["ZNOTE"]?.rows && rolledBack.integrity == "ok")
    }

    @Test(arguments: ["v1", "v3"])
    func interruptedReallyHasAJournalMidStep(layout: String) throws {
        let scratch = try TemporaryDirectory()
        let (container, _) = try generate(layout, .interrupted, in: scratch)
        let data = try Data(contentsOf: container.backstageDirectory.appending(path: "journal.json"))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let journal = try decoder.decode(UpgradeJournal.self, from: data)
        #expect(journal.step == (layout == "v3" ? .split : .relocate))
        #expect(journal.phase != .done)
        #expect(Upgrader.needsUpgrade(container, try CatalogFolder.notes().chain(from: "v1", to: "v4")[0].plan))
    }

    @Test func bothLocationsAndOrphanSidecarsAreWhatTheySay() throws {
        let scratch = try TemporaryDirectory()
        let (both, manifest) = try generate("v2", .bothLocations, in: scratch)
        #expect(manifest.stores["documents/Notes.sqlite"] == manifest.stores["applicationSupport/Notes.sqlite"])
        #expect(FileManager.default.fileExists(atPath: both.documents.appending(path: "Notes.sqlite").path))

        let (orphans, _) = try generate("v1", .orphanSidecars, in: scratch)
        let findings = try Auditor(container: orphans).audit().findings
        #expect(findings.filter { $0.kind == .orphanSidecar }.map(\.path).sorted() == ["Notes Backup.sqlite-shm", "Notes Backup.sqlite-wal"])
        let wal = try Data(contentsOf: orphans.documents.appending(path: "Notes Backup.sqlite-wal"))
        #expect(wal.count > 32 && Array(wal.prefix(3)) == [0x37, 0x7f, 0x06])
    }

    @Test(arguments: FixtureState.allCases)
    func theCatalogsPlansTakeEveryV1StateToV4KeepingEveryNote(state: FixtureState) async throws {
        let scratch = try TemporaryDirectory()
        let (container, manifest) = try generate("v1", state, in: scratch)
        let notes = try #require(manifest.stores["documents/Notes.sqlite"]?["ZNOTE"])

        for (plan, _) in try CatalogFolder.notes().chain(from: "v1", to: "v4") {
            try await Upgrader(container: container).upgrade(plan)
        }

        let v4 = try FixtureManifest.read(container: container, spec: manifest.spec, rows: manifest.rows)
        let kept = try #require(v4.stores["applicationSupport/Accounts/1001/UserData.sqlite"])
        #expect(kept["ZNOTE"]?.rows == notes.rows)
        #expect(kept["ZFOLDER"] == manifest.stores["documents/Notes.sqlite"]?["ZFOLDER"])
        #expect(kept["ZATTACHMENT"] == manifest.stores["documents/Notes.sqlite"]?["ZATTACHMENT"])
        #expect(v4.stores["caches/Cache.sqlite"]?["ZTHUMBNAIL"] == manifest.stores["documents/Notes.sqlite"]?["ZTHUMBNAIL"])
        #expect(v4.documents == manifest.documents.filter { !$0.path.hasPrefix("Notes Backup") })
        #expect(try Auditor(container: container).audit().isClean)
        for (plan, _) in try CatalogFolder.notes().chain(from: "v1", to: "v4") { #expect(!Upgrader.needsUpgrade(container, plan)) }
    }
}
