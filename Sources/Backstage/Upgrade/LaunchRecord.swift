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
struct LaunchRecord: Equatable {
    /// A folder as a run left it: its identity and change time, the stores the plan looks for in
    /// it that were absent then, and whether it had no stray (a quarantined folder, `quiet`) or
    /// was only looked at (`seen`).
    struct Stamp: Equatable {
        var folder: String
        var device: UInt64
        var inode: UInt64
        var seconds: Int64
        var nanoseconds: Int64
        /// Names of stores the plan looks for directly in the folder that were absent then.
        var absent: [String] = []
        /// True when the run also saw no stray in it (a `quiet` line).
        var noStrays = true

        /// What the launch check needs of it, as the `index`th stamp of the record.
        func found(at index: Int) -> FoundStamp {
            FoundStamp(index: index, device: device, inode: inode, seconds: seconds, nanoseconds: nanoseconds)
        }
    }

    /// What the launch check needs of a stamp it found: which one, and the folder as it was.
    struct FoundStamp {
        var index: Int
        var device: UInt64
        var inode: UInt64
        var seconds: Int64
        var nanoseconds: Int64

        /// True when `status` is the folder, unchanged.
        func matches(_ status: FileStatus?) -> Bool {
            guard let status, status.kind == .directory else { return false }
            return status.device == device && status.inode == inode
                && Int64(status.changeTime.tv_sec) == seconds && Int64(status.changeTime.tv_nsec) == nanoseconds
        }
    }

    /// The storage version the last versioned plan reached, nil when none ran.
    var reached: String?
    /// The versions the build that reached it knew.
    var known: [String] = []
    /// The folders the run stamped, in the record's order.
    var stamps: [Stamp] = []
    /// True for a record that is there but cannot be read (damaged, or of a newer format): the
    /// launch check then answers "pending" and lets a run look at everything.
    var isUnreadable = false
    /// True when the record promises that no journal is beside it (format 2).
    var promisesNoJournal = true

    static let format = "backstage-launch 2"
    /// The longest text a symbolic link holds on Linux and Apple platforms (`PATH_MAX` - 1), with room to spare.
    static let maximumLength = 4000
    /// The format before the journal promise, still read.
    static let formatWithoutPromise = "backstage-launch 1"

    static func path(in container: AppContainer) -> String {
        container.launchRecordPath
    }

