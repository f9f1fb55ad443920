import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// Issue 54, for the archive streams: a Cancel pressed on a progress event that arrived before the
/// archive was complete stops the export before the archive gets its name (and the import before
/// anything moves into Documents), however fast the work is; the loop throws, it never ends as if
/// the work were done. Several times, since the work used to win the race intermittently.
@Suite struct CancelledArchiveTests {
    /// 300 small documents: the progress reports every 256 entries, so one event arrives mid-way
    /// (fewer than 300 entries done: before the archive is complete, or anything moved in).
    static func container() throws -> TestContainer {
        let app = try TestContainer()
        for index in 0..<300 { _ = try app.writeDocument("Notes/\(index).txt", Data("note \(index)\n".utf8)) }
        return app
    }

    @Test(.timeLimit(.minutes(10)))
    func cancellingAnExportOnAProgressEventLeavesNoArchiveAndThrows() async throws {
        for iteration in 0..<5 {
            let app = try Self.container()
            // A tar is written one entry after the other, each reported: the 256th arrives mid-way.
            let archive = app.root.appending(path: "out.tar")
            let consumer = Task { () -> Bool in
                for try await event in Exporter(container: app.container).events(
                    to: archive, options: ExportOptions(format: .tar))
                {
                    if case .progress(let progress) = event, progress.entriesDone < 300 {
                        withUnsafeCurrentTask { $0?.cancel() }
                    }
                }
                return true
            }
            let result = await consumer.result
            #expect(throws: CancellationError.self, "iteration \(iteration)") { _ = try result.get() }
            #expect(!FileManager.default.fileExists(atPath: archive.path), "iteration \(iteration): no archive")
            #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func cancellingAnImportOnAProgressEventLeavesDocumentsAsTheyWereAndThrows() async throws {
        let source = try Self.container()
        let archive = source.root.appending(path: "notes.zip")
        try await Exporter(container: source.container).export(to: archive, options: ExportOptions(format: .zip))
        for iteration in 0..<5 {
            let target = try TestContainer()
            _ = try target.writeDocument("mine.txt", Data("mine".utf8))
            let before = treeDigest(target.documents)
            let consumer = Task { () -> Bool in
                for try await event in Importer(container: target.container).events(from: archive) {
                    if case .progress(let progress) = event, progress.entriesDone < 300 {
                        withUnsafeCurrentTask { $0?.cancel() }
                    }
                }
                return true
            }
            let result = await consumer.result
            #expect(throws: CancellationError.self, "iteration \(iteration)") { _ = try result.get() }
            #expect(treeDigest(target.documents) == before, "iteration \(iteration): nothing moved into Documents")
        }
    }
}
