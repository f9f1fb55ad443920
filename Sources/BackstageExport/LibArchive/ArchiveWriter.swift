import CArchive
import Foundation

/// Where a writer's bytes go when Backstage, not libarchive, puts them in the file: each call
/// gets the next bytes of the stream, in order, unbuffered.
protocol ArchiveSink: AnyObject {
    func consume(_ bytes: UnsafeRawBufferPointer) throws(ArchiveError)
}

/// A sink that compresses what it is given: ``finish()`` writes what it still holds and the
/// stream's end, after the writer is closed.
protocol FinishingArchiveSink: ArchiveSink {
    func finish() throws(ArchiveError)
}

/// Owns one libarchive write handle. Entries are written in the order given; `close()` writes
/// the trailer (the zip central directory) and must be called: it is where a full disk shows up.
final class ArchiveWriter {
    private var handle: OpaquePointer?
    let path: String
    /// The sink's side of the write callback, and the first error the sink threw.
    private var client: SinkClient?

    /// A writer of `format` to the file at `path`, libarchive writing it; errors name
    /// `archivePath` (the destination a temporary file will be renamed to), `path` by default.
    init(
        path: String, naming archivePath: String? = nil, format: ArchiveFormat, level: Int?
    ) throws(ArchiveError) {
        self.path = archivePath ?? path
        guard let handle = archive_write_new() else {
            throw ArchiveError(
                cause: .outOfMemory, message: "libarchive could not allocate a writer", archivePath: self.path)
        }
        self.handle = handle
        try check(configure(handle, format: format, level: level))
        // 1 MiB writes rather than libarchive's 10 KiB: a 25 MB archive took 2,461 write calls. The
        // bytes are the same: a regular file's last block is not padded.
        archive_write_set_bytes_per_block(handle, 1 << 20)
        try check(archive_write_open_filename(handle, path))
    }

    /// A writer of the bare container (`.zip` or `.tar`: no compression filter) whose bytes go to
    /// `sink` as libarchive produces them; `archivePath` names the archive in errors.
    init(sink: ArchiveSink, format: ArchiveFormat, level: Int?, archivePath: String) throws(ArchiveError) {
        self.path = archivePath
        guard let handle = archive_write_new() else {
            throw ArchiveError(
                cause: .outOfMemory, message: "libarchive could not allocate a writer", archivePath: archivePath)
        }
        self.handle = handle
        let client = SinkClient(sink: sink)
        self.client = client
        try check(configure(handle, format: format == .zip ? .zip : .tar, level: level))
        // No blocking: each write goes straight to the sink (the tar end-of-archive is its two zero records).
        archive_write_set_bytes_per_block(handle, 0)
        try check(
            archive_write_open(
                handle, Unmanaged.passUnretained(client).toOpaque(), nil,
                { _, context, bytes, count in
                    let client = Unmanaged<SinkClient>.fromOpaque(context!).takeUnretainedValue()
                    // Once the sink failed, nothing more reaches it (libarchive still flushes when freed).
                    guard client.failure == nil else { return -1 }
                    do throws(ArchiveError) {
                        try client.sink.consume(UnsafeRawBufferPointer(start: bytes, count: count))
                        return count
                    } catch {
                        if client.failure == nil { client.failure = error }
                        return -1
                    }
                }, nil))
    }

    /// Ends the current entry: for zip, the rest of its compressed bytes and its data descriptor.
    func finishEntry(_ entryPath: String) throws(ArchiveError) {
        guard let handle else { return }
        try check(archive_write_finish_entry(handle), entry: entryPath)
    }

    private func configure(_ a: OpaquePointer, format: ArchiveFormat, level: Int?) -> Int32 {
        var options: [String] = []
        var status: Int32
        switch format {
        case .zip:
            status = archive_write_set_format_zip(a)
            if level == 0 {
                options.append("zip:compression=store")
            } else {
                options.append("zip:compression=deflate")
                if let level { options.append("zip:compression-level=\(level)") }
            }
        case .sevenZip:
            status = archive_write_set_format_7zip(a)
            if let level { options.append("7zip:compression-level=\(level)") }
        default:
            // pax: UTF-8 names, sizes past 8 GiB, no atime/ctime unless set (and they are never set).
            status = archive_write_set_format_pax_restricted(a)
        }
        guard status == ARCHIVE_OK else { return status }
        switch format {
        case .tarGz:
            status = archive_write_add_filter_gzip(a)
            options.append("gzip:!timestamp")
            if let level { options.append("gzip:compression-level=\(level)") }
        case .tarBz2:
            status = archive_write_add_filter_bzip2(a)
            if let level { options.append("bzip2:compression-level=\(level)") }
        case .tarXz:
            status = archive_write_add_filter_xz(a)
            if let level { options.append("xz:compression-level=\(level)") }
        default:
            break
        }
        guard status == ARCHIVE_OK else { return status }
        for option in options {
            let result = archive_write_set_options(a, option)
            if result != ARCHIVE_OK { return result }
        }
        return ARCHIVE_OK
    }

