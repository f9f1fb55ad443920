import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// The documents fixture plus files large enough to span many 128 KiB gzip blocks and to keep
/// several zip workers busy at once: compressible text, random bytes, and both in one file.
func largerDocumentsFixture() throws -> (TestContainer, [String: Data], TemporaryDirectory) {
    var (app, files, outside) = try documentsFixture()
    var random = SystemRandomNumberGenerator()
    let text = Data((0..<900_000).map { (index: Int) -> UInt8 in
        let letter: Int = (index * 31 + index / 7) % 26
        return UInt8(97 + letter)
    })
    let noise = Data((0..<700_000).map { _ in UInt8.random(in: 0...255, using: &random) })
    let larger: [String: Data] = [
        "Media/a recording.m4a": noise,
        "Media/b transcript.txt": text,
        "Media/c both.bin": noise + text,
        "Media/d empty.txt": Data(),
    ]
    for (path, data) in larger { _ = try app.writeDocument(path, data) }
    files.merge(larger) { $1 }
    return (app, files, outside)
}

/// What `unzip -t`, `7z t` and `bsdtar -t` (and `gzip -t` for a gzip) say of an archive: empty
/// when every one of them reads it without a complaint.
func complaintsOfIndependentReaders(_ archive: URL, format: ArchiveFormat, entries: Int) throws -> [String] {
    var complaints: [String] = []
    var checks: [(String, [String])] = [("/usr/bin/7z", ["t", archive.path])]
    if format == .zip { checks.append(("/usr/bin/unzip", ["-tq", archive.path])) }
    if format == .tarGz { checks.append(("/bin/gzip", ["-t", archive.path])) }
    for (tool, arguments) in checks {
        let result = try runProcess(tool, arguments)
        if result.status != 0 { complaints.append("\(tool): \(result.stdout) \(result.stderr)") }
    }
    let listed = try runProcess("/usr/bin/bsdtar", ["-tf", archive.path])
    let names = listed.stdout.split(separator: "\n")
    if listed.status != 0 || names.count != entries { complaints.append("bsdtar listed \(names.count) of \(entries): \(listed.stderr)") }
    return complaints
}

