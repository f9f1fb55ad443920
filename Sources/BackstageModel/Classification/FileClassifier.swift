import BackstageSystem
import Foundation

/// One entry of a classified folder tree.
public struct ClassifiedFile: Sendable, Hashable, Codable {
    /// The path relative to the scanned folder, with `/` separators.
    public var path: String
    /// What the entry is.
    public var kind: FileKind
    /// True for folders (including Core Data support folders).
    public var isDirectory: Bool
    /// The size in bytes; for a folder reported as one entry, the total of its files.
    public var bytes: Int64
    /// False when the entry or one of its parents is a dotfile, hidden from the Files app
    /// and from file sharing (but still in Documents and still backed up).
    public var isVisible: Bool
}

/// The one classifier of internal versus hidden versus user-visible files.
///
/// Audit, relocation, export and import all ask it, so they can never disagree about what a user
/// document is. A file is internal only on positive evidence, never by its name alone:
/// - a store is a file the app declares (``StoreDeclarations``), whatever its header (an encrypted
///   store has none); a database (it starts with `"SQLite format 3\0"`, or is empty with a `-wal`
///   or `-journal` with a valid header beside it) that nobody declared is the user's
///   (``FileKind/userDatabase``), and so are its sidecars;
/// - a `-wal`, `-shm` or `-journal` is a sidecar when its database is beside it, an orphan when
///   its own header is valid (WAL magic, journal magic, WAL-index version);
/// - `.Name_SUPPORT` folders are Core Data's external data; names holding `.backstage-tmp` are
///   Backstage's temporaries;
/// - a link is a store behind a link when its target is a database or a sidecar by its header.
///
/// Everything else is the user's: `Cargo.lock`, an empty `notes.db`, a `Trip-journal`.
///
/// For example:
///
/// ```swift
/// let entries = try FileClassifier(declarations: container.declaredStores).scan(container.documents)
/// let leaks = entries.filter { $0.kind.isInternal }
/// ```
public struct FileClassifier: Sendable {
    let fileSystem: FileSystem
    /// The stores the app declares, by their paths relative to the scanned folder.
    public let declarations: StoreDeclarations

    /// Creates a classifier of a folder where `declarations` name the app's stores: Documents
    /// with the container's ``AppContainer/declaredStores``, or ``StoreDeclarations/everyDatabase``
    /// for a folder no user sees.
    public init(declarations: StoreDeclarations) {
        self.init(fileSystem: FileSystem(), declarations: declarations)
    }

    package init(fileSystem: FileSystem, declarations: StoreDeclarations = .everyDatabase) {
        self.fileSystem = fileSystem
        self.declarations = declarations
    }

    /// Classifies every entry under `root`, depth first in sorted order, never following symbolic
    /// links inside it. `root` itself may be a link (a Documents folder moved elsewhere and linked
    /// back): it is followed, and the paths stay relative to it. A Core Data support folder is one
    /// entry; other folders are listed and descended.
    ///
    /// - throws: ``FileSystemError`` when a folder cannot be listed or a file cannot be read.
    /// - parameter root: The folder to classify, usually the container's Documents.
    /// - parameter recursive: When false, only the direct entries of `root` are classified.
    /// - parameter measuringFolders: When false, a folder reported as one entry (a support folder,
    ///   a Backstage temporary) has `bytes` 0 instead of the total of its files, which costs a
    ///   `stat` of each: relocation and upgrades, which move such folders whole, skip it.
    /// - parameter keeping: Which entries to return: every one by default. A caller that wants
    ///   only some (the internal files, the databases) says so, and memory stays that of those
    ///   entries and of one folder's names, not of every file of a tree of a million.
    public func scan(
        _ root: URL, recursive: Bool = true, measuringFolders: Bool = true,
        keeping: (ClassifiedFile) -> Bool = { _ in true }
    ) throws -> [ClassifiedFile] {
        var entries: [ClassifiedFile] = []
        try visit(root, recursive: recursive, measuringFolders: measuringFolders) { entry, _ in
            if keeping(entry) { entries.append(entry) }
        }
        return entries
    }