    static func read(_ container: AppContainer, fileSystem: FileSystem) -> LaunchRecord? {
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
    func isNewer(than versions: [String]) -> Bool {
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

    var text: String {
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

    /// Parses the text of a record; nil for anything else (a newer format, damage): the launch
    /// check then looks at everything itself. It runs at every launch, so it walks the bytes
    /// once without splitting them into arrays.
    init?(text bytes: UnsafeRawBufferPointer) {
        var index = 0
        func nextLine() -> Range<Int>? {
            guard index < bytes.count else { return nil }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            defer { if index < bytes.count { index += 1 } }
            return start..<index
        }
        guard let first = nextLine() else { return nil }
        if bytes[first].elementsEqual(Self.format.utf8) {
            promisesNoJournal = true
        } else if bytes[first].elementsEqual(Self.formatWithoutPromise.utf8) {
            promisesNoJournal = false
        } else {
            return nil
        }
        while let line = nextLine() {
            var cursor = line.lowerBound
            func nextWord() -> Range<Int>? {
                guard cursor < line.upperBound else { return nil }
                let start = cursor
                while cursor < line.upperBound, bytes[cursor] != UInt8(ascii: " ") { cursor += 1 }
                defer { if cursor < line.upperBound { cursor += 1 } }
                return start..<cursor
            }
            func number() -> Int64? { nextWord().flatMap { Self.decimal(bytes[$0]) } }
            guard let key = nextWord() else { continue }
            switch String(decoding: bytes[key], as: UTF8.self) {
            case "reached":
                guard let word = nextWord(), let version = Self.unescape(bytes[word]), nextWord() == nil else {
                    return nil
                }
                reached = version
            case "known":
                while let word = nextWord() {
                    guard let version = Self.unescape(bytes[word]) else { return nil }
                    known.append(version)
                }
            case "quiet", "seen":
                guard let word = nextWord(), let folder = Self.unescape(bytes[word]),
                    let device = number(), let inode = number(), let seconds = number(), let nanoseconds = number()
                else { return nil }
                var absent: [String] = []
                while let word = nextWord() {
                    guard let name = Self.unescape(bytes[word]), !name.isEmpty, !name.contains("/") else { return nil }
                    absent.append(name)
                }
                stamps.append(
                    Stamp(
                        folder: folder, device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode),
                        seconds: seconds, nanoseconds: nanoseconds, absent: absent,
                        noStrays: bytes[key].first == UInt8(ascii: "q")))
            default:
                return nil
            }
        }
    }

    private init(unreadable: Void) { isUnreadable = true }

    init(reached: String? = nil, known: [String] = [], stamps: [Stamp] = []) {
        self.reached = reached
        self.known = known
        self.stamps = stamps
    }

    /// A decimal integer, `-` allowed first; nil for anything else or an overflow.
    static func decimal(_ digits: Slice<UnsafeRawBufferPointer>) -> Int64? {
        decimal(digits.base, digits.startIndex..<digits.endIndex)
    }

    /// The decimal integer at `range` of `bytes`. Integer indices, no slice: the launch check
    /// calls it for every number of the record, and a generic slice's indices cost more than the
    /// digits (callgrind: a third of the check's instructions went to `Slice.indices`).
    static func decimal(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int64? {
        guard !range.isEmpty else { return nil }
        var value: Int64 = 0
        var position = range.lowerBound
        let negative = bytes[position] == UInt8(ascii: "-") && range.count > 1
        if negative { position += 1 }
        while position < range.upperBound {
            let byte = bytes[position]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflow, !overflow2 else { return nil }
            value = sum
            position += 1
        }
        return negative ? -value : value
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

    private static func unescape(_ bytes: Slice<UnsafeRawBufferPointer>) -> String? {
        guard bytes.contains(UInt8(ascii: "%")) else { return String(decoding: bytes, as: UTF8.self) }
        var out: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                    let value = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
                else { return nil }
                out.append(value)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The launch record as the launch check reads it: the bytes of the link's target, asked only
/// what the check needs, without building strings or arrays (a parse cost more than the two
/// `lstat`s it saves).
struct LaunchRecordView {
    let bytes: UnsafeRawBufferPointer
    /// ``LaunchRecord/promisesNoJournal``.
    let promisesNoJournal: Bool
    /// The words after the key of the `reached` and `known` lines, and where the first stamp (`quiet`, `seen`)
    /// line starts: found while the lines are checked, so that no question scans them again.
    private var reached: Range<Int>?
    private var known: Range<Int>?
    private var firstStamp: Int?

    /// Nil unless the text is a record of this format, every line of it well formed (the full
    /// parse then calls anything else unreadable).
    init?(_ bytes: UnsafeRawBufferPointer) {
        // "backstage-launch 2\n" (or 1, which makes no promise about the journal).
        let format: StaticString = "backstage-launch "
        let headerCount = format.utf8CodeUnitCount + 2
        guard bytes.count >= headerCount,
            memcmp(bytes.baseAddress!, format.utf8Start, format.utf8CodeUnitCount) == 0,
            bytes[headerCount - 1] == UInt8(ascii: "\n")
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

    /// Checks one line (a known key, the right number of non-empty words, numbers where numbers
    /// belong) and notes where it is.
    private mutating func record(line: Range<Int>) -> Bool {
        var keyEnd = line.lowerBound
        while keyEnd < line.upperBound, bytes[keyEnd] != UInt8(ascii: " ") { keyEnd += 1 }
        guard keyEnd < line.upperBound else { return false }
        let words = keyEnd + 1..<line.upperBound
        // Count the words after the key; every one non-empty; words 2 to 5 of a stamp (quiet, seen) numbers.
        let isStamp = matches(line.lowerBound..<keyEnd, "quiet") || matches(line.lowerBound..<keyEnd, "seen")
        var count = 0
        var start = words.lowerBound
        while start <= words.upperBound {
            var end = start
            while end < words.upperBound, bytes[end] != UInt8(ascii: " ") { end += 1 }
            guard end > start else { return false }
            count += 1
            if isStamp, (2...5).contains(count), LaunchRecord.decimal(bytes, start..<end) == nil { return false }
            start = end + 1
        }
        if matches(line.lowerBound..<keyEnd, "reached") {
            guard count == 1 else { return false }
            reached = words
        } else if matches(line.lowerBound..<keyEnd, "known") {
            known = words
        } else if isStamp {
            guard count >= 5 else { return false }
            if firstStamp == nil { firstStamp = line.lowerBound }
        } else {
            return false
        }
        return true
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

    /// True when the word's bytes are `text` (escaped words, with `%`, never match: the record's
    /// parse then decides, in ``LaunchRecord``).
    private func word(_ range: Range<Int>, is text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            utf8.count == range.count
                && (utf8.isEmpty || memcmp(bytes.baseAddress! + range.lowerBound, utf8.baseAddress!, utf8.count) == 0)
        }
    }

    /// True when the record contains an escape, which only the full parse reads.
    var isEscaped: Bool { memchr(bytes.baseAddress!, Int32(UInt8(ascii: "%")), bytes.count) != nil }

    /// ``LaunchRecord/isNewer(than:)``, on the bytes.
    func isNewer(than versions: [String]) -> Bool {
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
    var hasStamps: Bool { firstStamp != nil }

    /// The stamp of the folder `root` + `/` + `path` (the root alone when `path` is empty): a
    /// `quiet` one when `absent` is nil, else one listing `absent` among the names absent then.
    /// Nil when there is none, or its numbers cannot be read. On the bytes: no string, no array.
    func stamp(
        folder root: UnsafeRawBufferPointer, _ path: UnsafeRawBufferPointer, absent name: UnsafeRawBufferPointer?
    ) -> LaunchRecord.FoundStamp? {
        guard var index = firstStamp else { return nil }
        var ordinal = 0
        while index < bytes.count {
            let end = lineEnd(from: index)
            defer { index = end + 1 }
            let noStrays = matches(index..<min(index + 5, end), "quiet")
            guard noStrays || matches(index..<min(index + 4, end), "seen") else { continue }
            defer { ordinal += 1 }
            if name == nil && !noStrays { continue }
            let words = (noStrays ? index + 6 : index + 5)..<end
            guard let (folder, afterFolder) = word(in: words, from: words.lowerBound), isFolder(folder, root, path)
            else { continue }
            var numbers = (Int64(0), Int64(0), Int64(0), Int64(0))
            var next = afterFolder
            for position in 0..<4 {
                guard let (number, after) = word(in: words, from: next), let value = LaunchRecord.decimal(bytes, number)
                else { return nil }
                switch position {
                case 0: numbers.0 = value
                case 1: numbers.1 = value
                case 2: numbers.2 = value
                default: numbers.3 = value
                }
                next = after
            }
            if let name {
                var listed = false
                while !listed, let (absent, after) = word(in: words, from: next) {
                    listed = equal(absent, name)
                    next = after
                }
                guard listed else { continue }
            }
            return LaunchRecord.FoundStamp(
                index: ordinal, device: UInt64(bitPattern: numbers.0), inode: UInt64(bitPattern: numbers.1),
                seconds: numbers.2, nanoseconds: numbers.3)
        }
        return nil
    }

    /// True when the word is `root`, or `root/path` for a non-empty path.
    private func isFolder(_ word: Range<Int>, _ root: UnsafeRawBufferPointer, _ path: UnsafeRawBufferPointer) -> Bool {
        if path.isEmpty { return equal(word, root) }
        guard word.count == root.count + 1 + path.count, bytes[word.lowerBound + root.count] == UInt8(ascii: "/") else {
            return false
        }
        return equal(word.lowerBound..<word.lowerBound + root.count, root)
            && equal(word.lowerBound + root.count + 1..<word.upperBound, path)
    }

    private func equal(_ word: Range<Int>, _ text: UnsafeRawBufferPointer) -> Bool {
        word.count == text.count
            && (text.isEmpty || memcmp(bytes.baseAddress! + word.lowerBound, text.baseAddress!, text.count) == 0)
    }
}
