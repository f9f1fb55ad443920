import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The byte-for-byte proof every copy of a move ends with: one byte changed anywhere — in a
/// window's first or last byte, inside a window, in a file smaller than a window — makes two files
/// unequal, and a verified copy of an unchanged file is identical. A file shortened while it is
/// compared makes the files unequal. Comparing never touches the process's signal handling.
struct ContentsEqualTests {
    /// 10 MiB and 17 bytes: a full 8 MiB window, then one of 2 MiB and 17 bytes.
    static let size = (10 << 20) + 17
    /// Under 1 MiB: one partial window.
    static let smallSize = 300 << 10

    static func randomFile(at path: String, size: Int = size) throws -> [UInt8] {
        let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? random.close() }
        let bytes = [UInt8](try #require(try random.read(upToCount: size)))
        try #require(bytes.count == size)
        try Data(bytes).write(to: URL(filePath: path))
        return bytes
    }

    /// A file's size and the offset of the byte changed in its copy.
    static let changes: [(size: Int, offset: Int)] = {
        let large = [0, 4 << 20, (8 << 20) - 1, 8 << 20, 9 << 20, size - 1]
        let small = [0, 128 << 10, smallSize - 1]
        return large.map { (size, $0) } + small.map { (smallSize, $0) }
    }()

    @Test(arguments: changes)
    func oneChangedByteAnywhereMakesTheFilesUnequal(size: Int, at offset: Int) throws {
        let scratch = try TemporaryDirectory(prefix: "equal")
        let a = scratch.url.appending(path: "a").path, b = scratch.url.appending(path: "b").path
        var bytes = try Self.randomFile(at: a, size: size)
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

    /// Another process truncating a file while the comparison reads it: the read comes back short,
    /// and the files are unequal.
    @Test func aFileShortenedWhileComparedIsUnequal() throws {
        let scratch = try TemporaryDirectory(prefix: "equal")
        let a = scratch.url.appending(path: "a").path, b = scratch.url.appending(path: "shortened").path
        let bytes = try Self.randomFile(at: a)
        try Data(bytes).write(to: URL(filePath: b))
        let faults = FaultInjector()
        faults.shortenWhileCompared(pathContains: "shortened")
        #expect(try !FileSystem(faults: faults).contentsEqual(a, b))
        #expect(try Data(contentsOf: URL(filePath: b)).isEmpty)
        #expect(try Data(contentsOf: URL(filePath: a)) == Data(bytes))
    }

    /// The SIGBUS action installed now, as a number (its handler's address, 0 for the default).
    static func busAction() -> UInt {
        var current = sigaction()
        sigaction(SIGBUS, nil, &current)
        return unsafeBitCast(current.__sigaction_handler, to: UInt.self)
    }

    /// A library never owns a process's signals: comparing files of whole windows, equal and then
    /// different, leaves the SIGBUS action the process had (Backstage once installed a handler of
    /// its own at the first comparison, and never removed it).
    @Test func comparingFilesLeavesTheProcessSigbusActionAlone() throws {
        let scratch = try TemporaryDirectory(prefix: "equal")
        let a = scratch.url.appending(path: "a").path, b = scratch.url.appending(path: "b").path
        var bytes = try Self.randomFile(at: a)
        try Data(bytes).write(to: URL(filePath: b))
        let before = Self.busAction()
        #expect(try FileSystem().contentsEqual(a, b))
        bytes[9 << 20] ^= 0x01
        try Data(bytes).write(to: URL(filePath: b))
        #expect(try !FileSystem().contentsEqual(a, b))
        #expect(Self.busAction() == before, "a comparison changed the process's SIGBUS action")
    }

    static var sharedMemoryWritable: Bool { FileManager.default.isWritableFile(atPath: "/dev/shm") }

    /// A folder on the disk and one on /dev/shm, another file system.
    static func twoFileSystems() throws -> (local: TemporaryDirectory, other: TemporaryDirectory) {
        (try TemporaryDirectory(prefix: "equal"), try TemporaryDirectory(base: URL(filePath: "/dev/shm")))
    }

    /// Across file systems the kernel copies (`sendfile`) while the second thread compares the
    /// windows written: a file of two windows (the second partial) and an empty file copy
    /// byte for byte, with the source's mode.
    @Test(.enabled(if: sharedMemoryWritable, "/dev/shm is the second file system"))
    func aVerifiedCopyAcrossFileSystemsIsIdentical() throws {
        let (local, other) = try Self.twoFileSystems()
        let a = local.url.appending(path: "a").path, b = other.url.appending(path: "b").path
        let bytes = try Self.randomFile(at: a)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: a)
        let copied = try FileSystem().copyVerified(a, to: b)
        #expect(copied.bytes == Int64(Self.size))
        #expect(copied.identical)
        #expect(try Data(contentsOf: URL(filePath: b)) == Data(bytes))
        #expect(try FileManager.default.attributesOfItem(atPath: b)[.posixPermissions] as? Int == 0o640)

        let empty = local.url.appending(path: "empty").path, emptyCopy = other.url.appending(path: "empty").path
        try Data().write(to: URL(filePath: empty))
        let none = try FileSystem().copyVerified(empty, to: emptyCopy)
        #expect(none.bytes == 0 && none.identical)
        #expect(try Data(contentsOf: URL(filePath: emptyCopy)).isEmpty)
    }

