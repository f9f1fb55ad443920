import Foundation

/// An export refused before anything was written, naming the archive and the cause.
public struct ExportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the export was refused.
    public enum Reason: Sendable, Hashable {
        /// The archive would be written inside the Documents folder being exported: every later
        /// export would hold the earlier archives.
        case insideDocuments(documents: String)
    }

    /// The archive that was asked for.
    public var archivePath: String
    public var reason: Reason

    public init(archivePath: String, reason: Reason) {
        self.archivePath = archivePath
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .insideDocuments(let documents):
            "\(archivePath) is inside \(documents), the folder being exported: write the archive elsewhere"
        }
    }
}
