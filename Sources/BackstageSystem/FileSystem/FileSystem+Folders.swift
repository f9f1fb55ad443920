import Foundation

/// A folder held open while a walk reads its entries: each name is looked up in the folder
/// (`fstatat`, `openat`), not through a path from `/` whose every component the kernel walks
/// again at each call, and the path of a file is made only when an error names it.
///
/// A walk holds one a level (a descriptor each), and closes each when it leaves the folder. Its
/// lookups may run on several threads at once (a folder's headers are read on two).
package final class OpenFolder: Sendable {
    /// The folder's path, for errors and for what is done by path.
    package let path: String
    fileprivate let descriptor: Int32

    fileprivate init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { Syscalls.close(descriptor) }

    /// The path of the entry `name`.
    package func path(of name: String) -> String { path + "/" + name }
}

extension FileSystem {
    /// Opens the folder at `path` for a walk, following a link at `path` itself.
    package func openFolder(_ path: String) throws(FileSystemError) -> OpenFolder {
        try inject(.list, path)
        let fd = try Syscalls.openFolder(path, in: AT_FDCWD, followingLink: true, path: { path })
        return OpenFolder(path: path, descriptor: fd)
    }

    /// Opens the folder `name` of `parent`, never through a link (`ELOOP` when `name` became one).
    package func openFolder(_ name: String, in parent: OpenFolder) throws(FileSystemError) -> OpenFolder {
        try inject(.list, name, in: parent)
        let fd = try Syscalls.openFolder(
            name, in: parent.descriptor, followingLink: false, path: { parent.path(of: name) })
        return OpenFolder(path: parent.path(of: name), descriptor: fd)
    }

    /// The names of `folder`, sorted, without `.` and `..`: ``contents(of:)`` of an open folder.
    package func contents(of folder: OpenFolder) throws(FileSystemError) -> [String] {
        try inject(.list, folder.path)
        return try Syscalls.listFolder(folder.descriptor, path: { folder.path }).sorted()
    }

    /// ``status(_:)`` of the entry `name` of `folder`.
    package func status(_ name: String, in folder: OpenFolder) throws(FileSystemError) -> FileStatus? {
        try inject(.stat, name, in: folder)
        return try Syscalls.lstat(name, in: folder.descriptor, path: { folder.path(of: name) }).map(FileStatus.init)
    }

    /// ``readPrefix(_:count:)`` of the file `name` of `folder`.
    package func readPrefix(_ name: String, in folder: OpenFolder, count: Int) throws(FileSystemError) -> [UInt8] {
        try inject(.read, name, in: folder)
        let fd = try Syscalls.openForReading(name, in: folder.descriptor, path: { folder.path(of: name) })
        defer { Syscalls.close(fd) }
        return try Self.readPrefix(of: fd, count: count, path: { folder.path(of: name) })
    }

    /// ``willRead(_:bytes:)`` of the file `name` of `folder`.
    package func willRead(_ name: String, in folder: OpenFolder, bytes: Int64) {
        Syscalls.willNeed(name, in: folder.descriptor, length: bytes)
    }

    /// Fault injection at the path of `name` in `folder`, made only in test builds.
    @inline(__always)
    private func inject(
        _ operation: FileSystemError.Operation, _ name: String, in folder: OpenFolder
    ) throws(FileSystemError) {
        #if BACKSTAGE_FAULT_INJECTION
            try inject(operation, folder.path(of: name))
        #endif
    }
}
