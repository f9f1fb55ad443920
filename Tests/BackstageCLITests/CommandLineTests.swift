import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The CLI contract: exit codes, JSON on stdout, one-sentence errors on stderr, help text.
@Suite struct CommandLineTests {
    @Test func auditExitsOneWithFindingsAndZeroWhenClean() throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 5, walOnly: 5)

        let leaks = try runProcess(backstageExecutable, ["audit", app.root.path, "--store", "Notes.sqlite", "--json"])
        #expect(leaks.status == 1)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(leaks.stdout.utf8)) as? [String: Any])
        let findings = try #require(json["findings"] as? [[String: Any]])
        #expect(findings.map { $0["path"] as? String } == ["Notes.sqlite", "Notes.sqlite-shm", "Notes.sqlite-wal"])
        #expect(findings.allSatisfy { Set($0.keys) == ["path", "kind", "visible", "bytes"] })
        #expect(findings.first?["kind"] as? String == "database")

        #expect(try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Notes.sqlite"]).status == 0)
        let clean = try runProcess(backstageExecutable, ["audit", app.root.path, "--store", "Notes.sqlite", "--json"])
        #expect(clean.status == 0)
        #expect(clean.stdout.contains("\"findings\" : [\n\n  ]") || clean.stdout.contains("\"findings\" : []"))
    }

    @Test func relocateJSONReportsTheMoveAndASecondRunHasNothingToDo() throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 10)

        let first = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Notes.sqlite", "--json"])
        #expect(first.status == 0)
        let report = try JSONDecoder().decode(RelocationReport.self, from: Data(first.stdout.utf8))
        #expect(report.moved.map(\.store) == ["Notes.sqlite"])

        let second = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Notes.sqlite"])
        #expect(second.status == 0)
        #expect(second.stdout.hasPrefix("Nothing to do"))
    }

    @Test func aStoreInUseFailsWithExitThreeAndOneSentenceNamingIt() throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 10)
        let holder = try PythonSQLite.holdOpen(app.documentsStore().main)
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }

        let result = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Notes.sqlite", "--timeout", "0.2"])

        #expect(result.status == 3)
        #expect(result.stderr.hasPrefix("error: store in use"))
        #expect(result.stderr.contains(app.documentsStore().main.path))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func usageErrorsExitTwo() throws {
        #expect(try runProcess(backstageExecutable, ["relocate", "/tmp", "--strategy", "teleport"]).status == 2)
        #expect(try runProcess(backstageExecutable, ["audit"]).status == 2)
        #expect(try runProcess(backstageExecutable, ["audit", "/tmp", "--layout", "xdg"]).status == 2)
        #expect(try runProcess(backstageExecutable, ["frobnicate"]).status == 2)
    }

    @Test func aMisspeltVersionIsAUsageErrorThatSaysWhichWasMeant() throws {
        let sample = try runProcess(backstageExecutable, ["simulate", "--from", "v1", "--to", "v33"])
        #expect(sample.status == 2, "\(sample.stderr)")
        #expect(sample.stderr.contains("v33 is not a version of the Notes sample (did you mean v3?): use v1, v2, v3, v4."), "\(sample.stderr)")

        let scratch = try TemporaryDirectory()
        let catalog = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appending(path: "Catalogs/Cookbook")
        let own = try runProcess(backstageExecutable, ["fixture", scratch.path + "/fx", "--catalog", catalog.path, "--layout", "v22"])
        #expect(own.status == 2, "\(own.stderr)")
        #expect(own.stderr.contains("the catalog has no version v22 (did you mean v2?)"), "\(own.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/fx"), "nothing written")

        let far = try runProcess(backstageExecutable, ["fixture", scratch.path + "/fx", "--catalog", catalog.path, "--layout", "release-9"])
        #expect(far.status == 2 && !far.stderr.contains("did you mean"), "no guess when nothing is close: \(far.stderr)")
    }

    @Test func mistakenArgumentsAreUsageErrorsThatSayWhatToWrite() throws {
        let scratch = try TemporaryDirectory()
        let documents = scratch.url.appending(path: "Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: scratch.url.appending(path: "Library/Application Support"), withIntermediateDirectories: true)
        try PythonSQLite.createStore(documents.appending(path: "Podnote.sqlite"), rows: 12)
        let archive = scratch.url.appending(path: "docs.zip")
        try Data("PK".utf8).write(to: archive)

        let group = try runProcess(backstageExecutable, ["relocate", scratch.path, "--to", "g"])
        #expect(group.status == 2 && group.stderr.contains("g is not a root: use documents, applicationSupport, caches, or an App Group identifier, which starts with group. (group.com.example.app)"), "\(group.stderr)")
        let appGroup = try runProcess(backstageExecutable, ["relocate", scratch.path, "--app-group", "g=/tmp"])
        #expect(appGroup.status == 2 && appGroup.stderr.contains("g is not an App Group identifier, which starts with group."), "\(appGroup.stderr)")
        let swapped = try runProcess(backstageExecutable, ["import", scratch.path, archive.path])
        #expect(swapped.status == 2 && swapped.stderr.contains("the archive comes first (backstage import \(archive.path) \(scratch.path))"), "\(swapped.stderr)")
        let outside = try runProcess(backstageExecutable, ["relocate", scratch.path, "--store", "/elsewhere/Podnote.sqlite"])
        #expect(outside.status == 2 && outside.stderr.contains("--store /elsewhere/Podnote.sqlite is not inside \(documents.path)"), "\(outside.stderr)")
        #expect(FileManager.default.fileExists(atPath: documents.appending(path: "Podnote.sqlite").path), "nothing moved by a refused command")

        // An absolute path inside Documents names the store relative to it (it was joined onto Documents).
        let absolute = try runProcess(backstageExecutable, ["relocate", scratch.path, "--store", documents.appending(path: "Podnote.sqlite").path])
        #expect(absolute.status == 0, "\(absolute.stderr)")
        let moved = StoreFileSet(main: scratch.url.appending(path: "Library/Application Support/Podnote.sqlite"))
        #expect(try PythonSQLite.inspect(moved).rows == 12)
        #expect(!FileManager.default.fileExists(atPath: documents.appending(path: "Podnote.sqlite").path))
    }

    @Test func aDeclarationThatMatchesNothingIsSaidWithTheNameItMayHaveMeant() throws {
        let scratch = try TemporaryDirectory()
        let documents = scratch.url.appending(path: "Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: scratch.url.appending(path: "Library/Application Support"), withIntermediateDirectories: true)

        // A fresh install: the app declares its store at every launch, and has none on its first.
        let fresh = try runProcess(backstageExecutable, ["relocate", scratch.path, "--store", "Podnotes.sqlite"])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        #expect(fresh.stdout == "No store matches Podnotes.sqlite in \(documents.path) (a fresh install has none yet)\nNothing to do\n", "\(fresh.stdout)")
        let freshJSON = try runProcess(backstageExecutable, ["relocate", scratch.path, "--store", "Podnotes.sqlite", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(freshJSON.stdout.utf8)) as? [String: Any])
        #expect((report["unmatched"] as? [[String: Any]])?.first?["name"] as? String == "Podnotes.sqlite")

        // A typo: said with the database it may have meant, which stays where it is.
        try PythonSQLite.createStore(documents.appending(path: "Podnotes.sqlite"), rows: 5)
        let typo = try runProcess(backstageExecutable, ["relocate", scratch.path, "--store", "Podnote.sqlite"])
        #expect(typo.status == 0 && typo.stdout.contains("No store matches Podnote.sqlite in \(documents.path) (did you mean Podnotes.sqlite?)"), "\(typo.stdout)")
        #expect(FileManager.default.fileExists(atPath: documents.appending(path: "Podnotes.sqlite").path))
        let audit = try runProcess(backstageExecutable, ["audit", scratch.path, "--store", "Podnote.sqlite"])
        #expect(audit.stderr.contains("warning: --store Podnote.sqlite matches no file in \(documents.path) (did you mean Podnotes.sqlite?)"), "\(audit.stderr)")

        // A plan naming the typo: said too (the run would exit 1, not accounting for the store).
        let plan = scratch.url.appending(path: "plan.json")
        try Data(#"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/Podnote.sqlite", "to": "applicationSupport/Podnote.sqlite"}}]}"#.utf8).write(to: plan)
        let planned = try runProcess(backstageExecutable, ["audit", scratch.path, "--plan", plan.path])
        #expect(planned.stderr.contains("warning: the store Podnote.sqlite the app declares matches no file in \(documents.path) (did you mean Podnotes.sqlite?)"), "\(planned.stderr)")

        // The relocate an audit suggests carries the declaration: a bare relocate moves no store.
        let declared = try runProcess(backstageExecutable, ["audit", scratch.path, "--store", "Podnotes.sqlite"])
        #expect(declared.status == 1 && declared.stdout.contains("Run `backstage relocate CONTAINER --store Podnotes.sqlite` to move them out of Documents."), "\(declared.stdout)")
        #expect(declared.stderr.isEmpty, "\(declared.stderr)")
    }

    /// SQLite creates a store's file when the app first opens it, before any page is written: a
    /// declared empty store is the app's for audit as for relocate (audit called it clean, then
    /// relocate moved it). Undeclared, an empty file stays the user's document.
    @Test func aDeclaredEmptyStoreIsTheAppsForAuditAsForRelocate() throws {
        let scratch = try TemporaryDirectory()
        let documents = scratch.url.appending(path: "Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: scratch.url.appending(path: "Library/Application Support"), withIntermediateDirectories: true)
        try Data().write(to: documents.appending(path: "X.sqlite"))
        try Data().write(to: documents.appending(path: "notes.db"))

        let undeclared = try runProcess(backstageExecutable, ["audit", scratch.path])
        #expect(undeclared.status == 0, "an empty file nobody declared is a document: \(undeclared.stdout)")
        let audit = try runProcess(backstageExecutable, ["audit", scratch.path, "--store", "X.sqlite", "--json"])
        #expect(audit.status == 1, "\(audit.stdout)")
        let findings = try #require(try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [String: Any])["findings"] as? [[String: Any]]
        #expect(findings?.map { $0["path"] as? String } == ["X.sqlite"], "\(audit.stdout)")
        let moved = try runProcess(backstageExecutable, ["relocate", scratch.path, "--store", "X.sqlite"])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(FileManager.default.fileExists(atPath: scratch.url.appending(path: "Library/Application Support/X.sqlite").path))
        #expect(FileManager.default.fileExists(atPath: documents.appending(path: "notes.db").path), "the user's empty file stays")
        #expect(try runProcess(backstageExecutable, ["audit", scratch.path, "--store", "X.sqlite"]).status == 0)
    }

    @Test func aMissingContainerIsAnOperationalFailure() throws {
        let result = try runProcess(backstageExecutable, ["audit", "/nonexistent/container"])
        #expect(result.status == 3)
        #expect(result.stderr == "error: /nonexistent/container is not a folder\n")
    }

    @Test func auditHelpIsExact() throws {
        let result = try runProcess(backstageExecutable, ["audit", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout == """
            OVERVIEW: List the internal files a user can see in Documents.

            Reads Documents without opening any store: the app's stores (those its --plan,
            --catalog or --store declare, whatever their header), -wal/-shm/-journal
            sidecars, orphan sidecars (by their headers), Core Data .Name_SUPPORT folders
            and Backstage temporaries. A file is internal only on such evidence: a user's
            Cargo.lock or empty notes.db is a document. A database the app did not declare
            is the user's: listed apart, never a finding (with nothing declared, every
            database is). Exits 1 when it finds an internal file.

            Example:
              backstage audit ~/Containers/MyApp --plan plans/v1-to-v2.json --json

            USAGE: backstage audit [<container>] [--layout <layout>] [--app <app>] [--plan <file> ...] [--catalog <dir>] [--store <path> ...] [--json]

            ARGUMENTS:
              <container>             The root of an iOS-style app container (with --layout
                                      xdg: the home folder to use).

            OPTIONS:
              --layout <layout>       The container layout: ios (Documents,
                                      Library/Application Support under the root) or xdg.
                                      (values: ios, xdg; default: ios)
              --app <app>             The app name of an xdg layout (the folder under
                                      ~/Documents, $XDG_DATA_HOME, ...).
              --plan <file>           An upgrade plan of the app (repeatable): the stores
                                      in Documents its steps name are the app's.
              --catalog <dir>         The app's catalog folder: the stores in Documents of
                                      every version and plan are the app's.
              --store <path>          A store of the app, as a path relative to Documents
                                      or a pattern such as Accounts/*/UserData.sqlite
                                      (repeatable).
              --json                  Print one JSON object:
                                      {"findings":[{"path","kind","visible","bytes"}]}, the
                                      user's databases in "userDatabases".
              -h, --help              Show help information.

            """)
    }

    @Test func onlyTheRootListsVersionSoCatalogInitShowsOneVersionOption() throws {
        let root = try runProcess(backstageExecutable, ["--help"])
        #expect(root.stdout.contains("  --version               Show the version.\n"))
        #expect(try runProcess(backstageExecutable, ["--version"]).stdout == "0.1.0\n")
        let bare = try runProcess(backstageExecutable, [])
        #expect(bare.status == 0)
        #expect(bare.stdout.hasPrefix("OVERVIEW: Keep an app's internal databases"))

        let initHelp = try runProcess(backstageExecutable, ["catalog", "init", "--help"])
        #expect(initHelp.status == 0)
        #expect(initHelp.stdout.contains("  --version <version>     The name of the captured version. (default: v1)\n"))
        #expect(!initHelp.stdout.contains("Show the version."))
    }

    @Test func everyCommandHasAnAbstractAndAnExample() throws {
        for command in ["demo", "audit", "relocate", "upgrade", "export", "import", "catalog", "inspect", "fixture", "simulate", "bench"] {
            let help = try runProcess(backstageExecutable, [command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.hasPrefix("OVERVIEW: "))
            #expect(help.stdout.contains("Example:\n  backstage \(command)"))
            #expect(!help.stdout.contains("\\"), "no stray backslash in the help of \(command)")
        }
    }

    @Test func fixturePrintsAManifestAndSimulateExitsOneWhenAnInvariantBreaks() throws {
        let scratch = try TemporaryDirectory()
        let fixture = try runProcess(backstageExecutable, ["fixture", scratch.path + "/v2", "--layout", "v2", "--size", "200KB", "--state", "clean", "--seed", "4", "--json"])
        #expect(fixture.status == 0, "\(fixture.stderr)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(fixture.stdout.utf8)) as? [String: Any])
        let stores = try #require(manifest["stores"] as? [String: [String: [String: Any]]])
        #expect(stores["applicationSupport/Notes.sqlite"]?["ZNOTE"]?["rows"] as? Int == manifest["rows"] as? Int, "the app's main table, ZNOTE")
        #expect(try runProcess(backstageExecutable, ["fixture", scratch.path + "/v2", "--layout", "v2"]).status == 3, "an existing folder is refused")
        #expect(try runProcess(backstageExecutable, ["fixture", scratch.path + "/x", "--layout", "v9"]).status == 2)

        let plan = scratch.url.appending(path: "lossy.json")
        try Data(#"{"name": "lossy", "steps": [{"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}}, {"migrateSchema": {"store": "applicationSupport/Notes.sqlite", "migrations": [{"id": "cleanup", "sql": "DELETE FROM ZNOTE WHERE Z_PK <= 4"}]}}]}"#.utf8).write(to: plan)
        let broken = try runProcess(backstageExecutable, ["simulate", "--from", "v1", "--to", "v2", "--sizes", "150KB", "--states", "wal-pending", "--crash-points", "none", "--plan", plan.path])
        #expect(broken.status == 1)
        let counts = broken.stdout.firstMatch(of: /ZNOTE had (\d+) rows, applicationSupport\/Notes.sqlite has (\d+)/).map { (Int($0.1) ?? 0, Int($0.2) ?? 0) }
        #expect(broken.stdout.contains("FAILED: rows lost: ") && counts.map { $0.0 - $0.1 } == 4, "the 4 notes the plan deletes: \(broken.stdout)")
        let fine = try runProcess(backstageExecutable, ["simulate", "--from", "v1", "--to", "v2", "--sizes", "150KB", "--states", "clean", "--crash-points", "2"])
        #expect(fine.status == 0, "\(fine.stdout)")
    }

    @Test func demoKeepsEveryRowAndLeavesDocumentsClean() throws {
        let scratch = try TemporaryDirectory()
        let result = try runProcess(backstageExecutable, ["demo", "--directory", scratch.path + "/demo", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let before = try #require(summary["rowsBefore"] as? Int)
        #expect(summary["rowsOnlyInWAL"] as? Int ?? 0 > 0)
        #expect(summary["rowsAfter"] as? Int == before)
        #expect(summary["leaksBefore"] as? Int ?? 0 > 0)
        #expect(summary["leaksAfter"] as? Int == 0)
    }
}
