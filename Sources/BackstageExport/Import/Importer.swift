import Backstage
import Foundation
import Logging

/// Restores an archive into the container's Documents folder, all or nothing.
///
/// Every entry is checked before its bytes are written, and written only into a staging folder
/// (the container's temporary folder when it shares Documents' file system, else a hidden
/// `.backstage-tmp-import-*` folder in Documents). Only when the whole archive passed is the staged
/// tree made durable (one `syncfs`) and renamed into Documents, under a journal that lets the next
/// import finish or undo a move-in a kill cut short (``ImportRecovery``). Anything unsafe stops the import
/// with an ``ImportError`` naming the entry, and Documents is left as it was:
///
/// - absolute paths, `..` components, backslashes and control characters in names;
/// - symbolic links that resolve outside the imported tree (links of the archive are followed
///   when resolving, so a chain cannot climb out), hard links to anything but an earlier file
///   of the archive, entries behind a link (of the archive, or one Documents already has);
/// - devices, FIFOs and sockets (setuid, setgid and sticky bits are stripped, not refused);
/// - a path given twice, or two paths equal under case folding or Unicode normalization
///   (also against what Documents already holds);
/// - anything the `FileClassifier` calls internal: a store the app declares
///   (`AppContainer.declaredStores`) whatever its header, its sidecars, orphan sidecars, a Core
///   Data support folder of a declared store or of no database. A database the app did not declare
///   is the user's and is restored, with its support folder (`.Name_SUPPORT`) beside it;
/// - bombs: more than ``ImportLimits/maxEntries`` entries, more than ``ImportLimits/maxTotalBytes``
///   bytes, or an entry expanding more than ``ImportLimits/maxCompressionRatio`` times, checked as the
///   data streams in.
///
/// For example:
///
/// ```swift
/// let importer = Importer(container: container)
/// let report = try await importer.importArchive(URL(filePath: "backup.zip"), options: ImportOptions(onConflict: .keepBoth))
/// print(report.entries, report.renamed)
/// ```
public struct Importer: Sendable {
    public let container: AppContainer
    let logger: Logger
    package var fileSystem = FileSystem()
    /// Called at each boundary of the move-in (the journal written, each entry moved in, all moved
    /// in): where `backstage-simulate-child`, asked to import with a `crashAt`, kills the process to
    /// test the recovery.
    package var boundaryHook: (@Sendable (ImportBoundary) -> Void)?

    public init(container: AppContainer, logger: Logger = Logger(label: "backstage.import")) {
        self.container = container
        self.logger = logger
    }

    /// Imports `archive`, streaming progress; the last event is `.finished(report)`. Stopping the
    /// iteration cancels the import, leaving Documents as it was.
    public func events(from archive: URL, options: ImportOptions = ImportOptions()) -> WorkStream<ImportEvent> {
        let importer = self
        return WorkStream { yield, isCancelled, caughtUp in
            let report = try importer.importAndWait(
                archive, options: options, progress: { yield(.progress($0)) }, isCancelled: isCancelled,
                caughtUp: caughtUp)
            yield(.finished(report))
        }
    }

    /// Imports `archive` and returns what was written.
    ///
    /// - throws: ``ImportError`` for an unsafe entry, ``ArchiveError`` for a damaged archive,
    ///   `FileSystemError` when the disk is full or read-only, `CancellationError`. Documents is
    ///   unchanged whenever it throws.
    @discardableResult
    public func importArchive(_ archive: URL, options: ImportOptions = ImportOptions()) async throws -> ImportReport {
        for try await event in events(from: archive, options: options) {
            if case .finished(let report) = event { return report }
        }
        throw CancellationError()
    }

    /// Opens the archive and reads its first entry's header, as the import then does: an
    /// ``ArchiveError`` when libarchive cannot read it.
    private static func readFirstHeader(
        of archivePath: String, reading archiveFile: String, fileSystem: FileSystem
    )
        throws
    {
        try withUTF8Locale {
            let reader = try ArchiveReader(path: archivePath, reading: archiveFile, fileSystem: fileSystem)
            defer { reader.close() }
            _ = try reader.next()
        }
    }

