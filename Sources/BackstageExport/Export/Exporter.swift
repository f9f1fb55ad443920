import Backstage
import Foundation

/// How to write an export.
public struct ExportOptions: Sendable, Hashable {
    public var format: ArchiveFormat
    /// Compression level (format-specific; 0 = store for zip); nil for the format's default.
    public var level: Int?
    /// Threads compressing tar.gz, tar.zst and zip; nil for one per core (at most 8). The archive
    /// is the same whatever the number. tar.bz2, tar.xz and 7z are compressed on one thread
    /// (libarchive's multi-threaded xz writes another stream than its single-threaded one).
    public var threads: Int?
    /// When set, modification times later than this are clamped to it (reproducible builds'
    /// `SOURCE_DATE_EPOCH`).
    public var sourceDateEpoch: Int64?

    /// Options for `format`, reading `SOURCE_DATE_EPOCH` from the environment.
    /// Adds a consistent snapshot of each store of the container (SQLite's backup API, never the
    /// live files or their sidecars) under ``Exporter/databaseFolder``.
    public var includeDatabase: Bool

    /// Limits tests lower to reach, with small trees, what big ones do.
    package var tuning = ExportTuning()

    public init(
        format: ArchiveFormat, level: Int? = nil, threads: Int? = nil, includeDatabase: Bool = false,
        sourceDateEpoch: Int64? = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"].flatMap { Int64($0) }
    ) {
        self.format = format
        self.includeDatabase = includeDatabase
        self.level = level
        self.threads = threads
        self.sourceDateEpoch = sourceDateEpoch
    }
}

extension ExportOptions {
    /// The default number of compression threads: one per core, at most 8.
    public static var defaultThreads: Int { max(1, min(8, ProcessInfo.processInfo.activeProcessorCount)) }

    /// ``threads``, or ``defaultThreads``; at least 1.
    var compressionThreads: Int { max(1, threads ?? Self.defaultThreads) }
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
        /// A `-wal`, `-shm` or `-journal` of a user's database: its committed rows are in the
        /// database's consistent copy, which the archive holds.
        case inDatabaseCopy
        /// A document that an app wrote every time it was read: no copy of it is one state of it.
        case changedWhileRead
        /// A user's database SQLite cannot read (damaged, encrypted, locked), beside a sidecar that
        /// may hold its committed rows: no consistent copy could be made.
        case unreadableDatabase

