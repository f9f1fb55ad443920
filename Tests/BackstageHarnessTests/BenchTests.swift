import BackstageHarness
import BackstageTestSupport
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing

@Suite struct BenchTests {
    static func report() -> BenchReport {
        let mb: Int64 = 1_000_000
        return BenchReport(
            date: Date(timeIntervalSince1970: 1_790_000_000), machine: "2 cores", runsPerCase: 3, sizes: [10 * mb, 100 * mb],
            results: [
                BenchResult(name: "relocate · rename", kind: .backstage, bytes: 10 * mb, runs: [0.05, 0.04, 0.06], peakBytes: 30 << 20, baselines: ["cp + fsync", "absent"]),
                BenchResult(name: "relocate · rename", kind: .backstage, bytes: 100 * mb, runs: [0.05], peakBytes: 31 << 20, baselines: ["cp + fsync"]),
                BenchResult(name: "split", kind: .backstage, bytes: 100 * mb, runs: [0.9, 1.1, 1.0], peakBytes: 40 << 20, baselines: ["VACUUM INTO"]),
                BenchResult(name: "split", kind: .backstage, bytes: 11 * mb, runs: [0.5], peakBytes: 40 << 20, baselines: ["VACUUM INTO"]),
                BenchResult(name: "cp + fsync", kind: .baseline, bytes: 10 * mb, runs: [0.02], peakBytes: 2 << 20),
                BenchResult(name: "cp + fsync", kind: .baseline, bytes: 100 * mb, runs: [0.2], peakBytes: 2 << 20),
                BenchResult(name: "VACUUM INTO", kind: .baseline, bytes: 100 * mb, runs: [0.5], peakBytes: 5 << 20),
            ],
            needsUpgradeMicroseconds: 12.5, budget: 2, skipped: [])
    }

    @Test func ratiosPairEachCaseWithItsBaselinesAtTheSameSize() {
        let ratios = Self.report().ratios
        #expect(ratios.map(\.name) == ["relocate · rename", "relocate · rename", "split"], "a baseline that was not measured gives no row")
        #expect(ratios[0].seconds == 0.05 && ratios[0].baselineSeconds == 0.02 && abs(ratios[0].ratio - 2.5) < 1e-9, "the median of the runs")
        #expect(abs(ratios[1].ratio - 0.25) < 1e-9)
        #expect(abs(ratios[2].ratio - 2.0) < 1e-9)
    }

    @Test func projectionsScaleCopiesButNotRenames() {
        let projections = Self.report().projections
        #expect(projections.map(\.name) == ["relocate · rename", "split"], "one per case, from its largest size even when the data is not exactly the size asked")
        let rename = projections.first { $0.name == "relocate · rename" }
        let split = projections.first { $0.name == "split" }
        #expect(rename?.secondsAt10GB == 0.05 && rename?.fitsBudgetAt1GB == true)
        #expect(split.map { abs($0.secondsAt1GB - 10) < 1e-9 && abs($0.secondsAt10GB - 100) < 1e-9 } == true)
        #expect(split?.fitsBudgetAt1GB == false)
        #expect(Self.report().markdown.contains("| 100 MB | warm | split | 1.00 s | 40 MB | VACUUM INTO | 500.0 ms | 2.00× |"))
    }