    /// Writes a header for a folder, a regular file (its bytes follow with `writeData`) or a link.
    func writeHeader(
        path entryPath: String, kind: EntryKind, size: Int64, mode: UInt32, modified: Int64, linkTarget: String? = nil
    ) throws(ArchiveError) {
        guard let handle, let entry = archive_entry_new() else {
            throw ArchiveError(
                cause: .outOfMemory, message: "libarchive could not allocate an entry", archivePath: path,
                entryPath: entryPath)
        }
        defer { archive_entry_free(entry) }
        archive_entry_set_pathname_utf8(entry, entryPath)
        switch kind {
        case .directory: archive_entry_set_filetype(entry, backstage_ae_ifdir())
        case .file: archive_entry_set_filetype(entry, backstage_ae_ifreg())
        case .symlink:
            archive_entry_set_filetype(entry, backstage_ae_iflnk())
            archive_entry_set_symlink_utf8(entry, linkTarget ?? "")
        }
        archive_entry_set_perm(entry, mode_t(mode))
        archive_entry_set_size(entry, kind == .file ? la_int64_t(size) : 0)
        archive_entry_set_mtime(entry, time_t(modified), 0)
        archive_entry_set_uid(entry, 0)
        archive_entry_set_gid(entry, 0)
        try check(archive_write_header(handle, entry), entry: entryPath)
    }

    /// Writes the next bytes of the current file entry.
    func writeData(_ buffer: UnsafeRawBufferPointer, entry entryPath: String) throws(ArchiveError) {
        guard let handle else { return }
        var offset = 0
        while offset < buffer.count {
            let written = archive_write_data(handle, buffer.baseAddress! + offset, buffer.count - offset)
            guard written > 0 else { throw error(Int32(truncatingIfNeeded: written), entry: entryPath) }
            offset += written
        }
    }

    /// Finishes the archive: trailers and central directory are written here.
    func close() throws(ArchiveError) {
        guard let handle else { return }
        let status = archive_write_close(handle)
        let failure = status == ARCHIVE_OK ? nil : error(status, entry: nil)
        archive_write_free(handle)
        self.handle = nil
        if let failure { throw failure }
    }

    deinit {
        if let handle { archive_write_free(handle) }
    }

    private func check(_ status: Int32, entry: String? = nil) throws(ArchiveError) {
        if status != ARCHIVE_OK && status != ARCHIVE_WARN { throw error(status, entry: entry) }
    }

    /// The error of a call that returned `status`: the sink's own failure when the sink failed
    /// under it (with the status libarchive returned then), else libarchive's, its `errno` apart.
    private func error(_ status: Int32, entry: String?) -> ArchiveError {
        if var failure = client?.failure {
            failure.entryPath = failure.entryPath ?? entry
            failure.status = failure.status ?? ArchiveError.Status(rawValue: status)
            return failure
        }
        let message =
            handle.flatMap { archive_error_string($0) }.map { String(cString: $0) } ?? "libarchive error \(status)"
        // libarchive's own errors (ARCHIVE_ERRNO_MISC) are negative: no system error.
        let number = handle.map { archive_errno($0) } ?? 0
        return ArchiveError(
            cause: .libarchive, status: ArchiveError.Status(rawValue: status), errno: number > 0 ? number : nil,
            message: message, archivePath: path, entryPath: entry)
    }

    enum EntryKind { case directory, file, symlink }

    private final class SinkClient {
        let sink: ArchiveSink
        var failure: ArchiveError?

        init(sink: ArchiveSink) {
            self.sink = sink
        }
    }
}

/// Runs `body` with the calling thread in the C.UTF-8 locale, whatever the process locale is,
/// so libarchive keeps non-ASCII names in every format. Other threads are not affected.
func withUTF8Locale<T>(_ body: () throws -> T) rethrows -> T {
    let previous = backstage_use_utf8_locale()
    defer { backstage_restore_locale(previous) }
    return try body()
}
