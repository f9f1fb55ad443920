import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

private let mb: Int64 = 1_000_000

/// What a person reads from `backstage bench`: projections that say when they extrapolate, a debug
/// build refused or labelled, every output of the catalog mode, and a chart whose labels never overlap.
@Suite struct BenchOutputTests {
    /// A run at 1 MB and 2 MB only, one case with a baseline.
    static func tinyReport(debug: Bool = false) -> BenchReport {
        var report = BenchReport(
            date: Date(timeIntervalSince1970: 1_790_000_000), machine: "2 cores", runsPerCase: 1, sizes: [mb, 2 * mb],
            results: [
                BenchResult(
                    name: "split", kind: .backstage, bytes: mb, runs: [0.010], peakBytes: 30 << 20,
                    baselines: ["VACUUM INTO"]),
                BenchResult(
                    name: "split", kind: .backstage, bytes: 2 * mb, runs: [0.020], peakBytes: 30 << 20,
                    baselines: ["VACUUM INTO"]),
                BenchResult(name: "VACUUM INTO", kind: .baseline, bytes: mb, runs: [0.0004], peakBytes: 5 << 20),
                BenchResult(name: "VACUUM INTO", kind: .baseline, bytes: 2 * mb, runs: [0.010], peakBytes: 5 << 20),
            ],
            needsUpgradeMicroseconds: 7, budget: 20, skipped: [])
        report.debugBuild = debug ? true : nil
        return report
    }

