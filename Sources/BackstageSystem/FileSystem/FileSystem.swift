import Foundation

/// What `lstat` says about a path, without following symbolic links.
package struct FileStatus: Sendable, Hashable {
    package enum Kind: Sendable, Hashable { case regular, directory, symlink, other }
    package var kind: Kind
    package var size: Int64
    package var mode: mode_t
    package var device: UInt64
    package var inode: UInt64
    package var modificationTime: timespec
    /// The last change of the inode (`st_ctim`): for a folder, any entry added, removed or
    /// renamed. Unlike the modification time, no one can set it back.
    package var changeTime: timespec
    package var owner: uid_t
    package var group: gid_t
    /// Hard links to the file (names it has).
    package var linkCount: Int

    package init(_ st: stat) {
        switch st.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symlink
        default: kind = .other
        }
        size = Int64(st.st_size)
        mode = st.st_mode & 0o7777
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        modificationTime = st.st_mtim
        changeTime = st.st_ctim
        owner = st.st_uid
        group = st.st_gid
        linkCount = Int(st.st_nlink)
    }

    package static func == (lhs: FileStatus, rhs: FileStatus) -> Bool {
        lhs.kind == rhs.kind && lhs.size == rhs.size && lhs.device == rhs.device && lhs.inode == rhs.inode
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(device)
        hasher.combine(inode)
    }
}

#if BACKSTAGE_FAULT_INJECTION
    /// Injects failures into ``FileSystem`` operations, so tests can produce `ENOSPC`, `EXDEV`,
    /// `EACCES` or `EIO` at a chosen call. Compiled into debug builds only (the flag is set for the
    /// debug configuration in Package.swift, as swift-system does with `ENABLE_MOCKING`): a release
    /// build, the one users ship, has no way to fail or corrupt a copy on purpose.
    package final class FaultInjector: @unchecked Sendable {
        package struct Rule: Sendable {
            package var operation: FileSystemError.Operation
            package var pathContains: String
            package var code: Int32
            /// The fault fires on this matching call (1 = the first), then stays armed unless `once`.
            package var afterCalls: Int
            package var once: Bool
        }

        private let lock = NSLock()
        private var rules: [Rule] = []
        private var counts: [Int: Int] = [:]
        private var corrupting: [String] = []
        private var shortening: [String] = []

        package init() {}

        /// Fails `operation` on paths containing `pathContains` with `code`.
        package func fail(
            _ operation: FileSystemError.Operation, pathContains: String = "", code: Int32, afterCalls: Int = 1,
            once: Bool = false
        ) {
            lock.withLock {
                rules.append(
                    Rule(
                        operation: operation, pathContains: pathContains, code: code, afterCalls: afterCalls, once: once
                    ))
            }
        }

        /// Makes copies to paths containing `pathContains` silently wrong: one byte is flipped after
        /// the first chunk, as a faulty disk or a bug would. Verification must catch it.
        package func corruptCopies(pathContains: String) {
            lock.withLock { corrupting.append(pathContains) }
        }

        func shouldCorrupt(_ path: String) -> Bool {
            lock.withLock { corrupting.contains { path.contains($0) } }
        }

        /// Empties files at paths containing `pathContains` while a comparison reads them, as another
        /// process truncating them would: the comparison must answer that they differ.
        package func shortenWhileCompared(pathContains: String) {
            lock.withLock { shortening.append(pathContains) }
        }

        package func shouldShortenWhileCompared(_ path: String) -> Bool {
            lock.withLock { shortening.contains { path.contains($0) } }
        }

        package func check(_ operation: FileSystemError.Operation, _ path: String) throws(FileSystemError) {
            let code: Int32? = lock.withLock {
                for (index, rule) in rules.enumerated()
                where rule.operation == operation && (rule.pathContains.isEmpty || path.contains(rule.pathContains)) {
                    counts[index, default: 0] += 1
                    let n = counts[index]!
                    if n == rule.afterCalls || (!rule.once && n > rule.afterCalls) { return rule.code }
                }
                return nil
            }
            if let code { throw FileSystemError(operation: operation, path: path, code: code) }
        }
    }

