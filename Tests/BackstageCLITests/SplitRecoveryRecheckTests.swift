import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A split killed after `verified` is finished by the next run only for the store it verified, under
/// that store's lock: a source written since is split again (its rows land in the targets), and a
/// source another process holds open is "store in use", with nothing deleted (issue 54).
@Suite struct SplitRecoveryRecheckTests {
    /// A container whose Application Support holds `S.sqlite` (WAL): TA and TB, 50 rows each, and a
    /// plan that splits it into `A.sqlite` (TA) and `B.sqlite` (TB), killed at `split:verified`.
    struct Killed {
        let scratch: TemporaryDirectory
        var root: URL { scratch.url.appending(path: "c") }
        var support: URL { root.appending(path: "Library/Application Support") }
        var source: URL { support.appending(path: "S.sqlite") }
        var journal: URL { support.appending(path: ".backstage/journal.json") }
        var plan: [String] { ["--plan", scratch.url.appending(path: "split.json").path] }

        init(crashAt point: String = "split:verified") throws {
            scratch = try TemporaryDirectory()
            try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
            let created = try PythonSQLite.run("""
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1], isolation_level=None)
                c.execute("pragma journal_mode=wal")
                c.execute("create table TA(x text)")
                c.execute("create table TB(y text)")
                c.execute("begin")
                for i in range(50):
                    c.execute("insert into TA values (?)", ("a%d" % i,))
                    c.execute("insert into TB values (?)", ("b%d" % i,))
                c.execute("commit")
                c.close()
                """, [source.path])
            guard created.status == 0 else { throw Failure("could not create S.sqlite: \(created.stderr)") }
            let plan = """
                {"name": "split-s", "steps": [{"split": {"store": "applicationSupport/S.sqlite", "into": [
                  {"store": "applicationSupport/A.sqlite", "tables": ["TA"]},
                  {"store": "applicationSupport/B.sqlite", "tables": ["TB"]}]}}]}
                """
            try Data(plan.utf8).write(to: scratch.url.appending(path: "split.json"))
            let killed = try runSimulateChild(.upgrade(arguments: [root.path] + self.plan, crashAt: try #require(CrashPoint(point))))
            guard killed.killedBySignal == SIGKILL else { throw Failure("the split was not killed at \(point): \(killed.stderr)") }
        }

        /// The values of `column` in `table` of the store at `url`, read by Python's sqlite3 on a copy.
        func values(_ url: URL, _ table: String, _ column: String) throws -> [String] {
            let copy = scratch.url.appending(path: "read-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path + "/db" + suffix)
            }
            let read = try PythonSQLite.run("""
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1])
                for (v,) in c.execute("select %s from %s order by rowid" % (sys.argv[3], sys.argv[2])): print(v)
                """, [copy.path + "/db", table, column])
            guard read.status == 0 else { throw Failure("could not read \(url.lastPathComponent): \(read.stderr)") }
            return read.stdout.split(separator: "\n").map(String.init)
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aRowWrittenToTheSourceAfterVerifiedLandsInItsTargetAndTheSourceGoesOnlyThen() throws {
        let app = try Killed()
        let late = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("insert into TA values ('late')")
            c.close()
            """, [app.source.path])
        #expect(late.status == 0, "\(late.stderr)")

        let rerun = try runProcess(backstageExecutable, ["upgrade", app.root.path] + app.plan)

        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stdout.contains("rolled back: \(app.source.path) changed after it was verified"), "\(rerun.stdout)")
        #expect(!rerun.stdout.contains("(completed"), "\(rerun.stdout)")
        let a = try app.values(app.support.appending(path: "A.sqlite"), "TA", "x")
        #expect(a.count == 51 && a.last == "late", "the late row is in the target: \(a.suffix(3))")
        #expect(try app.values(app.support.appending(path: "B.sqlite"), "TB", "y").count == 50)
        #expect(!FileManager.default.fileExists(atPath: app.source.path), "the source goes once the redone split verified it")
        #expect(!FileManager.default.fileExists(atPath: app.journal.path))
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
    }

    /// Past `committed` the targets are authoritative: a source written since is kept in quarantine,
    /// whole, never deleted.
    @Test(.timeLimit(.minutes(10)))
    func aRowWrittenToTheSourceAfterCommittedIsKeptInQuarantine() throws {
        let app = try Killed(crashAt: "split:committed")
        let late = try PythonSQLite.run("""
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("insert into TA values ('late')")
            c.close()
            """, [app.source.path])
        #expect(late.status == 0, "\(late.stderr)")

        let rerun = try runProcess(backstageExecutable, ["upgrade", app.root.path] + app.plan)

        #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stdout.contains("completed: \(app.source.path) changed after it was verified"), "\(rerun.stdout)")
        #expect(!FileManager.default.fileExists(atPath: app.source.path))
        let quarantine = app.support.appending(path: ".backstage/quarantine")
        let kept = try #require(FileManager.default.subpaths(atPath: quarantine.path)?.first { $0.hasSuffix("S.sqlite") })
        let rows = try app.values(quarantine.appending(path: kept), "TA", "x")
        #expect(rows.count == 51 && rows.last == "late", "the late row is kept: \(rows.suffix(3))")
        #expect(try app.values(app.support.appending(path: "A.sqlite"), "TA", "x").count == 50)
        #expect(!FileManager.default.fileExists(atPath: app.journal.path))
    }

    @Test(.timeLimit(.minutes(10)))
    func aSourceHeldOpenThroughTheRerunIsStoreInUseAndNothingIsDeleted() throws {
        let app = try Killed()
        let holder = try PythonSQLite.holdOpenReading(app.source, table: "TA")
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }

        let rerun = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--timeout", "0.5"] + app.plan)

        #expect(rerun.status == 3, "\(rerun.stdout)\(rerun.stderr)")
        #expect(rerun.stderr.contains("store in use") && rerun.stderr.contains(app.source.path), "\(rerun.stderr)")
        #expect(!rerun.stdout.contains("completed"), "\(rerun.stdout)")
        #expect(FileManager.default.fileExists(atPath: app.source.path), "the held source is never deleted")
        #expect(try app.values(app.source, "TA", "x").count == 50)
        #expect(try app.values(app.source, "TB", "y").count == 50)
        #expect(FileManager.default.fileExists(atPath: app.journal.path), "the journal keeps the step")

        // Once the holder is gone, the same rerun finishes the split it verified.
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        let after = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--timeout", "0.5"] + app.plan)
        #expect(after.status == 0, "\(after.stdout)\(after.stderr)")
        #expect(after.stdout.contains("recovered an interrupted step (completed: split"), "\(after.stdout)")
        #expect(try app.values(app.support.appending(path: "A.sqlite"), "TA", "x").count == 50)
        #expect(try app.values(app.support.appending(path: "B.sqlite"), "TB", "y").count == 50)
        #expect(!FileManager.default.fileExists(atPath: app.source.path))
    }
}
