import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// An export keeps neither its list of entries nor a zip's central directory in memory: both go
/// to scratch files past a limit (1 MiB; lowered here to a few hundred bytes, so a tree of a few
/// hundred documents does what a million-file tree does), and zip workers take at most a few
/// entries ahead of the one whose turn it is. The archive is the same byte for byte whatever
/// went to disk, and nothing is left beside it.
/// The time limit guards a hang only: far past any normal run, even on a loaded 2-core machine.
@Suite(.timeLimit(.minutes(20))) struct StreamingExportTests {
    /// The documents fixture (Unicode names, links in and out, hidden files, a store and its
    /// support folder left out) plus 600 small documents in nested folders.
    static func manyDocuments() throws -> (TestContainer, [String: Data], TemporaryDirectory) {
        var (app, files, outside) = try largerDocumentsFixture()
        for index in 0..<600 {
            let path = "Notes \(index % 7)/Week \(index % 3)/note \(index).txt"
            let data = Data(String(repeating: "note \(index) ", count: 1 + index % 40).utf8)
            try app.writeDocument(path, data)
            files[path] = data
        }
        return (app, files, outside)
    }

    static func spilling(_ format: ArchiveFormat, threads: Int, counters: ExportCounters) -> ExportOptions {
        var options = ExportOptions(format: format, threads: threads)
        options.tuning.listedBytesInMemory = 300
        options.tuning.entriesAheadPerWorker = 2
        options.tuning.heldBytesPerWorker = 16 << 10
        options.tuning.counters = counters
        return options
    }

    @Test(arguments: [ArchiveFormat.zip, .tarGz, .tarZst, .tar])
    func listsSpilledToScratchFilesGiveTheSameArchive(format: ArchiveFormat) async throws {
        let (app, files, _) = try Self.manyDocuments()
        let inMemory = ExportCounters()
        var options = ExportOptions(format: format, threads: 2)
        options.tuning.counters = inMemory
        let held = app.root.appending(path: "held.\(format.rawValue)")
        let heldReport = try await Exporter(container: app.container).export(to: held, options: options)
        #expect(!inMemory.itemsInFile && !inMemory.directoryInFile, "a small tree's lists stay in memory")

        let spilled = ExportCounters()
        let archive = app.root.appending(path: "spilled.\(format.rawValue)")
        let report = try await Exporter(container: app.container).export(
            to: archive, options: Self.spilling(format, threads: 3, counters: spilled))
        #expect(spilled.itemsInFile, "the list of entries went to its scratch file")
        if format == .zip {
            #expect(spilled.directoryInFile, "the central directory went to its scratch file")
            #expect((1...4).contains(spilled.mostEntriesInFlight), "at most 2 entries ahead per worker beyond the first")
        }
        #expect(try Data(contentsOf: archive) == Data(contentsOf: held), "the same bytes as with everything in memory")
        #expect(report == heldReport.with(archive: archive.path))
        #expect(report.entries > 620)
        #expect(try readBack(archive, format: format).files == files, "every document back, bytes identical")
        let leftovers = paths(under: app.root, containing: ".items") + paths(under: app.root, containing: ".directory")
        #expect(leftovers.isEmpty && paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    /// The central directory read back from its scratch file is in entry order, each record at its
    /// entry's offset: every reader lists every entry, and zip64 records (the limit lowered) too.
    @Test func aSpilledCentralDirectoryIsReadByEveryReader() async throws {
        let (app, files, _) = try Self.manyDocuments()
        var options = Self.spilling(.zip, threads: 2, counters: ExportCounters())
        options.tuning.zip64Limit = 1_000
        let archive = app.root.appending(path: "zip64.zip")
        let report = try await Exporter(container: app.container).export(to: archive, options: options)
        #expect(try readBack(archive, format: .zip).files == files)
        #expect(try complaintsOfIndependentReaders(archive, format: .zip, entries: report.entries) == [])
    }

    /// The list of entries is walked once, with the archive's order: the classifier's visit gives
    /// the entries of its scan, in the same order.
    @Test func visitingGivesTheScanInItsOrder() throws {
        let (app, _, _) = try Self.manyDocuments()
        let classifier = FileClassifier(declarations: app.container.declaredStores)
        var visited: [ClassifiedFile] = []
        try classifier.visit(app.documents) { entry, _ in visited.append(entry) }
        #expect(visited == (try classifier.scan(app.documents)))
        #expect(visited.count > 620)
    }

    /// A document an app appends to while it is archived is replaced, in the spilled list, by a
    /// still copy (or left out, saying so): the next archive holds one state of it and every other
    /// document.
    @Test func aDocumentChangedWhileReadIsReplacedInTheSpilledList() async throws {
        let (app, files, _) = try Self.manyDocuments()
        let log = app.documents.appending(path: "Notes 3/journal.log")
        let writer = try PythonSQLite.appendEvery2ms(log)
        defer {
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
        }
        try await Task.sleep(for: .milliseconds(50))
        let counters = ExportCounters()
        let archive = app.root.appending(path: "living.zip")
        let report = try await Exporter(container: app.container).export(
            to: archive, options: Self.spilling(.zip, threads: 2, counters: counters))
        #expect(counters.itemsInFile)
        var (archived, _) = try readBack(archive, format: .zip)
        let now = try Data(contentsOf: log)
        if let state = archived.removeValue(forKey: "Notes 3/journal.log") {
            #expect(state.count > 0 && now.prefix(state.count) == state, "one state of the log: a prefix of it")
        } else {
            #expect(report.leftOut.contains(LeftOut(path: "Notes 3/journal.log", reason: .changedWhileRead)))
        }
        #expect(archived == files, "every other document, bytes identical")
    }

    /// Cancelling while Documents is listed stops the export: no archive, no scratch file.
    @Test func cancellingWhileListingStopsAndLeavesNothing() throws {
        let (app, _, _) = try Self.manyDocuments()
        let archive = app.root.appending(path: "cancelled.zip")
        let checks = Counter()
        let counters = ExportCounters()
        #expect(throws: CancellationError.self) {
            try Exporter(container: app.container).exportAndWait(
                to: archive, options: Self.spilling(.zip, threads: 2, counters: counters),
                isCancelled: { checks.increment() > 0 })
        }
        #expect(!counters.itemsInFile, "stopped before the list was complete")
        #expect(!FileManager.default.fileExists(atPath: archive.path))
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }
}

extension ExportReport {
    fileprivate func with(archive: String) -> ExportReport {
        var copy = self
        copy.archive = archive
        return copy
    }
}
