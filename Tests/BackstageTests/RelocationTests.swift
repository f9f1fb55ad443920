import Backstage
import BackstageTestSupport
import Foundation
import Synchronization
import Testing

@Suite struct RelocationTests {
    @Test func walOnlyRowsWrittenByAKilledProcessAllSurvive() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.writeThenKill(store.main, committed: 300, walOnly: 120)
        let mainOnly = try PythonSQLite.inspect(store, includingWAL: false)
        #expect(mainOnly.rows == 300, "the last rows must live only in the -wal for this test to mean anything")

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.moved.map(\.store) == ["Notes.sqlite"])
        let moved = try PythonSQLite.inspect(app.supportStore())
        #expect(moved.rows == 420)
        #expect(moved.titles.contains("wal note 119"))
        #expect(moved.integrity == "ok")
        for url in store.allPaths { #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.lastPathComponent) left in Documents") }
    }

    @Test func hotJournalIsRolledBackAndCommittedRowsKept() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.writeHotJournal(store.main, committed: 200)
        let journal = try #require(try? FileManager.default.attributesOfItem(atPath: store.sidecar(.journal).path)[.size] as? Int)
        #expect(journal > 0, "a hot journal must exist before the move")

        try await Relocator(container: app.container).relocate()

        let moved = try PythonSQLite.inspect(app.supportStore())
        #expect(moved.rows == 200)
        #expect(!moved.titles.contains("uncommitted"))
        #expect(moved.integrity == "ok")
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().sidecar(.journal).path))
        #expect(!FileManager.default.fileExists(atPath: store.sidecar(.journal).path))
    }

    @Test func storeHeldOpenByAnotherProcessIsNeverMoved() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 50)
        let holder = try PythonSQLite.holdOpen(store.main)
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        let before = snapshot(store)

        await #expect(throws: BackstageError(.storeInUse(timeout: 0.3), path: store.main.path, during: .relocating)) {
            try await Relocator(container: app.container).relocate(RelocationOptions(busyTimeout: 0.3))
        }
        #expect(snapshot(store)["Notes.sqlite"] == before["Notes.sqlite"])
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path))
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path))
    }

    @Test(arguments: [RelocationStrategy.auto, .copy])
    func crossDeviceMoveKeepsEveryRow(strategy: RelocationStrategy) async throws {
        let local = try TemporaryDirectory()
        let shm = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let app = try TestContainer(documents: local.url.appending(path: "Documents"), applicationSupport: shm.url.appending(path: "Application Support"), keeping: local)
        let store = app.documentsStore()
        try PythonSQLite.writeThenKill(store.main, committed: 500, walOnly: 80, bodyBytes: 2000)
        try app.writeDocument(".Notes_SUPPORT/_EXTERNAL_DATA/blob-1", Data(repeating: 7, count: 300_000))

        let report = try await Relocator(container: app.container).relocate(RelocationOptions(strategy: strategy))

        #expect(report.moved.first?.strategy == .copy)
        let moved = try PythonSQLite.inspect(app.supportStore())
        #expect(moved.rows == 580)
        #expect(moved.integrity == "ok")
        #expect(try Data(contentsOf: app.supportStore().supportFolder.appending(path: "_EXTERNAL_DATA/blob-1")) == Data(repeating: 7, count: 300_000))
        #expect(try Auditor(container: app.container).audit().isClean)
        #expect(paths(under: shm.url, containing: ".backstage-tmp").isEmpty)
    }

    @Test func renameAcrossFileSystemsIsRefusedByName() async throws {
        let local = try TemporaryDirectory()
        let shm = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let app = try TestContainer(documents: local.url.appending(path: "Documents"), applicationSupport: shm.url.appending(path: "AS"), keeping: local)
        try PythonSQLite.createStore(app.documentsStore().main, rows: 10)
        await #expect(throws: BackstageError(.crossDevice(destination: app.supportStore().main.path), path: app.documentsStore().main.path, during: .relocating)) {
            try await Relocator(container: app.container).relocate(RelocationOptions(strategy: .rename))
        }
        #expect(try PythonSQLite.inspect(app.documentsStore()).rows == 10)
    }

    @Test func copyFailingMidwayLeavesTheSourceAndNoTemporaries() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 2000, journalMode: "delete", bodyBytes: 1000)
        let before = snapshot(store)
        let faults = FaultInjector()
        faults.fail(.copy, pathContains: "backstage-tmp", code: ENOSPC, afterCalls: 2)
        var relocator = Relocator(container: app.container)
        relocator.fileSystem = FileSystem(faults: faults)

        #expect {
            _ = try relocator.run(RelocationOptions(strategy: .copy))
        } throws: { error in
            guard let error = error as? BackstageError, case .insufficientSpace = error.cause else { return false }
            return true
        }
        expectSourceKeptAndNothingMoved(app, store, before)
    }

    @Test func anUndoThatFailsKeepsTheJournalAndTheNextRunRollsBack() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 3000, journalMode: "delete", bodyBytes: 1000)
        let before = snapshot(store)
        let faults = FaultInjector()
        faults.corruptCopies(pathContains: "backstage-tmp")
        // The undo's removal of the copy that failed its verification fails.
        faults.fail(.unlink, pathContains: "Notes.sqlite.backstage-tmp", code: EIO, once: true)
        var relocator = Relocator(container: app.container)
        relocator.fileSystem = FileSystem(faults: faults)
        let temporary = app.supportStore().directory.appending(path: ".Notes.sqlite.backstage-tmp").path
        let journal = app.container.backstageDirectory.appending(path: "journal.json").path

        #expect(throws: BackstageError(.verificationFailed, path: temporary, during: .relocating)) {
            _ = try relocator.run(RelocationOptions(strategy: .copy))
        }
        #expect(snapshot(store) == before)
        #expect(FileManager.default.fileExists(atPath: temporary))
        #expect(FileManager.default.fileExists(atPath: journal))

        let report = try Relocator(container: app.container).run(RelocationOptions(strategy: .copy))
        #expect(report.recovered.count == 1 && report.recovered[0].hasPrefix("rolled back"))
        #expect(report.moved.count == 1)
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 3000)
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: journal))
    }

    @Test func aCopyThatDoesNotMatchItsSourceIsNeverCommitted() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 3000, journalMode: "delete", bodyBytes: 1000)
        let before = snapshot(store)
        let faults = FaultInjector()
        faults.corruptCopies(pathContains: "backstage-tmp")
        var relocator = Relocator(container: app.container)
        relocator.fileSystem = FileSystem(faults: faults)

        #expect(throws: BackstageError(.verificationFailed, path: app.supportStore().directory.appending(path: ".Notes.sqlite.backstage-tmp").path, during: .relocating)) {
            _ = try relocator.run(RelocationOptions(strategy: .copy))
        }
        expectSourceKeptAndNothingMoved(app, store, before)
    }

    @Test func cancellingBeforeTheCommitKeepsTheSource() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 3000, journalMode: "delete", bodyBytes: 1000)
        let before = snapshot(store)
        let cancelled = Flag()
        var relocator = Relocator(container: app.container)
        relocator.phaseHook = { _, phase in if phase == .copying { cancelled.set() } }

        #expect(throws: BackstageError(.cancelled, path: store.main.path, during: .relocating)) {
            _ = try relocator.run(RelocationOptions(strategy: .copy), isCancelled: cancelled.get)
        }
        expectSourceKeptAndNothingMoved(app, store, before)
    }

    @Test func cancellingTheTaskOfRelocateThrowsCancellationErrorAndKeepsTheSource() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 5_000, journalMode: "delete", bodyBytes: 1000)
        let before = snapshot(store)
        var relocator = Relocator(container: app.container)
        let gate = CancellationGate(at: .copying)
        relocator.phaseHook = gate.hook
        let task = Task { try await relocator.relocate(RelocationOptions(strategy: .copy)) }
        try await gate.cancel(task)

        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(snapshot(store)["Notes.sqlite"] == before["Notes.sqlite"], "undone: the source is the store")
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path))
    }

    @Test func cancellingTheTaskThatIteratesTheStreamLeavesOneCompleteStore() async throws {
        let app = try TestContainer()
        let store = app.documentsStore()
        try PythonSQLite.createStore(store.main, rows: 40_000, journalMode: "delete", bodyBytes: 1000)
        let before = snapshot(store)
        let relocator = Relocator(container: app.container)

        let consumer = Task {
            for try await event in relocator.events(RelocationOptions(strategy: .copy)) {
                if case .progress(let progress) = event, progress.phase == .copying {
                    withUnsafeCurrentTask { $0?.cancel() }
                }
            }
        }
        _ = await consumer.result
        // The work notices at its next chunk and undoes itself; then the container lock is free again.
        func containerIsFree() -> Bool {
            do {
                _ = try relocator.run(RelocationOptions(stores: ["NoSuchStore"]))
                return true
            } catch where error.cause == .containerBusy {
                return false
            } catch {
                return true
            }
        }
        for _ in 0..<400 where !containerIsFree() {
            try await Task.sleep(for: .milliseconds(25))
        }
        // Cancellation reaches the work asynchronously: it was undone, or it had already committed
        // and was finished. Never half: exactly one complete store, no temporaries.
        let undone = snapshot(store) == before && !FileManager.default.fileExists(atPath: app.supportStore().main.path)
        let finished = !FileManager.default.fileExists(atPath: store.main.path)
            && (try? Data(contentsOf: app.supportStore().main)) == before["Notes.sqlite"]
        #expect(undone != finished, "exactly one of: source intact and no destination, or destination complete and source gone")
        #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path))
    }

    @Test func storeInBothPlacesDestroysNeither() async throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 30, walOnly: 5)
        try PythonSQLite.createStore(app.supportStore().main, rows: 70)
        let supportBefore = snapshot(app.supportStore())

        let report = try await Relocator(container: app.container).relocate()

        #expect(snapshot(app.supportStore()) == supportBefore)
        let conflict = try #require(report.quarantined.first { $0.reason == .conflict })
        #expect(conflict.to.contains("/.backstage/quarantine/"))
        #expect(try PythonSQLite.inspect(StoreFileSet(main: URL(filePath: conflict.to))).rows == 35)
        #expect(try Auditor(container: app.container).audit().isClean)
    }

    @Test func orphanSidecarsLeaveDocumentsButAreKept() async throws {
        let app = try TestContainer()
        let scratch = try TemporaryDirectory()
        let source = StoreFileSet(main: scratch.url.appending(path: "Old.sqlite"))
        try PythonSQLite.writeThenKill(source.main, committed: 10, walOnly: 10)
        let wal = try Data(contentsOf: source.sidecar(.wal))
        let shm = try Data(contentsOf: source.sidecar(.shm))
        try app.writeDocument("Old.sqlite-wal", wal)
        try app.writeDocument("Old.sqlite-shm", shm)
        try app.writeDocument("Trip-journal", Data("Day 1: Lisbon".utf8))

        let report = try await Relocator(container: app.container).relocate()

        #expect(Set(report.quarantined.map(\.reason)) == [.orphanSidecar])
        let kept = snapshot(app.container.quarantineDirectory)
        #expect(kept.values.contains(wal))
        #expect(kept.values.contains(shm))
        #expect(!FileManager.default.fileExists(atPath: app.documents.appending(path: "Old.sqlite-wal").path))
        #expect(try Data(contentsOf: app.documents.appending(path: "Trip-journal")) == Data("Day 1: Lisbon".utf8))
    }

    @Test func coreDataSupportFolderMovesWithItsStore() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 5)
        let blobs = (1...3).map { Data(repeating: UInt8($0), count: 10_000 * $0) }
        for (n, blob) in blobs.enumerated() { try app.writeDocument(".Notes_SUPPORT/_EXTERNAL_DATA/\(n)", blob) }

        try await Relocator(container: app.container).relocate()

        let moved = snapshot(app.supportStore().supportFolder)
        #expect(moved == ["_EXTERNAL_DATA/0": blobs[0], "_EXTERNAL_DATA/1": blobs[1], "_EXTERNAL_DATA/2": blobs[2]])
        #expect(!FileManager.default.fileExists(atPath: app.documentsStore().supportFolder.path))
    }

    /// A support folder of many files is copied by several threads: every file must arrive whole,
    /// in its folder, and a wrong or failed copy of any one of them must stop the move.
    private func storeWithManyExternalFiles(_ app: TestContainer) throws -> [String: Data] {
        try PythonSQLite.createStore(app.documentsStore().main, rows: 20)
        var files: [String: Data] = [:]
        for n in 0..<300 {
            let path = (n % 7 == 0 ? "_EXTERNAL_DATA/deep/\(n)" : "_EXTERNAL_DATA/\(n)")
            files[path] = Data((0..<(n * 97 % 20_000 + 1)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) })
            try app.writeDocument(".Notes_SUPPORT/" + path, files[path]!)
        }
        try app.writeDocument(".Notes_SUPPORT/_EXTERNAL_DATA/empty", Data())
        files["_EXTERNAL_DATA/empty"] = Data()
        return files
    }

    @Test func aSupportFolderOfManyFilesCrossesFileSystemsByteForByte() async throws {
        let local = try TemporaryDirectory()
        let shm = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let app = try TestContainer(documents: local.url.appending(path: "Documents"), applicationSupport: shm.url.appending(path: "AS"), keeping: local)
        let files = try storeWithManyExternalFiles(app)

        let report = try await Relocator(container: app.container).relocate(RelocationOptions(strategy: .copy))

        #expect(report.moved.first?.files == 1 + files.count)
        #expect(snapshot(app.supportStore().supportFolder) == files)
        #expect(!FileManager.default.fileExists(atPath: app.documentsStore().supportFolder.path))
        #expect(try PythonSQLite.inspect(app.supportStore()).rows == 20)
    }

    @Test func oneSupportFileCopiedWrongAmongManyIsCaughtAndNothingIsCommitted() async throws {
        let app = try TestContainer()
        _ = try storeWithManyExternalFiles(app)
        let before = snapshot(app.documentsStore())
        let faults = FaultInjector()
        faults.corruptCopies(pathContains: "/_EXTERNAL_DATA/deep/217")
        var relocator = Relocator(container: app.container)
        relocator.fileSystem = FileSystem(faults: faults)

        #expect(throws: BackstageError(.verificationFailed, path: app.supportStore().directory.appending(path: ".Notes.sqlite.backstage-tmp").path, during: .relocating)) {
            _ = try relocator.run(RelocationOptions(strategy: .copy))
        }
        expectSourceKeptAndNothingMoved(app, app.documentsStore(), before)
    }

    @Test func oneSupportFileFailingAmongManyLeavesTheSourceAndNoTemporaries() async throws {
        let app = try TestContainer()
        _ = try storeWithManyExternalFiles(app)
        let before = snapshot(app.documentsStore())
        let faults = FaultInjector()
        faults.fail(.copy, pathContains: "/_EXTERNAL_DATA/150", code: ENOSPC)
        var relocator = Relocator(container: app.container)
        relocator.fileSystem = FileSystem(faults: faults)

        #expect {
            _ = try relocator.run(RelocationOptions(strategy: .copy))
        } throws: { error in
            guard let error = error as? BackstageError, case .insufficientSpace(_, _) = error.cause, case let path = error.path else { return false }
            return path.hasSuffix("/_EXTERNAL_DATA/150")
        }
        expectSourceKeptAndNothingMoved(app, app.documentsStore(), before)
    }

    @Test func staleSidecarsAtTheDestinationAreQuarantinedNotSpliced() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore().main, rows: 40)
        let scratch = try TemporaryDirectory()
        let other = StoreFileSet(main: scratch.url.appending(path: "Notes.sqlite"))
        try PythonSQLite.writeThenKill(other.main, committed: 1, walOnly: 25)
        try FileManager.default.copyItem(at: other.sidecar(.wal), to: app.supportStore().sidecar(.wal))

        let report = try await Relocator(container: app.container).relocate()

        #expect(report.quarantined.map(\.reason).contains(.staleDestination))
        let moved = try PythonSQLite.inspect(app.supportStore())
        #expect(moved.rows == 40)
        #expect(!moved.titles.contains("wal note 0"))
    }

    @Test func relocatingTwiceIsANoOp() async throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore().main, committed: 20, walOnly: 5)
        let first = try await Relocator(container: app.container).relocate()
        #expect(first.moved.count == 1)
        let after = snapshot(app.applicationSupport)

        let second = try await Relocator(container: app.container).relocate()

        #expect(second.nothingToDo)
        #expect(snapshot(app.applicationSupport) == after)
    }

    @Test func onlyTheNamedStoreMoves() async throws {
        let app = try TestContainer()
        try PythonSQLite.createStore(app.documentsStore("Notes.sqlite").main, rows: 3)
        try PythonSQLite.createStore(app.documentsStore("Cache.db").main, rows: 3)

        let report = try await Relocator(container: app.container).relocate(RelocationOptions(stores: ["Notes"]))

        #expect(report.moved.map(\.store) == ["Notes.sqlite"])
        #expect(FileManager.default.fileExists(atPath: app.documentsStore("Cache.db").main.path))
    }

    @Test func storesInSubfoldersKeepTheirRelativePath() async throws {
        let app = try TestContainer(declaring: ["Notes.sqlite", "Accounts/*/User.sqlite"])
        try FileManager.default.createDirectory(at: app.documents.appending(path: "Accounts/42"), withIntermediateDirectories: true)
        try PythonSQLite.createStore(app.documents.appending(path: "Accounts/42/User.sqlite"), rows: 9)

        try await Relocator(container: app.container).relocate()

        #expect(try PythonSQLite.inspect(StoreFileSet(main: app.applicationSupport.appending(path: "Accounts/42/User.sqlite"))).rows == 9)
    }
}

