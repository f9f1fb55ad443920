import CArchive
import Foundation

/// Owns one libarchive write handle. Entries are written in the order given; `close()` writes
/// the trailer (the zip central directory) and must be called: it is where a full disk shows up.
final class ArchiveWriter {
    private var handle: OpaquePointer?
    let path: String

    init(path: String, format: ArchiveFormat, level: Int?, threads: Int?) throws(ArchiveError) {
        self.path = path
        guard let handle = archive_write_new() else { throw ArchiveError(code: -30, message: "libarchive could not allocate a writer", archivePath: path) }
        self.handle = handle
        try check(configure(handle, format: format, level: level, threads: threads))
        try check(archive_write_open_filename(handle, path))
    }

    private func configure(_ a: OpaquePointer, format: ArchiveFormat, level: Int?, threads: Int?) -> Int32 {
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
            if let threads { options.append("xz:threads=\(threads)") }
        case .tarZst:
            status = archive_write_add_filter_zstd(a)
            if let level { options.append("zstd:compression-level=\(level)") }
            if let threads { options.append("zstd:threads=\(threads)") }
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
    func writeHeader(path entryPath: String, kind: EntryKind, size: Int64, mode: UInt32, modified: Int64, linkTarget: String? = nil) throws(ArchiveError) {
        guard let handle, let entry = archive_entry_new() else { throw ArchiveError(code: -30, message: "libarchive could not allocate an entry", archivePath: path, entryPath: entryPath) }
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

    private func error(_ status: Int32, entry: String?) -> ArchiveError {
        let message = handle.flatMap { archive_error_string($0) }.map { String(cString: $0) } ?? "libarchive error \(status)"
        let code = handle.map { archive_errno($0) } ?? status
        return ArchiveError(code: code != 0 ? code : status, message: message, archivePath: path, entryPath: entry)
    }

    enum EntryKind { case directory, file, symlink }
}

/// Runs `body` with the calling thread in the C.UTF-8 locale, whatever the process locale is,
/// so libarchive keeps non-ASCII names in every format. Other threads are not affected.
func withUTF8Locale<T>(_ body: () throws -> T) rethrows -> T {
    let previous = backstage_use_utf8_locale()
    defer { backstage_restore_locale(previous) }
    return try body()
}