/// The time limit guards a hang only: far past any normal run, even on a loaded 2-core machine.
@Suite(.timeLimit(.minutes(20))) struct ParallelExportTests {
    static let parallelFormats: [ArchiveFormat] = [.zip, .tarGz, .tarZst]

    /// Workers hold little (64 KiB) so entries wait for their turn, as big trees make them do.
    static func options(_ format: ArchiveFormat, threads: Int) -> ExportOptions {
        var options = ExportOptions(format: format, threads: threads)
        options.tuning.heldBytesPerWorker = 64 << 10
        return options
    }

    @Test(arguments: parallelFormats)
    func theArchiveIsTheSameWhateverTheNumberOfThreads(format: ArchiveFormat) async throws {
        let (app, files, _) = try largerDocumentsFixture()
        var archives: [Data] = []
        var entries = 0
        for threads in [1, 2, 3, 5] {
            let archive = app.root.appending(path: "\(threads).\(format.rawValue)")
            let report = try await Exporter(container: app.container).export(to: archive, options: Self.options(format, threads: threads))
            #expect(report.bytes == files.values.reduce(0) { $0 + Int64($1.count) })
            archives.append(try Data(contentsOf: archive))
            entries = report.entries
        }
        #expect(Set(archives).count == 1, "1, 2, 3 and 5 threads wrote \(Set(archives.map(\.count)).sorted()) bytes")
        let archive = app.root.appending(path: "2.\(format.rawValue)")
        #expect(try readBack(archive, format: format).files == files, "every document back, bytes identical")
        #expect(try complaintsOfIndependentReaders(archive, format: format, entries: entries) == [])
    }

    /// Entries waiting for their turn go to memory (16 KiB here), then to the scratch file (200 KiB
    /// here, reused from its start once written out), then wait: the same archive as one worker
    /// writes, every document back, and no scratch file left anywhere.
    @Test func entriesSpilledToTheScratchFileComeBackInOrder() async throws {
        let (app, files, _) = try largerDocumentsFixture()
        var archives: [Data] = []
        for threads in [1, 3] {
            var options = ExportOptions(format: .zip, threads: threads)
            options.tuning.heldBytesPerWorker = 16 << 10
            options.tuning.spilledBytesPerWorker = 100 << 10
            let archive = app.root.appending(path: "spilled-\(threads).zip")
            try await Exporter(container: app.container).export(to: archive, options: options)
            archives.append(try Data(contentsOf: archive))
        }
        #expect(archives[0] == archives[1], "3 workers with a small spill wrote what 1 worker writes")
        #expect(try readBack(app.root.appending(path: "spilled-3.zip"), format: .zip).files == files)
        #expect(paths(under: app.root, containing: ".spill").isEmpty && paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    /// Offsets and sizes in zip64 fields (the limit lowered to 1,000 bytes, so most entries and the
    /// central directory are past it): what an archive over 4 GiB holds, read by every reader.
    @Test func zip64OffsetsAndEndRecordsAreReadByEveryReader() async throws {
        let (app, files, _) = try largerDocumentsFixture()
        var options = Self.options(.zip, threads: 2)
        options.tuning.zip64Limit = 1_000
        let archive = app.root.appending(path: "zip64.zip")
        let report = try await Exporter(container: app.container).export(to: archive, options: options)
        #expect(try readBack(archive, format: .zip).files == files)
        #expect(try complaintsOfIndependentReaders(archive, format: .zip, entries: report.entries) == [])
        let bytes = try Data(contentsOf: archive)
        #expect(bytes.range(of: Data([0x50, 0x4b, 0x06, 0x06])) != nil, "a zip64 end of central directory record")
    }

    /// A tar.zst's tar stream is cut into 2 MiB blocks, each a zstd frame of its own
    /// (``ParallelZstd``): hundreds of small notes and files larger than a block together come
    /// back byte for byte, and the tar inside is the plain tar export's, byte for byte, whatever
    /// the threads.
    @Test func aTarZstHoldsThePlainTarExportByteForByte() async throws {
        let app = try TestContainer()
        var random = SystemRandomNumberGenerator()
        var files: [String: Data] = [:]
        for index in 0..<400 {
            files["Notes/\(index % 9)/note \(index).txt"] = Data(String(repeating: "day \(index) by the sea ", count: index % 50 + 1).utf8)
        }
        files["Media/a clip.mov"] = Data((0..<5_500_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        files["Media/b transcript.txt"] = Data((0..<3_000_000).map { (index: Int) -> UInt8 in
            let letter: Int = (index * 31 + index / 7) % 26
            return UInt8(97 + letter)
        })
        files["Media/c empty.txt"] = Data()
        for (path, data) in files { try app.writeDocument(path, data) }
        let tar = app.root.appending(path: "plain.tar")
        try await Exporter(container: app.container).export(to: tar, options: ExportOptions(format: .tar))
        for threads in [1, 3] {
            let archive = app.root.appending(path: "\(threads).tar.zst")
            try await Exporter(container: app.container).export(to: archive, options: ExportOptions(format: .tarZst, threads: threads))
            let inside = app.root.appending(path: "\(threads).tar")
            let result = try runProcess("/usr/bin/zstd", ["-q", "-d", archive.path, "-o", inside.path])
            #expect(result.status == 0, "zstd checks the frame and its checksum: \(result.stderr)")
            #expect(try Data(contentsOf: inside) == Data(contentsOf: tar), "\(threads) threads: the plain tar, byte for byte")
            #expect(try readBack(archive, format: .tarZst).files == files, "every document back, bytes identical")
        }
    }

    @Test(arguments: [ArchiveFormat.zip, .tarGz, .tarZst])
    func cancellingStopsEveryWorkerAndLeavesNoArchive(format: ArchiveFormat) throws {
        let (app, _, _) = try largerDocumentsFixture()
        let archive = app.root.appending(path: "cancelled.\(format.rawValue)")
        let checks = Counter()
        #expect(throws: CancellationError.self) {
            try Exporter(container: app.container).exportAndWait(to: archive, options: Self.options(format, threads: 3), isCancelled: { checks.increment() > 1 })
        }
        #expect(!FileManager.default.fileExists(atPath: archive.path))
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    @Test(.enabled(if: runningAsRoot, "a small tmpfs needs root"), arguments: parallelFormats)
    func aFullDiskIsNamedWithTheArchiveAndLeavesNothing(format: ArchiveFormat) async throws {
        let (app, _, _) = try largerDocumentsFixture()
        var random = SystemRandomNumberGenerator()
        _ = try app.writeDocument("Media/e large.bin", Data((0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &random) }))
        let mount = try TestMount(tmpfs: "2m")
        let archive = mount.url.appending(path: "out.\(format.rawValue)")
        do {
            try await Exporter(container: app.container).export(to: archive, options: Self.options(format, threads: 2))
            Issue.record("4 MB of random bytes archived on a 2 MiB disk")
        } catch let error as ArchiveError {
            #expect(error.archivePath == archive.path, "the archive the user asked for: \(error)")
            #expect(error.errno == ENOSPC, "the cause, in its own field: \(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount.url.path) == [], "no partial archive, no temporary")
    }
}
