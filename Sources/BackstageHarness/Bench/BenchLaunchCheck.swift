import Backstage
import Foundation

/// Drops the page cache before a cold run: `sync`, then `3` written to `control`
/// (`/proc/sys/vm/drop_caches`, which takes root).
public struct PageCache: Sendable {
    /// The kernel's control file.
    public var control: String

    public init(control: String = "/proc/sys/vm/drop_caches") {
        self.control = control
    }

    /// Drops the page cache, dentries and inodes; nil when done, else why not, such as
    /// "writing to /proc/sys/vm/drop_caches was refused: Permission denied".
    public func drop() -> String? {
        sync()
        // O_APPEND: the kernel's control ignores it; a test's control file keeps every drop.
        let fd = open(control, O_WRONLY | O_APPEND)
        guard fd >= 0 else { return "writing to \(control) was refused: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        let written = write(fd, "3\n", 2)
        guard written == 2 else { return "writing to \(control) was refused: \(String(cString: strerror(errno)))" }
        return nil
    }

    /// Readies the caches before a timed command: `sync` first (nothing of the last command still
    /// to write back, which would slow this one), then `inputs` read into the page cache (warm) or
    /// every cache dropped (cold).
    ///
    /// - throws: ``BenchError`` when the cache cannot be dropped for a cold run.
    func settle(_ cache: BenchCache, reading inputs: [URL]) throws {
        sync()
        switch cache {
        case .warm:
            for input in inputs { Self.read(input) }
        case .cold:
            if let refused = drop() {
                throw BenchError(message: "the page cache could not be dropped for a cold run: \(refused)")
            }
        }
    }

    /// Reads every file under `url` into the page cache (a warm run's inputs).
    static func read(_ url: URL) {
        let fileSystem = FileSystem()
        guard let status = try? fileSystem.status(url.path) else { return }
        switch status.kind {
        case .directory:
            for name in (try? fileSystem.contents(of: url.path)) ?? [] { read(url.appending(path: name)) }
        case .regular:
            guard let handle = try? FileHandle(forReadingFrom: url) else { return }
            defer { try? handle.close() }
            while let chunk = try? handle.read(upToCount: 4 << 20), !chunk.isEmpty {}
        default:
            break
        }
    }
}

extension BenchRunner {
    /// `needsUpgrade` of the Notes v1→v4 chain on an up-to-date v4 container, against the system
    /// calls it cannot avoid: one `readlink` of the launch record and one `lstat` per folder the
    /// record watches, in the same loop. Warm: per run, 50 batches of 1,000 calls of each,
    /// interleaved, after 1,000 calls to warm up; cold: per run, 10 single calls of each, every
    /// cache dropped before each. Seconds per call; the medians of the steady and of the
    /// Documents-changed check, in microseconds, for the report's launch-check line.
    func measureNeedsUpgrade(
        caches: [BenchCache]
    ) throws -> (results: [BenchResult], steady: Double, documentsChanged: Double) {
        let root = workspace.appending(path: "needs-upgrade", directoryHint: .isDirectory)
        try? FileManager.default.removeItem(at: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let catalog = try CatalogFolder.notes()
        try FixtureGenerator(executable: executable, catalog: catalog).generate(
            FixtureSpec(layout: "v4", size: 1_000_000, state: .clean, seed: 1), at: root)
        let container = catalog.container(at: root)
        let chain = UpgradePlan(chain: try catalog.chain(from: "v1", to: "v4").map(\.plan))
        try Upgrader(container: container).runAndWait(chain, budget: .infinity)
        guard !Upgrader.needsUpgrade(container, chain) else {
            throw BenchError(message: "needsUpgrade: the v4 container still needs the v1→v4 chain")
        }
        let calls = try BareLaunchCalls(container)
        let check = { _ = Upgrader.needsUpgrade(container, chain) }
        var ours: [BenchCache: [Double]] = [:], bare: [BenchCache: [Double]] = [:]
        for _ in 0..<runs {
            for cache in caches {
                let pair = cache == .warm ? warmPair(check, calls.call) : try coldPair(check, calls.call)
                ours[cache, default: []].append(pair.0)
                bare[cache, default: []].append(pair.1)
            }
        }
        let results = caches.flatMap { cache in
            var check = BenchResult(
                name: Name.launchCheck, kind: .backstage, bytes: 0, runs: ours[cache] ?? [], peakBytes: 0,
                baselines: [Name.launchCheckCalls], cache: cache)
            check.command = "Upgrader.needsUpgrade(container, v1→v4 chain)"
            var bare = BenchResult(
                name: Name.launchCheckCalls, kind: .baseline, bytes: 0, runs: bare[cache] ?? [], peakBytes: 0,
                cache: cache)
            bare.command = "readlink(launch record) + lstat × \(calls.folders.count)"
            return [check, bare]
        }
        let steady = warmPair(check, calls.call).0 * 1e6
        try Data("saved by the user".utf8).write(to: container.documents.appending(path: "Saved after the upgrade.txt"))
        return (results, steady, warmPair(check, { _ = Upgrader.needsUpgrade(container, chain) }).0 * 1e6)
    }

    /// Median seconds per call of `a` and of `b`, over 50 interleaved batches of 1,000 calls.
    private func warmPair(_ a: () -> Void, _ b: () -> Void) -> (Double, Double) {
        // Nothing left to write back, which the kernel's flusher would do on a core this loop needs.
        sync()
        for _ in 0..<1_000 {
            a()
            b()
        }
        func batch(_ body: () -> Void) -> Double {
            let start = ContinuousClock.now
            for _ in 0..<1_000 { body() }
            return (ContinuousClock.now - start).seconds / 1_000
        }
        var first: [Double] = [], second: [Double] = []
        for _ in 0..<50 {
            first.append(batch(a))
            second.append(batch(b))
        }
        return (first.median, second.median)
    }

    /// Median seconds of one call of `a` and of `b`, each after every cache was dropped, 10 times.
    private func coldPair(_ a: () -> Void, _ b: () -> Void) throws -> (Double, Double) {
        func once(_ body: () -> Void) throws -> Double {
            if let refused = pageCache.drop() {
                throw BenchError(message: "the page cache could not be dropped for a cold run: \(refused)")
            }
            let start = ContinuousClock.now
            body()
            return (ContinuousClock.now - start).seconds
        }
        var first: [Double] = [], second: [Double] = []
        for _ in 0..<10 {
            first.append(try once(a))
            second.append(try once(b))
        }
        return (first.median, second.median)
    }
}

/// The bare system calls of a launch check with nothing pending: one `readlink` of the launch
/// record and one `lstat` of each folder it stamped (`quiet` and `seen` lines), the paths resolved
/// once, before the loop.
struct BareLaunchCalls {
    let record: [CChar]
    let folders: [[CChar]]

    init(_ container: AppContainer) throws {
        let path = container.backstageDirectory.appending(path: "launch").path
        let text = try FileManager.default.destinationOfSymbolicLink(atPath: path)
        record = Array(path.utf8CString)
        folders = text.split(separator: "\n").compactMap { line -> [CChar]? in
            let words = line.split(separator: " ")
            guard words.count > 1, words[0] == "quiet" || words[0] == "seen",
                let location = ContainerLocation(String(words[1]).removingPercentEncoding ?? String(words[1]))
            else { return nil }
            return Array(location.filePath(in: container).utf8CString)
        }
        guard !folders.isEmpty else {
            throw BenchError(
                message: "the launch record at \(path) stamps no folder: nothing to compare the check with")
        }
    }

    func call() {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer in
            _ = readlink(record, buffer.baseAddress!, buffer.count)
        }
        var status = stat()
        for folder in folders { _ = lstat(folder, &status) }
    }
}
