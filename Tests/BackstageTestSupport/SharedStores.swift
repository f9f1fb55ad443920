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

    /// `../shared/stores` beside the project's root.
    public static var folder: URL {
        URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "shared/stores")
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
