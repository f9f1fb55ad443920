import Backstage
import BackstageTestSupport
import Foundation
import GRDB
import Testing

/// One error model: whatever failed, the caller gets one `BackstageError` with what was being
/// done, the user's file and a typed cause; nothing nests another error type, no SQLite code is
/// made up, and nothing is compared by its text.
@Suite struct ErrorModelTests {
    private struct AppOwnError: Error, CustomStringConvertible {
        var detail: String
        var description: String { "app error \(detail)" }
    }

    @Test func errorsMetWhileWorkingAreTypedByTheirCause() {
        let sqlite = BackstageError(
            DatabaseError(resultCode: .SQLITE_IOERR_WRITE, message: "disk I/O error"), path: "/s/Notes.sqlite",
            during: .upgrading)
        #expect(sqlite.cause == .sqlite(code: ResultCode.SQLITE_IOERR_WRITE.rawValue, message: "disk I/O error"))
        #expect(sqlite.path == "/s/Notes.sqlite" && sqlite.activity == .upgrading)

        let system = FileSystemError(operation: .write, path: "/s/Notes.sqlite-wal", code: ENOSPC)
        #expect(BackstageError(system, path: "/s/Notes.sqlite", during: .relocating).cause == .system(system))
        #expect(BackstageError(CancellationError(), path: "/s/Notes.sqlite", during: .relocating).cause == .cancelled)

        // Backstage's own error passes through as it is: never wrapped in another.
        let refusal = BackstageError(.storeInUse(timeout: 2), path: "/s/Notes.sqlite", during: .relocating)
        #expect(BackstageError(refusal, path: "/elsewhere", during: .upgrading) == refusal)
    }

    /// An error Backstage did not raise is kept whole, and named by its type, not its text.
    @Test func anErrorOfAnotherKindIsKeptWholeAndNotComparedByItsText() throws {
        let first = BackstageError(AppOwnError(detail: "one"), path: "/s/Notes.sqlite", during: .upgrading)
        let second = BackstageError(AppOwnError(detail: "two"), path: "/s/Notes.sqlite", during: .upgrading)
        guard case .unexpected(let type) = first.cause else {
            Issue.record("expected .unexpected, got \(first.cause)")
            return
        }
        #expect(type.hasSuffix("AppOwnError"))
        #expect((first.underlying as? AppOwnError)?.detail == "one")
        #expect(first.description == "/s/Notes.sqlite: app error one")
        #expect(first == second, "two errors of one type about one file are one cause, whatever their text")
        #expect(first != BackstageError(AppOwnError(detail: "one"), path: "/s/Other.sqlite", during: .upgrading))
    }

    /// A store's lock used after it was released says so, rather than inventing SQLITE_MISUSE.
    @Test func aReleasedLockIsNamedNotGivenASQLiteCode() throws {
        let app = try TestContainer()
        let store = app.supportStore()
        try CoreDataStore.create(store.main, notes: 3, walOnlyNotes: 0)
        let lock = try StoreLock(path: store.main.path, timeout: 1, during: .upgrading)
        lock.close()
        #expect(throws: BackstageError(.lockReleased, path: store.main.path, during: .upgrading)) {
            try lock.withConnection { db in try Int.fetchOne(db, sql: "SELECT 1") }
        }
    }

    /// A refusal is one error carrying its own cause and what was being done, not an error of the
    /// front door wrapping another.
    @Test func aRefusalIsOneErrorWithItsActivityAndCause() async throws {
        let app = try TestContainer()
        try app.writeDocument("Notes.sqlite", Data("SQLite for".utf8))
        let error = await #expect(throws: BackstageError.self) {
            try await Relocator(container: app.container).relocate()
        }
        guard case .corruptStore = error?.cause else {
            Issue.record("expected a damaged store, got \(String(describing: error))")
            return
        }
        #expect(error?.activity == .relocating)
    }
}
