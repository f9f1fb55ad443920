import Backstage
import Foundation

/// The bytes of zip entries, written by Backstage for one worker of ``ParallelZip``: each entry's
/// local header, data and data descriptor go to `emit` as they are made, and its central directory
/// record to ``record`` (its offset left for ``ZipDirectory`` to fill in). The layout is
/// libarchive's (the `UT` and `ux` extra fields, sizes after the data, zip64 fields past 4 GiB),
/// with the DOS date and time in UTC.
///
/// An entry deflate would not shrink is stored (method 0): a photo, a video or an archive, known
/// by its first bytes (JPEG, PNG, GIF, HEIC, MP4, MOV, WebP, zip, gzip, zstd, xz, bzip2, 7z), or
/// a file whose first, middle and last 32 KiB all look random (``CompressionProbe``). deflate
/// spends as long on such bytes as on text to make them larger. Any other file is deflated in
/// 128 KiB blocks at fixed offsets, a block that looks random stored inside the deflate stream:
/// a file of text and noise costs the text only. Every decision depends on the file's bytes
/// only, so the archive is the same whatever the number of workers.
///
/// Not Sendable: one worker owns it.
final class ZipEntryEncoder {
    static let blockSize = 128 << 10

    /// zlib's level: 0 stores every entry.
    let level: Int32
    let archivePath: String
    /// zlib's stream, for a file too large to hold whole.
    private let deflater: RawDeflater?
    /// libdeflate, for a file up to ``wholeFileLimit`` bytes, compressed whole: 2.4 times as fast.
    private let wholeDeflater: BlockDeflater?
    /// A whole file, and its compressed stream.
    private let wholeInput: UnsafeMutableRawBufferPointer
    private let wholeOutput: UnsafeMutableRawBufferPointer
    /// A block of a deflated file, gathered at its fixed offset; also where samples are read.
    private let stage: UnsafeMutableRawBufferPointer
    private var staged = 0
    /// The entry's next bytes, handed to `emit` when full and at the entry's end.
    private let output: UnsafeMutableRawBufferPointer
    private var filled = 0
    /// Bytes of the current entry handed to `emit` so far.
    private var emitted: Int64 = 0
    /// True while the entry being written is stored: its bytes cost a copy, not compression, so
    /// its worker waits for the entry's turn rather than hold them (a copy more).
    private(set) var isStoring = false
    /// The central directory record of the entry written last, its offset 0.
    private(set) var record: [UInt8] = []

    init(level: Int?, archivePath: String) throws(ArchiveError) {
        let level = level ?? 6
        guard (0...9).contains(level) else {
            throw ArchiveError(
                cause: .invalidOption, message: "zip compression levels are 0 to 9, not \(level)",
                archivePath: archivePath)
        }
        self.level = Int32(level)
        self.archivePath = archivePath
        deflater = level > 0 ? RawDeflater(level: Int32(level)) : nil
        wholeDeflater = level > 0 ? BlockDeflater(level: Int32(level)) : nil
        if level > 0 && (deflater == nil || wholeDeflater == nil) {
            throw ArchiveError(
                cause: .outOfMemory, message: "zlib could not allocate its compression state", archivePath: archivePath)
        }
        stage = .allocate(byteCount: Self.blockSize, alignment: 16)
        output = .allocate(byteCount: 256 << 10, alignment: 16)
        wholeInput = .allocate(byteCount: level > 0 ? Self.wholeFileLimit : 0, alignment: 16)
        wholeOutput = .allocate(byteCount: wholeDeflater?.bound(Self.wholeFileLimit) ?? 0, alignment: 16)
    }

    deinit {
        stage.deallocate()
        output.deallocate()
        wholeInput.deallocate()
        wholeOutput.deallocate()
    }

    /// The largest file compressed whole by libdeflate (its memory is held by every worker).
    static let wholeFileLimit = 1 << 20

