import Backstage
import Foundation

/// How to write an export.
public struct ExportOptions: Sendable, Hashable {
    public var format: ArchiveFormat
    /// Compression level (format-specific; 0 = store for zip); nil for the format's default.
    public var level: Int?
    /// Compression threads for tar.xz and tar.zst.
    public var threads: Int?
    /// When set, modification times later than this are clamped to it (reproducible builds'
    /// `SOURCE_DATE_EPOCH`).
    public var sourceDateEpoch: Int64?

    /// Options for `format`, reading `SOURCE_DATE_EPOCH` from the environment.
    /// Adds a consistent snapshot of each store of the container (SQLite's backup API, never the
    /// live files or their sidecars) under ``Exporter/databaseFolder``.
    public var includeDatabase: Bool

    public init(format: ArchiveFormat, level: Int? = nil, threads: Int? = nil, includeDatabase: Bool = false,
                sourceDateEpoch: Int64? = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"].flatMap { Int64($0) }) {
        self.format = format
        self.includeDatabase = includeDatabase
        self.level = level
        self.threads = threads
        self.sourceDateEpoch = sourceDateEpoch
    }
}

/// What an export wrote.
public struct ExportReport: Sendable, Hashable, Codable {
    public var archive: String
    public var format: ArchiveFormat
    /// Files, folders and links written.
    public var entries: Int
    /// Bytes of file content archived.
    public var bytes: Int64
    /// Everything under Documents the archive does not hold, each with the reason.
    public var leftOut: [LeftOut] = []
    /// Archive paths of the store snapshots added by ``ExportOptions/includeDatabase``.
    public var databases: [String] = []
}

/// An entry of Documents that an export left out, and why. An export never drops a user's file
/// without saying so.
public struct LeftOut: Sendable, Hashable, Codable {
    /// Why an entry was left out.
    public enum Reason: Sendable, Hashable, Codable, CustomStringConvertible {
        /// One of the app's internal files (a database by its header, a sidecar, a Core Data
        /// support folder, a Backstage temporary): never the user's document.
        case internalFile(FileKind)
        /// A dotfile or dot-folder (and everything in it): hidden from the user, so not exported.
        case hidden
        /// A symbolic link that leaves Documents, or resolves nowhere.
        case linkOutside
        /// A FIFO, socket or device: it holds no content to archive.
        case specialFile

        public var description: String {
            switch self {
            case .internalFile(let kind): "internal file (\(kind.rawValue))"
            case .hidden: "hidden (dotfile)"
            case .linkOutside: "link leaving Documents"
            case .specialFile: "not a regular file"
            }
        }
    }

    /// The path relative to Documents.
    public var path: String
    public var reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }
}

/// What an export reports while it runs.
public enum ExportEvent: Sendable {
    case progress(ArchiveProgress)
    case finished(ExportReport)
}

/// Archives the user-visible Documents tree: what the user sees, nothing else.
///
/// Entries are chosen by the same `FileClassifier` relocation uses: never an internal file
/// (databases by header, sidecars, Core Data support folders), never a dotfile, never anything
/// reached through a symbolic link that leaves Documents. The archive is reproducible: entries in
/// sorted order, uid/gid 0, permissions normalised (0644, 0755 for folders and executables), real
/// modification times (clamped to `SOURCE_DATE_EPOCH` when set), no access or change times, and
/// names in UTF-8 whatever the process locale. It streams through one 1 MiB buffer, so memory does
/// not grow with the tree, and is written to a temporary name beside the destination, renamed
/// only when complete.
///
/// For example:
///
/// ```swift
/// let report = try await Exporter(container: container).export(to: URL(filePath: "notes.zip"), options: ExportOptions(format: .zip))
/// ```
public struct Exporter: Sendable {
    /// Where ``ExportOptions/includeDatabase`` puts store snapshots in the archive; import skips it.
    public static let databaseFolder = ".backstage/databases"

    public let container: AppContainer

    public init(container: AppContainer) {
        self.container = container
    }

    /// Writes the archive, streaming progress; the last event is `.finished(report)`. Stopping the
    /// iteration cancels the export and removes the partial archive.
    public func events(to destination: URL, options: ExportOptions) -> AsyncThrowingStream<ExportEvent, Error> {
        let exporter = self
        return AsyncThrowingStream.runningOffTheCooperativePool { yield, isCancelled in
            let report = try exporter.exportAndWait(to: destination, options: options, progress: { yield(.progress($0)) }, isCancelled: isCancelled)
            yield(.finished(report))
        }
    }

    /// Writes the archive at `destination` and returns what it holds.
    ///
    /// - throws: ``ArchiveError`` naming the archive and the entry, a `FileSystemError`, a
    ///   `StoreError` when a store cannot be snapshotted, or `CancellationError`. No file is left at
    ///   `destination` (nor beside it) when it throws.
    @discardableResult
    public func export(to destination: URL, options: ExportOptions) async throws -> ExportReport {
        for try await event in events(to: destination, options: options) {
            if case .finished(let report) = event { return report }
        }
        throw CancellationError()
    }

