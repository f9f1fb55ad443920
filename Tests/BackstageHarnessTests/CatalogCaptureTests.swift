import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

@Suite struct CatalogCaptureTests {
    @Test(arguments: SharedStores.Store.allCases)
    func captureLeavesTheStoreByteIdenticalAndKeepsNoRowContent(store: SharedStores.Store) throws {
        let scratch = try TemporaryDirectory()
        let copy = try SharedStores.copy(store, into: scratch.url)
        let before = snapshot(scratch.url)
        // The longest text value of the store, read by Python from a copy of the copy: it must not be in the catalog.
        let probe = try TemporaryDirectory()
        for file in before.keys { try FileManager.default.copyItem(at: scratch.url.appending(path: file), to: probe.url.appending(path: file)) }
        let longest = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); best = ""
            for (t,) in c.execute("select name from sqlite_master where type='table'").fetchall():
                for col in [r[1] for r in c.execute('pragma table_info("%s")' % t)]:
                    v = c.execute('select max(length("%s")), "%s" from "%s" where typeof("%s") = \\'text\\'' % (col, col, t, col)).fetchone()
                    if v[1] and len(v[1]) > len(best): best = v[1]
            print(best)
            """, [probe.url.appending(path: copy.fileName).path]).stdout.trimmingCharacters(in: .newlines)
        #expect(longest.count > 20, "the store holds text to look for")

        let schema = try StoreCapture.capture(copy)

        #expect(snapshot(scratch.url) == before, "main file, -wal and -shm byte-identical")
        let json = String(decoding: try JSONEncoder().encode(schema), as: UTF8.self)
        #expect(!json.contains(longest.prefix(40)), "no row content in the catalog")
        #expect(schema.journalMode == "wal")
        #expect(schema.coreData?.entities.isEmpty == false)
        #expect(schema.coreData?.versionHashes.isEmpty == false, "the model's version hashes from Z_METADATA")
    }

    @Test func photosCaptureKeepsTheRTreeWithItsShadowTablesAndEveryTrigger() throws {
        let scratch = try TemporaryDirectory()
        let schema = try StoreCapture.capture(try SharedStores.copy(.photos, into: scratch.url))
        let rtree = try #require(schema.objects.first { $0.kind == .virtualTable })
        #expect(rtree.name == "Z_RT_Asset_boundedByRect")
        #expect(rtree.shadowTables == ["Z_RT_Asset_boundedByRect_node", "Z_RT_Asset_boundedByRect_parent", "Z_RT_Asset_boundedByRect_rowid"])
        #expect(!schema.tableNames.contains("Z_RT_Asset_boundedByRect_node"), "shadow tables go with their virtual table")
        #expect(schema.objects.filter { $0.kind == .table }.count == 81)
        #expect(schema.objects.filter { $0.kind == .trigger }.count == 22)
        #expect(schema.objects.filter { $0.kind == .index }.count == 453)
        #expect(schema.coreData?.entities.first { $0.name == "Asset" }?.table == "ZASSET")
    }

    @Test func rowsOnlyInTheWALAreCounted() throws {
        let scratch = try TemporaryDirectory()
        let copy = try SharedStores.copy(.notes, into: scratch.url)
        let counts = try StoreInspector.rowCounts(of: copy)
        let mainOnly = try StoreInspector.rowCounts(of: copy, includingWAL: false)
        #expect(counts.values.reduce(0, +) > mainOnly.values.reduce(0, +), "most of this store's content is only in its -wal")

        let schema = try StoreCapture.capture(copy)

        for (table, rows) in counts where schema.tables[table] != nil { #expect(schema.tables[table]?.rows == rows, "\(table)") }
    }

    @Test func catalogInitWritesACatalogThatChecksAndRefusesToOverwriteIt() throws {
        let scratch = try TemporaryDirectory()
        let photos = try SharedStores.copy(.photos, into: scratch.url)
        let folder = scratch.url.appending(path: "Photos catalog")

        let made = try runProcess(backstageExecutable, ["catalog", "init", folder.path, "--from", photos.main.path, "--at", "applicationSupport/Photos.sqlite", "--app", "Photos"])

        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("applicationSupport/Photos.sqlite (written by the app): 82 tables, 453 indexes, 22 triggers, 0 views, 1 virtual tables"))
        let catalog = try CatalogFolder(at: folder)
        #expect(catalog.manifest.versions.map(\.name) == ["v1"])
        #expect(try runProcess(backstageExecutable, ["catalog", "check", folder.path]).status == 0)
        let again = try runProcess(backstageExecutable, ["catalog", "init", folder.path, "--from", photos.main.path, "--at", "documents/Photos.sqlite"])
        #expect(again.status == 3 && again.stderr.contains("already holds a catalog"))
        #expect(try runProcess(backstageExecutable, ["catalog", "init", scratch.path + "/x", "--from", photos.main.path]).status == 2, "a --from without its --at is a usage error")
    }
}

@Suite struct CatalogCheckTests {
    /// The Notes store from ../shared captured as v1 at documents/NoteStore.sqlite, and a v2 reached by `plan`.
    func catalog(plan: String, v2Tables: (_ all: [String]) -> [CatalogStore]) throws -> (CatalogFolder, TemporaryDirectory) {
        let scratch = try TemporaryDirectory()
        let store = try SharedStores.copy(.notes, into: scratch.url)
        let folder = scratch.url.appending(path: "catalog")
        let schema = try StoreCapture.capture(store)
        var catalog = CatalogFolder(creating: folder, manifest: CatalogManifest(app: "Notes", versions: []))
        try catalog.write(schema, at: "stores/v1.json")
        let v1 = CatalogStore(location: ContainerLocation(.documents, "NoteStore.sqlite"), tables: schema.tableNames, writable: true, schema: "stores/v1.json")
        try Data(plan.utf8).write(to: folder.appending(path: "v1-to-v2.json"))
        catalog.manifest.versions = [CatalogVersion(name: "v1", stores: [v1]), CatalogVersion(name: "v2", plan: "v1-to-v2.json", stores: v2Tables(schema.tableNames))]
        try catalog.writeManifest()
        return (catalog, scratch)
    }

    @Test func aPlanThatAccountsForEveryTablePasses() throws {
        let (catalog, scratch) = try catalog(plan: #"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/NoteStore.sqlite", "to": "applicationSupport/NoteStore.sqlite"}}]}"#) { all in
            [CatalogStore(location: ContainerLocation(.applicationSupport, "NoteStore.sqlite"), tables: all, writable: true, schema: "stores/v1.json")]
        }
        _ = scratch
        #expect(CatalogCheck.problems(in: catalog).isEmpty)
    }

    @Test func aSplitThatForgetsATableOrNamesAnUnknownOneIsNamed() throws {
        let plan = #"""
            {"name": "v1-to-v2", "steps": [{"split": {"store": "documents/NoteStore.sqlite",
              "into": [{"store": "applicationSupport/Notes.sqlite", "tables": ["ZICCLOUDSYNCINGOBJECT", "ZICNOTEDATA", "ZNOPE"]}],
              "discard": ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]}}]}
            """#
        let (catalog, scratch) = try catalog(plan: plan) { _ in
            [CatalogStore(location: ContainerLocation(.applicationSupport, "Notes.sqlite"), tables: ["ZICCLOUDSYNCINGOBJECT", "ZICNOTEDATA"], writable: true, schema: "stores/v1.json")]
        }
        _ = scratch
        let messages = CatalogCheck.problems(in: catalog).map(\.description)
        #expect(messages.contains("v2: plan v1-to-v2, step 1 (split) puts table ZNOPE in applicationSupport/Notes.sqlite, but documents/NoteStore.sqlite has no table ZNOPE"))
        #expect(messages.contains("v2: plan v1-to-v2, step 1 (split) leaves table ZICINVITATION of documents/NoteStore.sqlite unaccounted for: keep, move or discard it"))
        #expect(!messages.contains { $0.contains("ACHANGE") }, "discarded tables are accounted for")

        let cli = try runProcess(backstageExecutable, ["catalog", "check", catalog.url.path])
        #expect(cli.status == 1 && cli.stdout.contains("ZICINVITATION"))
    }
}

@Suite struct CatalogFormatTests {
    /// Validates every JSON file of a catalog against Fixtures/Schemas with Python's jsonschema.
    static func validate(_ catalog: URL) throws -> String {
        let schemas = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appending(path: "Fixtures/Schemas")
        let result = try PythonSQLite.run("""
            import json, sys, glob, os, jsonschema
            schemas, folder = sys.argv[1], sys.argv[2]
            manifest = json.load(open(os.path.join(schemas, "catalog.schema.json")))
            store = json.load(open(os.path.join(schemas, "store.schema.json")))
            catalog = json.load(open(os.path.join(folder, "catalog.json")))
            jsonschema.validate(catalog, manifest, cls=jsonschema.Draft202012Validator)
            for version in catalog["versions"]:
                for s in version["stores"]:
                    jsonschema.validate(json.load(open(os.path.join(folder, s["schema"]))), store, cls=jsonschema.Draft202012Validator)
            print("valid")
            """, [schemas.path, catalog.path])
        return result.stdout + result.stderr
    }

    @Test func theBundledNotesCatalogAndACapturedOneMatchTheJSONSchema() throws {
        #expect(try Self.validate(try CatalogFolder.notes().url) == "valid\n")
        let scratch = try TemporaryDirectory()
        let photos = try SharedStores.copy(.photos, into: scratch.url)
        let folder = scratch.url.appending(path: "catalog")
        #expect(try runProcess(backstageExecutable, ["catalog", "init", folder.path, "--from", photos.main.path, "--at", "documents/Photos.sqlite"]).status == 0)
        #expect(try Self.validate(folder) == "valid\n")
    }

    @Test func aCatalogOfANewerFormatIsRefusedByName() throws {
        let scratch = try TemporaryDirectory()
        try Data(#"{"format": 2, "app": "Future", "versions": []}"#.utf8).write(to: scratch.url.appending(path: "catalog.json"))
        #expect(throws: CatalogError.newerFormat(path: scratch.url.appending(path: "catalog.json").path, format: 2, supported: 1)) {
            try CatalogFolder(at: scratch.url)
        }
    }
}
