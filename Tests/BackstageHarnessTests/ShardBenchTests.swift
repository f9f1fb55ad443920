import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// `bench --simulate-shards`: the same matrix unsharded and as shards in separate processes, merged,
/// gives the same runs and verdicts; the bench says so, and says when it does not.
@Suite struct ShardBenchTests {
    /// A plan that deletes the notes past the 10th: the 60 KB fixture has 8, the 100 KB one 13, so one
    /// of the matrix's two runs fails, in one of the two shards.
    static func pastTenPlan(in folder: URL) throws -> URL {
        let plan = folder.appending(path: "past-10.json")
        try Data(
            #"""
            {"name": "v1-to-v2-past-10", "steps": [
              {"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}},
              {"quarantine": {"folder": "documents/"}},
              {"migrateSchema": {"store": "applicationSupport/Notes.sqlite", "migrations": [
                {"id": "cleanup", "sql": "DELETE FROM ZNOTE WHERE Z_PK > 10"}]}}
            ]}
            """#.utf8
        ).write(to: plan)
        return plan
    }

    @Test func twoShardsMergeIntoTheUnshardedVerdicts() throws {
        let scratch = try TemporaryDirectory()
        let plan = try Self.pastTenPlan(in: scratch.url)
        let bench = ShardBench(
            executable: URL(filePath: backstageExecutable),
            matrix: [
                "--from", "v1", "--to", "v2", "--plan", plan.path, "--sizes", "60KB,100KB", "--states", "clean",
                "--crash-points", "1",
            ],
            shardCounts: [2], workspace: scratch.url.appending(path: "bench"))
        let report = try bench.run()
        #expect(report.rows.map(\.shards) == [1, 2], "the unsharded reference, then 2 shards")
        for row in report.rows {
            #expect(row.matches, "\(row.shards) shards: \(row.differences)")
            #expect(row.units == 2 && row.runs == 2, "\(row.shards) shards: every run of the matrix")
            #expect(row.failedRuns == 1, "\(row.shards) shards: the 100 KB run loses notes, the 60 KB one does not")
            #expect(row.wallSeconds > 0 && row.cpuSeconds > 0 && row.runsPerSecondPerCore > 0)
        }
        #expect(report.rows[1].mergeSeconds != nil && report.rows[0].mergeSeconds == nil)
        #expect(report.allMatch)
        #expect(report.table.contains("merged = unsharded") && report.table.contains(" yes"))

        // The comparison fails a merge that lost a run, or turned a verdict.
        let reference = try JSONDecoder().decode(
            SimulationReport.self,
            from: Data(contentsOf: scratch.url.appending(path: "bench/shards-1-run-1/unsharded.json")))
        let failing = try #require(reference.runs.first { !$0.passed })
        var turned = reference
        turned.runs = reference.runs.map { run in
            var run = run
            run.failures = []
            return run
        }
        turned.passed = true
        let differences = ShardBench.differences(turned, from: reference)
        #expect(differences.contains { $0.contains("run \(failing.identity ?? "?") passed, unsharded it failed") })
        var lost = reference
        lost.runs.removeLast()
        #expect(ShardBench.differences(lost, from: reference).contains("1 runs, the unsharded run has 2"))
        #expect(ShardBench.differences(reference, from: reference).isEmpty)
    }

    /// The command line: counts, the matrix from bench's options, the JSON report, exit 0 when the merges match.
    @Test func benchSimulateShardsWritesItsReport() throws {
        let scratch = try TemporaryDirectory()
        let json = scratch.url.appending(path: "shards.json")
        let result = try runProcess(
            backstageExecutable,
            [
                "bench", "--simulate-shards", "1,2", "--allow-debug", "--from", "v1", "--to", "v2", "--sizes", "60KB",
                "--states", "clean", "--crash-points", "none", "--workspace", scratch.url.appending(path: "w").path,
                "--json", json.path,
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder.iso8601.decode(ShardBenchReport.self, from: Data(contentsOf: json))
        #expect(report.rows.map(\.shards) == [1, 2] && report.allMatch)
        #expect(report.rows.allSatisfy { $0.runs == 1 }, "one unit: the second shard runs nothing, the merge has it once")
        #expect(
            report.command == [
                "backstage", "simulate", "--from", "v1", "--to", "v2", "--sizes", "60KB", "--states", "clean",
                "--crash-points", "none", "--budget", "20.0",
            ])
        #expect(result.stdout.contains("runs/s/core"))
    }
}

