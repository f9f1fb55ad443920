import Foundation

/// A scratch file with no name: created exclusively, then unlinked at once, so nothing is ever
/// left behind — not after an error, not after a crash. Written and read at explicit offsets
/// (`pwrite`/`pread`), so one thread may read what is written while another appends elsewhere.
/// Its space is counted on the file system it was created in; it is never fsynced.
///
/// Its ``OpenFile/path`` is the name it was created under, for errors (it no longer exists).
package final class ScratchFile: OpenFile, @unchecked Sendable {
    /// Writes all of `buffer` at `offset`.
    package func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(FileSystemError) {
        try Syscalls.pwriteAll(fd, buffer, offset: offset, path: path)
    }

    /// Reads up to `buffer.count` bytes at `offset`; 0 past the end.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileSystemError) -> Int {
        try Syscalls.pread(fd, buffer, offset: offset, path: path)
    }
}

extension FileSystem {
    /// Creates a nameless scratch file at `path` (which must not exist): opened for reading and
    /// writing, then unlinked before it is returned.
    package func createScratchFile(_ path: String) throws(FileSystemError) -> ScratchFile {
        try inject(.open, path)
        let fd = try Syscalls.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        let file = ScratchFile(path: path, fd: fd)
        do {
            try Syscalls.unlink(path)
        } catch {
            file.close()
            throw error
        }
        return file
    }
}
