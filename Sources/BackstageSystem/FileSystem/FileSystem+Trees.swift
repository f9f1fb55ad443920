import Foundation

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

    /// Drops the regular files under `path` from the page cache, as if not read for a long
    /// while (their written pages must be synced first: only clean pages are dropped). For
    /// benchmarks, which start each case from the same cold cache.
    package func dropFromCache(_ path: String) throws(FileSystemError) {
        guard let status = try status(path) else { return }
        switch status.kind {
        case .directory:
            for name in try contents(of: path) { try dropFromCache(path + "/" + name) }
        case .regular:
            Syscalls.dontNeed(path)
        default:
            break
        }
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
    /// Files are copied by up to ``treeWorkers`` threads, the calling thread among them: a store's
    /// support folder is thousands of small files, where the kernel's per-file work, not the bytes,
    /// takes the time. With `verify`, each file is compared with its source as soon as it is
    /// written, while it is still in the page cache, and the copy stops at the first difference.
    /// `progress` is called on the calling thread, with the bytes copied so far; what it throws
    /// stops the copy and is rethrown.
    ///
    /// - returns: The files and bytes copied, and whether every file compared equal (true without `verify`).
    @discardableResult
    package func copyTree(
        _ from: String, to: String, verify: Bool = false,
        progress: (Int64) throws -> Void = { _ in }
    ) throws -> (files: Int, bytes: Int64, identical: Bool) {
        var folders: [String] = []
        var files: [(from: String, to: String)] = []
        func walk(_ from: String, _ to: String) throws {
            guard let status = try status(from) else { return }
            switch status.kind {
            case .directory:
                try createDirectories(to, mode: 0o700)
                try copyOwnerAndMode(of: status, to: to)
                folders.append(to)
                for name in try contents(of: from) {
                    try walk(from + "/" + name, to + "/" + name)
                }
            case .regular:
                files.append((from, to))
            case .symlink:
                throw FileSystemError(operation: .copy, path: from, code: ELOOP)
            case .other:
                throw FileSystemError(operation: .copy, path: from, code: EINVAL)
            }
        }
        try walk(from, to)
        let fileSystem = self, list = files
        let bytes: Int64
        do {
            bytes = try Self.forEach(files.count, workers: files.count < 64 ? 1 : Self.treeWorkers, progress: progress)
            { index in
                let (source, copy) = list[index]
                let copied = try fileSystem.copyFile(source, to: copy)
                if verify, try !fileSystem.contentsEqual(source, copy) { throw Different() }
                return copied
            }
        } catch is Different {
            return (files.count, 0, false)
        }
        // Deepest first: a folder's entries are durable before the folder's own name is.
        for folder in folders.reversed() { try syncDirectory(folder) }
        return (files.count, bytes, true)
    }

    /// Copies a tree of folders, regular files and symbolic links as they are (bytes, modes, as root
    /// owners; a link's target unread), fsyncing nothing: a scratch copy, such as the simulator's
    /// fixture cloned for each run. Each file is one kernel copy (`FileManager.copyItem` makes one
    /// `sendfile` call per 4 KiB: about 850 for a 2 MB fixture, most of a simulated run's reset). A
    /// special file fails the copy (`EINVAL`), naming it; a copy that fails leaves what it copied,
    /// for the caller to remove (the simulator removes the last run's container at each reset).
    package func cloneTree(_ from: String, to: String) throws {
        guard let status = try status(from) else { throw FileSystemError(operation: .copy, path: from, code: ENOENT) }
        switch status.kind {
        case .directory:
            try createDirectory(to, mode: 0o700)
            for name in try contents(of: from) { try cloneTree(from + "/" + name, to: to + "/" + name) }
            try copyOwnerAndMode(of: status, to: to)
        case .regular:
            try copyFileUnsynced(from, to: to)
        case .symlink:
            var target = [CChar](repeating: 0, count: 4097)
            let count = target.withUnsafeMutableBufferPointer { buffer in
                Syscalls.readLink(from, into: UnsafeMutableBufferPointer(rebasing: buffer[..<4096]))
            }
            guard count >= 0 else { throw FileSystemError(operation: .readlink, path: from, code: Syscalls.lastErrno) }
            // Linux holds at most 4,095 bytes; a target not in UTF-8 would be re-created as another.
            guard count < 4096 else { throw FileSystemError(operation: .readlink, path: from, code: ENAMETOOLONG) }
            guard let text = String(validating: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) else {
                throw FileSystemError(operation: .readlink, path: from, code: EILSEQ)
            }
            try createSymbolicLink(to, target: text)
        case .other:
            throw FileSystemError(operation: .copy, path: from, code: EINVAL)
        }
    }

    /// True when two trees hold the same names and bytes; two absent paths are equal. Without
    /// `comparingContents`, files are compared by size only (for a tree
    /// ``copyTree(_:to:verify:progress:)`` verified: nothing added or grown since).
    package func treesEqual(_ a: String, _ b: String, comparingContents: Bool = true) throws -> Bool {
        let sa = try status(a), sb = try status(b)
        guard let sa, let sb else { return sa == nil && sb == nil }
        guard sa.kind == sb.kind else { return false }
        if sa.kind == .regular { return comparingContents ? try contentsEqual(a, b) : sa.size == sb.size }
        guard sa.kind == .directory else { return false }
        let names = try contents(of: a)
        guard names == (try contents(of: b)) else { return false }
        return try names.allSatisfy { try treesEqual(a + "/" + $0, b + "/" + $0, comparingContents: comparingContents) }
    }

    /// True when everything tree `a` holds is in tree `b` with the same bytes (folders as folders):
    /// what a removal of a copy of `b` stopped halfway leaves. An absent `a` is part of anything.
    package func tree(_ a: String, isPartOf b: String) throws -> Bool {
        guard let sa = try status(a) else { return true }
        guard let sb = try status(b), sa.kind == sb.kind else { return false }
        if sa.kind == .regular { return try contentsEqual(a, b) }
        guard sa.kind == .directory else { return false }
        return try contents(of: a).allSatisfy { try tree(a + "/" + $0, isPartOf: b + "/" + $0) }
    }

    /// Removes a file or a whole directory tree, never following symlinks; succeeds when absent.
    /// Files are unlinked by up to ``treeWorkers`` threads when there are many: on ext4 unlinking
    /// ten thousand files takes a second of kernel time, which two cores halve.
    package func removeTree(_ path: String) throws(FileSystemError) {
        guard let st = try status(path) else { return }
        guard st.kind == .directory else { return try removeFile(path) }
        var folders: [String] = []
        var files: [String] = []
        func walk(_ path: String) throws(FileSystemError) {
            folders.append(path)
            for name in try contents(of: path) {
                let child = path + "/" + name
                if try status(child)?.kind == .directory { try walk(child) } else { files.append(child) }
            }
        }
        try walk(path)
        let fileSystem = self, list = files
        let remove: @Sendable (Int) throws(FileSystemError) -> Int64 = { index throws(FileSystemError) in
            try fileSystem.removeFile(list[index])
            return 0
        }
        let noProgress: (Int64) throws(FileSystemError) -> Void = { _ in }
        let workers = files.count < 256 ? 1 : Self.treeWorkers
        _ = try Self.forEach(files.count, workers: workers, progress: noProgress, remove)
        for folder in folders.reversed() {
            try inject(.rmdir, folder)
            do { try Syscalls.rmdir(folder) } catch  where error.code == ENOENT {}
        }
    }

    /// Threads for tree copies and removals: one per core, up to 4.
    package static let treeWorkers = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))

    /// Runs `work` for every index of `0..<count` on up to `workers` threads, the calling thread
    /// among them, and returns the sum of what it returned. The calling thread calls `progress`
    /// with the running sum after each of its items. The first error stops every thread (an item
    /// under way finishes) and is rethrown, typed as `work` and `progress` throw it.
    private static func forEach<WorkError: Error>(
        _ count: Int, workers: Int, progress: (Int64) throws(WorkError) -> Void,
        _ work: @escaping @Sendable (Int) throws(WorkError) -> Int64
    ) throws(WorkError) -> Int64 {
        let shared = SharedWork<WorkError>(count: count)
        let threads = ThreadGroup()
        for _ in 1..<max(1, min(workers, count)) {
            threads.start {
                while let index = shared.take() {
                    do throws(WorkError) { shared.add(try work(index)) } catch { shared.fail(error) }
                }
            }
        }
        while let index = shared.take() {
            do throws(WorkError) {
                try progress(shared.add(try work(index)))
            } catch {
                shared.fail(error)
            }
        }
        threads.wait()
        if let error = shared.error { throw error }
        return shared.total
    }
}

