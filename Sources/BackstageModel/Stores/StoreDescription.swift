import BackstageSystem
import Foundation

/// How to load one store: Core Data's `NSPersistentStoreDescription` for SQLite, with the same
/// defaults, customised before loading.
///
/// For example, a store without `-wal` and `-shm` files, waiting at most 10 s for a lock:
///
/// ```swift
/// var description = StoreDescription(name: "Notes")
/// description.setPragma("DELETE", named: "journal_mode")
/// description.timeout = 10
/// ```
///
/// The defaults are Core Data's: type SQLite, URL `applicationSupport/<Name>.sqlite` (resolved by
/// ``StoreContainer``), no configuration, read-write, a 240 s busy timeout, no pragmas (so the
/// journal mode is WAL), migrate and infer automatically, add synchronously. Give it the store's
/// ``migrations`` and loading creates or brings up to date its schema, as Core Data does from its model.
public struct StoreDescription: Sendable, Hashable, Codable {
    /// The kind of store.
    public enum StoreType: String, Sendable, Hashable, Codable {
        /// A SQLite file.
        case sqlite
        /// A SQLite database in memory, gone when the container is released.
        case inMemory
    }

    /// The kind of store; ``StoreType/sqlite`` by default.
    public var type: StoreType = .sqlite
    /// The file; nil means `applicationSupport/<Name>.sqlite`, where `Name` is ``name``.
    public var url: URL?
    /// The store's name, used for its default file name (`<Name>.sqlite`).
    public var name: String
    /// The model configuration whose tables live in this store; nil for the default configuration.
    public var configuration: String?
    /// When true, the store is opened read-only and writes fail with ``BackstageError/Cause/readOnlyStore``.
    public var isReadOnly = false
    /// How long to wait for another connection's lock, in seconds (SQLite's busy timeout). Core Data's default: 240.
    public var timeout: Double = 240
    /// SQLite pragmas applied when each connection opens, by name.
    public private(set) var sqlitePragmas: [String: String] = [:]
    /// Whether loading the store applies ``migrations`` it has not had yet. Core Data's default: true.
    public var shouldMigrateStoreAutomatically = true
    /// The store's schema, as migrations applied in order by GRDB's `DatabaseMigrator` when the store
    /// is loaded (new stores are created by them; per-account and switched stores too). They are
    /// recorded in `grdb_migrations`, the history an upgrade plan's `migrateSchema` step shares: a
    /// store the plan upgraded and a store created fresh by its description agree on what ran.
    public var migrations: [SchemaMigration] = []
    /// Allows the store inside the user-visible Documents folder. Off by default: internal
    /// stores do not belong where users can delete them.
    public var allowsDocumentsLocation = false

    /// A description of the store `name`, at `url` or, when nil, at `applicationSupport/<name>.sqlite`.
    public init(name: String, url: URL? = nil, configuration: String? = nil) {
        self.name = name
        self.url = url
        self.configuration = configuration
    }

    /// Sets (or with nil, removes) a pragma, such as `setPragma("DELETE", named: "journal_mode")`.
    public mutating func setPragma(_ value: String?, named name: String) {
        sqlitePragmas[name.lowercased()] = value
    }

    /// The journal mode the store is opened with: the `journal_mode` pragma, or `wal`.
    public var journalMode: String {
        sqlitePragmas["journal_mode"]?.lowercased() ?? "wal"
    }

    /// The file this description names inside `container`.
    public func resolvedURL(in container: AppContainer) -> URL {
        (url ?? container.applicationSupport.appending(path: "\(name).sqlite")).standardizedFileURL
    }
}

extension StoreDeclarations {
    /// Declares the stores `descriptions` name inside the container's Documents folder (a
    /// description's default location, Application Support, is never in Documents).
    public init(descriptions: [StoreDescription], in container: AppContainer) {
        let documents = container.documents.standardizedFileURL.path
        self.init(
            descriptions.compactMap { description in
                FileSystem.relativePath(of: description.resolvedURL(in: container).path, inside: documents)
            })
    }
}
