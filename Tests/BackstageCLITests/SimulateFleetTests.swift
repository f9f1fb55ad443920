import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The fleet's matrix: every path as one command, run as shards and merged into one verdict, and
/// the CI configuration that does it.
@Suite struct SimulateFleetTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func simulate(_ arguments: [String], in folder: URL? = nil) throws -> ProcessResult {
        try runProcess(backstageExecutable, ["simulate"] + arguments, currentDirectory: folder)
    }

    /// The runs of a report: identity and verdict.
    func verdicts(_ json: String) throws -> [String: Bool] {
        let report = try JSONDecoder().decode(SimulationReport.self, from: Data(json.utf8))
        return Dictionary(uniqueKeysWithValues: report.runs.map { ($0.identity ?? "-", $0.passed) })
    }

    /// The four versions of the Notes sample: six paths, each uninterrupted here, and the downgrade
    /// to the version before the target wherever that version's build has a plan (not v1's).
    @Test func everyPathOfAFourVersionCatalogIsListed() throws {
        let listed = try simulate(["--paths", "every", "--sizes", "100KB", "--states", "clean", "--crash-points", "none", "--list"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.split(separator: "\n").map(String.init) == [
            "v1→v2 100000 clean none",
            "v1→v3 100000 clean none", "v1→v3 100000 clean downgrade-to-v2",
            "v1→v4 100000 clean none", "v1→v4 100000 clean downgrade-to-v3",
            "v2→v3 100000 clean none", "v2→v3 100000 clean downgrade-to-v2",
            "v2→v4 100000 clean none", "v2→v4 100000 clean downgrade-to-v3",
            "v3→v4 100000 clean none", "v3→v4 100000 clean downgrade-to-v3",
        ])
        #expect(UpgradePath.every(["a", "b", "c", "d", "e", "f"]).count == 15)
        let json = try simulate(["--paths", "every", "--sizes", "100KB", "--states", "clean", "--crash-points", "1", "--list", "--json"])
        let units = try JSONDecoder().decode([SimulationUnit].self, from: Data(json.stdout.utf8))
        #expect(units.count == 11 && Set(units.map(\.path)).count == 6)
        // The shards' parts cover the units once.
        for count in 1...4 {
            let parts = (1...count).map { Shard(index: $0, count: count).positions(in: units) }
            #expect(parts.flatMap { $0 }.sorted() == Array(units.indices), "\(count) shards")
        }
    }

    /// A plan that deletes the notes past the 60th: only the largest of three fixtures has them, so
    /// one unit of the matrix fails, in exactly one shard; the merge reports it as the unsharded run does.
    @Test func aShardedRunMergesIntoTheUnshardedReport() throws {
        let scratch = try TemporaryDirectory()
        let plan = scratch.url.appending(path: "past-60.json")
        try Data(#"""
            {"name": "v1-to-v2-past-60", "steps": [
              {"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}},
              {"quarantine": {"folder": "documents/"}},
              {"migrateSchema": {"store": "applicationSupport/Notes.sqlite", "migrations": [
                {"id": "cleanup", "sql": "DELETE FROM ZNOTE WHERE Z_PK > 60"}]}}
            ]}
            """#.utf8).write(to: plan)
        let matrix = ["--from", "v1", "--to", "v2", "--plan", plan.path, "--sizes", "150KB,300KB,600KB", "--states", "clean", "--crash-points", "1", "--json"]
        let whole = try simulate(matrix)
        #expect(whole.status == 1, "\(whole.stderr)")
        let expected = try verdicts(whole.stdout)
        #expect(expected.count == 3 && expected.values.filter { !$0 }.count == 1, "\(expected)")
        #expect(expected.filter { !$0.value }.keys.allSatisfy { $0.contains(" 600000 ") }, "only the largest fixture has notes past the 60th")
        for count in [2, 3] {
            var files: [String] = []
            var failingShards = 0
            for index in 1...count {
                let shard = try simulate(matrix + ["--shard", "\(index)/\(count)"])
                let file = scratch.url.appending(path: "shard-\(index)-of-\(count).json")
                try Data(shard.stdout.utf8).write(to: file)
                files.append(file.path)
                if try verdicts(shard.stdout).values.contains(false) {
                    failingShards += 1
                    #expect(shard.status == 1)
                }
            }
            #expect(failingShards == 1, "the broken plan is found by exactly one of \(count) shards")
            let junit = scratch.url.appending(path: "merged-\(count).xml")
            let merged = try simulate(["merge", "--json", "--junit", junit.path] + files.reversed())
            #expect(merged.status == 1, "one verdict: failed. \(merged.stderr)")
            #expect(try verdicts(merged.stdout) == expected, "\(count) shards")
            let report = try JSONDecoder().decode(SimulationReport.self, from: Data(merged.stdout.utf8))
            let unsharded = try JSONDecoder().decode(SimulationReport.self, from: Data(whole.stdout.utf8))
            #expect(report.runs.map(\.identity) == unsharded.runs.map(\.identity), "the matrix's order")
            let xml = try String(contentsOf: junit, encoding: .utf8)
            #expect(xml.contains(#"tests="3" failures="1""#) && xml.contains("rows lost: ZNOTE"))
        }
    }

    /// Reruns are the runs after an interruption: an uninterrupted run, and a downgrade (an older
    /// build launched after the upgrade, nothing interrupted), count none; a kill at least one.
    @Test func onlyAnInterruptedRunCountsReruns() throws {
        let result = try simulate([
            "--paths", "every", "--sizes", "100KB", "--states", "clean", "--crash-points", "none", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(SimulationReport.self, from: Data(result.stdout.utf8))
        #expect(report.runs.contains { if case .downgrade = $0.crashPoint { true } else { false } })
        #expect(report.runs.allSatisfy { $0.reruns == 0 }, "\(report.runs.map { "\($0.crashPoint?.description ?? "none"): \($0.reruns)" })")
        let killed = try simulate(["--from", "v1", "--to", "v2", "--sizes", "100KB", "--states", "clean", "--crash-points", "1", "--json"])
        let runs = try JSONDecoder().decode(SimulationReport.self, from: Data(killed.stdout.utf8)).runs
        #expect(runs.contains { $0.crashed } && runs.filter(\.crashed).allSatisfy { $0.reruns >= 1 })
    }

    /// A `backstage` without its `backstage-simulate-child` beside it (a build of one product) says
    /// which file is missing and how to get it, not a Foundation error about a path.
    @Test func simulateWithoutItsChildNamesTheMissingFile() throws {
        let scratch = try TemporaryDirectory()
        let alone = scratch.url.appending(path: "backstage")
        try FileManager.default.copyItem(at: URL(filePath: backstageExecutable), to: alone)
        let result = try runProcess(
            alone.path,
            [
                "simulate", "--catalog", Self.root.appending(path: "Fixtures/Notes").path, "--from", "v1", "--to", "v2",
                "--sizes", "100KB", "--states", "clean", "--crash-points", "1",
            ])
        #expect(result.status != 0)
        #expect(
            result.stderr.contains("\(scratch.url.appending(path: "backstage-simulate-child").path) is missing")
                && result.stderr.contains("make install"), "\(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"), "\(result.stderr)")
    }

    @Test func mergeRefusesMixedShards() throws {
        let scratch = try TemporaryDirectory()
        let matrix = ["--from", "v1", "--to", "v2", "--sizes", "100KB", "--states", "clean", "--crash-points", "none", "--json"]
        func write(_ name: String, _ json: String, changing change: (inout [String: Any]) -> Void = { _ in }) throws -> String {
            var object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            change(&object)
            let file = scratch.url.appending(path: name)
            try JSONSerialization.data(withJSONObject: object).write(to: file)
            return file.path
        }
        let one = try simulate(matrix + ["--shard", "1/2"]), two = try simulate(matrix + ["--shard", "2/2"])
        #expect(one.status == 0 && two.status == 0, "\(one.stderr) \(two.stderr)")
        let first = try write("one.json", one.stdout), second = try write("two.json", two.stdout)
        #expect(try simulate(["merge", first, second]).status == 0)
        let seed = try write("seed.json", two.stdout) { $0["seed"] = 7 }
        let catalog = try write("catalog.json", two.stdout) { $0["catalog"] = "sha256:0000" }
        let command = try write("command.json", two.stdout) { $0["command"] = ["--paths", "every"] }
        let whole = try write("whole.json", try simulate(matrix).stdout)
        for (files, message) in [
            ([first, seed], "\(seed) was run with --seed 7, \(first) with --seed 1"),
            ([first, catalog], "\(catalog) simulated another catalog"),
            ([first, command], "\(command) ran another matrix than \(first)"),
            ([first], "shard 2/2 missing"),
            ([first, first], "\(first) and \(first) are both shard 1/2"),
            ([whole, first], "\(whole) is not a shard's report"),
        ] {
            let refused = try simulate(["merge"] + files)
            #expect(refused.status != 0 && refused.stderr.contains(message), "\(files): \(refused.stderr)")
        }
    }

    /// The YAML of `text` as JSON, through Python's yaml (strict: a syntax error fails the test).
    func yaml(_ text: String) throws -> [String: Any] {
        let scratch = try TemporaryDirectory()
        let file = scratch.url.appending(path: "workflow.yml")
        try Data(text.utf8).write(to: file)
        let parsed = try runProcess(
            "/usr/bin/env", ["python3", "-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", file.path])
        #expect(parsed.status == 0, "the workflow is YAML: \(parsed.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(parsed.stdout.utf8)) as? [String: Any])
    }

    /// Runs `command` with bash, `backstage` on the PATH unless `installed` is false (then only
    /// the system's folders are: an install step puts it there).
    func shell(_ command: String, in folder: URL, environment extra: [String: String] = [:], installed: Bool = true) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        environment["PATH"] = installed
            ? URL(filePath: backstageExecutable).deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            : "/usr/local/bin:/usr/bin:/bin"
        return try runProcess("/bin/bash", ["-eo", "pipefail", "-c", command], environment: environment, currentDirectory: folder)
    }

    /// The workflow of docs/ci-matrix.md: YAML, a matrix of 3 shards, whose backstage commands run
    /// here shard by shard, then the merge gives one verdict over every path.
    @Test func theDocumentedWorkflowRunsItsShardsAndMerge() throws {
        let page = try String(contentsOf: Self.root.appending(path: "docs/ci-matrix.md"), encoding: .utf8)
        let block = try #require(page.components(separatedBy: "```yaml\n").dropFirst().first?.components(separatedBy: "```").first)
        let workflow = try yaml(block)
        let jobs = try #require(workflow["jobs"] as? [String: [String: Any]])
        let simulate = try #require(jobs["simulate"]), merge = try #require(jobs["simulate-merge"])
        let shards = try #require(((simulate["strategy"] as? [String: Any])?["matrix"] as? [String: Any])?["shard"] as? [Int])
        #expect(shards == [1, 2, 3] && merge["needs"] as? String == "simulate")
        // What the command prints, given the page's install command.
        let steps = try #require(simulate["steps"] as? [[String: Any]])
        let install = try #require(steps.first { $0["name"] as? String == "Install backstage" }?["run"] as? String)
        let printed = try self.simulate([
            "--paths", "every", "--sizes", "100000", "--states", "clean", "--crash-points", "none", "--seed", "1",
            "--ci", "github", "--shards", "3", "--install", install.trimmingCharacters(in: .newlines),
        ])
        #expect(printed.status == 0, "\(printed.stderr)")
        let printedJobs = try #require(try yaml(printed.stdout)["jobs"] as? [String: Any])
        #expect(NSDictionary(dictionary: printedJobs) == NSDictionary(dictionary: jobs), "\(printed.stdout)")
        func commands(_ job: [String: Any]) -> [String] {
            ((job["steps"] as? [[String: Any]]) ?? []).compactMap { $0["run"] as? String }
                .flatMap { $0.split(separator: "\n").map(String.init) }.filter { $0.hasPrefix("backstage ") }
        }
        let scratch = try TemporaryDirectory()
        for shard in shards {
            for command in commands(simulate) {
                let result = try shell(command.replacing("${{ matrix.shard }}", with: String(shard)), in: scratch.url)
                #expect(result.status == 0, "shard \(shard): \(result.stderr)")
            }
        }
        let merged = try #require(commands(merge).first)
        let result = try shell(merged, in: scratch.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("every path from 3 shards: 11 runs, 11 passed, 0 failed"), "\(result.stdout)")
        let xml = try String(contentsOf: scratch.url.appending(path: "simulate.xml"), encoding: .utf8)
        #expect(xml.contains(#"name="v1→v4, 100000 bytes, clean, crash none""#), "each test case names its path")
        #expect(xml.contains(#"name="v2→v4, 100000 bytes, clean, crash downgrade-to-v3""#))
    }

    /// `--ci gitlab` prints YAML whose `parallel:` instances and merge job run here as GitLab runs
    /// them, on a runner without backstage: each job's `before_script` is the `--install` command,
    /// run in the shell of its `script` as GitLab does; without `--install` a job stops saying so.
    @Test func thePrintedGitLabFragmentRuns() throws {
        let matrix = ["--from", "v1", "--to", "v2", "--sizes", "100KB", "--states", "clean", "--crash-points", "2"]
        let bin = URL(filePath: backstageExecutable).deletingLastPathComponent()
        let install = """
            mkdir -p tools
            ln -sf '\(bin.appending(path: "backstage").path)' '\(bin.appending(path: "backstage-simulate-child").path)' tools/
            export PATH="$PWD/tools:$PATH"
            """
        let printed = try simulate(matrix + ["--ci", "gitlab", "--shards", "2", "--install", install])
        #expect(printed.status == 0, "\(printed.stderr)")
        let jobs = try yaml(printed.stdout)
        let simulate = try #require(jobs["simulate"] as? [String: Any]), merge = try #require(jobs["simulate-merge"] as? [String: Any])
        #expect(simulate["parallel"] as? Int == 2 && merge["needs"] as? [String] == ["simulate"])
        func session(_ job: [String: Any]) -> String {
            (((job["before_script"] as? [String]) ?? []) + ((job["script"] as? [String]) ?? [])).joined(separator: "\n")
        }
        #expect(session(simulate).hasPrefix(install), "\(printed.stdout)")
        let scratch = try TemporaryDirectory()
        for index in 1...2 {
            let result = try shell(
                session(simulate), in: scratch.url, environment: ["CI_NODE_INDEX": String(index), "CI_NODE_TOTAL": "2"],
                installed: false)
            #expect(result.status == 0, "\(index): \(result.stderr)")
        }
        let result = try shell(session(merge), in: scratch.url, installed: false)
        #expect(result.status == 0 && result.stdout.contains("2 runs, 2 passed"), "\(result.stdout) \(result.stderr)")
        // Without --install, a runner without backstage stops at once, saying what to do.
        let bare = try yaml(try self.simulate(matrix + ["--ci", "gitlab", "--shards", "2"]).stdout)
        let stopped = try shell(
            session(try #require(bare["simulate"] as? [String: Any])), in: scratch.url,
            environment: ["CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2"], installed: false)
        #expect(stopped.status == 1 && stopped.stderr.contains("backstage is not installed on this runner"), "\(stopped.stderr)")
        let github = try yaml(try self.simulate(matrix + ["--ci", "github", "--shards", "2"]).stdout)
        #expect((github["jobs"] as? [String: Any])?.keys.sorted() == ["simulate", "simulate-merge"])
    }

    /// What a new user met: --paths every beside --from refused, not ignored; a budget of 0 refused; an absolute catalog in a
    /// CI fragment warned of; merge naming a pattern that matched nothing, or a shard run without --json.
    @Test func aNewUsersSlipsAreSaidPlainly() throws {
        let every = try simulate(["--paths", "every", "--from", "v2", "--sizes", "100KB", "--list"])
        #expect(every.status == 2 && every.stderr.contains("drop --from and --to"), "\(every.stderr)")
        // A budget no upgrade can meet is refused before any run, not reported as runs "ok".
        for budget in ["0", "-1", "inf"] {
            let refused = try simulate(["--from", "v1", "--to", "v2", "--budget=\(budget)", "--sizes", "100KB", "--crash-points", "none"])
            #expect(refused.status == 2 && refused.stderr.contains("--budget must be more than 0 seconds"), "\(budget): \(refused.stderr)")
        }
        let catalog = try CatalogFolder.notes().url.path
        let fragment = try simulate(["--catalog", catalog, "--paths", "every", "--ci", "github", "--shards", "2"])
        #expect(fragment.status == 0 && fragment.stdout.contains("--catalog \(catalog)"))
        #expect(fragment.stderr.contains("which a CI runner's checkout does not have"), "\(fragment.stderr)")
        let scratch = try TemporaryDirectory()
        let none = try simulate(["merge", "simulate-shard-*.json"], in: scratch.url)
        #expect(none.status == 3 && none.stderr.contains("simulate-shard-*.json is not a simulate --json report: there is no such file"), "\(none.stderr)")
        let text = scratch.url.appending(path: "shard-1.txt")
        let shard = try simulate(["--from", "v1", "--to", "v2", "--sizes", "100KB", "--states", "clean", "--crash-points", "none", "--shard", "1/2"])
        try Data(shard.stdout.utf8).write(to: text)
        let refused = try simulate(["merge", text.path])
        #expect(refused.stderr.contains("it is not JSON (a shard prints its report as JSON with --json)"), "\(refused.stderr)")
    }
}
