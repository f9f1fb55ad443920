import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A file is internal only on positive evidence: every lookalike (lock files, empty files with
/// store names, files named like sidecars without a valid header) stays the user's document.
@Suite struct UserFileTests {
    @Test func noLookalikeIsClassifiedInternal() throws {
        let app = try TestContainer()
        try Lookalikes.write(into: app.documents)

        let entries = try FileClassifier(declarations: app.container.declaredStores).scan(app.documents)

        for path in Lookalikes.files.keys {
            let kind = try #require(entries.first { $0.path == path }?.kind, "\(path) listed")
            #expect(!kind.isInternal, "\(path) is the user's, not \(kind)")
        }
        #expect(try Auditor(container: app.container).audit().isClean, "audit must not flag a user's file")
    }

    @Test func relocationMovesTheRealStoreAndLeavesEveryLookalikeByteIdentical() async throws {
        let app = try TestContainer()
        try Lookalikes.write(into: app.documents)
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 3, walOnly: 2)

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.store) == ["Notes.sqlite"])
        #expect(report.quarantined.isEmpty, "nothing of the user's is quarantined: \(report.quarantined.map(\.from))")
        #expect(snapshot(app.documents) == Lookalikes.files, "every lookalike still in Documents, bytes identical (an empty notes.db stays empty)")
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 5)
        #expect(try Auditor(container: app.container).audit().isClean)
    }

    @Test func emptyStoreBesideAValidWALIsADatabaseAndAZeroedOrphanJournalIsNot() throws {
        let app = try TestContainer(declaring: ["Notes.sqlite", "Fresh.sqlite"])
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 1, walOnly: 1)
        let wal = try Data(contentsOf: app.documentsStore().sidecar(.wal))
        try app.writeDocument("Fresh.sqlite", Data())
        try app.writeDocument("Fresh.sqlite-wal", wal)
        try app.writeDocument("Gone.sqlite-shm", try Data(contentsOf: app.documentsStore().sidecar(.shm)))

        let kinds = Dictionary(uniqueKeysWithValues: try FileClassifier(declarations: app.container.declaredStores).scan(app.documents).map { ($0.path, $0.kind) })

        #expect(kinds["Fresh.sqlite"] == .database, "an empty main file is a database when a valid WAL lies beside it")
        #expect(kinds["Fresh.sqlite-wal"] == .wal)
        #expect(kinds["Gone.sqlite-shm"] == .orphanSidecar, "an orphan -shm is recognised by its WAL-index header")
    }

    @Test func aLinkNamedLikeAStoreIsADocumentUnlessItLeadsToOne() throws {
        let app = try TestContainer(declaring: ["Notes.sqlite", "Shortcut", "Letter.sqlite"])
        try app.writeDocument("Letter.txt", Data("hi".utf8))
        try PythonSQLite.createStore(app.root.appending(path: "elsewhere.bin"), rows: 1, journalMode: "delete")
        try FileManager.default.createSymbolicLink(atPath: app.documents.appending(path: "Letter.sqlite").path, withDestinationPath: "Letter.txt")
        try FileManager.default.createSymbolicLink(atPath: app.documents.appending(path: "Shortcut").path, withDestinationPath: app.root.appending(path: "elsewhere.bin").path)

        let kinds = Dictionary(uniqueKeysWithValues: try FileClassifier(declarations: app.container.declaredStores).scan(app.documents).map { ($0.path, $0.kind) })

        #expect(kinds["Letter.sqlite"] == .document)
        #expect(kinds["Shortcut"] == .symlinkedStore, "a link to a database where a declared store should be is a store behind a link")
    }
}
