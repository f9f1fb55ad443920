import CBackstageSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Backstage 0.x runs on Linux: copy_file_range, sendfile, renameat2, syncfs and /proc are
// called here and nowhere else. A port to Apple platforms replaces this file (clonefile,
// fcopyfile, renamex_np, F_FULLFSYNC) and nothing above it.
#if !os(Linux)
    #error("Backstage 0.x supports Linux only: Syscalls.swift uses Linux system calls (see README, Requirements)")
#endif

/// The only place Backstage calls libc for file work. Every call retries `EINTR` and
/// turns a failure into a ``FileSystemError`` naming the path.
package enum Syscalls {
    package static var lastErrno: Int32 { errno }

    @inline(__always)
    static func retrying<T: BinaryInteger>(_ body: () -> T) -> T {
        while true {
            let result = body()
            if result == -1 && errno == EINTR { continue }
            return result
        }
    }

    package static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644) throws(FileSystemError) -> Int32 {
        func attempt() throws(FileSystemError) -> Int32 {
            let fd = retrying { Glibc.open(path, flags | O_CLOEXEC, mode) }
            guard fd >= 0 else { throw FileSystemError(operation: .open, path: path, code: errno) }
            return fd
        }
        if DiskRecording.isOn, flags & O_CREAT != 0, (try? lstat(path)) ?? nil == nil {
            return try disk(.create, path) { () throws(FileSystemError) in try attempt() }
        }
        return try attempt()
    }

    /// Runs `body`, an operation that changes the disk, recorded when a process installed a disk
    /// recorder (``DiskRecording``: the power-loss explorer's child); just run otherwise.
    @inline(__always)
    static func disk<T>(
        _ operation: DiskOperation, _ path: String, _ second: String = "", victim: String? = nil,
        _ body: () throws(FileSystemError) -> T
    ) throws(FileSystemError) -> T {
        try DiskRecording.recording(operation, path, second, victim: victim, body)
    }

    package static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, path: String) throws(FileSystemError) -> Int
    {
        let n = retrying { Glibc.read(fd, buffer.baseAddress, buffer.count) }
        guard n >= 0 else { throw FileSystemError(operation: .read, path: path, code: errno) }
        return n
    }

    static func pread(
        _ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int64, path: String
    ) throws(FileSystemError) -> Int {
        let n = retrying { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
        guard n >= 0 else { throw FileSystemError(operation: .read, path: path, code: errno) }
        return n
    }

    /// Starts reading the first `length` bytes of `path` (0: all of it) into the page cache and
    /// returns without waiting (`POSIX_FADV_WILLNEED`).
    static func willNeed(_ path: String, length: Int64) {
        advise(path, length: length, POSIX_FADV_WILLNEED)
    }

    /// Drops the clean pages of `path` from the page cache (`POSIX_FADV_DONTNEED`): its next read
    /// comes from the disk.
    static func dontNeed(_ path: String) {
        advise(path, length: 0, POSIX_FADV_DONTNEED)
    }

    /// `posix_fadvise` on the first `length` bytes of `path`. Advice only: a file that cannot be
    /// opened is left to the read that follows, which says why; a link is not followed.
    private static func advise(_ path: String, length: Int64, _ advice: Int32) {
        let fd = retrying { Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        guard fd >= 0 else { return }
        advise(fd, advice, length: length)
        _ = Glibc.close(fd)
    }

    /// `posix_fadvise(advice)` on `length` bytes of the open file `fd` from `offset` (0: to the
    /// end): `POSIX_FADV_WILLNEED` starts reading them into the page cache without waiting,
    /// `POSIX_FADV_DONTNEED` drops their clean pages, `POSIX_FADV_SEQUENTIAL` and `_RANDOM` set
    /// how far the kernel reads ahead of a reader (further, or not at all). Advice only: nothing
    /// fails for want of it.
    static func advise(_ fd: Int32, _ advice: Int32, offset: Int64 = 0, length: Int64 = 0) {
        _ = posix_fadvise(fd, off_t(offset), off_t(length), advice)
    }

    static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String) throws(FileSystemError) {
        try disk(.write, path) { () throws(FileSystemError) in try writeAllUnrecorded(fd, buffer, path: path) }
    }

    private static func writeAllUnrecorded(
        _ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String
    ) throws(FileSystemError) {
        var offset = 0
        while offset < buffer.count {
            let n = retrying { Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
            guard n > 0 else { throw FileSystemError(operation: .write, path: path, code: n == 0 ? EIO : errno) }
            offset += n
        }
    }

    #if BACKSTAGE_FAULT_INJECTION
        /// Flips every bit of one byte in place (fault injection only: it simulates a corrupted copy,
        /// and a flipped byte always differs from the original, whatever it was).
        static func overwriteByte(_ fd: Int32, at offset: Int64) {
            var byte: UInt8 = 0
            _ = Glibc.pread(fd, &byte, 1, off_t(offset))
            byte ^= 0xFF
            _ = Glibc.pwrite(fd, &byte, 1, off_t(offset))
        }
    #endif

    static func fsync(_ fd: Int32, path: String) throws(FileSystemError) {
        try disk(.fsync, path) { () throws(FileSystemError) in
            guard retrying({ Glibc.fsync(fd) }) == 0 else {
                throw FileSystemError(operation: .fsync, path: path, code: errno)
            }
        }
    }

    /// `sync_file_range(2)` with `SYNC_FILE_RANGE_WRITE`: starts the writeback of the whole file,
    /// without waiting. Advisory: false when it could not start (the later fsync does it all).
    @discardableResult
    static func startWriteback(_ fd: Int32) -> Bool {
        retrying { backstage_start_writeback(fd) } == 0
    }

    /// `fdatasync(2)` that reports nothing but whether it succeeded: a background thread's, ahead
    /// of the fsync that makes the file durable and reports its errors.
    @discardableResult
    static func commitData(_ fd: Int32) -> Bool {
        retrying { Glibc.fdatasync(fd) } == 0
    }

    /// `copy_file_range(2)`: the bytes copied, 0 at end of file, -1 with `errno` set on failure.
    static func copyFileRange(from src: Int32, to dst: Int32, count: Int) -> Int {
        recordedWrite(to: dst) { Int(retrying { backstage_copy_file_range(src, dst, UInt(count)) }) }
    }

    /// A kernel copy into `dst`, recorded as a write when it wrote something (a recorder installed).
    @inline(__always)
    private static func recordedWrite(to dst: Int32, _ body: () -> Int) -> Int {
        if DiskRecording.isOn {
            // A failed copy keeps its errno for the caller: nothing runs after it but the recorder's
            // bookkeeping, which records nothing for it.
            var code: Int32 = 0
            let n =
                (try? disk(.write, DiskRecording.path(of: dst)) { () throws(FileSystemError) -> Int in
                    let n = body()
                    if n < 0 {
                        code = errno
                        throw FileSystemError(operation: .write, path: "", code: code)
                    }
                    return n
                }) ?? -1
            if n < 0 { errno = code }
            return n
        }
        return body()
    }

    /// `sendfile(2)` from the current offset of `src`: the kernel copies without a user buffer.
    /// Returns the bytes copied, 0 at end of file, -1 with `errno` set on failure.
    static func sendFile(from src: Int32, to dst: Int32, count: Int) -> Int {
        recordedWrite(to: dst) { retrying { Glibc.sendfile(dst, src, nil, count) } }
    }

    /// `ioctl(FICLONE)`: true when the file system made a copy-on-write clone.
    static func clone(from src: Int32, to dst: Int32) -> Bool {
        backstage_ficlone(dst, src) == 0
    }

    package static func lstat(_ path: String) throws(FileSystemError) -> stat? {
        var st = stat()
        // withCString: the implicit conversion copies the path into a new array at every call.
        guard path.withCString({ path in retrying { Glibc.lstat(path, &st) } }) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw FileSystemError(operation: .stat, path: path, code: errno)
        }
        return st
    }

    package static func fstat(_ fd: Int32, path: String) throws(FileSystemError) -> stat {
        var st = stat()
        guard Glibc.fstat(fd, &st) == 0 else { throw FileSystemError(operation: .stat, path: path, code: errno) }
        return st
    }

    static func statvfs(_ path: String) throws(FileSystemError) -> Glibc.statvfs {
        var st = Glibc.statvfs()
        guard retrying({ callStatvfs(path, &st) }) == 0 else {
            throw FileSystemError(operation: .statfs, path: path, code: errno)
        }
        return st
    }

    static func rename(_ from: String, _ to: String, noReplace: Bool) throws(FileSystemError) {
        try disk(.rename, from, to, victim: noReplace ? nil : to) { () throws(FileSystemError) in
            try renameUnrecorded(from, to, noReplace: noReplace)
        }
    }

    private static func renameUnrecorded(_ from: String, _ to: String, noReplace: Bool) throws(FileSystemError) {
        if noReplace {
            if retrying({ backstage_rename_noreplace(from, to) }) == 0 { return }
            // Fall back where renameat2 is missing (ENOSYS) or the file system refuses the flag (EINVAL).
            guard errno == ENOSYS || errno == EINVAL else {
                throw FileSystemError(operation: .rename, path: from, code: errno)
            }
            if (try? lstat(to)) ?? nil != nil { throw FileSystemError(operation: .rename, path: to, code: EEXIST) }
        }
        guard retrying({ Glibc.rename(from, to) }) == 0 else {
            throw FileSystemError(operation: .rename, path: from, code: errno)
        }
    }

    static func pwriteAll(
        _ fd: Int32, _ buffer: UnsafeRawBufferPointer, offset: Int64, path: String
    ) throws(FileSystemError) {
        try disk(.write, path) { () throws(FileSystemError) in
            try pwriteAllUnrecorded(fd, buffer, offset: offset, path: path)
        }
    }

    private static func pwriteAllUnrecorded(
        _ fd: Int32, _ buffer: UnsafeRawBufferPointer, offset: Int64, path: String
    ) throws(FileSystemError) {
        var done = 0
        while done < buffer.count {
            let n = retrying {
                Glibc.pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            }
            guard n > 0 else { throw FileSystemError(operation: .write, path: path, code: n == 0 ? EIO : errno) }
            done += n
        }
    }

    static func ftruncate(_ fd: Int32, _ size: Int64, path: String) throws(FileSystemError) {
        try disk(.write, path) { () throws(FileSystemError) in
            guard retrying({ Glibc.ftruncate(fd, off_t(size)) }) == 0 else {
                throw FileSystemError(operation: .write, path: path, code: errno)
            }
        }
    }

    static func fchmod(_ fd: Int32, _ mode: mode_t, path: String) throws(FileSystemError) {
        guard retrying({ Glibc.fchmod(fd, mode) }) == 0 else {
            throw FileSystemError(operation: .setAttributes, path: path, code: errno)
        }
    }

    static func fchown(_ fd: Int32, owner: uid_t, group: gid_t, path: String) throws(FileSystemError) {
        guard retrying({ Glibc.fchown(fd, owner, group) }) == 0 else {
            throw FileSystemError(operation: .setAttributes, path: path, code: errno)
        }
    }

    /// chmod and chown of a folder (never through a link), to match the folder it copies.
    static func setOwnerAndMode(_ path: String, owner: uid_t?, group: gid_t, mode: mode_t) throws(FileSystemError) {
        let fd = try open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        defer { close(fd) }
        if let owner { try fchown(fd, owner: owner, group: group, path: path) }
        try fchmod(fd, mode, path: path)
    }

    /// The effective user is root, who alone can give a file to another owner.
    static var isRoot: Bool { geteuid() == 0 }

    /// Process ids, other than this one, holding the file `(device, inode)` open, found through
    /// `/proc/<pid>/fd`. Processes of other users are not visible to a non-root caller.
    static func otherProcessesHolding(device: UInt64, inode: UInt64) -> [Int32] {
        let me = getpid()
        var holders: [Int32] = []
        guard let processes = try? listDirectory("/proc") else { return [] }
        for name in processes {
            guard let pid = Int32(name), pid != me, let fds = try? listDirectory("/proc/\(name)/fd") else { continue }
            for fd in fds {
                var st = stat()
                if fstatat(AT_FDCWD, "/proc/\(name)/fd/\(fd)", &st, 0) == 0, UInt64(st.st_dev) == device,
                    UInt64(st.st_ino) == inode
                {
                    holders.append(pid)
                    break
                }
            }
        }
        return holders
    }

    /// Sets the modification time (and the access time to the same value) of `path`, not following a link.
    static func setModificationTime(_ path: String, seconds: Int64) throws(FileSystemError) {
        var times = [timespec(tv_sec: time_t(seconds), tv_nsec: 0), timespec(tv_sec: time_t(seconds), tv_nsec: 0)]
        guard retrying({ utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) }) == 0 else {
            throw FileSystemError(operation: .setAttributes, path: path, code: errno)
        }
    }

    static func futimens(_ fd: Int32, seconds: Int64, path: String) throws(FileSystemError) {
        var times = [timespec(tv_sec: time_t(seconds), tv_nsec: 0), timespec(tv_sec: time_t(seconds), tv_nsec: 0)]
        guard retrying({ Glibc.futimens(fd, &times) }) == 0 else {
            throw FileSystemError(operation: .setAttributes, path: path, code: errno)
        }
    }

    package static func symlink(_ target: String, at path: String) throws(FileSystemError) {
        try disk(.symlink, path) { () throws(FileSystemError) in
            guard retrying({ Glibc.symlink(target, path) }) == 0 else {
                throw FileSystemError(operation: .symlink, path: path, code: errno)
            }
        }
    }

    static func link(_ existing: String, at path: String) throws(FileSystemError) {
        try disk(.link, path, existing) { () throws(FileSystemError) in
            guard retrying({ Glibc.link(existing, path) }) == 0 else {
                throw FileSystemError(operation: .link, path: path, code: errno)
            }
        }
    }

    /// `syncfs(2)`: makes every file of the file system holding `fd` durable, in one call.
    static func syncfs(_ fd: Int32, path: String) throws(FileSystemError) {
        try disk(.syncfs, path) { () throws(FileSystemError) in
            guard retrying({ backstage_syncfs(fd) }) == 0 else {
                throw FileSystemError(operation: .fsync, path: path, code: errno)
            }
        }
    }

    package static func unlink(_ path: String) throws(FileSystemError) {
        try disk(.unlink, path, victim: path) { () throws(FileSystemError) in
            guard retrying({ Glibc.unlink(path) }) == 0 else {
                throw FileSystemError(operation: .unlink, path: path, code: errno)
            }
        }
    }

    static func rmdir(_ path: String) throws(FileSystemError) {
        try disk(.rmdir, path) { () throws(FileSystemError) in
            guard retrying({ Glibc.rmdir(path) }) == 0 else {
                throw FileSystemError(operation: .rmdir, path: path, code: errno)
            }
        }
    }

    static func mkdir(_ path: String, _ mode: mode_t) throws(FileSystemError) {
        try disk(.mkdir, path) { () throws(FileSystemError) in
            guard retrying({ Glibc.mkdir(path, mode) }) == 0 else {
                throw FileSystemError(operation: .mkdir, path: path, code: errno)
            }
        }
    }

    /// The clock the kernel stamps a file's change time with: the real time at its last tick
    /// (`CLOCK_REALTIME_COARSE`), in nanoseconds.
    static func stampClock() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    static func sleep(microseconds: UInt32) {
        usleep(microseconds)
    }

    // MARK: The launch check's calls: C paths built on the stack, no error values allocated.

    /// `lstat` of a path built on the stack; nil when it fails (nothing there, or unreadable).
    package static func lstat(_ path: UnsafePointer<CChar>) -> stat? {
        var st = stat()
        return retrying { Glibc.lstat(path, &st) } == 0 ? st : nil
    }

    /// Opens a regular file for reading without following a link or blocking on a FIFO; -1 with
    /// `errno` set on failure.
    package static func openForReading(_ path: UnsafePointer<CChar>) -> Int32 {
        retrying { Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
    }

    /// `fstat`, nil when it fails.
    package static func fstat(_ fd: Int32) -> stat? {
        var st = stat()
        return Glibc.fstat(fd, &st) == 0 ? st : nil
    }

    /// Reads from `offset` until `buffer` is full or the file ends; the bytes read.
    package static func preadFully(
        _ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String
    ) throws(FileSystemError) -> Int {
        var filled = 0
        while filled < buffer.count {
            let n = try pread(
                fd, UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), offset: offset + Int64(filled),
                path: path)
            if n == 0 { break }
            filled += n
        }
        return filled
    }

    /// Reads from offset 0 until `buffer` is full or the file ends; the bytes read.
    package static func preadFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var filled = 0
        while filled < buffer.count {
            let n = retrying { Glibc.pread(fd, buffer.baseAddress! + filled, buffer.count - filled, off_t(filled)) }
            if n <= 0 { break }
            filled += n
        }
        return filled
    }

    /// `readlink` into `buffer`: the target's length, or -1 when `path` is no link.
    package static func readLink(_ path: String, into buffer: UnsafeMutableBufferPointer<CChar>) -> Int {
        path.withCString { Glibc.readlink($0, buffer.baseAddress!, buffer.count) }
    }

    static func access(_ path: String, _ mode: Int32) -> Bool {
        Glibc.access(path, mode) == 0
    }

    package static func flockExclusive(_ fd: Int32, blocking: Bool, path: String) throws(FileSystemError) -> Bool {
        if retrying({ callFlock(fd, LOCK_EX | (blocking ? 0 : LOCK_NB)) }) == 0 { return true }
        if errno == EWOULDBLOCK { return false }
        throw FileSystemError(operation: .lock, path: path, code: errno)
    }

    /// `realpath(3)`: the absolute path with every link resolved, or nil when it does not resolve.
    static func realPath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// True when an entry of `path` (not `.` or `..`) satisfies `predicate`, given the name's bytes:
    /// one pass of `readdir`, no `String` per entry, nothing sorted. The launch path's listing.
    static func anyEntry(
        of path: String, where predicate: (UnsafeBufferPointer<UInt8>) -> Bool
    ) throws(FileSystemError) -> Bool {
        guard let dir = opendir(path) else { throw FileSystemError(operation: .list, path: path, code: errno) }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let found = withUnsafeBytes(of: entry.pointee.d_name) { raw -> Bool in
                let bytes = raw.bindMemory(to: UInt8.self)
                let length = strnlen(raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count)
                let name = UnsafeBufferPointer(rebasing: bytes[..<length])
                if name.count <= 2 && name.allSatisfy({ $0 == UInt8(ascii: ".") }) { return false }
                return predicate(name)
            }
            if found { return true }
        }
        return false
    }

    static func listDirectory(_ path: String) throws(FileSystemError) -> [String] {
        guard let dir = opendir(path) else { throw FileSystemError(operation: .list, path: path, code: errno) }
        defer { closedir(dir) }
        return names(of: dir)
    }
}