    /// A run in which one target is met, one missed warm and met cold, one missed, and the rest not measured.
    static func targetReport() -> BenchReport {
        typealias N = BenchTarget.Name
        let mb: Int64 = 1_000_000
        return BenchReport(
            date: Date(timeIntervalSince1970: 1_790_000_000), machine: "2 cores", runsPerCase: 3, sizes: [10 * mb, 200 * mb, 600 * mb],
            results: [
                BenchResult(name: N.relocateRename, kind: .backstage, bytes: 10 * mb, runs: [0.030], peakBytes: 34 << 20),
                BenchResult(name: N.relocateRename, kind: .backstage, bytes: 600 * mb, runs: [0.045], peakBytes: 70 << 20),
                BenchResult(name: N.split, kind: .backstage, bytes: 10 * mb, runs: [0.9, 0.9, 0.9], peakBytes: 40 << 20, baselines: [N.vacuumInto]),
                BenchResult(name: N.split, kind: .backstage, bytes: 600 * mb, runs: [1.6, 1.5, 1.7], peakBytes: 40 << 20, baselines: [N.vacuumInto]),
                BenchResult(name: N.vacuumInto, kind: .baseline, bytes: 10 * mb, runs: [0.3, 0.3, 0.3], peakBytes: 5 << 20),
                BenchResult(name: N.vacuumInto, kind: .baseline, bytes: 600 * mb, runs: [1.0, 1.0, 1.0], peakBytes: 5 << 20),
                BenchResult(name: N.split, kind: .backstage, bytes: 600 * mb, runs: [0.9, 0.95, 1.0], peakBytes: 40 << 20, baselines: [N.vacuumInto], cache: .cold),
                BenchResult(name: N.vacuumInto, kind: .baseline, bytes: 600 * mb, runs: [1.0, 1.0, 1.0], peakBytes: 5 << 20, cache: .cold),
                BenchResult(name: N.generate("Notes"), kind: .backstage, bytes: 193 * mb, runs: [3.0], peakBytes: 40 << 20, baselines: [N.generateShell("Notes")]),
                BenchResult(name: N.generate("Notes"), kind: .backstage, bytes: 581 * mb, runs: [9.0], peakBytes: 40 << 20, baselines: [N.generateShell("Notes")]),
                BenchResult(name: N.generateShell("Notes"), kind: .baseline, bytes: 193 * mb, runs: [2.0], peakBytes: 5 << 20),
                BenchResult(name: N.generateShell("Notes"), kind: .baseline, bytes: 581 * mb, runs: [4.0], peakBytes: 5 << 20),
                BenchResult(name: N.launchCheck, kind: .backstage, bytes: 0, runs: [9e-6, 10e-6, 11e-6], peakBytes: 0, baselines: [N.launchCheckCalls]),
                BenchResult(name: N.launchCheckCalls, kind: .baseline, bytes: 0, runs: [8e-6, 8e-6, 8e-6], peakBytes: 0),
            ],
            needsUpgradeMicroseconds: 10, budget: 20, skipped: [])
    }

    @Test func eachTargetIsCheckedWarmAndColdAtTheLargestSizeWithItsSpreadAndOneNotMeasuredIsNeverMet() throws {
        let checks = Self.targetReport().targets
        func check(_ title: String) -> [BenchTarget.Check] { checks.filter { $0.target.title == title } }
        let mb: Int64 = 1_000_000

        let split = check("split")
        #expect(split.map(\.bytes) == [600 * mb, 600 * mb] && split.map(\.cache) == [.warm, .cold], "at the largest size only, warm and cold")
        #expect(split[0].met == false && split[0].measuredWithSpread == "1.60× (1.50–1.70×)", "the median of the runs' ratios, with their range")
        #expect(split[1].met == true && split[1].measuredWithSpread == "0.95× (0.90–1.00×)")
        #expect(split[0].limit == "≤ 1.00×")
        let launch = check("needsUpgrade, nothing pending")
        #expect(launch[0].met == true && abs((launch[0].value ?? 0) - 1.25) < 1e-9, "10 µs against 8 µs of bare system calls")
        #expect(launch[1].met == nil, "no cold run of it in this report: not measured, never met")
        #expect(check("relocate by rename: memory flat").first.map { $0.met == false && $0.measured == "70 MB" } == true)

        let generation = check("generate Notes")
        #expect(generation.map(\.bytes) == [581 * mb, 581 * mb] && generation[0].met == false, "2.25× at the largest size")

        let zip = check("export zip")
        #expect(zip.count == 2 && zip.allSatisfy { $0.met == nil && $0.measured == "not measured" }, "no export in this run: never counted as met")
        #expect(Self.targetReport().missedTargets.map(\.target.title) == ["split", "generate Notes", "relocate by rename: memory flat"])

        let table = Self.targetReport().table
        #expect(table.contains("targets: 1 of 4 met, warm and cold (9 not measured)"))
        #expect(table.contains("  ✗ split at 600 MB: warm 1.60× (1.50–1.70×), cold 0.95× (0.90–1.00×) (≤ 1.00×)"))
        let markdown = Self.targetReport().markdown
        #expect(markdown.contains("| target | at | warm: median (min–max) | cold: median (min–max) | limit | met |"))
        #expect(markdown.contains("| split | 600 MB | 1.60× (1.50–1.70×) | 0.95× (0.90–1.00×) | ≤ 1.00× | ✗ |"))
        #expect(markdown.contains("| in process | warm | needsUpgrade · nothing pending | 10.0 µs | — | readlink + lstat per watched folder | 8.0 µs | 1.25× (1.12–1.38) |"))
    }

