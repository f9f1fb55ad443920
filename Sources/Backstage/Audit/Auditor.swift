import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation

/// An internal file found in the documents folder.
public struct AuditFinding: Sendable, Hashable, Codable {
    /// The path relative to Documents.
    public var path: String
    /// What it is.
    public var kind: FileKind
    /// False for dotfiles: hidden from the Files app, but still in Documents and backed up.
    public var visible: Bool
    /// Its size (for a folder, the total of its files).
    public var bytes: Int64
}

/// What an audit found.
public struct AuditReport: Sendable, Hashable, Codable {
    /// Internal files in Documents, in path order.
    public var findings: [AuditFinding]
    /// Databases in Documents that the app did not declare, in path order: the user's documents,
    /// listed apart. They are not findings: an audit that finds only these is clean.
    public var userDatabases: [AuditFinding] = []
    /// The Core Data support folders (`.Name_SUPPORT`) of those databases, in path order: part of
    /// the user's documents with them, listed apart too, never findings and never orphans.
    public var userDatabaseSupport: [AuditFinding] = []
    /// True when no store was declared: every database in Documents was taken for the user's.
    public var noStoreDeclared = false
    /// True when nothing internal is in Documents.
    public var isClean: Bool { findings.isEmpty }

    /// A report of `findings`.
    public init(
        findings: [AuditFinding], userDatabases: [AuditFinding] = [], userDatabaseSupport: [AuditFinding] = [],
        noStoreDeclared: Bool = false
    ) {
        self.findings = findings
        self.userDatabases = userDatabases
        self.userDatabaseSupport = userDatabaseSupport
        self.noStoreDeclared = noStoreDeclared
    }
}

/// Lists the internal files a user would see in Documents: the app's declared stores
/// (``AppContainer/declaredStores``), sidecars, orphans, Core Data support folders, lock files and
/// Backstage temporaries. A database the app did not declare is the user's: listed apart in
/// ``AuditReport/userDatabases``, never a finding, and so is its support folder
/// (``AuditReport/userDatabaseSupport``).
///
/// It only reads: it never opens a store with SQLite, so auditing never checkpoints a WAL or
/// rolls back a journal.
///
/// ```swift
/// let report = try Auditor(container: container).audit()
/// if !report.isClean { print("\(report.findings.count) internal files are visible") }
/// ```
public struct Auditor: Sendable {
    /// The container whose Documents folder is audited.
    public let container: AppContainer

    /// Creates an auditor.
    public init(container: AppContainer) {
        self.container = container
    }

    /// Classifies Documents and returns its internal files, and the user's databases apart.
    ///
    /// - throws: ``FileSystemError`` when a folder cannot be listed or a file read.
    public func audit() throws -> AuditReport {
        // Only what the report lists is kept: a million documents cost one folder's names.
        let entries = try FileClassifier(declarations: container.declaredStores).scan(
            container.documents,
            keeping: { $0.kind.isInternal || $0.kind == .userDatabase || $0.kind == .userDatabaseSupport })
        let finding = { (entry: ClassifiedFile) in
            AuditFinding(path: entry.path, kind: entry.kind, visible: entry.isVisible, bytes: entry.bytes)
        }
        return AuditReport(
            findings: entries.filter(\.kind.isInternal).map(finding),
            userDatabases: entries.filter { $0.kind == .userDatabase }.map(finding),
            userDatabaseSupport: entries.filter { $0.kind == .userDatabaseSupport }.map(finding),
            noStoreDeclared: container.declaredStores.isEmpty)
    }
}
