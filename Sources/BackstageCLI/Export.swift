import ArgumentParser
import Backstage
import BackstageExport
import Foundation

extension ArchiveFormat: ExpressibleByArgument {}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Archive the user-visible documents of a container.",
        discussion: """
            Writes the Documents tree (paths relative to Documents) as an archive: never an internal file \
            (the app's stores that --plan, --catalog or --store declare, their sidecars, Core Data support \
            folders), never a dotfile, never anything behind a link that leaves Documents. A database the \
            app did not declare is the user's: archived as one consistent copy with every committed row. A \
            document written while it is read is read again into a still copy, or left out and listed. \
            The archive may not be written inside Documents. The same documents give a byte-identical archive: sorted \
            entries, uid/gid 0, normalised permissions, modification times clamped to SOURCE_DATE_EPOCH when set. \
            The format comes from the file name unless --format is given. --include-database adds a \
            consistent snapshot of each store (SQLite's backup API, never the live files) under \
            .backstage/databases/ in the archive; import --restore-databases puts them back. zip, tar.gz and tar.zst \
            compress on every core (--threads), with the same bytes whatever the number of threads.

            Example:
              backstage export ~/Containers/MyApp -o notes.tar.zst --level 19
            """
    )

    @OptionGroup var options: ContainerOptions
    @OptionGroup var groups: AppGroupOptions
    @OptionGroup var declared: DeclarationOptions

    @Option(name: .shortAndLong, help: "The archive to write.", completion: .file())
    var output: String

    @Option(help: "zip, tar, tar.gz, tar.bz2, tar.xz, tar.zst or 7z (default: from the file name).")
    var format: ArchiveFormat?

    @Option(help: "Compression level (zip: 0 stores, 1-9 deflate; gzip, bzip2, xz 0-9; zstd 1-22).")
    var level: Int?

    @Option(
        help:
            "Compression threads for zip, tar.gz and tar.zst (default: one per core, at most 8). The archive is the same whatever the number."
    )
    var threads: Int?

    @Flag(help: "Add a consistent snapshot of each store under .backstage/databases/.")
    var includeDatabase = false

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func validate() throws {
        guard format ?? ArchiveFormat(fileName: output) != nil else {
            throw ValidationError(
                "Cannot tell the format of \(output): give --format or a name ending in .zip, .tar, .tar.gz, .tar.bz2, .tar.xz, .tar.zst or .7z."
            )
        }
        if let threads, threads < 1 { throw ValidationError("--threads must be at least 1.") }
    }

    func run() async throws {
        let container = try declared.declaring(in: try groups.adding(to: try options.resolve(), layout: options.layout))
        let destination = URL(
            filePath: output,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
        let chosen = format ?? ArchiveFormat(fileName: output) ?? .zip
        let progress = ProgressLine(enabled: !json && Output.stderrIsTerminal)
        let started = ContinuousClock.now
        var finished: ExportReport?
        let options = ExportOptions(format: chosen, level: level, threads: threads, includeDatabase: includeDatabase)
        for try await event in Exporter(container: container).events(to: destination, options: options) {
            switch event {
            case .progress(let now):
                progress.update(
                    "export", fraction: now.fraction,
                    detail: "\(now.entriesDone) entries, \(formatBytes(now.bytesDone))")
            case .finished(let report):
                finished = report
            }
        }
        guard let report = finished else { throw CancellationError() }
        progress.finish()
        let elapsed = ContinuousClock.now - started
        if json {
            try Output.json(report)
        } else {
            Output.out(
                "Exported \(report.entries) entries (\(formatBytes(report.bytes))) to \(report.archive) as \(chosen.rawValue) in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))"
                    + (report.databases.isEmpty ? "" : ", including snapshots of \(report.databases.count) store(s)")
                    + (report.leftOut.isEmpty ? "" : "; left out \(report.leftOut.count) (not documents):"))
            for entry in report.leftOut { Output.out("  \(entry.path): \(entry.reason)") }
        }
    }
}
