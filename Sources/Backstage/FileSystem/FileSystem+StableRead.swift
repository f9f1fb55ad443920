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
        try inject(.read, path)
        let fd = try Syscalls.open(path, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fd) }
        let before = FileStatus(try Syscalls.fstat(fd, path: path))
        var total: Int64 = 0
        while total < count {
            let wanted = Int(min(Int64(buffer.count), count - total))
            let n = try Syscalls.read(fd, UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]), path: path)
            if n == 0 { break }
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            total += Int64(n)
        }
        let after = FileStatus(try Syscalls.fstat(fd, path: path))
        return total == count && before.size == count && after.size == count
            && before.modificationTime.tv_sec == after.modificationTime.tv_sec
            && before.modificationTime.tv_nsec == after.modificationTime.tv_nsec
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