/// The outcome of a move that failed or was undone: the source byte-identical, no store at the
/// destination, no temporaries anywhere.
func expectSourceKeptAndNothingMoved(_ app: TestContainer, _ store: StoreFileSet, _ before: [String: Data], sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(snapshot(store) == before, sourceLocation: sourceLocation)
    #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path), sourceLocation: sourceLocation)
    #expect(paths(under: app.root, containing: ".backstage-tmp").isEmpty, sourceLocation: sourceLocation)
}

/// A flag a test sets from a callback.
/// Holds a run at a phase until the test has cancelled the task running it: the cancellation lands
/// mid-step however late the test's own task is scheduled on a busy cooperative pool.
final class CancellationGate: Sendable {
    let phase: StepPhase
    private let reached = Flag(), cancelled = Flag(), abandoned = Flag()

    init(at phase: StepPhase) {
        self.phase = phase
    }

    /// A run that never reached the phase leaves no thread polling behind it.
    deinit { abandoned.set() }

    var hook: @Sendable (String, StepPhase) -> Void {
        { [self] _, current in
            guard current == phase else { return }
            reached.set()
            for _ in 0..<6000 where !cancelled.get() { Thread.sleep(forTimeInterval: 0.01) }
        }
    }

    /// Cancels `task` once the phase is reached, from a thread of its own: the cooperative pool
    /// (two threads on two cores) may be held by the relocation waiting here and by another test's
    /// blocking call, and the cancellation must not wait for either.
    func cancel<T: Sendable>(_ task: Task<T, any Error>) async throws {
        let reached = self.reached, cancelled = self.cancelled, abandoned = self.abandoned
        Thread.detachNewThread {
            while !reached.get() {
                if abandoned.get() { return }
                Thread.sleep(forTimeInterval: 0.005)
            }
            task.cancel()
            cancelled.set()
        }
    }
}

final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    func get() -> Bool { value.withLock { $0 } }
}
