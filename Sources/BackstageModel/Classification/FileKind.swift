import BackstageSystem
/// What a file in the documents folder is, as far as the user is concerned.
public enum FileKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// A store the app declares (``StoreDeclarations``), whatever its header; in a folder no user
    /// sees, any SQLite database, recognised by its header.
    case database
    /// The write-ahead log of a database beside it. It holds committed transactions.
    case wal
    /// The shared-memory index of a WAL database beside it.
    case shm
    /// The rollback journal of a database beside it (a hot journal after a crash).
    case journal
    /// A `-wal`, `-shm` or `-journal` whose database is gone.
    case orphanSidecar = "orphan-sidecar"
    /// Core Data's `.Name_SUPPORT` folder (external binary data of a store).
    case coreDataSupport = "core-data-support"
    /// A temporary file Backstage left behind.
    case backstageTemporary = "backstage-temporary"
    /// A symbolic link where a store or sidecar should be.
    case symlinkedStore = "symlinked-store"
    /// A database the app did not declare (``StoreDeclarations``): the user's document. Never
    /// moved unless named, archived by export as one consistent copy, restored by import.
    case userDatabase = "user-database"
    /// A `-wal`, `-shm` or `-journal` of a ``userDatabase``: part of the user's document (export
    /// archives the database's consistent copy instead).
    case userDatabaseSidecar = "user-database-sidecar"
    /// The Core Data support folder (`.Name_SUPPORT`, external binary data) of a ``userDatabase``
    /// beside it, and everything in it: part of the user's document, as its database is. Never
    /// quarantined; exported and imported with the database; moved with it when it is named.
    case userDatabaseSupport = "user-database-support"
    /// A dotfile or dot-folder: invisible in the Files app, but still shared and backed up.
    case hidden
    /// A user document.
    case document

    /// True for the app's internal files, which do not belong in the documents folder.
    public var isInternal: Bool {
        switch self {
        case .hidden, .document, .userDatabase, .userDatabaseSidecar, .userDatabaseSupport: false
        default: true
        }
    }

    /// True for the files of a store: database, sidecars and Core Data support folder.
    public var isStoreFile: Bool {
        switch self {
        case .database, .wal, .shm, .journal, .coreDataSupport: true
        default: false
        }
    }
}

extension Sidecar {
    /// What the classifier calls this sidecar.
    var kind: FileKind {
        switch self {
        case .wal: .wal
        case .shm: .shm
        case .journal: .journal
        }
    }
}

extension QuarantineReason {
    /// The reason for a stray file the classifier found.
    package init?(stray kind: FileKind) {
        switch kind {
        case .orphanSidecar: self = .orphanSidecar
        case .coreDataSupport: self = .orphanSupportFolder
        case .backstageTemporary: self = .backstageTemporary
        default: return nil
        }
    }
}
