import ArgumentParser
import Backstage
import Foundation
import Logging

extension RelocationStrategy: ExpressibleByArgument {}
extension StepPhase: ExpressibleByArgument {}

struct Relocate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move the stores in Documents to Application Support without losing a row.",
        discussion: """
            Every store found in Documents (or each --store) moves with its -wal, -shm and Core Data \
            support folder to the same relative path under Application Support. Under SQLite's exclusive \
            lock the WAL is checkpointed and any hot journal rolled back first; on one file system the \
            store is renamed, across file systems it is copied, fsynced and verified before the source \
            is removed. Orphan sidecars and a store found in both places go to \
            Application Support/.backstage/quarantine, never deleted. A run interrupted by a crash is \
            finished or undone by the next run; "nothing to do" is success.

            Example:
              backstage relocate ~/Containers/MyApp --store Notes.sqlite --strategy copy
            """
    )

    @OptionGroup var options: ContainerOptions

    @Option(name: .customLong("store"), help: "A store to move: file name, base name or path relative to Documents (repeatable; default: all).")
    var stores: [String] = []

    @Option(help: "auto (rename on one file system, copy across), rename, or copy.")
    var strategy: RelocationStrategy = .auto

    @Option(help: "Seconds to wait for another process to release a store before failing with \"store in use\".")
    var timeout: Double = 5

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    @Flag(help: "Log each phase of each move, with its duration, on stderr.")
    var verbose = false

    @Option(help: .private)
    var crashAt: StepPhase?

    func validate() throws {
        guard timeout >= 0 else { throw ValidationError("--timeout must be 0 or more seconds.") }
    }

    func run() async throws {
        let container = try options.resolve()
        var relocator = Relocator(container: container, logger: Logging.makeLogger(verbose: verbose))
        if let crashAt {
            relocator.phaseHook = { _, phase in
                if phase == crashAt { kill(getpid(), SIGKILL) }
            }
        }
        let progress = ProgressLine(enabled: !json && Output.stderrIsTerminal)
        var report = RelocationReport()
        for try await event in relocator.events(RelocationOptions(strategy: strategy, stores: stores, busyTimeout: timeout)) {
            switch event {
            case .progress(let p):
                progress.update(p.store, fraction: p.fractionCompleted, detail: p.phase.rawValue)
            case .finished(let final):
                report = final
            }
        }
        progress.finish()
        if json {
            try Output.json(report)
        } else {
            Output.out(Self.render(report, container: container))
        }
    }

    static func render(_ report: RelocationReport, container: AppContainer) -> String {
        if report.nothingToDo { return "Nothing to do: no store in \(container.documents.path)" }
        var lines: [String] = []
        for line in report.recovered { lines.append("Recovered an interrupted move (\(line))") }
        for item in report.quarantined { lines.append("Quarantined \(item.from) → \(item.to) (\(item.reason))") }
        for store in report.moved {
            lines.append("Moved \(store.store) → \(store.to) (\(store.strategy.rawValue), \(store.files) file\(store.files == 1 ? "" : "s"), \(formatBytes(store.bytes)), \(String(format: "%.3f", store.seconds)) s)")
        }
        return lines.joined(separator: "\n")
    }
}
