import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A copy move killed after its commit leaves its source beside the committed destination; the
/// rerun removes that source only under its lock, as a run takes it (issue 54).
@Suite struct RelocationRecoveryRecheckTests {
    @Test(.timeLimit(.minutes(10)))
    func aLeftoverSourceHeldOpenThroughTheRerunIsStoreInUseAndKept() throws {
        let app = try TestContainer()
        let source = app.documentsStore()
        try PythonSQLite.writeThenKill(source.main, committed: 200, walOnly: 20, bodyBytes: 1000)
        let killed = try runSimulateChild(.relocate(arguments: [app.root.path, "--store", "Notes.sqlite", "--strategy", "copy"], crashAt: .committed))
        #expect(killed.killedBySignal == SIGKILL)
        let holder = try PythonSQLite.holdOpenReading(source.main, table: "note")
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }

        let rerun = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Notes.sqlite", "--timeout", "0.5"])

        #expect(rerun.status == 3, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stderr.contains("store in use") && rerun.stderr.contains(source.main.path), "\(rerun.stderr)")
        #expect(FileManager.default.fileExists(atPath: source.main.path), "the held source is never deleted")
        #expect(try PythonSQLite.inspect(source).rows == 220)

        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        let after = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Notes.sqlite", "--timeout", "0.5"])
        #expect(after.status == 0, "\(after.stdout)\(after.stderr)")
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 220)
        #expect(!FileManager.default.fileExists(atPath: source.main.path))
        #expect(FileManager.default.subpaths(atPath: app.container.quarantineDirectory.path) == nil, "an unchanged source is removed, not quarantined")
    }
}
