import BackstageSystem
/// The 100-byte header at the start of every SQLite database file.
///
/// Backstage recognises a database by its first 16 bytes, `"SQLite format 3\0"`, whatever
/// its name, and reads the header to catch truncated files without opening SQLite.
/// See <https://www.sqlite.org/fileformat2.html#the_database_header>.
public struct SQLiteHeader: Sendable, Hashable {
    /// `"SQLite format 3\0"`.
    public static let magic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    /// The page size in bytes.
    public var pageSize: Int
    /// True when the file is in WAL mode (read/write versions 2).
    public var isWAL: Bool
    /// The database size in pages, when the header's copy of it is valid.
    public var pageCount: Int?

    /// Parses `bytes` (at least the first 100 bytes of a file); nil when it is not a SQLite database.
    public init?(_ bytes: some Collection<UInt8>) {
        let b = Array(bytes.prefix(100))
        guard b.count >= 16, Array(b[0..<16]) == SQLiteHeader.magic else { return nil }
        guard b.count >= 100 else { return nil }
        func u32(_ i: Int) -> UInt32 {
            UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
        }
        let raw = Int(b[16]) << 8 | Int(b[17])
        pageSize = raw == 1 ? 65536 : raw
        isWAL = b[18] == 2 && b[19] == 2
        let count = u32(28)
        pageCount = (count > 0 && u32(24) == u32(92)) ? Int(count) : nil
    }

    /// True when `bytes` start with the 16-byte SQLite magic string.
    public static func hasMagic(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.count >= 16 && Array(bytes.prefix(16)) == magic
    }

    /// The size the header promises, when it knows.
    public var expectedFileSize: Int64? {
        pageCount.map { Int64($0) * Int64(pageSize) }
    }
}

/// The magic numbers of SQLite's sidecar files, used to recognise an orphan `-wal`, `-journal`
/// or `-shm` whose database is gone. Only a real header counts: an empty file, or a journal whose
/// header SQLite zeroed (it holds nothing to roll back), is no evidence.
/// See <https://www.sqlite.org/fileformat2.html#walformat> and `#rollbackjournal`.
package enum SidecarMagic {
    package static func matches(_ sidecar: Sidecar, _ bytes: [UInt8]) -> Bool {
        switch sidecar {
        case .wal: isWAL(bytes)
        case .journal: isJournal(bytes)
        case .shm: isWALIndex(bytes)
        }
    }

    /// `0x377f0682` or `0x377f0683` (big-endian), then file format version 3007000.
    package static func isWAL(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 8 && bytes[0] == 0x37 && bytes[1] == 0x7f && bytes[2] == 0x06
            && (bytes[3] == 0x82 || bytes[3] == 0x83)
            && Array(bytes[4..<8]) == [0x00, 0x2d, 0xe2, 0x18]
    }

    package static func isJournal(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 8 && Array(bytes.prefix(8)) == [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
    }

    /// The WAL-index header: version 3007000 in the writer's byte order, twice (two 48-byte copies).
    package static func isWALIndex(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 52 else { return false }
        let little: [UInt8] = [0x18, 0xe2, 0x2d, 0x00], big: [UInt8] = [0x00, 0x2d, 0xe2, 0x18]
        let first = Array(bytes[0..<4]), second = Array(bytes[48..<52])
        return (first == little || first == big) && first == second
    }
}
