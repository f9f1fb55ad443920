import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation

/// The launch record's one parser: the launch check asks it what it needs of the bytes of the
/// link's target, without building strings or arrays (a parse cost more than the two `lstat`s it
/// saves), and ``LaunchRecord/init(text:)`` copies out what it holds.
///
/// It reads a record of format 1 or 2 whose every line is well formed, and nothing else: one
/// `reached` line of one word, one `known` line, `quiet` and `seen` lines of a folder, four
/// numbers (device and inode unsigned, the change time's seconds and nanoseconds signed) and
/// store names without `/`; every word non-empty, without raw control characters, its `%XX`
/// escapes well formed and its bytes, decoded, UTF-8.
package struct LaunchRecordView {
    let bytes: UnsafeRawBufferPointer
    /// ``LaunchRecord/promisesNoJournal``.
    package let promisesNoJournal: Bool
    /// The words after the key of the `reached` and `known` lines, and where the first stamp (`quiet`, `seen`)
    /// line starts: found while the lines are checked, so that no question scans them again.
    private var reached: Range<Int>?
    private var known: Range<Int>?
    private var firstStamp: Int?
    /// True when a word holds a `%XX` escape: words are then compared decoded, else byte for byte.
    private var isEscaped = false
    /// The first stamp lines, taken apart while the lines are checked (their numbers parsed
    /// once): the launch check asks for a stamp several times a call, and re-reading the lines
    /// and their numbers cost more than any other part of it. Later lines are read when asked.
    private var indexed = InlineArray<4, IndexedStamp>(repeating: IndexedStamp())
    private var stampCount = 0

    /// A stamp line's parts: where its folder and its names are, and its numbers.
    fileprivate struct IndexedStamp {
        var folder: Range<Int> = 0..<0
        var names: Range<Int> = 0..<0
        var device: UInt64 = 0
        var inode: UInt64 = 0
        var seconds: Int64 = 0
        var nanoseconds: Int64 = 0
        var noStrays = false
    }

    /// Nil unless the text is a record of this format, every line of it well formed.
    package init?(_ bytes: UnsafeRawBufferPointer) {
        // "backstage-launch 2\n" (or 1, which makes no promise about the journal).
        let format: StaticString = "backstage-launch "
        let headerCount = format.utf8CodeUnitCount + 2
        guard bytes.count >= headerCount - 1,
            memcmp(bytes.baseAddress!, format.utf8Start, format.utf8CodeUnitCount) == 0,
            bytes.count == headerCount - 1 || bytes[headerCount - 1] == UInt8(ascii: "\n")
        else { return nil }
        switch bytes[headerCount - 2] {
        case UInt8(ascii: "2"): promisesNoJournal = true
        case UInt8(ascii: "1"): promisesNoJournal = false
        default: return nil
        }
        self.bytes = bytes
        var index = headerCount
        while index < bytes.count {
            let end = lineEnd(from: index)
            guard record(line: index..<end) else { return nil }
            index = end + 1
        }
    }

    /// Where the line starting at `start` ends: its newline, or the end of the record.
    private func lineEnd(from start: Int) -> Int {
        guard let newline = memchr(bytes.baseAddress! + start, Int32(UInt8(ascii: "\n")), bytes.count - start) else {
            return bytes.count
        }
        return UnsafeRawPointer(newline) - bytes.baseAddress!
    }

    /// Checks one line (a known key, once for `reached` and `known`; the right number of
    /// well-formed words; numbers where numbers belong) and notes where it is.
    private mutating func record(line: Range<Int>) -> Bool {
        var keyEnd = line.lowerBound
        while keyEnd < line.upperBound, bytes[keyEnd] != UInt8(ascii: " ") { keyEnd += 1 }
        guard keyEnd < line.upperBound else { return false }
        let key = line.lowerBound..<keyEnd
        let isStamp = matches(key, "quiet") || matches(key, "seen")
        guard isStamp || matches(key, "reached") || matches(key, "known") else { return false }
        let words = keyEnd + 1..<line.upperBound
        var count = 0
        var start = words.lowerBound
        var parts = IndexedStamp(noStrays: matches(key, "quiet"))
        while start <= words.upperBound {
            count += 1
            guard let end = wordEnd(from: start, before: words.upperBound, storeName: isStamp && count > 5) else {
                return false
            }
            if isStamp {
                guard parts.take(count, start..<end, of: bytes) else { return false }
                if count == 6 { parts.names = start..<words.upperBound }
            }
            start = end + 1
        }
        if matches(key, "reached") {
            guard count == 1, reached == nil else { return false }
            reached = words
        } else if matches(key, "known") {
            guard known == nil else { return false }
            known = words
        } else {
            guard count >= 5 else { return false }
            if firstStamp == nil { firstStamp = line.lowerBound }
            if stampCount < indexed.count { indexed[stampCount] = parts }
            stampCount += 1
        }
        return true
    }

    /// Where the word starting at `start` ends (a space, or `end`), when it is well formed:
    /// non-empty, no raw control character, its escapes `%` and two hex digits, its decoded
    /// bytes UTF-8 (and, for a store's name, without `/`). Nil otherwise. One pass over its bytes.
    private mutating func wordEnd(from start: Int, before end: Int, storeName: Bool) -> Int? {
        var position = start
        var high: UInt8 = 0
        // Eight plain bytes at a time (a record is nearly all of them), then one by one.
        while position + 8 <= end,
            Self.arePlain(UnsafeRawPointer(bytes.baseAddress! + position).loadUnaligned(as: UInt64.self))
        {
            position += 8
        }
        while position < end {
            var byte = bytes[position]
            // Printable ASCII but `%` and `/` (nearly every byte of a record): nothing to check.
            if byte &- 0x21 < 0x5E, byte != UInt8(ascii: "%"), byte != UInt8(ascii: "/") {
                position += 1
                continue
            }
            if byte == UInt8(ascii: " ") { break }
            guard byte > 0x20, byte != 0x7F else { return nil }
            if byte == UInt8(ascii: "%") {
                guard position + 2 < end, let upper = Self.hex(bytes[position + 1]),
                    let lower = Self.hex(bytes[position + 2])
                else { return nil }
                byte = upper << 4 | lower
                isEscaped = true
                position += 3
            } else {
                position += 1
            }
            if storeName, byte == UInt8(ascii: "/") { return nil }
            high |= byte
        }
        guard position > start else { return nil }
        // Bytes past ASCII: the decoded word must be UTF-8 (a rare word, and the only copy made).
        guard high < 0x80 || String(validating: decodedBytes(start..<position), as: UTF8.self) != nil else {
            return nil
        }
        return position
    }

    /// True when each of the eight bytes of `word` is printable ASCII but `%` and `/`: nothing to
    /// check or decode (the tests of a byte below, above and equal to a value, on all eight at once).
    @inline(__always)
    static func arePlain(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ value: UInt64) -> Bool { (value &- ones) & ~value & highs != 0 }
        let below = (word &- ones &* 0x21) & ~word & highs  // a byte under 0x21 (space, control)
        let above = ((word &+ ones) | word) & highs  // a byte over 0x7E (DEL, not ASCII)
        return below == 0 && above == 0 && !hasZero(word ^ (ones &* 0x25)) && !hasZero(word ^ (ones &* 0x2F))
    }

    private func matches(_ range: Range<Int>, _ text: StaticString) -> Bool {
        range.count == text.utf8CodeUnitCount
            && memcmp(bytes.baseAddress! + range.lowerBound, text.utf8Start, range.count) == 0
    }

    /// The next word of `range` from `start`: its bytes, and where the one after it starts.
    private func word(in range: Range<Int>, from start: Int) -> (word: Range<Int>, next: Int)? {
        guard start < range.upperBound else { return nil }
        var end = start
        while end < range.upperBound, bytes[end] != UInt8(ascii: " ") { end += 1 }
        return (start..<end, end + 1)
    }

    /// True when a build whose plans `plan` are does not know the storage that wrote the record
    /// (a newer build, or a sibling): the check below of `plan`'s ``UpgradePlan/versions``, without
    /// building that list at every launch check.
    package func isUnknown(to plan: UpgradePlan) -> Bool {
        if let chain = plan.chainVersions { return !chain.isEmpty && isUnknown(to: chain) }
        if let version = plan.version { return isUnknown(to: CollectionOfOne(version)) }
        return false
    }

    /// ``LaunchRecord/isNewer(than:)``, on the bytes.
    package func isNewer(than versions: some Collection<String>) -> Bool {
        guard let reached else { return false }
        if versions.contains(where: { word(reached, is: $0) }) { return false }
        guard known != nil else { return versions.isEmpty }
        return versions.allSatisfy(knows)
    }

    /// ``LaunchRecord/isUnknown(to:)``, on the bytes.
    package func isUnknown(to versions: some Collection<String>) -> Bool {
        guard let reached else { return false }
        if versions.contains(where: { word(reached, is: $0) }) { return false }
        return versions.contains(where: knows)
    }

    /// True when `version` is among the record's known versions.
    private func knows(_ version: String) -> Bool {
        guard let known else { return false }
        var next = known.lowerBound
        while let (candidate, after) = word(in: known, from: next) {
            if word(candidate, is: version) { return true }
            next = after
        }
        return false
    }

    /// True when the record has a `quiet` or `seen` line.
    package var hasStamps: Bool { firstStamp != nil }

    /// The stamp of the folder `root` + `/` + `path` (the root alone when `path` is empty): a
    /// `quiet` one when `absent` is nil, else one listing `absent` among the names absent then.
    /// Nil when there is none. On the bytes: no string, no array.
    package func stamp(
        folder root: UnsafeRawBufferPointer, _ path: UnsafeRawBufferPointer, absent name: UnsafeRawBufferPointer?
    ) -> LaunchRecord.FoundStamp? {
        stamp(absent: name) { isFolder($0, root, path) }
    }

    /// ``stamp(folder:_:absent:)`` of the folder the record names `folder` (its root, then `/`
    /// and its path unless it is the root).
    package func stamp(folder: UnsafeRawBufferPointer, absent name: UnsafeRawBufferPointer?) -> LaunchRecord.FoundStamp?
    {
        stamp(absent: name) { equal($0, folder) }
    }

    @inline(__always)
    private func stamp(
        absent name: UnsafeRawBufferPointer?, isFolder: (Range<Int>) -> Bool
    ) -> LaunchRecord.FoundStamp? {
        for ordinal in 0..<min(stampCount, indexed.count) {
            let parts = indexed[ordinal]
            if name == nil && !parts.noStrays { continue }
            guard isFolder(parts.folder) else { continue }
            if let name, !lists(parts.names, name) { continue }
            return LaunchRecord.FoundStamp(
                index: ordinal, device: parts.device, inode: parts.inode, seconds: parts.seconds,
                nanoseconds: parts.nanoseconds)
        }
        guard stampCount > indexed.count else { return nil }
        var found: LaunchRecord.FoundStamp?
        forEachStamp { ordinal, noStrays, folder, rest in
            if ordinal < indexed.count { return true }
            if name == nil && !noStrays { return true }
            guard isFolder(folder), let (numbers, absent) = numbersAndNames(rest) else { return true }
            if let name, !lists(absent, name) { return true }
            found = LaunchRecord.FoundStamp(
                index: ordinal, device: numbers.device, inode: numbers.inode, seconds: numbers.seconds,
                nanoseconds: numbers.nanoseconds)
            return false
        }
        return found
    }

    /// True when the words of `names` include `name`.
    private func lists(_ names: Range<Int>, _ name: UnsafeRawBufferPointer) -> Bool {
        var next = names.lowerBound
        while let (word, after) = word(in: names, from: next) {
            if equal(word, name) { return true }
            next = after
        }
        return false
    }

    private typealias Numbers = (device: UInt64, inode: UInt64, seconds: Int64, nanoseconds: Int64)

    /// Calls `body` with each stamp line in order (its position among them, whether it is a
    /// `quiet` one, its folder's word and the rest of the line) until it returns false.
    private func forEachStamp(_ body: (Int, Bool, Range<Int>, Range<Int>) -> Bool) {
        guard var index = firstStamp else { return }
        var ordinal = 0
        while index < bytes.count {
            let end = lineEnd(from: index)
            defer { index = end + 1 }
            let noStrays = matches(index..<min(index + 5, end), "quiet")
            guard noStrays || matches(index..<min(index + 4, end), "seen") else { continue }
            defer { ordinal += 1 }
            let words = (noStrays ? index + 6 : index + 5)..<end
            guard let (folder, afterFolder) = word(in: words, from: words.lowerBound) else { continue }
            guard body(ordinal, noStrays, folder, min(afterFolder, end)..<end) else { return }
        }
    }

    /// The four numbers a stamp line has after its folder, and the range of the names after them
    /// (the line was checked when the record was read).
    private func numbersAndNames(_ rest: Range<Int>) -> (Numbers, Range<Int>)? {
        guard let (device, afterDevice) = word(in: rest, from: rest.lowerBound),
            let (inode, afterInode) = word(in: rest, from: afterDevice),
            let (seconds, afterSeconds) = word(in: rest, from: afterInode),
            let (nanoseconds, afterNanoseconds) = word(in: rest, from: afterSeconds),
            let device = Self.unsigned(bytes, device), let inode = Self.unsigned(bytes, inode),
            let seconds = Self.signed(bytes, seconds), let nanoseconds = Self.signed(bytes, nanoseconds)
        else { return nil }
        return ((device, inode, seconds, nanoseconds), min(afterNanoseconds, rest.upperBound)..<rest.upperBound)
    }

    /// The record, copied into strings and arrays.
    package var record: LaunchRecord {
        var stamps: [LaunchRecord.Stamp] = []
        forEachStamp { _, noStrays, folder, rest in
            guard let (numbers, absent) = numbersAndNames(rest) else { return true }
            stamps.append(
                LaunchRecord.Stamp(
                    folder: string(folder), device: numbers.device, inode: numbers.inode, seconds: numbers.seconds,
                    nanoseconds: numbers.nanoseconds, absent: strings(absent), noStrays: noStrays))
            return true
        }
        var record = LaunchRecord(reached: reached.map(string), known: strings(known), stamps: stamps)
        record.promisesNoJournal = promisesNoJournal
        return record
    }

    private func strings(_ range: Range<Int>?) -> [String] {
        guard let range else { return [] }
        var result: [String] = []
        var next = range.lowerBound
        while let (word, after) = word(in: range, from: next) {
            result.append(string(word))
            next = after
        }
        return result
    }

    private func string(_ word: Range<Int>) -> String {
        String(decoding: decodedBytes(word), as: UTF8.self)
    }

    // MARK: Escapes and numbers

    /// The byte at `position`, decoded (`%XX`, checked when the record was read), and where the next one starts.
    private func decodedByte(at position: Int) -> (byte: UInt8, next: Int) {
        guard bytes[position] == UInt8(ascii: "%"), let high = Self.hex(bytes[position + 1]),
            let low = Self.hex(bytes[position + 2])
        else { return (bytes[position], position + 1) }
        return (high << 4 | low, position + 3)
    }

    private func decodedBytes(_ word: Range<Int>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(word.count)
        var position = word.lowerBound
        while position < word.upperBound {
            let (byte, next) = decodedByte(at: position)
            out.append(byte)
            position = next
        }
        return out
    }

    /// Moves `position` past the decoded bytes of `text` when the word's next bytes are those;
    /// false otherwise. Byte for byte when the record has no escape.
    private func consume(_ text: UnsafeRawBufferPointer, at position: inout Int, before end: Int) -> Bool {
        guard !text.isEmpty else { return true }
        guard isEscaped else {
            guard end - position >= text.count,
                memcmp(bytes.baseAddress! + position, text.baseAddress!, text.count) == 0
            else { return false }
            position += text.count
            return true
        }
        for expected in text {
            guard position < end else { return false }
            let (byte, next) = decodedByte(at: position)
            guard byte == expected else { return false }
            position = next
        }
        return true
    }

    private func equal(_ word: Range<Int>, _ text: UnsafeRawBufferPointer) -> Bool {
        var position = word.lowerBound
        return consume(text, at: &position, before: word.upperBound) && position == word.upperBound
    }

    /// True when the word's decoded bytes are `text`.
    private func word(_ range: Range<Int>, is text: String) -> Bool {
        var text = text
        return text.withUTF8 { equal(range, UnsafeRawBufferPointer($0)) }
    }

    /// True when the word is `root`, or `root/path` for a non-empty path.
    private func isFolder(_ word: Range<Int>, _ root: UnsafeRawBufferPointer, _ path: UnsafeRawBufferPointer) -> Bool {
        if path.isEmpty { return equal(word, root) }
        var position = word.lowerBound
        let slash: StaticString = "/"
        return consume(root, at: &position, before: word.upperBound)
            && consume(
                UnsafeRawBufferPointer(start: slash.utf8Start, count: 1), at: &position, before: word.upperBound)
            && consume(path, at: &position, before: word.upperBound) && position == word.upperBound
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// The decimal digits at `range` of `bytes` (one at least); nil for anything else or an
    /// overflow. Integer indices, no slice: the launch check calls it for every number of the
    /// record, and a generic slice's indices cost more than the digits (callgrind: a third of
    /// the check's instructions went to `Slice.indices`).
    static func unsigned(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64? {
        guard !range.isEmpty else { return nil }
        var value: UInt64 = 0
        var position = range.lowerBound
        while position < range.upperBound {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow, !overflow2 else { return nil }
            value = sum
            position += 1
        }
        return value
    }

    /// A decimal integer, `-` allowed first, in `Int64`'s range; nil for anything else.
    static func signed(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int64? {
        guard !range.isEmpty else { return nil }
        let negative = bytes[range.lowerBound] == UInt8(ascii: "-")
        let digits = (negative ? range.lowerBound + 1 : range.lowerBound)..<range.upperBound
        guard let magnitude = unsigned(bytes, digits) else { return nil }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }
}

extension LaunchRecordView.IndexedStamp {
    /// Takes word `count` of a stamp line (its folder, then its four numbers): false when a
    /// number is not one.
    fileprivate mutating func take(_ count: Int, _ word: Range<Int>, of bytes: UnsafeRawBufferPointer) -> Bool {
        switch count {
        case 1: folder = word
        case 2, 3:
            guard let value = LaunchRecordView.unsigned(bytes, word) else { return false }
            if count == 2 { device = value } else { inode = value }
        case 4, 5:
            guard let value = LaunchRecordView.signed(bytes, word) else { return false }
            if count == 4 { seconds = value } else { nanoseconds = value }
        default: break
        }
        return true
    }
}
