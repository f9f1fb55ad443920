import Backstage
import Foundation

/// The entries an export writes, in archive order, decided before any byte is written and kept
/// out of memory: each item is a few bytes of a ``Spool`` (its kind, mode, time, size and path),
/// read back in order by each thread that needs them (the writers, the read-ahead). A million
/// documents' items took some 100 MB as a list; here they take the spool's 1 MiB, then its file.
///
/// One thread appends (``append(_:)``), then calls ``finish()``; readers (``reader()``) may then
/// run on several threads at once. ``replace(_:with:)`` swaps an item between two writes of the
/// archive, when no reader runs.
final class ArchiveItems: @unchecked Sendable {
    /// Documents: a document's item is read at `root + "/" + path`.
    let documentRoot: String
    private let spool: Spool
    /// Items appended, less those ``replace(_:with:)`` took out.
    private(set) var count = 0
    /// Bytes of content of the items (files' sizes).
    private(set) var bytes: Int64 = 0
    /// Items replaced since they were appended: by path, their new content, or nil when taken out.
    private var replaced: [String: ArchiveItem.Content?] = [:]
    private var encoded: [UInt8] = []

    init(documentRoot: String, spoolPath: String, memoryLimit: Int, fileSystem: FileSystem) {
        self.documentRoot = documentRoot
        spool = Spool(path: spoolPath, memoryLimit: memoryLimit, fileSystem: fileSystem)
    }

    /// True once the items went to the spool's scratch file.
    var isInFile: Bool { spool.isInFile }

    func append(_ item: ArchiveItem) throws(FileSystemError) {
        encoded.removeAll(keepingCapacity: true)
        Record(item).encode(into: &encoded)
        try spool.append(encoded)
        count += 1
        bytes += item.bytes
    }

    /// Every item is appended: they can be read.
    func finish() throws(FileSystemError) {
        try spool.finish()
    }

    /// Replaces the content of the item at `path` (nil: takes it out of the archive).
    func replace(_ path: String, with content: ArchiveItem.Content?) throws {
        guard let item = try first(where: { $0.path == path }) else { return }
        bytes -= item.bytes
        if let content {
            bytes += ArchiveItem(path: path, content: content, mode: item.mode, modified: item.modified).bytes
        } else {
            count -= 1
        }
        replaced[path] = .some(content)
    }

    /// The first item `predicate` accepts, as the archive holds it.
    func first(where predicate: (ArchiveItem) -> Bool) throws -> ArchiveItem? {
        let reader = self.reader()
        while let item = try reader.next() {
            if predicate(item) { return item }
        }
        return nil
    }

    /// A reader of the items from the first, for one thread.
    func reader() -> Reader {
        Reader(items: self, bytes: SpoolReader(spool))
    }

    /// Reads the items in order, with replacements made.
    final class Reader: @unchecked Sendable {
        let items: ArchiveItems
        private let bytes: SpoolReader
        /// The failure of a read: every later one fails with it (the bytes are no longer read at an
        /// item's start).
        private var failure: FileSystemError?

        init(items: ArchiveItems, bytes: SpoolReader) {
            self.items = items
            self.bytes = bytes
        }

        /// The next item; nil after the last.
        func next() throws(FileSystemError) -> ArchiveItem? {
            if let failure { throw failure }
            while true {
                let decoded: ArchiveItem?
                do {
                    decoded = try Record.decode(from: bytes, documentRoot: items.documentRoot)
                } catch {
                    failure = error
                    throw error
                }
                guard var item = decoded else { return nil }
                guard !items.replaced.isEmpty, let replacement = items.replaced[item.path] else { return item }
                guard let content = replacement else { continue }
                item.content = content
                return item
            }
        }
    }
}

/// An item as the spool holds it: kind (1 byte), mode (4), modification time (8), size (8), then
/// the path and the source or link target, each as a 4-byte length and its UTF-8 bytes;
/// little-endian. A document holds no source: it is read at the documents' root and its path.
private struct Record {
    static let directory: UInt8 = 0, file: UInt8 = 1, document: UInt8 = 2, symlink: UInt8 = 3

    var item: ArchiveItem

    init(_ item: ArchiveItem) { self.item = item }

    func encode(into out: inout [UInt8]) {
        let kind: UInt8, size: Int64, text: String
        switch item.content {
        case .directory: (kind, size, text) = (Self.directory, 0, "")
        case .file(let source, let bytes): (kind, size, text) = (Self.file, bytes, source)
        case .document(_, let bytes): (kind, size, text) = (Self.document, bytes, "")
        case .symlink(let target): (kind, size, text) = (Self.symlink, 0, target)
        }
        out.append(kind)
        out.appendLittleEndian(UInt64(item.mode), bytes: 4)
        out.appendLittleEndian(UInt64(bitPattern: item.modified), bytes: 8)
        out.appendLittleEndian(UInt64(bitPattern: size), bytes: 8)
        for string in [item.path, text] {
            out.appendLittleEndian(UInt64(string.utf8.count), bytes: 4)
            out.append(contentsOf: string.utf8)
        }
    }

    /// The next item of `reader`, nil at the spool's end.
    static func decode(from reader: SpoolReader, documentRoot: String) throws(FileSystemError) -> ArchiveItem? {
        guard let kind = try reader.integer(bytes: 1) else { return nil }
        guard let mode = try reader.integer(bytes: 4), let modified = try reader.integer(bytes: 8),
            let size = try reader.integer(bytes: 8).map({ Int64(bitPattern: $0) }),
            let pathCount = try reader.integer(bytes: 4), let path = try reader.string(count: Int(pathCount)),
            let textCount = try reader.integer(bytes: 4), let text = try reader.string(count: Int(textCount))
        else {
            throw FileSystemError(operation: .read, path: reader.spool.path, code: EIO)
        }
        let content: ArchiveItem.Content =
            switch UInt8(kind) {
            case directory: .directory
            case file: .file(source: text, size: size)
            case document: .document(root: documentRoot, size: size)
            default: .symlink(target: text)
            }
        return ArchiveItem(path: path, content: content, mode: UInt32(mode), modified: Int64(bitPattern: modified))
    }
}

extension [UInt8] {
    fileprivate mutating func appendLittleEndian(_ value: UInt64, bytes: Int) {
        for index in 0..<bytes { append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }
}
