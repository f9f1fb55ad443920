import Backstage
import BackstageHarness
import Benchmark
import BenchmarkSupport
import Foundation

/// Writing the v1 container of the sample app (Core Data-style store with external data and
/// user documents), 8 MB, deterministic per seed.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("fixtures")

    Benchmark("Generate an 8 MB v1 fixture", configuration: configuration(), teardown: {
        scratch.remove()
    }) { benchmark in
        for _ in benchmark.scaledIterations {
            benchmark.stopMeasurement()
            let root = scratch.url.appending(path: "run")
            try? FileManager.default.removeItem(at: root)
            benchmark.startMeasurement()
            blackHole(try makeFixture(layout: "v1", bytes: 8_000_000, at: root))
        }
    }
}
