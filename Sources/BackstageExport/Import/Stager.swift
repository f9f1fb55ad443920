import Backstage
import Foundation

/// Reads an archive entry by entry into the staging folder, checking each name before anything
/// is created and each block of data before it is written.
struct Stager {
    let archivePath: String
    /// Where the archive is read: `archivePath` with its links resolved.
    let archiveFile: String
    let archiveSize: Int64
    let staging: String
    /// Documents, whose links an archive's link may resolve through once moved in.
    let documents: String
    let limits: ImportLimits
    /// The app's stores in Documents: an entry at one of their paths is refused.
    let declarations: StoreDeclarations
    /// Where store snapshots are staged to be restored; nil: they are read past.
    var databaseStaging: String?
    let fileSystem: FileSystem
    let progress: (ArchiveProgress) -> Void
    let isCancelled: () -> Bool

    private var paths: EntryPaths
    private var throttle = ProgressThrottle()
    /// Logical bytes (holes included) of the entries staged so far.
    private var totalBytes: Int64 = 0
    /// The total limit: ``ImportLimits/maxTotalBytes``, or the space free at the staging folder.
    private let maxTotalBytes: Int64

    init(
        archivePath: String, archiveFile: String, archiveSize: Int64, staging: String, documents: String,
        limits: ImportLimits,
        declarations: StoreDeclarations, fileSystem: FileSystem,
        progress: @escaping (ArchiveProgress) -> Void, isCancelled: @escaping () -> Bool
    ) throws {
        self.declarations = declarations
        self.archivePath = archivePath
        self.archiveFile = archiveFile
        self.archiveSize = archiveSize
        self.staging = staging
        self.paths = EntryPaths(staging: staging, fileSystem: fileSystem)
        self.documents = documents
        self.maxTotalBytes = try limits.maxTotalBytes ?? fileSystem.space(at: staging).available
        self.limits = limits
        self.fileSystem = fileSystem
        self.progress = progress
        self.isCancelled = isCancelled
    }

    mutating func stage(into report: inout ImportReport) throws {
        try withUTF8Locale {
            let reader = try ArchiveReader(path: archivePath, reading: archiveFile, fileSystem: fileSystem)
            defer { reader.close() }
            var folders: [(path: String, modified: Int64)] = []
            var links: [(path: String, target: String, modified: Int64)] = []
            while let header = try reader.next() {
                if isCancelled() { throw CancellationError() }
                report.entries += 1
                func refuse(_ reason: ImportError.Reason) -> ImportError {
                    ImportError(archivePath: archivePath, entryPath: header.displayPath, reason: reason)
                }
                if report.entries > limits.maxEntries { throw refuse(.tooManyEntries(limit: limits.maxEntries)) }
                let path: String
                switch EntryPaths.normalize(header) {
                case .root: continue
                case .path(let normalized): path = normalized
                case .refused(let reason): throw refuse(reason)
                }
                // Store snapshots of an export made with includeDatabase: restoring a store is not an
                // import into Documents, so that folder is read past, never written.
                if path == ".backstage" || path.hasPrefix(".backstage/") {
                    let snapshots = Exporter.databaseFolder + "/"
                    if let databaseStaging, header.kind == .file, path.hasPrefix(snapshots) {
                        let target = databaseStaging + "/" + path.dropFirst(snapshots.count)
                        try fileSystem.createDirectories((target as NSString).deletingLastPathComponent, durable: false)
                        try writeFile(header, to: target, mode: 0o600, reader: reader, report: &report)
                    } else if header.kind == .file && !path.contains("_SUPPORT/") {
                        report.skippedDatabases.append(path)
                    }
                    continue
                }
                let destination = staging + "/" + path
                if header.kind != .directory { report.written += 1 }
                if header.mode & 0o7000 != 0 { report.strippedModes.append(path) }
                let mode = header.mode & 0o777

                switch header.kind {
                case .special(let kind):
                    throw refuse(.specialFile(kind))
                case .directory:
                    if let reason = try paths.add(path, kind: .directory) { throw refuse(reason) }
                    try makeFolders(path, including: true)
                    folders.append((path, header.modified))
                case .symlink:
                    let target = header.linkTarget ?? ""
                    if let reason = try paths.addLink(path, target: target) { throw refuse(reason) }
                    try makeFolders(path, including: false)
                    links.append((path, target, header.modified))
                case .hardLink:
                    let text = header.linkTarget ?? ""
                    var targetHeader = header
                    targetHeader.path = text
                    targetHeader.kind = .file
                    guard case .path(let target) = EntryPaths.normalize(targetHeader), try paths.isFile(target) else {
                        throw refuse(.hardLinkTarget(text))
                    }
                    if let reason = try paths.add(path, kind: .file) { throw refuse(reason) }
                    try makeFolders(path, including: false)
                    try fileSystem.createHardLink(destination, to: staging + "/" + target)
                case .file:
                    if let reason = try paths.add(path, kind: .file) { throw refuse(reason) }
                    if declarations.declares(path) { throw refuse(.internalFile(.database)) }
                    if let size = header.size, size > maxTotalBytes - totalBytes { throw refuse(tooLarge) }
                    try makeFolders(path, including: false)
                    try writeFile(header, to: destination, mode: mode, reader: reader, report: &report)
                }
                let now = ArchiveProgress(
                    entriesDone: report.entries, entriesTotal: nil, bytesDone: reader.bytesConsumed,
                    bytesTotal: archiveSize)
                if throttle.shouldReport(now) { progress(now) }
            }
            // Links last: no entry can be written through one, and each is resolved against them all.
            let documents = documents, fileSystem = fileSystem
            let linkOnDisk: (String) -> String? = { relative in
                let path = documents + "/" + relative
                guard (try? fileSystem.status(path))??.kind == .symlink else { return nil }
                return try? FileManager.default.destinationOfSymbolicLink(atPath: path)
            }
            for link in links {
                guard paths.linkStaysInside(link.path, target: link.target, linkOnDisk: linkOnDisk) else {
                    throw ImportError(
                        archivePath: archivePath, entryPath: link.path, reason: .linkOutside(target: link.target))
                }
                try fileSystem.createSymbolicLink(staging + "/" + link.path, target: link.target)
                try fileSystem.setModificationTime(staging + "/" + link.path, seconds: link.modified)
            }
            // Folders deepest first, after their contents, so their times stay the archive's.
            for folder in folders.reversed() {
                try fileSystem.setModificationTime(staging + "/" + folder.path, seconds: folder.modified)
            }
            progress(
                ArchiveProgress(
                    entriesDone: report.entries, entriesTotal: report.entries, bytesDone: archiveSize,
                    bytesTotal: archiveSize))
        }
    }

