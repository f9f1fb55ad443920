import BackstageSystem
import Foundation

/// The calls of the launch check (``Upgrader/needsUpgrade(_:_:)``) and of the launch record it
/// reads: paths built on the stack, no allocation, no more system calls than the answer needs.
/// They go through ``Syscalls`` like every other call, and test builds inject faults into this
/// same path (a faulted call fails as the system call would), so the path users run is the one
/// tested.
extension FileSystem {
    /// True when something (a link included) is at `location`: one `lstat`, its path built on
    /// the stack. The launch check's test.
    package func exists(_ location: ContainerLocation, in container: AppContainer) -> Bool {
        location.withFilePath(in: container) { path in
            !injectsFault(.stat, path) && Syscalls.lstat(path) != nil
        } ?? exists(location.filePath(in: container))
    }

    /// The status of what is at `location` (a link itself, not its target), nil when nothing is
    /// there or it cannot be read: one `lstat`, its path built on the stack.
    package func status(_ location: ContainerLocation, in container: AppContainer) -> FileStatus? {
        location.withFilePath(in: container) { path -> FileStatus? in
            if injectsFault(.stat, path) { return nil }
            return Syscalls.lstat(path).map(FileStatus.init)
        } ?? ((try? status(location.filePath(in: container))) ?? nil)
    }

    /// The status and first `count` bytes of the regular file at `location` (never through a
    /// link), nil when there is none or it cannot be read: one `open`, one `pread`, one `fstat`.
    /// `absent` is set when nothing is there at all (`ENOENT`).
    package func statusAndPrefix(
        _ location: ContainerLocation, in container: AppContainer, count: Int, absent: inout Bool
    ) -> (FileStatus, [UInt8])? {
        var error: Int32 = 0
        let fd: Int32 =
            location.withFilePath(in: container) { path -> Int32 in
                if injectsFault(.open, path) {
                    error = EIO
                    return -1
                }
                let fd = Syscalls.openForReading(path)
                if fd < 0 { error = Syscalls.lastErrno }
                return fd
            } ?? -1
        absent = fd < 0 && error == ENOENT
        guard fd >= 0 else { return nil }
        defer { Syscalls.close(fd) }
        guard let st = Syscalls.fstat(fd) else { return nil }
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = Syscalls.preadFully(fd, UnsafeMutableRawBufferPointer(buffer))
        }
        return (FileStatus(st), bytes)
    }

    /// Calls `body` with the target of the symbolic link at `path`, read onto the stack; nil when
    /// there is no link (or its target is longer than 4 KB). Inlined: called, it would have the
    /// launch check copy the container and the plan its `body` reads (a retain of each string).
    @inline(__always)
    package func withLink<R>(_ path: String, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        #if BACKSTAGE_FAULT_INJECTION
            if let faults, (try? faults.check(.readlink, path)) == nil { return nil }
        #endif
        // 1 KB: on the stack (a record is about 100 bytes); a longer target is read again in 4 KB.
        let short = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer -> R?? in
            let count = Syscalls.readLink(path, into: buffer)
            guard count >= 0 else { return .some(nil) }
            guard count < buffer.count else { return nil }
            return .some(body(UnsafeRawBufferPointer(start: buffer.baseAddress!, count: count)))
        }
        if let short { return short }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 4096) { buffer -> R? in
            let count = Syscalls.readLink(path, into: buffer)
            guard count >= 0, count < buffer.count else { return nil }
            return body(UnsafeRawBufferPointer(start: buffer.baseAddress!, count: count))
        }
    }

    /// Makes `path` a symbolic link to `target`, durably: a link beside it, renamed over it, the
    /// folder fsynced.
    package func writeLinkAtomically(_ target: String, to path: String) throws(FileSystemError) {
        let temp =
            (path as NSString).deletingLastPathComponent + "/"
            + TemporaryName.beside((path as NSString).lastPathComponent)
        try? Syscalls.unlink(temp)
        try inject(.symlink, temp)
        try Syscalls.symlink(target, at: temp)
        try rename(temp, to: path, replacing: true)
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// True when a test build's injected fault fails `operation` on `path` (the path is copied
    /// into a string only then: the launch check allocates nothing otherwise).
    @inline(__always)
    private func injectsFault(_ operation: FileSystemError.Operation, _ path: UnsafePointer<CChar>) -> Bool {
        #if BACKSTAGE_FAULT_INJECTION
            if let faults { return (try? faults.check(operation, String(cString: path))) == nil }
        #endif
        return false
    }
}