/// Thrown by a worker to stop a verified tree copy: a file differs from its source.
private struct Different: Error {}

/// The items threads share: the next one to take, the running sum, the first error.
private final class SharedWork<WorkError: Error>: @unchecked Sendable {
    private let lock = NSLock()
    private let count: Int
    private var next = 0
    private var sum: Int64 = 0
    private var firstError: WorkError?

    init(count: Int) { self.count = count }

    /// The next item, or nil when none is left or an error stopped the work.
    func take() -> Int? {
        lock.withLock {
            guard firstError == nil, next < count else { return nil }
            defer { next += 1 }
            return next
        }
    }

    @discardableResult
    func add(_ value: Int64) -> Int64 {
        lock.withLock {
            sum += value; return sum
        }
    }
    func fail(_ error: WorkError) { lock.withLock { if firstError == nil { firstError = error } } }
    var error: WorkError? { lock.withLock { firstError } }
    var total: Int64 { lock.withLock { sum } }
}

extension FileSystem {
    /// The mode for folders made to receive what `folder` holds: no wider than `folder` (through a
    /// link), and always rwx for the owner, who must finish the move; 0755 when it does not exist.
    package func folderModeNoWider(than folder: String) throws(FileSystemError) -> mode_t {
        guard let status = try status(resolvedPath(folder) ?? folder), status.kind == .directory else { return 0o755 }
        return (status.mode & 0o777) | 0o700
    }
}