#endif

/// The small file-system layer all durable work goes through: `O_NOFOLLOW` opens, kernel copies,
/// `fsync` of files and directories, renames that never replace, and fault injection for tests.
package struct FileSystem: Sendable {
    #if BACKSTAGE_FAULT_INJECTION
        package var faults: FaultInjector?

        package init(faults: FaultInjector? = nil) {
            self.faults = faults
        }

        @inline(__always)
        package func inject(_ operation: FileSystemError.Operation, _ path: String) throws(FileSystemError) {
            if let faults { try faults.check(operation, path) }
        }
    #else
        package init() {}

        @inline(__always)
        package func inject(_ operation: FileSystemError.Operation, _ path: String) throws(FileSystemError) {}
    #endif

    /// `lstat`, or nil when nothing is at `path`.
    package func status(_ path: String) throws(FileSystemError) -> FileStatus? {
        try inject(.stat, path)
        return try Syscalls.lstat(path).map(FileStatus.init)
    }

    package func exists(_ path: String) -> Bool {
        ((try? status(path)) ?? nil) != nil
    }

    /// The path with every symbolic link resolved (`realpath`), or nil when it does not resolve.
    package func resolvedPath(_ path: String) -> String? {
        Syscalls.realPath(path)
    }

    /// `path` with every link resolved, even when its last components do not exist yet: the deepest
    /// existing ancestor is resolved with `realpath` and the rest appended.
    package func canonicalPath(_ path: String) -> String {
        var head = (path as NSString).standardizingPath
        var tail: [String] = []
        while !head.isEmpty && head != "/" {
            if let resolved = resolvedPath(head) {
                return ([resolved] + tail.reversed()).joined(separator: "/")
            }
            tail.append((head as NSString).lastPathComponent)
            head = (head as NSString).deletingLastPathComponent
        }
        return path
    }

    /// True when `path`, with every link resolved, is `folder` or inside it.
    package func resolves(_ path: String, inside folder: String) -> Bool {
        guard let target = resolvedPath(path), let root = resolvedPath(folder) else { return false }
        return Self.relativePath(of: target, inside: root) != nil
    }

    /// The path of `path` relative to `folder` ("" for the folder itself), or nil when it is not
    /// inside; compared as written, component by component (`/a/bc` is not inside `/a/b`).
    package static func relativePath(of path: String, inside folder: String) -> String? {
        let root = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        if path == root { return "" }
        guard path.hasPrefix(root + "/") else { return nil }
        return String(path.dropFirst(root.count + 1))
    }

    /// Asks the kernel to start reading the first `bytes` of `path` (0: the whole file) into the
    /// page cache, and returns at once: many files' reads are then in flight together, where a
    /// thread reading them one by one waits for the disk once per file (20,000 headers read
    /// one after the other took 2.6 s from a cold cache here). Advice only: it never fails, and
    /// never follows a link; the read that follows reports any error.
    package func willRead(_ path: String, bytes: Int64 = 0) {
        Syscalls.willNeed(path, length: bytes)
    }

    /// Reads up to `count` bytes from the start of a regular file, never through a symlink.
    package func readPrefix(_ path: String, count: Int) throws(FileSystemError) -> [UInt8] {
        try inject(.read, path)
        let fd = try Syscalls.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        defer { Syscalls.close(fd) }
        return try Self.readPrefix(of: fd, count: count, path: { path })
    }

    /// Up to `count` bytes from the start of the open file `fd`; `path` names it in an error.
    static func readPrefix(of fd: Int32, count: Int, path: () -> String) throws(FileSystemError) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        defer { buffer.deallocate() }
        var filled = 0
        while filled < count {
            let n = try Syscalls.pread(
                fd, UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), offset: Int64(filled), path: path)
            if n == 0 { break }
            filled += n
        }
        return Array(buffer[..<filled])
    }

    /// Names in a directory, sorted, without `.` and `..`.
    /// True when a name in `directory` satisfies `predicate` (given its bytes), without a `stat`.
    package func anyEntry(
        of directory: String, where predicate: (UnsafeBufferPointer<UInt8>) -> Bool
    ) throws(FileSystemError) -> Bool {
        try inject(.list, directory)
        return try Syscalls.anyEntry(of: directory, where: predicate)
    }

    package func contents(of directory: String) throws(FileSystemError) -> [String] {
        try inject(.list, directory)
        return try Syscalls.listDirectory(directory).sorted()
    }

    /// Creates `path` and its missing parents, each made durable in its parent unless `durable` is false
    /// (the caller then syncs the whole file system once).
    /// Gives folder `path` the owner (as root) and mode of `like`: a copied folder keeps its 0700.
    package func copyOwnerAndMode(of like: FileStatus, to path: String) throws(FileSystemError) {
        try inject(.setAttributes, path)
        try Syscalls.setOwnerAndMode(
            path, owner: Syscalls.isRoot ? like.owner : nil, group: like.group, mode: like.mode)
    }

    /// Other processes that have the file at `path` open (Linux, through `/proc`; a non-root
    /// caller sees its own user's processes only).
    package func otherProcessesHolding(_ path: String) throws(FileSystemError) -> [Int32] {
        guard let status = try status(path) else { return [] }
        let holders = Syscalls.otherProcessesHolding(device: status.device, inode: status.inode)
        guard !holders.isEmpty else { return [] }
        // A child this process is spawning holds every descriptor this process has, ours on the
        // store included, until its exec closes them (microseconds): look again before saying a
        // process holds the store. A real holder still does.
        usleep(50_000)
        let again = Set(Syscalls.otherProcessesHolding(device: status.device, inode: status.inode))
        return holders.filter(again.contains)
    }

    package func createDirectories(_ path: String, mode: mode_t = 0o755, durable: Bool = true) throws(FileSystemError) {
        if let st = try status(path) {
            // A link to a folder is a folder (Application Support linked elsewhere, say).
            var isFolder = st.kind == .directory
            if st.kind == .symlink, let target = resolvedPath(path) {
                isFolder = try status(target)?.kind == .directory
            }
            guard isFolder else { throw FileSystemError(operation: .mkdir, path: path, code: EEXIST) }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path { try createDirectories(parent, mode: mode, durable: durable) }
        try inject(.mkdir, path)
        do {
            try Syscalls.mkdir(path, mode)
        } catch  where error.code == EEXIST {
            return
        }
        if durable { try syncDirectory(parent) }
    }

    /// `fsync` of a directory, making the names created or removed in it durable.
    package func syncDirectory(_ path: String) throws(FileSystemError) {
        try inject(.fsync, path)
        if DiskRecording.skipsFsync(of: path) { return }
        let fd = try Syscalls.open(path.isEmpty ? "." : path, O_RDONLY | O_DIRECTORY)
        defer { Syscalls.close(fd) }
        try Syscalls.fsync(fd, path: path)
    }

    /// `fsync` of a file, making its bytes durable.
    package func syncFile(_ path: String) throws(FileSystemError) {
        try inject(.fsync, path)
        let fd = try Syscalls.open(path, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fd) }
        try Syscalls.fsync(fd, path: path)
    }

    /// Renames `from` to `to`; fails with `EEXIST` rather than replacing an existing `to`.
    package func rename(_ from: String, to: String, replacing: Bool = false) throws(FileSystemError) {
        try inject(.rename, from)
        try Syscalls.rename(from, to, noReplace: !replacing)
    }

    /// True when a rename from folder `from` into folder `to` works, tried with an empty folder:
    /// two mounts of one device (bind mounts) share `st_dev`, yet `rename` between them fails with
    /// `EXDEV`, so comparing devices is not enough.
    package func canRename(from: String, to: String) throws(FileSystemError) -> Bool {
        let name = TemporaryName.unique("probe")
        try createDirectory(from + "/" + name, mode: 0o700)
        do {
            try rename(from + "/" + name, to: to + "/" + name)
        } catch  where error.isCrossDevice {
            try Syscalls.rmdir(from + "/" + name)
            return false
        } catch {
            try? Syscalls.rmdir(from + "/" + name)
            throw error
        }
        try Syscalls.rmdir(to + "/" + name)
        return true
    }

    /// Removes a file; succeeds when it is already gone.
    package func removeFile(_ path: String) throws(FileSystemError) {
        try inject(.unlink, path)
        do {
            try Syscalls.unlink(path)
        } catch  where error.code == ENOENT {
        }
    }

    /// Free bytes for an unprivileged writer, and whether the file system is mounted read-only.
    package func space(at path: String) throws(FileSystemError) -> (available: Int64, readOnly: Bool) {
        try inject(.statfs, path)
        let st = try Syscalls.statvfs(path)
        let readOnly = (st.f_flag & UInt(ST_RDONLY)) != 0 || !Syscalls.access(path, W_OK)
        return (Int64(st.f_bavail) * Int64(st.f_frsize), readOnly)
    }

    /// Writes `data` durably: a temporary file beside `path`, fsync, rename over `path`, fsync of the directory.
    package func writeAtomically(_ data: [UInt8], to path: String) throws(FileSystemError) {
        let temp =
            (path as NSString).deletingLastPathComponent + "/"
            + TemporaryName.beside((path as NSString).lastPathComponent)
        try? Syscalls.unlink(temp)
        try inject(.open, temp)
        let fd = try Syscalls.open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0o644)
        do {
            try inject(.write, temp)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(data.count, 1), alignment: 16)
            defer { buffer.deallocate() }
            buffer.copyBytes(from: data)
            try Syscalls.writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[..<data.count]), path: temp)
            try inject(.fsync, temp)
            try Syscalls.fsync(fd, path: temp)
            Syscalls.close(fd)
        } catch {
            Syscalls.close(fd)
            try? Syscalls.unlink(temp)
            throw error
        }
        try rename(temp, to: path, replacing: true)
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Streams a regular file through `buffer`, never following a link, calling `body` with each chunk.
    /// - returns: The bytes read.
    @discardableResult
    package func readChunks(
        _ path: String, into buffer: UnsafeMutableRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int64 {
        try inject(.read, path)
        let fd = try Syscalls.open(path, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fd) }
        var total: Int64 = 0
        while true {
            let n = try Syscalls.read(fd, buffer, path: path)
            if n == 0 { return total }
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            total += Int64(n)
        }
    }

    /// Reads a whole (small) file.
    package func readFile(_ path: String) throws(FileSystemError) -> [UInt8] {
        try inject(.read, path)
        let fd = try Syscalls.open(path, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fd) }
        var result: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try Syscalls.read(fd, buffer, path: path)
            if n == 0 { return result }
            result.append(contentsOf: buffer[..<n])
        }
    }
}

