import BackstageSystem
import Foundation
import GRDB

/// Loads an app's stores and hands out GRDB access to them: Core Data's `NSPersistentContainer`
/// for SQLite, aware of the user-visible Documents folder.
///
/// For example, user data and a rebuildable cache in two files, and a test store swapped in:
///
/// ```swift
/// let stores = StoreContainer(name: "Notes", container: .iOSSandbox(root: appRoot),
///                             model: StoreModel(["UserData": ["note"], "Cache": ["thumbnail"]]))
/// stores.storeDescriptions = [
///     StoreDescription(name: "UserData", configuration: "UserData"),
///     StoreDescription(name: "Cache", url: cachesURL.appending(path: "Cache.sqlite"), configuration: "Cache"),
/// ]
/// try await stores.loadStores()
/// try stores.write(table: "note") { db in try db.execute(sql: "INSERT INTO note ...") }
/// try await stores.switchStore(configuration: "UserData", to: testStoreURL)
/// ```
///
/// Every store file is loaded at most once; a description inside Documents is refused unless it
/// sets ``StoreDescription/allowsDocumentsLocation``. ``switchStore(configuration:to:)`` waits for
/// the writes in flight, then closes the old store: no write reaches the old file after it returns.
public final class StoreContainer: @unchecked Sendable {
    /// The container's name, used for the default store file (`<name>.sqlite`).
    public let name: String
    /// Where the stores live.
    public let container: AppContainer
    /// Which tables live in which configuration, for ``writer(forTable:)``.
    public let model: StoreModel?

    private let lock = NSLock()
    private var descriptions: [StoreDescription]
    private var stores: [String: LoadedStore] = [:]
    private var accounts: [String: LoadedStore] = [:]
    /// Writes run inside this gate; a switch takes it exclusively, so in-flight writes finish first.
    private let gate = DispatchQueue(label: "Backstage.StoreContainer.gate", attributes: .concurrent)

    /// Creates a container with one default description: `applicationSupport/<name>.sqlite`.
    public init(name: String, container: AppContainer, model: StoreModel? = nil) {
        self.name = name
        self.container = container
        self.model = model
        self.descriptions = [StoreDescription(name: name)]
    }

    /// The descriptions loaded by ``loadStores()``; change them before loading.
    public var storeDescriptions: [StoreDescription] {
        get { lock.withLock { descriptions } }
        set { lock.withLock { descriptions = newValue } }
    }

    // MARK: - Loading

