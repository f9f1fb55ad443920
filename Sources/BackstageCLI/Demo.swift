import ArgumentParser
import Backstage
import Foundation

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Build an old app container, audit it, relocate its store and prove no row was lost.",
        discussion: """
            Builds a version-1 container in a temporary folder: Notes.sqlite in Documents, whose last \
            committed rows live only in Notes.sqlite-wal because its writer process was killed, a Core \
            Data .Notes_SUPPORT folder and user documents. Then audits it, relocates the store to \
            Application Support with progress, audits again and counts the rows on both sides.

            Example:
              backstage demo --directory /tmp/backstage-demo
            """
    )

    @Option(help: "Where to build the container (default: a new temporary folder). It must not exist.")
    var directory: String?

    @Option(help: "Rows checkpointed into the main file.")
    var rows = 2000

    @Option(help: "Rows committed only in the -wal.")
    var walRows = 500

    @Flag(help: "Print the summary as one JSON object.")
    var json = false

    struct Summary: Encodable {
        var container: String
        var rowsBefore: Int
        var rowsOnlyInWAL: Int
        var rowsAfter: Int
        var leaksBefore: Int
        var leaksAfter: Int
        var filesMoved: Int
        var bytesMoved: Int64
        var seconds: [String: Double]
        var store: String
    }

    func run() async throws {
        let clock = ContinuousClock()
        var seconds: [String: Double] = [:]
        func timed<T>(_ label: String, _ body: () async throws -> T) async rethrows -> T {
            let start = clock.now
            let value = try await body()
            let elapsed = clock.now - start
            seconds[label] = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return value
        }
        let say: (String) -> Void = { if !json { Output.out($0) } }

        let root = URL(filePath: directory ?? FileManager.default.temporaryDirectory.appending(path: "backstage-demo-\(UUID().uuidString.prefix(8))").path)
        guard !FileManager.default.fileExists(atPath: root.path) else { throw CLIError(description: "\(root.path) already exists; give a new folder") }
        let container = AppContainer.iOSSandbox(root: root)
        let store = StoreFileSet(main: container.documents.appending(path: "Notes.sqlite"))

        say("1. Building a version-1 container in \(root.path)")
        try await timed("build") {
            try DemoContainer.build(container, store: store, rows: rows, walRows: walRows)
        }
        let before = try StoreInspector.rowCounts(of: store)["ZNOTE"] ?? 0
        let mainOnly = try StoreInspector.rowCounts(of: store, includingWAL: false)["ZNOTE"] ?? 0
        say("   Notes.sqlite holds \(before) notes; \(before - mainOnly) of them only in Notes.sqlite-wal (the writer was killed before its checkpoint)")

        say("2. Auditing Documents")
        let audit = try await timed("audit") { try Auditor(container: container).audit() }
        say(Audit.render(audit, documents: container.documents).split(separator: "\n").map { "   " + $0 }.joined(separator: "\n"))

        say("3. Relocating to Application Support")
        let progress = ProgressLine(enabled: !json && Output.stderrIsTerminal)
        let report = try await timed("relocate") { () async throws -> RelocationReport in
            var report = RelocationReport()
            for try await event in Relocator(container: container).events() {
                switch event {
                case .progress(let p): progress.update("   " + p.store, fraction: p.fractionCompleted, detail: p.phase.rawValue)
                case .finished(let final): report = final
                }
            }
            progress.finish()
            return report
        }
        say(Relocate.render(report, container: container).split(separator: "\n").map { "   " + $0 }.joined(separator: "\n"))

        say("4. Auditing again")
        let after = try Auditor(container: container).audit()
        say(Audit.render(after, documents: container.documents).split(separator: "\n").map { "   " + $0 }.joined(separator: "\n"))

        let moved = StoreFileSet(main: container.applicationSupport.appending(path: "Notes.sqlite"))
        let rowsAfter = try StoreInspector.rowCounts(of: moved)["ZNOTE"] ?? 0
        let summary = Summary(
            container: root.path, rowsBefore: before, rowsOnlyInWAL: before - mainOnly, rowsAfter: rowsAfter,
            leaksBefore: audit.findings.count, leaksAfter: after.findings.count,
            filesMoved: report.moved.reduce(0) { $0 + $1.files }, bytesMoved: report.moved.reduce(0) { $0 + $1.bytes },
            seconds: seconds, store: moved.main.path)
        if json {
            try Output.json(summary)
        } else {
            say("""

                Summary
                  notes before      \(before) (\(before - mainOnly) only in the -wal)
                  notes after       \(rowsAfter)\(rowsAfter == before ? "  ✓ every committed row kept" : "  ✗ ROWS LOST")
                  internal files    \(audit.findings.count) in Documents before, \(after.findings.count) after
                  moved             \(summary.filesMoved) files, \(formatBytes(summary.bytesMoved))
                  timings           build \(fmt(seconds["build"])) s · audit \(fmt(seconds["audit"])) s · relocate \(fmt(seconds["relocate"])) s
                  store now at      \(moved.main.path)
                  documents at      \(container.documents.path)
                """)
        }
        guard rowsAfter == before, after.isClean else { throw ExitCode(ExitStatus.checkFailed) }
    }

    private func fmt(_ value: Double?) -> String { String(format: "%.3f", value ?? 0) }
}
