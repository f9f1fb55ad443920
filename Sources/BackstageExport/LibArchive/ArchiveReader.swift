import Backstage
import CArchive
import Foundation

/// One header read from an archive, before any of its data.
struct ArchiveEntryHeader {
    enum Kind: Equatable {
        case file, directory, symlink, hardLink
        /// A device, FIFO or socket: never extracted.
        case special(String)
    }

    /// The name as UTF-8, or nil when libarchive could not decode it.
    var path: String?
    /// The name as stored, for error messages when it is not UTF-8.
    var rawPath: String
    var kind: Kind
    /// The declared size, when the archive declares one.
    var size: Int64?
    var mode: UInt32
    var modified: Int64
    /// The text of a symbolic link, or the archive path a hard link names.
    var linkTarget: String?

    /// The name for messages: the decoded one, else the raw bytes.
    var displayPath: String { path ?? rawPath }
}

/// Owns one libarchive read handle. Reads any format and filter libarchive knows, header by
/// header, the data of each entry in blocks without copying them.
///
/// Call it from one thread, inside ``withUTF8Locale(_:)`` so names decode whatever the process locale.
///
/// Damage is an error, never a warning: libarchive reports a zip entry whose CRC does not match as
/// `ARCHIVE_WARN`, which this reader refuses, and a gzip stream is inflated by ``GzipSource``,
/// which checks the trailer's CRC and length that libarchive ignores.
final class ArchiveReader {
    private var handle: OpaquePointer?
    private var gzip: GzipSource?
    /// The archive as the user named it, for messages.
    let path: String
    /// Where the last entry's data ends in the uncompressed stream, rounded to tar's 512-byte
    /// blocks; nil before the first entry, or when the last one is sparse (its stored size is not
    /// its size).
    private var lastEntryEnd: Int64?

    /// The formats read (the order of `archive_read_support_format_all`, less xar).
    static let formats: [@convention(c) (OpaquePointer?) -> Int32] = [
        archive_read_support_format_ar, archive_read_support_format_cpio, archive_read_support_format_empty,
        archive_read_support_format_lha, archive_read_support_format_mtree, archive_read_support_format_tar,
        archive_read_support_format_warc, archive_read_support_format_7zip, archive_read_support_format_cab,
        archive_read_support_format_rar, archive_read_support_format_rar5, archive_read_support_format_iso9660,
        archive_read_support_format_zip,
    ]

    /// Opens the archive at `path`; `file` is where to read it when `path` is a link.
    init(path: String, reading file: String? = nil, fileSystem: FileSystem = FileSystem()) throws(ArchiveError) {
        self.path = path
        let file = file ?? path
        guard let handle = archive_read_new() else {
            throw ArchiveError(
                cause: .outOfMemory, message: "libarchive could not allocate a reader", archivePath: path)
        }
        self.handle = handle
        try check(archive_read_support_filter_all(handle))
        // Every format of libarchive's `archive_read_support_format_all` but xar, whose reader
        // needs libxml2 (and, through it, ICU's 30 MB of data): the release `backstage` links
        // libarchive statically without them, and starts 30-40 ms sooner from a cold cache.
        for support in Self.formats { try check(support(handle)) }
        let readable: ReadableFile?
        do throws(FileSystemError) {
            readable =
                GzipSource.isGzip(try fileSystem.readPrefix(file, count: 2))
                ? try fileSystem.openForReading(file) : nil
        } catch {
            throw ArchiveError(
                cause: .fileSystem(error), message: error.reason.prefix(1).lowercased() + error.reason.dropFirst(),
                archivePath: path)
        }
        if let readable { gzip = try GzipSource(file: readable) }
        if let gzip {
            let context = Unmanaged.passUnretained(gzip).toOpaque()
            try check(
                archive_read_open(
                    handle, context, nil,
                    { archive, context, block in
                        let source = Unmanaged<GzipSource>.fromOpaque(context!).takeUnretainedValue()
                        guard let bytes = source.read() else {
                            // A read's errno (EIO) or, for bytes that are not gzip, the format's.
                            backstage_archive_set_error(
                                archive, source.fileSystemFailure?.code ?? EILSEQ,
                                source.failure ?? "the gzip stream is damaged")
                            return -1
                        }
                        block?.pointee = bytes.baseAddress
                        return bytes.count
                    }, nil))
        } else {
            try check(archive_read_open_filename(handle, file, 1 << 20))
        }
    }

