import Foundation

/// Measures how cost grows with the work: Documents trees of many small files (``ScalingTree``,
/// flat and deep) through audit, relocation's scan, export (zip, tar.gz and tar.zst) and import, and
/// optionally one large store through relocate, split and migrate (``ScalingBench/storeBytes``).
/// Each operation runs once for each of ``caches`` as a child `backstage`, after a `sync` and its
/// input read into the page cache (warm) or every cache dropped (cold), its wall clock, peak RSS and
/// disk reads taken: the peak is the child's own, the `ru_maxrss` that `wait4` gives GNU `time`, a
/// small process that forks it (a child forked from this process would count this process's size).
/// Trees and the store are kept in `workspace` between runs.
public struct ScalingBench {
    public var executable: URL
    public var fileCounts: [Int]
    public var shapes: [ScalingTree.Shape] = ScalingTree.Shape.allCases
    public var workspace: URL
    /// The size of the large store to time, or nil for none.
    public var storeBytes: Int64?
    /// Where the large store is copied by `relocate --strategy copy` when RAM allows.
    public var crossDevice = URL(filePath: "/dev/shm")
    /// Runs of each store operation and of its baseline, interleaved; the median is reported.
    public var storeRuns = 1
    /// The caches the trees' operations, and the store's operations and baselines, are timed with, as
    /// `bench --sizes` does: warm (the input just read into the page cache) and cold (every cache
    /// dropped first).
    public var caches: [BenchCache] = [.warm]
    /// How cold runs drop the page cache.
    public var pageCache = PageCache()
    /// Called before each step, for progress.
    public var log: (String) -> Void = { _ in }

    public init(executable: URL, fileCounts: [Int], workspace: URL) {
        self.executable = executable
        self.fileCounts = fileCounts
        self.workspace = workspace
    }

    /// The operations timed on each tree, in the order they run.
    public static let treeOperations = [
        "audit", "relocate scan", "export zip", "export tar.gz", "export tar.zst", "import tar.zst",
    ]

    public func run() throws -> ScalingReport {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else {
            throw BenchError(message: "peak memory is read by GNU time: install the Debian package `time`")
        }
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        var report = ScalingReport(date: Date(), machine: BenchRunner.machine())
        var caches = caches
        if caches.contains(.cold), let refused = pageCache.drop() {
            report.notes.append("no cold runs: \(refused)")
            caches.removeAll { $0 == .cold }
            // Nothing left to time: a report of no runs would say every target is met.
            guard !caches.isEmpty else { throw BenchError(message: "cold runs are not possible: \(refused)") }
        }
        for shape in shapes {
            for files in fileCounts.sorted() {
                report.trees += try measureTree(ScalingTree(shape: shape, files: files), caches: caches)
            }
        }
        if let storeBytes {
            let store = try measureStore(bytes: storeBytes, caches: caches)
            report.store = store.rows
            report.notes += store.notes
        }
        return report
    }

    // MARK: Trees

    private func measureTree(_ tree: ScalingTree, caches: [BenchCache]) throws -> [ScalingReport.TreeRow] {
        log("writing the \(tree.shape.rawValue) tree of \(tree.files) files")
        let container = try tree.container(in: workspace)
        let run = workspace.appending(path: "run", directoryHint: .isDirectory)
        try remove(run)
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        defer { try? remove(run) }
        let store = "Scale.sqlite"
        let documents = container.appending(path: "Documents")
        let zip = run.appending(path: "out.zip"), zst = run.appending(path: "out.tar.zst")
        let gz = run.appending(path: "out.tar.gz")
        let imported = run.appending(path: "imported", directoryHint: .isDirectory)
        var rows: [ScalingReport.TreeRow] = []
        for cache in caches {
            for operation in Self.treeOperations {
                // What runs, what it reads (read just before a warm run), and what it leaves to remove
                // (each cache's pass starts from the same tree and an empty run folder; the tar.zst
                // stays for the import).
                let work: (arguments: [String], input: URL, leftovers: [URL])
                switch operation {
                case "audit": work = (["audit", container.path, "--store", store], container, [])
                case "relocate scan":
                    // A store to move, so the scan is relocation's whole walk of Documents.
                    try makeStore(at: documents.appending(path: store))
                    work = (
                        ["relocate", container.path, "--store", store, "--strategy", "rename"], container,
                        [container.appending(path: "Library")]
                    )
                case "export zip": work = (["export", container.path, "-o", zip.path], container, [zip])
                case "export tar.gz": work = (["export", container.path, "-o", gz.path], container, [gz])
                case "export tar.zst": work = (["export", container.path, "-o", zst.path], container, [])
                default:
                    try FileManager.default.createDirectory(at: imported, withIntermediateDirectories: true)
                    work = (["import", zst.path, imported.path], zst, [zst, imported])
                }
                log("\(operation) · \(tree.shape.rawValue) · \(tree.files) files · \(cache.rawValue)")
                try pageCache.settle(cache, reading: [work.input])
                let measured = try measure(executable, work.arguments, what: "\(operation) of \(tree.files) files")
                var row = ScalingReport.TreeRow(
                    shape: tree.shape, files: tree.files, operation: operation, seconds: measured.seconds,
                    peakBytes: measured.peakBytes)
                row.cache = cache
                row.diskReadBytes = measured.diskReadBytes
                rows.append(row)
                for leftover in work.leftovers { try remove(leftover) }
            }
        }
        return rows
    }

    // MARK: Helpers

    /// Runs one timed command (``ChildProcess/measure(_:_:environment:)``); a failure is the bench's
    /// error, naming `what` and the command's own message.
    func measure(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, what: String
    ) throws -> ChildProcess.Measurement {
        let measured = try ChildProcess.measure(executable, arguments, environment: environment)
        guard measured.status == 0 else {
            throw BenchError(message: "\(what) failed (exit \(measured.status)): \(measured.stderr)")
        }
        return measured
    }

    /// A small SQLite store of one table, written by the `sqlite3` shell.
    func makeStore(at url: URL) throws {
        try? FileManager.default.removeItem(at: url)
        let made = try ChildProcess.run(
            URL(filePath: "/usr/bin/sqlite3"), [url.path, "CREATE TABLE t(x); INSERT INTO t VALUES (1);"])
        guard made.status == 0 else { throw BenchError(message: "sqlite3 \(url.path) failed: \(made.stderr)") }
    }

    /// Removes a tree of any size with `rm -rf` (a million files in seconds).
    func remove(_ url: URL) throws {
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        let removed = try ChildProcess.run(URL(filePath: "/bin/rm"), ["-rf", url.path])
        guard removed.status == 0 else { throw BenchError(message: "rm -rf \(url.path) failed: \(removed.stderr)") }
    }
}
