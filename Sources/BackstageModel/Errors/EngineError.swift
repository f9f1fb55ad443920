import BackstageSystem
import Foundation

/// A failure of the machinery every step shares (the container's run lock, the upgrade journal),
/// whoever runs it: relocation, an upgrade plan, an import.
public enum EngineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another Backstage process is working on the same container.
    case containerBusy(path: String)
    /// The upgrade journal cannot be read or names a step this version does not know.
    case unreadableJournal(path: String, reason: String)
    /// The journal was written by a newer Backstage, whose steps this version cannot finish or undo.
    case newerJournal(path: String, version: Int, supported: Int)
    /// The journal's step in progress is in the shared container of an App Group this run's
    /// ``AppContainer`` has no folder for: it cannot be finished or undone without it.
    case journalInUndefinedAppGroup(path: String, identifier: String)
    /// A file-system call failed (a read-only or full Application Support, say).
    case fileSystem(FileSystemError)

    /// The file the error is about.
    public var path: String {
        switch self {
        case .containerBusy(let path), .unreadableJournal(let path, _), .newerJournal(let path, _, _),
            .journalInUndefinedAppGroup(let path, _):
            path
        case .fileSystem(let error): error.path
        }
    }

    public var description: String {
        switch self {
        case .containerBusy(let path):
            "another Backstage process is working on this container (lock \(path) is held)"
        case .unreadableJournal(let path, let reason):
            "cannot read the upgrade journal \(path): \(reason); it was left in place"
        case .newerJournal(let path, let version, let supported):
            "the upgrade journal \(path) was written by a newer Backstage (format \(version); this one reads up to \(supported)): finish the upgrade with that version"
        case .journalInUndefinedAppGroup(let path, let identifier):
            "the upgrade journal \(path) records a step in progress in the App Group \(identifier), which this container has no folder for: run again with that group's shared container (it was left in place)"
        case .fileSystem(let error):
            error.description
        }
    }
}
