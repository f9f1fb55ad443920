import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Whose file is it: the app's declared stores are internal, a database nobody declared is the
/// user's document (the Ledger app keeps users' databases in Documents).
@Suite struct DeclaredStoresTests {
    @Test func auditListsTheUsersDatabasesApartAndIsCleanWhenNothingElseIsFound() throws {
        let app = try LedgerApp.make(withStores: false)

        let report = try Auditor(container: app.container).audit()

        #expect(report.isClean, "a user's database is not a finding")
        #expect(report.findings.isEmpty)
        #expect(report.userDatabases.map(\.path) == ["Finance/Budget.sqlite", "Journal.sqlite", "notes.db"])
        #expect(report.userDatabases.allSatisfy { $0.kind == .userDatabase })
    }

    @Test func auditFindsTheDeclaredStoresAndNotTheUsersDatabases() throws {
        let app = try LedgerApp.make()

        let report = try Auditor(container: app.container).audit()

        #expect(
            report.findings.filter { $0.kind == .database }.map(\.path) == [
                "Accounts/7/UserData.sqlite", "Ledger.sqlite",
            ])
        #expect(
            !report.findings.contains {
                $0.path.hasPrefix("Journal") || $0.path == "notes.db" || $0.path.hasPrefix("Finance")
            })
        #expect(report.userDatabases.count == 3)
    }

    @Test func relocateMovesTheDeclaredStoresAndLeavesTheUsersDatabasesByteIdentical() async throws {
        let app = try LedgerApp.make()
        let before = LedgerApp.userBytes(in: app.documents)
        #expect(before.count == LedgerApp.userFiles.count)

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.store).sorted() == ["Accounts/7/UserData.sqlite", "Ledger.sqlite"])
        #expect(report.leftUndeclared == ["Finance/Budget.sqlite", "Journal.sqlite", "notes.db"])
        #expect(report.quarantined.isEmpty, "a user's -wal and -shm are not orphans")
        #expect(LedgerApp.userBytes(in: app.documents) == before)
        #expect(try PythonSQLite.inspect(app.supportStore("Ledger.sqlite")).rows == 20)
        #expect(
            try PythonSQLite.inspect(StoreFileSet(main: app.documents.appending(path: "Journal.sqlite"))).rows == 40)
    }

    @Test func withNothingDeclaredNoDatabaseIsMoved() async throws {
        let app = try TestContainer(declaring: [])
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 5, walOnly: 5)
        let before = snapshot(app.documents)

        let audit = try Auditor(container: app.container).audit()
        let report = try await Relocator(container: app.container).relocate()

        #expect(audit.isClean && audit.noStoreDeclared)
        #expect(audit.userDatabases.map(\.path) == ["Notes.sqlite"])
        #expect(report.moved.isEmpty && report.quarantined.isEmpty)
        #expect(report.leftUndeclared == ["Notes.sqlite"])
        #expect(snapshot(app.documents) == before)
    }

    @Test func aUsersDatabaseNamedExplicitlyMovesWithItsWAL() async throws {
        let app = try LedgerApp.make(withStores: false)

        let report = try await Relocator(container: app.container).relocate(
            RelocationOptions(stores: ["Journal.sqlite"]))

        #expect(report.moved.map(\.store) == ["Journal.sqlite"])
        #expect(try PythonSQLite.inspect(app.supportStore("Journal.sqlite")).rows == 40)
        #expect(FileManager.default.fileExists(atPath: app.documents.appending(path: "notes.db").path))
    }

    @Test func aDeclaredStoreWithoutASQLiteHeaderIsTheAppsWithItsSidecars() throws {
        let app = try TestContainer(declaring: ["Vault.sqlite"])
        // An encrypted store (SQLCipher) has no SQLite header: random bytes, and a -wal of random bytes.
        try app.writeDocument("Vault.sqlite", Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }))
        try app.writeDocument("Vault.sqlite-wal", Data((0..<512).map { UInt8(truncatingIfNeeded: $0 &* 17) }))
        try app.writeDocument("Diary.sqlite", Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }))

        let kinds = Dictionary(
            uniqueKeysWithValues: try FileClassifier(declarations: app.container.declaredStores).scan(app.documents).map
            { ($0.path, $0.kind) })

        #expect(kinds["Vault.sqlite"] == .database)
        #expect(kinds["Vault.sqlite-wal"] == .wal)
        #expect(kinds["Diary.sqlite"] == .document, "an undeclared file without a header is a document")
    }

    @Test func aPatternDeclaresEveryAccountsStoreAndNothingElse() {
        let declarations = StoreDeclarations(["documents/Accounts/*/UserData.sqlite", "Ledger.sqlite"])

        #expect(declarations.declares("Accounts/7/UserData.sqlite"))
        #expect(declarations.declares("Accounts/abc/UserData.sqlite"))
        #expect(!declarations.declares("Accounts/7/Other/UserData.sqlite"), "* stays within one folder")
        #expect(!declarations.declares("Backups/Ledger.sqlite"), "a declared path is not a name matched anywhere")
        #expect(declarations.declares("Ledger.sqlite"))
    }

    @Test func aPlanAndStoreDescriptionsDeclareTheStoresTheyNameInDocuments() throws {
        let plan = try JSONDecoder().decode(
            UpgradePlan.self,
            from: Data(
                #"""
                {"name": "v1-to-v2", "steps": [
                  {"relocate": {"from": "documents/Ledger.sqlite", "to": "applicationSupport/Ledger.sqlite"}},
                  {"migrateSchema": {"store": "applicationSupport/Ledger.sqlite", "migrations": []}}]}
                """#.utf8))
        let app = try TestContainer(declaring: [])
        let descriptions = [
            StoreDescription(name: "Old", url: app.documents.appending(path: "Old/Old.sqlite")),
            StoreDescription(name: "New"),
        ]

        #expect(StoreDeclarations(plan: plan).patterns == ["Ledger.sqlite"])
        #expect(StoreDeclarations(descriptions: descriptions, in: app.container).patterns == ["Old/Old.sqlite"])
    }
}
