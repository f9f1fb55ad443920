import Foundation

/// Draws a ``BenchReport`` (or a ``ChainBenchReport``) as an SVG: one panel per job (relocate,
/// split, export, import, generate...), time against size on log–log axes, each panel's axes
/// fitted to its own data and spanning only the sizes measured. Every series has its own colour
/// (the Okabe–Ito palette, safe for colour-blind readers) and marker; Backstage's cases are solid
/// lines and their baselines dashed; each point is the median with a whisker from the fastest to
/// the slowest run; the ratio to each baseline is written at the largest size.
public enum BenchChart {
    /// Okabe–Ito's colour-blind-safe colours, without the yellow that does not show on white.
    public static let palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
    /// Markers, one per series in a panel, alongside its colour.
    public static let markers = ["circle", "square", "triangle", "diamond", "triangle-down", "cross", "plus"]
    /// The width a character of text is taken to have, as a share of its font size (DejaVu Sans
    /// and Helvetica average under 0.6 em): labels are laid out so these boxes never overlap.
    public static let characterWidth = 0.6

    /// One line of a panel: its points (median, fastest and slowest run) and, for a Backstage case,
    /// the ratios written under its legend entry.
    struct Series {
        var name: String
        var dashed: Bool
        var points: [(bytes: Int64, median: Double, low: Double, high: Double)]
        var notes: [String] = []
    }

    struct Panel {
        var title: String
        var series: [Series]
    }

    /// The job a case belongs to: the first word of its name (`relocate · copy` → `relocate`); the
    /// export of incompressible files has a panel of its own, beside its copy.
    static func job(of name: String) -> String {
        if name.hasSuffix("· incompressible") { return "export · incompressible" }
        return String(name.split(whereSeparator: { $0 == " " || $0 == "·" }).first ?? Substring(name)).lowercased()
    }

    public static func svg(
        _ full: BenchReport, title: String = "Backstage: time against data size, per job"
    )
        -> String
    {
        // The warm runs (the table has the cold ones too), and only what was measured at a size.
        var report = full
        report.results = full.results.filter { $0.cache == .warm && $0.bytes > 0 }
        let points = report.results.filter { $0.seconds > 0 && $0.bytes > 0 }
        var jobs: [(name: String, cases: [String])] = []
        for result in report.results where result.kind == .backstage {
            let job = job(of: result.name)
            if let index = jobs.firstIndex(where: { $0.name == job }) {
                if !jobs[index].cases.contains(result.name) { jobs[index].cases.append(result.name) }
            } else {
                jobs.append((job, [result.name]))
            }
        }
        func series(_ name: String, dashed: Bool) -> Series {
            let mine = points.filter { $0.name == name }.sorted { $0.bytes < $1.bytes }
            return Series(
                name: name, dashed: dashed,
                points: mine.map { result in
                    (
                        result.bytes, result.seconds, result.runs.min() ?? result.seconds,
                        result.runs.max() ?? result.seconds
                    )
                })
        }
        let debug = report.debugBuild == true ? " (debug)" : ""
        let panels = jobs.map { job -> Panel in
            var lines: [Series] = []
            for name in job.cases {
                var line = series(name, dashed: false)
                if let last = line.points.last {
                    line.notes = report.ratios.filter { $0.name == name && $0.bytes == last.bytes }.compactMap {
                        ratio in
                        guard let text = BenchReport.ratioText(ratio) else { return nil }
                        return "\(text) \(ratio.baseline)\(debug)"
                    }
                }
                lines.append(line)
                for baseline in report.results where baseline.name == name {
                    for other in baseline.baselines where !lines.contains(where: { $0.name == other }) {
                        let dashedLine = series(other, dashed: true)
                        if !dashedLine.points.isEmpty { lines.append(dashedLine) }
                    }
                }
            }
            return Panel(title: job.name, series: lines.filter { !$0.points.isEmpty })
        }
        let spread = points.contains { ($0.runs.max() ?? 0) > ($0.runs.min() ?? 0) }
        let runs =
            report.runsPerCase == 1
            ? "one run per point"
            : "median of \(report.runsPerCase) runs" + (spread ? ", whiskers from the fastest to the slowest" : "")
        let footer = [
            "ratio = Backstage's time ÷ the baseline's, at the largest size measured, warm cache; "
                + "solid: Backstage, dashed: its baselines",
            "\(report.machine), \(report.date.formatted(.iso8601.year().month().day())), \(runs)"
                + (report.debugBuild == true ? "; a debug build: slower than a release build" : ""),
        ]
        return render(
            panels.filter { !$0.series.isEmpty }, title: title + (report.debugBuild == true ? " (debug build)" : ""),
            footer: footer)
    }