    /// The synchronous engine. `caughtUp` is asked before anything moves into Documents: it waits
    /// until whoever receives the progress has taken it all (see `WorkStream`), then says whether the
    /// import is cancelled.
    package func importAndWait(
        _ archive: URL, options: ImportOptions = ImportOptions(),
        progress: @escaping (ArchiveProgress) -> Void = { _ in }, isCancelled: @escaping () -> Bool = { false },
        caughtUp: (() -> Bool)? = nil
    ) throws -> ImportReport {
        let archivePath = archive.standardizedFileURL.path
        // The archive may be reached through a link (a Downloads folder linked elsewhere): read its target.
        let archiveFile = fileSystem.resolvedPath(archivePath) ?? archivePath
        guard let archiveStatus = try fileSystem.status(archiveFile), archiveStatus.kind == .regular else {
            throw FileSystemError(
                operation: .open, path: archivePath,
                code: archiveFile == archivePath && fileSystem.exists(archivePath) ? EINVAL : ENOENT)
        }
        let documents = container.documents.path
        // A container that does not exist (a typo in its path) is refused, never created: only
        // Documents itself is made, inside a folder that exists.
        let parent = (documents as NSString).deletingLastPathComponent
        guard try fileSystem.status(documents)?.kind == .directory || fileSystem.status(parent)?.kind == .directory
        else {
            throw FileSystemError(operation: .open, path: parent, code: ENOENT)
        }
        // An archive Backstage cannot read (a format it does not take, a file that is no archive)
        // is refused before anything is made in the container: its lock, Documents, the staging.
        try Self.readFirstHeader(of: archivePath, reading: archiveFile, fileSystem: fileSystem)
        let runLock = try RunLock(container: container, fileSystem: fileSystem)
        defer { runLock.release() }
        let quarantine = Quarantine(container: container, fileSystem: fileSystem)
        try fileSystem.createDirectories(documents)
        // An import a kill interrupted is finished or undone first, by its journal.
        let recovered = try recoverLocked(quarantine)
        let staging = try makeStaging()
        defer { discardStaging(staging) }
        var report = ImportReport(archive: archivePath, entries: 0, bytes: 0)
        report.recovered = recovered
        let snapshotStaging =
            options.restoreDatabases
            ? container.temporary.path + "/" + TemporaryName.unique("restore") : nil
        defer { if let snapshotStaging { discardStaging(snapshotStaging, journaled: false) } }
        do {
            var stager = try Stager(
                archivePath: archivePath, archiveFile: archiveFile, archiveSize: archiveStatus.size, staging: staging,
                documents: documents,
                limits: options.limits, declarations: container.declaredStores, fileSystem: fileSystem,
                progress: progress, isCancelled: isCancelled)
            if let snapshotStaging {
                try fileSystem.createDirectories(snapshotStaging, mode: 0o700)
                stager.databaseStaging = snapshotStaging
            }
            try stager.stage(into: &report)
            try refuseInternalFiles(in: staging, archivePath: archivePath)
            let snapshots =
                try snapshotStaging.map { try planRestores(staged: $0, archivePath: archivePath, plans: options.plans) }
                ?? []
            let moves = try planMoveIn(
                staging: staging, policy: options.onConflict, archivePath: archivePath, report: &report)
            // A Cancel pressed on any progress so far: nothing moves into Documents.
            if caughtUp?() ?? isCancelled() { throw CancellationError() }
            try moveIn(moves, staging: staging, archivePath: archivePath, quarantine: quarantine, report: &report)
            try restore(snapshots, report: &report)
        } catch var error as FileSystemError {
            // The staging folder is gone when the user reads this: name the place in Documents.
            error.path = Self.documentsPath(for: error.path, staging: staging, documents: documents)
            throw error
        }
        logger.debug("imported \(report.entries) entries, \(report.bytes) bytes from \(archivePath)")
        return report
    }

    /// `path` inside the staging folder, said as the path it was going to have in Documents.
    static func documentsPath(for path: String, staging: String, documents: String) -> String {
        guard let relative = FileSystem.relativePath(of: path, inside: staging) else { return path }
        return relative.isEmpty ? documents : documents + "/" + relative
    }

    // MARK: Staging

    static let stagingPrefix = TemporaryName.marker + "-import-"

    private func makeStaging() throws -> String {
        let documents = container.documents.path
        let temporary = container.temporary.path
        let name = Self.stagingPrefix + UUID().uuidString.prefix(8).lowercased()
        var parent = documents
        if (try? fileSystem.createDirectories(temporary)) != nil,
            try fileSystem.canRename(from: temporary, to: documents)
        {
            parent = temporary
        }
        let staging = parent + "/" + name
        try fileSystem.createDirectory(staging, mode: 0o700)
        return staging
    }

    /// Removes the staging folder of an import that stopped, unless the import journal still names
    /// it (a move-in whose undo failed: the next import finishes it). It holds only copies of the
    /// archive's entries and second links of originals still in Documents, so a removal that fails
    /// loses nothing: the next import sweeps the folder.
    private func discardStaging(_ staging: String, journaled: Bool = true) {
        if journaled, ImportJournalFile(container: container, fileSystem: fileSystem).exists {
            return
        }
        do {
            try fileSystem.removeTree(staging)
        } catch {
            logger.warning("could not remove the staging folder \(staging) (\(error)); the next import removes it")
        }
    }

    /// The one classifier decides: whatever it calls internal must not be recreated in Documents, but
    /// for the support folder of a user's database Documents has (its companion).
    private func refuseInternalFiles(in staging: String, archivePath: String) throws {
        let entries = try FileClassifier(fileSystem: fileSystem, declarations: container.declaredStores)
            .scan(URL(filePath: staging, directoryHint: .isDirectory), keeping: { $0.kind.isInternal })
        // A support folder alone is its database's when Documents has that user's database.
        for found in entries where try found.kind.isInternal && !isSupportOfDocumentsDatabase(found) {
            throw ImportError(archivePath: archivePath, entryPath: found.path, reason: .internalFile(found.kind))
        }
    }
}
