import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Reading ahead fills the kernel's page cache with the next files before a reader asks, never
/// more than its window ahead of the reader; a benchmark empties it before each case. Checked
/// with util-linux's `fincore`, on a disk file system (tmpfs pages cannot be dropped).
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/fincore"), "util-linux's fincore"))
struct ReadAheadTests {
    /// Bytes of `path` in the page cache.
    static func resident(_ path: String) throws -> Int {
        let result = try runProcess("/usr/bin/fincore", ["--bytes", "--noheadings", "--output", "RES", path])
        return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    static func onTmpfs(_ path: String) throws -> Bool {
        try runProcess("/usr/bin/stat", ["-f", "-c", "%T", path]).stdout.contains("tmpfs")
    }

    /// Polls until `condition` holds, for at most 10 s (the disk is slow, not the code).
    static func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        for _ in 0..<200 {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }

    /// How many times anything on this machine dropped the page cache (`echo 1 > drop_caches`, as a
    /// cold benchmark does, this suite's own bench tests included): `drop_pagecache` of /proc/vmstat.
    static func cacheDrops() throws -> Int {
        let vmstat = try String(contentsOfFile: "/proc/vmstat", encoding: .utf8)
        let line = vmstat.split(separator: "\n").first { $0.hasPrefix("drop_pagecache ") }
        return line.flatMap { Int($0.dropFirst("drop_pagecache ".count)) } ?? 0
    }

    /// What a reader of four 256 KiB files finds in the page cache: after the read-ahead started
    /// (files 0 and 1 within its window, 2 and 3 not), then after the reader reached file 2.
    struct Observed: Equatable {
        var dropped: [Int]
        var windowReadAhead: Bool
        var beyondWindow: [Int]
        var movedOn: Bool
    }

    static func observe(in folder: TemporaryDirectory) throws -> Observed {
        let size = 256 << 10
        var random = SystemRandomNumberGenerator()
        let paths = try (0..<4).map { index in
            let path = folder.path + "/file \(index)"
            try Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: URL(filePath: path))
            return path
        }
        sync()
        let fileSystem = FileSystem()
        try fileSystem.dropFromCache(folder.path)
        let dropped = try paths.map(Self.resident)

        // A window of 300 KiB from file 0: files 0 and 1 start within it, 2 and 3 do not.
        let readAhead = ReadAhead(
            paths.map { ReadAhead.File(path: $0, bytes: Int64(size)) }, window: 300 << 10, fileSystem: fileSystem)
        defer { readAhead.stop() }
        let windowReadAhead = try Self.eventually {
            try Self.resident(paths[0]) == size && Self.resident(paths[1]) == size
        }
        let beyondWindow = try [Self.resident(paths[2]), Self.resident(paths[3])]
        readAhead.reached(2, bytesBefore: Int64(2 * size))
        let movedOn = try Self.eventually { try Self.resident(paths[2]) == size && Self.resident(paths[3]) == size }
        return Observed(
            dropped: dropped, windowReadAhead: windowReadAhead, beyondWindow: beyondWindow, movedOn: movedOn)
    }

    @Test func filesAreReadAheadOfTheReaderWithinTheWindow() throws {
        let folder = try TemporaryDirectory()
        guard try !Self.onTmpfs(folder.path) else { return }
        // Another process (or test) dropping every cache mid-way empties what was read ahead: such a
        // try proves nothing either way and is made again, a few times at most.
        var observed: Observed
        var attempts = 0
        repeat {
            attempts += 1
            let drops = try Self.cacheDrops()
            observed = try Self.observe(in: try TemporaryDirectory())
            if try Self.cacheDrops() == drops { break }
        } while attempts < 5
        #expect(observed.dropped == [0, 0, 0, 0], "dropped from the page cache")
        #expect(observed.windowReadAhead, "files 0 and 1, within the window, read ahead")
        #expect(observed.beyondWindow == [0, 0], "nothing beyond the window")
        #expect(observed.movedOn, "the window moved on with the reader: files 2 and 3 read ahead")
    }
}