    @Test func theJSONReportCarriesTheRatiosAndTheTargets() throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(Self.targetReport())
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let targets = try #require(object["targets"] as? [[String: Any]])
        #expect(targets.count == Self.targetReport().targets.count)
        #expect(targets.contains { ($0["met"] as? Bool) == false && (($0["target"] as? [String: Any])?["title"] as? String) == "split" })
        #expect((object["ratios"] as? [Any])?.count == Self.targetReport().ratios.count)
        let decoded = try JSONDecoder.iso8601.decode(BenchReport.self, from: data)
        #expect(decoded == Self.targetReport(), "what was measured reads back; the rest is derived again")
    }

    @Test func theChartHasAPanelPerJobEachCaseBesideItsBaselinesAndTheRatio() throws {
        let svg = BenchChart.svg(Self.report())
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        let panels = svg.components(separatedBy: "<g class=\"panel\" data-job=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        #expect(panels == ["relocate", "split"], "one panel per job")
        let relocate = try #require(svg.range(of: "data-job=\"relocate\"")), split = try #require(svg.range(of: "data-job=\"split\""))
        let relocatePanel = String(svg[relocate.lowerBound..<split.lowerBound]), splitPanel = String(svg[split.lowerBound...])
        #expect(relocatePanel.components(separatedBy: "<polyline").count - 1 == 2 && relocatePanel.contains(">cp + fsync</text>") && !relocatePanel.contains(">VACUUM INTO</text>"))
        #expect(splitPanel.components(separatedBy: "<polyline").count - 1 == 1 && splitPanel.contains(">VACUUM INTO</text>"),
                "VACUUM INTO measured at one size: a marker, no line")
        #expect(svg.components(separatedBy: "<polyline").count - 1 == 3 && svg.components(separatedBy: "stroke-dasharray").count - 1 == 3, "baselines dashed, in the plot and the legend")
        // Every series of a panel has its own colour from the colour-blind-safe palette.
        #expect(relocatePanel.contains("stroke=\"\(BenchChart.palette[0])\" stroke-width=\"2\"/>") && relocatePanel.contains("stroke=\"\(BenchChart.palette[1])\" stroke-width=\"2\" stroke-dasharray"))
        #expect(splitPanel.contains(">2.00× VACUUM INTO</text>") && !splitPanel.contains(">1.00× VACUUM INTO"), "the ratio at the largest size (100 MB), not at 11 MB")
        #expect(svg.contains("ratio = Backstage's time ÷ the baseline's"), "the ratio's definition on the chart")
        #expect(svg.contains("median of 3 runs, whiskers from the fastest to the slowest"))
        #expect(svg.contains(">data size (log scale)</text>") && svg.contains(">10 MB</text>") && svg.contains(">100 MB</text>"))
        #expect((try? XMLDocument(xmlString: svg)) != nil, "well-formed XML, as a browser needs it")
    }

    /// Rendered to PNG by librsvg, as a browser or a README viewer would draw it.
    @Test func theChartRendersToPNG() throws {
        let scratch = try TemporaryDirectory()
        let svg = scratch.url.appending(path: "chart.svg"), png = scratch.url.appending(path: "chart.png")
        let drawn = BenchChart.svg(Self.report())
        #expect(ChartText.overlaps(in: drawn).isEmpty, "no two labels overlap: \(ChartText.overlaps(in: drawn))")
        try Data(drawn.utf8).write(to: svg)
        let rendered = try runProcess("/usr/bin/rsvg-convert", ["--format", "png", "--output", png.path, svg.path])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        let bytes = try Data(contentsOf: png)
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "a PNG")
        let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
        #expect(drawn.contains("width=\"\(width)\" height=\"\(height)\""), "drawn at the size the SVG declares")
        #expect(width > 1000 && width < 1600 && height > 300 && height < 500, "two panels side by side: \(width)×\(height)")
        #expect(bytes.count > 20_000, "lines, labels and legends drawn, not a blank page (\(bytes.count) bytes)")
    }

    /// The real thing at a small size, warm only: every case runs, every Backstage case finds its baselines.
    @Test func benchMeasuresEveryCaseAgainstItsBaselines() throws {
        let scratch = try TemporaryDirectory()
        let json = scratch.path + "/bench.json"
        let result = try runProcess(backstageExecutable, ["bench", "--allow-debug", "--sizes", "1MB", "--runs", "1", "--cache", "warm", "--json", json, "--svg", scratch.path + "/bench.svg",
                                                               "--workspace", scratch.path + "/work", "--generate-catalog", cookbookCatalog.path])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder.iso8601.decode(BenchReport.self, from: Data(contentsOf: URL(filePath: json)))
        let cases = Set(report.ratios.map(\.name))
        #expect(cases == ["needsUpgrade · nothing pending", "relocate · copy → /dev/shm", "split", "migrate schema", "export zip (deflate 6)", "export zip · incompressible",
                          "import tar.gz", "export tar.gz", "export tar.zst", "generate · Notes", "generate · Cookbook"], "the sample's generation, and the captured app's asked for")
        #expect(report.ratios.count == 11 && report.ratios.allSatisfy { $0.cache == .warm })
        #expect(report.ratios.contains { $0.name == "generate · Cookbook" && $0.baseline == "sqlite3 shell · Cookbook" }, "its shell script ran")
        #expect(report.results.allSatisfy { $0.seconds > 0 && ($0.peakBytes > 0 || $0.bytes == 0) })
        #expect(report.needsUpgradeMicroseconds > 0)
        #expect(report.targets.contains { $0.target.title == "generate Cookbook" }, "a target for each app whose generation it timed")
        #expect(report.targets.contains { $0.target.title == "split" && $0.cache == .warm && $0.met != nil }, "measured at 1 MB")
        #expect(result.stdout.contains("relocate · rename") && result.stdout.contains("VACUUM INTO") && result.stdout.contains("targets: "))
        #expect(FileManager.default.fileExists(atPath: scratch.path + "/bench.svg"))
        // A debug build's figures are labelled, never judged: it misses speed targets by construction.
        let missed = report.missedTargets.count
        #expect(missed == 0 || result.stderr.contains("\(missed) of \(report.targets.count) targets missed, not judged: this backstage is a debug build"), "\(result.stderr)")
        // The baselines are the system's tools: their times never say "debug", Backstage's do.
        let rows = result.stdout.split(separator: "\n").filter { $0.contains("VACUUM INTO") }
        #expect(!rows.isEmpty && rows.allSatisfy { $0.components(separatedBy: " debug").count == 3 }, "Backstage's time and the ratio say debug, the baseline's time does not: \(rows)")
    }
}

extension JSONDecoder {
    static var iso8601: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
