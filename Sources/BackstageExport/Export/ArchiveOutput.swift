import Backstage
import Foundation

/// The archive file an export writes when Backstage itself puts the bytes on disk (tar.gz
/// compressed on several threads, zip entries written as they complete): appended in order,
/// created exclusively (never through a link), its failures an ``ArchiveError`` naming the
/// archive and the cause (a full disk, a read-only one).
final class ArchiveOutput {
    /// The archive being written, for errors (the destination, not its temporary name).
    let archivePath: String
    private let file: NewFile
    /// Bytes written so far: the offset of the next byte.
    private(set) var position: Int64 = 0

    init(temporary: String, archivePath: String, fileSystem: FileSystem) throws(ArchiveError) {
        self.archivePath = archivePath
        do {
            file = try fileSystem.createNewFile(temporary, mode: 0o644)
        } catch {
            throw ArchiveError(error, archivePath: archivePath)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError) {
        guard !bytes.isEmpty else { return }
        do {
            try file.write(bytes, at: position)
        } catch {
            throw ArchiveError(error, archivePath: archivePath)
        }
        position += Int64(bytes.count)
    }

    /// Writes `bytes` at `offset`, ahead of ``position`` (a stored zip entry whose place is known
    /// before the entries before it are written); ``advance(to:)`` moves past it later. Safe from
    /// another thread than the one appending, on a region nothing else writes.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(ArchiveError) {
        guard !bytes.isEmpty else { return }
        do {
            try file.write(bytes, at: offset)
        } catch {
            throw ArchiveError(error, archivePath: archivePath)
        }
    }

    /// Moves ``position`` past bytes already written ahead of it.
    func advance(to end: Int64) {
        position = max(position, end)
    }

    func write(_ bytes: [UInt8]) throws(ArchiveError) {
        let failure: ArchiveError? = bytes.withUnsafeBytes { raw in
            do throws(ArchiveError) {
                try write(raw)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    func close() {
        file.close()
    }
}

extension ArchiveError {
    /// A file-system failure while writing the archive, in words: "No space left on device".
    init(_ error: FileSystemError, archivePath: String, entryPath: String? = nil) {
        self.init(cause: .fileSystem(error), message: error.reason, archivePath: archivePath, entryPath: entryPath)
    }
}
