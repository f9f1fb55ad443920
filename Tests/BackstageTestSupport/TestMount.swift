import Foundation

/// A real mount at a fresh folder, unmounted when released (root only): a small tmpfs for full
/// (`ENOSPC`) and read-only (`EROFS`) disks, or a bind mount, which shares the device number of
/// its source and still makes `rename` across it fail with `EXDEV`.
public final class TestMount: @unchecked Sendable {
    public let directory: TemporaryDirectory

    /// A tmpfs of `size` (`2m`), with `folders` created before it is made read-only.
    public init(tmpfs size: String, readOnly: Bool = false, creating folders: [String] = []) throws {
        directory = try TemporaryDirectory(prefix: "mount")
        try shell("mount -t tmpfs -o size=\(size) tmpfs '\(directory.path)'")
        for folder in folders {
            try FileManager.default.createDirectory(at: directory.url.appending(path: folder), withIntermediateDirectories: true)
        }
        if readOnly { try shell("mount -o remount,ro '\(directory.path)'") }
    }

    /// `source` bound at a fresh folder.
    public init(binding source: URL) throws {
        directory = try TemporaryDirectory(prefix: "bind")
        try shell("mount --bind '\(source.path)' '\(directory.path)'")
    }

    public var url: URL { directory.url }

    deinit { try? shell("umount '\(directory.path)'") }
}
