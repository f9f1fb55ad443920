import Foundation

/// Draws a ``BenchReport`` as an SVG: one panel per job (relocate, split, export, import,
/// generate...), time against size on log–log axes. In each panel every Backstage case is a solid
/// line and its baselines dashed lines of the same colour family, and the ratio to each baseline
/// is written at the largest size.
public enum BenchChart {
    /// The colour families: Backstage's case first (dark), its baselines after (lighter).
    public static let families: [[String]] = [
        ["#08519c", "#4292c6", "#9ecae1", "#6baed6"],
        ["#a50f15", "#ef3b2c", "#fc9272", "#cb181d"],
        ["#006d2c", "#41ab5d", "#a1d99b", "#238b45"],
        ["#54278f", "#807dba", "#bcbddc", "#6a51a3"],
        ["#a63603", "#f16913", "#fdae6b", "#d94801"],
    ]

    /// The job a case belongs to: the first word of its name (`relocate · copy` → `relocate`).
    static func job(of name: String) -> String {
        String(name.split(whereSeparator: { $0 == " " || $0 == "·" }).first ?? Substring(name)).lowercased()
    }

    public static func svg(_ report: BenchReport, title: String = "Backstage: time against data size, per job") -> String {
        let points = report.results.filter { $0.seconds > 0 && $0.bytes > 0 }
        guard !points.isEmpty else { return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>" }
        // Jobs in the order their first Backstage case appears; each with its cases and baselines.
        var jobs: [(name: String, cases: [String])] = []
        for result in report.results where result.kind == .backstage {
            let job = job(of: result.name)
            if let index = jobs.firstIndex(where: { $0.name == job }) {
                if !jobs[index].cases.contains(result.name) { jobs[index].cases.append(result.name) }
            } else {
                jobs.append((job, [result.name]))
            }
        }
        func baselines(of name: String) -> [String] {
            var names: [String] = []
            for result in report.results where result.name == name {
                for baseline in result.baselines where !names.contains(baseline) && points.contains(where: { $0.name == baseline }) {
                    names.append(baseline)
                }
            }
            return names
        }

        let columns = jobs.count > 2 ? 2 : max(jobs.count, 1)
        let panel = (width: 680.0, height: 330.0)
        let rows = (jobs.count + columns - 1) / columns
        let width = panel.width * Double(columns) + 20, height = panel.height * Double(rows) + 70
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="20" y="28" font-size="17" font-weight="bold">\(escape(title))</text>

            """
        for (index, job) in jobs.enumerated() {
            let originX = 10 + Double(index % columns) * panel.width
            let originY = 45 + Double(index / columns) * panel.height
            var lines: [(name: String, color: String, dashed: Bool)] = []
            for (caseIndex, name) in job.cases.enumerated() {
                let family = families[(index + caseIndex) % families.count]
                lines.append((name, family[0], false))
                for (baselineIndex, baseline) in baselines(of: name).enumerated() where !lines.contains(where: { $0.name == baseline }) {
                    lines.append((baseline, family[1 + baselineIndex % (family.count - 1)], true))
                }
            }
            svg += panelSVG(job: job.name, lines: lines, points: points, origin: (originX, originY), size: panel, report: report)
        }
        let note = "\(report.machine), \(report.date.formatted(.iso8601.year().month().day())), median of \(report.runsPerCase) runs; solid: Backstage, dashed: its baselines, ratios at the largest size"
        svg += "<text x=\"20\" y=\"\(f(height - 12))\" font-size=\"11\" fill=\"#555\">\(escape(note))</text>\n"
        svg += "</svg>\n"
        return svg
    }

    private static func panelSVG(job: String, lines: [(name: String, color: String, dashed: Bool)], points: [BenchResult],
                                 origin: (x: Double, y: Double), size: (width: Double, height: Double), report: BenchReport) -> String {
        let plot = (left: origin.x + 92, top: origin.y + 30, right: origin.x + size.width - 270, bottom: origin.y + size.height - 55)
        let mine = points.filter { point in lines.contains { $0.name == point.name } }
        guard !mine.isEmpty else { return "" }
        let xs = mine.map { log10(Double($0.bytes)) }, ys = mine.map { log10($0.seconds) }
        var xMin = floor(xs.min()!), xMax = ceil(xs.max()!)
        let yMin = floor(ys.min()!), yMax = ceil(ys.max()!)
        if xMin == xMax { xMin -= 1; xMax += 1 }
        let ySpan = max(yMax - yMin, 1)
        func x(_ bytes: Int64) -> Double { plot.left + (log10(Double(bytes)) - xMin) / (xMax - xMin) * (plot.right - plot.left) }
        func y(_ seconds: Double) -> Double { plot.bottom - (log10(seconds) - yMin) / ySpan * (plot.bottom - plot.top) }

        var svg = "<g class=\"panel\" data-job=\"\(escape(job))\">\n"
        svg += "<text x=\"\(f(plot.left))\" y=\"\(f(origin.y + 18))\" font-size=\"14\" font-weight=\"bold\">\(escape(job))</text>\n"
        for decade in stride(from: xMin, through: xMax, by: 1) {
            let px = plot.left + (decade - xMin) / (xMax - xMin) * (plot.right - plot.left)
            svg += "<line x1=\"\(f(px))\" y1=\"\(f(plot.top))\" x2=\"\(f(px))\" y2=\"\(f(plot.bottom))\" stroke=\"#e5e5e5\"/>\n"
            svg += "<text x=\"\(f(px))\" y=\"\(f(plot.bottom + 16))\" text-anchor=\"middle\">\(escape(BenchReport.size(Int64(pow(10, decade)))))</text>\n"
        }
        for decade in stride(from: yMin, through: yMin + ySpan, by: 1) {
            let py = plot.bottom - (decade - yMin) / ySpan * (plot.bottom - plot.top)
            svg += "<line x1=\"\(f(plot.left))\" y1=\"\(f(py))\" x2=\"\(f(plot.right))\" y2=\"\(f(py))\" stroke=\"#e5e5e5\"/>\n"
            svg += "<text x=\"\(f(plot.left - 6))\" y=\"\(f(py + 4))\" text-anchor=\"end\">\(escape(BenchReport.time(pow(10, decade))))</text>\n"
        }
        svg += "<rect x=\"\(f(plot.left))\" y=\"\(f(plot.top))\" width=\"\(f(plot.right - plot.left))\" height=\"\(f(plot.bottom - plot.top))\" fill=\"none\" stroke=\"#333\"/>\n"
        svg += "<text x=\"\(f((plot.left + plot.right) / 2))\" y=\"\(f(plot.bottom + 34))\" text-anchor=\"middle\">data size (log scale)</text>\n"
        svg += "<text transform=\"translate(\(f(origin.x + 16)) \(f((plot.top + plot.bottom) / 2))) rotate(-90)\" text-anchor=\"middle\">time, median (log scale)</text>\n"

        var legendY = plot.top + 6
        for line in lines {
            let series = mine.filter { $0.name == line.name }.sorted { $0.bytes < $1.bytes }
            guard !series.isEmpty else { continue }
            let dash = line.dashed ? " stroke-dasharray=\"6 4\"" : ""
            let path = series.map { "\(f(x($0.bytes))),\(f(y($0.seconds)))" }.joined(separator: " ")
            svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"\(line.dashed ? "2" : "3")\"\(dash)/>\n"
            for point in series {
                svg += "<circle cx=\"\(f(x(point.bytes)))\" cy=\"\(f(y(point.seconds)))\" r=\"3.5\" fill=\"\(line.color)\"><title>\(escape(line.name)): \(escape(BenchReport.time(point.seconds))) at \(escape(BenchReport.size(point.bytes)))</title></circle>\n"
            }
            svg += "<line x1=\"\(f(plot.right + 12))\" y1=\"\(f(legendY))\" x2=\"\(f(plot.right + 38))\" y2=\"\(f(legendY))\" stroke=\"\(line.color)\" stroke-width=\"2.5\"\(dash)/>\n"
            svg += "<text x=\"\(f(plot.right + 44))\" y=\"\(f(legendY + 4))\">\(escape(line.name))</text>\n"
            legendY += 18
            // The ratio to each baseline at the largest size both were measured at.
            if !line.dashed, let last = series.last {
                for ratio in report.ratios where ratio.name == line.name && ratio.bytes == last.bytes && lines.contains(where: { $0.name == ratio.baseline }) {
                    svg += "<text x=\"\(f(plot.right + 44))\" y=\"\(f(legendY + 4))\" fill=\"\(line.color)\" font-size=\"11\">\(String(format: "%.2f×", ratio.ratio)) \(escape(ratio.baseline))</text>\n"
                    legendY += 16
                }
            }
        }
        svg += "</g>\n"
        return svg
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
