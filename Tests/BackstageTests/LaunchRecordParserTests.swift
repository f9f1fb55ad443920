import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The launch record's one parser (`LaunchRecordView`, which `LaunchRecord(text:)` builds on):
/// every field a run writes is read back as it was, and anything else is unreadable, so the
/// launch check answers "pending" instead of trusting damage.
@Suite struct LaunchRecordParserTests {
    static func parse(_ bytes: [UInt8]) -> LaunchRecord? {
        bytes.withUnsafeBytes { LaunchRecord(text: $0) }
    }

    static func parse(_ text: String) -> LaunchRecord? { parse(Array(text.utf8)) }

    static func view<R>(_ text: String, _ body: (LaunchRecordView?) -> R) -> R {
        Array(text.utf8).withUnsafeBytes { body(LaunchRecordView($0)) }
    }

    @Test func everyFieldRoundTrips() {
        var record = LaunchRecord(
            reached: "2.0 beta%",
            known: ["v1", "2.0 beta%", "ünïcode", "tab\there", "new\nline", "del\u{7F}", "🦊"],
            stamps: [
                LaunchRecord.Stamp(
                    folder: "documents", device: 2049, inode: 1311, seconds: 1_763_900_000, nanoseconds: 123_456_789,
                    absent: ["Notes.sqlite", "My Notes.sqlite"]),
                LaunchRecord.Stamp(
                    folder: "applicationSupport/Stores 2", device: .max, inode: 0, seconds: .min, nanoseconds: -1,
                    absent: ["100%.sqlite"], noStrays: false),
                LaunchRecord.Stamp(
                    folder: "caches", device: 1, inode: .max, seconds: .max, nanoseconds: 0, noStrays: false),
            ])
        #expect(Self.parse(record.text) == record, "\(record.text)")
        #expect(record.text.hasPrefix("backstage-launch 2\nreached 2.0%20beta%25\n"), "\(record.text)")
        record.promisesNoJournal = false
        let former = record.text.replacingOccurrences(of: "backstage-launch 2", with: "backstage-launch 1")
        #expect(Self.parse(former) == record, "format 1 is read, without the journal promise")
        #expect(Self.parse("backstage-launch 2") == LaunchRecord(), "a record of no line")
    }

    @Test func theLaunchCheckFindsEscapedFoldersAndNamesOnTheBytes() {
        let record = LaunchRecord(
            reached: "2.0 beta", known: ["1.0 beta", "2.0 beta"],
            stamps: [
                LaunchRecord.Stamp(folder: "documents", device: 1, inode: 2, seconds: 3, nanoseconds: 4),
                LaunchRecord.Stamp(
                    folder: "documents/My Stores", device: 5, inode: 6, seconds: 7, nanoseconds: 8,
                    absent: ["Old Notes.sqlite"], noStrays: false),
            ])
        Self.view(record.text) { (view: LaunchRecordView?) -> Void in
            guard let view else {
                Issue.record("unread: \(record.text)")
                return
            }
            #expect(view.promisesNoJournal && view.hasStamps)
            #expect(!view.isNewer(than: ["1.0 beta", "2.0 beta"]))
            #expect(view.isNewer(than: ["1.0 beta"]), "a build knowing only 1.0 beta is older")
            let found = Self.stamp(view, "documents", "My Stores", absent: "Old Notes.sqlite")
            #expect(found?.index == 1 && found?.device == 5 && found?.inode == 6)
            #expect(found?.seconds == 7 && found?.nanoseconds == 8)
            #expect(Self.stamp(view, "documents", "", absent: nil)?.index == 0, "the quiet one")
            #expect(Self.stamp(view, "documents", "My Stores", absent: nil) == nil, "a seen line vouches no quiet")
            #expect(Self.stamp(view, "documents", "My Stores", absent: "Notes.sqlite") == nil)
            #expect(Self.stamp(view, "documents", "My", absent: "Old Notes.sqlite") == nil)
        }
    }

