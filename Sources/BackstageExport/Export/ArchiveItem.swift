import Backstage

/// One entry an export writes, decided before any byte is: its path in the archive (a folder's
/// ends in `/`), what it holds, its normalised permissions and its (clamped) modification time.
struct ArchiveItem: Sendable {
    enum Content: Sendable {
        case directory
        /// A regular file: where to read it, and the size it had when the tree was scanned.
        case file(source: String, size: Int64)
        case symlink(target: String)
    }

    var path: String
    var content: Content
    var mode: UInt32
    var modified: Int64

    /// What a ``ReadAhead`` reads of it: a file's content; nil for a folder or a link.
    var readAheadFile: ReadAhead.File? {
        if case .file(let source, let size) = content { ReadAhead.File(path: source, bytes: size) } else { nil }
    }

    /// Bytes of content (a file's size; 0 for a folder or a link).
    var bytes: Int64 {
        if case .file(_, let size) = content { size } else { 0 }
    }
}

extension ArchiveWriter {
    /// Writes `item`'s header then its bytes, read through `buffer`; `chunkWritten` is called
    /// with the size of each chunk once it is written (progress, cancellation).
    ///
    /// - throws: ``ArchiveError`` when the file's size changed since the scan, libarchive's or
    ///   the sink's error, or the `FileSystemError` of reading the file.
    func write(_ item: ArchiveItem, buffer: UnsafeMutableRawBufferPointer, fileSystem: FileSystem, chunkWritten: (Int) throws -> Void) throws {
        switch item.content {
        case .directory:
            try writeHeader(path: item.path, kind: .directory, size: 0, mode: item.mode, modified: item.modified)
        case .symlink(let target):
            try writeHeader(path: item.path, kind: .symlink, size: 0, mode: item.mode, modified: item.modified, linkTarget: target)
        case .file(let source, let size):
            try writeHeader(path: item.path, kind: .file, size: size, mode: item.mode, modified: item.modified)
            let written = try fileSystem.readChunks(source, into: buffer) { chunk in
                try writeData(chunk, entry: item.path)
                try chunkWritten(chunk.count)
            }
            guard written == size else {
                throw ArchiveError(code: -30, message: "the file changed size while it was archived", archivePath: path, entryPath: item.path)
            }
        }
    }
}
