import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Capture and `inspect` of whatever SQLite accepts, as stores pulled off devices are: odd names,
/// damaged files, torn `-wal` frames; `inspect` with the bundled catalog when none is given.
@Suite struct StoresOffDevicesTests {
    @Test func aTornFrameEndsTheLogWhereSQLiteEndsIt() throws {
        let scratch = try TemporaryDirectory()
        let store = scratch.url.appending(path: "torn.sqlite")
        try PythonSQLite.writeThenKill(store, committed: 0, walOnly: 56, bodyBytes: 100)
        // Damage the page of frame 30; without a -shm, SQLite recovers the log from the -wal alone.
        let wal = try FileHandle(forUpdating: URL(filePath: store.path + "-wal"))
        let frame30: UInt64 = 32 + 29 * (4096 + 24)
        try wal.seek(toOffset: frame30 + 24 + 100)
        try wal.write(contentsOf: Data([0xFF, 0xEE]))
        try wal.close()
        try? FileManager.default.removeItem(atPath: store.path + "-shm")
        let copy = scratch.url.appending(path: "copy")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: store.path + suffix, toPath: copy.path + "/torn.sqlite" + suffix) }
        let replayed = try PythonSQLite.run("""
            import sqlite3, sys
            print(sqlite3.connect(sys.argv[1]).execute("pragma wal_checkpoint(passive)").fetchone()[1])
            """, [copy.appending(path: "torn.sqlite").path])

        let result = try runProcess(backstageExecutable, ["inspect", store.path, "--json"])

        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let frames = try #require(json["framesNotCheckpointed"] as? Int)
        #expect(frames > 0 && frames < 30 && "\(frames)\n" == replayed.stdout, "SQLite replays \(replayed.stdout)")
    }

    @Test func aDamagedStoreIsRefusedNamingItsPath() throws {
        let scratch = try TemporaryDirectory()
        let store = scratch.url.appending(path: "whole.sqlite")
        try PythonSQLite.writeThenKill(store, committed: 300, walOnly: 0)
        let cut = scratch.url.appending(path: "cut short.sqlite")
        try Data(try Data(contentsOf: store).prefix(6000)).write(to: cut)
        for arguments in [["inspect", cut.path], ["catalog", "init", scratch.url.appending(path: "cat").path, "--from", cut.path, "--at", "documents/A.sqlite"]] {
            let result = try runProcess(backstageExecutable, arguments)
            #expect(result.status != 0)
            #expect(result.stderr.contains(cut.path) && result.stderr.contains("damaged"), "\(result.stderr)")
        }
    }

    @Test func tablesNamedWithQuotesSpacesKeywordsAndNonASCIIAreCapturedAndInspected() throws {
        let scratch = try TemporaryDirectory()
        let store = scratch.url.appending(path: "Odd.sqlite")
        let made = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.executescript('''CREATE TABLE "we""ird" ("sel ect" TEXT, [order] INTEGER);
                CREATE TABLE [Order Details] (id INTEGER PRIMARY KEY, "naïve 名前" TEXT);
                CREATE INDEX "i""x" ON "we""ird"("sel ect");
                INSERT INTO "we""ird" VALUES ('a', 1); INSERT INTO [Order Details] VALUES (1, 'x');''')
            c.commit()
            """, [store.path])
        #expect(made.status == 0, "\(made.stderr)")
        let inspected = try runProcess(backstageExecutable, ["inspect", store.path, "--json"])
        #expect(inspected.status == 0, "\(inspected.stderr)")
        let catalog = scratch.url.appending(path: "catalog")
        let captured = try runProcess(backstageExecutable, ["catalog", "init", catalog.path, "--from", store.path, "--at", "documents/Odd.sqlite"])
        #expect(captured.status == 0, "\(captured.stderr)")
        let fixture = try runProcess(backstageExecutable, ["fixture", scratch.url.appending(path: "fx").path, "--catalog", catalog.path, "--size", "100KB"])
        #expect(fixture.status == 0, "\(fixture.stderr)")
    }

    @Test func inspectWithoutACatalogNamesEveryBundledVersionItMatches() throws {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "notes")
        #expect(try runProcess(backstageExecutable, ["fixture", root.path, "--layout", "v1", "--size", "200KB"]).status == 0)
        let store = try #require(try FileManager.default.contentsOfDirectory(atPath: root.appending(path: "Documents").path).first { $0.hasSuffix(".sqlite") })

        let result = try runProcess(backstageExecutable, ["inspect", root.appending(path: "Documents/\(store)").path, "--json"])

        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        // v1's schema is v2's too (v2 only moved the store): both are named, neither is picked.
        #expect(json["catalogMatches"] as? [String] == ["v1 documents/Notes.sqlite", "v2 applicationSupport/Notes.sqlite"], "\(result.stdout)")
        #expect(json["catalogMatch"] == nil, "no single version is claimed: \(result.stdout)")
        let text = try runProcess(backstageExecutable, ["inspect", root.appending(path: "Documents/\(store)").path])
        #expect(text.stdout.contains("matches 2 versions with the same schema, which the store alone cannot tell apart: v1 documents/Notes.sqlite, v2 applicationSupport/Notes.sqlite"), "\(text.stdout)")
    }
}