/// An open file descriptor and the path it was opened at (for errors), closed once: by ``close()``,
/// or when the object goes.
package class OpenFile {
    package let path: String
    private(set) var fd: Int32

    init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    package func close() {
        if fd >= 0 { Syscalls.close(fd) }
        fd = -1
    }

    deinit { close() }
}

/// A file being written from scratch (by import): created exclusively, never through a link.
package final class NewFile: OpenFile {
    /// Writes `buffer` at `offset` (archives may leave holes: sparse entries).
    package func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(FileSystemError) {
        try Syscalls.pwriteAll(fd, buffer, offset: offset, path: path)
    }

    /// Sets the final size (a trailing hole), the permission bits and the modification time, then closes.
    package func finish(size: Int64, mode: mode_t, modified: Int64) throws(FileSystemError) {
        defer { close() }
        try Syscalls.ftruncate(fd, size, path: path)
        try Syscalls.fchmod(fd, mode, path: path)
        try Syscalls.futimens(fd, seconds: modified, path: path)
    }
}

/// A regular file opened for reading from start to end (by import's decompressor).
package final class ReadableFile: OpenFile {
    /// Reads into `buffer`; 0 at the end of the file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(FileSystemError) -> Int {
        try Syscalls.read(fd, buffer, path: path)
    }

    /// Reads into `buffer` from `offset`, without moving the file's position.
    package func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(FileSystemError) -> Int {
        try Syscalls.pread(fd, buffer, offset: offset, path: path)
    }

    /// Asks the kernel to start reading `count` bytes from `offset` into the page cache, and
    /// returns at once: reads asked for together are in flight together, where reads made one
    /// after the other from a cold cache each wait for the disk. Advice only: it never fails.
    package func willRead(at offset: Int64, count: Int) {
        Syscalls.advise(fd, POSIX_FADV_WILLNEED, offset: offset, length: Int64(count))
    }

    /// Whether any of `count` bytes from `offset` is in the page cache (nothing is read); nil when
    /// the kernel cannot say.
    package func isCached(at offset: Int64, count: Int) -> Bool? {
        Syscalls.isCached(fd, offset: offset, length: Int64(count))
    }

    /// Tells the kernel this file is read at random places: it reads what is asked and nothing
    /// around it. Advice only.
    package func readsAtRandom() {
        Syscalls.advise(fd, POSIX_FADV_RANDOM)
    }

    /// Asks the kernel to drop `count` bytes from `offset` from the page cache, once read (their
    /// clean pages only). Advice only: it never fails.
    package func forget(at offset: Int64, count: Int) {
        Syscalls.advise(fd, POSIX_FADV_DONTNEED, offset: offset, length: Int64(count))
    }
}