    public static func svg(_ report: ChainBenchReport) -> String {
        let sizes = Set(report.steps.map(\.size)).sorted()
        var lines = [
            Series(
                name: "whole chain", dashed: false,
                points: sizes.compactMap { size in
                    let total = report.total(at: size)
                    return total > 0 ? (size, total, total, total) : nil
                })
        ]
        var names: [String] = []
        for step in report.steps where !names.contains(step.label) { names.append(step.label) }
        for name in names {
            let mine = report.steps.filter { $0.label == name && $0.seconds > 0 }.sorted { $0.size < $1.size }
            var line = Series(
                name: name, dashed: false,
                points: mine.map { step in
                    (step.size, step.seconds, step.fastest ?? step.seconds, step.slowest ?? step.seconds)
                })
            if mine.isEmpty { line.notes = ["under 1 ms at every size"] }
            lines.append(line)
        }
        let estimate = Series(
            name: "Upgrader's estimate of the chain", dashed: true,
            points: sizes.compactMap { size in
                let total = report.steps.filter { $0.size == size }.reduce(0) { $0 + $1.estimate }
                return total > 0 ? (size, total, total, total) : nil
            })
        if !estimate.points.isEmpty { lines.append(estimate) }
        let runs =
            (report.runs ?? 0) > 1
            ? "median of \(report.runs ?? 0) runs, whiskers from the fastest to the slowest" : "one run per point"
        let footer = [
            "each step's time leaves out the start of the backstage process that ran it; dashed: what Upgrader estimated",
            "\(report.machine), \(report.date.formatted(.iso8601.year().month().day())), \(runs)"
                + (report.debugBuild == true ? "; a debug build: slower than a release build" : ""),
        ]
        let title = "\(report.app) \(report.from) → \(report.to): time of each step against data size"
        return render(
            [Panel(title: "upgrade chain", series: lines)],
            title: title + (report.debugBuild == true ? " (debug build)" : ""),
            footer: footer)
    }

    // MARK: Layout

    static func textWidth(_ text: String, size: Double) -> Double { Double(text.count) * size * characterWidth }

