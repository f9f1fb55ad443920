import Backstage
import BackstageHarness
import Benchmark
import BenchmarkSupport
import Foundation

/// The launch-time check on an up-to-date v4 container, for the app's whole v1→v4 chain as one
/// plan (how an app passes it): no SQLite open, one `readlink` of the launch record and one
/// `lstat` per folder it stamped (three system calls), no allocation. Target: 10 µs per call
/// (issues 13 and 15). Time and mallocs are per call.
///
/// - `NeedsUpgradeNothingPendingV1toV4`: as the last run left it (the record vouches for Documents).
/// - `NeedsUpgradeDocumentsChangedV1toV4`: after the user saved a file in Documents, which is then
///   listed (by name, without a `stat`) at every launch until the next run.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("needs-upgrade")
    let chain = { UpgradePlan(chain: try CatalogFolder.notes().chain(from: "v1", to: "v4").map(\.plan)) }

    for (name, documentsChanged) in [("NeedsUpgradeNothingPendingV1toV4", false), ("NeedsUpgradeDocumentsChangedV1toV4", true)] {
        let root = scratch.url.appending(path: name)
        Benchmark(name, configuration: configuration(iterations: 100_000, scaling: .kilo, setup: {
            let container = try makeFixture(layout: "v4", bytes: 1_000_000, at: root)
            // The app's run of its chain at its last launch: every step already done.
            try await Upgrader(container: container).upgrade(try chain())
            if documentsChanged {
                try Data("saved by the user".utf8).write(to: container.documents.appending(path: "Saved.txt"))
            }
        }, teardown: {
            scratch.remove()
        })) { benchmark in
            let container = AppContainer.iOSSandbox(root: root)
            let plan = try chain()
            precondition(!Upgrader.needsUpgrade(container, plan), "the v4 fixture must be up to date")
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(Upgrader.needsUpgrade(container, plan))
            }
        }
    }
}