    /// The reason for an archive over the total limit.
    private var tooLarge: ImportError.Reason {
        limits.maxTotalBytes != nil ? .tooLarge(limit: maxTotalBytes) : .exceedsFreeSpace(available: maxTotalBytes)
    }

    private mutating func writeFile(
        _ header: ArchiveEntryHeader, to destination: String, mode: UInt32, reader: ArchiveReader,
        report: inout ImportReport
    ) throws {
        let archivePath = archivePath
        func refuse(_ reason: ImportError.Reason) -> ImportError {
            ImportError(archivePath: archivePath, entryPath: header.displayPath, reason: reason)
        }
        let file = try fileSystem.createNewFile(destination)
        let compressedStart = reader.bytesConsumed
        // The entry's logical size so far: the end of its last block, holes included.
        var end: Int64 = 0
        func checkLimits(_ logical: Int64) throws {
            if totalBytes + logical > maxTotalBytes { throw refuse(tooLarge) }
            let ratio = limits.maxCompressionRatio
            if logical > limits.ratioGraceBytes,
                Double(logical) > Double(max(reader.bytesConsumed - compressedStart, 1)) * ratio
            {
                throw refuse(.compressionRatio(limit: ratio))
            }
            let archiveLogical = totalBytes + logical
            if archiveLogical > limits.ratioGraceBytes,
                Double(archiveLogical) > Double(max(reader.bytesConsumed, 1)) * ratio
            {
                throw refuse(.archiveCompressionRatio(limit: ratio))
            }
        }
        while let block = try reader.nextBlock(entry: header.displayPath) {
            let count = Int64(block.bytes.count)
            end = max(end, block.offset + count)
            try checkLimits(end)
            try file.write(block.bytes, at: block.offset)
            report.bytes += count
            if isCancelled() { throw CancellationError() }
        }
        // A trailing hole counts too: a sparse entry claims its whole size.
        let size = max(end, header.size ?? 0)
        try checkLimits(size)
        // Owner read and write always: a 0200 or 000 entry would otherwise be a file its owner cannot open.
        try file.finish(size: size, mode: mode_t(mode | 0o600), modified: header.modified)
        totalBytes += size
    }

    /// Creates the folders leading to `path` (and `path` itself when asked) inside staging.
    private func makeFolders(_ path: String, including: Bool) throws {
        var components = path.split(separator: "/").map(String.init)
        if !including { components.removeLast() }
        guard !components.isEmpty else { return }
        try fileSystem.createDirectories(staging + "/" + components.joined(separator: "/"), durable: false)
    }
}
