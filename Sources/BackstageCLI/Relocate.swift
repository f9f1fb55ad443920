import ArgumentParser
import Backstage
import Foundation
import Logging

extension RelocationStrategy: ExpressibleByArgument {}
extension ContainerRoot {
    /// A root named on the command line, or a usage error that says which names a root takes (the
    /// parser's own "the value 'g' is invalid" left the `group.` rule unsaid).
    static func argument(_ text: String) throws -> ContainerRoot {
        if let root = ContainerRoot(rawValue: text) { return root }
        let standard = ["documents", "applicationSupport", "caches", "temporary"]
        throw ValidationError(
            "\(text) is not a root\(NearestName.didYouMean(text, among: standard)): use documents, applicationSupport, "
                + "caches, or an App Group identifier, which starts with group. (group.com.example.app)")
    }
}

package struct Relocate: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "relocate",
        abstract: "Move the stores in Documents to Application Support (or an App Group) without losing a row.",
        discussion: """
            Every store of the app found in Documents (those its --plan or --catalog declare, or each \
            --store) moves with its -wal, -shm and Core Data \
            support folder to the same relative path under Application Support. Under SQLite's exclusive \
            lock the WAL is checkpointed and any hot journal rolled back first; on one file system the \
            store is renamed, across file systems it is copied, fsynced and verified before the source \
            is removed. Orphan sidecars and a store found in both places go to \
            Application Support/.backstage/quarantine, never deleted. A run interrupted by a crash is \
            finished or undone by the next run; "nothing to do" is success. A database nobody declared \
            or named is the user's document: it is never moved, and the report says it was left.

            --to names another destination: an App Group's shared container (given with --app-group), \
            where the app's widgets and extensions can open the store. --from moves stores that are \
            already out of Documents (from applicationSupport, say).

            Example:
              backstage relocate ~/Containers/MyApp --store Notes.sqlite --strategy copy
              backstage relocate ~/Containers/MyApp --plan plans/v1-to-v2.json
              backstage relocate ~/Containers/MyApp --from applicationSupport --to group.com.example.notes --app-group group.com.example.notes=/srv/Shared/notes
            """
    )

    package init() {}

    @OptionGroup var options: ContainerOptions
    @OptionGroup var groups: AppGroupOptions

    @OptionGroup var declared: DeclarationOptions

    /// The stores named with --store: only these move.
    var stores: [String] { declared.stores }

    @Option(help: "auto (rename on one file system, copy across), rename, or copy.")
    var strategy: RelocationStrategy = .auto

    @Option(
        help: ArgumentHelp(
            "Where the stores are: documents, applicationSupport, caches or an App Group identifier.", valueName: "root"
        ), transform: ContainerRoot.argument)
    var from: ContainerRoot = .documents

    @Option(
        help: ArgumentHelp(
            "Where they go, same relative path: applicationSupport, caches or an App Group identifier (with --app-group).",
            valueName: "root"), transform: ContainerRoot.argument)
    var to: ContainerRoot = .applicationSupport

    @Option(help: "Seconds to wait for another process to release a store before failing with \"store in use\".")
    var timeout: Double = 5

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    @Flag(help: "Log each phase of each move, with its duration, on stderr.")
    var verbose = false

    package func validate() throws {
        guard timeout >= 0 else { throw ValidationError("--timeout must be 0 or more seconds.") }
        guard from != to else { throw ValidationError("--from and --to are both \(to): the stores would not move.") }
    }

    package func run() async throws { try await run(phaseHook: nil) }

    /// The run, with `phaseHook` called at every phase boundary of every move: the simulator's child
    /// (Sources/BackstageSimulateChild) kills itself there; `backstage` passes none.
    package func run(phaseHook: (@Sendable (String, StepPhase) -> Void)?) async throws {
        let container = try declared.declaring(
            in: try groups.adding(to: try options.resolve(), layout: options.layout), root: from)
        let stores = container.defines(from) ? try declared.storePaths(in: container[from]) : stores
        for root in [from, to] where !container.defines(root) {
            throw CLIError(description: "\(root) has no folder: add --app-group \(root)=FOLDER")
        }
        try InterruptedImport.recover(in: container)
        var relocator = Relocator(container: container, logger: DiagnosticLog.makeLogger(verbose: verbose))
        relocator.phaseHook = phaseHook
        let progress = ProgressLine(enabled: !json && Output.stderrIsTerminal)
        var report = RelocationReport()
        for try await event in relocator.events(
            RelocationOptions(strategy: strategy, stores: stores, busyTimeout: timeout, from: from, to: to))
        {
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
            Output.out(Self.render(report, source: container[from], destination: container[to], named: stores))
            if from == .documents && container.declaredStores.isEmpty {
                Output.out(
                    "No store declared (--plan, --catalog or --store): no database in Documents is taken for the app's."
                )
            }
        }
    }

    static func render(_ report: RelocationReport, source: URL, destination: URL, named: [String] = []) -> String {
        var lines: [String] = []
        for path in report.leftUndeclared {
            lines.append(
                "Left \(path): a database not declared by the app, kept as the user's document (name it with --store to move it)"
            )
        }
        for name in report.unmatched {
            lines.append(
                "No store matches \(name.name) in \(source.path)"
                    + (name.closest.map { " (did you mean \($0)?)" } ?? " (a fresh install has none yet)"))
        }
        if report.nothingToDo {
            if !report.unmatched.isEmpty {
                return (lines + ["Nothing to do"]).joined(separator: "\n")
            }
            if !named.isEmpty {
                return (lines + ["Nothing to do: \(named.joined(separator: ", ")) already in \(destination.path)"])
                    .joined(separator: "\n")
            }
            return (lines + ["Nothing to do: no store of the app in \(source.path)"]).joined(separator: "\n")
        }
        for line in report.recovered { lines.append("Recovered an interrupted move (\(line))") }
        for item in report.quarantined { lines.append("Quarantined \(item.from) → \(item.to) (\(item.reason))") }
        for store in report.moved {
            lines.append(
                "Moved \(store.store) → \(store.to) (\(store.strategy.rawValue), \(store.files) file\(store.files == 1 ? "" : "s"), \(formatBytes(store.bytes)), \(String(format: "%.3f", store.seconds)) s)"
            )
        }
        return lines.joined(separator: "\n")
    }
}
