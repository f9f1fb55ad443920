import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// An archive's error says who failed: libarchive's status and the system's errno each in its own
/// field, Backstage's own checks and file-system calls as theirs, never an invented code.
@Suite struct ArchiveErrorTests {
    /// 3 MB of random bytes exported to a 2 MiB disk.
    func exportToAFullDisk(_ format: ArchiveFormat) async throws -> (ArchiveError?, URL, TestMount) {
        let (app, _, _) = try largerDocumentsFixture()
        var random = SystemRandomNumberGenerator()
        let noise = Data((0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        _ = try app.writeDocument("Media/e large.bin", noise)
        let mount = try TestMount(tmpfs: "2m")
        let archive = mount.url.appending(path: "out.\(format.rawValue)")
        do {
            let options = ExportOptions(format: format, threads: 2)
            try await Exporter(container: app.container).export(to: archive, options: options)
            return (nil, archive, mount)
        } catch let error as ArchiveError {
            return (error, archive, mount)
        }
    }

    /// libarchive writes these formats' file itself: its status and the errno it met, apart.
    @Test(.enabled(if: runningAsRoot, "a small tmpfs needs root"), arguments: [ArchiveFormat.tar, .tarXz])
    func aFullDiskUnderLibarchiveGivesItsStatusAndTheErrnoApart(format: ArchiveFormat) async throws {
        let (error, archive, mount) = try await exportToAFullDisk(format)
        let failure = try #require(error, "4 MB of documents archived on a 2 MiB disk")
        #expect(failure.archivePath == archive.path)
        #expect(failure.cause == .libarchive, "\(failure)")
        #expect(failure.status == .fatal, "\(failure)")
        #expect(failure.errno == ENOSPC, "\(failure)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount.url.path) == [], "no partial archive")
    }

    /// Backstage writes a zip's, a tar.gz's and a tar.zst's bytes itself: the failure is its
    /// file-system call's, ENOSPC.
    @Test(.enabled(if: runningAsRoot, "a small tmpfs needs root"), arguments: [ArchiveFormat.zip, .tarGz, .tarZst])
    func aFullDiskUnderBackstagesOwnWritesIsTheFileSystemError(format: ArchiveFormat) async throws {
        let (error, archive, mount) = try await exportToAFullDisk(format)
        let failure = try #require(error, "4 MB of documents archived on a 2 MiB disk")
        #expect(failure.archivePath == archive.path)
        guard case .fileSystem(let cause) = failure.cause else {
            Issue.record("not the file system's failure: \(failure)")
            return
        }
        #expect(cause.code == ENOSPC && failure.errno == ENOSPC, "\(failure)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount.url.path) == [], "no partial archive")
    }

    /// A zstd level past libzstd's range is refused, naming the range, before anything is written
    /// (libzstd alone would clamp it without a word).
    @Test func aZstdLevelOutOfRangeIsRefused() async throws {
        let app = try TestContainer()
        _ = try app.writeDocument("note.txt", Data("words".utf8))
        let archives = try TemporaryDirectory()
        let archive = archives.url.appending(path: "out.tar.zst")
        do {
            try await Exporter(container: app.container).export(
                to: archive, options: ExportOptions(format: .tarZst, level: 23))
            Issue.record("level 23 accepted")
        } catch let error as ArchiveError {
            #expect(error.cause == .invalidOption, "\(error)")
            #expect(error.message.contains("1 to 22"), "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: archives.url.path) == [], "no archive left")
    }

    /// A tar.zst carries zstd's content checksum: a byte flipped inside a document's stored bytes
    /// (zstd keeps random bytes as they are) is refused on import, never restored as a damaged file.
    @Test func aByteFlippedInATarZstIsRefusedOnImport() async throws {
        let app = try TestContainer()
        var random = SystemRandomNumberGenerator()
        let noise = Data((0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        _ = try app.writeDocument("noise.bin", noise)
        let archives = try TemporaryDirectory()
        let archive = archives.url.appending(path: "out.tar.zst")
        try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .tarZst))
        var bytes = try Data(contentsOf: archive)
        let found = try #require(bytes.firstRange(of: noise[150_000..<150_064]), "the random bytes are stored as they are")
        bytes[found.lowerBound] ^= 0x01
        try bytes.write(to: archive)
        let target = try TestContainer()
        await #expect(throws: ArchiveError.self) { try await Importer(container: target.container).importArchive(archive) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.documents.path).isEmpty)
    }

    /// A Backstage tar.gz is a series of gzip members (1 MiB of tar each, inflated whole by
    /// libdeflate on import): it comes back byte for byte, and a byte flipped in a member past the
    /// first is refused, nothing written.
    @Test func everyMemberOfABackstageTarGzIsChecked() async throws {
        let (app, files, _) = try largerDocumentsFixture()
        let archives = try TemporaryDirectory()
        let archive = archives.url.appending(path: "out.tar.gz")
        try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .tarGz))
        let intact = try TestContainer()
        try await Importer(container: intact.container).importArchive(archive)
        for (path, data) in files {
            #expect(try Data(contentsOf: intact.documents.appending(path: path)) == data, "\(path)")
        }
        var bytes = try Data(contentsOf: archive)
        // "c both.bin" (noise then text) is the last to hold the noise, past the first MiB of tar.
        let noise = try #require(files["Media/a recording.m4a"])
        let sample = Data(noise[600_000..<600_064])
        let found = try #require(bytes.range(of: sample, options: .backwards), "random bytes are stored as they are")
        #expect(found.lowerBound > 1 << 20, "past the first member")
        bytes[found.lowerBound] ^= 0x01
        try bytes.write(to: archive)
        let target = try TestContainer()
        await #expect(throws: ArchiveError.self) { try await Importer(container: target.container).importArchive(archive) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.documents.path).isEmpty)
    }

    /// A Backstage tar.zst is a series of zstd frames (2 MiB of tar each): `zstd` counts them and
    /// restores the tar, the import brings every document back, and a byte flipped in a frame past
    /// the first is refused by that frame's checksum, nothing written.
    @Test func everyFrameOfABackstageTarZstIsChecked() async throws {
        let app = try TestContainer()
        var random = SystemRandomNumberGenerator()
        // Random bytes, which zstd stores as they are: 3 MB of them put the archive's bytes past
        // the largest first frame 2 MiB of tar can make.
        let noise = Data((0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        let text = Data((0..<900_000).map { (index: Int) -> UInt8 in UInt8(97 + (index * 31 + index / 7) % 26) })
        let files = ["clip.mov": noise, "tides.txt": text]
        for (path, data) in files { _ = try app.writeDocument(path, data) }
        let archives = try TemporaryDirectory()
        let archive = archives.url.appending(path: "out.tar.zst")
        try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .tarZst))
        let listed = try runProcess("/usr/bin/zstd", ["-l", archive.path])
        let frames = listed.stdout.split(separator: "\n").dropFirst().first?.split(separator: " ").first.flatMap { Int($0) }
        #expect((frames ?? 0) >= 2, "several frames: \(listed.stdout)")
        let intact = try TestContainer()
        try await Importer(container: intact.container).importArchive(archive)
        for (path, data) in files {
            #expect(try Data(contentsOf: intact.documents.appending(path: path)) == data, "\(path)")
        }
        var bytes = try Data(contentsOf: archive)
        let found = try #require(bytes.range(of: noise[2_900_000..<2_900_064]), "random bytes are stored as they are")
        #expect(found.lowerBound > 2_200_000, "past the first frame, which holds 2 MiB of tar at most")
        bytes[found.lowerBound] ^= 0x01
        try bytes.write(to: archive)
        let target = try TestContainer()
        await #expect(throws: ArchiveError.self) { try await Importer(container: target.container).importArchive(archive) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.documents.path).isEmpty)
    }

    /// Each damage is found by libarchive (a status it returned) or by Backstage's own check after
    /// it (no status, no errno): never a code that no one returned.
    @Test(arguments: DamagedArchive.allCases)
    func aDamagedArchiveSaysWhoFoundTheDamage(damage: DamagedArchive) async throws {
        let app = try TestContainer()
        let archives = try TemporaryDirectory()
        let archive = try damage.write(in: archives.url)
        do {
            try await Importer(container: app.container).importArchive(archive)
            Issue.record("\(damage) imported")
        } catch let error as ArchiveError {
            switch error.cause {
            case .libarchive:
                #expect([.warn, .failed, .fatal].contains(error.status), "\(damage): \(error)")
                #expect(error.errno.map { $0 > 0 } ?? true, "\(damage): \(error)")
            case .damaged:
                #expect(error.status == nil && error.errno == nil, "\(damage): \(error)")
            default:
                Issue.record("\(damage): neither libarchive's nor Backstage's finding: \(error)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: app.documents.path).isEmpty)
    }

    /// A tar cut right after an entry reads as complete to libarchive: Backstage's own check
    /// refuses it, with no libarchive status and no errno (it was EILSEQ, which no call returned).
    @Test func aTarCutAfterAnEntryIsDamagedWithoutAnInventedErrno() async throws {
        let app = try TestContainer()
        let archive = app.root.appending(path: "cut.tar")
        let result = try PythonSQLite.run(
            """
            import sys, tarfile, io
            buf = io.BytesIO(); t = tarfile.open(fileobj=buf, mode='w', format=tarfile.USTAR_FORMAT)
            for name, data in [('a.txt', b'a' * 600), ('b.txt', b'b' * 100)]:
                info = tarfile.TarInfo(name); info.size = len(data); info.mtime = 1700000000
                t.addfile(info, io.BytesIO(data))
            end = buf.tell(); t.close()
            open(sys.argv[1], 'wb').write(buf.getvalue()[:end])
            """, [archive.path])
        try #require(result.status == 0, "\(result.stderr)")

        await #expect {
            try await Importer(container: app.container).importArchive(archive)
        } throws: { error in
            guard let error = error as? ArchiveError else { return false }
            return error.cause == .damaged && error.status == nil && error.errno == nil
                && error.message.hasPrefix("the archive is truncated")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: app.documents.path).isEmpty)
    }
}