extension Syscalls {
    /// The names an open directory stream has left (not `.` or `..`), unsorted.
    private static func names(of dir: OpaquePointer) -> [String] {
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

extension Syscalls {
    // MARK: A folder's entries by its descriptor: each name looked up in its folder, not from `/`.

    /// Opens the folder `name` of the open folder `parent` (`AT_FDCWD`: `name` is a path), without
    /// following a link unless `followingLink`. `path` names it in the error.
    static func openFolder(
        _ name: String, in parent: Int32, followingLink: Bool, path: () -> String
    ) throws(FileSystemError) -> Int32 {
        let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (followingLink ? 0 : O_NOFOLLOW)
        let fd = name.withCString { name in retrying { Glibc.openat(parent, name, flags) } }
        guard fd >= 0 else { throw FileSystemError(operation: .list, path: path(), code: errno) }
        return fd
    }

    /// The names of the open folder `folder` (not `.` or `..`), unsorted; `folder` stays open.
    static func listFolder(_ folder: Int32, path: () -> String) throws(FileSystemError) -> [String] {
        let copy = dup(folder)
        guard copy >= 0, let dir = fdopendir(copy) else {
            let code = errno
            if copy >= 0 { _ = Glibc.close(copy) }
            throw FileSystemError(operation: .list, path: path(), code: code)
        }
        defer { closedir(dir) }
        // From the start: the descriptor is shared with `folder`, whose offset a listing moves.
        rewinddir(dir)
        return names(of: dir)
    }

    /// `fstatat` of `name` in the open folder `folder`, not following a link; nil when nothing is there.
    package static func lstat(_ name: String, in folder: Int32, path: () -> String) throws(FileSystemError) -> stat? {
        var st = stat()
        guard name.withCString({ name in retrying { fstatat(folder, name, &st, AT_SYMLINK_NOFOLLOW) } }) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw FileSystemError(operation: .stat, path: path(), code: errno)
        }
        return st
    }

    /// Opens the file `name` of the open folder `folder` for reading, never through a link nor
    /// blocking on a FIFO.
    package static func openForReading(
        _ name: String, in folder: Int32, path: () -> String
    ) throws(FileSystemError) -> Int32 {
        let fd = name.withCString { name in
            retrying { Glibc.openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        }
        guard fd >= 0 else { throw FileSystemError(operation: .open, path: path(), code: errno) }
        return fd
    }

    /// ``pread(_:_:offset:path:)`` whose path is made only for an error.
    static func pread(
        _ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int64, path: () -> String
    ) throws(FileSystemError) -> Int {
        let n = retrying { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
        guard n >= 0 else { throw FileSystemError(operation: .read, path: path(), code: errno) }
        return n
    }

    /// Whether any of `length` bytes of the open file `fd` from `offset` is in the page cache; nil
    /// when the kernel cannot say (before Linux 6.5). Reads nothing.
    static func isCached(_ fd: Int32, offset: Int64, length: Int64) -> Bool? {
        switch retrying({ backstage_is_cached(fd, offset, length) }) {
        case 1: true
        case 0: false
        default: nil
        }
    }

    /// ``willNeed(_:length:)`` of the file `name` of the open folder `folder`.
    static func willNeed(_ name: String, in folder: Int32, length: Int64) {
        let fd = name.withCString { name in
            retrying { Glibc.openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        }
        guard fd >= 0 else { return }
        advise(fd, POSIX_FADV_WILLNEED, length: length)
        _ = Glibc.close(fd)
    }
}

// Free functions, so the names resolve to the C functions rather than the structs of the same name.
private func callStatvfs(_ path: String, _ buffer: inout Glibc.statvfs) -> Int32 { statvfs(path, &buffer) }
private func callFlock(_ fd: Int32, _ operation: Int32) -> Int32 { flock(fd, operation) }
