import Foundation

/// Why a fixture could not be made.
public enum FixtureError: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownVersion(String)
    case missingResource(String)
    case notEmpty(path: String)
    case invalidSize(String)
    case writerFailed(path: String, reason: String)
    /// The `backstage` executable that runs child processes was not found.
    case executableNotFound(reason: String)

    public var description: String {
        switch self {
        case .unknownVersion(let version): "unknown version \(version)"
        case .missingResource(let path): "the fixture catalog has no \(path)"
        case .notEmpty(let path): "\(path) already exists and is not empty; give a new folder"
        case .invalidSize(let text): "\(text) is not a size: write a number with KB, MB or GB, such as 2MB"
        case .writerFailed(let path, let reason): "the fixture writer for \(path) failed: \(reason)"
        case .executableNotFound(let reason): "the backstage executable was not found: \(reason)"
        }
    }
}
