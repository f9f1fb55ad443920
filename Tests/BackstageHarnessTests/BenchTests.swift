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
        #expect(Self.report().markdown.contains("| 100 MB | split | 1.00 s | 40 MB | VACUUM INTO | 500.0 ms | 2.00× |"))
    }

    @Test func theChartHasAPanelPerJobEachCaseBesideItsBaselinesAndTheRatio() throws {
        let svg = BenchChart.svg(Self.report())
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        let panels = svg.components(separatedBy: "<g class=\"panel\" data-job=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        #expect(panels == ["relocate", "split"], "one panel per job")
        let relocate = try #require(svg.range(of: "data-job=\"relocate\"")), split = try #require(svg.range(of: "data-job=\"split\""))
        let relocatePanel = String(svg[relocate.lowerBound..<split.lowerBound]), splitPanel = String(svg[split.lowerBound...])
        #expect(relocatePanel.components(separatedBy: "<polyline").count - 1 == 2 && relocatePanel.contains(">cp + fsync</text>") && !relocatePanel.contains(">VACUUM INTO</text>"))
        #expect(splitPanel.components(separatedBy: "<polyline").count - 1 == 2 && splitPanel.contains(">VACUUM INTO</text>"))
        #expect(svg.components(separatedBy: "<polyline").count - 1 == 4 && svg.components(separatedBy: "stroke-dasharray").count - 1 == 4, "baselines dashed, in the plot and the legend")
        // Each Backstage line and its baselines share a colour family.
        let family = BenchChart.families[0]
        #expect(relocatePanel.contains("stroke=\"\(family[0])\" stroke-width=\"3\"") && relocatePanel.contains("stroke=\"\(family[1])\" stroke-width=\"2\""))
        #expect(splitPanel.contains(">2.00× VACUUM INTO</text>") && !splitPanel.contains(">1.00× VACUUM INTO"), "the ratio at the largest size (100 MB), not at 11 MB")
        #expect(svg.contains(">data size (log scale)</text>") && svg.contains(">10 MB</text>") && svg.contains(">100 MB</text>"))
        #expect((try? XMLDocument(xmlString: svg)) != nil, "well-formed XML, as a browser needs it")
    }

    /// Rendered to PNG by librsvg, as a browser or a README viewer would draw it.
    @Test func theChartRendersToPNG() throws {
        let scratch = try TemporaryDirectory()
        let svg = scratch.url.appending(path: "chart.svg"), png = scratch.url.appending(path: "chart.png")
        try Data(BenchChart.svg(Self.report()).utf8).write(to: svg)
        let rendered = try runProcess("/usr/bin/rsvg-convert", ["--format", "png", "--output", png.path, svg.path])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        let bytes = try Data(contentsOf: png)
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "a PNG")
        let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
        #expect(width == 1380 && height == 400, "two panels side by side: \(width)×\(height)")
        #expect(bytes.count > 20_000, "lines, labels and legends drawn, not a blank page (\(bytes.count) bytes)")
    }

    /// The real thing at a small size: every case runs, every Backstage case finds its baselines.
    @Test func benchMeasuresEveryCaseAgainstItsBaselines() throws {
        let scratch = try TemporaryDirectory()
        let json = scratch.path + "/bench.json"
        let result = try runProcess(backstageExecutable, ["bench", "--sizes", "1MB", "--runs", "1", "--json", json, "--svg", scratch.path + "/bench.svg", "--workspace", scratch.path + "/work",
                                                               "--generate-catalog", cookbookCatalog.path])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder.iso8601.decode(BenchReport.self, from: Data(contentsOf: URL(filePath: json)))
        let cases = Set(report.ratios.map(\.name))
        #expect(cases == ["relocate · rename", "relocate · copy → /dev/shm", "split", "export zip (deflate 6)", "import tar.gz", "export tar.gz", "export tar.zst",
                          "generate · Notes", "generate · Cookbook"], "the sample's generation, and the captured app's asked for")
        #expect(report.ratios.count == 13)
        #expect(report.ratios.contains { $0.name == "generate · Cookbook" && $0.baseline == "sqlite3 shell · Cookbook" }, "its shell script ran")
        #expect(report.results.allSatisfy { $0.seconds > 0 && $0.peakBytes > 0 })
        #expect(report.needsUpgradeMicroseconds > 0)
        #expect(result.stdout.contains("relocate · rename") && result.stdout.contains("VACUUM INTO"))
        #expect(FileManager.default.fileExists(atPath: scratch.path + "/bench.svg"))
    }
}

extension JSONDecoder {
    static var iso8601: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
