import Backstage
import BackstageFixtures
import Benchmark
import BenchmarkSupport
import Foundation

/// The launch-time check on an up-to-date v4 container, for the app's whole v1→v4 chain as one
/// plan (how an app passes it): no SQLite open, a few stats, two header reads and one listing of
/// Documents by name. Target: 10 µs per call (issue 13/15). Time and mallocs are per call.
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
        let chain = UpgradePlan(chain: try CatalogFolder.notes().chain(from: "v1", to: "v4").map(\.plan))
        precondition(!Upgrader.needsUpgrade(container, chain), "the v4 fixture must be up to date")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(Upgrader.needsUpgrade(container, chain))
        }
    }
}
