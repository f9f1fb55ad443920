import Backstage
import BackstageFixtures
import Benchmark
import BenchmarkSupport
import Foundation

/// The v2 → v3 split of the sample store (8 MB): notes, folders and attachments to UserData,
/// thumbnails to Cache, logs discarded, each target verified and fsynced.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("split")
    let master = scratch.url.appending(path: "master")

    Benchmark("Split8MBInto2Stores", configuration: configuration(setup: {
        _ = try makeFixture(layout: "v2", bytes: 8_000_000, at: master)
    }, teardown: {
        scratch.remove()
    })) { benchmark in
        let plan = UpgradePlan(name: "split") {
            UpgradeStep.split(ContainerLocation(.applicationSupport, "Notes.sqlite"), into: [
                .init(store: ContainerLocation(.applicationSupport, "UserData.sqlite"), tables: ["Z_PRIMARYKEY", "Z_METADATA", "ZFOLDER", "ZNOTE", "ZATTACHMENT"]),
                .init(store: ContainerLocation(.caches, "Cache.sqlite"), tables: ["ZTHUMBNAIL"]),
            ], discard: ["ZLOG"])
        }
        let root = try scratch.copy(master, as: "run")
        benchmark.startMeasurement()
        blackHole(try await Upgrader(container: .iOSSandbox(root: root)).upgrade(plan))
        benchmark.stopMeasurement()
    }
}