    static func render(_ panels: [Panel], title: String, footer: [String]) -> String {
        guard !panels.isEmpty else { return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>" }
        let labels = panels.flatMap { $0.series.flatMap { [$0.name] + $0.notes } }
        let legendWidth = max(160, (labels.map { textWidth($0, size: 12) }.max() ?? 0) + 60)
        let plotWidth = 460.0
        let entries = panels.map { $0.series.reduce(0) { $0 + 1 + $1.notes.count } }.max() ?? 0
        let panel = (width: 92 + plotWidth + legendWidth, height: max(300, 34 + Double(entries) * 18 + 20 + 60))
        let columns = panels.count > 1 ? 2 : 1
        let rows = (panels.count + columns - 1) / columns
        let footerWidth = footer.map { textWidth($0, size: 11) }.max() ?? 0
        let width = max(panel.width * Double(columns) + 20, footerWidth + 40, textWidth(title, size: 17) + 40)
        let height = panel.height * Double(rows) + 50 + Double(footer.count) * 16 + 10
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            \(text(title, x: 20, y: 28, size: 17, extra: " font-weight=\"bold\""))

            """
        for (index, item) in panels.enumerated() {
            let origin = (x: 10 + Double(index % columns) * panel.width, y: 45 + Double(index / columns) * panel.height)
            svg += panelSVG(item, origin: origin, size: panel, plotWidth: plotWidth)
        }
        for (index, line) in footer.enumerated() {
            let y = height - 12 - Double(footer.count - 1 - index) * 16
            svg += text(line, x: 20, y: y, size: 11, extra: " fill=\"#444\"") + "\n"
        }
        return svg + "</svg>\n"
    }

    /// The decades and their 2 and 5 between `low` and `high` (log10), or every decade when that
    /// makes more than eight.
    static func ticks(low: Double, high: Double) -> [Double] {
        var values: [Double] = []
        for decade in Int(floor(low))...Int(ceil(high)) {
            for mantissa in [1.0, 2, 5] {
                let value = log10(mantissa) + Double(decade)
                if value >= low - 1e-9, value <= high + 1e-9 { values.append(value) }
            }
        }
        if values.count > 8 { values = values.filter { abs($0 - $0.rounded()) < 1e-9 } }
        if values.count < 2 { values = [low, high] }
        return values
    }

    private static func panelSVG(
        _ panel: Panel, origin: (x: Double, y: Double), size: (width: Double, height: Double),
        plotWidth: Double
    ) -> String {
        let plot = (
            left: origin.x + 92, top: origin.y + 34, right: origin.x + 92 + plotWidth,
            bottom: origin.y + size.height - 60
        )
        // A run too short to measure (under 1 ms) does not stretch the axis down to nothing.
        var panel = panel
        for index in panel.series.indices {
            panel.series[index].points = panel.series[index].points.filter { $0.median >= 0.001 }.map { point in
                (point.bytes, point.median, max(point.low, 0.001), max(point.high, point.median))
            }
        }
        let all = panel.series.flatMap(\.points)
        guard !all.isEmpty else { return "" }
        let sizes = Set(all.map(\.bytes)).sorted()
        var xLow = log10(Double(sizes.first!))
        var xHigh = log10(Double(sizes.last!))
        if xHigh - xLow < 0.1 {
            xLow -= 0.5
            xHigh += 0.5
        }
        let xPad = (xHigh - xLow) * 0.06
        xLow -= xPad
        xHigh += xPad
        var yLow = log10(all.map { max($0.low, 1e-6) }.min()!)
        var yHigh = log10(all.map { max($0.high, 1e-6) }.max()!)
        if yHigh - yLow < 0.3 {
            let middle = (yLow + yHigh) / 2
            yLow = middle - 0.15
            yHigh = middle + 0.15
        }
        let yPad = (yHigh - yLow) * 0.08
        yLow -= yPad
        yHigh += yPad
        func x(_ bytes: Int64) -> Double {
            plot.left + (log10(Double(bytes)) - xLow) / (xHigh - xLow) * (plot.right - plot.left)
        }
        func y(_ seconds: Double) -> Double {
            plot.bottom - (log10(max(seconds, 1e-6)) - yLow) / (yHigh - yLow) * (plot.bottom - plot.top)
        }

        var svg = "<g class=\"panel\" data-job=\"\(escape(panel.title))\">\n"
        svg += text(panel.title, x: plot.left, y: origin.y + 20, size: 14, extra: " font-weight=\"bold\"") + "\n"
        // The sizes measured, each labelled where its label has room: the largest and the smallest first.
        var placed: [(left: Double, right: Double)] = []
        for bytes in sizes {
            let px = x(bytes)
            svg +=
                "<line x1=\"\(f(px))\" y1=\"\(f(plot.top))\" x2=\"\(f(px))\" y2=\"\(f(plot.bottom))\" stroke=\"#e5e5e5\"/>\n"
        }
        for bytes in [sizes.last!, sizes.first!] + sizes.dropFirst().dropLast().reversed() {
            let px = x(bytes)
            let label = BenchReport.size(bytes)
            let half = textWidth(label, size: 12) / 2
            guard !placed.contains(where: { px - half < $0.right + 6 && $0.left - 6 < px + half }) else { continue }
            svg += text(label, x: px, y: plot.bottom + 16, size: 12, extra: " text-anchor=\"middle\"") + "\n"
            placed.append((px - half, px + half))
        }
        var lastTop = Double.infinity
        for tick in ticks(low: yLow, high: yHigh) {
            let py = y(pow(10, tick))
            svg +=
                "<line x1=\"\(f(plot.left))\" y1=\"\(f(py))\" x2=\"\(f(plot.right))\" y2=\"\(f(py))\" stroke=\"#e5e5e5\"/>\n"
            guard py + 4 < lastTop - 12 else { continue }
            svg +=
                text(tickTime(pow(10, tick)), x: plot.left - 6, y: py + 4, size: 12, extra: " text-anchor=\"end\"")
                + "\n"
            lastTop = py + 4
        }
        svg +=
            "<rect x=\"\(f(plot.left))\" y=\"\(f(plot.top))\" width=\"\(f(plot.right - plot.left))\" "
            + "height=\"\(f(plot.bottom - plot.top))\" fill=\"none\" stroke=\"#333\"/>\n"
        svg +=
            text(
                "data size (log scale)", x: (plot.left + plot.right) / 2, y: plot.bottom + 36, size: 12,
                extra: " text-anchor=\"middle\"") + "\n"
        let middle = (plot.top + plot.bottom) / 2
        svg +=
            "<text transform=\"translate(\(f(origin.x + 16)) \(f(middle))) rotate(-90)\" font-size=\"12\" "
            + "text-anchor=\"middle\">time (log scale)</text>\n"

        var legendY = plot.top + 6
        for (index, line) in panel.series.enumerated() {
            // Past seven series the colours come round again, each with another marker.
            let color = palette[index % palette.count]
            let marker = markers[(index + index / palette.count) % markers.count]
            let dash = line.dashed ? " stroke-dasharray=\"6 4\"" : ""
            if line.points.count > 1 {
                let path = line.points.map { "\(f(x($0.bytes))),\(f(y($0.median)))" }.joined(separator: " ")
                svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"\(dash)/>\n"
            }
            for point in line.points {
                let px = x(point.bytes)
                if point.high > point.low {
                    let top = y(point.high)
                    let bottom = y(point.low)
                    svg +=
                        "<path d=\"M\(f(px - 4)) \(f(top))H\(f(px + 4))M\(f(px)) \(f(top))V\(f(bottom))"
                        + "M\(f(px - 4)) \(f(bottom))H\(f(px + 4))\" "
                        + "stroke=\"\(color)\" stroke-width=\"1.2\" fill=\"none\"/>\n"
                }
                svg += markerSVG(
                    marker, x: px, y: y(point.median), color: color,
                    title: "\(line.name): \(BenchReport.time(point.median)) at \(BenchReport.size(point.bytes))")
            }
            let legendX = plot.right + 14
            svg +=
                "<line x1=\"\(f(legendX))\" y1=\"\(f(legendY))\" x2=\"\(f(legendX + 30))\" y2=\"\(f(legendY))\" stroke=\"\(color)\" "
                + "stroke-width=\"2\"\(dash)/>\n"
            svg += markerSVG(marker, x: legendX + 15, y: legendY, color: color, title: nil)
            svg += text(line.name, x: legendX + 38, y: legendY + 4, size: 12) + "\n"
            legendY += 18
            for note in line.notes {
                svg += text(note, x: legendX + 38, y: legendY + 4, size: 11, extra: " fill=\"\(color)\"") + "\n"
                legendY += 18
            }
        }
        return svg + "</g>\n"
    }

    private static func markerSVG(_ marker: String, x: Double, y: Double, color: String, title: String?) -> String {
        let shape: String
        switch marker {
        case "square":
            shape = "<rect x=\"\(f(x - 3.5))\" y=\"\(f(y - 3.5))\" width=\"7\" height=\"7\" fill=\"\(color)\""
        case "triangle":
            shape =
                "<path d=\"M\(f(x)) \(f(y - 4.5))L\(f(x + 4.5)) \(f(y + 3.5))L\(f(x - 4.5)) \(f(y + 3.5))Z\" fill=\"\(color)\""
        case "triangle-down":
            shape =
                "<path d=\"M\(f(x)) \(f(y + 4.5))L\(f(x + 4.5)) \(f(y - 3.5))L\(f(x - 4.5)) \(f(y - 3.5))Z\" fill=\"\(color)\""
        case "diamond":
            shape =
                "<path d=\"M\(f(x)) \(f(y - 5))L\(f(x + 5)) \(f(y))L\(f(x)) \(f(y + 5))L\(f(x - 5)) \(f(y))Z\" fill=\"\(color)\""
        case "cross":
            shape =
                "<path d=\"M\(f(x - 4)) \(f(y - 4))L\(f(x + 4)) \(f(y + 4))M\(f(x - 4)) \(f(y + 4))L\(f(x + 4)) \(f(y - 4))\" "
                + "stroke=\"\(color)\" stroke-width=\"2\" fill=\"none\""
        case "plus":
            shape =
                "<path d=\"M\(f(x - 5)) \(f(y))H\(f(x + 5))M\(f(x)) \(f(y - 5))V\(f(y + 5))\" "
                + "stroke=\"\(color)\" stroke-width=\"2\" fill=\"none\""
        default: shape = "<circle cx=\"\(f(x))\" cy=\"\(f(y))\" r=\"4\" fill=\"\(color)\""
        }
        guard let title else { return shape + "/>\n" }
        return shape + "><title>\(escape(title))</title>"
            + (shape.hasPrefix("<circle") ? "</circle>" : shape.hasPrefix("<rect") ? "</rect>" : "</path>") + "\n"
    }

    /// A tick's time: "50 ms", "2 s", "0.5 ms".
    static func tickTime(_ seconds: Double) -> String {
        func trim(_ value: Double) -> String {
            String(format: value >= 10 ? "%.0f" : value >= 1 ? "%.3g" : "%.2g", value)
        }
        return seconds >= 1 ? trim(seconds) + " s" : trim(seconds * 1000) + " ms"
    }

    static func text(_ content: String, x: Double, y: Double, size: Double, extra: String = "") -> String {
        "<text x=\"\(f(x))\" y=\"\(f(y))\" font-size=\"\(f(size))\"\(extra)>\(escape(content))</text>"
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
