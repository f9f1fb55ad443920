import Foundation

/// The central directory of a zip whose entries were written by several workers: each worker's
/// records (``ZipEntryEncoder``) give every field of its entries' records (names, sizes, CRCs,
/// attributes, extra fields) but their offsets. This rebuilds the records with the offsets the
/// entries have in the archive, a zip64 extra field wherever a size or an offset needs one, and
/// the end records for the whole archive (zip64 ones when the archive needs them).
///
/// It writes every DOS date and time in UTC, so the same documents give the same bytes in Lisbon
/// and in Tokyo. The `UT` extra field holds the real instant.
struct ZipDirectory {
    /// Sizes and offsets from this value up are written in zip64 fields (tests lower it).
    var zip64Limit: UInt64 = 0xFFFF_FFFF

    /// Where each of the `count` records at the start of `bytes` (a writer's directory and end
    /// record) begins, checked to be whole.
    static func recordStarts(in bytes: [UInt8], count: Int, archivePath: String) throws(ArchiveError) -> [Int] {
        var starts: [Int] = []
        starts.reserveCapacity(count)
        var position = 0
        for _ in 0..<count {
            guard position + 46 <= bytes.count, u32(bytes, position) == 0x0201_4b50 else {
                throw ArchiveError(
                    cause: .inconsistent, message: "libarchive wrote a central directory Backstage cannot read",
                    archivePath: archivePath)
            }
            let next =
                position + 46 + Int(u16(bytes, position + 28)) + Int(u16(bytes, position + 30))
                + Int(u16(bytes, position + 32))
            guard next <= bytes.count else {
                throw ArchiveError(
                    cause: .inconsistent, message: "libarchive wrote a central directory Backstage cannot read",
                    archivePath: archivePath)
            }
            starts.append(position)
            position = next
        }
        return starts
    }

    /// Appends the record at `start` in `bytes` to `out`, for an entry at `offset` in the
    /// archive modified at `modified`: its zip64 field (if any) rebuilt, its DOS time in UTC.
    func append(recordAt start: Int, in bytes: [UInt8], offset: UInt64, modified: Int64, to out: inout [UInt8]) {
        let nameLength = Int(Self.u16(bytes, start + 28)), extraLength = Int(Self.u16(bytes, start + 30)),
            commentLength = Int(Self.u16(bytes, start + 32))
        let extraStart = start + 46 + nameLength, commentStart = extraStart + extraLength
        var compressed = UInt64(Self.u32(bytes, start + 20)), uncompressed = UInt64(Self.u32(bytes, start + 24))
        // The extra fields but the zip64 one, whose sizes (those that overflowed, in this order) are kept.
        var others: [UInt8] = []
        var field = extraStart
        while field + 4 <= commentStart {
            let id = Self.u16(bytes, field), end = min(field + 4 + Int(Self.u16(bytes, field + 2)), commentStart)
            if id == 0x0001 {
                var value = field + 4
                if uncompressed == 0xFFFF_FFFF, value + 8 <= end { uncompressed = Self.u64(bytes, value); value += 8 }
                if compressed == 0xFFFF_FFFF, value + 8 <= end { compressed = Self.u64(bytes, value) }
            } else {
                others += bytes[field..<end]
            }
            field = end
        }
        var fixed = Array(bytes[start..<start + 46])
        var zip64: [UInt8] = []
        if uncompressed >= zip64Limit { put64(&zip64, uncompressed) }
        put32(&fixed, 24, uncompressed >= zip64Limit ? 0xFFFF_FFFF : UInt32(uncompressed))
        if compressed >= zip64Limit { put64(&zip64, compressed) }
        put32(&fixed, 20, compressed >= zip64Limit ? 0xFFFF_FFFF : UInt32(compressed))
        if offset >= zip64Limit { put64(&zip64, offset) }
        put32(&fixed, 42, offset >= zip64Limit ? 0xFFFF_FFFF : UInt32(offset))
        var extra: [UInt8] = []
        if !zip64.isEmpty {
            extra = [0x01, 0x00, UInt8(zip64.count), 0x00] + zip64
            // Version needed to extract: 4.5 for zip64.
            if Self.u16(fixed, 6) < 45 { put16(&fixed, 6, 45) }
        }
        extra += others
        put16(&fixed, 30, UInt16(extra.count))
        fixed.replaceSubrange(12..<16, with: Self.dosTimestamp(modified))
        out += fixed
        out += bytes[start + 46..<extraStart]
        out += extra
        out += bytes[commentStart..<commentStart + commentLength]
    }

    /// The end records for `count` entries whose directory of `size` bytes starts at `offset`.
    func end(count: Int, directoryOffset offset: UInt64, directorySize size: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        let needsZip64 = count >= 0xFFFF || offset >= zip64Limit || size >= zip64Limit
        if needsZip64 {
            let record = offset + size
            // zip64 end of central directory record, then its locator.
            put32(&out, 0x0606_4b50); put64(&out, 44); put16(&out, 45 | 3 << 8); put16(&out, 45)
            put32(&out, 0); put32(&out, 0); put64(&out, UInt64(count)); put64(&out, UInt64(count)); put64(&out, size);
            put64(&out, offset)
            put32(&out, 0x0706_4b50); put32(&out, 0); put64(&out, record); put32(&out, 1)
        }
        let shortCount = count >= 0xFFFF ? 0xFFFF : UInt16(count)
        put32(&out, 0x0605_4b50); put16(&out, 0); put16(&out, 0); put16(&out, shortCount); put16(&out, shortCount)
        put32(&out, size >= zip64Limit ? 0xFFFF_FFFF : UInt32(size))
        put32(&out, offset >= zip64Limit ? 0xFFFF_FFFF : UInt32(offset))
        put16(&out, 0)
        return out
    }

    /// MS-DOS time then date, little-endian, of `seconds` since 1970 in UTC (2-second resolution).
    static func dosTimestamp(_ seconds: Int64) -> [UInt8] {
        var time = time_t(max(seconds, 315_532_800))  // DOS dates start in 1980
        var parts = tm()
        gmtime_r(&time, &parts)
        let dosTime = UInt16(parts.tm_hour) << 11 | UInt16(parts.tm_min) << 5 | UInt16(parts.tm_sec / 2)
        let dosDate = UInt16(min(127, parts.tm_year - 80)) << 9 | UInt16(parts.tm_mon + 1) << 5 | UInt16(parts.tm_mday)
        return [UInt8(dosTime & 0xff), UInt8(dosTime >> 8), UInt8(dosDate & 0xff), UInt8(dosDate >> 8)]
    }

    // MARK: Little-endian fields

    private static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    private static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(u16(bytes, at)) | UInt32(u16(bytes, at + 2)) << 16
    }
    private static func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        UInt64(u32(bytes, at)) | UInt64(u32(bytes, at + 4)) << 32
    }

    private func put16(_ bytes: inout [UInt8], _ at: Int, _ value: UInt16) {
        bytes[at] = UInt8(value & 0xff); bytes[at + 1] = UInt8(value >> 8)
    }
    private func put32(_ bytes: inout [UInt8], _ at: Int, _ value: UInt32) {
        for index in 0..<4 { bytes[at + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index))) }
    }
    private func put16(_ bytes: inout [UInt8], _ value: UInt16) { bytes += [UInt8(value & 0xff), UInt8(value >> 8)] }
    private func put32(_ bytes: inout [UInt8], _ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
    private func put64(_ bytes: inout [UInt8], _ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}
