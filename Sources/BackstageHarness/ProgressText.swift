import Foundation

/// The text of a progress line for work counted in runs or cases (`simulate`, `bench`): how many are
/// done of how many, what is under way, and the time left estimated from the ones done so far.
///
/// It is a plain value: the command line draws ``line(elapsed:width:)`` on a terminal, redrawn every
/// second so the time left keeps moving while one run takes minutes. For example:
///
/// ```swift
/// var text = ProgressText(label: "simulate", total: 40, unit: "runs")
/// text.detail = "2 MB clean · relocate:copying@1 · resuming"
/// text.finishedOne(at: 12)  // one run done, 12 s after the start
/// print(text.line(elapsed: 14))
/// // simulate [░░░░░░░░░░░░░░░░░░░░] 1/40 runs · 2 MB clean · relocate:copying@1 · resuming · 7 min 46 s left
/// ```
public struct ProgressText: Sendable, Hashable {
    /// What runs: `simulate`, `bench`.
    public var label: String
    /// Units finished.
    public var done: Int
    /// Units in all; nil when not known (then no bar and no time left, only the time so far).
    public var total: Int?
    /// What a unit is, plural: `runs`, `cases`.
    public var unit: String
    /// What is under way: the run's size, state, crash point and stage.
    public var detail: String
    /// Seconds from the start to the end of the last finished unit.
    public var elapsedAtLastDone: Double

    /// Creates the text of work not started yet.
    public init(label: String, total: Int?, unit: String, detail: String = "") {
        self.label = label
        self.done = 0
        self.total = total
        self.unit = unit
        self.detail = detail
        self.elapsedAtLastDone = 0
    }

    /// Counts one unit finished, `elapsed` seconds after the start.
    public mutating func finishedOne(at elapsed: Double) {
        done += 1
        elapsedAtLastDone = elapsed
    }

    /// Seconds left, `elapsed` seconds after the start: the mean time of the finished units times the
    /// units left, less what the unit under way has taken already (never below zero). Nil before a
    /// unit finished, or when the total is not known.
    public func secondsLeft(elapsed: Double) -> Double? {
        guard let total, done > 0 else { return nil }
        let perUnit = elapsedAtLastDone / Double(done)
        let left = Double(max(0, total - done)) * perUnit - max(0, elapsed - elapsedAtLastDone)
        return max(0, left)
    }

    /// The line, `elapsed` seconds after the start, at most `width` characters (the detail is cut).
    public func line(elapsed: Double, width: Int = 120) -> String {
        var head = label
        if let total {
            let cells = 20
            let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
            let filled = Int((fraction * Double(cells)).rounded(.down))
            head +=
                " [" + String(repeating: "█", count: filled) + String(repeating: "░", count: cells - filled) + "] "
                + "\(done)/\(total) \(unit)"
        } else if done > 0 {
            head += " \(done) \(unit)"
        }
        let tail: String =
            if let left = secondsLeft(elapsed: elapsed) {
                Self.duration(left) + " left"
            } else if total == nil || done >= (total ?? 0) {
                Self.duration(elapsed) + " so far"
            } else {
                "estimating the time left"
            }
        var parts = [head]
        let room = width - head.count - tail.count - 6
        if !detail.isEmpty, room > 1 {
            parts.append(detail.count <= room ? detail : String(detail.prefix(room - 1)) + "…")
        }
        parts.append(tail)
        return parts.joined(separator: " · ")
    }

    /// `42 s`, `7 min 05 s`, `2 h 03 min`.
    public static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(String(format: "%02d", whole % 60)) s" }
        return "\(whole / 3600) h \(String(format: "%02d", whole % 3600 / 60)) min"
    }
}