    /// Opens every described store, creating missing files and folders, off the caller's thread.
    ///
    /// - throws: ``BackstageError``, for the first description that cannot be loaded; stores
    ///   opened before it stay loaded.
    public func loadStores() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try self.loadStoresAndWait() })
            }
        }
    }

    /// Opens every described store on the calling thread.
    public func loadStoresAndWait() throws {
        for description in storeDescriptions {
            let key = Self.key(description.configuration)
            if lock.withLock({ stores[key] != nil }) { continue }
            let store = try open(description, url: description.resolvedURL(in: container))
            lock.withLock { stores[key] = store }
        }
    }

    /// The file of the store serving `configuration`, or nil when it is not loaded.
    public func url(for configuration: String? = nil) -> URL? {
        lock.withLock { stores[Self.key(configuration)]?.url }
    }

    // MARK: - Access

    /// The GRDB writer of the store serving `configuration` (nil: the default configuration).
    ///
    /// Fetch it for each unit of work: after ``switchStore(configuration:to:)`` the old writer is
    /// closed and its writes fail. ``write(configuration:_:)`` always goes to the current store.
    public func writer(for configuration: String? = nil) throws -> any DatabaseWriter {
        try current(configuration).writer
    }

    /// A GRDB reader of the store serving `configuration`.
    public func reader(for configuration: String? = nil) throws -> any DatabaseReader {
        try current(configuration).writer
    }

    /// The writer of the store that holds `table` according to the ``model``.
    public func writer(forTable table: String) throws -> any DatabaseWriter {
        try writer(for: configuration(forTable: table))
    }

    /// Runs `updates` in a transaction on the current store of `configuration`.
    ///
    /// - throws: ``BackstageError/Cause/readOnlyStore`` on a read-only store,
    ///   ``BackstageError/Cause/storeInUse(timeout:)`` when another connection held the lock past the
    ///   timeout, or the error `updates` threw.
    public func write<T>(configuration: String? = nil, _ updates: (Database) throws -> T) throws -> T {
        try gate.sync {
            let store = try current(configuration)
            return try store.mapErrors { try store.writer.write(updates) }
        }
    }

    /// Runs `updates` on the store that holds `table`.
    public func write<T>(table: String, _ updates: (Database) throws -> T) throws -> T {
        try write(configuration: configuration(forTable: table), updates)
    }

    /// Reads from the current store of `configuration`.
    public func read<T>(configuration: String? = nil, _ value: (Database) throws -> T) throws -> T {
        try gate.sync {
            let store = try current(configuration)
            return try store.mapErrors { try store.writer.read(value) }
        }
    }

    /// Runs a read-only query across every loaded store: each is attached under its configuration
    /// name (`main` tables of the default configuration are attached as `"default"`).
    ///
    /// ```swift
    /// let rows = try stores.readAcrossStores { db in
    ///     try Row.fetchAll(db, sql: "SELECT n.title, t.size FROM UserData.note n JOIN Cache.thumbnail t ON t.note = n.id")
    /// }
    /// ```
    public func readAcrossStores<T>(_ body: (Database) throws -> T) throws -> T {
        let snapshot = lock.withLock { stores }
        let queue = try DatabaseQueue()
        defer { try? queue.close() }
        return try queue.writeWithoutTransaction { db in
            for (key, store) in snapshot.sorted(by: { $0.key < $1.key }) where store.url != nil {
                try db.execute(
                    sql: "ATTACH DATABASE ? AS \((key.isEmpty ? "default" : key).quotedSQLIdentifier)",
                    arguments: [store.url!.path])
            }
            try db.execute(sql: "PRAGMA query_only = 1")
            return try body(db)
        }
    }

    // MARK: - Switching

    /// Points `configuration` at another file at runtime: a per-account database, or a test
    /// database swapped in and later swapped back.
    ///
    /// Writes in flight finish on the old store first; then the old store is closed. When this
    /// method returns, no write can reach the old file.
    ///
    /// - throws: ``BackstageError/Cause/duplicateStore`` when `url` is already loaded, or
    ///   ``BackstageError/Cause/insideDocuments``.
    public func switchStore(configuration: String? = nil, to url: URL) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try self.switchStoreAndWait(configuration: configuration, to: url) })
            }
        }
    }

    private func switchStoreAndWait(configuration: String?, to url: URL) throws {
        let key = Self.key(configuration)
        let old = try current(configuration)
        var description = old.description
        description.url = url
        let replacement = try open(description, url: url.standardizedFileURL, replacing: old)
        gate.sync(flags: .barrier) {
            lock.withLock { stores[key] = replacement }
        }
        try old.close()
    }

    /// The store of account `id`, `<folder>/Accounts/<id>/<file>` beside where `configuration`'s
    /// description puts its store (a Caches store's accounts stay in Caches), created on first use
    /// with that description's settings and migrations. Accounts never share a file.
    public func accountStore(_ id: String, configuration: String? = nil) throws -> any DatabaseWriter {
        guard !id.isEmpty, id != ".", id != "..", id.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) })
        else {
            throw BackstageError(.invalidAccountID(id), path: "", during: .loadingStores)
        }
        let accountKey = id + "\u{0}" + Self.key(configuration)
        if let store = lock.withLock({ accounts[accountKey] }) { return store.writer }
        guard var description = storeDescriptions.first(where: { $0.configuration == configuration }) else {
            throw BackstageError(
                .notLoaded(configuration: configuration ?? "default"), path: "", during: .loadingStores)
        }
        let base = description.resolvedURL(in: container)
        let url = base.deletingLastPathComponent().appending(path: "Accounts/\(id)/\(base.lastPathComponent)")
        description.url = url
        let store = try open(description, url: url)
        lock.withLock { accounts[accountKey] = store }
        return store.writer
    }

    /// Closes every store. Later access fails.
    public func close() throws {
        let all = lock.withLock { Array(stores.values) + Array(accounts.values) }
        lock.withLock {
            stores = [:]
            accounts = [:]
        }
        for store in all { try store.close() }
    }

    // MARK: - Internals

    private static func key(_ configuration: String?) -> String { configuration ?? "" }

    private func configuration(forTable table: String) throws -> String? {
        guard let model, let configuration = model.configuration(forTable: table) else {
            throw BackstageError(.unknownTable(table: table), path: "", during: .loadingStores)
        }
        return configuration
    }

    private func current(_ configuration: String?) throws -> LoadedStore {
        guard let store = lock.withLock({ stores[Self.key(configuration)] }) else {
            throw BackstageError(
                .notLoaded(configuration: configuration ?? "default"), path: "", during: .loadingStores)
        }
        return store
    }

    private func open(_ description: StoreDescription, url: URL, replacing: LoadedStore? = nil) throws -> LoadedStore {
        if description.type == .inMemory {
            return try LoadedStore(description: description, url: nil)
        }
        if !description.allowsDocumentsLocation && Self.isInside(url, container.documents) {
            throw BackstageError(.insideDocuments, path: url.path, during: .loadingStores)
        }
        let identity = FileIdentity(url)
        let loaded = lock.withLock { Array(stores.values) + Array(accounts.values) }
        if loaded.contains(where: { $0 !== replacing && $0.identity == identity }) {
            throw BackstageError(.duplicateStore, path: url.path, during: .loadingStores)
        }
        do {
            try FileSystem().createDirectories(url.deletingLastPathComponent().path)
        } catch {
            throw BackstageError(.system(error), path: error.path, during: .loadingStores)
        }
        return try LoadedStore(description: description, url: url)
    }

    private static func isInside(_ url: URL, _ folder: URL) -> Bool {
        let fileSystem = FileSystem()
        return FileSystem.relativePath(
            of: fileSystem.canonicalPath(url.path), inside: fileSystem.canonicalPath(folder.path)) != nil
    }
}
