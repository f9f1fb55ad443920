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
    public init(format: ArchiveFormat, level: Int? = nil, threads: Int? = nil,
                sourceDateEpoch: Int64? = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"].flatMap { Int64($0) }) {
        self.format = format
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
    /// Paths left out because they are links that leave Documents.
    public var skippedLinks: [String]
}

/// Archives the user-visible Documents tree: what the user sees, nothing else.
///
/// Entries are chosen by the same ``FileClassifier`` relocation uses: never an internal file
/// (databases by header, sidecars, Core Data support folders), never a dotfile, never anything
/// reached through a symbolic link that leaves Documents. The archive is reproducible: entries in
/// sorted order, uid/gid 0, permissions normalised (0644, 0755 for folders and executables), real
/// modification times (clamped to `SOURCE_DATE_EPOCH` when set), no access or change times. It is
/// written to a temporary name beside the destination and renamed only when complete.
public struct Exporter: Sendable {
    public let container: AppContainer

    public init(container: AppContainer) {
        self.container = container
    }

    /// Writes the archive at `destination`.
    ///
    /// - throws: ``ArchiveError`` naming the archive and the entry, or a ``FileSystemError``.
    public func export(to destination: URL, options: ExportOptions, progress: (Int64) -> Void = { _ in }) throws -> ExportReport {
        let documents = container.documents
        let entries = try FileClassifier().scan(documents).filter { $0.kind == .document }
        let temporary = destination.deletingLastPathComponent().appending(path: ".\(destination.lastPathComponent).backstage-tmp-\(UUID().uuidString.prefix(8))")
        var report = ExportReport(archive: destination.path, format: options.format, entries: 0, bytes: 0, skippedLinks: [])
        var modifiedTimes: [Int64] = []
        do {
            try withUTF8Locale {
                let writer = try ArchiveWriter(path: temporary.path, format: options.format, level: options.level, threads: options.threads)
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
                defer { buffer.deallocate() }
                let fileSystem = FileSystem()
                for entry in entries {
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
                            report.skippedLinks.append(entry.path)
                            continue
                        }
                        let text = try FileManager.default.destinationOfSymbolicLink(atPath: url.path)
                        try writer.writeHeader(path: entry.path, kind: .symlink, size: 0, mode: 0o777, modified: modified, linkTarget: text)
                    case .regular:
                        let size = status.size
                        try writer.writeHeader(path: entry.path, kind: .file, size: size, mode: status.mode & 0o111 != 0 ? 0o755 : 0o644, modified: modified)
                        let written = try fileSystem.readChunks(url.path, into: buffer) { chunk in
                            try writer.writeData(chunk, entry: entry.path)
                            report.bytes += Int64(chunk.count)
                            progress(report.bytes)
                        }
                        guard written == size else {
                            throw ArchiveError(code: -30, message: "the file changed size while it was archived", archivePath: destination.path, entryPath: entry.path)
                        }
                    case .other:
                        continue
                    }
                    report.entries += 1
                    modifiedTimes.append(modified)
                }
                try writer.close()
            }
            if options.format == .zip { try ZipTimestamps.normalizeToUTC(temporary, modified: modifiedTimes) }
            try FileManager.default.fsyncAndRename(temporary, to: destination)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        return report
    }
}

extension FileManager {
    /// Makes `temporary` durable and moves it over `destination`.
    func fsyncAndRename(_ temporary: URL, to destination: URL) throws {
        let handle = try FileHandle(forUpdating: temporary)
        try handle.synchronize()
        try handle.close()
        if fileExists(atPath: destination.path) { try removeItem(at: destination) }
        try moveItem(at: temporary, to: destination)
    }
}