    /// Classifies every entry under `root` as ``scan(_:recursive:measuringFolders:keeping:)`` does,
    /// in the same order, handing each to `visit` as it is classified instead of returning a list:
    /// memory stays that of the folders on the way down, whatever the number of files (an export
    /// of a million documents writes them out one by one). Each entry comes with what its `lstat`
    /// said when its folder was listed (an export archives its mode and time, and needs no `lstat`
    /// of its own). What `visit` throws stops the walk. With `expandingUserSupport`, the support
    /// folder of a user's database is followed by each of its entries, all
    /// ``FileKind/userDatabaseSupport``: an export archives them with the database.
    package func visit(
        _ root: URL, recursive: Bool = true, measuringFolders: Bool = true, expandingUserSupport: Bool = false,
        _ visit: (ClassifiedFile, EntryStatus) throws -> Void
    ) throws {
        var path = root.path
        if try fileSystem.status(path)?.kind == .symlink {
            guard let target = fileSystem.resolvedPath(path) else { return }
            path = target
        }
        guard try fileSystem.status(path)?.kind == .directory else { return }
        try walk(
            try fileSystem.openFolder(path), relative: "", visible: true,
            options: WalkOptions(
                recursive: recursive, measuring: measuringFolders, expandingUserSupport: expandingUserSupport),
            visit: visit)
    }

    /// How a walk goes down a tree.
    struct WalkOptions {
        var recursive: Bool
        var measuring: Bool
        var expandingUserSupport: Bool
    }

    /// Classifies the entries of `folder` and descends into its folders, each opened in its parent
    /// (never through a link): a file is found in its open folder, whatever the depth.
    private func walk(
        _ folder: OpenFolder, relative: String, visible: Bool, options: WalkOptions,
        visit: (ClassifiedFile, EntryStatus) throws -> Void
    ) throws {
        let evidence = try Evidence(
            folder: folder, relative: relative, declarations: declarations, fileSystem: fileSystem)
        for index in evidence.names.indices {
            guard let status = evidence.statuses[index] else { continue }
            let name = evidence.names[index]
            let path = relative.isEmpty ? name : relative + "/" + name
            let entryVisible = visible && !name.hasPrefix(".")
            var kind: FileKind
            switch status.kind {
            case .directory:
                if let folderKind = try folderKind(name, in: evidence, visible: visible) {
                    let expanding = folderKind == .userDatabaseSupport && options.expandingUserSupport
                    try visit(
                        ClassifiedFile(
                            path: path, kind: folderKind, isDirectory: true,
                            bytes: options.measuring && !expanding ? try fileSystem.treeSize(folder.path(of: name)) : 0,
                            isVisible: entryVisible), status)
                    if expanding && options.recursive {
                        try visitUserSupport(try fileSystem.openFolder(name, in: folder), relative: path, visit: visit)
                    }
                    continue
                }
                try visit(
                    ClassifiedFile(
                        path: path, kind: entryVisible ? .document : .hidden, isDirectory: true, bytes: 0,
                        isVisible: entryVisible), status)
                if options.recursive {
                    try walk(
                        try fileSystem.openFolder(name, in: folder), relative: path, visible: entryVisible,
                        options: options, visit: visit)
                }
                continue
            case .symlink:
                kind = try evidence.isStoreBehindLink(name) ? .symlinkedStore : .document
            case .regular:
                kind = try evidence.kind(of: index)
            case .other:
                kind = .document
            }
            if !kind.isInternal && !entryVisible { kind = .hidden }
            try visit(
                ClassifiedFile(path: path, kind: kind, isDirectory: false, bytes: status.size, isVisible: entryVisible),
                status)
        }
    }

