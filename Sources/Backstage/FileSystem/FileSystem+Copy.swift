import Foundation

extension FileSystem {
    /// Copies `from` to a new file `to` like ``copyFile(_:to:mode:progress:)`` and proves the copy
    /// byte-identical, on a second thread that overlaps the copy instead of following it.
    ///
    /// On one file system the kernel copies (``copyFile(_:to:mode:progress:)``) and the second
    /// thread compares each 8 MiB window of both files as soon as it is written. Across file
    /// systems the bytes pass through buffers of this process anyway: the source is read once into
    /// a ring of buffers and written, and the second thread reads each written piece back from the
    /// destination and compares it with the buffer it was written from, so the source is never
    /// read twice (from a cold cache, a second read of a large store came from the disk again).
    ///
    /// - returns: The bytes copied, and whether the copy matches the source.
    package func copyVerified(
        _ from: String, to: String, progress: (Int64) throws -> Void = { _ in }
    ) throws -> (bytes: Int64, identical: Bool) {
        if let source = try? Syscalls.lstat(from), let folder = try? Syscalls.lstat(Self.folder(of: to)),
            source.st_dev != folder.st_dev
        {
            return try copyThroughRing(from, to: to, progress: progress)
        }
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

    /// The copy loop of ``copyFile(_:to:mode:progress:)``, then the fsync.
    private func copyContents(
        _ src: Int32, _ from: String, to dst: Int32, _ to: String, progress: (Int64) throws -> Void
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

    private static func folder(of path: String) -> String {
        let parent = (path as NSString).deletingLastPathComponent
        return parent.isEmpty ? "." : parent
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
        var offset: Int64 = 0
        while let available = state.waitForProgress(beyond: offset, window: window) {
            let length = Int(min(window, available - offset))
            guard try Self.windowsEqual(fa, a, fb, b, offset: offset, length: length) else { return false }
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

    /// Across file systems: the source read once, 2 MiB at a time, into a ring of four buffers and
    /// written from them; the verifier reads each piece back from the destination and compares it
    /// with its buffer before the buffer is reused. Then the destination is fsynced, and both files
    /// must have exactly the bytes copied (nothing appended to the source behind the copy's back).
    /// Memory: 10 MiB, whatever the file's size.
    fileprivate func copyThroughRing(
        _ from: String, to: String, progress: (Int64) throws -> Void
    ) throws -> (bytes: Int64, identical: Bool) {
        try withNewCopy(of: from, at: to, mode: nil) { src, dst in
            try copyThroughRing(src, from, to: dst, to, progress: progress)
        }
    }

    private func copyThroughRing(
        _ src: Int32, _ from: String, to dst: Int32, _ to: String, progress: (Int64) throws -> Void
    ) throws -> (bytes: Int64, identical: Bool) {
        let ring = BufferRing(count: 4, size: 2 << 20)
        defer { ring.deallocate() }
        let finished = DispatchSemaphore(value: 0)
        let verifier = Thread {
            defer { finished.signal() }
            ring.verify(against: dst, path: to)
        }
        verifier.stackSize = 1 << 20
        verifier.start()
        var copied: Int64 = 0
        do {
            while let slot = ring.emptySlot() {
                try inject(.copy, to)
                try inject(.write, to)
                let buffer = ring.buffer(slot)
                let n = try Syscalls.preadFully(src, buffer, at: copied, path: from)
                if n == 0 { break }
                try Syscalls.writeAll(dst, UnsafeRawBufferPointer(rebasing: buffer[..<n]), path: to)
                #if BACKSTAGE_FAULT_INJECTION
                    if let faults, faults.shouldCorrupt(to) {
                        Syscalls.overwriteByte(dst, at: copied + Int64(n) - 1)
                    }
                #endif
                ring.fill(slot, offset: copied, count: n)
                copied += Int64(n)
                try progress(copied)
            }
        } catch {
            ring.finish()
            finished.wait()
            throw error
        }
        ring.finish()
        finished.wait()
        try inject(.fsync, to)
        try Syscalls.fsync(dst, path: to)
        let sourceSize = Int64(try Syscalls.fstat(src, path: from).st_size)
        let copySize = Int64(try Syscalls.fstat(dst, path: to).st_size)
        return (copied, ring.allEqual && sourceSize == copied && copySize == copied)
    }
}

/// The copier's buffers and the verifier's queue: the copier fills an empty slot and hands it
/// over; the verifier compares it with what the destination holds there and empties it. A
/// mismatch or a failed read ends the copy early (no empty slot is handed out again).
private final class BufferRing: @unchecked Sendable {
    private let condition = NSCondition()
    private let storage: UnsafeMutableRawBufferPointer
    private let size: Int
    private let count: Int
    private var offsets: [Int64]
    private var lengths: [Int]
    /// Slots `[verified, filled)` (modulo `count`) wait for the verifier.
    private var filled = 0
    private var verified = 0
    private var finished = false
    private var mismatch = false

    init(count: Int, size: Int) {
        self.count = count
        self.size = size
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: count * size, alignment: 4096)
        offsets = Array(repeating: 0, count: count)
        lengths = Array(repeating: 0, count: count)
    }

    func deallocate() { storage.deallocate() }

    func buffer(_ slot: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[slot * size..<(slot + 1) * size])
    }

    /// The next slot to fill once the verifier is done with it; nil after a mismatch.
    func emptySlot() -> Int? {
        condition.lock()
        defer { condition.unlock() }
        while filled - verified >= count && !mismatch { condition.wait() }
        return mismatch ? nil : filled % count
    }

    func fill(_ slot: Int, offset: Int64, count bytes: Int) {
        condition.withLock {
            offsets[slot] = offset
            lengths[slot] = bytes
            filled += 1
            condition.broadcast()
        }
    }

    /// No more slots will be filled (the copy ended, or failed).
    func finish() {
        condition.withLock {
            finished = true
            condition.broadcast()
        }
    }

    /// True when every piece handed over matched the destination.
    var allEqual: Bool { condition.withLock { !mismatch } }

    /// The verifier: until the copier finishes, compares each filled slot with `length` bytes of
    /// `fd` read back at its offset.
    func verify(against fd: Int32, path: String) {
        let readBack = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 4096)
        defer { readBack.deallocate() }
        while true {
            condition.lock()
            while filled == verified && !finished && !mismatch { condition.wait() }
            guard filled > verified, !mismatch else {
                condition.unlock()
                return
            }
            let slot = verified % count
            let offset = offsets[slot], length = lengths[slot]
            condition.unlock()
            let equal =
                ((try? Syscalls.preadFully(
                    fd, UnsafeMutableRawBufferPointer(rebasing: readBack[..<length]), at: offset, path: path)) == length)
                && memcmp(readBack.baseAddress!, buffer(slot).baseAddress!, length) == 0
            condition.withLock {
                if !equal { mismatch = true }
                verified += 1
                condition.broadcast()
            }
        }
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
