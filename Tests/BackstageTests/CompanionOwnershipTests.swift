import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A store's sidecars and Core Data support folder follow their database's owner, as the one
/// classifier says it: the app's beside a declared store, the user's beside a database nobody
/// declared, an orphan beside no database.
@Suite struct CompanionOwnershipTests {
    /// A container declaring `Notes.sqlite`, holding it, a user's `Diary.sqlite`, a user's `Trips`
    /// store without extension, each with a support folder, an orphan `.Gone_SUPPORT`, and a user's
    /// database with its support folder inside a hidden folder.
    static func container() throws -> TestContainer {
        let app = try TestContainer(declaring: ["Notes.sqlite"])
        for store in ["Notes.sqlite", "Diary.sqlite", "Trips", ".private/Old.db"] {
            let main = app.documents.appending(path: store)
            try FileManager.default.createDirectory(at: main.deletingLastPathComponent(), withIntermediateDirectories: true)
            try PythonSQLite.writeThenKill(main, committed: 2, walOnly: 1)
            let support = StoreFileSet(main: main).externalDataFolder
            try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
            try Data(repeating: 5, count: 300).write(to: support.appending(path: "blob"))
        }
        try app.writeDocument(".Gone_SUPPORT/_EXTERNAL_DATA/blob", Data(repeating: 6, count: 10))
        return app
    }

    @Test func supportFoldersAndSidecarsFollowTheirDatabasesOwner() throws {
        let app = try Self.container()

        let entries = try FileClassifier(declarations: app.container.declaredStores).scan(app.documents)
        let kinds = Dictionary(uniqueKeysWithValues: entries.map { ($0.path, $0.kind) })

        #expect(kinds[".Notes_SUPPORT"] == .coreDataSupport, "the declared store's: the app's")
        #expect(kinds["Notes.sqlite-wal"] == .wal)
        #expect(kinds[".Diary_SUPPORT"] == .userDatabaseSupport, "the user's database's: the user's")
        #expect(kinds["Diary.sqlite-wal"] == .userDatabaseSidecar)
        #expect(kinds[".Trips_SUPPORT"] == .userDatabaseSupport, "a store without extension: `.Trips_SUPPORT`")
        #expect(kinds[".Gone_SUPPORT"] == .coreDataSupport, "no database beside it: an orphan, as before")
        #expect(kinds[".private/.Old_SUPPORT"] == .hidden, "hidden, as its database in a hidden folder is")
        #expect(kinds[".private/Old.db"] == .hidden)
        #expect(!FileKind.userDatabaseSupport.isInternal)
        #expect(entries.first { $0.path == ".Diary_SUPPORT" }?.bytes == 300)
        #expect(!entries.contains { $0.path.hasPrefix(".Diary_SUPPORT/") }, "one entry, as any support folder")
    }

    @Test func relocateQuarantinesOnlyTheOrphanAndMovesTheDeclaredStoreWithItsSupportFolder() async throws {
        let app = try Self.container()
        let diary = snapshot(app.documentsStore("Diary.sqlite"))
        let trips = snapshot(app.documentsStore("Trips"))

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.quarantined.map { ($0.from as NSString).lastPathComponent } == [".Gone_SUPPORT"])
        #expect(snapshot(app.documentsStore("Diary.sqlite")) == diary, "the user's store, support folder and all")
        #expect(snapshot(app.documentsStore("Trips")) == trips)
        #expect(!FileManager.default.fileExists(atPath: app.documentsStore().supportFolder.path))
        #expect(try Data(contentsOf: app.supportStore().externalDataFolder.appending(path: "blob")).count == 300)

        let audit = try Auditor(container: app.container).audit()
        #expect(audit.isClean, "\(audit.findings)")
        #expect(audit.userDatabaseSupport.map(\.path) == [".Diary_SUPPORT", ".Trips_SUPPORT"])
    }
}
