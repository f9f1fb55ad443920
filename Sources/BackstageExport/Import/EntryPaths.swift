import Backstage

/// The rules every entry name must pass before a byte of it is written, and the index of the
/// names seen so far (duplicates, case and normalization collisions, links on the way).
///
/// The index holds a fingerprint of the hash of each path's collision key and of each folder's exact
/// path (a ``HashIndex``, some 8 bytes a name), not the paths themselves: a million-file archive
/// is indexed in about 10 MB. Each entry is staged before the next is read, so when a key comes
/// back, the staging folder (and the archive's links, made last) tells which spelling came first
/// and what it is; a fingerprint that matches by chance finds no such name there and is a new path.
struct EntryPaths {
    enum Kind: Equatable { case file, directory, symlink }

    /// Where the entries added so far are staged.
    let staging: String
    let fileSystem: FileSystem
    /// Hashes of the collision keys of every path added (parents included).
    private var keys = HashIndex()
    /// Hashes of the exact bytes of every folder added (explicit or a parent).
    private var folders = HashIndex()
    /// Links of the archive: path → target text.
    private(set) var links: [String: String] = [:]
    /// The folder of the last path added, whose parents are known to be folders: the next entry
    /// of the same folder (most of them, in archives written folder by folder) skips them.
    private var lastFolder: Substring = ""

    init(staging: String, fileSystem: FileSystem) {
        self.staging = staging
        self.fileSystem = fileSystem
    }

    /// The entry's path relative to the import root (no `.`, no empty component, no trailing `/`),
    /// or ``Normalized/root`` for the root itself (`./`).
    enum Normalized: Equatable {
        /// The import root itself (`./`): nothing to create.
        case root
        case path(String)
        case refused(ImportError.Reason)
    }

