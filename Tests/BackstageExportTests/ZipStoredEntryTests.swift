import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// A zip stores what deflate cannot shrink, entry by entry: photos, videos and random bytes are
/// copied (method 0) rather than deflated into something larger, text is deflated (method 8), and
/// every entry comes back byte for byte, its CRC-32 right, whoever reads it.
/// The time limit guards a hang only: far past any normal run, even on a loaded 2-core machine.
@Suite(.timeLimit(.minutes(20))) struct ZipStoredEntryTests {
    static func noise(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    static func text(_ count: Int) -> Data {
        let words = ["the", "notes", "of", "a", "journey", "to", "Lisbon", "and", "Porto", "by", "train"]
        var out = Data()
        var index = 0
        while out.count < count {
            out += Data((words[(index * 7 + index / 3) % words.count] + " ").utf8)
            index += 1
        }
        return out.prefix(count)
    }

    static let files: [String: Data] = [
        "Media/noise.bin": noise(600_000),
        "Photos/beach.jpg": Data([0xFF, 0xD8, 0xFF, 0xE0]) + noise(300_000),
        "Notes/journey.txt": text(400_000),
        "Media/both.bin": noise(300_000) + text(300_000),
        "Media/tiny.bin": noise(1_000),
        "Notes/empty.txt": Data(),
    ]

    /// Each file entry's [method, CRC-32 the zip holds, CRC-32 of the bytes read back, size,
    /// compressed size], as Python's zipfile reads the central directory and the entries.
    static func entries(_ archive: URL) throws -> [String: [Int]] {
        let script = """
            import sys, zipfile, zlib, json
            z = zipfile.ZipFile(sys.argv[1])
            print(json.dumps({i.filename: [i.compress_type, i.CRC, zlib.crc32(z.read(i)), i.file_size, i.compress_size]
                              for i in z.infolist() if not i.is_dir()}))
            """
        let result = try runProcess("/usr/bin/python3", ["-c", script, archive.path])
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode([String: [Int]].self, from: Data(result.stdout.utf8))
    }

    static func exported(level: Int? = nil) async throws -> (TestContainer, URL, ExportReport) {
        let app = try TestContainer()
        for (path, data) in files { try app.writeDocument(path, data) }
        let archive = app.root.appending(path: "documents.zip")
        let report = try await Exporter(container: app.container).export(
            to: archive, options: ExportOptions(format: .zip, level: level, threads: 2))
        return (app, archive, report)
    }

    @Test func anIncompressibleEntryIsStoredAndTextIsDeflated() async throws {
        let (app, archive, report) = try await Self.exported()
        let entries = try Self.entries(archive)

        #expect(entries["Media/noise.bin"]?[0] == 0, "random bytes stored")
        #expect(entries["Photos/beach.jpg"]?[0] == 0, "a JPEG stored")
        #expect(entries["Notes/journey.txt"]?[0] == 8, "text deflated")
        #expect(entries["Media/both.bin"]?[0] == 8, "noise then text: deflated")
        #expect(entries["Media/tiny.bin"]?[0] == 8, "too small to judge: deflated")
        for (name, fields) in entries {
            #expect(fields[1] == fields[2], "\(name): the CRC-32 in the zip is the bytes'")
            #expect(fields[3] == Self.files[name]?.count, "\(name): its size")
            if fields[0] == 0 { #expect(fields[4] == fields[3], "\(name): stored, as large as the file") }
        }
        // The noise half of the mixed file is stored inside the deflate stream, its text compressed.
        let mixed = try #require(entries["Media/both.bin"])
        #expect(mixed[4] < 300_000 + 3_000 + 300_000 / 4)
        #expect(try readBack(archive, format: .zip).files == Self.files, "Python's zipfile reads every byte back")
        #expect(try complaintsOfIndependentReaders(archive, format: .zip, entries: report.entries) == [])
        withExtendedLifetime(app) {}  // its folder holds the archive
    }

    @Test func storedAndDeflatedEntriesComeBackThroughBackstageImport() async throws {
        let (app, archive, _) = try await Self.exported()
        let target = try TestContainer()

        let result = try runProcess(backstageExecutable, ["import", archive.path, target.root.path])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(snapshot(target.documents) == Self.files)
        withExtendedLifetime(app) {}
    }

    /// Stored entries wait for their turn rather than being held: photos between notes, taken by
    /// three workers, each waiting behind a note being deflated or a photo being copied, come back
    /// in order, byte for byte, in the archive one worker writes.
    @Test func storedEntriesBetweenDeflatedOnesComeBackInOrderWhateverTheWorkers() async throws {
        let app = try TestContainer()
        var files: [String: Data] = [:]
        for index in 0..<12 {
            files["Trip/\(index) photo.jpg"] = Data([0xFF, 0xD8, 0xFF, 0xE0]) + Self.noise(150_000 + index * 10_000)
            files["Trip/\(index) note.txt"] = Self.text(200_000 + index * 5_000)
        }
        for (path, data) in files { try app.writeDocument(path, data) }
        var archives: [Data] = []
        for threads in [1, 3] {
            var options = ExportOptions(format: .zip, threads: threads)
            options.tuning.heldBytesPerWorker = 64 << 10
            let archive = app.root.appending(path: "trip-\(threads).zip")
            _ = try await Exporter(container: app.container).export(to: archive, options: options)
            let entries = try Self.entries(archive)
            #expect(entries.filter { $0.key.hasSuffix(".jpg") }.allSatisfy { $0.value[0] == 0 }, "photos stored")
            #expect(entries.filter { $0.key.hasSuffix(".txt") }.allSatisfy { $0.value[0] == 8 }, "notes deflated")
            #expect(try readBack(archive, format: .zip).files == files, "every entry back, byte for byte")
            archives.append(try Data(contentsOf: archive))
        }
        #expect(archives[0] == archives[1], "one worker and three write the same archive")
    }

    /// Photos in a row are written side by side, each at the place the ones before it leave (their
    /// sizes are known before they are read): the same archive for one worker or several, every
    /// photo back byte for byte, and every reader reads it.
    @Test func storedEntriesInARowWrittenSideBySideComeBackInOrder() async throws {
        let app = try TestContainer()
        var files: [String: Data] = ["Album/05 caption.txt": Self.text(50_000), "Album/99 index.txt": Self.text(9_000)]
        for index in 0..<10 {
            files["Album/\(index < 5 ? "0" : "1")\(index) photo.jpg"] =
                Data([0xFF, 0xD8, 0xFF, 0xE0]) + Self.noise(100_000 + index * 37_000)
        }
        for (path, data) in files { try app.writeDocument(path, data) }
        var archives: [Data] = []
        for threads in [1, 2, 3] {
            let archive = app.root.appending(path: "album-\(threads).zip")
            let report = try await Exporter(container: app.container).export(
                to: archive, options: ExportOptions(format: .zip, threads: threads))
            #expect(try readBack(archive, format: .zip).files == files, "every entry back, byte for byte")
            #expect(try complaintsOfIndependentReaders(archive, format: .zip, entries: report.entries) == [])
            archives.append(try Data(contentsOf: archive))
        }
        #expect(Set(archives).count == 1, "one, two and three workers write the same archive")
    }

    /// Stored entries of every size — across the 1 MiB chunks they are read in, and small ones —
    /// written by one worker or three, on the documents' file system or another (a tmpfs), give
    /// the same archive byte for byte, each entry's CRC-32 the bytes'.
    @Test func storedEntriesOfEverySizeGiveOneArchive() async throws {
        let app = try TestContainer()
        var files: [String: Data] = ["Album/00 caption.txt": Self.text(70_000), "Album/99 notes.txt": Self.text(300_000)]
        let sizes = [3_300_000, 70_000, 1_048_572, 40_000, 2_200_001, 65_532, 500_000, 1_500_000]
        for (index, count) in sizes.enumerated() {
            files["Album/\(index + 1) photo.jpg"] = Data([0xFF, 0xD8, 0xFF, 0xE0]) + Self.noise(count)
        }
        for (path, data) in files { try app.writeDocument(path, data) }
        let elsewhere = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        var archives: [Data] = []
        for (folder, threads) in [(app.root, 1), (app.root, 3), (elsewhere.url, 3)] {
            let archive = folder.appending(path: "album-\(threads).zip")
            let report = try await Exporter(container: app.container).export(
                to: archive, options: ExportOptions(format: .zip, threads: threads))
            let entries = try Self.entries(archive)
            #expect(entries.values.filter { $0[0] == 0 }.count == sizes.count, "every photo stored")
            for (name, fields) in entries {
                #expect(fields[1] == fields[2], "\(name): the CRC-32 in the zip is the bytes'")
            }
            #expect(try readBack(archive, format: .zip).files == files, "every entry back, byte for byte")
            #expect(try complaintsOfIndependentReaders(archive, format: .zip, entries: report.entries) == [])
            archives.append(try Data(contentsOf: archive))
        }
        #expect(Set(archives).count == 1, "by one worker or three, here or on another file system: one archive")
    }

    /// A disk that fills while a stored entry is written (the documents and the archive on one
    /// small tmpfs) fails the export with the archive named and ENOSPC, and leaves nothing.
    @Test(.enabled(if: runningAsRoot, "a small tmpfs needs root"))
    func aDiskFilledByAStoredEntryIsNamedWithTheArchive() async throws {
        let mount = try TestMount(tmpfs: "6m")
        let app = try TestContainer(base: mount.url)
        try app.writeDocument("Media/clip.mov", Data([0, 0, 0, 0x18]) + Data("ftyp".utf8) + Self.noise(3_500_000))
        let archive = mount.url.appending(path: "out.zip")
        do {
            try await Exporter(container: app.container).export(
                to: archive, options: ExportOptions(format: .zip, threads: 2))
            Issue.record("3.5 MB stored beside itself on a 6 MiB disk")
        } catch let error as ArchiveError {
            #expect(error.archivePath == archive.path, "the archive the user asked for: \(error)")
            #expect(error.errno == ENOSPC, "the cause, in its own field: \(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: archive.path))
        #expect(paths(under: mount.url, containing: ".backstage-tmp").isEmpty, "no temporary left")
    }

    /// Level 0 stores every entry, text too.
    @Test func levelZeroStoresEveryEntry() async throws {
        let (app, archive, _) = try await Self.exported(level: 0)
        let entries = try Self.entries(archive)

        #expect(entries.count == Self.files.count)
        #expect(entries.values.allSatisfy { $0[0] == 0 && $0[1] == $0[2] })
        #expect(try readBack(archive, format: .zip).files == Self.files)
        withExtendedLifetime(app) {}
    }
}
