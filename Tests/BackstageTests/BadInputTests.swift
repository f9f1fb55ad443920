import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// Bad input gets a typed error naming the file and the cause, and the source stays byte-identical.
@Suite struct BadInputTests {
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func fullDestinationFailsClearlyAndLeavesTheSourceIdentical() async throws {
        let local = try TemporaryDirectory()
        let mount = try TestMount(tmpfs: "2m", creating: ["Application Support"])
        let app = try TestContainer(documents: local.url.appending(path: "Documents"), applicationSupport: mount.applicationSupport, keeping: local)
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 1500, walOnly: 200, bodyBytes: 2000)
        let before = snapshot(app.documentsStore())

        await #expect {
            try await Relocator(container: app.container).relocate()
        } throws: { error in
            guard let error = error as? BackstageError, case .insufficientSpace(let needed, let available) = error.cause, case let path = error.path else { return false }
            return path == mount.applicationSupport.path && needed > available
        }
        #expect(snapshot(app.documentsStore()) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount.applicationSupport.path).filter { $0 != ".backstage" }.isEmpty)
    }

    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func readOnlyDestinationFailsClearlyAndLeavesTheSourceIdentical() async throws {
        let local = try TemporaryDirectory()
        let mount = try TestMount(tmpfs: "8m", readOnly: true, creating: ["Application Support"])
        let app = AppContainer(documents: local.url.appending(path: "Documents"), applicationSupport: mount.applicationSupport,
                               caches: local.url.appending(path: "Caches"), temporary: local.url.appending(path: "tmp"))
        try FileManager.default.createDirectory(at: app.documents, withIntermediateDirectories: true)
        let store = StoreFileSet(main: app.documents.appending(path: "Notes.sqlite"))
        try PythonSQLite.writeThenKill(store.main, committed: 50, walOnly: 10)
        let before = snapshot(store)

        await #expect {
            try await Relocator(container: app).relocate()
        } throws: { error in
            guard let error = error as? BackstageError, case .readOnlyDestination = error.cause else { return false }
            return error.path.hasPrefix(mount.directory.path)
        }
        #expect(snapshot(store) == before)
    }

    @Test func truncatedStoreIsRefusedByName() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 500, journalMode: "delete", bodyBytes: 500)
        let handle = try FileHandle(forWritingTo: store.main)
        try handle.truncate(atOffset: 20_000)
        try handle.close()
        let before = snapshot(store)

        await #expect {
            try await Relocator(container: app.container).relocate()
        } throws: { error in
            guard let error = error as? BackstageError, case .corruptStore(let reason) = error.cause, case let path = error.path else { return false }
            return path == store.main.path && reason.contains("truncated")
        }
        #expect(snapshot(store) == before)
    }

    @Test func corruptStoreIsRefusedByName() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 100, journalMode: "delete")
        // Keep the 100-byte header, destroy the schema page behind it.
        var bytes = try Data(contentsOf: store.main)
        bytes.replaceSubrange(100..<4096, with: Data(repeating: 0xA5, count: 3996))
        try bytes.write(to: store.main)
        let before = snapshot(store)

        await #expect {
            try await Relocator(container: app.container).relocate()
        } throws: { error in
            guard let error = error as? BackstageError else { return false }
            switch error.cause {
            case .corruptStore, .notADatabase: return error.path == store.main.path
            default: return false
            }
        }
        #expect(snapshot(store) == before)
    }

    @Test func symlinkWhereAStoreShouldBeIsNeverFollowed() async throws {
        let app = try TestContainer()
        let outside = try TemporaryDirectory()
        let target = outside.url.appending(path: "Real.sqlite")
        try PythonSQLite.createStore(target, rows: 5)
        try FileManager.default.createSymbolicLink(at: app.documentsStore().main, withDestinationURL: target)
        let before = snapshot(outside.url)

        await #expect(throws: BackstageError(.symlinkedStore, path: app.documentsStore().main.path, during: .relocating)) {
            try await Relocator(container: app.container).relocate()
        }
        #expect(snapshot(outside.url) == before)
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path))
    }

    @Test func plainFileNamedSqliteIsNotADatabase() async throws {
        let app = try TestContainer()
        let url = try app.writeDocument("Export.sqlite", Data("id,title\n1,hello\n".utf8))

        // Found by the scan: it is a user document, left alone.
        let report = try await Relocator(container: app.container).relocate()
        #expect(report.nothingToDo)
        #expect(try Data(contentsOf: url) == Data("id,title\n1,hello\n".utf8))

        // Named explicitly: a typed error naming it.
        await #expect(throws: BackstageError(.notADatabase, path: url.path, during: .relocating)) {
            try await Relocator(container: app.container).relocate(RelocationOptions(stores: ["Export.sqlite"]))
        }
    }

    @Test func errorsReadAsOneSentenceNamingTheFile() {
        let error = BackstageError(.storeInUse(timeout: 5), path: "/data/Documents/Notes.sqlite", during: .relocating)
        #expect(error.description == "store in use: another process has /data/Documents/Notes.sqlite open (waited 5 s for its lock); close the app and run again")
        #expect(!error.description.contains("\n"))
    }
}

