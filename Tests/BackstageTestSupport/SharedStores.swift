import Backstage
import Foundation

/// The real Core Data stores in `../shared/stores/` beside the project (Apple Photos', Apple
/// Notes'), each with the `-wal` and `-shm` it was published with. Tests copy them into their own
/// folder and never open the originals.
public enum SharedStores {
    public enum Store: String, CaseIterable, Sendable, CustomStringConvertible {
        case photos = "photos-15.7.1/Photos.sqlite"
        case notes = "notes-macos26/NoteStore.sqlite"

        public var description: String { rawValue }
    }

    /// `../shared/stores` beside the project's root; for a clone made elsewhere (a fresh clone in
    /// /tmp, as CI checks do), beside the repository it was cloned from; for a `git worktree`, beside
    /// the checkout it was added from; or `BACKSTAGE_SHARED_STORES`.
    public static var folder: URL {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let beside = root.deletingLastPathComponent().appending(path: "shared/stores")
        var candidates = ProcessInfo.processInfo.environment["BACKSTAGE_SHARED_STORES"].map { [URL(filePath: $0)] } ?? []
        candidates.append(beside)
        if let main = mainCheckout(of: root) {
            candidates.append(main.deletingLastPathComponent().appending(path: "shared/stores"))
        }
        if let origin = originPath(of: root) {
            candidates.append(URL(filePath: origin).standardizedFileURL.deletingLastPathComponent().appending(path: "shared/stores"))
        }
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) } ?? beside
    }

    /// The checkout a `git worktree` at `root` was added from: its `.git` is a file,
    /// `gitdir: <checkout>/.git/worktrees/<name>`.
    private static func mainCheckout(of root: URL) -> URL? {
        guard let link = try? String(contentsOf: root.appending(path: ".git"), encoding: .utf8),
            link.hasPrefix("gitdir:"), let range = link.range(of: "/.git/worktrees/")
        else { return nil }
        let checkout = link[link.index(link.startIndex, offsetBy: "gitdir:".count)..<range.lowerBound]
        return URL(filePath: checkout.trimmingCharacters(in: .whitespaces))
    }

    /// The local path `root`'s git checkout was cloned from (`remote "origin"` in `.git/config`),
    /// when it was cloned from a folder.
    private static func originPath(of root: URL) -> String? {
        guard let config = try? String(contentsOf: root.appending(path: ".git/config"), encoding: .utf8) else { return nil }
        var inOrigin = false
        for line in config.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("[") { inOrigin = line == "[remote \"origin\"]"; continue }
            guard inOrigin, line.hasPrefix("url"), let equals = line.firstIndex(of: "=") else { continue }
            let url = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if url.hasPrefix("/") { return url }
            if url.hasPrefix("file://") { return String(url.dropFirst("file://".count)) }
            return nil
        }
        return nil
    }

    /// Copies `store` (main file, `-wal`, `-shm`) into `folder`, writable, and returns the copy.
    public static func copy(_ store: Store, into folder: URL) throws -> StoreFileSet {
        let original = StoreFileSet(main: Self.folder.appending(path: store.rawValue))
        let copy = StoreFileSet(main: folder.appending(path: original.fileName))
        for url in [original.main, original.sidecar(.wal), original.sidecar(.shm)] where FileManager.default.fileExists(atPath: url.path) {
            let target = folder.appending(path: url.lastPathComponent)
            try FileManager.default.copyItem(at: url, to: target)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target.path)
        }
        return copy
    }
}