    static func normalize(_ header: ArchiveEntryHeader) -> Normalized {
        guard let name = header.path else { return .refused(.undecodableName) }
        if name.isEmpty { return .refused(.emptyName) }
        if name.hasPrefix("/") { return .refused(.absolutePath) }
        if name.contains("\\") { return .refused(.backslash) }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            return .refused(.controlCharacter)
        }
        var components: [Substring] = []
        for component in name.split(separator: "/", omittingEmptySubsequences: true) {
            if component == "." { continue }
            if component == ".." { return .refused(.parentComponent) }
            components.append(component)
        }
        if components.isEmpty { return header.kind == .directory ? .root : .refused(.emptyName) }
        return .path(components.joined(separator: "/"))
    }

    /// Collision key: canonical equivalence (Swift strings compare and hash canonically) and full
    /// case folding: upper then lower case maps `ς` and `σ` together, and `ß` with `ss`, which a
    /// plain `lowercased()` does not.
    static func key(_ path: String) -> String { path.uppercased().lowercased() }

    /// Records `path` (and its parents, as folders), refusing duplicates, collisions, a parent
    /// that is a file and a path behind a link of the archive.
    mutating func add(_ path: String, kind: Kind) throws -> ImportError.Reason? {
        var start = path.startIndex
        // Parents already known: the folder of the previous entry, or one of its parents.
        let known = lastFolder.utf8.count
        if known > 0, path.utf8.count > known, path.utf8.starts(with: lastFolder.utf8) {
            let slash = path.utf8.index(path.utf8.startIndex, offsetBy: known)
            if path.utf8[slash] == UInt8(ascii: "/") { start = path.utf8.index(after: slash) }
        }
        var end = start
        while true {
            let slash = path[end...].firstIndex(of: "/")
            let prefix = path[..<(slash ?? path.endIndex)]
            let isLast = slash == nil
            if let reason = try add(prefix, kind: isLast ? kind : .directory, isLast: isLast) { return reason }
            guard let slash else { break }
            end = path.index(after: slash)
        }
        if let slash = path.lastIndex(of: "/") { lastFolder = path[..<slash] }
        return nil
    }

    /// Records one path: the entry itself (`isLast`) or one of its parents.
    private mutating func add(_ path: Substring, kind: Kind, isLast: Bool) throws -> ImportError.Reason? {
        let key = Self.key(String(path)).hashValue
        let exact = Self.exactHash(path)
        let existing: Kind?
        if !links.isEmpty, links[String(path)] != nil {
            existing = .symlink
        } else if keys.contains(key), folders.contains(exact) {
            existing = .directory
        } else if keys.contains(key) {
            // Seen under this key: the same path, or another spelling of it (or a chance match).
            switch try firstSpelling(of: path) {
            case nil:
                existing = nil
            case .some((let first, let kind)):
                if Array(first.utf8) != Array(path.utf8) {
                    // Canonically equal but different bytes: only the normalization differs.
                    return first == String(path) ? .normalizationCollision(with: first) : .caseCollision(with: first)
                }
                existing = kind
            }
        } else {
            existing = nil
        }
        guard let existing else {
            keys.insert(key)
            if kind == .directory { folders.insert(exact) }
            return nil
        }
        if isLast {
            // A folder named twice is harmless; anything else is a duplicate.
            return existing == .directory && kind == .directory ? nil : .duplicate
        }
        switch existing {
        case .directory: return nil
        case .symlink: return .throughLink(String(path))
        case .file: return .parentIsFile(String(path))
        }
    }

    mutating func addLink(_ path: String, target: String) throws -> ImportError.Reason? {
        if let reason = try add(path, kind: .symlink) { return reason }
        links[path] = target
        return nil
    }

    /// True when `path` was added as a regular file (and staged).
    func isFile(_ path: String) throws -> Bool {
        guard keys.contains(Self.key(path).hashValue), links[path] == nil else { return false }
        return try fileSystem.status(staging + "/" + path)?.kind == .regular
    }

    /// The path added earlier whose collision key is `path`'s, and what it is: found among the
    /// names staged in `path`'s folder and the archive's links; nil when there is none.
    private func firstSpelling(of path: Substring) throws -> (String, Kind)? {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) } ?? ""
        let name = String(path[(slash.map { path.index(after: $0) } ?? path.startIndex)...])
        let key = Self.key(name)
        let prefix = folder.isEmpty ? "" : folder + "/"
        for link in links.keys where link.hasPrefix(prefix) {
            let linkName = link.dropFirst(prefix.count)
            if !linkName.contains("/"), Self.key(String(linkName)) == key { return (link, .symlink) }
        }
        let folderPath = folder.isEmpty ? staging : staging + "/" + folder
        // The folder is made after its entry is added: a chance match under a new folder finds nothing.
        guard try fileSystem.status(folderPath)?.kind == .directory else { return nil }
        let names = try fileSystem.contents(of: folderPath)
        guard
            let found = names.first(where: { Self.key($0) == key && Array($0.utf8) == Array(name.utf8) })
                ?? names.first(where: { Self.key($0) == key })
        else { return nil }
        let kind: Kind =
            switch try fileSystem.status(staging + "/" + prefix + found)?.kind {
            case .directory: .directory
            case .symlink: .symlink
            default: .file
            }
        return (prefix + found, kind)
    }

    /// A hash of the path's bytes (Swift's `String` hashes canonically: NFC and NFD alike).
    private static func exactHash(_ path: Substring) -> Int {
        var hasher = Hasher()
        let contiguous: Void? = path.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if contiguous == nil { Array(path.utf8).withUnsafeBytes { hasher.combine(bytes: $0) } }
        return hasher.finalize()
    }

    /// True when the link at `path` with text `target` resolves inside the import root, following
    /// the archive's other links as the file system would (a chain of links cannot climb out), and
    /// the links already in the folder imported into (`linkOnDisk` gives the text of the link at a
    /// relative path, if one is there): it must stay inside whichever of the two a path ends up as.
    func linkStaysInside(_ path: String, target: String, linkOnDisk: (String) -> String? = { _ in nil }) -> Bool {
        resolvesInside(path, target: target) { links[$0] ?? linkOnDisk($0) }
            && resolvesInside(path, target: target) { linkOnDisk($0) ?? links[$0] }
    }

    private func resolvesInside(_ path: String, target: String, link: (String) -> String?) -> Bool {
        if target.isEmpty || target.hasPrefix("/") { return false }
        var resolved = path.split(separator: "/").dropLast().map(String.init)
        var pending = target.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        var hops = 0
        while !pending.isEmpty {
            let component = pending.removeFirst()
            if component == "." { continue }
            if component == ".." {
                guard !resolved.isEmpty else { return false }
                resolved.removeLast()
                continue
            }
            resolved.append(component)
            if let next = link(resolved.joined(separator: "/")) {
                hops += 1
                if hops > 40 || next.isEmpty || next.hasPrefix("/") { return false }
                resolved.removeLast()
                pending = next.split(separator: "/", omittingEmptySubsequences: true).map(String.init) + pending
            }
        }
        return true
    }
}
