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
    /// True when nothing internal is in Documents.
    public var isClean: Bool { findings.isEmpty }
}

/// Lists the internal files a user would see in Documents: databases, sidecars, orphans,
/// Core Data support folders, lock files and Backstage temporaries.
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

    /// Classifies Documents and returns its internal files.
    ///
    /// - throws: ``FileSystemError`` when a folder cannot be listed or a file read.
    public func audit() throws -> AuditReport {
        let entries = try FileClassifier().scan(container.documents)
        return AuditReport(findings: entries.filter(\.kind.isInternal).map {
            AuditFinding(path: $0.path, kind: $0.kind, visible: $0.isVisible, bytes: $0.bytes)
        })
    }
}
