import Backstage
import BackstageHarness
import Benchmark
import BenchmarkSupport
import Foundation

/// Writing the v1 container of the sample app (Core Data-style store with external data and
/// user documents), 8 MB, deterministic per seed.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("fixtures")

    Benchmark("GenerateV1Fixture8MB", configuration: configuration(teardown: {
        scratch.remove()
    })) { benchmark in
        let root = scratch.url.appending(path: "run")
        try? FileManager.default.removeItem(at: root)
        benchmark.startMeasurement()
        blackHole(try makeFixture(layout: "v1", bytes: 8_000_000, at: root))
        benchmark.stopMeasurement()
    }
}
