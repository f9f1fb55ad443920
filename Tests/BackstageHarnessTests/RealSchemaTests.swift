import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// Issue 26: any real app, from `catalog init` to `simulate`. Each schema of `../shared/schemas/`,
/// the Workouts app and the zoo of shapes: a small hand-made store captured (left byte-identical),
/// fixtures at 1 MB and 4 MB with two seeds checked by SQLite in another program, then a v2
/// (relocate + a migration adding a column and an index) through `add-version --expect` and
/// `simulate` with crash points. `BACKSTAGE_SOAK=1` simulates every state at 1 MB.
@Suite struct RealSchemaTests {
    static let soak = ProcessInfo.processInfo.environment["BACKSTAGE_SOAK"] != nil

    /// The store made by Python, captured into `scratch/catalog`.
    static func captured(_ schema: RealSchema, in scratch: TemporaryDirectory) throws -> (catalog: URL, store: URL) {
        let sql = scratch.url.appending(path: "schema.sql")
        try Data(schema.sql.utf8).write(to: sql)
        let root = scratch.url.appending(path: "app")
        let made = try PythonSQLite.run(RealSchemaScripts.makeStore, [sql.path, root.path])
        guard made.killedBySignal == SIGKILL else { throw Failure("the store was not made: \(made.stderr)") }
        let documents = root.appending(path: "Documents")
        let before = try snapshot(of: documents)
        #expect(FileManager.default.fileExists(atPath: documents.appending(path: "App.sqlite-wal").path), "the last commit is in the -wal")
        let catalog = scratch.url.appending(path: "catalog")
        let initialized = try runProcess(backstageExecutable, ["catalog", "init", catalog.path, "--from", documents.appending(path: "App.sqlite").path,
                                                               "--at", "documents/App.sqlite"])
        guard initialized.status == 0 else { throw Failure("catalog init: \(initialized.stdout)\(initialized.stderr)") }
        #expect(try snapshot(of: documents) == before, "the store, its sidecars and the document are left byte-identical")
        return (catalog, documents.appending(path: "App.sqlite"))
    }

    static func snapshot(of folder: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            files[name] = try Data(contentsOf: folder.appending(path: name))
        }
        return files
    }

    @Test(arguments: RealSchema.all)
    func fixturesOfARealSchemaKeepEveryRuleAtEverySizeAndSeed(_ schema: RealSchema) throws {
        let scratch = try TemporaryDirectory()
        let (catalog, store) = try Self.captured(schema, in: scratch)
        for (size, bytes) in [("1MB", 1_000_000), ("4MB", 4_000_000)] {
            for seed in ["1", "2"] {
                let out = scratch.url.appending(path: "fixture-\(size)-\(seed)")
                let made = try runProcess(backstageExecutable, ["fixture", out.path, "--catalog", catalog.path, "--layout", "v1", "--size", size, "--seed", seed])
                #expect(made.status == 0, "\(schema.name) \(size) seed \(seed): \(made.stderr)")
                guard made.status == 0 else { continue }
                let checked = try PythonSQLite.run(RealSchemaScripts.check, [out.appending(path: "Documents/App.sqlite").path, store.path, String(bytes)])
                #expect(checked.status == 0, "\(schema.name) \(size) seed \(seed): \(checked.stdout)\(checked.stderr)")
            }
        }
    }

    @Test(arguments: RealSchema.all)
    func aV2OfARealSchemaGoesThroughAddVersionAndSimulate(_ schema: RealSchema) throws {
        let scratch = try TemporaryDirectory()
        let (catalog, _) = try Self.captured(schema, in: scratch)
        let table = try schema.migratedTable.isEmpty ? Self.firstTable(of: schema.sql) : schema.migratedTable
        let migration = "ALTER TABLE \(table) ADD COLUMN v2_note TEXT; CREATE INDEX v2_note_index ON \(table)(v2_note);"
        let plan: [String: Any] = ["name": "v1-to-v2", "steps": [
            ["relocate": ["from": "documents/App.sqlite", "to": "applicationSupport/App.sqlite"]],
            ["migrateSchema": ["store": "applicationSupport/App.sqlite", "migrations": [["id": "v2-note", "sql": migration]]]],
            ["quarantine": ["folder": "documents/"]],
        ]]
        let planFile = scratch.url.appending(path: "v1-to-v2.json")
        try JSONSerialization.data(withJSONObject: plan).write(to: planFile)
        let fresh = scratch.url.appending(path: "fresh-v2.sql")
        try Data((schema.sql + "\n;\n" + migration + "\n").utf8).write(to: fresh)
        let added = try runProcess(backstageExecutable, ["catalog", "add-version", catalog.path, "v2", "--plan", planFile.path,
                                                         "--expect", "applicationSupport/App.sqlite=\(fresh.path)"])
        #expect(added.status == 0, "\(added.stdout)\(added.stderr)")
        let states = Self.soak ? [] : ["--states", "clean,interrupted"]
        let simulated = try runProcess(backstageExecutable, ["simulate", "--catalog", catalog.path, "--from", "v1", "--to", "v2",
                                                             "--sizes", Self.soak ? "1MB" : "300KB", "--crash-points", "3", "--json"] + states)
        #expect(simulated.status == 0, "\(simulated.stderr.suffix(2000))")
    }

    /// The first table a script creates, quoted.
    static func firstTable(of sql: String) throws -> String {
        var configuration = Configuration()
        configuration.acceptsDoubleQuotedStringLiterals = true
        let queue = try DatabaseQueue(configuration: configuration)
        return try queue.write { db in
            try db.execute(sql: sql)
            let name = try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid LIMIT 1") ?? ""
            return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
    }
}
