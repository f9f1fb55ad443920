import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// `backstage relocate` and `upgrade` with a declared store that has no SQLite header (an
/// encrypted SQLCipher store): moved whole with its sidecars, killed at every phase boundary and
/// rerun into one complete byte-identical store, refused while another process holds it.
@Suite struct OpaqueStoreCommandTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var strategy: RelocationStrategy
        var phase: StepPhase
        var testDescription: String { "\(strategy.rawValue) killed at \(phase.rawValue)" }
    }

    static let cases: [Case] = [RelocationStrategy.rename, .copy].flatMap { strategy in
        StepPhase.boundaries(for: strategy).map { Case(strategy: strategy, phase: $0) }
    }

    static func writeEncryptedStore(_ app: TestContainer, name: String = "Vault.sqlite") throws -> [String: Data] {
        let base = (name as NSString).deletingPathExtension
        let files: [String: Data] = [
            name: randomBytes(65_536), name + "-wal": randomBytes(12_345), name + "-shm": randomBytes(32_768),
            ".\(base)_SUPPORT/_EXTERNAL_DATA/blob": randomBytes(5_000),
        ]
        for (path, data) in files { _ = try app.writeDocument(path, data) }
        return files
    }

    static func randomBytes(_ count: Int) -> Data {
        var data = Data((0..<count).map { _ in UInt8.random(in: 0...255) })
        data[0] = 0x9c  // not a SQLite header, nor the start of one
        return data
    }

    /// One complete store in Application Support, byte for byte; nothing of it left in Documents;
    /// no temporaries, no journal, nothing quarantined.
    static func expectOneCompleteStore(_ app: TestContainer, _ files: [String: Data]) {
        for (path, data) in files {
            #expect(FileManager.default.contents(atPath: app.applicationSupport.appending(path: path).path) == data, "\(path)")
            #expect(!FileManager.default.fileExists(atPath: app.documents.appending(path: path).path), "\(path)")
        }
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path))
        let quarantined = paths(under: app.container.quarantineDirectory, containing: "Vault")
        #expect(quarantined.isEmpty, "\(quarantined)")
    }

    @Test(arguments: cases)
    func killedAtAPhaseBoundaryThenRerunEndsWithOneCompleteEncryptedStore(_ crash: Case) throws {
        let app = try TestContainer()
        let files = try Self.writeEncryptedStore(app)

        let killed = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Vault.sqlite",
                                                          "--strategy", crash.strategy.rawValue, "--crash-at", crash.phase.rawValue])
        #expect(killed.killedBySignal == SIGKILL, "the move must really be interrupted at \(crash.phase)")
        let rerun = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Vault.sqlite"])
        #expect(rerun.status == 0, "\(rerun.stderr)")

        Self.expectOneCompleteStore(app, files)
    }

    @Test func anEncryptedStoreHeldOpenIsRefusedAsInUseAndNothingMoves() throws {
        let app = try TestContainer()
        _ = try Self.writeEncryptedStore(app)
        let holder = try holdOpen(app.documents.appending(path: "Vault.sqlite"))
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        let before = snapshot(app.documents)

        let refused = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Vault.sqlite"])

        #expect(refused.status != 0)
        #expect(refused.stderr.hasPrefix("error: store in use: process \(holder.processIdentifier) has "), "\(refused.stderr)")
        #expect(snapshot(app.documents) == before)
        #expect(!FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: "Vault.sqlite").path))
    }

    @Test func anUpgradePlanNamingAnEncryptedStoreMovesItWhole() throws {
        let app = try TestContainer()
        let files = try Self.writeEncryptedStore(app)
        let notes = try app.writeDocument("notes.txt", Data("the user's".utf8))
        let plan = app.root.appending(path: "plan.json")
        try Data(#"""
            {"name": "v2", "version": "v2", "steps": [
              {"relocate": {"from": "documents/Vault.sqlite", "to": "applicationSupport/Vault.sqlite"}}]}
            """#.utf8).write(to: plan)

        let run = try runProcess(backstageExecutable, ["upgrade", app.root.path, "--plan", plan.path])

        #expect(run.status == 0, "\(run.stderr)")
        Self.expectOneCompleteStore(app, files)
        #expect(FileManager.default.contents(atPath: notes.path) == Data("the user's".utf8))
    }

    @Test func anEmptyDeclaredStoreMovesAsItIs() throws {
        let app = try TestContainer()
        let store = try app.writeDocument("Fresh.sqlite", Data())

        let run = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Fresh.sqlite"])

        #expect(run.status == 0, "\(run.stderr)")
        #expect(FileManager.default.contents(atPath: app.applicationSupport.appending(path: "Fresh.sqlite").path) == Data())
        #expect(!FileManager.default.fileExists(atPath: store.path))
        let again = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Fresh.sqlite"])
        #expect(again.status == 0, "a second run has nothing to do: \(again.stderr)")
    }

    /// A power cut after each disk operation of the move (unsynced writes kept or lost, unsynced
    /// renames undone), then the next run: one complete byte-identical store.
    @Test(arguments: [RelocationStrategy.rename, .copy])
    func everyPowerCutOfAnEncryptedStoresMoveEndsWithOneCompleteStore(_ strategy: RelocationStrategy) throws {
        let scratch = try TemporaryDirectory()
        let runner = PowerLossRun(executable: URL(filePath: backstageExecutable), scratch: scratch.url.appending(path: "power"))
        let arguments = { (app: TestContainer) in
            ["relocate", app.root.path, "--store", "Vault.sqlite", "--strategy", strategy.rawValue]
        }
        let recorded = try TestContainer()
        _ = try Self.writeEncryptedStore(recorded)
        let cuts = PowerLossRun.cuts(of: try runner.record(arguments(recorded), environment: [:]), limit: 16)
        #expect(cuts.count >= 8)
        for after in cuts {
            for lost in [false, true] {
                let app = try TestContainer()
                let files = try Self.writeEncryptedStore(app)
                let cut = PowerCut(after: after, losesUnsyncedWrites: lost)
                _ = try runner.run(arguments(app), environment: [:], cut: cut)
                let rerun = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Vault.sqlite"])
                #expect(rerun.status == 0, "\(cut): \(rerun.stderr)")
                for (path, data) in files {
                    let moved = FileManager.default.contents(atPath: app.applicationSupport.appending(path: path).path)
                    #expect(moved == data, "\(cut): \(path) is not the original at its destination")
                    #expect(!FileManager.default.fileExists(atPath: app.documents.appending(path: path).path), "\(cut): \(path)")
                }
            }
        }
    }

    /// A process holding `file` open without any lock, as an app holds its encrypted store.
    func holdOpen(_ file: URL) throws -> Process {
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/python3")
        process.arguments = ["-c", "import sys, time\nf = open(sys.argv[1], 'rb')\nprint('ready', flush=True)\ntime.sleep(120)",
                             file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        _ = output.fileHandleForReading.availableData
        return process
    }
}
