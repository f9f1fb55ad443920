import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// `backstage inspect` on stores pulled off devices: Apple's own, read without being touched.
@Suite struct InspectCommandTests {
    @Test func aRealCoreDataStoreIsDescribedAndMatchedToItsCatalogWithoutBeingTouched() throws {
        let scratch = try TemporaryDirectory()
        let store = try SharedStores.copy(.notes, into: scratch.url)
        let catalog = scratch.url.appending(path: "catalog")
        #expect(try runProcess(backstageExecutable, ["catalog", "init", catalog.path, "--from", store.main.path, "--at", "documents/NoteStore.sqlite"]).status == 0)
        let before = snapshot(scratch.url).filter { !$0.key.hasPrefix("catalog/") }

        let result = try runProcess(backstageExecutable, ["inspect", store.main.path, "--catalog", catalog.path, "--json"])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(snapshot(scratch.url).filter { !$0.key.hasPrefix("catalog/") } == before, "the store, its -wal and -shm byte-identical")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["journalMode"] as? String == "wal" && json["pageSize"] as? Int == 4096)
        #expect((json["framesNotCheckpointed"] as? Int ?? 0) > 0, "most of this store's content is only in its -wal")
        #expect(json["catalogMatch"] as? String == "v1 documents/NoteStore.sqlite")
        let entities = try #require(json["entities"] as? [[String: Any]])
        #expect(entities.first { $0["name"] as? String == "ICNote" }?["rows"] as? Int ?? 0 > 0)
        #expect((json["versionHashes"] as? [String: String])?.isEmpty == false)
    }

    @Test func aCheckpointedStoreHasNoPendingFramesAndAHotJournalIsSaid() throws {
        let scratch = try TemporaryDirectory()
        let clean = scratch.url.appending(path: "clean.sqlite")
        try PythonSQLite.createStore(clean, rows: 20, journalMode: "wal")
        let hot = scratch.url.appending(path: "hot.sqlite")
        try PythonSQLite.writeHotJournal(hot, committed: 30)

        let first = try runProcess(backstageExecutable, ["inspect", clean.path])
        let second = try runProcess(backstageExecutable, ["inspect", hot.path])

        #expect(first.status == 0 && first.stdout.contains("no -wal") && !first.stdout.contains("hot"), "\(first.stdout)")
        #expect(second.status == 0 && second.stdout.contains("a hot -journal"), "\(second.stdout)")
        #expect(FileManager.default.fileExists(atPath: hot.path + "-journal"), "the journal is still there: inspect rolled back only its copy")
    }
}
