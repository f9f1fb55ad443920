import ArgumentParser
import Backstage
import BackstageExport
import Foundation

extension ConflictPolicy: ExpressibleByArgument {}

package struct Import: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Restore an archive into a container's Documents folder, all or nothing.",
        discussion: """
            Every entry is checked before it is written, and written only into a staging folder; the \
            staged tree is moved into Documents when the whole archive passed. An unsafe archive is \
            refused with the entry named and nothing written: absolute paths, "..", backslashes and \
            control characters in names, links that resolve outside Documents (through the archive's \
            links or those already in Documents), entries whose path passes through a link Documents \
            already has (whatever --on-conflict says), devices and FIFOs, duplicate names and names equal \
            under full case folding, internal files (the stores --plan, --catalog or --store declare, \
            orphan sidecars, support folders; a user's own database comes back), damaged data (a zip CRC, \
            a gzip checksum, a tar without its end blocks), and bombs (--max-size, default the \
            free space; --max-entries; --max-ratio, per entry and for the whole archive; sparse \
            entries count their full size). setuid/setgid bits are stripped; every file is readable and \
            writable by its owner. The container must exist. A name that differs \
            from one in Documents only by Unicode normalization is that same file. Files Documents \
            already has are kept (skip), replaced, or imported as "Name 2.ext" (keep-both; never a copy \
            of what Documents has: the same bytes, the same link target, a folder holding it all). A \
            user's database moves with its -wal, -shm and .Name_SUPPORT folder: skipped, renamed \
            ("Notes 2.sqlite", ".Notes 2_SUPPORT") or replaced together. An import killed while it moved its files in is finished (or, when \
            finishing it would overwrite what was written since, undone: every original back under its \
            own name) by the next import, which says so.

            Example:
              backstage import notes.zip ~/Containers/MyApp --on-conflict keep-both
            """
    )

    package init() {}

    @Argument(help: "The archive to restore (zip, tar, tar.gz, tar.bz2, tar.xz, tar.zst, 7z...).", completion: .file())
    var archive: String

    @OptionGroup var options: ContainerOptions
    @OptionGroup var declared: DeclarationOptions

    @Option(help: "What to do with a file Documents already has: skip, replace or keep-both.")
    var onConflict: ConflictPolicy = .skip

    @Option(help: "Refuse an archive that expands to more than this many bytes (default: the free space).")
    var maxSize: Int64?

    @Option(help: "Refuse an archive with more entries than this (default 10000000).")
    var maxEntries: Int = ImportLimits().maxEntries

    @Option(
        help:
            "Refuse an entry, or an archive, over 1 MiB that expands more than this many times its compressed size (default 100)."
    )
    var maxRatio: Double = ImportLimits().maxCompressionRatio

    @Flag(
        help:
            "Restore the store snapshots of an export made with --include-database where the app keeps each store now (where the --plan or --catalog relocations move it from where it was taken), as relocate moves a store; a location that has a store, or a store of Documents the container does not declare there, is refused."
    )
    var restoreDatabases = false

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    package func validate() throws {
        // `import CONTAINER ARCHIVE`, the arguments swapped: say so, rather than "ARCHIVE is not a folder".
        var isFolder: ObjCBool = false
        if let container = options.container, options.layout == .ios,
            FileManager.default.fileExists(atPath: archive, isDirectory: &isFolder), isFolder.boolValue,
            FileManager.default.fileExists(atPath: container, isDirectory: &isFolder), !isFolder.boolValue
        {
            throw ValidationError(
                "\(archive) is a folder and \(container) a file: the archive comes first "
                    + "(backstage import \(container) \(archive))")
        }
    }

    package func run() async throws { try await run(boundaryHook: nil) }

    /// The run, with `boundaryHook` called at each boundary of the move-in: the simulator's child
    /// (Sources/BackstageSimulateChild) kills itself there; `backstage` passes none.
    package func run(boundaryHook: (@Sendable (ImportBoundary) -> Void)?) async throws {
        let container = try declared.declaring(in: try options.resolve())
        let source = URL(
            filePath: archive,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
        let limits = ImportLimits(maxTotalBytes: maxSize, maxEntries: maxEntries, maxCompressionRatio: maxRatio)
        let progress = ProgressLine(enabled: !json && Output.stderrIsTerminal)
        let started = ContinuousClock.now
        var finished: ImportReport?
        var importer = Importer(container: container)
        importer.boundaryHook = boundaryHook
        for try await event in importer.events(
            from: source,
            options: ImportOptions(
                onConflict: onConflict, limits: limits, restoreDatabases: restoreDatabases,
                plans: restoreDatabases ? try declared.upgradePlans() : []))
        {
            switch event {
            case .progress(let now):
                progress.update("import", fraction: now.fraction, detail: "\(now.entriesDone) entries")
            case .finished(let report):
                finished = report
            }
        }
        progress.finish()
        guard let report = finished else { throw CancellationError() }
        let elapsed = ContinuousClock.now - started
        if json {
            try Output.json(report)
            return
        }
        if let recovered = report.recovered { Output.out(Self.render(recovered)) }
        var line =
            "Imported \(report.written) document\(report.written == 1 ? "" : "s") (\(formatBytes(report.bytes))) from \(report.archive) into \(container.documents.path) in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))"
        if !report.skipped.isEmpty {
            line += "; kept \(report.skipped.count) existing: \(report.skipped.joined(separator: ", "))"
        }
        if !report.replaced.isEmpty { line += "; replaced: \(report.replaced.joined(separator: ", "))" }
        if !report.identical.isEmpty {
            line += "; already there with the same bytes: \(report.identical.joined(separator: ", "))"
        }
        if !report.renamed.isEmpty {
            line +=
                "; imported beside existing: \(report.renamed.map { "\($0.from) → \($0.to)" }.joined(separator: ", "))"
        }
        if !report.strippedModes.isEmpty {
            line += "; setuid/setgid stripped: \(report.strippedModes.joined(separator: ", "))"
        }
        if !report.restoredDatabases.isEmpty {
            line += "; stores restored: \(report.restoredDatabases.joined(separator: ", "))"
        }
        if !report.restoredElsewhere.isEmpty {
            line +=
                " (where the app keeps them now: \(report.restoredElsewhere.map { "\($0.from) → \($0.to)" }.joined(separator: ", ")))"
        }
        if !report.skippedDatabases.isEmpty {
            line +=
                "; store snapshots not restored (--restore-databases restores them): \(report.skippedDatabases.count)"
        }
        Output.out(line)
    }

    /// One sentence on the interrupted import this one finished or undid first.
    static func render(_ recovery: ImportRecovery) -> String {
        let archive = recovery.archive.map { " of \($0)" } ?? ""
        var line: String
        switch recovery.outcome {
        case .completed:
            line =
                "Completed an interrupted import\(archive): \(recovery.movedIn.count) moved in"
            if !recovery.replaced.isEmpty { line += "; replaced: \(recovery.replaced.joined(separator: ", "))" }
        case .undone:
            line = "Undid an interrupted import\(archive): \(recovery.removed.count) moved back out"
            if !recovery.putBack.isEmpty { line += "; put back: \(recovery.putBack.joined(separator: ", "))" }
        case .abandoned:
            line =
                "An interrupted import\(archive) lost its staging folder (the temporary folder was emptied): Documents left as found, \(recovery.movedIn.count) of its files moved in"
        }
        if !recovery.quarantined.isEmpty {
            line += "; quarantined: \(recovery.quarantined.joined(separator: ", "))"
        }
        return line
    }
}
