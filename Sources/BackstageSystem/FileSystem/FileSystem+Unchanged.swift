import Foundation

/// A file that is no longer the one a check vouched for: it changed between the moment its state
/// was taken (under a store's lock) and a later look at it. SQLite's lock keeps SQLite's writers
/// out, not a process that truncates, appends to or replaces the file: a copy verified against
/// such a file proves only that two equally changed files match.
package struct FileChanged: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file that changed.
    package var path: String
    /// What it was when its state was taken; nil when it was not there.
    package var before: FileStatus?
    /// What it is now; nil when it is gone.
    package var after: FileStatus?
    /// The bytes a copy of it read, when a copy found it (nil otherwise).
    package var copied: Int64?

    package init(path: String, before: FileStatus?, after: FileStatus?, copied: Int64? = nil) {
        self.path = path
        self.before = before
        self.after = after
        self.copied = copied
    }

    /// What changed, in words (sizes and times, never content).
    package var reason: String {
        guard let before else { return "it appeared after the lock was taken" }
        guard let after else { return "it is gone" }
        if after.device != before.device || after.inode != before.inode || after.kind != before.kind {
            return "another file took its name"
        }
        if after.size != before.size {
            return "it had \(before.size) bytes and has \(after.size) now"
        }
        if let copied, copied != before.size {
            return "it had \(before.size) bytes and the copy read \(copied)"
        }
        return "it was written to (its modification or change time moved)"
    }

    package var description: String { "\(path) changed: \(reason)" }
}

extension FileStatus {
    /// True when `other` is this same file with the same size and the same modification and change
    /// times: nothing wrote to it, truncated it, appended to it or replaced it in between (a write
    /// moves `st_mtim`, and no one can set `st_ctim` back).
    package func isSameVersion(as other: FileStatus) -> Bool {
        kind == other.kind && device == other.device && inode == other.inode && size == other.size
            && modificationTime.tv_sec == other.modificationTime.tv_sec
            && modificationTime.tv_nsec == other.modificationTime.tv_nsec
            && changeTime.tv_sec == other.changeTime.tv_sec && changeTime.tv_nsec == other.changeTime.tv_nsec
    }
}

extension FileSystem {
    /// Throws ``FileChanged`` unless the file at `path` is still the version `before` describes
    /// (``FileStatus/isSameVersion(as:)``), and, when `copied` is given, a copy of it read exactly
    /// its size.
    package func checkUnchanged(_ path: String, since before: FileStatus, copied: Int64? = nil) throws {
        let after = try status(path)
        guard let after, after.isSameVersion(as: before), copied.map({ $0 == before.size }) ?? true else {
            throw FileChanged(path: path, before: before, after: after, copied: copied)
        }
    }
}