    /// The next header, or nil after the last entry. A damaged archive throws; it never looks like its end.
    func next() throws(ArchiveError) -> ArchiveEntryHeader? {
        guard let handle else { return nil }
        var entryPointer: OpaquePointer?
        let status = archive_read_next_header(handle, &entryPointer)
        if status == ARCHIVE_EOF {
            try verifyEndOfTar()
            try verifyRestOfGzipStream()
            return nil
        }
        try check(status)
        guard let entry = entryPointer else {
            throw ArchiveError(
                cause: .libarchive, status: ArchiveError.Status(rawValue: status),
                message: "libarchive returned no entry", archivePath: path)
        }
        let stored = archive_entry_size_is_set(entry) != 0 ? Int64(archive_entry_size(entry)) : 0
        let headerEnd = Int64(archive_filter_bytes(handle, 0))
        lastEntryEnd = archive_entry_sparse_count(entry) > 0 ? nil : headerEnd + (stored + 511) / 512 * 512
        let raw = archive_entry_pathname(entry).map { String(cString: $0) } ?? ""
        let decoded = archive_entry_pathname_utf8(entry).map { String(cString: $0) }
        let hardLink =
            archive_entry_hardlink_utf8(entry).map { String(cString: $0) }
            ?? archive_entry_hardlink(entry).map { String(cString: $0) }
        let type = archive_entry_filetype(entry)
        var kind: ArchiveEntryHeader.Kind
        var linkTarget: String?
        if let hardLink {
            kind = .hardLink
            linkTarget = hardLink
        } else if type == backstage_ae_ifreg() {
            kind = .file
        } else if type == backstage_ae_ifdir() {
            kind = .directory
        } else if type == backstage_ae_iflnk() {
            kind = .symlink
            linkTarget =
                archive_entry_symlink_utf8(entry).map { String(cString: $0) } ?? archive_entry_symlink(entry).map {
                    String(cString: $0)
                } ?? ""
        } else {
            kind = .special(Self.describe(type))
        }
        return ArchiveEntryHeader(
            path: decoded, rawPath: raw, kind: kind,
            size: archive_entry_size_is_set(entry) != 0 ? Int64(archive_entry_size(entry)) : nil,
            mode: UInt32(archive_entry_perm(entry)) | (UInt32(archive_entry_mode(entry)) & 0o7000),
            modified: Int64(archive_entry_mtime(entry)), linkTarget: linkTarget)
    }

    /// The next block of the current entry's data and its offset in the file (blocks can skip
    /// holes), or nil at the end of the entry. The buffer is valid until the next call.
    func nextBlock(entry: String) throws(ArchiveError) -> (bytes: UnsafeRawBufferPointer, offset: Int64)? {
        guard let handle else { return nil }
        var buffer: UnsafeRawPointer?
        var size = 0
        var offset: la_int64_t = 0
        let status = archive_read_data_block(handle, &buffer, &size, &offset)
        if status == ARCHIVE_EOF { return nil }
        // A warning while reading data is damage (a zip entry's CRC mismatch): refuse it.
        try check(status, entry: entry, warningIsError: true)
        return (UnsafeRawBufferPointer(start: buffer, count: size), Int64(offset))
    }

    /// A tar ends with two blocks of zeros: libarchive reads an archive cut exactly after an entry
    /// (its end blocks and any later entries gone) as complete. Refused as truncated: what was cut
    /// off is unknown, so importing the rest would hide the loss.
    private func verifyEndOfTar() throws(ArchiveError) {
        guard let handle, let lastEntryEnd, archive_format(handle) & ARCHIVE_FORMAT_BASE_MASK == ARCHIVE_FORMAT_TAR
        else {
            return
        }
        if Int64(archive_filter_bytes(handle, 0)) < lastEntryEnd + 512 {
            let message = "the archive is truncated: it ends after an entry, without a tar's end-of-archive blocks"
            throw ArchiveError(cause: .damaged, message: message, archivePath: path)
        }
    }

    /// libarchive stops reading at the tar end marker; the gzip trailer (and any later member)
    /// comes after it, so it is read here and its checksum checked.
    private func verifyRestOfGzipStream() throws(ArchiveError) {
        guard let gzip else { return }
        while true {
            guard let block = gzip.read() else {
                let cause = gzip.fileSystemFailure.map(ArchiveError.Cause.fileSystem) ?? .damaged
                throw ArchiveError(
                    cause: cause, message: gzip.failure ?? "the gzip stream is damaged", archivePath: path)
            }
            if block.isEmpty { return }
        }
    }

    /// Bytes of the archive file consumed so far (compressed bytes).
    var bytesConsumed: Int64 {
        if let gzip { return gzip.compressedBytesConsumed }
        return handle.map { Int64(archive_filter_bytes($0, -1)) } ?? 0
    }

    func close() {
        if let handle { archive_read_free(handle) }
        handle = nil
        gzip = nil
    }

    deinit { close() }

    private static func describe(_ type: UInt32) -> String {
        switch type & 0o170000 {
        case 0o020000: "character device"
        case 0o060000: "block device"
        case 0o010000: "FIFO"
        case 0o140000: "socket"
        default: "file of unknown type"
        }
    }

    private func check(_ status: Int32, entry: String? = nil, warningIsError: Bool = false) throws(ArchiveError) {
        guard status != ARCHIVE_OK && (warningIsError || status != ARCHIVE_WARN) else { return }
        let raw = handle.flatMap { archive_error_string($0) }.map { String(cString: $0) }
        // libarchive's own errors (ARCHIVE_ERRNO_MISC) are negative: no system error.
        let number = handle.map { archive_errno($0) } ?? 0
        // A read of the gzip file under libarchive's callback failed: that read's error.
        let cause = gzip?.fileSystemFailure.map(ArchiveError.Cause.fileSystem) ?? .libarchive
        throw ArchiveError(
            cause: cause, status: ArchiveError.Status(rawValue: status), errno: number > 0 ? number : nil,
            message: ArchiveError.sentence(for: raw, status: status), archivePath: path, entryPath: entry)
    }
}
