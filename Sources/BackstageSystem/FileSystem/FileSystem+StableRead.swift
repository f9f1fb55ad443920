import Foundation

extension FileSystem {
    /// Reads the first `count` bytes of `path` in chunks, never more; returns true when the file held
    /// exactly `count` bytes and was not written while it was read (the same size and modification
    /// time before and after). A file an app appends to while it is read gives false: what was
    /// read is not one state of the file.
    package func readChunks(
        _ path: String, count: Int64, into buffer: UnsafeMutableRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Bool {
        let file = try openStable(path)
        defer { file.close() }
        var total: Int64 = 0
        while total < count {
            let wanted = Int(min(Int64(buffer.count), count - total))
            let n = try Syscalls.read(file.fd, UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]), path: path)
            if n == 0 { break }
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            total += Int64(n)
        }
        return try file.isStill(read: total, expected: count)
    }

    /// Copies `path` to `destination` (which must not exist) until one copy is a single state of the
    /// file: its size and modification time the same before and after, at most `attempts` times.
    /// Returns false, with no file left at `destination`, when the file changed during every copy.
    package func copyWhileStill(_ path: String, to destination: String, attempts: Int) throws -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        for _ in 0..<attempts {
            guard let status = try self.status(path), status.kind == .regular else { return false }
            let file = try createNewFile(destination)
            var offset: Int64 = 0
            let still = try readChunks(path, count: status.size, into: buffer) { chunk in
                try file.write(chunk, at: offset)
                offset += Int64(chunk.count)
            }
            if still {
                try file.finish(size: offset, mode: 0o600, modified: Int64(status.modificationTime.tv_sec))
                return true
            }
            file.close()
            try removeFile(destination)
        }
        return false
    }
}

/// A regular file opened to be read whole, with its size and modification time when it was
/// opened: ``isStill(read:expected:)`` says whether what was read of it is one state of it.
package final class StableSource: OpenFile {
    private let before: FileStatus

    init(path: String, fd: Int32, before: FileStatus) {
        self.before = before
        super.init(path: path, fd: fd)
    }

    /// True when `read` bytes were read, and the file held `expected` bytes with the same
    /// modification time when it was opened and now: it was not written while it was read.
    package func isStill(read: Int64, expected: Int64) throws(FileSystemError) -> Bool {
        let after = FileStatus(try Syscalls.fstat(fd, path: path))
        return read == expected && before.size == expected && after.size == expected
            && before.modificationTime.tv_sec == after.modificationTime.tv_sec
            && before.modificationTime.tv_nsec == after.modificationTime.tv_nsec
    }
}

extension FileSystem {
    /// Opens `path` (never through a link) to read it whole, as ``readChunks(_:count:into:_:)`` does.
    package func openStable(_ path: String) throws(FileSystemError) -> StableSource {
        try inject(.read, path)
        let fd = try Syscalls.open(path, O_RDONLY | O_NOFOLLOW)
        do {
            return StableSource(path: path, fd: fd, before: FileStatus(try Syscalls.fstat(fd, path: path)))
        } catch {
            Syscalls.close(fd)
            throw error
        }
    }
}
