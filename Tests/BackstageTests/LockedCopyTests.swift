import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// A copy across file systems is verified against the store as it was when its lock was taken, not
/// only against itself: another process cutting the source short (or growing it) while it is copied
/// leaves two equally changed files that compare equal, and must not be reported moved.
@Suite struct LockedCopyTests {
    enum Change: String, CaseIterable, Sendable { case truncated, grown }

    /// The source's bytes right after the other process changed it (the copy calls back on its own thread).
    final class ChangedBytes: @unchecked Sendable {
        var bytes: Data?
    }

    @Test(arguments: Change.allCases)
    func aSourceChangedWhileCopiedAcrossFileSystemsIsKeptAndNamed(_ change: Change) throws {
        let local = try TemporaryDirectory()
        let shm = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let app = try TestContainer(
            documents: local.url.appending(path: "Documents"), applicationSupport: shm.url.appending(path: "Application Support"),
            keeping: local)
        let store = app.documentsStore()
        // About 25 MB: the copy reports progress every 8 MiB, so the change lands mid-copy.
        try PythonSQLite.createStore(store.main, rows: 2500, journalMode: "delete", bodyBytes: 10_000)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: store.main.path)[.size] as? Int)
        #expect(size > 3 * (8 << 20), "the store must outlast the first 8 MiB window for the change to land mid-copy")

        // Another process's change, made at the copy's first progress report: deterministic, no race.
        let changed = ChangedBytes()
        let onProgress: (RelocationProgress) -> Void = { progress in
            guard progress.phase == .copying, progress.bytesDone > 0, changed.bytes == nil else { return }
            do {
                let handle = try FileHandle(forWritingTo: store.main)
                switch change {
                case .truncated: try handle.truncate(atOffset: UInt64(size / 3))
                case .grown:
                    try handle.seekToEnd()
                    try handle.write(contentsOf: Data(repeating: 0x5A, count: 1 << 20))
                }
                try handle.close()
                changed.bytes = try Data(contentsOf: store.main)
            } catch {
                Issue.record("could not change the source: \(error)")
            }
        }

        #expect {
            _ = try Relocator(container: app.container).run(RelocationOptions(strategy: .auto), onProgress: onProgress)
        } throws: { error in
            guard let error = error as? BackstageError, case .sourceChanged(_) = error.cause, case let path = error.path else { return false }
            return path == store.main.path && "\(error)".hasPrefix("\(store.main.path) changed")
        }
        let after = try #require(changed.bytes, "the source was changed during the copy")
        #expect(try Data(contentsOf: store.main) == after, "the source is left byte for byte as the other process made it")
        #expect(!FileManager.default.fileExists(atPath: app.supportStore().main.path), "no destination is left as the store")
        #expect(paths(under: shm.url, containing: ".backstage-tmp").isEmpty, "the copy is removed")
        #expect(!FileManager.default.fileExists(atPath: app.container.backstageDirectory.appending(path: "journal.json").path))
    }

    /// The same store, left alone, still moves across file systems: the check finds no change in an unchanged source.
    @Test func anUnchangedSourceStillMovesAcrossFileSystems() throws {
        let local = try TemporaryDirectory()
        let shm = try TemporaryDirectory(base: URL(filePath: "/dev/shm"))
        let app = try TestContainer(
            documents: local.url.appending(path: "Documents"), applicationSupport: shm.url.appending(path: "Application Support"),
            keeping: local)
        try PythonSQLite.createStore(app.documentsStore().main, rows: 2500, journalMode: "delete", bodyBytes: 10_000)

        let report = try Relocator(container: app.container).run(RelocationOptions(strategy: .auto))

        #expect(report.moved.first?.strategy == .copy)
        let moved = try PythonSQLite.inspect(app.supportStore())
        #expect(moved.rows == 2500 && moved.integrity == "ok")
        #expect(!FileManager.default.fileExists(atPath: app.documentsStore().main.path))
    }
}
