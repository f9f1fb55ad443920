/// The rules every entry name must pass before a byte of it is written, and the index of the
/// names seen so far (duplicates, case and normalization collisions, links on the way).
struct EntryPaths {
    enum Kind: Equatable { case file, directory, symlink }

    /// Kinds by exact path (byte equality: Swift's `==` treats NFC and NFD as equal).
    private var kinds: [[UInt8]: Kind] = [:]
    /// The first spelling of each path under case folding and canonical equivalence.
    private var spellings: [String: String] = [:]
    /// Links of the archive: path → target text.
    private(set) var links: [String: String] = [:]

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
    mutating func add(_ path: String, kind: Kind) -> ImportError.Reason? {
        let components = path.split(separator: "/")
        var prefix = ""
        for (index, component) in components.enumerated() {
            prefix = prefix.isEmpty ? String(component) : prefix + "/" + component
            let isLast = index == components.count - 1
            if let reason = collision(prefix) { return reason }
            let bytes = Array(prefix.utf8)
            if let existing = kinds[bytes] {
                if isLast {
                    // A folder named twice is harmless; anything else is a duplicate.
                    return existing == .directory && kind == .directory ? nil : .duplicate
                }
                switch existing {
                case .directory: continue
                case .symlink: return .throughLink(prefix)
                case .file: return .parentIsFile(prefix)
                }
            }
            kinds[bytes] = isLast ? kind : .directory
        }
        return nil
    }

    mutating func addLink(_ path: String, target: String) -> ImportError.Reason? {
        if let reason = add(path, kind: .symlink) { return reason }
        links[path] = target
        return nil
    }

    /// True when `path` was recorded as a regular file.
    func isFile(_ path: String) -> Bool { kinds[Array(path.utf8)] == .file }

    private mutating func collision(_ path: String) -> ImportError.Reason? {
        let key = Self.key(path)
        guard let first = spellings[key] else {
            spellings[key] = path
            return nil
        }
        if Array(first.utf8) == Array(path.utf8) { return nil }
        // Canonically equal but different bytes: only the normalization differs.
        return first == path ? .normalizationCollision(with: first) : .caseCollision(with: first)
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
