import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The byte-for-byte proof every copy of a move ends with: one byte changed anywhere — in a
/// window's first or last byte, inside a mapped window, in a file too small to map (read) — makes
/// two files unequal, and a verified copy of an
/// unchanged file is identical. A file shortened while it is compared mapped makes the files
/// unequal; it does not end the process.
struct ContentsEqualTests {
    /// 10 MiB and 17 bytes: a full 8 MiB window, then one of 2 MiB and 17 bytes, both mapped.
    static let size = (10 << 20) + 17
    /// Under 1 MiB: read, never mapped.
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

    /// Another process truncating a file while the comparison has it mapped: the read of the
    /// missing pages faults (SIGBUS), the guard turns the fault into an answer, and the window read
    /// instead finds the file short. The files are unequal and this process lives on.
    @Test func aFileShortenedWhileComparedMappedIsUnequalAndNothingCrashes() throws {
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
    static func busAction() -> Int {
        var current = sigaction()
        sigaction(SIGBUS, nil, &current)
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
    }

    /// What the process did before the guard, or does after it, and how a SIGBUS elsewhere must
    /// then end (or not end) its child process.
    static let sigbusCases = ["default", "handler", "resethand", "sent", "replaced"]

    /// The guard takes only its comparison's faults. Every other SIGBUS reaches the action installed
    /// before the guard, with that action's own flags, and ends or is handled as it would without
    /// Backstage: the default action kills (a fault, or a SIGBUS sent with `raise`); an app's handler
    /// runs (here it exits with status 77); a handler with `SA_RESETHAND` that returns lets the
    /// repeated fault kill. A handler the app installs after the guard replaces it, and a file
    /// shortened under a later comparison is then found different by reading, not by a fault. Each
    /// case in a child process of its own (this test binary, this test only), without the Swift
    /// runtime's backtracer, without a core file, and killed by an alarm if the fault loops.
    @Test(arguments: sigbusCases)
    func aSigbusOutsideAComparisonEndsTheProcessAsWithoutBackstage(before: String) throws {
        let child = "BACKSTAGE_TEST_SIGBUS_CHILD"
        let environment = ProcessInfo.processInfo.environment
        if let folder = environment[child] {
            guard environment[child + "_CASE"] == before else { return }
            try Self.sigbusChild(case: before, folder: folder)
            return
        }
        let scratch = try TemporaryDirectory(prefix: "sigbus")
        var childEnvironment = environment
        childEnvironment[child] = scratch.url.path
        childEnvironment[child + "_CASE"] = before
        childEnvironment["SWIFT_BACKTRACE"] = "enable=no"
        let result = try runProcess(
            CommandLine.arguments[0],
            ["--testing-library", "swift-testing", "--filter", "aSigbusOutsideAComparisonEndsTheProcessAsWithoutBackstage"],
            environment: childEnvironment)
        let output = result.stdout.suffix(1500)
        switch before {
        case "handler": #expect(result.killedBySignal == nil && result.status == 77, "\(output)")
        case "replaced": #expect(result.killedBySignal == nil && result.status == 0, "\(output)")
        default: #expect(result.killedBySignal == SIGBUS, "status \(result.status): \(output)")
        }
    }

    /// The child's side of ``aSigbusOutsideAComparisonEndsTheProcessAsWithoutBackstage(before:)``.
    static func sigbusChild(case before: String, folder: String) throws {
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
        alarm(60)
        switch before {
        case "handler":
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = { _, _, _ in _exit(77) }
            action.sa_flags = SA_SIGINFO
            sigaction(SIGBUS, &action, nil)
        case "resethand":
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = { _, _, _ in }
            action.sa_flags = SA_SIGINFO | Int32(bitPattern: UInt32(SA_RESETHAND))
            sigaction(SIGBUS, &action, nil)
        default: break
        }
        let a = folder + "/a", b = folder + "/b", c = folder + "/c"
        let bytes = try Self.randomFile(at: a)
        try Data(bytes).write(to: URL(filePath: b))
        try Data(bytes).write(to: URL(filePath: c))
        let beforeGuard = busAction()
        #expect(try FileSystem().contentsEqual(a, b))
        try #require(busAction() != beforeGuard, "the mapped comparison installed no guard")
        switch before {
        case "sent":
            raise(SIGBUS)
        case "replaced":
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = { _, _, _ in _exit(78) }
            action.sa_flags = SA_SIGINFO
            sigaction(SIGBUS, &action, nil)
            let faults = FaultInjector()
            faults.shortenWhileCompared(pathContains: "/b")
            #expect(try !FileSystem(faults: faults).contentsEqual(a, b))
            return
        default:
            let fd = open(c, O_RDWR)
            try #require(fd >= 0)
            let mapped = try #require(mmap(nil, 1 << 20, PROT_READ, MAP_SHARED, fd, 0))
            try #require(mapped != MAP_FAILED)
            _ = ftruncate(fd, 0)
            print(mapped.load(fromByteOffset: 4096, as: UInt8.self))
        }
        Issue.record("the SIGBUS did not end the process")
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

    /// The copy shortened by another process while the second thread compares it mapped: not
    /// identical, no crash.
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
