import BackstageSystem
import Foundation

/// Why a store could not be relocated. Every case names the file and the cause, and in
/// every case the source store is left as it was.
public enum RelocationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another process has the store open: Backstage could not take SQLite's exclusive lock
    /// within the busy timeout.
    case storeInUse(path: String, timeout: Double)
    /// Another process has the store's file open, idle (a rollback-journal connection holds no
    /// lock between transactions, so SQLite's lock alone cannot see it). Found through `/proc`.
    case storeHeldOpen(path: String, processes: [Int32])
    /// The store's folder cannot be written to: the source could not be removed after the move,
    /// nor a hot journal rolled back. Nothing was changed.
    case readOnlySource(path: String)
    /// The file does not start with SQLite's header and the app did not declare it as a store (a declared
    /// store without the header, such as an encrypted one, is moved whole instead).
    case notADatabase(path: String)
    /// The database is damaged or truncated.
    case corruptStore(path: String, reason: String)
    /// A symbolic link stands where a store file should be; Backstage never follows it.
    case symlinkedStore(path: String)
    /// The destination folder cannot be written to.
    case readOnlyDestination(path: String)
    /// The destination file system has not enough free space for a copy.
    case insufficientSpace(path: String, needed: Int64, available: Int64)
    /// The rename strategy was asked for, but source and destination are on different file systems.
    case crossDevice(source: String, destination: String)
    /// The copy at the destination does not match the source.
    case verificationFailed(path: String)
    /// The store's file changed while Backstage held its lock (another process truncated, grew or
    /// replaced it, which SQLite's lock cannot stop), or since a step verified it: what was copied
    /// or verified is not what is there. The copy was removed; the source was left as it is.
    case sourceChanged(path: String, reason: String)
    /// A store already exists at the destination.
    case destinationExists(path: String)
    /// No store with this name (or at this path) was found.
    case storeNotFound(name: String)
    /// The shared machinery failed: the container is busy, the journal unreadable.
    case engine(EngineError)
    /// SQLite reported an error.
    case sqlite(path: String, code: Int32, message: String)
    /// A file-system call failed.
    case fileSystem(FileSystemError)
    /// The work was cancelled before the destination was committed; the source is authoritative.
    case cancelled(path: String)
    /// The source or destination is the shared container of an App Group the ``AppContainer``
    /// has no folder for (see ``AppContainer/addingAppGroup(_:at:)``). Nothing was changed.
    case undefinedAppGroup(String)
    /// The source and destination are the same root. Nothing was changed.
    case sameSourceAndDestination(root: String)
    /// An upgrade step left in progress in the journal (a split, a migration) could not be finished
    /// or undone before the relocation: the upgrade's own error, with its store and cause.
    indirect case upgrade(UpgradeError)
    /// A failure that is none of the above, about the file at `path`: the error as it was thrown is
    /// kept in `underlying`.
    case failed(path: String, underlying: UnderlyingError)

    /// The path of the file the error is about.
    public var path: String {
        switch self {
        case .storeInUse(let path, _), .notADatabase(let path), .corruptStore(let path, _), .symlinkedStore(let path),
            .readOnlyDestination(let path), .insufficientSpace(let path, _, _), .verificationFailed(let path),
            .sourceChanged(let path, _), .destinationExists(let path),
            .sqlite(let path, _, _), .cancelled(let path), .storeHeldOpen(let path, _), .readOnlySource(let path):
            path
        case .crossDevice(let source, _): source
        case .storeNotFound(let name): name
        case .undefinedAppGroup(let identifier): identifier
        case .sameSourceAndDestination(let root): root
        case .fileSystem(let error): error.path
        case .engine(let error): error.path
        case .upgrade(let error): error.path
        case .failed(let path, _): path
        }
    }

    public var description: String {
        switch self {
        case .storeInUse(let path, let timeout):
            "store in use: another process has \(path) open (waited \(Self.format(timeout)) s for its lock); close the app and run again"
        case .storeHeldOpen(let path, let processes):
            "store in use: process \(processes.map(String.init).joined(separator: ", ")) has \(path) open; close the app and run again"
        case .readOnlySource(let path):
            "cannot move the store out of \(path): the folder is read-only, so the source could not be removed; nothing was changed"
        case .notADatabase(let path):
            "\(path) is not a SQLite database (its first 16 bytes are not \"SQLite format 3\")"
        case .corruptStore(let path, let reason):
            "\(path) is a damaged database: \(reason)"
        case .symlinkedStore(let path):
            "\(path) is a symbolic link; Backstage does not move stores through links"
        case .readOnlyDestination(let path):
            "cannot write to \(path): the destination is read-only"
        case .insufficientSpace(let path, let needed, let available):
            "not enough space in \(path): the copy needs \(needed) bytes, \(available) are free"
        case .crossDevice(let source, let destination):
            "cannot rename \(source) to \(destination): they are on different file systems (use the copy strategy)"
        case .verificationFailed(let path):
            "the copy at \(path) does not match its source; the source was kept"
        case .sourceChanged(let path, let reason):
            "\(path) changed under Backstage's lock (\(reason)): another process wrote to it without SQLite's lock; what was copied from it was removed and the store left as it is; close the app and run again"
        case .destinationExists(let path):
            "a store already exists at \(path)"
        case .storeNotFound(let name):
            "no store at \(name)"
        case .engine(let error):
            error.description
        case .sqlite(let path, let code, let message):
            SQLiteFailure.sentence(code: code, message: message, path: path)
        case .fileSystem(let error):
            error.description
        case .cancelled(let path):
            "relocation of \(path) was cancelled; the source store was kept"
        case .undefinedAppGroup(let identifier):
            "the container has no folder for the App Group \(identifier); nothing was changed: give its shared container (AppContainer.addingAppGroup, or --app-group \(identifier)=FOLDER)"
        case .sameSourceAndDestination(let root):
            "the stores would move from \(root) to \(root): choose another destination; nothing was changed"
        case .upgrade(let error):
            error.description
        case .failed(let path, let underlying):
            "\(path): \(underlying)"
        }
    }

    /// True when a rename failed because source and destination are on different mounts.
    package var isCrossDevice: Bool {
        if case .fileSystem(let error) = self { return error.isCrossDevice }
        return false
    }

    /// Wraps any error of the engine: relocation errors as they are, the engine's, the file
    /// system's and an upgrade step's by case, anything else whole in ``failed(path:underlying:)``
    /// naming `path`.
    package init(_ error: Error, path: String) {
        switch error {
        case let error as RelocationError: self = error
        case let error as FileSystemError: self = .fileSystem(error)
        case let error as EngineError: self = .engine(error)
        case UpgradeError.relocation(let inner): self = inner
        case let error as UpgradeError: self = .upgrade(error)
        default: self = .failed(path: path, underlying: UnderlyingError(error))
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }
}
