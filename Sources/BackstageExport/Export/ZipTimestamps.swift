import Foundation

/// libarchive writes a zip entry's DOS date and time in the process's local time zone, so the same
/// documents would give different bytes in Lisbon and in Tokyo. After the archive is closed, this
/// rewrites every DOS timestamp (central directory and local headers; no checksum covers them) from
/// the entry's modification time in UTC. The `UT` extra field, which holds the real instant, is kept.
enum ZipTimestamps {
    /// - parameter modified: the modification time of each entry, in the order they were written.
    static func normalizeToUTC(_ url: URL, modified: [Int64]) throws {
        let handle = try FileHandle(forUpdating: url)
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        // End of central directory: the last 22 bytes, or further back with a comment (we write none).
        let tail = min(size, 65_557)
        try handle.seek(toOffset: size - tail)
        let end = try handle.read(upToCount: Int(tail)) ?? Data()
        guard let eocd = lastIndex(of: [0x50, 0x4b, 0x05, 0x06], in: end) else { return }
        var count = Int(u16(end, eocd + 10))
        var directoryOffset = UInt64(u32(end, eocd + 16))
        if directoryOffset == 0xFFFF_FFFF || count == 0xFFFF, let locator = lastIndex(of: [0x50, 0x4b, 0x06, 0x07], in: end) {
            // zip64: the end-of-central-directory record it points to has the real values.
            let record = u64(end, locator + 8)
            try handle.seek(toOffset: record)
            let zip64 = try handle.read(upToCount: 56) ?? Data()
            count = Int(u64(zip64, 32))
            directoryOffset = u64(zip64, 48)
        }
        try handle.seek(toOffset: directoryOffset)
        var directory = try handle.read(upToCount: Int(size - directoryOffset)) ?? Data()
        var position = 0
        var localOffsets: [(UInt64, Data)] = []
        for index in 0..<min(count, modified.count) {
            guard position + 46 <= directory.count, u32(directory, position) == 0x0201_4b50 else { break }
            let stamp = dosTimestamp(modified[index])
            directory.replaceSubrange(position + 12..<position + 16, with: stamp)
            let nameLength = Int(u16(directory, position + 28)), extraLength = Int(u16(directory, position + 30)), commentLength = Int(u16(directory, position + 32))
            var local = UInt64(u32(directory, position + 42))
            if local == 0xFFFF_FFFF {
                // zip64 extra field (0x0001): the local header offset follows the sizes that overflowed.
                var extra = position + 46 + nameLength
                let extraEnd = extra + extraLength
                while extra + 4 <= extraEnd {
                    let id = u16(directory, extra), length = Int(u16(directory, extra + 2))
                    if id == 0x0001 {
                        var field = extra + 4
                        if u32(directory, position + 24) == 0xFFFF_FFFF { field += 8 }
                        if u32(directory, position + 20) == 0xFFFF_FFFF { field += 8 }
                        local = u64(directory, field)
                    }
                    extra += 4 + length
                }
            }
            localOffsets.append((local, stamp))
            position += 46 + nameLength + extraLength + commentLength
        }
        try handle.seek(toOffset: directoryOffset)
        try handle.write(contentsOf: directory)
        for (offset, stamp) in localOffsets {
            try handle.seek(toOffset: offset + 10)
            try handle.write(contentsOf: stamp)
        }
        try handle.synchronize()
    }

    /// MS-DOS time then date, little-endian, of `seconds` since 1970 in UTC (2-second resolution).
    static func dosTimestamp(_ seconds: Int64) -> Data {
        var time = time_t(max(seconds, 315_532_800))  // DOS dates start in 1980
        var parts = tm()
        gmtime_r(&time, &parts)
        let dosTime = UInt16(parts.tm_hour) << 11 | UInt16(parts.tm_min) << 5 | UInt16(parts.tm_sec / 2)
        let dosDate = UInt16(parts.tm_year - 80) << 9 | UInt16(parts.tm_mon + 1) << 5 | UInt16(parts.tm_mday)
        return Data([UInt8(dosTime & 0xff), UInt8(dosTime >> 8), UInt8(dosDate & 0xff), UInt8(dosDate >> 8)])
    }

    private static func lastIndex(of signature: [UInt8], in data: Data) -> Int? {
        let bytes = [UInt8](data)
        guard bytes.count >= signature.count else { return nil }
        for index in stride(from: bytes.count - signature.count, through: 0, by: -1) where Array(bytes[index..<index + signature.count]) == signature {
            return index
        }
        return nil
    }

    private static func u16(_ data: Data, _ offset: Int) -> UInt16 {
        UInt16(data[data.startIndex + offset]) | UInt16(data[data.startIndex + offset + 1]) << 8
    }

    private static func u32(_ data: Data, _ offset: Int) -> UInt32 {
        UInt32(u16(data, offset)) | UInt32(u16(data, offset + 2)) << 16
    }

    private static func u64(_ data: Data, _ offset: Int) -> UInt64 {
        UInt64(u32(data, offset)) | UInt64(u32(data, offset + 4)) << 32
    }
}
