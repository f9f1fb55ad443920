import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// A library an app can ship: a process linking only `Backstage` and `BackstageExport`
/// (Tests/BackstageLibraryProbe) relocates a store across file systems, its copy verified, and
/// afterwards SQLite's default VFS is still its own and the SIGBUS action the one it started with,
/// though the environment names a disk log (Backstage once read it in a C constructor, made a
/// recording VFS the default, and installed a SIGBUS handler at the first comparison). Neither
/// `backstage` nor the libraries record a disk operation unless the simulator's child installs the
/// recorder.
@Suite struct LibraryProcessStateTests {
    static var sharedMemoryWritable: Bool { FileManager.default.isWritableFile(atPath: "/dev/shm") }

    /// An executable built beside `backstage`.
    static func sibling(_ name: String) -> String {
        URL(filePath: backstageExecutable).deletingLastPathComponent().appending(path: name).path
    }

    @Test(.enabled(if: sharedMemoryWritable, "/dev/shm is the second file system"))
    func theLibrariesRegisterNoSQLiteVFSAndNoSignalHandler() throws {
        let local = try TemporaryDirectory(prefix: "probe")
        let other = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let log = local.url.appending(path: "disk.log")
        var environment = ProcessInfo.processInfo.environment
        environment["BACKSTAGE_DISK_LOG"] = log.path
        environment["BACKSTAGE_DISK_CUT"] = "3"
        // Without the Swift runtime's backtracer, the process starts with SIGBUS's default action.
        environment["SWIFT_BACKTRACE"] = "enable=no"

        let result = try runProcess(
            Self.sibling("BackstageLibraryProbe"), [local.url.appending(path: "Documents").path, other.url.path],
            environment: environment)

        #expect(result.killedBySignal == nil && result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = Set(result.stdout.split(separator: "\n").map(String.init))
        #expect(lines.contains("default-vfs unix"), "\(lines)")
        #expect(lines.contains("sigbus-before 0") && lines.contains("sigbus-after 0"), "\(lines)")
        #expect(lines.contains("rows 4000"), "every row reached the other file system: \(lines)")
        #expect(!FileManager.default.fileExists(atPath: log.path), "the environment started a recorder")
    }

    /// `backstage` itself records nothing whatever the environment says: only
    /// `backstage-simulate-child`, asked on its command line, does.
    @Test func backstageRecordsNoDiskOperationFromTheEnvironment() throws {
        let scratch = try TemporaryDirectory(prefix: "probe")
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 20, walOnly: 5, bodyBytes: 100)
        let log = scratch.url.appending(path: "disk.log")
        var environment = ProcessInfo.processInfo.environment
        environment["BACKSTAGE_DISK_LOG"] = log.path
        environment["BACKSTAGE_DISK_CUT"] = "2"

        let run = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Notes.sqlite"], environment: environment)

        #expect(run.killedBySignal == nil && run.status == 0, "\(run.stderr)")
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 25)
        #expect(!FileManager.default.fileExists(atPath: log.path))

        let recorded = try TestContainer()
        try PythonSQLite.writeThenKill(recorded.documentsStore().main, committed: 20, walOnly: 5, bodyBytes: 100)
        let child = try runSimulateChild(
            .relocate(arguments: [recorded.root.path, "--store", "Notes.sqlite"]), recorder: .init(log: log.path))
        #expect(child.status == 0, "\(child.stderr)")
        let logged = try String(contentsOf: log, encoding: .utf8)
        #expect(logged.contains("\trename\t"), "the child's log names the move's rename: \(logged.prefix(400))")
        #expect(try PythonSQLite.inspect(recorded.supportStore()).rows == 25)
    }

    /// The crash hooks are the child's: `backstage upgrade --crash-at` is an unknown option (a usage
    /// error, exit 2, nothing touched) and `backstage` has no `fixture-writer`, while the child's
    /// `upgrade --crash-at` really kills the upgrade there.
    @Test func onlyTheSimulateChildOffersCrashHooks() throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 20, walOnly: 5, bodyBytes: 100)
        let plan = app.root.appending(path: "plan.json")
        try Data(#"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}}]}"#.utf8)
            .write(to: plan)
        let before = snapshot(app.root)

        let refused = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path, "--crash-at", "relocate:committed"])
        #expect(refused.status == 2 && refused.stderr == "error: unknown option '--crash-at'\n", "\(refused.stderr)")
        #expect(snapshot(app.root) == before, "a refused command line touches nothing")
        let writer = try runProcess(backstageExecutable, ["fixture-writer", app.documentsStore().main.path])
        #expect(writer.status == 2 && writer.stderr.contains("unexpected arguments: 'fixture-writer'"), "\(writer.stderr)")

        let killed = try runSimulateChild(.upgrade(arguments: [app.root.path, "--plan", plan.path], crashAt: CrashPoint(.relocate, .committed)))
        #expect(killed.killedBySignal == SIGKILL, "\(killed.stderr)")
        let rerun = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 25)
    }
}
