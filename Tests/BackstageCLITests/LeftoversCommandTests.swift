import BackstageTestSupport
import Foundation
import Testing

/// Issue 54's leftovers through the command line: a long run shows where it is only on a terminal,
/// a plan of thousands of steps accounts for each, and a store name too long for SQLite is refused
/// up front, naming it and the limit.
@Suite struct LeftoversCommandTests {
    func makeContainer(_ root: URL) throws {
        for folder in ["Documents", "Library/Application Support", "Library/Caches", "tmp"] {
            try FileManager.default.createDirectory(at: root.appending(path: folder), withIntermediateDirectories: true)
        }
    }

    @Test func simulateWithJSONWritesNothingButTheJSONAndOnATerminalShowsRunsDoneOfAll() throws {
        let scratch = try TemporaryDirectory()
        let arguments = ["simulate", "--from", "v1", "--to", "v2", "--sizes", "150KB", "--states", "clean", "--crash-points", "1"]
        let quiet = try runProcess(backstageExecutable, arguments + ["--json"], currentDirectory: scratch.url)
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(quiet.stderr.isEmpty, "stderr: \(quiet.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(quiet.stdout.utf8)) as? [String: Any])
        #expect((summary["runs"] as? [Any])?.count == 1)
        // A pipe is not a terminal: no progress either.
        let piped = try runProcess(backstageExecutable, arguments, currentDirectory: scratch.url)
        #expect(piped.status == 0 && !piped.stderr.contains("simulate ["), "\(piped.stderr)")
        // On a pseudo-terminal (util-linux `script`): the live line, then the table.
        let command = ([backstageExecutable] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let terminal = try runProcess("/usr/bin/script", ["-qec", command, "/dev/null"], currentDirectory: scratch.url)
        #expect(terminal.status == 0, "\(terminal.stdout)")
        // (No window size on `script`'s terminal: 80 columns, the detail cut to fit.)
        #expect(terminal.stdout.contains("simulate [░░░░░░░░░░░░░░░░░░░░] 0/1 runs · 150 KB"), "\(terminal.stdout)")
        #expect(terminal.stdout.contains("estimating the time left"), "\(terminal.stdout)")
        #expect(terminal.stdout.contains("1 runs, 1 passed, 0 failed"), "\(terminal.stdout)")
    }

    @Test(.timeLimit(.minutes(10)))
    func aPlanOfThousandsOfStepsAccountsForEveryStep() throws {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "app")
        try makeContainer(root)
        // One store the plan migrates is there (not a fresh install); 3,000 the plan names are not.
        let store = root.appending(path: "Library/Application Support/App.sqlite")
        _ = try PythonSQLite.run(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('create table base(x)'); c.commit()",
            [store.path])
        var steps: [[String: Any]] = [
            ["migrateSchema": ["store": "applicationSupport/App.sqlite", "migrations": [["id": "one", "sql": "CREATE TABLE one(x)"]]]]
        ]
        for number in 0..<3000 {
            steps.append(
                number.isMultiple(of: 3)
                    ? ["quarantine": ["folder": "documents/"]]
                    : ["migrateSchema": ["store": "applicationSupport/Feature\(number).sqlite", "migrations": [["id": "f\(number)", "sql": "CREATE TABLE f(x)"]]]])
        }
        let plan = scratch.url.appending(path: "long.json")
        try JSONSerialization.data(withJSONObject: ["name": "long", "version": "v2", "steps": steps]).write(to: plan)
        let result = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan.path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        let reported = try #require(reports.first?["steps"] as? [[String: Any]])
        #expect(reported.count == 3001, "every step accounted for")
        #expect(reported.map { $0["index"] as? Int } == (0...3000).map { $0 })
        #expect(reported.first?["outcome"] as? String == "done")
        #expect(reported.dropFirst().allSatisfy { $0["outcome"] as? String == "skipped" })
        #expect(reported[2]["reason"] as? String == "absent: no store at applicationSupport/Feature1.sqlite")
        #expect(reported[1]["reason"] as? String == "nothing to quarantine")
        let tables = try PythonSQLite.run(
            "import sqlite3, sys; print(sorted(r[0] for r in sqlite3.connect(sys.argv[1]).execute(\"select name from sqlite_master where type = 'table' and name not like 'grdb%'\")))",
            [store.path])
        #expect(tables.stdout == "['base', 'one']\n", "the one migration ran: \(tables.stdout)")
    }

    @Test func aStoreNameTooLongForItsJournalIsRefusedUpFrontNamingItAndTheLimit() throws {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "app")
        try makeContainer(root)
        let long = String(repeating: "N", count: 300) + ".sqlite"
        // 248 bytes: the file could exist, its -journal (8 more) could not.
        let justOver = String(repeating: "J", count: 241) + ".sqlite"

        for name in [long, justOver] {
            let plan = scratch.url.appending(path: "plan.json")
            try JSONSerialization.data(withJSONObject: [
                "name": "long", "steps": [["relocate": ["from": "documents/\(name)", "to": "applicationSupport/\(name)"]]],
            ]).write(to: plan)
            let upgrade = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan.path])
            #expect(upgrade.status != 0 && upgrade.killedBySignal == nil)
            #expect(upgrade.stderr.contains("documents/\(name)") && upgrade.stderr.contains("\(name.utf8.count) bytes"), "\(upgrade.stderr)")
            #expect(upgrade.stderr.contains("at most 247 bytes") && !upgrade.stderr.contains("SQLite error"), "\(upgrade.stderr)")
            #expect(!FileManager.default.fileExists(atPath: root.appending(path: "Library/Application Support/.backstage").path),
                    "refused before anything was written")
        }

        let relocate = try runProcess(backstageExecutable, ["relocate", root.path, "--store", long])
        #expect(relocate.status == 2, "\(relocate.stdout) \(relocate.stderr)")
        #expect(relocate.stderr.contains("--store names documents/\(long)") && relocate.stderr.contains("at most 247 bytes"), "\(relocate.stderr)")

        let source = scratch.url.appending(path: "small.sqlite")
        _ = try PythonSQLite.run("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('create table t(x)'); c.commit()", [source.path])
        let catalog = scratch.url.appending(path: "catalog")
        let capture = try runProcess(backstageExecutable, ["catalog", "init", catalog.path, "--from", source.path, "--at", "documents/\(justOver)"])
        #expect(capture.status == 2, "\(capture.stderr)")
        #expect(capture.stderr.contains("--at names documents/\(justOver), whose file name is 248 bytes") && capture.stderr.contains("at most 247 bytes"), "\(capture.stderr)")
        #expect(!FileManager.default.fileExists(atPath: catalog.path), "no catalog was made")
    }
}
