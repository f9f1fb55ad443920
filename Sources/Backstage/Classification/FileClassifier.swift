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
/// Audit, relocation and export all ask it, so they can never disagree about what a user
/// document is. A file is a database when it starts with `"SQLite format 3\0"`, whatever
/// its name; a `-wal`, `-shm` or `-journal` is a sidecar of the file it is named after, or an
/// orphan when that file is gone (recognised by its magic number, so a user's `Trip-journal`
/// stays a document); `.Name_SUPPORT` folders are Core Data's external data.
///
/// For example:
///
/// ```swift
/// let entries = try FileClassifier().scan(container.documents)
/// let leaks = entries.filter { $0.kind.isInternal }
/// ```
public struct FileClassifier: Sendable {
    /// File extensions that name a store even when the file is empty.
    public static let storeExtensions: Set<String> = ["sqlite", "sqlite3", "db", "db3", "store", "sqlitedb"]

    let fileSystem: FileSystem

    /// Creates a classifier.
    public init() {
        self.init(fileSystem: FileSystem())
    }

    package init(fileSystem: FileSystem) {
        self.fileSystem = fileSystem
    }

    /// Classifies every entry under `root`, depth first in sorted order, never following symbolic
    /// links. A Core Data support folder is one entry; other folders are listed and descended.
    ///
    /// - throws: ``FileSystemError`` when a folder cannot be listed or a file cannot be read.
    /// - parameter recursive: When false, only the direct entries of `root` are classified.
    /// - parameter measuringFolders: When false, a folder reported as one entry (a support folder,
    ///   a Backstage temporary) has `bytes` 0 instead of the total of its files, which costs a
    ///   `stat` of each: relocation and upgrades, which move such folders whole, skip it.
    public func scan(_ root: URL, recursive: Bool = true, measuringFolders: Bool = true) throws -> [ClassifiedFile] {
        var result: [ClassifiedFile] = []
        guard try fileSystem.status(root.path)?.kind == .directory else { return [] }
        try walk(root.path, relative: "", visible: true, recursive: recursive, measuring: measuringFolders, into: &result)
        return result
    }

    private func walk(_ directory: String, relative: String, visible: Bool, recursive: Bool, measuring: Bool, into result: inout [ClassifiedFile]) throws {
        let names = try fileSystem.contents(of: directory)
        let nameSet = Set(names)
        var statuses: [String: FileStatus] = [:]
        for name in names {
            statuses[name] = try fileSystem.status(directory + "/" + name)
        }
        var headers: [String: [UInt8]] = [:]
        func header(_ name: String) throws -> [UInt8] {
            if let cached = headers[name] { return cached }
            guard statuses[name]?.kind == .regular else { return [] }
            let bytes = try fileSystem.readPrefix(directory + "/" + name, count: 100)
            headers[name] = bytes
            return bytes
        }
        func isDatabase(_ name: String) throws -> Bool {
            guard let status = statuses[name], status.kind == .regular else { return false }
            if status.size == 0 { return Self.hasStoreExtension(name) }
            return SQLiteHeader.hasMagic(try header(name))
        }

        for name in names {
            guard let status = statuses[name] else { continue }
            let path = relative.isEmpty ? name : relative + "/" + name
            let full = directory + "/" + name
            let entryVisible = visible && !name.hasPrefix(".")
            var kind: FileKind
            switch status.kind {
            case .directory:
                if Self.isCoreDataSupportFolder(name) {
                    result.append(ClassifiedFile(path: path, kind: .coreDataSupport, isDirectory: true, bytes: measuring ? try fileSystem.treeSize(full) : 0, isVisible: entryVisible))
                    continue
                }
                kind = name.contains(".backstage-tmp") ? .backstageTemporary : (entryVisible ? .document : .hidden)
                if kind == .backstageTemporary {
                    result.append(ClassifiedFile(path: path, kind: kind, isDirectory: true, bytes: measuring ? try fileSystem.treeSize(full) : 0, isVisible: entryVisible))
                    continue
                }
                result.append(ClassifiedFile(path: path, kind: kind, isDirectory: true, bytes: 0, isVisible: entryVisible))
                if recursive { try walk(full, relative: path, visible: entryVisible, recursive: true, measuring: measuring, into: &result) }
                continue
            case .symlink:
                kind = try symlinkKind(name: name, full: full)
            case .regular:
                kind = try fileKind(name: name, nameSet: nameSet, isDatabase: isDatabase, header: header)
            case .other:
                kind = entryVisible ? .document : .hidden
            }
            if !kind.isInternal && !entryVisible { kind = .hidden }
            result.append(ClassifiedFile(path: path, kind: kind, isDirectory: false, bytes: status.size, isVisible: entryVisible))
        }
    }

    private func fileKind(name: String, nameSet: Set<String>, isDatabase: (String) throws -> Bool, header: (String) throws -> [UInt8]) throws -> FileKind {
        if name.contains(".backstage-tmp") { return .backstageTemporary }
        if let (base, sidecar) = Self.splitSidecar(name) {
            if nameSet.contains(base), try isDatabase(base) { return sidecar.kind }
            let bytes = try header(name)
            let looksLikeSidecar: Bool = switch sidecar {
            case .wal: bytes.isEmpty || SidecarMagic.isWAL(bytes)
            case .journal: bytes.isEmpty || SidecarMagic.isJournal(bytes)
            case .shm: Self.hasStoreExtension(base)
            }
            if looksLikeSidecar { return .orphanSidecar }
        }
        if try isDatabase(name) { return .database }
        if name.hasSuffix(".lock") || name.hasSuffix(".lck") { return .lockFile }
        return name.hasPrefix(".") ? .hidden : .document
    }

    private func symlinkKind(name: String, full: String) throws -> FileKind {
        if Self.splitSidecar(name) != nil || Self.hasStoreExtension(name) { return .symlinkedStore }
        // A link whose target is a database is a store behind a link, whatever its name.
        if let target = fileSystem.resolvedPath(full), let bytes = try? fileSystem.readPrefix(target, count: 16), SQLiteHeader.hasMagic(bytes) {
            return .symlinkedStore
        }
        return name.hasPrefix(".") ? .hidden : .document
    }

    /// True for `.Name_SUPPORT`, Core Data's folder of external binary data for store `Name`.
    public static func isCoreDataSupportFolder(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix("_SUPPORT") && name.count > ".".count + "_SUPPORT".count
    }

    /// Splits `Notes.sqlite-wal` into `("Notes.sqlite", .wal)`.
    public static func splitSidecar(_ name: String) -> (base: String, sidecar: Sidecar)? {
        for sidecar in Sidecar.allCases where name.hasSuffix(sidecar.rawValue) && name.count > sidecar.rawValue.count {
            return (String(name.dropLast(sidecar.rawValue.count)), sidecar)
        }
        return nil
    }

    static func hasStoreExtension(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        return storeExtensions.contains(name[name.index(after: dot)...].lowercased())
    }
}
