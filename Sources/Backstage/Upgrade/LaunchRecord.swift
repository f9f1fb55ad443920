import Foundation

/// What the last completed upgrade left for the launch check: the storage version it reached and
/// the versions its build knew (the downgrade guard), and the quarantined folders it left without
/// strays, each with the identity and change time it had then.
///
/// It is the symbolic link `applicationSupport/.backstage/launch`, whose target is the record's
/// text: one `readlink` reads it, where a file takes an `open`, a `read` and a `close` (the same
/// trick Emacs uses for its lock files). The text is lines of words, `%`-escaped:
///
/// ```text
/// backstage-launch 2
/// reached v4
/// known v2 v3 v4
/// quiet documents 2049 1311 1763900000 123456789 Notes.sqlite
/// seen applicationSupport 2049 1307 1763900000 123000000 Notes.sqlite UserData.sqlite
/// ```
///
/// A `quiet` line vouches that the folder had no stray when its change time (`st_ctim`) was the
/// one written: adding, removing or renaming an entry changes it, and no one can set it back. The
/// launch check compares one `lstat` with it instead of listing the folder (7 µs on this machine,
/// most of the 10 µs budget); any difference, and the folder is listed as before. The names after
/// the numbers are stores the plan looks for in that folder that were not there then: while the
/// folder is unchanged, they are still not there, and the check does not look for them either.
/// A `seen` line says only that, for another folder the plan looks in: one `lstat` of the folder
/// instead of one per store.
///
/// Format 2 also promises that no journal is beside the record: a journal's first write removes
/// the record, durably, before anything else (``JournalFile/write(_:)``), and only a completed
/// run, whose steps cleared their journals, writes it again. Reading a format-2 record, the launch
/// check need not look for a crashed step: one `lstat` fewer. A format-1 record (an earlier build
/// wrote it) promises nothing of the kind, so the check looks for the journal as before.
package struct LaunchRecord: Equatable {
    /// A folder as a run left it: its identity and change time, the stores the plan looks for in
    /// it that were absent then, and whether it had no stray (a quarantined folder, `quiet`) or
    /// was only looked at (`seen`).
    package struct Stamp: Equatable {
        package var folder: String
        package var device: UInt64
        package var inode: UInt64
        package var seconds: Int64
        package var nanoseconds: Int64
        /// Names of stores the plan looks for directly in the folder that were absent then.
        package var absent: [String] = []
        /// True when the run also saw no stray in it (a `quiet` line).
        package var noStrays = true

        package init(
            folder: String, device: UInt64, inode: UInt64, seconds: Int64, nanoseconds: Int64, absent: [String] = [],
            noStrays: Bool = true
        ) {
            self.folder = folder
            self.device = device
            self.inode = inode
            self.seconds = seconds
            self.nanoseconds = nanoseconds
            self.absent = absent
            self.noStrays = noStrays
        }
    }

    /// What the launch check needs of a stamp it found: which one, and the folder as it was.
    package struct FoundStamp: Equatable {
        package var index: Int
        package var device: UInt64
        package var inode: UInt64
        package var seconds: Int64
        package var nanoseconds: Int64

        /// True when `status` is the folder, unchanged.
        package func matches(_ status: FileStatus?) -> Bool {
            guard let status, status.kind == .directory else { return false }
            return status.device == device && status.inode == inode
                && Int64(status.changeTime.tv_sec) == seconds && Int64(status.changeTime.tv_nsec) == nanoseconds
        }
    }

    /// The storage version the last versioned plan reached, nil when none ran.
    package var reached: String?
    /// The versions the build that reached it knew.
    package var known: [String] = []
    /// The folders the run stamped, in the record's order.
    package var stamps: [Stamp] = []
    /// True for a record that is there but cannot be read (damaged, or of a newer format): the
    /// launch check then answers "pending" and lets a run look at everything.
    package var isUnreadable = false
    /// True when the record promises that no journal is beside it (format 2).
    package var promisesNoJournal = true

    package static let format = "backstage-launch 2"
    /// The longest text a symbolic link holds on Linux and Apple platforms (`PATH_MAX` - 1), with room to spare.
    package static let maximumLength = 4000
    /// The format before the journal promise, still read.
    package static let formatWithoutPromise = "backstage-launch 1"

    static func path(in container: AppContainer) -> String {
        container.launchRecordPath
    }

    package static func read(_ container: AppContainer, fileSystem: FileSystem) -> LaunchRecord? {
        guard
            let record = fileSystem.withLink(
                path(in: container), { LaunchRecord(text: $0) ?? LaunchRecord(unreadable: ()) })
        else {
            // Not a link: absent (the usual case before any run), or something else in its place.
            return fileSystem.exists(path(in: container)) ? LaunchRecord(unreadable: ()) : nil
        }
        return record
    }

    /// True when a build knowing `versions` is older than the one that wrote this: that build
    /// knew every one of them, and reached a version not among them. (A build that knew fewer
    /// versions than the reader wrote it: the reader is the newer one.)
    package func isNewer(than versions: [String]) -> Bool {
        guard let reached else { return false }
        return !versions.contains(reached) && Set(versions).isSubset(of: known)
    }

    /// Records what a completed run of `plan` left: the version it reached (a plan without one
    /// keeps the version recorded before), and each folder it quarantines, once it is seen
    /// without strays and the clock has moved past its change time (so that a later change
    /// cannot carry the same time: the kernel stamps files with a clock a tick coarse).
    static func update(after plan: UpgradePlan, in container: AppContainer, fileSystem: FileSystem) throws {
        let previous = read(container, fileSystem: fileSystem)
        // The promise holds only if no step left its journal (each clears it when it is done).
        guard JournalFile.mayPromiseNoJournal(in: container, fileSystem: fileSystem) else { return }
        var record = previous.flatMap { $0.isUnreadable ? nil : $0 } ?? LaunchRecord()
        record.promisesNoJournal = true
        if let reached = plan.versions.last {
            record.reached = reached
            record.known = plan.versions
        }
        let probed = plan.probedStores
        func names(in folder: ContainerLocation) -> [String] { probed.filter { $0.folder == folder }.map(\.name) }
        var quarantined: [ContainerLocation] = []
        for step in plan.steps {
            guard case .quarantine(let quarantine) = step else { continue }
            quarantined.append(quarantine.folder)
            let name = quarantine.folder.description
            record.stamps.removeAll { $0.folder == name }
            if let quiet = stamp(
                quarantine.folder, lookingFor: names(in: quarantine.folder), noStrays: true, in: container,
                fileSystem: fileSystem)
            {
                record.stamps.append(quiet)
            }
        }
        // Every other folder the plan looks for stores in, when some were absent from it.
        var folders: [ContainerLocation] = []
        for store in probed where !folders.contains(store.folder) && !quarantined.contains(store.folder) {
            folders.append(store.folder)
        }
        for folder in folders {
            let name = folder.description
            guard !record.stamps.contains(where: { $0.folder == name && $0.noStrays }) else { continue }
            record.stamps.removeAll { $0.folder == name }
            if let seen = stamp(
                folder, lookingFor: names(in: folder), noStrays: false, in: container, fileSystem: fileSystem),
                !seen.absent.isEmpty
            {
                record.stamps.append(seen)
            }
        }
        // A symbolic link's target holds at most 4,095 bytes: a long plan's stamps are dropped
        // from the last until it fits (each costs the launch check a few more stats, nothing else);
        // then the oldest known versions (the guard file keeps them all, see ``DowngradeGuard``).
        while record.text.utf8.count > maximumLength, !record.stamps.isEmpty { record.stamps.removeLast() }
        while record.text.utf8.count > maximumLength, record.known.count > 1 { record.known.removeFirst() }
        guard record.text.utf8.count <= maximumLength else { return }
        guard record != previous, record.reached != nil || !record.stamps.isEmpty else { return }
        let path = path(in: container)
        try fileSystem.createDirectories((path as NSString).deletingLastPathComponent)
        if previous?.isUnreadable == true, fileSystem.withLink(path, { _ in () }) == nil {
            try fileSystem.removeFile(path)
        }
        try fileSystem.writeLinkAtomically(record.text, to: path)
    }

    /// - parameter names: Stores the plan looks for directly in `folder`; those absent while the
    ///   folder keeps its change time are recorded as absent.
    /// - parameter noStrays: Stamp the folder only if it holds no stray (a quarantined folder).
    private static func stamp(
        _ folder: ContainerLocation, lookingFor names: [String], noStrays: Bool, in container: AppContainer,
        fileSystem: FileSystem
    ) -> Stamp? {
        let path = folder.filePath(in: container)
        guard let before = try? fileSystem.status(path), before.kind == .directory else { return nil }
        // Wait (once per upgrade, at most 30 ms) until a change made now would get a later time.
        let margin: Int64 = 30_000_000
        let changed = Int64(before.changeTime.tv_sec) * 1_000_000_000 + Int64(before.changeTime.tv_nsec)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let wait = changed + margin - (Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec))
        if wait > 0 { usleep(useconds_t(min(wait, margin) / 1000 + 1)) }
        if noStrays {
            guard
                let entries = try? FileClassifier(fileSystem: fileSystem).scan(
                    URL(filePath: path, directoryHint: .isDirectory), recursive: false, measuringFolders: false),
                FileClassifier.strays(in: entries).isEmpty
            else { return nil }
        }
        guard let listed = try? fileSystem.contents(of: path),
            let after = try? fileSystem.status(path), after.device == before.device, after.inode == before.inode,
            after.changeTime.tv_sec == before.changeTime.tv_sec, after.changeTime.tv_nsec == before.changeTime.tv_nsec
        else { return nil }
        // Listed between two equal change times: the names are what the folder held at that time.
        let present = Set(listed)
        return Stamp(
            folder: folder.description, device: before.device, inode: before.inode,
            seconds: Int64(before.changeTime.tv_sec), nanoseconds: Int64(before.changeTime.tv_nsec),
            absent: names.filter { !present.contains($0) }, noStrays: noStrays)
    }

    // MARK: Text

    package var text: String {
        var lines = [Self.format]
        if let reached { lines.append("reached " + Self.escape(reached)) }
        if !known.isEmpty { lines.append((["known"] + known.map(Self.escape)).joined(separator: " ")) }
        for entry in stamps {
            lines.append(
                ([
                    (entry.noStrays ? "quiet " : "seen ")
                        + "\(Self.escape(entry.folder)) \(entry.device) \(entry.inode) \(entry.seconds) \(entry.nanoseconds)"
                ] + entry.absent.map(Self.escape)).joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    /// Reads the text of a record; nil for anything else (a newer format, damage): the launch
    /// check then looks at everything itself. ``LaunchRecordView`` is the one parser; this copies
    /// what it found into strings and arrays.
    package init?(text bytes: UnsafeRawBufferPointer) {
        guard let view = LaunchRecordView(bytes) else { return nil }
        self = view.record
    }

    private init(unreadable: Void) { isUnreadable = true }

    package init(reached: String? = nil, known: [String] = [], stamps: [Stamp] = []) {
        self.reached = reached
        self.known = known
        self.stamps = stamps
    }

    /// `%XX` for `%`, space, control characters and DEL; every other byte as it is.
    private static func escape(_ word: String) -> String {
        func needsEscape(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "%") || byte <= 0x20 || byte == 0x7F }
        guard word.utf8.contains(where: needsEscape) else { return word }
        var out: [UInt8] = []
        for byte in word.utf8 {
            if needsEscape(byte) { out += Array(String(format: "%%%02X", byte).utf8) } else { out.append(byte) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

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
        while start <= words.upperBound {
            count += 1
            guard let end = wordEnd(from: start, before: words.upperBound, storeName: isStamp && count > 5) else {
                return false
            }
            if isStamp, (2...5).contains(count) {
                let number = start..<end
                guard count < 4 ? Self.unsigned(bytes, number) != nil : Self.signed(bytes, number) != nil else {
                    return false
                }
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
        }
        return true
    }

    /// Where the word starting at `start` ends (a space, or `end`), when it is well formed:
    /// non-empty, no raw control character, its escapes `%` and two hex digits, its decoded
    /// bytes UTF-8 (and, for a store's name, without `/`). Nil otherwise. One pass over its bytes.
    private mutating func wordEnd(from start: Int, before end: Int, storeName: Bool) -> Int? {
        var position = start
        var high: UInt8 = 0
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

    /// ``LaunchRecord/isNewer(than:)``, on the bytes.
    package func isNewer(than versions: [String]) -> Bool {
        guard let reached else { return false }
        if versions.contains(where: { word(reached, is: $0) }) { return false }
        guard let known else { return versions.isEmpty }
        return versions.allSatisfy { version in
            var next = known.lowerBound
            while let (candidate, after) = word(in: known, from: next) {
                if word(candidate, is: version) { return true }
                next = after
            }
            return false
        }
    }

    /// True when the record has a `quiet` or `seen` line.
    package var hasStamps: Bool { firstStamp != nil }

    /// The stamp of the folder `root` + `/` + `path` (the root alone when `path` is empty): a
    /// `quiet` one when `absent` is nil, else one listing `absent` among the names absent then.
    /// Nil when there is none. On the bytes: no string, no array.
    package func stamp(
        folder root: UnsafeRawBufferPointer, _ path: UnsafeRawBufferPointer, absent name: UnsafeRawBufferPointer?
    ) -> LaunchRecord.FoundStamp? {
        var found: LaunchRecord.FoundStamp?
        forEachStamp { ordinal, noStrays, folder, rest in
            if name == nil && !noStrays { return true }
            guard isFolder(folder, root, path), let (numbers, absent) = numbersAndNames(rest) else { return true }
            if let name {
                var next = absent.lowerBound
                var listed = false
                while !listed, let (word, after) = word(in: absent, from: next) {
                    listed = equal(word, name)
                    next = after
                }
                guard listed else { return true }
            }
            found = LaunchRecord.FoundStamp(
                index: ordinal, device: numbers.device, inode: numbers.inode, seconds: numbers.seconds,
                nanoseconds: numbers.nanoseconds)
            return false
        }
        return found
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