    /// Writes `item` through `emit`, then its central directory record to ``record``; file content
    /// is read through `buffer`, and `chunkRead` is called with the size of each chunk (progress).
    /// A stored file's span in the archive (headers and bytes) is given to `place` before anything
    /// is emitted.
    ///
    /// - throws: ``DocumentChanged`` when the file was written while it was read, the
    ///   `FileSystemError` of reading it, `emit`'s error, or an ``ArchiveError`` when zlib fails.
    func write(
        _ item: ArchiveItem, buffer: UnsafeMutableRawBufferPointer, fileSystem: FileSystem,
        emit: (UnsafeRawBufferPointer) throws -> Void, place: (_ span: Int64) throws -> Void = { _ in },
        chunkRead: (Int) -> Void
    ) throws {
        filled = 0
        emitted = 0
        func flush(_ bytes: UnsafeRawBufferPointer) throws {
            try emit(bytes)
            emitted += Int64(bytes.count)
        }
        let name = Array(item.path.utf8)
        var header = Header(item: item, name: name)
        switch item.content {
        case .directory:
            try append(header.local(), flush: flush)
        case .symlink(let target):
            let bytes = Array(target.utf8)
            header.crc = bytes.withUnsafeBytes { RawDeflater.crc32(RawDeflater.emptyCRC32, $0) }
            header.compressed = Int64(bytes.count)
            header.uncompressed = Int64(bytes.count)
            try append(header.local(), flush: flush)
            try append(bytes, flush: flush)
        case .file, .document:
            let size = item.bytes, source = item.source ?? ""
            header.method = level == 0 || isIncompressible(source, size: size) ? 0 : 8
            isStoring = header.method == 0
            defer { isStoring = false }
            header.uncompressed = size
            header.compressed = header.method == 0 ? size : 0
            let local = header.local()
            // A stored entry's bytes in the archive are known before it is read: its place too.
            if isStoring { try place(Int64(local.count) + size + Int64(header.descriptor().count)) }
            try append(local, flush: flush)
            let start = emitted + Int64(filled)
            header.crc = try content(
                item, source: source, size: size, stored: header.method == 0, buffer: buffer,
                fileSystem: fileSystem, flush: flush, chunkRead: chunkRead)
            header.compressed = emitted + Int64(filled) - start
            try append(header.descriptor(), flush: flush)
        }
        if filled > 0 { try flush(UnsafeRawBufferPointer(rebasing: output[..<filled])) }
        filled = 0
        record = header.central()
    }

    /// Reads the file's bytes and writes them stored or deflated; returns their CRC-32.
    private func content(
        _ item: ArchiveItem, source: String, size: Int64, stored: Bool, buffer: UnsafeMutableRawBufferPointer,
        fileSystem: FileSystem, flush: (UnsafeRawBufferPointer) throws -> Void, chunkRead: (Int) -> Void
    ) throws -> UInt {
        if !stored, size <= Self.wholeFileLimit, let wholeDeflater {
            return try whole(
                item, source: source, size: size, deflater: wholeDeflater, buffer: buffer, fileSystem: fileSystem,
                flush: flush, chunkRead: chunkRead)
        }
        var crc = RawDeflater.emptyCRC32
        staged = 0
        deflater?.restart()
        let still = try fileSystem.readChunks(source, count: size, into: buffer) { chunk in
            crc = RawDeflater.crc32(crc, chunk)
            if stored {
                if filled > 0 { try flush(UnsafeRawBufferPointer(rebasing: output[..<filled])) }
                filled = 0
                try flush(chunk)
            } else {
                try deflate(chunk, flush: flush)
            }
            chunkRead(chunk.count)
        }
        guard still else { throw DocumentChanged(path: item.path) }
        if !stored {
            try compress(UnsafeRawBufferPointer(rebasing: stage[..<staged]), finish: true, flush: flush)
        }
        return crc
    }

    /// Reads a file of at most ``wholeFileLimit`` bytes whole and writes it deflated by libdeflate in
    /// one call; returns its CRC-32.
    private func whole(
        _ item: ArchiveItem, source: String, size: Int64, deflater: BlockDeflater,
        buffer: UnsafeMutableRawBufferPointer, fileSystem: FileSystem, flush: (UnsafeRawBufferPointer) throws -> Void,
        chunkRead: (Int) -> Void
    ) throws -> UInt {
        var crc = RawDeflater.emptyCRC32
        var count = 0
        // Never more than `size` bytes (readChunks stops there), and `size` fits.
        let still = try fileSystem.readChunks(source, count: size, into: buffer) { chunk in
            crc = RawDeflater.crc32(crc, chunk)
            UnsafeMutableRawBufferPointer(rebasing: wholeInput[count..<count + chunk.count]).copyMemory(from: chunk)
            count += chunk.count
            chunkRead(chunk.count)
        }
        guard still else { throw DocumentChanged(path: item.path) }
        guard
            let compressed = deflater.compress(
                UnsafeRawBufferPointer(rebasing: wholeInput[..<count]), into: wholeOutput)
        else {
            throw ArchiveError(
                cause: .inconsistent, message: "libdeflate's output outgrew its bound", archivePath: archivePath,
                entryPath: item.path)
        }
        if filled > 0 { try flush(UnsafeRawBufferPointer(rebasing: output[..<filled])) }
        filled = 0
        try flush(UnsafeRawBufferPointer(rebasing: wholeOutput[..<compressed]))
        return crc
    }

