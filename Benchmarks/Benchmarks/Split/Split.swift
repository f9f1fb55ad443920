import Backstage
import Benchmark
import BenchmarkSupport

/// The v2 → v3 split of the sample store (8 MB): notes, folders and attachments to UserData,
/// thumbnails to Cache, logs discarded, each target verified and fsynced.
let benchmarks: @Sendable () -> Void = {
    upgradeBenchmark("Split8MBInto2Stores", layout: "v2", plan: UpgradePlan(name: "split") {
        UpgradeStep.split(ContainerLocation(.applicationSupport, "Notes.sqlite"), into: [
            .init(store: ContainerLocation(.applicationSupport, "UserData.sqlite"), tables: ["Z_PRIMARYKEY", "Z_METADATA", "ZFOLDER", "ZNOTE", "ZATTACHMENT"]),
            .init(store: ContainerLocation(.caches, "Cache.sqlite"), tables: ["ZTHUMBNAIL"]),
        ], discard: ["ZLOG"])
    })
}
