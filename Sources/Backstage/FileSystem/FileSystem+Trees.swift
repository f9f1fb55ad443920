#if canImport(Glibc)
import Glibc
#endif

extension FileSystem {
    /// The total size of the regular files under `path` (the file's size for a file, 0 when absent).
    package func treeSize(_ path: String) throws(FileSystemError) -> Int64 {
        guard let status = try status(path) else { return 0 }
        guard status.kind == .directory else { return status.size }
        var total: Int64 = 0
        for name in try contents(of: path) {
            total += try treeSize(path + "/" + name)
        }
        return total
    }

    /// Gives `to` the content of `from` without writing it again when it can: a hard link on one
    /// file system (for write-once files, such as Core Data's external data), else a durable copy.
    /// The caller fsyncs the folder of `to` to make the new name durable.
    package func linkOrCopy(_ from: String, to: String) throws {
        do {
            try createHardLink(to, to: from)
        } catch {
            guard error.code == EXDEV || error.code == EPERM || error.code == EMLINK else { throw error }
            try copyFile(from, to: to)
        }
    }

    /// Copies a tree of folders and regular files, fsyncing every file and folder. A symbolic
    /// link or a special file in the tree fails the copy (`ELOOP` / `EINVAL`): stores never hold one.
    ///
    /// - returns: The files and bytes copied.
    package func copyTree(_ from: String, to: String, progress: (Int64) throws -> Void = { _ in }) throws -> (files: Int, bytes: Int64) {
        var files = 0
        var bytes: Int64 = 0
        func copy(_ from: String, _ to: String) throws {
            guard let status = try status(from) else { return }
            switch status.kind {
            case .directory:
                try createDirectories(to, mode: 0o700)
                try copyOwnerAndMode(of: status, to: to)
                for name in try contents(of: from) {
                    try copy(from + "/" + name, to + "/" + name)
                }
                try syncDirectory(to)
            case .regular:
                let base = bytes
                bytes += try copyFile(from, to: to, progress: { try progress(base + $0) })
                files += 1
            case .symlink:
                throw FileSystemError(operation: .copy, path: from, code: ELOOP)
            case .other:
                throw FileSystemError(operation: .copy, path: from, code: EINVAL)
            }
        }
        try copy(from, to)
        return (files, bytes)
    }

    /// True when two trees hold the same names and bytes; two absent paths are equal.
    package func treesEqual(_ a: String, _ b: String) throws -> Bool {
        let sa = try status(a), sb = try status(b)
        guard let sa, let sb else { return sa == nil && sb == nil }
        guard sa.kind == sb.kind else { return false }
        if sa.kind == .regular { return try contentsEqual(a, b) }
        guard sa.kind == .directory else { return false }
        let names = try contents(of: a)
        guard names == (try contents(of: b)) else { return false }
        return try names.allSatisfy { try treesEqual(a + "/" + $0, b + "/" + $0) }
    }
}
