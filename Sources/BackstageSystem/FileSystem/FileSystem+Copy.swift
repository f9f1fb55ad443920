import Foundation

extension FileSystem {
    /// Copies `from` to a new file `to` like ``copyFile(_:to:mode:progress:)`` and proves the copy
    /// byte-identical, on a second thread that overlaps the copy instead of following it.
    ///
    /// The kernel copies (``copyFile(_:to:mode:progress:)``: `copy_file_range` on one file system,
    /// `sendfile` across two), so the bytes never pass through this process on their way. The
    /// second thread compares each 8 MiB window of both files as soon as it is written, while the
    /// source's window is still in the page cache the copy just filled.
    ///
    /// A copy is verified against what was locked: given `locked`, the state `from` had when the
    /// caller took its lock, the source must still be that version once the copy and the comparison
    /// are done, and the copy must have read exactly its size. Another process truncating the
    /// source mid-copy leaves two equally short files that compare equal; this check finds it.
    ///
    /// - returns: The bytes copied, and whether the copy matches the source.
    /// - throws: ``FileChanged`` naming `from` when it is no longer the version `locked` describes
    ///   (the copy at `to` is left for the caller to remove, with its other temporaries).
    package func copyVerified(
        _ from: String, to: String, unchangedSince locked: FileStatus? = nil,
        progress: (Int64) throws -> Void = { _ in }
    ) throws -> (bytes: Int64, identical: Bool) {
        let state = VerificationState()
        let window: Int64 = 8 << 20
        let finished = DispatchSemaphore(value: 0)
        let fileSystem = self
        let verifier = Thread {
            defer { finished.signal() }
            do {
                state.setResult(try fileSystem.compareWhileCopying(from, to, state: state, window: window))
            } catch {
                state.setResult(false)
            }
        }
        verifier.stackSize = 1 << 20
        verifier.start()
        let copied: Int64
        do {
            copied = try copyFile(
                from, to: to,
                progress: { bytes in
                    state.publish(bytes)
                    try progress(bytes)
                })
        } catch {
            state.abandon()
            finished.wait()
            throw error
        }
        state.finish(total: copied)
        finished.wait()
        if let locked { try checkUnchanged(from, since: locked, copied: copied) }
        return (copied, state.result)
    }

    /// Copies a regular file into a new file at `to` (created exclusively, never through a
    /// symlink) with the kernel's copy (`FICLONE`, then `copy_file_range`, then read/write),
    /// then fsyncs it. Calls `progress` with the bytes copied so far.
    @discardableResult
    package func copyFile(
        _ from: String, to: String, mode: mode_t? = nil,
        progress: (Int64) throws -> Void = { _ in }
    ) throws -> Int64 {
        try withNewCopy(of: from, at: to, mode: mode) { src, dst in
            try copyContents(src, from, to: dst, to, progress: progress)
        }
    }

    /// ``copyFile(_:to:mode:progress:)`` without the fsync: a scratch copy that no crash needs to
    /// find whole (``cloneTree(_:to:)``).
    @discardableResult
    package func copyFileUnsynced(_ from: String, to: String) throws -> Int64 {
        try withNewCopy(of: from, at: to, mode: nil) { src, dst in
            try copyContents(src, from, to: dst, to, sync: false, progress: { _ in })
        }
    }

    /// The copy loop of ``copyFile(_:to:mode:progress:)``, then (unless not `sync`) the fsync.
    private func copyContents(
        _ src: Int32, _ from: String, to dst: Int32, _ to: String, sync: Bool = true,
        progress: (Int64) throws -> Void
    ) throws -> Int64 {
        var copied: Int64 = 0
        let chunk = 8 << 20
        // The fastest copy the kernel offers for this pair of files: copy_file_range (reflinks on
        // btrfs/xfs, in-kernel copy on one file system), then sendfile (in-kernel, across file
        // systems), then read/write through one reused buffer.
        enum Method { case copyFileRange, sendFile, readWrite }
        var method = Method.copyFileRange
        var buffer: UnsafeMutableRawBufferPointer?
        defer { buffer?.deallocate() }
        // As `cp` does: the kernel reads the source further ahead (from a cold cache, the copy
        // waits for the disk less).
        Syscalls.advise(src, POSIX_FADV_SEQUENTIAL)
        while true {
            try inject(.copy, to)
            try inject(.write, to)
            var n = 0
            switch method {
            case .copyFileRange, .sendFile:
                let result =
                    method == .copyFileRange
                    ? Syscalls.copyFileRange(from: src, to: dst, count: chunk)
                    : Syscalls.sendFile(from: src, to: dst, count: chunk)
                if result >= 0 {
                    n = result
                } else if copied == 0 && [EXDEV, ENOSYS, EINVAL, EOPNOTSUPP, EPERM].contains(Syscalls.lastErrno) {
                    method = method == .copyFileRange ? .sendFile : .readWrite
                    continue
                } else {
                    throw FileSystemError(operation: .copy, path: to, code: Syscalls.lastErrno)
                }
            case .readWrite:
                let chunkBuffer = buffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
                buffer = chunkBuffer
                n = try Syscalls.read(src, chunkBuffer, path: from)
                if n > 0 { try Syscalls.writeAll(dst, UnsafeRawBufferPointer(rebasing: chunkBuffer[..<n]), path: to) }
            }
            if n == 0 { break }
            copied += Int64(n)
            #if BACKSTAGE_FAULT_INJECTION
                if let faults, faults.shouldCorrupt(to) {
                    Syscalls.overwriteByte(dst, at: copied - 1)
                }
            #endif
            try progress(copied)
        }
        guard sync else { return copied }
        try inject(.fsync, to)
        try Syscalls.fsync(dst, path: to)
        return copied
    }

