import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The calls of the launch check (``Upgrader/needsUpgrade(_:_:)``) and of the launch record it
/// reads: paths built on the stack, no allocation, no more system calls than the answer needs.
extension FileSystem {
    /// True when something (a link included) is at `location`: one `lstat`, its path built on
    /// the stack. The launch check's test.
    package func exists(_ location: ContainerLocation, in container: AppContainer) -> Bool {
        #if BACKSTAGE_FAULT_INJECTION
        if faults != nil { return exists(location.filePath(in: container)) }
        #endif
        return location.withFilePath(in: container) { path in
            var st = stat()
            return Syscalls.retrying { Glibc.lstat(path, &st) } == 0
        } ?? exists(location.filePath(in: container))
    }

    /// The status of what is at `location` (a link itself, not its target), nil when nothing is
    /// there or it cannot be read: one `lstat`, its path built on the stack.
    package func status(_ location: ContainerLocation, in container: AppContainer) -> FileStatus? {
        #if BACKSTAGE_FAULT_INJECTION
        if faults != nil { return (try? status(location.filePath(in: container))) ?? nil }
        #endif
        return location.withFilePath(in: container) { path -> FileStatus? in
            var st = stat()
            return Syscalls.retrying { Glibc.lstat(path, &st) } == 0 ? FileStatus(st) : nil
        } ?? ((try? status(location.filePath(in: container))) ?? nil)
    }

    /// The status and first `count` bytes of the regular file at `location` (never through a
    /// link), nil when there is none or it cannot be read: one `open`, one `pread`, one `fstat`.
    /// `absent` is set when nothing is there at all (`ENOENT`).
    package func statusAndPrefix(_ location: ContainerLocation, in container: AppContainer, count: Int, absent: inout Bool) -> (FileStatus, [UInt8])? {
        #if BACKSTAGE_FAULT_INJECTION
        if faults != nil {
            let path = location.filePath(in: container)
            absent = !exists(path)
            guard let bytes = try? readPrefix(path, count: count), let status = try? status(path) else { return nil }
            return (status, bytes)
        }
        #endif
        var error: Int32 = 0
        let fd: Int32 = location.withFilePath(in: container) { path -> Int32 in
            let fd: Int32 = Syscalls.retrying { Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
            if fd < 0 { error = errno }
            return fd
        } ?? -1
        absent = fd < 0 && error == ENOENT
        guard fd >= 0 else { return nil }
        defer { Syscalls.close(fd) }
        var st = stat()
        guard Glibc.fstat(fd, &st) == 0 else { return nil }
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var filled = 0
            while filled < count {
                let n = Syscalls.retrying { Glibc.pread(fd, buffer.baseAddress! + filled, count - filled, off_t(filled)) }
                if n <= 0 { break }
                filled += n
            }
            initialized = filled
        }
        return (FileStatus(st), bytes)
    }

    /// Calls `body` with the target of the symbolic link at `path`, read onto the stack; nil when
    /// there is no link (or its target is longer than 4 KB).
    package func withLink<R>(_ path: String, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        // 1 KB: on the stack (a record is about 100 bytes); a longer target is read again in 4 KB.
        let short = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer -> R?? in
            let count = path.withCString { Glibc.readlink($0, buffer.baseAddress!, buffer.count) }
            guard count >= 0 else { return .some(nil) }
            guard count < buffer.count else { return nil }
            return .some(body(UnsafeRawBufferPointer(start: buffer.baseAddress!, count: count)))
        }
        if let short { return short }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 4096) { buffer -> R? in
            let count = path.withCString { Glibc.readlink($0, buffer.baseAddress!, buffer.count) }
            guard count >= 0, count < buffer.count else { return nil }
            return body(UnsafeRawBufferPointer(start: buffer.baseAddress!, count: count))
        }
    }

    /// Makes `path` a symbolic link to `target`, durably: a link beside it, renamed over it, the
    /// folder fsynced.
    package func writeLinkAtomically(_ target: String, to path: String) throws(FileSystemError) {
        let temp = (path as NSString).deletingLastPathComponent + "/" + TemporaryName.beside((path as NSString).lastPathComponent)
        try? Syscalls.unlink(temp)
        try inject(.symlink, temp)
        try Syscalls.symlink(target, at: temp)
        try rename(temp, to: path, replacing: true)
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }
}
