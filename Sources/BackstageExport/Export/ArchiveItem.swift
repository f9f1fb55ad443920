import Backstage

/// One entry an export writes, decided before any byte is: its path in the archive (a folder's
/// ends in `/`), what it holds, its normalised permissions and its (clamped) modification time.
struct ArchiveItem: Sendable {
    enum Content: Sendable {
        case directory
        /// A regular file: where to read it, and the size it had when the tree was scanned.
        case file(source: String, size: Int64)
        /// A document, read at `root/path`: `root` is one string every document shares, so a
        /// document's item holds one path, not two (100 bytes a file, 100 MB at a million).
        case document(root: String, size: Int64)
        case symlink(target: String)
    }

    var path: String
    var content: Content
    var mode: UInt32
    var modified: Int64

    /// Where a file's content is read; nil for a folder or a link.
    var source: String? {
        switch content {
        case .file(let source, _): source
        case .document(let root, _): root + "/" + path
        case .directory, .symlink: nil
        }
    }

    /// What a ``ReadAhead`` reads of it: a file's content; nil for a folder or a link.
    var readAheadFile: ReadAhead.File? {
        source.map { ReadAhead.File(path: $0, bytes: bytes) }
    }

    /// Bytes of content (a file's size; 0 for a folder or a link).
    var bytes: Int64 {
        switch content {
        case .file(_, let size), .document(_, let size): size
        case .directory, .symlink: 0
        }
    }
}

extension ArchiveWriter {
    /// Writes `item`'s header then its bytes, read through `buffer`; `chunkWritten` is called
    /// with the size of each chunk once it is written (progress, cancellation).
    ///
    /// - throws: ``DocumentChanged`` when the file was written while it was read (or its size
    ///   changed since the scan): the entry does not hold one state of it. libarchive's or the
    ///   sink's error, or the `FileSystemError` of reading the file.
    func write(
        _ item: ArchiveItem, buffer: UnsafeMutableRawBufferPointer, fileSystem: FileSystem,
        chunkWritten: (Int) throws -> Void
    ) throws {
        switch item.content {
        case .directory:
            try writeHeader(path: item.path, kind: .directory, size: 0, mode: item.mode, modified: item.modified)
        case .symlink(let target):
            try writeHeader(
                path: item.path, kind: .symlink, size: 0, mode: item.mode, modified: item.modified, linkTarget: target)
        case .file, .document:
            let size = item.bytes, source = item.source ?? ""
            try writeHeader(path: item.path, kind: .file, size: size, mode: item.mode, modified: item.modified)
            // Never more than the header's size (libarchive would refuse the excess with no message).
            let still = try fileSystem.readChunks(source, count: size, into: buffer) { chunk in
                try writeData(chunk, entry: item.path)
                try chunkWritten(chunk.count)
            }
            guard still else { throw DocumentChanged(path: item.path) }
        }
    }
}

/// A document written while it was archived (an app appending to its log): the entry does not hold
/// one state of it. The exporter reads it again into a still copy, or leaves it out and says so.
struct DocumentChanged: Error, CustomStringConvertible {
    /// The document's path relative to Documents.
    var path: String

    var description: String { "\(path) changed while it was read, each time it was read" }
}
