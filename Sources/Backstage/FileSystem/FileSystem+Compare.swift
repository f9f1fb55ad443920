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
        // A file shortened meanwhile inside a mapped window's last page reads as zeros there, not as
        // a fault: the sizes must still be the ones compared.
        let sizeA = Int64(try Syscalls.fstat(fa, path: a).st_size)
        let sizeB = Int64(try Syscalls.fstat(fb, path: b).st_size)
        return sizeA == size && sizeB == size
    }

    /// Compares windows of two open files.
    ///
    /// A window of 1 MiB or more (the callers' windows are 8 MiB) is compared through two
    /// read-only mappings (``Syscalls/guardedCompare(_:_:count:)``): nothing is copied into this
    /// process. A verified copy's comparison runs beside the copy that fills the page cache; reading
    /// instead copies every page once more, and each `pread` moves the pages it marks accessed on the
    /// kernel's LRU lists at once, under the lock the copy takes too (a mapping's accessed pages are
    /// marked when it is unmapped). The 9.9 GB store relocated to `/dev/shm` from a cold cache,
    /// static release builds, each run beside `cp` + fsync + `rm` + fsync of the same store: read,
    /// 1.09–1.18× over six runs; mapped, 1.10–1.11× over three (7.40–7.91 s), peak RSS 42 MB
    /// against 26 MB.
    ///
    /// A file shortened by another process while mapped, or a page the disk cannot return, faults
    /// (SIGBUS); the guard turns the fault into an answer and the window is read instead, which
    /// finds the short file (not equal) or throws the error, naming the file. Smaller windows, and
    /// all of them where files cannot be mapped, are read a piece at a time into two buffers kept
    /// from one window to the next. 128 KiB pieces: both buffers stay in a core's L2 cache, so the
    /// kernel's copy into them and the comparison that reads them back do not go through main
    /// memory a second time.
    final class WindowComparer {
        static let piece = 128 << 10
        static let mappedAtLeast = 1 << 20
        private let fileSystem: FileSystem
        private let buffers = UnsafeMutableRawBufferPointer.allocate(byteCount: 2 * piece, alignment: 4096)
        /// False once the files could not be mapped: read from then on.
        private var mapping = true

        init(_ fileSystem: FileSystem) { self.fileSystem = fileSystem }

        deinit { buffers.deallocate() }

        /// True when `length` bytes at `offset` are the same in both files.
        func equal(
            _ fa: Int32, _ a: String, _ fb: Int32, _ b: String, offset: Int64, length: Int
        ) throws(FileSystemError) -> Bool {
            if mapping, length >= Self.mappedAtLeast {
                switch mappedEqual(fa, a, fb, b, offset: offset, length: length) {
                case .equal: return true
                case .different: return false
                case .faulted: break
                case .unguarded, nil: mapping = false
                }
            }
            return try readEqual(fa, a, fb, b, offset: offset, length: length)
        }

        /// Maps `length` bytes at `offset` of both files and compares them under the SIGBUS
        /// guard; nil when either cannot be mapped.
        private func mappedEqual(
            _ fa: Int32, _ a: String, _ fb: Int32, _ b: String, offset: Int64, length: Int
        ) -> Syscalls.GuardedComparison? {
            let start = offset - offset % Int64(Syscalls.pageSize)
            let skip = Int(offset - start), span = length + skip
            guard let x = try? Syscalls.mapReadOnly(fa, offset: start, length: span, path: a) else { return nil }
            defer { Syscalls.unmap(x, length: span) }
            guard let y = try? Syscalls.mapReadOnly(fb, offset: start, length: span, path: b) else { return nil }
            defer { Syscalls.unmap(y, length: span) }
            #if BACKSTAGE_FAULT_INJECTION
                if let faults = fileSystem.faults, faults.shouldShortenWhileCompared(b),
                    let writer = try? Syscalls.open(b, O_WRONLY | O_NOFOLLOW)
                {
                    try? Syscalls.ftruncate(writer, 0, path: b)
                    Syscalls.close(writer)
                }
            #endif
            return Syscalls.guardedCompare(x + skip, y + skip, count: length)
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
