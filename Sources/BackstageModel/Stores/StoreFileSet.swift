import BackstageSystem
import Foundation

/// One store's files as a unit: the database, its `-wal`, `-shm` and `-journal`, and Core
/// Data's `.Name_SUPPORT` folder of external binary data.
///
/// A store is never moved file by file: committed transactions may live in `-wal`, and a
/// database paired with another store's journal is corrupt.
///
/// ```swift
/// let store = StoreFileSet(main: container.documents.appending(path: "Notes.sqlite"))
/// store.sidecar(.wal)   // .../Documents/Notes.sqlite-wal
/// store.supportFolder   // .../Documents/.Notes_SUPPORT
/// ```
public struct StoreFileSet: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The database file.
    public var main: URL

    /// Creates the file set of the database at `main`.
    public init(main: URL) {
        self.main = main.standardizedFileURL
    }

    /// The folder holding the store.
    public var directory: URL { main.deletingLastPathComponent() }
    /// The database file name, such as `Notes.sqlite`.
    public var fileName: String { main.lastPathComponent }
    /// The name without extension, such as `Notes`.
    public var baseName: String { main.deletingPathExtension().lastPathComponent }

    /// The URL of a sidecar, such as `Notes.sqlite-wal`.
    public func sidecar(_ sidecar: Sidecar) -> URL {
        directory.appending(path: fileName + sidecar.rawValue)
    }

    /// Core Data's external data folder, `.Notes_SUPPORT`.
    public var supportFolder: URL {
        directory.appending(path: Self.supportFolderName(ofStoreNamed: fileName), directoryHint: .isDirectory)
    }

    /// The name of the Core Data support folder of the store file `fileName`, beside it: the name
    /// without its extension between a dot and `_SUPPORT` (`Notes.sqlite` → `.Notes_SUPPORT`,
    /// `Notes` → `.Notes_SUPPORT`). The one rule: the classifier finds a folder's database by it.
    public static func supportFolderName(ofStoreNamed fileName: String) -> String {
        ".\((fileName as NSString).deletingPathExtension)_SUPPORT"
    }

    /// The files Core Data keeps outside the database, `.Notes_SUPPORT/_EXTERNAL_DATA`, each named
    /// by the UUID its row references.
    public var externalDataFolder: URL {
        supportFolder.appending(path: "_EXTERNAL_DATA", directoryHint: .isDirectory)
    }

    /// Every path that belongs to the store, present or not: main, sidecars, support folder.
    public var allPaths: [URL] {
        [main] + Sidecar.allCases.map(sidecar) + [supportFolder]
    }

    public var description: String { main.path }

    /// The temporary name Backstage copies the database to before committing it.
    package var temporaryMain: URL { directory.appending(path: TemporaryName.beside(fileName)) }
    /// The temporary name of the support folder during a copy.
    package var temporarySupportFolder: URL {
        directory.appending(path: TemporaryName.beside(".\(baseName)_SUPPORT"), directoryHint: .isDirectory)
    }
}
