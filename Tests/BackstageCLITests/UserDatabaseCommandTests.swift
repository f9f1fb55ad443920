import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The command line with the Ledger app, which keeps users' databases as documents: only what
/// the app declares (--plan, --catalog, --store) is its own.
@Suite struct UserDatabaseCommandTests {
    @Test func auditListsTheUsersDatabasesApartAndExitsZero() throws {
        let app = try LedgerApp.make(withStores: false)

        let result = try runProcess(backstageExecutable, ["audit", app.root.path, "--store", "Ledger.sqlite"])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Documents is clean"))
        #expect(result.stdout.contains("3 databases not declared by the app, kept as the user's documents:"))
        for path in LedgerApp.userDatabases.keys { #expect(result.stdout.contains("  \(path) "), "\(path)") }
        #expect(result.stderr.isEmpty)
    }

    @Test func withNothingDeclaredAuditSaysSoAndExitsZero() throws {
        let app = try LedgerApp.make(withStores: false)

        let result = try runProcess(backstageExecutable, ["audit", app.root.path, "--json"])

        #expect(result.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect((json["findings"] as? [Any])?.isEmpty == true)
        #expect(
            (json["userDatabases"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == [
                "Finance/Budget.sqlite", "Journal.sqlite", "notes.db",
            ])
        #expect(json["noStoreDeclared"] as? Bool == true)
    }

    @Test func relocateWithThePlanMovesTheAppsStoresAndLeavesTheUsersDatabasesByteIdentical() throws {
        let app = try LedgerApp.make()
        let plan = app.root.appending(path: "v1-to-v2.json")
        try Data(
            #"""
            {"name": "v1-to-v2", "steps": [
              {"relocate": {"from": "documents/Ledger.sqlite", "to": "applicationSupport/Ledger.sqlite"}}]}
            """#.utf8
        ).write(to: plan)
        let before = LedgerApp.userBytes(in: app.documents)

        let result = try runProcess(backstageExecutable, ["relocate", app.root.path, "--plan", plan.path])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Moved Ledger.sqlite →"))
        #expect(result.stdout.contains("Left notes.db: a database not declared by the app"))
        #expect(LedgerApp.userBytes(in: app.documents) == before)
        #expect(try PythonSQLite.inspect(app.supportStore("Ledger.sqlite")).rows == 20)
        #expect(!FileManager.default.fileExists(atPath: app.documents.appending(path: "Ledger.sqlite").path))
    }

    @Test func exportThenImportBringsTheUsersDatabasesBack() throws {
        let app = try LedgerApp.make()
        let archive = app.root.appending(path: "backup.tar.gz").path
        let target = try TemporaryDirectory()

        let exported = try runProcess(
            backstageExecutable, ["export", app.root.path, "--store", "Ledger.sqlite", "-o", archive])
        let imported = try runProcess(
            backstageExecutable, ["import", archive, target.path, "--store", "Ledger.sqlite"])

        #expect(exported.status == 0 && imported.status == 0, "\(exported.stderr)\(imported.stderr)")
        #expect(exported.stdout.contains("Ledger.sqlite: internal file (database)"))
        for (path, rows) in LedgerApp.userDatabases {
            #expect(
                try PythonSQLite.inspect(StoreFileSet(main: target.url.appending(path: "Documents/\(path)"))).rows
                    == rows, "\(path)")
        }
    }

    @Test func withNothingDeclaredRelocateMovesNoDatabaseAndSaysSo() throws {
        let app = try LedgerApp.make()
        let before = snapshot(app.documents)

        let result = try runProcess(backstageExecutable, ["relocate", app.root.path])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Left Ledger.sqlite: a database not declared by the app"))
        #expect(result.stdout.contains("No store declared (--plan, --catalog or --store)"))
        #expect(snapshot(app.documents) == before, "nothing of the user's, nor anything else, moved")
    }
}
