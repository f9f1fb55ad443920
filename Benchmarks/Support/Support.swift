import Backstage
import BackstageHarness
import Benchmark
import Foundation

/// What every suite measures: time, throughput, memory, allocations and, on Linux, disk traffic.
public let backstageMetrics: [BenchmarkMetric] = [
    .wallClock, .throughput, .peakMemoryResident, .mallocCountTotal, .readBytesPhysical, .writeBytesPhysical,
]

/// A configuration with the suite's metrics and thresholds generous enough for a shared 2-core
/// machine, where an fsync can take three times as long from one run to the next: `make bench-check`
/// fails on a p90 more than `timeTolerance` percent slower (300: four times the time), 25 % more memory or mallocs, or 25 % + 16 MB more disk traffic than the
/// committed Thresholds/ — a change of algorithm (a rename turned into a copy), not noise.
public func configuration(iterations: Int = 10, timeTolerance: Double = 300, scaling: BenchmarkScalingFactor = .one,
                          setup: Benchmark.BenchmarkSetupHook? = nil, teardown: Benchmark.BenchmarkTeardownHook? = nil) -> Benchmark.Configuration {
    .init(
        metrics: backstageMetrics,
        scalingFactor: scaling,
        maxDuration: .seconds(20),
        maxIterations: iterations,
        thresholds: [
            .wallClock: .init(relative: [.p90: timeTolerance]),
            // Reported, not checked: it is the inverse of the wall clock, and its p90 is the one
            // slowest iteration, which a single fsync stall on this machine makes 10× slower.
            .throughput: .init(relative: [.p90: 100]),
            .peakMemoryResident: .init(relative: [.p90: 25]),
            .mallocCountTotal: .init(relative: [.p90: 25]),
            .readBytesPhysical: .init(relative: [.p90: 25], absolute: [.p90: 16_000_000]),
            .writeBytesPhysical: .init(relative: [.p90: 25], absolute: [.p90: 16_000_000]),
        ],
        setup: setup,
        teardown: teardown
    )
}

/// A scratch folder for one suite, removed at exit.
public final class Scratch: @unchecked Sendable {
    public let url: URL

    public init(_ name: String, base: String = NSTemporaryDirectory()) {
        url = URL(filePath: base).appending(path: "backstage-bench-\(name)-\(UUID().uuidString.prefix(8))", directoryHint: .isDirectory)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func remove() { try? FileManager.default.removeItem(at: url) }

    /// A fresh copy of `master` under this folder.
    public func copy(_ master: URL, as name: String) throws -> URL {
        let target = url.appending(path: name, directoryHint: .isDirectory)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: master, to: target)
        return target
    }
}

/// The sample app's container for `layout` in the clean state, about `bytes` large.
public func makeFixture(layout: String, bytes: Int64, at root: URL) throws -> AppContainer {
    // Clean fixtures write their stores in this process; no child process (executable) is needed.
    try? FileManager.default.removeItem(at: root)
    _ = try FixtureGenerator(executable: URL(filePath: "/bin/false"), catalog: try CatalogFolder.notes())
        .generate(FixtureSpec(layout: layout, size: bytes, state: .clean, seed: 1), at: root)
    return .iOSSandbox(root: root)
}

/// `files` compressible text files spread over 10 folders.
public func makeDocuments(at folder: URL, files: Int, bytesEach: Int) throws {
    let words = ["note", "meeting", "lisbon", "café", "draft", "budget", "photo", "trip", "idea", "résumé"]
    var random = SystemRandomNumberGenerator()
    for n in 0..<files {
        let directory = folder.appending(path: "Folder \(n % 10)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var text = ""
        while text.utf8.count < bytesEach { text += words[Int(random.next() % UInt64(words.count))] + " " }
        try Data(text.utf8.prefix(bytesEach)).write(to: directory.appending(path: "note \(n).txt"))
    }
}

/// A benchmark of one upgrade plan on a fresh copy of an 8 MB clean fixture of `layout` per
/// iteration; only the upgrade is measured.
public func upgradeBenchmark(_ name: String, layout: String, plan: UpgradePlan) {
    let scratch = Scratch(name)
    let master = scratch.url.appending(path: "master")
    Benchmark(name, configuration: configuration(setup: {
        _ = try makeFixture(layout: layout, bytes: 8_000_000, at: master)
    }, teardown: {
        scratch.remove()
    })) { benchmark in
        let root = try scratch.copy(master, as: "run")
        benchmark.startMeasurement()
        blackHole(try await Upgrader(container: .iOSSandbox(root: root)).upgrade(plan))
        benchmark.stopMeasurement()
    }
}
