import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// Where a crash test kills `backstage import` (its hidden `--crash-at`), with which policy.
struct KilledImport: Sendable, CustomTestStringConvertible {
    var policy: String
    var point: String
    var testDescription: String { "\(policy) killed at \(point)" }

    /// Moves of the scene's archive: the 121 files of Notes it replaces, its 80 new ones, and Fresh (a new folder,
    /// moved whole) with replace; the 80 and Fresh with skip.
    static let every: [KilledImport] =
        ["journaled", "moved:1", "moved:60", "moved:150", "moved:202", "moved-in", "staging-removed"].map { KilledImport(policy: "replace", point: $0) }
        + ["journaled", "moved:1", "moved:40", "moved:81", "moved-in"].map { KilledImport(policy: "skip", point: $0) }
}

/// `backstage import` killed by SIGKILL at points of its move into Documents, then another import
/// (of another archive, so that only the recovery can mend the first): Documents holds exactly the
/// completed import, or, when completing it would overwrite a file written since, exactly the tree
/// before it; every name kept, every file's SHA-256 the same, no staging folder, no journal.
@Suite struct ImportCrashRecoveryTests {
    @Test(arguments: KilledImport.every)
    func aKilledImportIsCompletedByTheNextImport(_ crash: KilledImport) throws {
        let scene = try Scene()
        let killed = try runSimulateChild(.import(arguments: [scene.archive.path, scene.app.root.path, "--on-conflict", crash.policy], crashAt: try #require(.init(crash.point))))
        #expect(killed.killedBySignal == SIGKILL, "the import must really be killed at \(crash.point): \(killed.stderr)")
        if crash.policy == "replace" && crash.point != "staging-removed" {
            // While it was moving in, each original it replaced was set aside under its own name.
            for (path, text) in try scene.replacedSoFar() {
                #expect(text == "mine \(path)", "\(path) set aside with its own bytes")
            }
        }

        let rerun = try runProcess(backstageExecutable, ["import", scene.later.path, scene.app.root.path, "--json"])
        #expect(rerun.status == 0, "\(rerun.stderr)")

        let expected = try scene.completedTree(replacing: crash.policy == "replace")
        #expect(try treeHashes(scene.app.documents) == expected, "exactly the completed import, plus the later archive's file")
        let report = try JSONSerialization.jsonObject(with: Data(rerun.stdout.utf8)) as? [String: Any]
        let recovered = report?["recovered"] as? [String: Any]
        #expect(recovered?["outcome"] as? String == "completed", "\(rerun.stdout)")
        #expect(recovered?["archive"] as? String == scene.archive.path)
        #expect((recovered?["movedIn"] as? [String])?.count == (crash.policy == "replace" ? 202 : 81))
        #expect(Set(recovered?["replaced"] as? [String] ?? []) == (crash.policy == "replace" ? Set(Scene.conflicts.map { "Notes/\($0)" }) : []))
        try scene.expectNothingLeft()
    }

    /// `relocate` and `upgrade` finish an interrupted import before they work on the container, and say so.
    @Test(arguments: ["relocate", "upgrade"])
    func aKilledImportIsCompletedBeforeACommandMovesFiles(_ command: String) throws {
        let scene = try Scene()
        let killed = try runSimulateChild(.import(arguments: [scene.archive.path, scene.app.root.path, "--on-conflict", "replace"], crashAt: .moved(60)))
        #expect(killed.killedBySignal == SIGKILL)
        let plan = scene.archives.url.appending(path: "v1-to-v2.json")
        try Data(#"{"name": "v1-to-v2", "version": "v2", "steps": [{"relocate": {"from": "documents/Notes.sqlite", "to": "applicationSupport/Notes.sqlite"}}, {"quarantine": {"folder": "documents/"}}]}"#.utf8).write(to: plan)

        let run = try runProcess(backstageExecutable, command == "relocate" ? ["relocate", scene.app.root.path] : ["upgrade", scene.app.root.path, "--plan", plan.path])

        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("Completed an interrupted import of \(scene.archive.path): 202 moved in; replaced: "), "\(run.stderr)")
        var expected = try scene.completedTree(replacing: true)
        expected["Later.txt"] = nil
        #expect(try treeHashes(scene.app.documents) == expected)
        try scene.expectNothingLeft()
    }

    /// Killed after 60 moves; then a file appears where a file of the archive not yet moved in goes
    /// (the app wrote it): completing would overwrite it, so the import is undone, every original
    /// put back under its own name, and the report names each.
    @Test func aKilledImportThatCannotCompleteIsUndoneAndEveryOriginalPutBack() throws {
        let scene = try Scene()
        let before = try treeHashes(scene.app.documents)
        let killed = try runSimulateChild(.import(arguments: [scene.archive.path, scene.app.root.path, "--on-conflict", "replace"], crashAt: .moved(60)))
        #expect(killed.killedBySignal == SIGKILL)
        let replaced = try scene.replacedSoFar().keys
        let waiting = try #require((0..<80).map { "Notes/new\($0).txt" }.first { !FileManager.default.fileExists(atPath: scene.app.documents.appending(path: $0).path) })
        try scene.app.writeDocument(waiting, Data("written since".utf8))

        let rerun = try runProcess(backstageExecutable, ["import", scene.later.path, scene.app.root.path])
        #expect(rerun.status == 0, "\(rerun.stderr)")

        var expected = before
        expected[waiting] = try treeHashes(scene.app.documents)[waiting]
        expected["Later.txt"] = Scene.laterHash
        #expect(try treeHashes(scene.app.documents) == expected, "exactly the tree before the import, with the file written since")
        #expect(!replaced.isEmpty)
        #expect(rerun.stdout.hasPrefix("Undid an interrupted import of \(scene.archive.path): 60 moved back out; put back: "), "\(rerun.stdout)")
        for path in replaced { #expect(rerun.stdout.contains(path), "the report names \(path) as put back") }
        try scene.expectNothingLeft()
    }
}

/// A container whose Documents has 121 files of Notes and Other.txt, an archive that replaces those
/// 121 and adds 80 to Notes and the new folder Fresh (20 files), and a later archive of one file.
private struct Scene {
    static let conflicts = (0..<120).map { "n\($0).txt" } + ["Café.txt"]
    static let laterHash = "1d9283d848ea941ace1fe0d2378ef8b70056a0d4d1648b95a322d90163e78285"

    let app: TestContainer
    let archives: TemporaryDirectory
    let archive: URL
    let later: URL

    init() throws {
        app = try TestContainer()
        for name in Self.conflicts { try app.writeDocument("Notes/" + name, Data("mine Notes/\(name)".utf8)) }
        try app.writeDocument("Other.txt", Data("mine too".utf8))
        archives = try TemporaryDirectory()
        var entries: [String: String] = [:]
        for name in Self.conflicts { entries["Notes/" + name] = "theirs Notes/\(name)" }
        for n in 0..<80 { entries["Notes/new\(n).txt"] = "new \(n)" }
        for n in 0..<20 { entries["Fresh/f\(n).txt"] = String(repeating: "fresh \(n) ", count: 50) }
        archive = try Self.zip(entries, in: archives.url, named: "backup.zip")
        later = try Self.zip(["Later.txt": "later"], in: archives.url, named: "later.zip")
    }

    /// The files replaced so far: each one's original, read where it is set aside, by its path.
    func replacedSoFar() throws -> [String: String] {
        let tmp = app.container.temporary
        let staging = try #require(try FileManager.default.contentsOfDirectory(atPath: tmp.path).first { $0.hasPrefix(".backstage-tmp-import-") })
        let aside = tmp.appending(path: staging).appending(path: ".replaced.backstage-tmp")
        var result: [String: String] = [:]
        for name in Self.conflicts {
            let path = "Notes/" + name
            guard try String(contentsOf: app.documents.appending(path: path), encoding: .utf8).hasPrefix("theirs") else { continue }
            result[path] = try String(contentsOf: aside.appending(path: path), encoding: .utf8)
        }
        return result
    }

    /// The hashes of Documents once the import completed, and the later archive's file with it.
    func completedTree(replacing: Bool) throws -> [String: String] {
        let expected = try TemporaryDirectory()
        func write(_ path: String, _ text: String) throws {
            let url = expected.url.appending(path: path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        for name in Self.conflicts { try write("Notes/" + name, (replacing ? "theirs" : "mine") + " Notes/\(name)") }
        for n in 0..<80 { try write("Notes/new\(n).txt", "new \(n)") }
        for n in 0..<20 { try write("Fresh/f\(n).txt", String(repeating: "fresh \(n) ", count: 50)) }
        try write("Other.txt", "mine too")
        try write("Later.txt", "later")
        return try treeHashes(expected.url)
    }

    func expectNothingLeft() throws {
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty, "no staging folder left")
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "import.json").path), "no journal left")
        #expect(!FileManager.default.fileExists(atPath: app.container.quarantineDirectory.path), "nothing quarantined")
    }

    static func zip(_ entries: [String: String], in folder: URL, named name: String) throws -> URL {
        let url = folder.appending(path: name)
        let list = folder.appending(path: name + ".json")
        try JSONEncoder().encode(entries).write(to: list)
        let result = try PythonSQLite.run("""
            import sys, zipfile, json
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                for name, text in sorted(json.load(open(sys.argv[2])).items()): z.writestr(name, text)
            """, [url.path, list.path])
        guard result.status == 0 else { throw Failure(result.stderr) }
        return url
    }
}

/// Every file, folder and link under `root`, by path: a file by the SHA-256 of its bytes (Python's
/// hashlib), a folder as `folder`, a link by its target.
func treeHashes(_ root: URL) throws -> [String: String] {
    let result = try PythonSQLite.run("""
        import sys, os, hashlib, json
        root, out = sys.argv[1], {}
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name); rel = os.path.relpath(path, root)
                if os.path.islink(path): out[rel] = "link:" + os.readlink(path)
                elif os.path.isdir(path): out[rel] = "folder"
                else: out[rel] = hashlib.sha256(open(path, "rb").read()).hexdigest()
        print(json.dumps(out))
        """, [root.path])
    guard result.status == 0 else { throw Failure(result.stderr) }
    return try JSONDecoder().decode([String: String].self, from: Data(result.stdout.utf8))
}