    /// What the folder `name` of a folder is when it is reported as one entry: a Core Data support
    /// folder follows its database's owner (the app's store's, or no database's: an orphan quarantine
    /// takes; a user's database's: part of that document, unless a hidden folder holds it, where it
    /// is hidden as its database is and walked as any folder), a Backstage temporary is one. Nil
    /// for a folder that is listed and descended.
    private func folderKind(_ name: String, in evidence: Evidence, visible: Bool) throws -> FileKind? {
        if Self.isCoreDataSupportFolder(name) {
            guard try evidence.supportFolderOwner(name) == .userDatabase else { return .coreDataSupport }
            return visible ? .userDatabaseSupport : nil
        }
        return TemporaryName.isTemporary(name) ? .backstageTemporary : nil
    }
}

/// What a walk keeps of an entry's `lstat`, taken when its folder was listed. The fields are in
/// this order for its size: 24 bytes with the optional a vanished name makes, where the kind first
/// took 32.
package struct EntryStatus: Sendable, Hashable {
    package var size: Int64
    /// The modification time's seconds.
    package var modified: Int64
    /// The permission bits (`st_mode & 0o7777`).
    package var mode: mode_t
    package var kind: FileStatus.Kind

    init(_ status: FileStatus) {
        size = status.size
        modified = Int64(status.modificationTime.tv_sec)
        mode = status.mode
        kind = status.kind
    }
}

/// What the bytes of one folder's files prove. A file is internal only on positive evidence:
/// a SQLite header, a valid WAL, journal or WAL-index header, or a sidecar's database beside it.
/// A name alone proves nothing: an empty `notes.db`, a `Trip-journal`, a `Cargo.lock` or a file
/// of zeros named `Diary-wal` are the user's.
///
/// It holds, for each name of the folder, only what classifying and archiving need: the kind,
/// size, mode and modification time of its `lstat`, and what its header proved (one byte). The
/// largest folder is what a scan holds at most: some 48 bytes a name (62,500 names, the largest
/// folder of the bench's flat tree of a million files, took 40 bytes a name, 2.5 MB, before the
/// mode and time were kept, 8 bytes more a name; the whole `stat` and the 100 bytes of each header
/// took 27 MB).
private final class Evidence {
    let folder: OpenFolder
    /// The folder's path relative to the scanned root, where declarations are matched.
    let relative: String
    /// The folder's names, sorted: found again by binary search.
    let names: [String]
    /// `statuses[i]`: `names[i]`'s, nil when it went away since it was listed.
    let statuses: [EntryStatus?]
    let declarations: StoreDeclarations
    let fileSystem: FileSystem
    /// What each name's header proved, once read: a store's main file is asked about once for
    /// itself and once per sidecar.
    private var headers: [HeaderFacts]
    private var readingAhead = false
    /// The regular files of the folder by the name of their support folder, once one is asked about.
    private var storesBySupportFolder: [String: [Int]]?

    init(folder: OpenFolder, relative: String, declarations: StoreDeclarations, fileSystem: FileSystem) throws {
        self.folder = folder
        self.relative = relative
        self.declarations = declarations
        self.fileSystem = fileSystem
        let names = try fileSystem.contents(of: folder)
        var statuses: [EntryStatus?] = []
        statuses.reserveCapacity(names.count)
        for name in names {
            statuses.append(try fileSystem.status(name, in: folder).map(EntryStatus.init))
        }
        self.names = names
        self.statuses = statuses
        headers = [HeaderFacts](repeating: [], count: names.count)
        readHeadersAhead()
    }

    /// Folders with at least this many files to read have their headers read on two threads.
    static let headersReadTogether = 64