    /// Gathers `chunk` into 128 KiB blocks at fixed offsets of the file, each compressed once full.
    private func deflate(_ chunk: UnsafeRawBufferPointer, flush: (UnsafeRawBufferPointer) throws -> Void) throws {
        var rest = chunk
        while !rest.isEmpty {
            let take = min(rest.count, stage.count - staged)
            UnsafeMutableRawBufferPointer(rebasing: stage[staged..<staged + take]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: rest[..<take]))
            staged += take
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            if staged == stage.count {
                try compress(UnsafeRawBufferPointer(stage), finish: false, flush: flush)
                staged = 0
            }
        }
    }

    /// Deflates one block, stored inside the stream when it looks random.
    private func compress(
        _ block: UnsafeRawBufferPointer, finish: Bool, flush: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        guard let deflater else { return }
        let store = block.isEmpty ? nil : CompressionProbe.isIncompressible(block.assumingMemoryBound(to: UInt8.self))
        guard try deflater.compress(block, store: store, finish: finish, into: output, filled: &filled, flush: flush)
        else {
            throw ArchiveError(
                cause: .zlib(code: deflater.failure), message: "zlib could not compress an entry",
                archivePath: archivePath)
        }
    }

    /// Appends `bytes` to the entry's pending output.
    private func append(_ bytes: [UInt8], flush: (UnsafeRawBufferPointer) throws -> Void) throws {
        try bytes.withUnsafeBytes { bytes in
            var rest = bytes
            while !rest.isEmpty {
                if filled == output.count {
                    try flush(UnsafeRawBufferPointer(output))
                    filled = 0
                }
                let take = min(rest.count, output.count - filled)
                UnsafeMutableRawBufferPointer(rebasing: output[filled..<filled + take]).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: rest[..<take]))
                filled += take
                rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            }
        }
    }

    // MARK: Which files are stored

    /// The bytes of each sample that decides whether a file is stored: deflate's window, where
    /// its matches are found. Three samples of 128 KiB took 18% of the CPU time of a zip of
    /// random 1-5 MB files (the repeat scan costs ~4 times a copy, byte for byte).
    static let sampleSize = 32 << 10

    /// True when deflate would not shrink the file at `path`: a compressed format by its first
    /// bytes, or its first, middle and last 32 KiB all random-looking. A sample that cannot be
    /// read says no (the file is deflated; reading it for real reports the failure).
    private func isIncompressible(_ path: String, size: Int64) -> Bool {
        guard size >= 4096 else { return false }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let block = Int64(Self.sampleSize)
        for (number, offset) in [0, (size / 2 / block) * block, max(0, size - block)].enumerated() {
            if number > 0 && offset < block { continue }  // under two blocks: the first stands for the file
            let count = pread(fd, stage.baseAddress, Int(min(block, size - offset)), off_t(offset))
            guard count >= 4096 else { return false }
            let sample = UnsafeBufferPointer(
                start: stage.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)
            if number == 0 && Self.isCompressedFormat(sample) { return true }
            if !CompressionProbe.isIncompressible(sample) { return false }
        }
        return true
    }

    /// Photos, videos, audio and archives by their first bytes: already compressed.
    static func isCompressedFormat(_ head: UnsafeBufferPointer<UInt8>) -> Bool {
        let signatures: [(offset: Int, bytes: [UInt8])] = [
            (0, [0xFF, 0xD8, 0xFF]),  // JPEG
            (0, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),  // PNG
            (0, Array("GIF8".utf8)),
            (4, Array("ftyp".utf8)),  // HEIC, AVIF, MP4, M4A, MOV
            (4, Array("moov".utf8)), (4, Array("mdat".utf8)), (4, Array("wide".utf8)),  // older MOV
            (8, Array("WEBP".utf8)),
            (0, [0x50, 0x4B, 0x03, 0x04]),  // zip (docx, epub, …)
            (0, [0x1F, 0x8B]),  // gzip
            (0, [0x28, 0xB5, 0x2F, 0xFD]),  // zstd
            (0, [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]),  // xz
            (0, Array("BZh".utf8)),  // bzip2
            (0, [0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]),  // 7z
        ]
        return signatures.contains { signature in
            signature.offset + signature.bytes.count <= head.count
                && zip(head[signature.offset...], signature.bytes).allSatisfy { $0 == $1 }
        }
    }
}

