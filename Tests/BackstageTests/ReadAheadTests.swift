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

    @Test func filesAreReadAheadOfTheReaderWithinTheWindow() throws {
        let folder = try TemporaryDirectory()
        guard try !Self.onTmpfs(folder.path) else { return }
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
        #expect(try paths.map(Self.resident) == [0, 0, 0, 0], "dropped from the page cache")

        // A window of 300 KiB from file 0: files 0 and 1 start within it, 2 and 3 do not.
        let readAhead = ReadAhead(paths.map { ReadAhead.File(path: $0, bytes: Int64(size)) }, window: 300 << 10, fileSystem: fileSystem)
        defer { readAhead.stop() }
        #expect(try Self.eventually { try Self.resident(paths[0]) == size && Self.resident(paths[1]) == size })
        #expect(try Self.resident(paths[2]) == 0 && Self.resident(paths[3]) == 0, "nothing beyond the window")
        readAhead.reached(2)
        #expect(try Self.eventually { try Self.resident(paths[2]) == size && Self.resident(paths[3]) == size })
    }
}