        public var description: String {
            switch self {
            case .internalFile(let kind): "internal file (\(kind.rawValue))"
            case .hidden: "hidden (dotfile)"
            case .linkOutside: "link leaving Documents"
            case .specialFile: "not a regular file"
            case .changedWhileRead: "changed while it was read, each time it was read"
            case .inDatabaseCopy: "held in its database's consistent copy"
            case .unreadableDatabase: "a database SQLite cannot read, with a sidecar that may hold its rows"
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
/// (the app's stores, their sidecars and Core Data support folders), never a dotfile, never anything
/// reached through a symbolic link that leaves Documents. A database the app did not declare is the
/// user's: archived as one consistent copy, with its Core Data support folder (`.Name_SUPPORT`, a
/// dot-folder, there as part of that document). The archive is reproducible: entries in
/// sorted order, uid/gid 0, permissions normalised (0644, 0755 for folders and executables), real
/// modification times (clamped to `SOURCE_DATE_EPOCH` when set), no access or change times, and
/// names in UTF-8 whatever the process locale. zip, tar.gz and tar.zst are compressed on
/// ``ExportOptions/threads`` threads with the same bytes whatever their number. Files are
/// streamed, so memory does not grow with their size, and the archive is written to a temporary
/// name beside the destination, renamed only when complete.
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
    public func events(to destination: URL, options: ExportOptions) -> WorkStream<ExportEvent> {
        let exporter = self
        return WorkStream { yield, isCancelled, caughtUp in
            let report = try exporter.exportAndWait(
                to: destination, options: options, progress: { yield(.progress($0)) }, isCancelled: isCancelled,
                caughtUp: caughtUp)
            yield(.finished(report))
        }
    }

    /// Writes the archive at `destination` and returns what it holds.
    ///
    /// - throws: ``ArchiveError`` naming the archive and the entry, a `FileSystemError`, a
    ///   `BackstageError` when a store cannot be snapshotted, or `CancellationError`. No file is left at
    ///   `destination` (nor beside it) when it throws.
    @discardableResult
    public func export(to destination: URL, options: ExportOptions) async throws -> ExportReport {
        for try await event in events(to: destination, options: options) {
            if case .finished(let report) = event { return report }
        }
        throw CancellationError()
    }

    /// The synchronous engine. `caughtUp` is asked before the archive gets its name: it waits until
    /// whoever receives the progress has taken it all (see `WorkStream`), then says whether the
    /// export is cancelled.
    package func exportAndWait(
        to destination: URL, options: ExportOptions,
        progress: (ArchiveProgress) -> Void = { _ in }, isCancelled: () -> Bool = { false },
        caughtUp: (() -> Bool)? = nil
    ) throws -> ExportReport {
        try refuseOutputInsideDocuments(destination)
        let temporary = destination.deletingLastPathComponent().appending(
            path: TemporaryName.beside(destination.lastPathComponent, suffix: String(UUID().uuidString.prefix(8))))
        var report = ExportReport(archive: destination.path, format: options.format, entries: 0, bytes: 0)
        let fileSystem = FileSystem()
        var snapshots: StoreSnapshots?
        defer { snapshots?.remove() }
        let copies = DatabaseCopies(container: container, fileSystem: fileSystem)
        defer { copies.remove() }
        do {
            let items = ArchiveItems(
                documentRoot: Self.rootPath(container.documents), spoolPath: temporary.path + ".items",
                memoryLimit: options.tuning.listedBytesInMemory, fileSystem: fileSystem)
            try collect(
                into: items, copies: copies, options: options, fileSystem: fileSystem, report: &report,
                isCancelled: isCancelled)
            if options.includeDatabase {
                snapshots = try StoreSnapshots(container: container, fileSystem: fileSystem)
                try append(snapshots, to: items, options: options, report: &report)
            }
            try items.finish()
            options.tuning.counters?.record(itemsInFile: items.isInFile)
            let bytes = try writeRetrying(
                items, to: temporary, naming: destination, options: options, copies: copies, fileSystem: fileSystem,
                report: &report, progress: progress, isCancelled: isCancelled)
            report.bytes = bytes
            report.entries = items.count
            // A Cancel pressed on any progress so far: the archive never gets its name.
            if caughtUp?() ?? isCancelled() { throw CancellationError() }
            // Durable before it gets its name: fsync, rename over any older archive, fsync the folder.
            try fileSystem.syncFile(temporary.path)
            try fileSystem.rename(temporary.path, to: destination.path, replacing: true)
            try fileSystem.syncDirectory(destination.deletingLastPathComponent().path)
        } catch {
            try? fileSystem.removeFile(temporary.path)
            throw error
        }
        progress(
            ArchiveProgress(
                entriesDone: report.entries, entriesTotal: report.entries, bytesDone: report.bytes,
                bytesTotal: report.bytes))
        report.leftOut.sort { $0.path < $1.path }
        return report
    }

    /// Writes `items` to `temporary`; returns the bytes of content archived. A document the app
    /// writes meanwhile drops the archive, and the next one holds a still copy of it (or leaves it
    /// out, saying so), up to ``writeAttempts`` archives.
    private func writeRetrying(
        _ items: ArchiveItems, to temporary: URL, naming destination: URL, options: ExportOptions,
        copies: DatabaseCopies, fileSystem: FileSystem, report: inout ExportReport,
        progress: (ArchiveProgress) -> Void, isCancelled: () -> Bool
    ) throws -> Int64 {
        var attempt = 1
        while true {
            let bytesTotal = items.bytes, entriesTotal = items.count
            var throttle = ProgressThrottle()
            let onWritten: (Int, Int64) -> Void = { entries, bytes in
                let now = ArchiveProgress(
                    entriesDone: entries, entriesTotal: entriesTotal, bytesDone: bytes, bytesTotal: bytesTotal)
                if throttle.shouldReport(now) { progress(now) }
            }
            do {
                return try write(
                    items, to: temporary, naming: destination, options: options, fileSystem: fileSystem,
                    progress: onWritten, isCancelled: isCancelled)
            } catch let changed as DocumentChanged where attempt < Self.writeAttempts {
                try? fileSystem.removeFile(temporary.path)
                try Self.still(changed.path, in: items, copies: copies, report: &report)
                attempt += 1
            }
        }
    }

    /// `url`'s path without a trailing slash: a document is read at `rootPath + "/" + its path`.
    static func rootPath(_ url: URL) -> String {
        url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
    }

    /// Walks Documents once, in archive order (the classifier's: depth first, sorted), appending
    /// the item of each document to `items` as it is classified (a link kept only when it stays
    /// inside Documents), and recording in `report` what is left out. Nothing holds every entry:
    /// memory stays that of one folder's names, whatever the number of files.
    private func collect(
        into items: ArchiveItems, copies: DatabaseCopies, options: ExportOptions, fileSystem: FileSystem,
        report: inout ExportReport, isCancelled: () -> Bool
    ) throws {
        let clamp: (Int64) -> Int64 = { modified in options.sourceDateEpoch.map { min(modified, $0) } ?? modified }
        var leftOut = LeftOutEntries()
        var visited = 0
        // A user's database goes with its Core Data support folder, file by file, dot-folder as it is.
        try FileClassifier(fileSystem: fileSystem, declarations: container.declaredStores).visit(
            container.documents, expandingUserSupport: true
        ) { entry, status in
            visited += 1
            if visited % 256 == 0 && isCancelled() { throw CancellationError() }
            guard entry.kind == .document || entry.kind == .userDatabase || entry.kind == .userDatabaseSupport else {
                leftOut.add(entry, to: &report.leftOut)
                return
            }
            if let item = try item(
                for: entry, status: status, items: items, copies: copies, clamp: clamp, fileSystem: fileSystem,
                report: &report)
            {
                try items.append(item)
            }
        }
    }

    /// The item of a document, by the `lstat` the walk took of it (a link is archived as a link,
    /// or left out, never followed); nil when it is left out, said in `report`.
    private func item(
        for entry: ClassifiedFile, status: EntryStatus, items: ArchiveItems, copies: DatabaseCopies,
        clamp: (Int64) -> Int64, fileSystem: FileSystem, report: inout ExportReport
    ) throws -> ArchiveItem? {
        let rootPath = items.documentRoot
        let path = rootPath + "/" + entry.path
        let modified = clamp(status.modified)
        switch status.kind {
        case .directory:
            return ArchiveItem(path: entry.path + "/", content: .directory, mode: 0o755, modified: modified)
        case .symlink:
            guard fileSystem.resolves(path, inside: rootPath) else {
                report.leftOut.append(LeftOut(path: entry.path, reason: .linkOutside))
                return nil
            }
            let text = try FileManager.default.destinationOfSymbolicLink(atPath: path)
            return ArchiveItem(path: entry.path, content: .symlink(target: text), mode: 0o777, modified: modified)
        case .regular where entry.kind == .userDatabase:
            let url = container.documents.appending(path: entry.path)
            guard let copy = try copies.copy(of: url) ?? Self.wholeFile(url, fileSystem: fileSystem),
                let copied = try fileSystem.status(copy)
            else {
                report.leftOut.append(LeftOut(path: entry.path, reason: .unreadableDatabase))
                return nil
            }
            return ArchiveItem(
                path: entry.path, content: .file(source: copy, size: copied.size), mode: 0o644, modified: modified)
        case .regular:
            return ArchiveItem(
                path: entry.path, content: .document(root: rootPath, size: status.size),
                mode: status.mode & 0o111 != 0 ? 0o755 : 0o644, modified: modified)
        case .other:
            report.leftOut.append(LeftOut(path: entry.path, reason: .specialFile))
            return nil
        }
    }

    /// Appends the store snapshots, after the documents, under ``databaseFolder``.
    private func append(
        _ snapshots: StoreSnapshots?, to items: ArchiveItems, options: ExportOptions, report: inout ExportReport
    ) throws {
        let clamp: (Int64) -> Int64 = { modified in options.sourceDateEpoch.map { min(modified, $0) } ?? modified }
        for file in snapshots?.files ?? [] {
            let entryPath = Self.databaseFolder + "/" + file.location.description
            try items.append(
                ArchiveItem(
                    path: entryPath, content: .file(source: file.snapshot, size: file.size), mode: 0o644,
                    modified: clamp(file.modified)))
            report.databases.append(entryPath)
            let folder = (entryPath as NSString).deletingLastPathComponent
            for support in file.supportFiles {
                try items.append(
                    ArchiveItem(
                        path: folder + "/" + support.relative, content: .file(source: support.path, size: support.size),
                        mode: 0o644, modified: clamp(support.modified)))
            }
        }
    }

    /// Writes `items` to `temporary` in `options.format`; returns the bytes of content archived.
    /// zip, tar.gz and tar.zst are written by Backstage on several threads (libarchive writing the
    /// tar's entries), the other formats by libarchive alone.
    private func write(
        _ items: ArchiveItems, to temporary: URL, naming destination: URL, options: ExportOptions,
        fileSystem: FileSystem,
        progress: (Int, Int64) -> Void, isCancelled: () -> Bool
    ) throws -> Int64 {
        let threads = options.compressionThreads
        // The files are read in order: their reads are started ahead of the threads that need them,
        // from a reader of the items of its own.
        let aheadReader = items.reader()
        let readAhead = ReadAhead(count: items.count, bytes: items.bytes, fileSystem: fileSystem) { _ in
            // An item it cannot read is not read ahead: the writers' reading of it says why.
            (try? aheadReader.next())?.readAheadFile
        }
        defer { readAhead.stop() }
        // The archive goes to disk as it is written, not all at the fsync that ends the export.
        let writeback = BackgroundWriteback(path: temporary.path, committing: true)
        defer { writeback.stop() }
        switch options.format {
        case .zip:
            let output = try ArchiveOutput(
                temporary: temporary.path, archivePath: destination.path, fileSystem: fileSystem)
            defer { output.close() }
            var zip = ParallelZip(
                items: items, level: options.level, workers: threads, readAhead: readAhead,
                heldBytesPerWorker: options.tuning.heldBytesPerWorker,
                spilledBytesPerWorker: options.tuning.spilledBytesPerWorker, spillPath: temporary.path + ".spill",
                entriesAheadPerWorker: options.tuning.entriesAheadPerWorker,
                directorySpool: Spool(
                    path: temporary.path + ".directory", memoryLimit: options.tuning.listedBytesInMemory,
                    fileSystem: fileSystem),
                counters: options.tuning.counters)
            zip.directory.zip64Limit = options.tuning.zip64Limit
            return try zip.write(to: output, fileSystem: fileSystem, progress: progress, isCancelled: isCancelled)
        case .tarGz, .tarZst:
            let output = try ArchiveOutput(
                temporary: temporary.path, archivePath: destination.path, fileSystem: fileSystem)
            defer { output.close() }
            return try withUTF8Locale {
                // libarchive writes the tar stream; Backstage compresses it on `threads` threads,
                // in blocks at fixed offsets: gzip members, zstd frames.
                let sink =
                    options.format == .tarGz
                    ? ParallelGzip.sink(output: output, level: options.level, workers: threads)
                    : try ParallelZstd.sink(output: output, level: options.level, workers: threads)
                let writer = try ArchiveWriter(sink: sink, format: .tar, level: nil, archivePath: destination.path)
                let bytes = try write(
                    items, with: writer, readAhead: readAhead, fileSystem: fileSystem, progress: progress,
                    isCancelled: isCancelled)
                try writer.close()
                try sink.finish()
                return bytes
            }
        default:
            return try withUTF8Locale {
                let writer = try ArchiveWriter(
                    path: temporary.path, naming: destination.path, format: options.format, level: options.level)
                let bytes = try write(
                    items, with: writer, readAhead: readAhead, fileSystem: fileSystem, progress: progress,
                    isCancelled: isCancelled)
                try writer.close()
                return bytes
            }
        }
    }

    /// Writes `items` one after the other through `writer`, on the calling thread.
    private func write(
        _ items: ArchiveItems, with writer: ArchiveWriter, readAhead: ReadAhead, fileSystem: FileSystem,
        progress: (Int, Int64) -> Void, isCancelled: () -> Bool
    ) throws -> Int64 {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        let reader = items.reader()
        var bytes: Int64 = 0, index = 0
        while let item = try reader.next() {
            if isCancelled() { throw CancellationError() }
            readAhead.reached(index, bytesBefore: bytes)
            try writer.write(item, buffer: buffer, fileSystem: fileSystem) { count in
                bytes += Int64(count)
                if isCancelled() { throw CancellationError() }
                progress(index, bytes)
            }
            index += 1
            progress(index, bytes)
        }
        return bytes
    }

    /// How many archives an export may start when documents change while they are read.
    static let writeAttempts = 4

    /// Replaces the document at `path` in `items` by a still copy of it, or leaves it out and says so.
    private static func still(
        _ path: String, in items: ArchiveItems, copies: DatabaseCopies, report: inout ExportReport
    ) throws {
        guard let item = try items.first(where: { $0.path == path }), let source = item.source else { return }
        if let copy = try copies.stillCopy(of: source), let size = try FileSystem().status(copy)?.size {
            try items.replace(path, with: .file(source: copy, size: size))
        } else {
            try items.replace(path, with: nil)
            report.leftOut.append(LeftOut(path: path, reason: .changedWhileRead))
        }
    }

    /// An archive written inside Documents would be exported by every later export: refused, with
    /// links on either side resolved (Documents may be a link, the archive's folder too).
    private func refuseOutputInsideDocuments(_ destination: URL) throws {
        let documents = container.documents.resolvingSymlinksInPath().standardizedFileURL.path
        let folder = destination.deletingLastPathComponent().resolvingSymlinksInPath().standardizedFileURL.path
        if FileSystem.relativePath(of: folder, inside: documents) != nil {
            throw ExportError(
                archivePath: destination.path,
                reason: .insideDocuments(documents: container.documents.path))
        }
    }

    /// A user's database SQLite cannot read is archived as its bytes when no sidecar beside it
    /// may hold committed rows (nothing else holds its state); nil when one may.
    private static func wholeFile(_ url: URL, fileSystem: FileSystem) throws -> String? {
        for sidecar in [Sidecar.wal, .journal] where try fileSystem.status(url.path + sidecar.rawValue) != nil {
            return nil
        }
        return url.path
    }
}

/// The entries of a walk that are not documents, said as an export's report says them: internal
/// files, and hidden ones (a hidden folder once, not each file in it). Told them in walk order.
struct LeftOutEntries {
    private var hiddenFolder: String?

    mutating func add(_ entry: ClassifiedFile, to result: inout [LeftOut]) {
        if let folder = hiddenFolder, entry.path.hasPrefix(folder + "/") { return }
        hiddenFolder = nil
        if entry.kind == .hidden {
            result.append(LeftOut(path: entry.path, reason: .hidden))
            if entry.isDirectory { hiddenFolder = entry.path }
        } else if entry.kind == .userDatabaseSidecar {
            result.append(LeftOut(path: entry.path, reason: .inDatabaseCopy))
        } else {
            result.append(LeftOut(path: entry.path, reason: .internalFile(entry.kind)))
        }
    }
}
