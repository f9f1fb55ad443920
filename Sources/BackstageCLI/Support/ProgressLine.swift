import BackstageHarness
import Foundation

/// A one-line progress bar on stderr, shown only on a terminal.
final class ProgressLine: @unchecked Sendable {
    private let enabled: Bool
    private var lastDraw = Date.distantPast
    private let lock = NSLock()
    /// Work counted in runs (``show(_:)``), redrawn every second by `ticker` so the time left moves.
    private var counted: ProgressText?
    private let started = Date()
    private var ticker: DispatchSourceTimer?

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

    /// Shows work counted in runs: drawn now, then again every second until ``finish()``, with the
    /// time left estimated from the runs done (``ProgressText``).
    func show(_ text: ProgressText) {
        guard enabled else { return }
        lock.withLock {
            counted = text
            drawCounted()
            guard ticker == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
            timer.schedule(deadline: .now() + 1, repeating: 1)
            timer.setEventHandler { [weak self] in self?.tick() }
            timer.resume()
            ticker = timer
        }
    }

    /// Changes the text ``show(_:)`` gave, and draws it.
    func show(_ change: (inout ProgressText) -> Void) {
        guard enabled else { return }
        lock.withLock {
            guard var text = counted else { return }
            change(&text)
            counted = text
            drawCounted()
        }
    }

    /// Seconds since this line was made: what ``show(_:)``'s texts count their time from.
    var elapsed: Double { Date().timeIntervalSince(started) }

    private func tick() {
        lock.withLock { drawCounted() }
    }

    /// Draws the counted work; the caller holds `lock`.
    private func drawCounted() {
        guard let counted else { return }
        let line = "\r" + counted.line(elapsed: elapsed, width: Self.columns() - 1) + "\u{1B}[K"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// The terminal's width (a line longer than it wraps, and `\r` then redraws only its end).
    private static func columns() -> Int {
        var size = winsize()
        if ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { return Int(size.ws_col) }
        return 80
    }

    func finish() {
        guard enabled else { return }
        lock.withLock {
            ticker?.cancel()
            ticker = nil
            counted = nil
            FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        }
    }
}

extension Double {
    fileprivate var clamped: Double { Swift.min(1, Swift.max(0, self)) }
}
