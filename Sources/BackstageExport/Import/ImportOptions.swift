import Backstage

/// What an import does with a file Documents already has at the same path.
public enum ConflictPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Keep the file in Documents; the archive's is not imported.
    case skip
    /// The archive's file replaces the one in Documents (files and links only: a folder is never
    /// replaced by a file or the other way round).
    case replace
    /// Import the archive's file under a free name: `Report 2.pdf`, `Report 3.pdf`...
    case keepBoth = "keep-both"
}

/// Limits that stop an archive bomb while it streams, before the bytes are written.
///
/// Sizes are logical: a sparse entry counts its full size, holes included, since that is what
/// the file it makes claims on disk once it is filled.
public struct ImportLimits: Sendable, Hashable, Codable {
    /// Bytes all entries together may expand to. Default nil: the space free where the import is
    /// staged, so an archive that cannot fit is refused before its bytes fill the disk.
    public var maxTotalBytes: Int64?
    /// Entries an archive may hold. Default 10,000,000: an export of a million documents, and their
    /// folders, imports back; each entry costs the import some 20 bytes of memory and an inode.
    public var maxEntries: Int
    /// How many times its compressed size an entry, and the whole archive, may expand to.
    /// Default 100 (deflate reaches 1,032).
    public var maxCompressionRatio: Double
    /// An entry, or an archive, smaller than this once expanded is never refused by ratio (a page
    /// of zeros is not a bomb). Default 1 MiB.
    public var ratioGraceBytes: Int64

    public init(
        maxTotalBytes: Int64? = nil, maxEntries: Int = 10_000_000, maxCompressionRatio: Double = 100,
        ratioGraceBytes: Int64 = 1 << 20
    ) {
        self.maxTotalBytes = maxTotalBytes
        self.maxEntries = maxEntries
        self.maxCompressionRatio = maxCompressionRatio
        self.ratioGraceBytes = ratioGraceBytes
    }
}

/// How to import.
public struct ImportOptions: Sendable, Hashable, Codable {
    public var onConflict: ConflictPolicy
    public var limits: ImportLimits
    /// Restores the store snapshots an export with ``ExportOptions/includeDatabase`` holds into the
    /// locations they came from, each moved into place the way a relocation moves a store (journaled,
    /// fsynced, verified across file systems). A location that already has a store is refused
    /// before anything is written. Off: the snapshots are read past and listed.
    public var restoreDatabases: Bool
    /// The app's upgrade plans, oldest first, for ``restoreDatabases``: a snapshot goes where their
    /// `relocate` steps move the store it was taken of, the place the app keeps that store now (a
    /// snapshot of `documents/Notes.sqlite` restored into a container of a later version goes to
    /// `applicationSupport/Notes.sqlite`). A snapshot taken in Documents that no plan moves out is
    /// restored there only when the container declares that store in Documents
    /// (`AppContainer.declaredStores`) and does not hold it in Application Support; else it is refused.
    public var plans: [UpgradePlan]

    public init(
        onConflict: ConflictPolicy = .skip, limits: ImportLimits = ImportLimits(),
        restoreDatabases: Bool = false, plans: [UpgradePlan] = []
    ) {
        self.onConflict = onConflict
        self.limits = limits
        self.restoreDatabases = restoreDatabases
        self.plans = plans
    }
}

/// What an import wrote.
public struct ImportReport: Sendable, Hashable, Codable {
    /// A file imported under another name (``ConflictPolicy/keepBoth``).
    public struct Renamed: Sendable, Hashable, Codable {
        public var from: String
        public var to: String

        public init(from: String, to: String) {
            self.from = from
            self.to = to
        }
    }

    public var archive: String
    /// Entries read from the archive: files, folders and links, store snapshots included.
    public var entries: Int
    /// Documents written into Documents: files and links (folders are not counted; what was
    /// skipped, or read past, is not).
    public var written = 0
    /// Bytes of file content written (documents, and restored store snapshots).
    public var bytes: Int64
    /// Paths (relative to Documents) kept as they were because Documents already had them.
    public var skipped: [String] = []
    /// Paths not imported under another name (``ConflictPolicy/keepBoth``) because Documents already
    /// has the same bytes at that path: the same document.
    public var identical: [String] = []
    /// Paths whose file in Documents was replaced by the archive's.
    public var replaced: [String] = []
    /// Paths imported under another name.
    public var renamed: [Renamed] = []
    /// Paths whose original was set aside, under its own name in the staging folder, before the
    /// archive's file replaced it, so that a move-in cut short could put it back; once the import
    /// completed they went, as ``ConflictPolicy/replace`` asks.
    public var setAside: [String] = []
    /// An earlier import, killed while it moved its files in, that this one finished or undid first.
    public var recovered: ImportRecovery?
    /// Store snapshots (under ``Exporter/databaseFolder``) read past, without
    /// ``ImportOptions/restoreDatabases``.
    public var skippedDatabases: [String] = []
    /// Store snapshots restored with ``ImportOptions/restoreDatabases``: where each now is
    /// (`applicationSupport/Notes.sqlite`).
    public var restoredDatabases: [String] = []
    /// Store snapshots restored elsewhere than where they were taken, because the app keeps that store
    /// elsewhere now: from the location recorded in the archive to the one restored.
    public var restoredElsewhere: [Renamed] = []
    /// Paths whose setuid, setgid or sticky bit was dropped.
    public var strippedModes: [String] = []
}

/// What an import reports while it runs.
public enum ImportEvent: Sendable {
    case progress(ArchiveProgress)
    case finished(ImportReport)
}
