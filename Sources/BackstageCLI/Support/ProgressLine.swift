import Foundation

/// A one-line progress bar on stderr, shown only on a terminal.
final class ProgressLine: @unchecked Sendable {
    private let enabled: Bool
    private var lastDraw = Date.distantPast
    private let lock = NSLock()

    init(enabled: Bool = Output.stderrIsTerminal) {
        self.enabled = enabled
    }

    func update(_ label: String, fraction: Double, detail: String = "") {
        guard enabled else { return }
        lock.withLock {
            let now = Date()
            guard now.timeIntervalSince(lastDraw) > 0.1 || fraction >= 1 else { return }
            lastDraw = now
            let width = 30
            let filled = Int((fraction.clamped * Double(width)).rounded())
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            let line = "\r\(label) \(bar) \(Int(fraction.clamped * 100))% \(detail)"
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    func finish() {
        guard enabled else { return }
        lock.withLock { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}

extension Double {
    fileprivate var clamped: Double { Swift.min(1, Swift.max(0, self)) }
}