/// One entry's headers, as libarchive writes them.
private struct Header {
    var item: ArchiveItem
    var name: [UInt8]
    /// 0 stored, 8 deflated.
    var method: UInt16 = 0
    var crc: UInt = 0
    var compressed: Int64 = 0
    var uncompressed: Int64 = 0

    var isFile: Bool { item.source != nil }

    /// Sizes in zip64 fields: past 4 GiB, or past 3.75 GiB when deflated (it may grow).
    var usesZip64: Bool { isFile && (uncompressed > 0xFFFF_FFFF || (uncompressed > 0xF000_0000 && method == 8)) }

    var version: UInt16 { usesZip64 ? 45 : isFile && method == 0 ? 10 : 20 }

    /// Sizes after the data (files: the CRC is known only then); UTF-8 names flagged.
    var flags: UInt16 { (isFile ? 0x0008 : 0) | (name.allSatisfy { $0 < 0x80 } ? 0 : 0x0800) }

    var mode: UInt32 {
        switch item.content {
        case .directory: 0o040000 | item.mode
        case .file, .document: 0o100000 | item.mode
        case .symlink: 0o120000 | item.mode
        }
    }

    /// `UT` (modification time) then `ux` (uid and gid 0): the same in both headers.
    var extra: [UInt8] {
        var out: [UInt8] = [0x55, 0x54, 5, 0, 1]
        out.le32(UInt32(truncatingIfNeeded: item.modified))
        return out + [0x75, 0x78, 11, 0, 1, 4, 0, 0, 0, 0, 4, 0, 0, 0, 0]
    }

    func local() -> [UInt8] {
        var out: [UInt8] = [0x50, 0x4B, 0x03, 0x04]
        out.le16(version); out.le16(flags); out.le16(method)
        out += ZipDirectory.dosTimestamp(item.modified)
        out.le32(UInt32(truncatingIfNeeded: crc))
        out.le32(usesZip64 ? 0xFFFF_FFFF : UInt32(compressed)); out.le32(usesZip64 ? 0xFFFF_FFFF : UInt32(uncompressed))
        var extra = self.extra
        if usesZip64 {
            extra += [0x01, 0x00, 16, 0]
            extra.le64(UInt64(uncompressed)); extra.le64(UInt64(compressed))
        }
        out.le16(UInt16(name.count)); out.le16(UInt16(extra.count))
        return out + name + extra
    }

    func descriptor() -> [UInt8] {
        var out: [UInt8] = [0x50, 0x4B, 0x07, 0x08]
        out.le32(UInt32(truncatingIfNeeded: crc))
        if usesZip64 {
            out.le64(UInt64(compressed)); out.le64(UInt64(uncompressed))
        } else {
            out.le32(UInt32(truncatingIfNeeded: compressed)); out.le32(UInt32(truncatingIfNeeded: uncompressed))
        }
        return out
    }

    /// The central directory record, its offset 0 (``ZipDirectory`` writes the real one).
    func central() -> [UInt8] {
        var out: [UInt8] = [0x50, 0x4B, 0x01, 0x02]
        var zip64: [UInt8] = []
        if uncompressed >= 0xFFFF_FFFF { zip64.le64(UInt64(uncompressed)) }
        if compressed >= 0xFFFF_FFFF { zip64.le64(UInt64(compressed)) }
        out.le16(3 << 8 | version); out.le16(zip64.isEmpty ? version : max(version, 45)); out.le16(flags)
        out.le16(method)
        out += ZipDirectory.dosTimestamp(item.modified)
        out.le32(UInt32(truncatingIfNeeded: crc))
        out.le32(UInt32(min(compressed, 0xFFFF_FFFF))); out.le32(UInt32(min(uncompressed, 0xFFFF_FFFF)))
        var extra = self.extra
        if !zip64.isEmpty { extra += [0x01, 0x00, UInt8(zip64.count), 0] + zip64 }
        out.le16(UInt16(name.count)); out.le16(UInt16(extra.count))
        // No comment, disk 0, no internal attributes; the mode in the external ones (Info-ZIP).
        out.le16(0); out.le16(0); out.le16(0); out.le32(mode << 16); out.le32(0)
        return out + name + extra
    }
}

extension [UInt8] {
    fileprivate mutating func le16(_ value: UInt16) { append(UInt8(value & 0xFF)); append(UInt8(value >> 8)) }
    fileprivate mutating func le32(_ value: UInt32) { le16(UInt16(value & 0xFFFF)); le16(UInt16(value >> 16)) }
    fileprivate mutating func le64(_ value: UInt64) {
        le32(UInt32(value & 0xFFFF_FFFF)); le32(UInt32(value >> 32))
    }
}
