import Backstage
import Foundation

/// Bytes appended in order and read back at any offset: in memory up to ``memoryLimit``, and past
/// it in a nameless scratch file beside the archive (``ScratchFile``, unlinked as soon as it is
/// made, so nothing is left behind whatever happens). What an export would otherwise keep in memory
/// for each of its entries until the end — the list of entries, a zip's central directory — costs
/// the same memory for ten files as for a million: a write buffer, and the page cache's pages the
/// kernel may reclaim.
///
/// One thread appends, then calls ``finish()``; after that, any number of threads may read.
final class Spool: @unchecked Sendable {
    /// Where the scratch file is created.
    let path: String
    /// Bytes held in memory before the spool goes to its scratch file.
    let memoryLimit: Int
    let fileSystem: FileSystem
    /// Every byte while the spool is in memory; once in its file, the bytes not yet written to it.
    private var memory: [UInt8] = []
    private var file: ScratchFile?
    /// Bytes in the scratch file.
    private var written: Int64 = 0
    /// Bytes appended so far.
    private(set) var count: Int64 = 0

    /// The bytes gathered before each write to the scratch file.
    static let writeSize = 1 << 20

    init(path: String, memoryLimit: Int, fileSystem: FileSystem) {
        self.path = path
        self.memoryLimit = memoryLimit
        self.fileSystem = fileSystem
    }

    /// True once the spool went to its scratch file.
    var isInFile: Bool { file != nil }

    func append(_ bytes: UnsafeRawBufferPointer) throws(FileSystemError) {
        if file == nil && memory.count + bytes.count > memoryLimit {
            file = try fileSystem.createScratchFile(path)
        }
        // Written out before the buffer would grow: it never holds more than the larger of the
        // two sizes (an array that doubles keeps twice what it held).
        if file != nil && memory.count + bytes.count > max(memoryLimit, Self.writeSize) { try flush() }
        memory.append(contentsOf: bytes)
        count += Int64(bytes.count)
    }

    func append(_ bytes: [UInt8]) throws(FileSystemError) {
        let failure: FileSystemError? = bytes.withUnsafeBytes { raw in
            do throws(FileSystemError) {
                try append(raw)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Writes out what is still buffered: every byte appended can be read.
    func finish() throws(FileSystemError) {
        try flush()
    }

    private func flush() throws(FileSystemError) {
        guard let file, !memory.isEmpty else { return }
        let written = self.written
        let failure: FileSystemError? = memory.withUnsafeBytes { raw in
            do throws(FileSystemError) {
                try file.write(raw, at: written)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
        self.written += Int64(memory.count)
        memory.removeAll(keepingCapacity: true)
    }

    /// Reads up to `buffer.count` bytes at `offset` into `buffer`; 0 at the end. Only after ``finish()``.
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(FileSystemError) -> Int {
        if let file { return try file.read(into: buffer, at: offset) }
        guard offset < Int64(memory.count) else { return 0 }
        let count = min(buffer.count, memory.count - Int(offset))
        memory.withUnsafeBytes { raw in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[Int(offset)..<Int(offset) + count]))
        }
        return count
    }
}

/// Reads a ``Spool`` from its start, through a buffer of its own: one reader per thread.
final class SpoolReader: @unchecked Sendable {
    let spool: Spool
    private let buffer: UnsafeMutableRawBufferPointer
    /// The bytes of `buffer` read, and how many of them were taken.
    private var filled = 0
    private var taken = 0
    /// The spool's offset of `buffer`'s end.
    private var offset: Int64 = 0

    init(_ spool: Spool, bufferSize: Int = 64 << 10) {
        self.spool = spool
        buffer = .allocate(byteCount: bufferSize, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// True when every byte was taken.
    var isAtEnd: Bool { taken == filled && offset >= spool.count }

    /// Copies the next `into.count` bytes into `into`; false at the end of the spool before them.
    func take(into: UnsafeMutableRawBufferPointer) throws(FileSystemError) -> Bool {
        var done = 0
        while done < into.count {
            if taken == filled {
                guard try refill() else { return false }
            }
            let count = min(into.count - done, filled - taken)
            UnsafeMutableRawBufferPointer(rebasing: into[done..<done + count]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: buffer[taken..<taken + count]))
            taken += count
            done += count
        }
        return true
    }

    /// The next `count` bytes (at most 8) as a little-endian number; nil at the end of the spool.
    func integer(bytes count: Int) throws(FileSystemError) -> UInt64? {
        var value: UInt64 = 0
        for index in 0..<count {
            if taken == filled {
                guard try refill() else { return nil }
            }
            value |= UInt64(buffer[taken]) << (8 * UInt64(index))
            taken += 1
        }
        return value
    }

    /// The next `count` bytes as UTF-8; nil at the end of the spool before them.
    func string(count: Int) throws(FileSystemError) -> String? {
        guard count > 0 else { return "" }
        var bytes = [UInt8](repeating: 0, count: count)
        let taken: Result<Bool, FileSystemError> = bytes.withUnsafeMutableBytes { raw in
            do throws(FileSystemError) { return .success(try take(into: raw)) } catch { return .failure(error) }
        }
        return try taken.get() ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// Hands the spool's remaining bytes to `body`, a buffer at a time.
    func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        while true {
            if taken == filled {
                guard try refill() else { return }
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[taken..<filled]))
            taken = filled
        }
    }

    private func refill() throws(FileSystemError) -> Bool {
        let count = try spool.read(at: offset, into: buffer)
        filled = count
        taken = 0
        offset += Int64(count)
        return count > 0
    }
}