    @Test func aProjectionPastTenTimesTheSizesMeasuredSaysSoOnItsLine() throws {
        let table = Self.tinyReport().table
        let line = try #require(table.split(separator: "\n").first { $0.hasPrefix("projected split") })
        #expect(line.contains("1 GB 10.00 s, 500× past the 2 MB measured: an extrapolation"), "\(line)")
        #expect(line.contains("10 GB 100.00 s, 5000× past the 2 MB measured"), "\(line)")
        #expect(Self.tinyReport().markdown.contains("500× past the 2 MB measured: an extrapolation"))

        let chain = ChainBenchReport(
            app: "Cookbook", from: "v1", to: "v2", machine: "2 cores", date: Date(), budget: 20,
            steps: [
                .init(
                    size: mb, plan: "v1-to-v2", index: 1, step: "migrate", bytes: mb, seconds: 0.010, estimate: 0.012,
                    peakBytes: 1 << 20),
                .init(
                    size: 4 * mb, plan: "v1-to-v2", index: 1, step: "migrate", bytes: 4 * mb, seconds: 0.040,
                    estimate: 0.040, peakBytes: 1 << 20),
            ])
        let projected = chain.table.split(separator: "\n").filter { $0.contains("projected at") }
        #expect(
            projected.count == 2 && projected.allSatisfy { $0.contains("past the 4 MB measured: an extrapolation") },
            "\(projected)")
    }

    @Test func aTimeTooShortToMeasureSaysUnderOneMillisecondNeverAZeroRatio() {
        let table = Self.tinyReport().table
        let row = table.split(separator: "\n").first { $0.hasPrefix("1 MB") }
        #expect(
            row.map { $0.contains("under 1 ms") && $0.hasSuffix("—") && !$0.contains("0.00×") } == true, "\(row ?? "")")
        let chain = ChainBenchReport(
            app: "Cookbook", from: "v1", to: "v2", machine: "2 cores", date: Date(), budget: 20,
            steps: [
                .init(
                    size: mb, plan: "v1-to-v2", index: 2,
                    step: "quarantine the stale sidecars left by the previous version of the app",
                    bytes: 0, seconds: 0, estimate: 0.001, peakBytes: 1 << 20)
            ])
        #expect(!chain.table.contains("0.00×") && chain.table.contains("under 1 ms"))
        #expect(
            chain.table.contains("v1-to-v2 #2: quarantine the stale sidecars left by the previous version of the app "),
            "the name whole")
        #expect(!chain.table.contains("…"))
    }

    @Test func aDebugRunSaysDebugBesideEveryFigure() {
        let report = Self.tinyReport(debug: true)
        let rows = report.table.split(separator: "\n").filter {
            $0.hasPrefix("1 MB") || $0.hasPrefix("2 MB") || $0.hasPrefix("projected")
        }
        #expect(rows.count == 3 && rows.allSatisfy { $0.contains("debug") }, "\(rows)")
        #expect(report.markdown.hasPrefix("**A debug build**"))
        #expect(BenchChart.svg(report).contains("(debug build)"))
    }

    /// The test binary's `backstage` is the debug build `swift build` makes.
    @Test func aDebugBuildIsRefusedWithoutAllowDebug() throws {
        let scratch = try TemporaryDirectory()
        let result = try runProcess(
            backstageExecutable, ["bench", "--sizes", "1MB", "--workspace", scratch.path + "/work"])
        #expect(result.status == 2, "\(result.stdout) \(result.stderr)")
        #expect(
            result.stderr.contains("this backstage is a debug build") && result.stderr.contains("--allow-debug"),
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/work"), "nothing generated")
    }

    @Test func theChartsLabelsNeverOverlapAndItsAxesSpanTheSizesMeasured() throws {
        for svg in [
            BenchChart.svg(BenchTests.report()), BenchChart.svg(BenchTests.targetReport()),
            BenchChart.svg(Self.tinyReport(debug: true)),
        ] {
            let overlaps = ChartText.overlaps(in: svg)
            #expect(overlaps.isEmpty, "\(overlaps)")
        }
        let svg = BenchChart.svg(BenchTests.targetReport())
        #expect(
            !svg.contains(">1 GB</text>") && !svg.contains(">1 KB</text>"), "no empty decade past the sizes measured")
        let once = BenchChart.svg(Self.tinyReport())
        #expect(once.contains("one run per point") && !once.contains("median of 1 runs"))
        // Each series of a panel has its own colour and marker.
        let split = svg.components(separatedBy: "data-job=\"split\"")[1].components(separatedBy: "</g>")[0]
        #expect(
            split.contains(BenchChart.palette[0]) && split.contains(BenchChart.palette[1]) && split.contains("<circle")
                && split.contains("<rect"))
    }

    /// A saved report is printed and drawn again without measuring (so a debug build may do it).
    @Test func aSavedReportIsDrawnAgainWithoutMeasuring() throws {
        let scratch = try TemporaryDirectory()
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try encoder.encode(BenchTests.targetReport()).write(to: scratch.url.appending(path: "run.json"))
        let svg = scratch.path + "/again.svg"
        let result = try runProcess(
            backstageExecutable, ["bench", "--replot", scratch.path + "/run.json", "--svg", svg, "--markdown"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("| 600 MB | warm | split | 1.60 s |") && !result.stdout.contains("debug"))
        #expect(try String(contentsOfFile: svg, encoding: .utf8) == BenchChart.svg(BenchTests.targetReport()))
        try Data("{}".utf8).write(to: scratch.url.appending(path: "other.json"))
        let refused = try runProcess(backstageExecutable, ["bench", "--replot", scratch.path + "/other.json"])
        #expect(
            refused.status == 3
                && refused.stderr.contains("other.json is not a report that backstage bench --json wrote"))
    }

    /// `bench --catalog` at tiny sizes, every output: the table, `--markdown`, `--json`, and `--svg`
    /// rendered to PNG with no overlapping label.
    @Test func benchOfACatalogWritesEveryFormat() throws {
        let scratch = try TemporaryDirectory()
        let svg = scratch.path + "/chain.svg"
        let json = scratch.path + "/chain.json"
        let png = scratch.path + "/chain.png"
        let arguments = [
            "bench", "--catalog", cookbookCatalog.path, "--from", "v1", "--to", "v3", "--sizes", "200KB,400KB",
            "--runs", "1",
            "--allow-debug",
        ]
        let table = try runProcess(
            backstageExecutable, arguments + ["--svg", svg, "--json", json, "--workspace", scratch.path + "/work"])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(
            table.stdout.contains("a debug build") && table.stdout.contains("projected at 1 GB")
                && table.stdout.contains("v2-to-v3 #1: migrate"))
        #expect(table.stdout.contains("past the 400 KB measured: an extrapolation"))
        let report = try JSONDecoder.iso8601.decode(ChainBenchReport.self, from: Data(contentsOf: URL(filePath: json)))
        #expect(report.debugBuild == true && report.runs == 1 && Set(report.steps.map(\.size)).count == 2)

        let chart = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(
            chart.contains("whole chain") && chart.contains("v2-to-v3 #1: migrate") && chart.contains("(debug build)"))
        #expect(ChartText.overlaps(in: chart).isEmpty, "\(ChartText.overlaps(in: chart))")
        let rendered = try runProcess("/usr/bin/rsvg-convert", ["--format", "png", "--output", png, svg])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        let bytes = try Data(contentsOf: URL(filePath: png))
        let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
        #expect(width > 600 && height > 300 && bytes.count > 10_000, "\(width)×\(height), \(bytes.count) bytes")

        let markdown = try runProcess(
            backstageExecutable, arguments + ["--markdown", "--workspace", scratch.path + "/again"])
        #expect(markdown.status == 0, "\(markdown.stderr)")
        #expect(markdown.stdout.contains("| size | step | time | estimate | est/actual | peak RSS |"))
        #expect(markdown.stdout.contains("- projected at 1 GB"))
    }
}

