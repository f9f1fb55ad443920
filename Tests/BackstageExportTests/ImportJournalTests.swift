import Backstage
import BackstageExport
import BackstageTestSupport
import Foundation
import Testing

/// The import's move into Documents, journaled: a rename that fails halfway, an undo that fails
/// too, and a kill, each end with Documents exactly as before or exactly as imported.
@Suite struct ImportJournalTests {
    /// Documents with Notes/n0…n29.txt; an archive replacing the 30 and adding Notes/new0…9.txt.
    private func scene() throws -> (TestContainer, URL, TemporaryDirectory) {
        let app = try TestContainer()
        for n in 0..<30 { try app.writeDocument("Notes/n\(n).txt", Data("mine \(n)".utf8)) }
        let archives = try TemporaryDirectory()
        var entries: [String: String] = [:]
        for n in 0..<30 { entries["Notes/n\(n).txt"] = "theirs \(n)" }
        for n in 0..<10 { entries["Notes/new\(n).txt"] = "new \(n)" }
        return (app, try zipArchive(in: archives.url, entries), archives)
    }

    private func expectNothingLeft(_ app: TestContainer) {
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty, "no staging folder left")
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "import.json").path), "no journal left")
        #expect(!FileManager.default.fileExists(atPath: app.container.quarantineDirectory.path), "nothing quarantined")
    }

    @Test func aRenameFailingHalfwayPutsEveryOriginalBackUnderItsOwnName() async throws {
        let (app, archive, archives) = try scene()
        defer { withExtendedLifetime(archives) {} }
        let before = snapshot(app.documents)
        let faults = FaultInjector()
        faults.fail(.rename, pathContains: ".backstage-tmp-import-", code: EIO, afterCalls: 25, once: true)
        var importer = Importer(container: app.container)
        importer.fileSystem = FileSystem(faults: faults)

        await #expect {
            try await importer.importArchive(archive, options: ImportOptions(onConflict: .replace))
        } throws: { error in
            (error as? FileSystemError)?.code == EIO
        }

        #expect(snapshot(app.documents) == before, "every original back, bytes identical, under its own name")
        expectNothingLeft(app)
    }

    /// The undo of a failed move-in fails too (an original cannot be put back): the journal stays,
    /// nothing is quarantined under a number, and the recovery, once the disk is well, puts every
    /// original back and names each.
    @Test func anUndoThatFailsIsFinishedByTheRecovery() async throws {
        let (app, archive, archives) = try scene()
        defer { withExtendedLifetime(archives) {} }
        let before = snapshot(app.documents)
        let faults = FaultInjector()
        faults.fail(.rename, pathContains: ".backstage-tmp-import-", code: EIO, afterCalls: 25, once: true)
        faults.fail(.rename, pathContains: ".replaced.backstage-tmp/Notes/", code: EIO, afterCalls: 3, once: true)
        var importer = Importer(container: app.container)
        importer.fileSystem = FileSystem(faults: faults)
        await #expect(throws: FileSystemError.self) {
            try await importer.importArchive(archive, options: ImportOptions(onConflict: .replace))
        }
        #expect(FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "import.json").path), "the journal waits")
        #expect(snapshot(app.documents) != before, "the undo was cut short")

        let recovery = try #require(try Importer(container: app.container).recoverInterruptedImport())

        #expect(recovery.outcome == .undone)
        #expect(recovery.archive == archive.path)
        #expect(snapshot(app.documents) == before)
        let replacedBack = Set(recovery.putBack)
        #expect(!replacedBack.isEmpty && replacedBack.isSubset(of: Set((0..<30).map { "Notes/n\($0).txt" })), "\(recovery.putBack)")
        expectNothingLeft(app)
        #expect(try Importer(container: app.container).recoverInterruptedImport() == nil, "nothing waits any more")
    }

    /// `backstage import` killed after 12 moves; the library call completes it (as the next import would).
    @Test func theLibraryCallCompletesAKilledImport() async throws {
        let (app, archive, archives) = try scene()
        defer { withExtendedLifetime(archives) {} }
        let killed = try runSimulateChild(.import(arguments: [archive.path, app.root.path, "--on-conflict", "replace"], crashAt: .moved(12)))
        #expect(killed.killedBySignal == SIGKILL)

        let recovery = try #require(try Importer(container: app.container).recoverInterruptedImport())

        #expect(recovery.outcome == .completed)
        #expect(recovery.movedIn.count == 40 && Set(recovery.replaced) == Set((0..<30).map { "Notes/n\($0).txt" }))
        var expected: [String: Data] = [:]
        for n in 0..<30 { expected["Notes/n\(n).txt"] = Data("theirs \(n)".utf8) }
        for n in 0..<10 { expected["Notes/new\(n).txt"] = Data("new \(n)".utf8) }
        #expect(snapshot(app.documents) == expected)
        expectNothingLeft(app)
    }

    /// The temporary folder emptied between the kill and the recovery: nothing to complete with and
    /// nothing to put back, so Documents is left exactly as found, and the recovery says so.
    @Test func aKilledImportWhoseStagingFolderIsGoneLeavesDocumentsAsFound() async throws {
        let (app, archive, archives) = try scene()
        defer { withExtendedLifetime(archives) {} }
        let killed = try runSimulateChild(.import(arguments: [archive.path, app.root.path, "--on-conflict", "replace"], crashAt: .moved(12)))
        #expect(killed.killedBySignal == SIGKILL)
        try FileManager.default.removeItem(at: app.container.temporary)
        try FileManager.default.createDirectory(at: app.container.temporary, withIntermediateDirectories: true)
        let found = snapshot(app.documents)

        let recovery = try #require(try Importer(container: app.container).recoverInterruptedImport())

        #expect(recovery.outcome == .abandoned)
        #expect(recovery.movedIn.count == 12)
        #expect(snapshot(app.documents) == found)
        expectNothingLeft(app)
    }

    @Test func aJournalOfANewerFormatIsRefusedWithNothingChanged() async throws {
        let (app, archive, archives) = try scene()
        defer { withExtendedLifetime(archives) {} }
        let journal = app.container.backstageDirectory.appending(path: "import.json")
        try FileManager.default.createDirectory(at: app.container.backstageDirectory, withIntermediateDirectories: true)
        try Data(#"{"version": 9}"#.utf8).write(to: journal)
        let before = snapshot(app.documents)

        await #expect(throws: ImportJournalError(journalPath: journal.path, reason: .newerFormat(version: 9, supported: 1))) {
            try await Importer(container: app.container).importArchive(archive)
        }
        #expect(snapshot(app.documents) == before)
    }
}
