import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// A database the app did not declare is the user's document: exported as one consistent copy
/// with every committed row, and restored by import (the Ledger app keeps users' databases).
@Suite struct UserDatabaseExportTests {
    @Test(arguments: [ArchiveFormat.zip, .tarGz])
    func exportThenImportBringsBackTheUsersDatabasesWithEveryCommittedRow(format: ArchiveFormat) async throws {
        let app = try LedgerApp.make()
        let before = LedgerApp.userBytes(in: app.documents)
        let archive = app.root.appending(path: "backup.\(format.rawValue)")

        let exported = try await Exporter(container: app.container).export(
            to: archive, options: ExportOptions(format: format))

        let reasons = Dictionary(uniqueKeysWithValues: exported.leftOut.map { ($0.path, $0.reason) })
        #expect(reasons["Ledger.sqlite"] == .internalFile(.database), "the app's store stays out")
        #expect(reasons["Journal.sqlite-wal"] == .inDatabaseCopy)
        for path in LedgerApp.userDatabases.keys { #expect(reasons[path] == nil, "\(path) left out") }
        // The -shm is SQLite's shared-memory index, rebuilt by any reader: the data is the rest.
        let data = { (files: [String: Data]) in files.filter { !$0.key.hasSuffix("-shm") } }
        #expect(
            data(LedgerApp.userBytes(in: app.documents)) == data(before),
            "export reads the user's databases, never changes them")

        let restored = try TestContainer(declaring: LedgerApp.declared)
        let imported = try await Importer(container: restored.container).importArchive(archive)

        #expect(imported.skipped.isEmpty)
        for (path, rows) in LedgerApp.userDatabases {
            let copy = StoreFileSet(main: restored.documents.appending(path: path))
            #expect(!FileManager.default.fileExists(atPath: copy.sidecar(.wal).path), "one file per database: \(path)")
            let inspected = try PythonSQLite.inspect(copy)
            #expect(inspected.rows == rows, "\(path)")
            #expect(inspected.integrity == "ok")
        }
        #expect(!FileManager.default.fileExists(atPath: restored.documents.appending(path: "Ledger.sqlite").path))
    }

    @Test func importRestoresAUsersDatabaseButRefusesTheAppsStore() async throws {
        let source = try TestContainer(declaring: [])
        try PythonSQLite.createStore(source.documents.appending(path: "Ledger.sqlite"), rows: 3, journalMode: "delete")
        let archive = source.root.appending(path: "old-backup.zip")
        try await Exporter(container: source.container).export(to: archive, options: ExportOptions(format: .zip))

        let ledger = try TestContainer(declaring: LedgerApp.declared)
        await #expect(throws: ImportError.self) {
            try await Importer(container: ledger.container).importArchive(archive)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: ledger.documents.path).isEmpty, "nothing written")

        let other = try TestContainer(declaring: ["Other.sqlite"])
        try await Importer(container: other.container).importArchive(archive)
        #expect(
            try PythonSQLite.inspect(StoreFileSet(main: other.documents.appending(path: "Ledger.sqlite"))).rows == 3)
    }
}
