import ArgumentParser
import Backstage
import BackstageExport
import BackstageHarness
import Foundation

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Build an old app container, audit it, upgrade it to the latest layout and prove no row was lost.",
        discussion: """
            Writes the version-1 container of the sample Notes app from the fixture catalog in a temporary \
            folder: Notes.sqlite in Documents, whose last committed notes live only in Notes.sqlite-wal because \
            its writer process was killed, a Core Data .Notes_SUPPORT folder and user documents. Then audits it, \
            runs the catalog's plans v1 → v4 with progress (relocate, split, migrate, per-account store), audits \
            again, counts the notes on both sides, then exports Documents to a zip and checks it by reading it \
            back (import into a scratch container, every document compared byte for byte).

            Example:
              backstage demo --directory /tmp/backstage-demo
            """
    )

    @Option(help: "Where to build the container (default: a new temporary folder). It must not exist.")
    var directory: String?

    @Option(help: "Approximate size of the version-1 store, such as 2MB.")
    var size = ByteCount(2_000_000, written: "2MB")

    @Flag(help: "Print the summary as one JSON object.")
    var json = false

    struct Summary: Encodable {
        var container: String
        var rowsBefore: Int
        var rowsOnlyInWAL: Int
        var rowsAfter: Int
        var leaksBefore: Int
        var leaksAfter: Int
        var stepsRun: Int
        var filesMoved: Int
        var seconds: [String: Double]
        var store: String
        var archive: String
        var archiveEntries: Int
        var documentsReadBack: Int
        var documentsDiffering: [String]
    }

    func run() async throws {
        var seconds: [String: Double] = [:]
        func timed<T>(_ label: String, _ body: () async throws -> T) async rethrows -> T {
            let start = ContinuousClock.now
            let value = try await body()
            let elapsed = ContinuousClock.now - start
            seconds[label] = elapsed.seconds
            return value
        }
        let say: (String) -> Void = { if !json { Output.out($0) } }
        let indent: (String) -> String = { $0.split(separator: "\n").map { "   " + $0 }.joined(separator: "\n") }

        let root = URL(
            filePath: directory
                ?? FileManager.default.temporaryDirectory.appending(
                    path: "backstage-demo-\(UUID().uuidString.prefix(8))"
                ).path)
        guard !FileManager.default.fileExists(atPath: root.path) else {
            throw CLIError(description: "\(root.path) already exists; give a new folder")
        }
        let container = AppContainer.iOSSandbox(root: root).declaringStores(try CatalogFolder.notes().declaredStores)
        let v1 = StoreFileSet(main: container.documents.appending(path: "Notes.sqlite"))

        say("1. Building the version-1 container of the sample Notes app in \(root.path)")
        let spec = FixtureSpec(
            layout: "v1", size: size.bytes, state: .walPending, seed: 1)
        _ = try await timed("build") {
            try FixtureGenerator(executable: Executable.url, catalog: try CatalogFolder.notes()).generate(
                spec, at: root)
        }
        let before = try StoreInspector.rowCounts(of: v1)["ZNOTE"] ?? 0
        let mainOnly = try StoreInspector.rowCounts(of: v1, includingWAL: false)["ZNOTE"] ?? 0
        say(
            "   Notes.sqlite holds \(before) notes; \(before - mainOnly) of them only in Notes.sqlite-wal (the writer was killed before its checkpoint)"
        )

        say("2. Auditing Documents")
        let audit = try await timed("audit") { try Auditor(container: container).audit() }
        say(
            indent(
                Audit.render(
                    audit, documents: container.documents, next: "The upgrade below moves them out of Documents.")))

        say("3. Upgrading v1 → v4 with the catalog's plans")
        let upgrader = Upgrader(container: container)
        let progress = ProgressLine(enabled: !json && Output.stderrIsTerminal)
        var reports: [UpgradeReport] = []
        try await timed("upgrade") {
            for (plan, _) in try CatalogFolder.notes().chain(from: "v1", to: "v4") {
                for try await event in upgrader.run(plan) {
                    switch event {
                    case .progress(let p):
                        progress.update(
                            "   \(plan.name)",
                            fraction: p.bytesTotal > 0 ? Double(p.bytesDone) / Double(p.bytesTotal) : 0,
                            detail: p.phase.rawValue)
                    case .finished(let report): reports.append(report)
                    case .planned: break
                    }
                }
                progress.finish()
            }
        }
        for report in reports { say(indent(Upgrade.render(report, container: container))) }

        say("4. Auditing again")
        let after = try Auditor(container: container).audit()
        say(indent(Audit.render(after, documents: container.documents)))

        say("5. Exporting Documents to a zip and reading it back")
        let archive = root.appending(path: "Documents.zip")
        let exported = try await timed("export") {
            try await Exporter(container: container).export(to: archive, options: ExportOptions(format: .zip))
        }
        let (readBack, differing) = try await timed("read back") {
            try await Self.readBack(archive, against: container, scratch: root.appending(path: "read-back"))
        }
        say(
            "   \(exported.entries) entries (\(formatBytes(exported.bytes))) in \(archive.path); read back: \(readBack) documents"
                + (differing.isEmpty
                    ? ", every one byte-identical"
                    : ", \(differing.count) DIFFERING: \(differing.joined(separator: ", "))"))

        let v4 = StoreFileSet(main: container.applicationSupport.appending(path: "Accounts/1001/UserData.sqlite"))
        let rowsAfter = try StoreInspector.rowCounts(of: v4)["ZNOTE"] ?? 0
        let summary = Summary(
            container: root.path, rowsBefore: before, rowsOnlyInWAL: before - mainOnly, rowsAfter: rowsAfter,
            leaksBefore: audit.findings.count, leaksAfter: after.findings.count,
            stepsRun: reports.flatMap(\.steps).filter { $0.outcome != .skipped }.count,
            filesMoved: reports.reduce(0) { $0 + $1.relocation.moved.reduce(0) { $0 + $1.files } },
            seconds: seconds, store: v4.main.path, archive: archive.path, archiveEntries: exported.entries,
            documentsReadBack: readBack, documentsDiffering: differing)
        if json {
            try Output.json(summary)
        } else {
            say(
                """

                Summary
                  notes before      \(before) (\(before - mainOnly) only in the -wal)
                  notes after       \(rowsAfter)\(rowsAfter == before ? "  ✓ every committed note kept" : "  ✗ NOTES LOST")
                  internal files    \(audit.findings.count) in Documents before, \(after.findings.count) after
                  upgrade           \(summary.stepsRun) steps in \(reports.count) plans
                  export            \(exported.entries) entries, \(readBack) documents read back\(differing.isEmpty ? "  ✓ byte-identical" : "  ✗ \(differing.count) DIFFER")
                  timings           build \(fmt(seconds["build"])) s · audit \(fmt(seconds["audit"])) s · upgrade \(fmt(seconds["upgrade"])) s · export \(fmt(seconds["export"])) s · read back \(fmt(seconds["read back"])) s
                  notes now at      \(v4.main.path)
                  documents at      \(container.documents.path)
                  archive at        \(archive.path)
                """)
        }
        guard rowsAfter == before, after.isClean, differing.isEmpty, readBack > 0 else {
            throw ExitCode(ExitStatus.checkFailed)
        }
    }

    /// Imports the archive into a scratch container and compares every document of `container` with
    /// its restored copy; returns how many were read back and the paths that differ or are missing.
    static func readBack(_ archive: URL, against container: AppContainer, scratch: URL) async throws -> (Int, [String])
    {
        let check = AppContainer.iOSSandbox(root: scratch).declaringStores(container.declaredStores)
        let fileSystem = FileSystem()
        try fileSystem.createDirectories(scratch.path)
        defer { try? fileSystem.removeTree(scratch.path) }
        try await Importer(container: check).importArchive(archive)
        var compared = 0
        var differing: [String] = []
        for entry in try FileClassifier(declarations: container.declaredStores).scan(container.documents)
        where entry.kind == .document && !entry.isDirectory {
            let original = container.documents.appending(path: entry.path).path
            guard try fileSystem.status(original)?.kind == .regular else { continue }
            compared += 1
            let copy = check.documents.appending(path: entry.path).path
            if try !fileSystem.exists(copy) || !fileSystem.contentsEqual(original, copy) {
                differing.append(entry.path)
            }
        }
        return (compared, differing)
    }

    private func fmt(_ value: Double?) -> String { String(format: "%.3f", value ?? 0) }
}