extension FileSystem {
    /// Opens a regular file for reading; a link at `path` is followed.
    package func openForReading(_ path: String) throws(FileSystemError) -> ReadableFile {
        try inject(.open, path)
        return ReadableFile(path: path, fd: try Syscalls.open(path, O_RDONLY))
    }

    /// Creates `path` (it must not exist; a link in its place is not followed) for writing, with
    /// `mode` (less the umask).
    package func createNewFile(_ path: String, mode: mode_t = 0o600) throws(FileSystemError) -> NewFile {
        try inject(.open, path)
        let fd = try Syscalls.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode)
        return NewFile(path: path, fd: fd)
    }

    /// Creates a symbolic link at `path` whose text is `target`.
    package func createSymbolicLink(_ path: String, target: String) throws(FileSystemError) {
        try inject(.symlink, path)
        try Syscalls.symlink(target, at: path)
    }

    /// Creates `path` as another name of the existing file `existing`.
    package func createHardLink(_ path: String, to existing: String) throws(FileSystemError) {
        try inject(.link, path)
        try Syscalls.link(existing, at: path)
    }

    /// Creates one directory (its parent must exist).
    package func createDirectory(_ path: String, mode: mode_t = 0o755) throws(FileSystemError) {
        try inject(.mkdir, path)
        try Syscalls.mkdir(path, mode)
    }

    /// Sets a path's modification time without following a link.
    package func setModificationTime(_ path: String, seconds: Int64) throws(FileSystemError) {
        try Syscalls.setModificationTime(path, seconds: seconds)
    }

    /// Makes everything written on the file system holding `path` durable with one `syncfs(2)`,
    /// far cheaper than an fsync per file when thousands were just written.
    package func syncFileSystem(containing path: String) throws(FileSystemError) {
        try inject(.fsync, path)
        let fd = try Syscalls.open(path, O_RDONLY | O_DIRECTORY)
        defer { Syscalls.close(fd) }
        try Syscalls.syncfs(fd, path: path)
    }
}
