import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The targets of issue 31's table, measured for real at a tiny size (a debug build: the figures
/// mean nothing, what is measured and reported does): warm and cold, with a spread, against the
/// baselines the table names.
@Suite(.serialized) struct BenchTargetRunTests {
    static let schema = """
        CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL);
        CREATE INDEX item_name ON item (name);
        """

    @Test func aTinyRunListsEveryTargetWarmAndColdWithItsSpreadAgainstTheNamedBaselines() throws {
        let scratch = try TemporaryDirectory()
        let schema = scratch.url.appending(path: "tiny.sql")
        try Data(Self.schema.utf8).write(to: schema)
        var runner = BenchRunner(
            executable: URL(filePath: backstageExecutable), sizes: [1_000_000], runs: 2,
            workspace: scratch.url.appending(path: "work"))
        runner.generationSchemas = [schema]
        var lines: [String] = []
        runner.log = { line, _ in lines.append(line) }
        let report = try runner.run()

        // The second run goes through the cases backwards: each Backstage case runs once after
        // its baselines and once before them.
        let run1 = lines.filter { $0.hasPrefix("run 1/2, warm: ") }.map { $0.dropFirst("run 1/2, warm: ".count) }
        let run2 = lines.filter { $0.hasPrefix("run 2/2, warm: ") }.map { $0.dropFirst("run 2/2, warm: ".count) }
        #expect(run1.count > 10 && Array(run2) == Array(run1.reversed()), "\(run1) then \(run2)")

        let markdown = report.markdown
        #expect(markdown.contains("| target | at | warm: median (min–max) | cold: median (min–max) | limit | met |"))
        for target in BenchTarget.designTargets(generating: ["Notes", "tiny"]) {
            #expect(markdown.contains("| \(target.title) |"), "\(target.title) is listed")
        }
        let caches: [BenchCache] = report.coldUnavailable == nil ? [.warm, .cold] : [.warm]
        if let refused = report.coldUnavailable {
            #expect(markdown.contains("cold: not available (\(refused))"), "not root here: said so")
        }
        for check in report.targets where check.cache.map(caches.contains) == true {
            let title = check.target.title
            #expect(check.value != nil && check.met != nil, "\(title), \(check.cache!): measured")
            let (low, high, value) = (check.low ?? .nan, check.high ?? .nan, check.value ?? .nan)
            #expect(low <= value && value <= high, "\(title): the median within its spread over the 2 runs")
        }
        #expect(report.results.allSatisfy { $0.runs.count == 2 }, "every case timed in each of the 2 runs")

        func command(_ name: String) -> String { report.results.first { $0.name == name }?.command ?? "" }
        typealias N = BenchTarget.Name
        #expect(command(N.vacuumInto).contains("VACUUM INTO") && command(N.vacuumInto).contains("sync -f"))
        #expect(command(N.migrateShell).contains("PRAGMA synchronous=FULL; BEGIN; ALTER TABLE ZNOTE"))
        let move = command(N.durableMove)
        #expect(move.contains("cp -r") && move.contains("rm -rf") && move.contains("sync -f \"$(dirname \"$1\")\""))
        #expect(command(N.copyIncompressible).contains("cp -r") && command(N.copyIncompressible).contains("sync -f"))
        #expect(command(N.pigz).contains("tar -I pigz") && command(N.zstd).contains("tar -I 'zstd -T0'"))
        #expect(command(N.bsdtarZip).contains("bsdtar --format zip"))
        #expect(command(N.launchCheckCalls).hasPrefix("readlink(launch record) + lstat × "))
        #expect(command(N.generateShell("tiny")).contains("sqlite3 store-0.sqlite"))
        #expect(markdown.contains("What each baseline ran:"))
    }

    @Test func aColdRunWhenDroppingTheCacheIsRefusedSaysSoAndPretendsNothing() throws {
        let scratch = try TemporaryDirectory()
        var runner = BenchRunner(
            executable: URL(filePath: backstageExecutable), sizes: [], runs: 1,
            workspace: scratch.url.appending(path: "work"))
        let control = scratch.path + "/absent/drop_caches"
        runner.pageCache = PageCache(control: control)
        let report = try runner.run()

        let reason = "writing to \(control) was refused: No such file or directory"
        #expect(report.coldUnavailable == reason)
        #expect(report.results.allSatisfy { $0.cache == .warm }, "no figure passed off as cold")
        #expect(report.markdown.contains("cold: not available (\(reason))."))
        #expect(report.markdown.contains("| needsUpgrade, nothing pending | — | "))
        #expect(report.markdown.contains(" | not available (\(reason)) | ≤ 1.50× | "), "the cold column says why")
        #expect(report.table.contains("cold not available (\(reason))"))
        let launch = report.targets.filter { $0.target.title == "needsUpgrade, nothing pending" }
        #expect(launch.map(\.cache) == [.warm, .cold] && launch[0].met != nil && launch[1].met == nil)
    }
}