    /// Words are checked eight bytes at a time: a byte that makes a record unreadable (a control
    /// character, DEL, a lone `%`, a `/` in a store's name, bytes that are not UTF-8) is found at
    /// whatever position of a long word it is, and an escape anywhere is decoded.
    @Test func aBadByteAnywhereInALongWordIsFoundAndAnEscapeAnywhereIsRead() {
        let long = Array("StoresOfTheAppAndMore.sqlite".utf8)
        func record(folder: [UInt8], name: [UInt8]) -> [UInt8] {
            Array("backstage-launch 2\nseen ".utf8) + folder + Array(" 1 2 3 4 ".utf8) + name
        }
        for position in long.indices {
            for bad: [UInt8] in [[0x01], [0x7F], [0x80], [UInt8(ascii: "%")], [UInt8(ascii: "%"), 0x47, 0x47]] {
                var word = long
                word.replaceSubrange(position...position, with: bad)
                #expect(Self.parse(record(folder: Array("documents".utf8), name: word)) == nil, "\(bad) at \(position)")
                #expect(Self.parse(record(folder: word, name: long)) == nil, "\(bad) at \(position) of the folder")
            }
            var slashed = long
            slashed[position] = UInt8(ascii: "/")
            #expect(Self.parse(record(folder: Array("documents".utf8), name: slashed)) == nil, "/ in a name at \(position)")
            var escaped = long
            escaped.replaceSubrange(position...position, with: Array(String(format: "%%%02X", long[position]).utf8))
            let read = Self.parse(record(folder: escaped, name: escaped))
            #expect(read?.stamps.first?.folder == "StoresOfTheAppAndMore.sqlite", "an escape at \(position)")
            #expect(read?.stamps.first?.absent == ["StoresOfTheAppAndMore.sqlite"])
        }
    }

    /// The first stamps are taken apart once, when the record is read; later ones when asked:
    /// every stamp is found either way, the first of a folder first.
    @Test func aRecordOfManyStampsFindsEachOfThem() {
        var stamps: [LaunchRecord.Stamp] = []
        var paths: [String] = []
        for index in 0..<9 {
            let path: String = index == 7 ? "" : "Folder \(index)"
            let folder: String = path.isEmpty ? "documents" : "documents/" + path
            paths.append(path)
            stamps.append(
                LaunchRecord.Stamp(
                    folder: folder, device: UInt64(index), inode: 10, seconds: 20, nanoseconds: Int64(index),
                    absent: ["Store \(index).sqlite"], noStrays: index % 2 == 0))
        }
        let record = LaunchRecord(reached: "v2", known: ["v1", "v2"], stamps: stamps)
        Self.view(record.text) { (view: LaunchRecordView?) -> Void in
            guard let view else {
                Issue.record("unread: \(record.text)")
                return
            }
            for (index, stamp) in stamps.enumerated() {
                let path = paths[index]
                let found = Self.stamp(view, "documents", path, absent: "Store \(index).sqlite")
                #expect(found?.index == index && found?.device == UInt64(index) && found?.nanoseconds == Int64(index))
                #expect((Self.stamp(view, "documents", path, absent: nil)?.index == index) == stamp.noStrays)
                #expect(Self.stamp(view, "documents", path, absent: "Store 99.sqlite") == nil)
            }
        }
    }

    /// The launch check's question for a folder the record does not stamp, or names only as a
    /// prefix of another, finds nothing: the check then looks at the folder itself.
    @Test func aFolderTheRecordDoesNotStampIsNotFound() {
        let record = LaunchRecord(
            stamps: [
                LaunchRecord.Stamp(folder: "documents/100% sure", device: 1, inode: 2, seconds: 3, nanoseconds: 4),
                LaunchRecord.Stamp(
                    folder: "caches", device: 5, inode: 6, seconds: 7, nanoseconds: 8, absent: ["A%B.sqlite"],
                    noStrays: false),
            ])
        #expect(record.text.contains("documents/100%25%20sure"), "\(record.text)")
        Self.view(record.text) { (view: LaunchRecordView?) -> Void in
            guard let view else {
                Issue.record("unread: \(record.text)")
                return
            }
            #expect(view.hasStamps)
            #expect(Self.stamp(view, "documents", "100% sure", absent: nil)?.index == 0, "found decoded")
            #expect(Self.stamp(view, "documents", "100%25%20sure", absent: nil) == nil, "compared decoded")
            #expect(Self.stamp(view, "documents", "100%", absent: nil) == nil, "a prefix of the folder")
            #expect(Self.stamp(view, "documents", "", absent: nil) == nil, "the root of a stamped folder")
            #expect(Self.stamp(view, "applicationSupport", "", absent: nil) == nil, "a folder never stamped")
            #expect(Self.stamp(view, "caches", "", absent: "A%B.sqlite")?.index == 1)
            #expect(Self.stamp(view, "caches", "", absent: "A.sqlite") == nil, "a name not listed absent")
        }
        Self.view("backstage-launch 2\nreached v1") { (view: LaunchRecordView?) -> Void in
            guard let view else {
                Issue.record("unread: a record of no stamp")
                return
            }
            #expect(!view.hasStamps && Self.stamp(view, "documents", "", absent: nil) == nil, "no stamp at all")
        }
    }

    static func stamp(
        _ view: LaunchRecordView, _ root: String, _ path: String, absent: String?
    ) -> LaunchRecord.FoundStamp? {
        Array(root.utf8).withUnsafeBytes { root in
            Array(path.utf8).withUnsafeBytes { path in
                guard let absent else { return view.stamp(folder: root, path, absent: nil) }
                return Array(absent.utf8).withUnsafeBytes { view.stamp(folder: root, path, absent: $0) }
            }
        }
    }

