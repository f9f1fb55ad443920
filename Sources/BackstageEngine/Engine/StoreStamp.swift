import BackstageModel
import BackstageSystem
import Foundation

/// What a store's database file was when a step verified what it built from it, under the store's
/// lock: its identity, size, modification time, header (which holds SQLite's change counter) and
/// the size of its `-wal`. A split keeps it in its journal at `verified`, so a recovery finishes
/// the step, and removes the source, only for the very store it verified; a store written since
/// (by another process, after the crash released the lock) is never removed as if it were.
///
/// No row value is in it: the header is SQLite's own 100 bytes of page size, counters and
/// format numbers.
struct StoreStamp: Sendable, Hashable, Codable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedSeconds: Int64
    var modifiedNanoseconds: Int64
    /// The first 100 bytes of the file (SQLite's header), in hexadecimal.
    var header: String
    /// The bytes of the store's `-wal` (0 when there is none): after the lock's `TRUNCATE`
    /// checkpoint it holds no frame, and any frame since is a transaction the targets lack.
    var walBytes: Int64

    /// The stamp of `store` now, or nil when its database is not there.
    static func take(of store: StoreFileSet, fileSystem: FileSystem) throws(FileSystemError) -> StoreStamp? {
        guard let status = try fileSystem.status(store.main.path) else { return nil }
        let header = try fileSystem.readPrefix(store.main.path, count: 100)
        let wal = try fileSystem.status(store.sidecar(.wal).path)?.size ?? 0
        return StoreStamp(
            device: status.device, inode: status.inode, size: status.size,
            modifiedSeconds: Int64(status.modificationTime.tv_sec),
            modifiedNanoseconds: Int64(status.modificationTime.tv_nsec),
            header: header.map { String(format: "%02x", $0) }.joined(), walBytes: wal)
    }

    /// What differs between this stamp and `now` (the store as it is), in words; nil when nothing does.
    func change(to now: StoreStamp?) -> String? {
        guard let now else { return "it is gone" }
        if now.device != device || now.inode != inode { return "another file took its name" }
        if now.walBytes != walBytes { return "its -wal holds \(now.walBytes) bytes it did not hold" }
        if now.size != size { return "it had \(size) bytes and has \(now.size)" }
        if now.header != header { return "its header changed (a transaction committed)" }
        if now.modifiedSeconds != modifiedSeconds || now.modifiedNanoseconds != modifiedNanoseconds {
            return "it was written to (its modification time moved)"
        }
        return nil
    }
}

extension StoreLock {
    /// SQLite's exclusive lock on a store a recovery is about to vouch for, taken as a run takes it:
    /// another process with the store open is ``BackstageError/Cause/storeInUse(timeout:)`` after
    /// `timeout`, and one holding it idle (a rollback-journal connection, which SQLite's lock cannot
    /// see) is ``BackstageError/Cause/storeHeldOpen(processes:)``. Nothing was changed when it throws,
    /// beyond what opening the store does (a hot journal rolled back, the `-wal` checkpointed).
    static func forRecovery(
        of store: StoreFileSet, timeout: Double, fileSystem: FileSystem
    ) throws -> StoreLock {
        let lock = try StoreLock(path: store.main.path, timeout: timeout, during: .journaling)
        let holders = try fileSystem.otherProcessesHolding(store.main.path)
        guard holders.isEmpty else {
            lock.close()
            throw BackstageError(.storeHeldOpen(processes: holders), path: store.main.path, during: .journaling)
        }
        return lock
    }
}
