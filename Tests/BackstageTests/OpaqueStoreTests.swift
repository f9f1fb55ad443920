import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A declared store without a SQLite header (an encrypted SQLCipher store) is the app's: it moves
/// whole, main file and sidecars byte for byte, without SQLite ever opening it.
@Suite struct OpaqueStoreTests {
    static func expectMovedWhole(_ app: TestContainer, _ files: [String: Data]) {
        let problems = OpaqueStore.problems(afterMoving: files, in: app)
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func anEncryptedStoreIsRenamedWholeWithItsSidecars() async throws {
        let app = try TestContainer()
        let files = try OpaqueStore.write(into: app)

        let report = try await Relocator(container: app.container).relocate(RelocationOptions(strategy: .rename))

        #expect(report.moved.map(\.strategy) == [.rename])
        Self.expectMovedWhole(app, files)
        #expect(report.quarantined.isEmpty)
    }

    @Test func anEncryptedStoreIsCopiedWholeToAnotherFileSystem() async throws {
        let local = try TemporaryDirectory()
        let shm = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let app = try TestContainer(documents: local.url.appending(path: "Documents"),
                                    applicationSupport: shm.url.appending(path: "Application Support"), keeping: local)
        let files = try OpaqueStore.write(into: app)

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.strategy) == [.copy])
        Self.expectMovedWhole(app, files)
        #expect(paths(under: shm.url, containing: ".backstage-tmp").isEmpty)
    }

    /// Naming a file to move selects it; only a declaration (plan, catalog, descriptions) makes
    /// a file without a header the app's.
    @Test func anUndeclaredFileWithoutAHeaderNamedToMoveIsRefusedAndStays() async throws {
        let app = try TestContainer(declaring: [])
        _ = try OpaqueStore.write(into: app)
        let before = snapshot(app.documents)

        await #expect(throws: BackstageError(.notADatabase, path: app.documentsStore().main.path, during: .relocating)) {
            try await Relocator(container: app.container).relocate(RelocationOptions(stores: ["Notes.sqlite"]))
        }
        #expect(snapshot(app.documents) == before)
    }

    @Test func anUndeclaredFileWithoutAHeaderIsTheUsersAndStays() async throws {
        let app = try TestContainer(declaring: [])
        var files = try OpaqueStore.write(into: app)
        // Without its store a support folder is a stray (quarantined); here only the user's files.
        try FileManager.default.removeItem(at: app.documents.appending(path: ".Notes_SUPPORT"))
        files[".Notes_SUPPORT/_EXTERNAL_DATA/blob"] = nil
        let before = snapshot(app.documents)

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.isEmpty)
        #expect(snapshot(app.documents) == before)
        #expect(files.keys.allSatisfy { !FileManager.default.fileExists(atPath: app.applicationSupport.appending(path: $0).path) })
    }

    @Test func anEncryptedStoreHeldOpenByAnotherProcessIsRefusedAndNothingMoves() async throws {
        let app = try TestContainer()
        _ = try OpaqueStore.write(into: app)
        let holder = try holdFileOpen(app.documents.appending(path: "Notes.sqlite-wal"))
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        let before = snapshot(app.documents)

        await #expect(throws: BackstageError(.storeHeldOpen(processes: [holder.processIdentifier]), path: app.documentsStore().main.path, during: .relocating)) {
            try await Relocator(container: app.container).relocate()
        }
        #expect(snapshot(app.documents) == before)
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path))
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path))
    }

    @Test func aDeclaredStoreCutInsideItsSQLiteHeaderIsStillRefusedAsDamaged() async throws {
        let app = try TestContainer()
        let store = try app.writeDocument("Notes.sqlite", Data("SQLite for".utf8))

        let refusal = await #expect(throws: BackstageError.self) {
            try await Relocator(container: app.container).relocate()
        }
        guard case .corruptStore(let reason)? = refusal?.cause else {
            Issue.record("expected a damaged-store refusal, got \(String(describing: refusal))")
            return
        }
        #expect(refusal?.path == store.path && reason.hasPrefix("truncated"))
        #expect(FileManager.default.contents(atPath: store.path) == Data("SQLite for".utf8))
    }
}

/// A process that holds `file` open (read-only, no lock), as an app holds its encrypted store.
func holdFileOpen(_ file: URL) throws -> Process {
    let process = Process()
    process.executableURL = URL(filePath: "/usr/bin/python3")
    process.arguments = ["-c", "import sys, time\nf = open(sys.argv[1], 'rb')\nprint('ready', flush=True)\ntime.sleep(120)",
                         file.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    _ = output.fileHandleForReading.availableData  // "ready": the file is open
    return process
}
