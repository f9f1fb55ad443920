import Backstage
import Benchmark
import BenchmarkSupport
import Foundation

/// Moving the v1 store (8 MB with its WAL-free main file and Core Data support folder) out of
/// Documents: a rename on one file system, a verified copy to /dev/shm across file systems.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("relocation")
    let master = scratch.url.appending(path: "master")
    let size: Int64 = 8_000_000

    Benchmark("RelocateRename8MB", configuration: configuration(setup: {
        _ = try makeFixture(layout: "v1", bytes: size, at: master)
    })) { benchmark in
        let root = try scratch.copy(master, as: "run")
        benchmark.startMeasurement()
        let report = try await Relocator(container: .iOSSandbox(root: root)).relocate(RelocationOptions(strategy: .rename))
        blackHole(report)
        benchmark.stopMeasurement()
    }

    Benchmark("RelocateCopyToDevShm8MB", configuration: configuration(setup: {
        _ = try makeFixture(layout: "v1", bytes: size, at: master)
    }, teardown: {
        scratch.remove()
    })) { benchmark in
        let shm = Scratch("relocation", base: "/dev/shm")
        defer { shm.remove() }
        let root = try scratch.copy(master, as: "run")
        try? FileManager.default.removeItem(at: shm.url.appending(path: "support"))
        let container = AppContainer(documents: root.appending(path: "Documents"), applicationSupport: shm.url.appending(path: "support"),
                                     caches: root.appending(path: "Library/Caches"), temporary: root.appending(path: "tmp"))
        benchmark.startMeasurement()
        let report = try await Relocator(container: container).relocate(RelocationOptions(strategy: .copy))
        blackHole(report)
        benchmark.stopMeasurement()
    }
}
