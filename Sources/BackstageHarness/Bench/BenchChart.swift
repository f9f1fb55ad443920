import Foundation

/// Draws a ``BenchReport`` as an SVG: time against size on log–log axes, one line per case,
/// Backstage's cases solid, baselines dashed, with labelled axes and a legend.
public enum BenchChart {
    public static func svg(_ report: BenchReport, title: String = "Backstage: time against data size") -> String {
        let width = 980.0, height = 560.0
        let plot = (left: 105.0, top: 50.0, right: 650.0, bottom: 490.0)
        var names: [String] = []
        for result in report.results where !names.contains(result.name) { names.append(result.name) }
        let points = report.results.filter { $0.seconds > 0 && $0.bytes > 0 }
        guard !points.isEmpty else { return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>" }
        // Whole decades around the data.
        let xs = points.map { log10(Double($0.bytes)) }, ys = points.map { log10($0.seconds) }
        var xMin = floor(xs.min()!), xMax = ceil(xs.max()!)
        let yMin = floor(ys.min()!), yMax = ceil(ys.max()!)
        if xMin == xMax { xMin -= 1; xMax += 1 }
        let ySpan = max(yMax - yMin, 1)
        func x(_ bytes: Int64) -> Double { plot.left + (log10(Double(bytes)) - xMin) / (xMax - xMin) * (plot.right - plot.left) }
        func y(_ seconds: Double) -> Double { plot.bottom - (log10(seconds) - yMin) / ySpan * (plot.bottom - plot.top) }
        let palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173"]

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="13">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(plot.left)" y="28" font-size="17" font-weight="bold">\(escape(title))</text>

            """
        // Grid and tick labels, one per decade.
        for decade in stride(from: xMin, through: xMax, by: 1) {
            let px = plot.left + (decade - xMin) / (xMax - xMin) * (plot.right - plot.left)
            svg += "<line x1=\"\(f(px))\" y1=\"\(plot.top)\" x2=\"\(f(px))\" y2=\"\(plot.bottom)\" stroke=\"#e5e5e5\"/>\n"
            svg += "<text x=\"\(f(px))\" y=\"\(plot.bottom + 20)\" text-anchor=\"middle\">\(escape(BenchReport.size(Int64(pow(10, decade)))))</text>\n"
        }
        for decade in stride(from: yMin, through: yMin + ySpan, by: 1) {
            let py = plot.bottom - (decade - yMin) / ySpan * (plot.bottom - plot.top)
            svg += "<line x1=\"\(plot.left)\" y1=\"\(f(py))\" x2=\"\(plot.right)\" y2=\"\(f(py))\" stroke=\"#e5e5e5\"/>\n"
            svg += "<text x=\"\(plot.left - 8)\" y=\"\(f(py + 4))\" text-anchor=\"end\">\(escape(BenchReport.time(pow(10, decade))))</text>\n"
        }
        svg += "<rect x=\"\(plot.left)\" y=\"\(plot.top)\" width=\"\(plot.right - plot.left)\" height=\"\(plot.bottom - plot.top)\" fill=\"none\" stroke=\"#333\"/>\n"
        svg += "<text x=\"\((plot.left + plot.right) / 2)\" y=\"\(plot.bottom + 45)\" text-anchor=\"middle\">data size (log scale)</text>\n"
        svg += "<text transform=\"translate(20 \((plot.top + plot.bottom) / 2)) rotate(-90)\" text-anchor=\"middle\">wall-clock time, median (log scale)</text>\n"

        // One line per case, then the legend.
        for (index, name) in names.enumerated() {
            let series = points.filter { $0.name == name }.sorted { $0.bytes < $1.bytes }
            guard let first = series.first else { continue }
            let color = palette[index % palette.count]
            let dash = first.kind == .baseline ? " stroke-dasharray=\"6 4\"" : ""
            let path = series.map { "\(f(x($0.bytes))),\(f(y($0.seconds)))" }.joined(separator: " ")
            svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2.5\"\(dash)/>\n"
            for point in series {
                svg += "<circle cx=\"\(f(x(point.bytes)))\" cy=\"\(f(y(point.seconds)))\" r=\"4\" fill=\"\(color)\"><title>\(escape(name)): \(escape(BenchReport.time(point.seconds))) at \(escape(BenchReport.size(point.bytes)))</title></circle>\n"
            }
            let ly = plot.top + 8 + Double(index) * 22
            svg += "<line x1=\"\(plot.right + 20)\" y1=\"\(f(ly))\" x2=\"\(plot.right + 52)\" y2=\"\(f(ly))\" stroke=\"\(color)\" stroke-width=\"2.5\"\(dash)/>\n"
            svg += "<text x=\"\(plot.right + 60)\" y=\"\(f(ly + 4))\">\(escape(name))</text>\n"
        }
        let note = "\(report.machine), \(report.date.formatted(.iso8601.year().month().day())), median of \(report.runsPerCase) runs; dashed: baselines"
        svg += "<text x=\"\(plot.left)\" y=\"\(height - 12)\" font-size=\"11\" fill=\"#555\">\(escape(note))</text>\n"
        svg += "</svg>\n"
        return svg
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
