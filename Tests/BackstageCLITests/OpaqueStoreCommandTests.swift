import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// `backstage relocate` and `upgrade` with a declared store that has no SQLite header (an
/// encrypted SQLCipher store): moved whole with its sidecars, killed at every phase boundary and
/// rerun into one complete byte-identical store, refused while another process holds it.
@Suite struct OpaqueStoreCommandTests {
    /// One complete store in Application Support, byte for byte; nothing of it left in Documents;
    /// no temporaries, no journal, nothing quarantined.
    static func expectOneCompleteStore(_ app: TestContainer, _ files: [String: Data]) {
        let problems = OpaqueStore.problems(afterMoving: files, in: app)
        #expect(problems.isEmpty, "\(problems)")
        let quarantined = paths(under: app.container.quarantineDirectory, containing: "Vault")
        #expect(quarantined.isEmpty, "\(quarantined)")
    }

    @Test(arguments: KilledMove.everyBoundary)
    func killedAtAPhaseBoundaryThenRerunEndsWithOneCompleteEncryptedStore(_ crash: KilledMove) throws {
        let app = try TestContainer()
        let files = try OpaqueStore.write("Vault.sqlite", into: app)

        let killed = try runSimulateChild(.relocate(arguments: [app.root.path, "--store", "Vault.sqlite", "--strategy", crash.strategy.rawValue],
                                                 crashAt: crash.phase))
        #expect(killed.killedBySignal == SIGKILL, "the move must really be interrupted at \(crash.phase)")
        let rerun = try runProcess(backstageExecutable, ["relocate", app.root.path, "--store", "Vault.sqlite"])
        #expect(rerun.status == 0, "\(rerun.stderr)")

        Self.expectOneCompleteStore(app, files)
    }

    @Test func anEncryptedStoreHeldOpenIsRefusedAsInUseAndNothingMoves() throws {
        let app = try TestContainer()
        _ = try OpaqueStore.write("Vault.sqlite", into: app)
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
        let files = try OpaqueStore.write("Vault.sqlite", into: app)
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
            SimulateChildRequest.Command.relocate(arguments: [app.root.path, "--store", "Vault.sqlite", "--strategy", strategy.rawValue])
        }
        let recorded = try TestContainer()
        _ = try OpaqueStore.write("Vault.sqlite", into: recorded)
        let cuts = PowerLossRun.cuts(of: try runner.record(arguments(recorded), environment: [:]), limit: 16)
        #expect(cuts.count >= 8)
        for after in cuts {
            for lost in [false, true] {
                let app = try TestContainer()
                let files = try OpaqueStore.write("Vault.sqlite", into: app)
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
