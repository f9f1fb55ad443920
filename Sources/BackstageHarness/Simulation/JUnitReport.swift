import Foundation

/// Simulation runs as JUnit XML, the report format CI systems (GitHub Actions, GitLab, Jenkins)
/// display: one test suite per simulation, one test case per run (named by its path when there are
/// several, its size, state and crash point), the broken invariants as its failure.
public enum JUnitReport {
    public static func xml(_ runs: [SimulationRun], suite: String, seconds: Double) -> String {
        let failures = runs.filter { !$0.passed }.count
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8"?>"#,
            #"<testsuites name="backstage simulate" tests="\#(runs.count)" failures="\#(failures)" time="\#(time(seconds))">"#,
            #"  <testsuite name="\#(escape(suite))" tests="\#(runs.count)" failures="\#(failures)" errors="0" skipped="0" time="\#(time(seconds))">"#,
        ]
        // Each name says the path when the runs hold several (`--paths every`, a merge of its shards).
        let paths = Set(runs.map { "\($0.from)→\($0.to)" }).count > 1
        for run in runs {
            let name =
                (paths ? "\(run.from)→\(run.to), " : "")
                + "\(run.size) bytes, \(run.state.rawValue), crash \(run.crashPoint?.description ?? "none")"
            let open =
                #"    <testcase classname="\#(escape(suite))" name="\#(escape(name))" time="\#(time(run.seconds))""#
            if run.passed {
                lines.append(open + "/>")
            } else {
                lines.append(open + ">")
                lines.append(
                    #"      <failure message="\#(escape(run.failures[0]))" type="invariant">\#(escape(run.failures.joined(separator: "\n")))</failure>"#
                )
                lines.append("    </testcase>")
            }
        }
        lines += ["  </testsuite>", "</testsuites>", ""]
        return lines.joined(separator: "\n")
    }

    private static func time(_ seconds: Double) -> String { String(format: "%.3f", seconds) }

    /// XML text and attribute escaping; characters XML 1.0 cannot carry become U+FFFD.
    static func escape(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case "\t", "\n", "\r": result.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value) {
                    result += "\u{FFFD}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }
}