    static let valid =
        "backstage-launch 2\nreached v4\nknown v2 v3 v4\nquiet documents 2049 1311 1763900000 5 Notes.sqlite"

    static let malformed: [(String, [UInt8])] = [
        ("empty", []),
        ("truncated header", Array("backstage-launc".utf8)),
        ("truncated stamp", Array("backstage-launch 2\nquiet documents 2049 1311 17639".utf8)),
        ("truncated escape", Array("backstage-launch 2\nreached v%2".utf8)),
        ("a stamp short of a number", Array("backstage-launch 2\nquiet documents 2049 1311 1763900000".utf8)),
        ("a stamp of no number", Array("backstage-launch 2\nseen documents".utf8)),
        ("an escape in a number", Array(valid.replacingOccurrences(of: " 1311 ", with: " 13%311 ").utf8)),
        ("unknown version", Array("backstage-launch 3\nreached v4".utf8)),
        ("longer version", Array("backstage-launch 22\nreached v4".utf8)),
        ("no header", Array("reached v4".utf8)),
        ("letters for a number", Array(valid.replacingOccurrences(of: " 1311 ", with: " 13x1 ").utf8)),
        ("negative inode", Array(valid.replacingOccurrences(of: " 1311 ", with: " -1311 ").utf8)),
        ("overflowing device", Array(valid.replacingOccurrences(of: " 2049 ", with: " 18446744073709551616 ").utf8)),
        (
            "overflowing seconds",
            Array(valid.replacingOccurrences(of: " 1763900000 ", with: " 9223372036854775808 ").utf8)
        ),
        ("a sign alone", Array(valid.replacingOccurrences(of: " 5 ", with: " - ").utf8)),
        ("a plus sign", Array(valid.replacingOccurrences(of: " 5 ", with: " +5 ").utf8)),
        ("a fraction", Array(valid.replacingOccurrences(of: " 5 ", with: " 5.0 ").utf8)),
        ("a missing number", Array(valid.replacingOccurrences(of: " 5 ", with: "  ").utf8)),
        ("extra word after reached", Array(valid.replacingOccurrences(of: "reached v4", with: "reached v4 v5").utf8)),
        ("reached twice", Array((valid + "\nreached v5").utf8)),
        ("known twice", Array((valid + "\nknown v5").utf8)),
        ("unknown key", Array((valid + "\ncolour blue").utf8)),
        // Words as long as a key, or its start, or in another case: no key (keys are told by length and bytes).
        ("a key misspelt, seen", Array((valid + "\nseem documents 2049 1311 1763900000 5").utf8)),
        ("a key misspelt, quiet", Array(valid.replacingOccurrences(of: "quiet ", with: "quiez ").utf8)),
        ("a key misspelt, known", Array(valid.replacingOccurrences(of: "known ", with: "knows ").utf8)),
        ("a key misspelt, reached", Array(valid.replacingOccurrences(of: "reached ", with: "reachex ").utf8)),
        ("a key's start", Array(valid.replacingOccurrences(of: "quiet ", with: "quie ").utf8)),
        ("a key in capitals", Array(valid.replacingOccurrences(of: "known ", with: "KNOWN ").utf8)),
        ("a key alone", Array((valid + "\nknown").utf8)),
        ("an empty line", Array(valid.replacingOccurrences(of: "\nknown", with: "\n\nknown").utf8)),
        ("a trailing space", Array((valid + " ").utf8)),
        ("a slash in a store name", Array((valid + " sub/Notes.sqlite").utf8)),
        ("an escaped slash in a store name", Array((valid + " sub%2FNotes.sqlite").utf8)),
        ("a raw tab", Array(valid.replacingOccurrences(of: "v3", with: "v\t3").utf8)),
        ("a bad escape", Array(valid.replacingOccurrences(of: "v3", with: "v%G3").utf8)),
        ("non-UTF-8 byte", Array("backstage-launch 2\nreached v".utf8) + [0xFF]),
        ("truncated UTF-8", Array("backstage-launch 2\nknown v".utf8) + [0xC3] + Array(" v4".utf8)),
        ("escaped non-UTF-8", Array("backstage-launch 2\nreached v%FF".utf8)),
        ("NUL", Array("backstage-launch 2\nreached v".utf8) + [0]),
    ]

    @Test(arguments: malformed.indices)
    func malformedRecordsAreUnreadable(_ index: Int) {
        let (name, bytes) = Self.malformed[index]
        #expect(Self.parse(bytes) == nil, "\(name)")
        #expect(bytes.withUnsafeBytes { LaunchRecordView($0) } == nil, "\(name)")
    }

    @Test func theWellFormedTextTheMalformedOnesComeFromIsRead() {
        #expect(Self.parse(Self.valid)?.stamps.first?.absent == ["Notes.sqlite"])
        #expect(Self.parse(Self.valid + "\n")?.known == ["v2", "v3", "v4"], "a trailing newline")
    }

