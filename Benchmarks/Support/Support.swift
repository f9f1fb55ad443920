import Backstage
import BackstageHarness
import Benchmark
import Foundation

/// What every suite measures: time, throughput, memory, allocations and, on Linux, disk traffic.
public let backstageMetrics: [BenchmarkMetric] = [
    .wallClock, .throughput, .peakMemoryResident, .mallocCountTotal, .readBytesPhysical, .writeBytesPhysical,
]

/// A configuration with the suite's metrics and thresholds generous enough for a shared 2-core
/// machine: a p90 regression of more than `timeTolerance` percent in time, or 25 % in memory, fails.
public func configuration(iterations: Int = 10, timeTolerance: Double = 50, scaling: BenchmarkScalingFactor = .one) -> Benchmark.Configuration {
    .init(
        metrics: backstageMetrics,
        scalingFactor: scaling,
        maxDuration: .seconds(20),
        maxIterations: iterations,
        thresholds: [
            .wallClock: .init(relative: [.p90: timeTolerance]),
            .peakMemoryResident: .init(relative: [.p90: 25]),
            .mallocCountTotal: .init(relative: [.p90: 25]),
        ]
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
    _ = try FixtureGenerator(executable: URL(filePath: "/bin/false")).generate(FixtureSpec(layout: layout, size: bytes, state: .clean, seed: 1), at: root)
    return .iOSSandbox(root: root)
}