    /// Reads the header of every regular file with content on two threads, when the folder holds
    /// at least ``headersReadTogether`` of them. Classifying reads each anyway (a store the app
    /// declares and a temporary excepted), and while a walk reads them the core beside it waits:
    /// an export's compressors wait for its list of entries. A read that fails here is left to
    /// ``header(_:)``, which reads again and throws what it meets, as it did.
    private func readHeadersAhead() {
        let files = names.indices.filter { hasContent($0) }
        guard files.count >= Self.headersReadTogether else { return }
        // The first read times the cache, as header(_:) does: from a cold one, every read is asked
        // of the disk together first.
        _ = try? header(files[0])
        let folder = self.folder, names = self.names, fileSystem = self.fileSystem
        headers.withUnsafeMutableBufferPointer { buffer in
            // Each thread writes the facts of its own files only, every other one.
            nonisolated(unsafe) let headers = buffer
            DispatchQueue.concurrentPerform(iterations: 2) { part in
                for file in stride(from: 1 + part, to: files.count, by: 2) {
                    let index = files[file]
                    if let bytes = try? fileSystem.readPrefix(names[index], in: folder, count: 100) {
                        headers[index] = HeaderFacts(bytes)
                    }
                }
            }
        }
    }

    /// The index of `name` among the folder's names, nil when it has none.
    func index(of name: String) -> Int? {
        var low = 0, high = names.count
        while low < high {
            let middle = (low + high) / 2
            if names[middle] < name { low = middle + 1 } else { high = middle }
        }
        return low < names.count && names[low] == name ? low : nil
    }

    /// Whose the Core Data support folder `name` (`.Notes_SUPPORT`) of this folder is: its
    /// database's. ``FileKind/database`` when a store the app declares is beside it (the folder
    /// Core Data names after it, ``StoreFileSet/supportFolderName(ofStoreNamed:)``),
    /// ``FileKind/userDatabase`` when only a database nobody declared is, nil when no database is
    /// (an orphan: quarantine takes it).
    func supportFolderOwner(_ name: String) throws -> FileKind? {
        if storesBySupportFolder == nil {
            // Once per folder that has a support folder: each file's support folder name.
            var stores: [String: [Int]] = [:]
            for index in names.indices where statuses[index]?.kind == .regular {
                let store = names[index]
                guard FileClassifier.splitSidecar(store) == nil, !TemporaryName.isTemporary(store) else { continue }
                stores[StoreFileSet.supportFolderName(ofStoreNamed: store), default: []].append(index)
            }
            storesBySupportFolder = stores
        }
        var owner: FileKind?
        for index in storesBySupportFolder?[name] ?? [] {
            let store = names[index]
            if isDeclaredStore(store, at: index) { return .database }
            if try isDatabase(store, at: index) {
                if isDeclared(store) { return .database }
                owner = .userDatabase
            }
        }
        return owner
    }

    /// True when the app declares the file `name` of this folder as one of its stores.
    func isDeclared(_ name: String) -> Bool {
        declarations.declaresEveryDatabase || declarations.declares(name: name, inFolder: relative)
    }

    /// What the first 100 bytes of the regular file `index` of the folder prove, read once.
    ///
    /// From a cold cache each read waits for the disk (0.13 ms a file here: 2.6 s for 20,000
    /// headers), so the first read that takes that long starts the reads of every header of the
    /// folder still to come, together (``FileSystem/willRead(_:bytes:)``). From a warm cache a
    /// read takes microseconds, and nothing more is done.
    func header(_ index: Int?) throws -> HeaderFacts {
        guard let index, hasContent(index) else { return [] }
        if headers[index].contains(.read) { return headers[index] }
        let start = ContinuousClock.now
        let bytes = try fileSystem.readPrefix(names[index], in: folder, count: 100)
        if !readingAhead && ContinuousClock.now - start > .microseconds(50) {
            readingAhead = true
            for other in names.indices where other != index && !headers[other].contains(.read) && hasContent(other) {
                fileSystem.willRead(names[other], in: folder, bytes: 4096)
            }
        }
        headers[index] = HeaderFacts(bytes)
        return headers[index]
    }

    /// A regular file of the folder with bytes to read.
    private func hasContent(_ index: Int) -> Bool {
        guard let status = statuses[index] else { return false }
        return status.kind == .regular && status.size > 0
    }

