import Backstage
import BackstageFixtures
import Benchmark
import BenchmarkSupport
import Foundation

/// The launch-time check on an up-to-date v4 container: no SQLite open, a few stats and a header read.
/// Target: 50 µs.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("needs-upgrade")
    let root = scratch.url.appending(path: "v4")

    Benchmark("NeedsUpgradeNothingPendingV1toV4",
              configuration: configuration(iterations: 100_000, scaling: .kilo, setup: {
        _ = try makeFixture(layout: "v4", bytes: 1_000_000, at: root)
    }, teardown: {
        scratch.remove()
    })) { benchmark in
        let container = AppContainer.iOSSandbox(root: root)
        let plans = try CatalogFolder.notes().chain(from: "v1", to: "v4").map(\.plan)
        for _ in benchmark.scaledIterations {
            for plan in plans { blackHole(Upgrader.needsUpgrade(container, plan)) }
        }
    }
}