    /// A byte of the copy that differs from the source, however it came to differ, is caught: the
    /// copy is not identical.
    @Test(.enabled(if: sharedMemoryWritable, "/dev/shm is the second file system"))
    func aCorruptedCopyAcrossFileSystemsIsNotIdentical() throws {
        let (local, other) = try Self.twoFileSystems()
        let a = local.url.appending(path: "a").path, b = other.url.appending(path: "b").path
        _ = try Self.randomFile(at: a)
        let faults = FaultInjector()
        faults.corruptCopies(pathContains: other.url.path)
        #expect(try !FileSystem(faults: faults).copyVerified(a, to: b).identical)
    }

    /// The copy shortened by another process while the second thread compares it: not identical.
    @Test(.enabled(if: sharedMemoryWritable, "/dev/shm is the second file system"))
    func aCopyShortenedWhileComparedAcrossFileSystemsIsNotIdentical() throws {
        let (local, other) = try Self.twoFileSystems()
        let a = local.url.appending(path: "a").path, b = other.url.appending(path: "b").path
        let bytes = try Self.randomFile(at: a)
        let faults = FaultInjector()
        faults.shortenWhileCompared(pathContains: other.url.path)
        #expect(try !FileSystem(faults: faults).copyVerified(a, to: b).identical)
        #expect(try Data(contentsOf: URL(filePath: a)) == Data(bytes))
    }

    /// A write that fails across file systems (a full disk) names the copy and its cause, and
    /// leaves no partial copy behind; the source is untouched.
    @Test(.enabled(if: sharedMemoryWritable, "/dev/shm is the second file system"))
    func aFailedWriteAcrossFileSystemsNamesTheCopyAndLeavesNone() throws {
        let (local, other) = try Self.twoFileSystems()
        let a = local.url.appending(path: "a").path, b = other.url.appending(path: "b").path
        let bytes = try Self.randomFile(at: a)
        let faults = FaultInjector()
        faults.fail(.copy, pathContains: other.url.path, code: ENOSPC, afterCalls: 3)
        #expect(throws: FileSystemError(operation: .copy, path: b, code: ENOSPC)) {
            _ = try FileSystem(faults: faults).copyVerified(a, to: b)
        }
        #expect(!FileManager.default.fileExists(atPath: b))
        #expect(try Data(contentsOf: URL(filePath: a)) == Data(bytes))
    }
}