    func kind(of index: Int) throws -> FileKind {
        let name = names[index]
        if TemporaryName.isTemporary(name) { return .backstageTemporary }
        if let (base, sidecar) = FileClassifier.splitSidecar(name) {
            let baseIndex = self.index(of: base)
            if isDeclaredStore(base, at: baseIndex) { return sidecar.kind }
            if try isDatabase(base, at: baseIndex) { return isDeclared(base) ? sidecar.kind : .userDatabaseSidecar }
            if try header(index).matches(sidecar) { return .orphanSidecar }
        }
        if isDeclaredStore(name, at: index) { return .database }
        if try isDatabase(name, at: index) { return isDeclared(name) ? .database : .userDatabase }
        return name.hasPrefix(".") ? .hidden : .document
    }

    /// A regular file the app declares by its path, whatever its bytes (an encrypted store has no
    /// SQLite header), empty ones too: SQLite creates the file when the app first opens its store,
    /// before it writes a page, and `relocate` moves it as the app's (audit must say so as well).
    private func isDeclaredStore(_ name: String, at index: Int?) -> Bool {
        guard let index, statuses[index]?.kind == .regular else { return false }
        return !declarations.declaresEveryDatabase && declarations.declares(name: name, inFolder: relative)
    }

    /// A SQLite header; or, for an empty file, a `-wal` or `-journal` beside it with a valid
    /// header (SQLite can leave the main file empty while its first transaction is in a journal).
    func isDatabase(_ name: String, at index: Int?) throws -> Bool {
        guard let index, let status = statuses[index], status.kind == .regular else { return false }
        if status.size > 0 { return try header(index).contains(.sqlite) }
        for sidecar in [Sidecar.wal, .journal]
        where try header(self.index(of: name + sidecar.rawValue)).matches(sidecar) {
            return true
        }
        return false
    }

    /// A link at a declared store's path (or its sidecar's) whose target is a database or a
    /// sidecar by its header. A link the app did not declare is the user's.
    func isStoreBehindLink(_ name: String) throws -> Bool {
        guard isDeclared(name) || FileClassifier.splitSidecar(name).map({ isDeclared($0.base) }) == true,
            let target = fileSystem.resolvedPath(folder.path(of: name)),
            let status = try fileSystem.status(target), status.kind == .regular, status.size > 0
        else { return false }
        let bytes = try fileSystem.readPrefix(target, count: 100)
        return SQLiteHeader.hasMagic(bytes) || Sidecar.allCases.contains { SidecarMagic.matches($0, bytes) }
    }
}

/// What a file's first 100 bytes prove, in one byte: which magic numbers it starts with.
private struct HeaderFacts: OptionSet {
    let rawValue: UInt8

    /// The header was read (a file with nothing to read proves nothing).
    static let read = HeaderFacts(rawValue: 1)
    static let sqlite = HeaderFacts(rawValue: 2)
    static let wal = HeaderFacts(rawValue: 4)
    static let journal = HeaderFacts(rawValue: 8)
    static let walIndex = HeaderFacts(rawValue: 16)

    init(rawValue: UInt8) { self.rawValue = rawValue }

    init(_ bytes: [UInt8]) {
        var facts: HeaderFacts = .read
        if SQLiteHeader.hasMagic(bytes) { facts.insert(.sqlite) }
        if SidecarMagic.matches(.wal, bytes) { facts.insert(.wal) }
        if SidecarMagic.matches(.journal, bytes) { facts.insert(.journal) }
        if SidecarMagic.matches(.shm, bytes) { facts.insert(.walIndex) }
        self = facts
    }

    /// True when the header is `sidecar`'s valid one.
    func matches(_ sidecar: Sidecar) -> Bool {
        switch sidecar {
        case .wal: contains(.wal)
        case .journal: contains(.journal)
        case .shm: contains(.walIndex)
        }
    }
}