    /// A symbolic link's target holds at most 4,095 bytes: a record that long is read whole (the
    /// check's second, 4 KB buffer), one byte more cannot be written, and a run writes at most
    /// `LaunchRecord.maximumLength` bytes.
    @Test func aRecordAsLongAsALinkHoldsIsRead() throws {
        let directory = try TemporaryDirectory()
        var record = LaunchRecord(reached: "v4", known: [])
        while record.text.utf8.count < 4095 - 10 { record.known.append("v\(record.known.count)") }
        record.known.append(String(repeating: "x", count: 4095 - record.text.utf8.count - 1))
        #expect(record.text.utf8.count == 4095)
        let link = directory.url.appending(path: "launch").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: record.text)
        #expect(FileSystem().withLink(link, { LaunchRecord(text: $0) }) == record)

        let longer = directory.url.appending(path: "longer").path
        #expect(throws: (any Error).self) {
            try FileManager.default.createSymbolicLink(atPath: longer, withDestinationPath: record.text + "x")
        }
        #expect(LaunchRecord.maximumLength <= 4095)
    }

    /// A plan stamping more folders than a link holds: the run drops stamps until the record
    /// fits, and the launch check reads it (nothing pending) instead of finding it unreadable.
    @Test func aRunStampingManyFoldersWritesARecordThatFits() async throws {
        let app = try TestContainer()
        let folders = (0..<24).map { "Folder \($0) " + String(repeating: "n", count: 200) }
        for folder in folders {
            try FileManager.default.createDirectory(
                at: app.documents.appending(path: folder), withIntermediateDirectories: true)
        }
        let plan = UpgradePlan(
            name: "tidy", version: "v2",
            steps: folders.map { .quarantine(UpgradeStep.Quarantine(folder: ContainerLocation(.documents, $0))) })
        try await Upgrader(container: app.container).upgrade(plan)
        // (Foundation's destinationOfSymbolicLink cuts a target at 1 KB: the launch check's read.)
        let link = app.container.backstageDirectory.appending(path: "launch").path
        let text = try #require(FileSystem().withLink(link) { String(decoding: $0, as: UTF8.self) })
        #expect(text.utf8.count <= LaunchRecord.maximumLength && text.utf8.count > 2000)
        let record = try #require(Self.parse(text))
        #expect(record.reached == "v2" && !record.stamps.isEmpty && record.stamps.count < folders.count)
        #expect(!Upgrader.needsUpgrade(app.container, plan))
    }

    /// Records of random versions, folders and names (spaces, `%`, control characters, newlines,
    /// non-ASCII; numbers at their extremes) read back as written, and so does each text cut
    /// short, when it is read at all. A seeded generator: a failure names its seed and repeats.
    @Test func randomRecordsRoundTrip() {
        var random = SplitMix64(seed: 0x5EED_2026)
        for _ in 0..<500 {
            let record = random.record()
            let text = record.text
            #expect(Self.parse(text) == record, "seed 0x5EED_2026: \(text.debugDescription)")
            let bytes = Array(text.utf8)
            let cut = Int(random.next() % UInt64(bytes.count + 1))
            if let prefix = Self.parse(Array(bytes[..<cut])) {
                #expect(Self.parse(prefix.text) == prefix, "a prefix read is read again the same way")
            }
        }
    }
}

/// A small seeded generator (SplitMix64) for reproducible random records.
struct SplitMix64 {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    static let pieces = [
        "a", "Z", "0", "9", ".", "-", "_", " ", "%", "%25", "\t", "\n", "\u{7F}", "é", "ü", "🦊", "/",
    ]

    /// A non-empty word; with `/` only when `slash` allows it.
    mutating func word(slash: Bool = true) -> String {
        var word = ""
        for _ in 0...below(8) {
            let piece = Self.pieces[below(Self.pieces.count)]
            if piece != "/" || slash { word += piece }
        }
        return word.isEmpty ? "w" : word
    }

    mutating func number() -> UInt64 {
        switch below(4) {
        case 0: 0
        case 1: .max
        case 2: UInt64(below(10))
        default: next()
        }
    }

    mutating func record() -> LaunchRecord {
        var record = LaunchRecord(
            reached: below(4) == 0 ? nil : word(), known: (0..<below(4)).map { _ in word() },
            stamps: (0..<below(4)).map { _ in
                LaunchRecord.Stamp(
                    folder: word(), device: number(), inode: number(), seconds: Int64(bitPattern: number()),
                    nanoseconds: Int64(bitPattern: number()), absent: (0..<below(3)).map { _ in word(slash: false) },
                    noStrays: below(2) == 0)
            })
        record.promisesNoJournal = true
        return record
    }
}
