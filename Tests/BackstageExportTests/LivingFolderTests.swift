import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// Export of a folder an app is writing in: a document that changes while it is read is read again
/// until one copy is one state of it (or left out, saying so); the archive is always complete.
@Suite struct LivingFolderTests {
    @Test(arguments: [ArchiveFormat.zip, .tarGz, .tar])
    func aLogAppendedEveryTwoMillisecondsIsArchivedAsOneStateOfIt(format: ArchiveFormat) async throws {
        let app = try TestContainer()
        try app.writeDocument("Letter.txt", Data("dear".utf8))
        try app.writeDocument("Photos/big.bin", Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }))
        let log = app.documents.appending(path: "journal.log")
        let writer = try PythonSQLite.appendEvery2ms(log)
        defer {
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
        }
        // Long enough that the log grows between the scan and its read.
        try await Task.sleep(for: .milliseconds(50))
        let archive = app.root.appending(path: "living.\(format.rawValue)")

        let report = try await Exporter(container: app.container).export(
            to: archive, options: ExportOptions(format: format))

        let (files, _) = try readBack(archive, format: format)
        #expect(files["Letter.txt"] == Data("dear".utf8))
        #expect(files["Photos/big.bin"]?.count == 3_000_000)
        let now = try Data(contentsOf: log)
        if let archived = files["journal.log"] {
            #expect(
                archived.count > 0 && now.prefix(archived.count) == archived,
                "one state of the log: a prefix of what it became")
            #expect(archived.last == UInt8(ascii: "\n"), "whole lines: the app's writes, not a torn one")
        } else {
            #expect(report.leftOut.contains(LeftOut(path: "journal.log", reason: .changedWhileRead)))
        }
    }
}