/// The text of an SVG, each element's box estimated from its position, font size, anchor and length.
enum ChartText {
    struct Box: CustomStringConvertible {
        var text: String
        var left, top, right, bottom: Double
        var description: String { "\"\(text)\" (\(Int(left)),\(Int(top)))–(\(Int(right)),\(Int(bottom)))" }
        func intersects(_ other: Box) -> Bool {
            left < other.right && other.left < right && top < other.bottom && other.top < bottom
        }
    }

    static func boxes(in svg: String) -> [Box] {
        let pattern = try! NSRegularExpression(pattern: "<text([^>]*)>([^<]*)</text>")
        let range = NSRange(svg.startIndex..., in: svg)
        return pattern.matches(in: svg, range: range).map { match in
            let attributes = String(svg[Range(match.range(at: 1), in: svg)!])
            let text = String(svg[Range(match.range(at: 2), in: svg)!])
                .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                .replacingOccurrences(of: "&amp;", with: "&")
            func number(_ name: String) -> Double? {
                guard let found = attributes.range(of: " \(name)=\"") else { return nil }
                return Double(attributes[found.upperBound...].prefix { $0 != "\"" })
            }
            let size = number("font-size") ?? 12
            let width = Double(text.count) * size * 0.6
            if let translate = attributes.range(of: "translate(") {
                // Rotated -90° about (x, y), anchored in the middle: a tall, narrow box.
                let numbers = attributes[translate.upperBound...].prefix { $0 != ")" }.split(separator: " ").compactMap
                { Double($0) }
                let (x, y) = (numbers[0], numbers[1])
                return Box(
                    text: text, left: x - 0.8 * size, top: y - width / 2, right: x + 0.25 * size, bottom: y + width / 2)
            }
            var left = number("x") ?? 0
            if attributes.contains("text-anchor=\"middle\"") { left -= width / 2 }
            if attributes.contains("text-anchor=\"end\"") { left -= width }
            let baseline = number("y") ?? 0
            return Box(
                text: text, left: left, top: baseline - 0.8 * size, right: left + width, bottom: baseline + 0.25 * size)
        }
    }

    /// Every pair of text boxes that intersect, and every box outside the picture.
    static func overlaps(in svg: String) -> [String] {
        let boxes = boxes(in: svg)
        var found: [String] = []
        for (index, box) in boxes.enumerated() {
            for other in boxes[(index + 1)...] where box.intersects(other) { found.append("\(box) × \(other)") }
        }
        if let widthRange = svg.range(of: "width=\""),
            let width = Double(svg[widthRange.upperBound...].prefix { $0 != "\"" })
        {
            found += boxes.filter { $0.left < 0 || $0.right > width }.map {
                "\($0) outside the \(Int(width)) px picture"
            }
        }
        return found
    }
}
