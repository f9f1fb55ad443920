import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The byte-for-byte proof every copy of a move ends with: one byte changed anywhere — in a
/// window's first or last byte, across the 1 MiB reads inside a window, in the last partial read —
/// makes two files unequal, and a verified copy of an unchanged file is identical.
struct ContentsEqualTests {
    /// 9 MiB and 17 bytes: a full 8 MiB window, then one of 1 MiB + 17 bytes.
    static let size = (9 << 20) + 17

    static func randomFile(at path: String) throws -> [UInt8] {
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? random.close() }
        let bytes = [UInt8](try #require(try random.read(upToCount: size)))
        try #require(bytes.count == size)
        try Data(bytes).write(to: URL(filePath: path))
        return bytes
    }

    @Test(arguments: [0, (1 << 20) - 1, 1 << 20, (8 << 20) - 1, 8 << 20, (9 << 20) + 16])
    func oneChangedByteAnywhereMakesTheFilesUnequal(at offset: Int) throws {
        let scratch = try TemporaryDirectory(prefix: "equal")
        let a = scratch.url.appending(path: "a").path, b = scratch.url.appending(path: "b").path
        var bytes = try Self.randomFile(at: a)
        try Data(bytes).write(to: URL(filePath: b))
        #expect(try FileSystem().contentsEqual(a, b))
        bytes[offset] ^= 0x01
        try Data(bytes).write(to: URL(filePath: b))
        #expect(try !FileSystem().contentsEqual(a, b))
    }

    @Test func aVerifiedCopyOfAnUnchangedFileIsIdenticalAndAShorterOneIsNot() throws {
        let scratch = try TemporaryDirectory(prefix: "equal")
        let a = scratch.url.appending(path: "a").path, b = scratch.url.appending(path: "b").path
        let bytes = try Self.randomFile(at: a)
        let copied = try FileSystem().copyVerified(a, to: b)
        #expect(copied.bytes == Int64(Self.size))
        #expect(copied.identical)
        #expect(try Data(contentsOf: URL(filePath: b)) == Data(bytes))
        try Data(bytes.dropLast()).write(to: URL(filePath: b))
        #expect(try !FileSystem().contentsEqual(a, b))
    }
}