    /// Opens the regular file `from`, creates `to` exclusively (never through a symlink) with the
    /// source's mode exactly (or `mode`) and, as root, its owner — a store moved by a root installer
    /// must stay the app user's — and calls `body` with both descriptors. Both are closed after it;
    /// `to` is removed when anything throws.
    func withNewCopy<R>(
        of from: String, at to: String, mode: mode_t?, _ body: (_ src: Int32, _ dst: Int32) throws -> R
    ) throws -> R {
        try inject(.open, from)
        let src = try Syscalls.open(from, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(src) }
        let srcStatus = FileStatus(try Syscalls.fstat(src, path: from))
        guard srcStatus.kind == .regular else { throw FileSystemError(operation: .copy, path: from, code: EINVAL) }
        try inject(.open, to)
        let dst = try Syscalls.open(to, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        defer { Syscalls.close(dst) }
        do {
            // open's mode passes through the umask: set it exactly.
            if Syscalls.isRoot { try Syscalls.fchown(dst, owner: srcStatus.owner, group: srcStatus.group, path: to) }
            try Syscalls.fchmod(dst, mode ?? srcStatus.mode, path: to)
            return try body(src, dst)
        } catch {
            try? Syscalls.unlink(to)
            throw error
        }
    }

    /// The verifier's side: compares windows of the two files up to what the copier published.
    fileprivate func compareWhileCopying(
        _ a: String, _ b: String, state: VerificationState, window: Int64
    ) throws -> Bool {
        // The destination is created by the copier: wait for its first bytes (or the end).
        guard state.waitForProgress(beyond: 0, window: 1) != nil else {
            return state.total == 0 && contentsEqualIfPresent(a, b)
        }
        let fa = try Syscalls.open(a, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fa) }
        let fb = try Syscalls.open(b, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fb) }
        let comparer = WindowComparer(self)
        var offset: Int64 = 0
        while let available = state.waitForProgress(beyond: offset, window: window) {
            let length = Int(min(window, available - offset))
            guard try comparer.equal(fa, a, fb, b, offset: offset, length: length) else { return false }
            offset += Int64(length)
        }
        guard let total = state.total, offset == total else { return false }
        // Nothing may have been appended to the source behind the copier's back.
        let sizeA = Int64(try Syscalls.fstat(fa, path: a).st_size)
        let sizeB = Int64(try Syscalls.fstat(fb, path: b).st_size)
        return sizeA == total && sizeB == total
    }

    private func contentsEqualIfPresent(_ a: String, _ b: String) -> Bool {
        (try? contentsEqual(a, b)) ?? false
    }
}

/// What the copier has published and the verifier has concluded, under one condition variable.
private final class VerificationState: @unchecked Sendable {
    private let condition = NSCondition()
    private var published: Int64 = 0
    private var finalTotal: Int64?
    private var abandoned = false
    private var identical = false

    func publish(_ bytes: Int64) {
        condition.withLock {
            published = bytes
            condition.signal()
        }
    }

    func finish(total: Int64) {
        condition.withLock {
            published = total
            finalTotal = total
            condition.signal()
        }
    }

    func abandon() {
        condition.withLock {
            abandoned = true
            condition.signal()
        }
    }

    var total: Int64? { condition.withLock { finalTotal } }

    /// Waits until a whole window past `offset` is published, or the copy ended with bytes left;
    /// returns the published size, or nil when there is nothing more to compare.
    func waitForProgress(beyond offset: Int64, window: Int64) -> Int64? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if abandoned { return nil }
            if published - offset >= window { return published }
            if let finalTotal { return finalTotal > offset ? finalTotal : nil }
            condition.wait()
        }
    }

    func setResult(_ value: Bool) { condition.withLock { identical = value } }
    var result: Bool { condition.withLock { identical } }
}
