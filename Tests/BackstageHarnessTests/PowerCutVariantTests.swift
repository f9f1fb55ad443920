import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// A power cut is tried with unsynced writes kept and with them lost; where every write before the
/// cut was fsynced the two are one state, tried once, and where one was not, the lost state is tried
/// and really takes the write back.
@Suite struct PowerCutVariantTests {
    /// A file written, fsynced, renamed into place, its folder fsynced, then a second file written
    /// and never fsynced: the operations of a run that copies a store, then starts a log.
    static let log = [
        "0\tcreate\tR/a.tmp", "1\twrite\tR/a.tmp", "2\tfsync\tR/a.tmp", "3\trename\tR/a.tmp\tR/a",
        "4\tfsync\tR", "5\tcreate\tR/b", "6\twrite\tR/b",
    ]

    /// What the disk holds when the run is killed before operation `after`.
    static func killed(before after: Int, in root: URL) throws {
        try? FileManager.default.removeItem(at: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let name = after > 3 ? "a" : "a.tmp"
        if after > 0 { try Data((after > 1 ? "rows" : "").utf8).write(to: root.appending(path: name)) }
        if after > 5 { try Data((after > 6 ? "log" : "").utf8).write(to: root.appending(path: "b")) }
    }

    @Test func theWritesLostStateIsTriedOnlyWhereAWriteWasNotYetFsynced() throws {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "R")
        let file = scratch.url.appending(path: "disk.log")
        try Data(Self.log.map { $0.replacingOccurrences(of: "R", with: root.path) + "\n" }.joined().utf8).write(to: file)
        let events = try DiskEvent.log(at: file)
        let cuts = PowerCut.cuts(after: Array(0...8), of: events, root: root)
        #expect(cuts.filter(\.losesUnsyncedWrites).map(\.after) == [2, 7, 8], "after the first write, and after b's")
        #expect(cuts.filter { !$0.losesUnsyncedWrites }.map(\.after) == Array(0...8), "every cut with its writes kept")

        // Each cut left out is one whose lost state takes nothing back; each kept takes a write back.
        for after in 0...8 {
            try Self.killed(before: after, in: root)
            let stash = scratch.url.appending(path: "stash")
            try FileManager.default.createDirectory(at: stash, withIntermediateDirectories: true)
            let effect = try PowerCut(after: after, losesUnsyncedWrites: true).apply(to: events, stash: stash)
            let tried = cuts.contains { $0.after == after && $0.losesUnsyncedWrites }
            #expect(effect.emptied.isEmpty != tried, "cut @\(after): emptied \(effect.emptied.count) file(s)")
        }
    }

    /// A file written and never fsynced, then replaced by a rename of a fsynced file onto its name:
    /// the written bytes are gone with it, and the file now under the name keeps its own.
    @Test func aWriteToAFileARenameReplacedIsNotTakenBackFromTheFileThatReplacedIt() throws {
        let scratch = try TemporaryDirectory()
        let root = scratch.url.appending(path: "R")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let log = [
            "0\tcreate\tR/c", "1\twrite\tR/c", "2\tcreate\tR/d.tmp", "3\twrite\tR/d.tmp", "4\tfsync\tR/d.tmp",
            "5\trename\tR/d.tmp\tR/c", "6\tfsync\tR",
        ]
        let file = scratch.url.appending(path: "disk.log")
        try Data(log.map { $0.replacingOccurrences(of: "R", with: root.path) + "\n" }.joined().utf8).write(to: file)
        let events = try DiskEvent.log(at: file)
        #expect(PowerCut.cuts(after: [7], of: events, root: root).map(\.losesUnsyncedWrites) == [false])

        let durable = Data("rows".utf8)
        try durable.write(to: root.appending(path: "c"))
        let stash = scratch.url.appending(path: "stash")
        try FileManager.default.createDirectory(at: stash, withIntermediateDirectories: true)
        let effect = try PowerCut(after: 7, losesUnsyncedWrites: true).apply(to: events, stash: stash)
        #expect(effect.emptied.isEmpty && effect.undone.isEmpty)
        #expect(try Data(contentsOf: root.appending(path: "c")) == durable, "the renamed file's fsynced bytes stay")
    }
}