    /// The synchronous engine.
    package func exportAndWait(to destination: URL, options: ExportOptions,
                               progress: (ArchiveProgress) -> Void = { _ in }, isCancelled: () -> Bool = { false }) throws -> ExportReport {
        let documents = container.documents
        let scanned = try FileClassifier().scan(documents)
        let entries = scanned.filter { $0.kind == .document }
        let temporary = destination.deletingLastPathComponent().appending(path: TemporaryName.beside(destination.lastPathComponent, suffix: String(UUID().uuidString.prefix(8))))
        var report = ExportReport(archive: destination.path, format: options.format, entries: 0, bytes: 0, leftOut: Self.leftOut(scanned))
        let fileSystem = FileSystem()
        var snapshots: StoreSnapshots?
        defer { snapshots?.remove() }
        var modifiedTimes: [Int64] = []
        do {
            if options.includeDatabase { snapshots = try StoreSnapshots(container: container, fileSystem: fileSystem) }
            let bytesTotal = entries.reduce(Int64(0)) { $0 + ($1.isDirectory ? 0 : $1.bytes) } + (snapshots?.bytes ?? 0)
            let entriesTotal = entries.count + (snapshots?.entryCount ?? 0)
            var throttle = ProgressThrottle()
            try withUTF8Locale {
                let writer = try ArchiveWriter(path: temporary.path, format: options.format, level: options.level, threads: options.threads)
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
                defer { buffer.deallocate() }
                func reportProgress(_ entriesDone: Int) {
                    let now = ArchiveProgress(entriesDone: entriesDone, entriesTotal: entriesTotal, bytesDone: report.bytes, bytesTotal: bytesTotal)
                    if throttle.shouldReport(now) { progress(now) }
                }
                func archiveFile(_ source: String, as entryPath: String, size: Int64, mode: UInt32, modified: Int64) throws {
                    try writer.writeHeader(path: entryPath, kind: .file, size: size, mode: mode, modified: modified)
                    let written = try fileSystem.readChunks(source, into: buffer) { chunk in
                        if isCancelled() { throw CancellationError() }
                        try writer.writeData(chunk, entry: entryPath)
                        report.bytes += Int64(chunk.count)
                        reportProgress(report.entries)
                    }
                    guard written == size else {
                        throw ArchiveError(code: -30, message: "the file changed size while it was archived", archivePath: destination.path, entryPath: entryPath)
                    }
                }
                for entry in entries {
                    if isCancelled() { throw CancellationError() }
                    let url = documents.appending(path: entry.path)
                    // lstat: a link is archived as a link (or left out), never followed.
                    guard let status = try fileSystem.status(url.path) else { continue }
                    var modified = Int64(status.modificationTime.tv_sec)
                    if let epoch = options.sourceDateEpoch { modified = min(modified, epoch) }
                    switch status.kind {
                    case .directory:
                        try writer.writeHeader(path: entry.path + "/", kind: .directory, size: 0, mode: 0o755, modified: modified)
                    case .symlink:
                        guard fileSystem.resolves(url.path, inside: documents.path) else {
                            report.leftOut.append(LeftOut(path: entry.path, reason: .linkOutside))
                            continue
                        }
                        let text = try FileManager.default.destinationOfSymbolicLink(atPath: url.path)
                        try writer.writeHeader(path: entry.path, kind: .symlink, size: 0, mode: 0o777, modified: modified, linkTarget: text)
                    case .regular:
                        try archiveFile(url.path, as: entry.path, size: status.size, mode: status.mode & 0o111 != 0 ? 0o755 : 0o644, modified: modified)
                    case .other:
                        report.leftOut.append(LeftOut(path: entry.path, reason: .specialFile))
                        continue
                    }
                    report.entries += 1
                    modifiedTimes.append(modified)
                    reportProgress(report.entries)
                }
                for file in snapshots?.files ?? [] {
                    var modified = file.modified
                    if let epoch = options.sourceDateEpoch { modified = min(modified, epoch) }
                    let entryPath = Self.databaseFolder + "/" + file.location.description
                    try archiveFile(file.snapshot, as: entryPath, size: file.size, mode: 0o644, modified: modified)
                    report.entries += 1
                    report.databases.append(entryPath)
                    modifiedTimes.append(modified)
                    let folder = (entryPath as NSString).deletingLastPathComponent
                    for support in file.supportFiles {
                        let supportModified = options.sourceDateEpoch.map { min(support.modified, $0) } ?? support.modified
                        try archiveFile(support.path, as: folder + "/" + support.relative, size: support.size, mode: 0o644, modified: supportModified)
                        report.entries += 1
                        modifiedTimes.append(supportModified)
                    }
                }
                try writer.close()
            }
            if options.format == .zip { try ZipTimestamps.normalizeToUTC(temporary, modified: modifiedTimes) }
            // Durable before it gets its name: fsync, rename over any older archive, fsync the folder.
            try fileSystem.syncFile(temporary.path)
            try fileSystem.rename(temporary.path, to: destination.path, replacing: true)
            try fileSystem.syncDirectory(destination.deletingLastPathComponent().path)
        } catch {
            try? fileSystem.removeFile(temporary.path)
            throw error
        }
        progress(ArchiveProgress(entriesDone: report.entries, entriesTotal: report.entries, bytesDone: report.bytes, bytesTotal: report.bytes))
        report.leftOut.sort { $0.path < $1.path }
        return report
    }

    /// The entries of a scan that are not documents: internal files, and hidden ones (a hidden
    /// folder once, not each file in it).
    static func leftOut(_ scanned: [ClassifiedFile]) -> [LeftOut] {
        var result: [LeftOut] = []
        var hiddenFolder: String?
        for entry in scanned where entry.kind != .document {
            if let folder = hiddenFolder, entry.path.hasPrefix(folder + "/") { continue }
            hiddenFolder = nil
            if entry.kind == .hidden {
                result.append(LeftOut(path: entry.path, reason: .hidden))
                if entry.isDirectory { hiddenFolder = entry.path }
            } else {
                result.append(LeftOut(path: entry.path, reason: .internalFile(entry.kind)))
            }
        }
        return result
    }
}
