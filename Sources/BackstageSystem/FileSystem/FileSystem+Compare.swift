import Foundation

/// The byte-for-byte comparison every copy of a move ends with: ``contentsEqual(_:_:progress:)``,
/// and the windows ``copyVerified(_:to:progress:)`` compares while it copies.
extension FileSystem {
    /// True when two regular files hold the same bytes, compared in 8 MiB windows (``WindowComparer``):
    /// memory stays bounded whatever the size.
    package func contentsEqual(_ a: String, _ b: String, progress: (Int64) throws -> Void = { _ in }) throws -> Bool {
        try inject(.read, b)
        let fa = try Syscalls.open(a, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fa) }
        let fb = try Syscalls.open(b, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fb) }
        let size = Int64(try Syscalls.fstat(fa, path: a).st_size)
        guard size == Int64(try Syscalls.fstat(fb, path: b).st_size) else { return false }
        let window: Int64 = 8 << 20
        let comparer = WindowComparer(self)
        var offset: Int64 = 0
        while offset < size {
            let length = Int(min(window, size - offset))
            guard try comparer.equal(fa, a, fb, b, offset: offset, length: length) else { return false }
            offset += Int64(length)
            try progress(offset)
        }
        // A file that grew meanwhile holds bytes no window compared: the sizes must still be the
        // ones compared.
        let sizeA = Int64(try Syscalls.fstat(fa, path: a).st_size)
        let sizeB = Int64(try Syscalls.fstat(fb, path: b).st_size)
        return sizeA == size && sizeB == size
    }

    /// Compares windows of two open files, read a piece at a time into two buffers kept from one
    /// window to the next: nothing is mapped, so no signal can come of a file shortened by another
    /// process or a page the disk cannot return (a short read or an error naming the file), and
    /// nothing of the process's signal handling is touched. 128 KiB pieces: both buffers stay in a
    /// core's L2 cache, so the kernel's copy into them and the comparison that reads them back do
    /// not go through main memory a second time.
    ///
    /// Mapped windows compared under a `SIGBUS` handler were measured against these reads before
    /// (the 9.9 GB store relocated to `/dev/shm` from a cold cache, beside `cp` + fsync + `rm` +
    /// fsync of the same store: read 1.09–1.18× over six runs, mapped 1.10–1.11× over three) and
    /// removed: a library must not own a process's signals.
    final class WindowComparer {
        static let piece = 128 << 10
        private let fileSystem: FileSystem
        private let buffers = UnsafeMutableRawBufferPointer.allocate(byteCount: 2 * piece, alignment: 4096)

        init(_ fileSystem: FileSystem) { self.fileSystem = fileSystem }

        deinit { buffers.deallocate() }

        /// True when `length` bytes at `offset` are the same in both files.
        func equal(
            _ fa: Int32, _ a: String, _ fb: Int32, _ b: String, offset: Int64, length: Int
        ) throws(FileSystemError) -> Bool {
            #if BACKSTAGE_FAULT_INJECTION
                if let faults = fileSystem.faults, faults.shouldShortenWhileCompared(b) {
                    let writer = try Syscalls.open(b, O_WRONLY | O_NOFOLLOW)
                    defer { Syscalls.close(writer) }
                    try Syscalls.ftruncate(writer, 0, path: b)
                }
            #endif
            return try readEqual(fa, a, fb, b, offset: offset, length: length)
        }

        private func readEqual(
            _ fa: Int32, _ a: String, _ fb: Int32, _ b: String, offset: Int64, length: Int
        ) throws(FileSystemError) -> Bool {
            let x = UnsafeMutableRawBufferPointer(rebasing: buffers[..<Self.piece])
            let y = UnsafeMutableRawBufferPointer(rebasing: buffers[Self.piece...])
            var done = 0
            while done < length {
                let count = min(Self.piece, length - done)
                let at = offset + Int64(done)
                let readA = try Syscalls.preadFully(
                    fa, UnsafeMutableRawBufferPointer(rebasing: x[..<count]), at: at, path: a)
                let readB = try Syscalls.preadFully(
                    fb, UnsafeMutableRawBufferPointer(rebasing: y[..<count]), at: at, path: b)
                guard readA == count, readB == count, memcmp(x.baseAddress!, y.baseAddress!, count) == 0 else {
                    return false
                }
                done += count
            }
            return true
        }
    }
}