extension TestMount {
    var applicationSupport: URL { url.appending(path: "Application Support") }
}

/// The details of a real move: who else holds the store, who owns what, how long a name is.
@Suite struct RelocationDetailTests {
    @Test func anIdleRollbackJournalConnectionIsSeenAndTheStoreNotMoved() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 20, journalMode: "delete")
        let holder = try PythonSQLite.holdOpenIdle(store.main)
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        let before = snapshot(store)

        await #expect(throws: BackstageError(.storeHeldOpen(processes: [holder.processIdentifier]), path: store.main.path, during: .relocating)) {
            try await Relocator(container: app.container).relocate(RelocationOptions(busyTimeout: 0.3))
        }
        #expect(snapshot(store) == before)
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path))
    }

    @Test(.enabled(if: runningAsRoot, "a read-only mount needs root"))
    func aReadOnlySourceIsRefusedBeforeAnythingMoves() async throws {
        let staging = try TemporaryDirectory()
        let store = staging.url.appending(path: "Notes.sqlite")
        try PythonSQLite.writeHotJournal(store, committed: 30)
        let mount = try TestMount(tmpfs: "16m", creating: [])
        try shell("cp -a '\(staging.path)/.' '\(mount.url.path)/'")
        try shell("mount -o remount,ro '\(mount.url.path)'")
        let keep = try TemporaryDirectory()
        let app = try TestContainer(documents: mount.url, applicationSupport: keep.url.appending(path: "Application Support"), keeping: keep)
        let before = snapshot(app.documentsStore())

        await #expect(throws: BackstageError(.readOnlySource, path: mount.url.path, during: .relocating)) {
            try await Relocator(container: app.container).relocate()
        }
        #expect(snapshot(app.documentsStore()) == before)
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path), "never in both places")
    }

    @Test(.enabled(if: runningAsRoot && FileManager.default.isWritableFile(atPath: "/dev/shm"), "chown needs root; /dev/shm is the second file system"))
    func aCopyAcrossFileSystemsKeepsOwnerAndModeOfEveryFileAndFolder() async throws {
        let local = try TemporaryDirectory()
        let other = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let app = try TestContainer(documents: local.url.appending(path: "Documents"), applicationSupport: other.url.appending(path: "Application Support"), keeping: local)
        let store = app.documentsStore()
        try CoreDataStore.create(store.main, notes: 20)
        try shell("chown -R 1234:2345 '\(app.documents.path)' && chmod 0600 '\(store.main.path)' && chmod 0700 '\(store.supportFolder.path)' '\(store.supportFolder.path)/_EXTERNAL_DATA'")

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.strategy) == [.copy])
        let moved = app.supportStore()
        for url in [moved.main, moved.supportFolder, moved.supportFolder.appending(path: "_EXTERNAL_DATA")] + (try FileManager.default.contentsOfDirectory(at: moved.supportFolder.appending(path: "_EXTERNAL_DATA"), includingPropertiesForKeys: nil)) {
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            #expect(attributes[.ownerAccountID] as? Int == 1234 && attributes[.groupOwnerAccountID] as? Int == 2345, "\(url.lastPathComponent) keeps its owner")
            let mode = attributes[.posixPermissions] as? Int
            if url == moved.main { #expect(mode == 0o600) } else if url.hasDirectoryPath || url == moved.supportFolder { #expect(mode == 0o700, "\(url.lastPathComponent)") }
        }
    }

    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: "/dev/shm"), "/dev/shm is the second file system"))
    func aStoreWithANameNearTheLimitMovesAcrossFileSystems() async throws {
        let local = try TemporaryDirectory()
        let other = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let name = String(repeating: "é", count: 118) + ".sqlite"
        #expect(name.utf8.count == 243)
        let app = try TestContainer(documents: local.url.appending(path: "Documents"), applicationSupport: other.url.appending(path: "Application Support"),
                                    keeping: local, declaring: [name])
        try PythonSQLite.writeThenKill(app.documentsStore(name).main, committed: 10, walOnly: 5)

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.strategy) == [.copy])
        #expect(try PythonSQLite.inspect(app.supportStore(name)).rows == 15)
    }

    @Test func aStoreWithSeveralHardLinksMovesWithAWarning() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 5, journalMode: "delete")
        try FileManager.default.linkItem(at: app.documentsStore().main, to: app.root.appending(path: "backup-link.sqlite"))

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.first?.warnings == [.hardLinked(path: app.documentsStore().main.path, links: 2)])
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 5)
    }

    @Test func anEmptyFileNamedByAPlanMovesAsItIsNeverTurnedIntoADatabase() async throws {
        let app = try TestContainer()
        try app.writeDocument("Notes.sqlite", Data())
        let plan = UpgradePlan(name: "p") {
            UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"), to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
        }

        try await Upgrader(container: app.container).upgrade(plan)

        #expect(try Data(contentsOf: app.supportStore().main).isEmpty, "still empty: not converted into a database")
    }
}
