import Backstage
import BackstageExport
import Benchmark
import BenchmarkSupport
import Foundation

/// Importing a tar.gz of 200 text notes (8 MB) into an empty container: every entry checked,
/// staged, synced and moved in.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("import")
    let source = scratch.url.appending(path: "source")
    let archive = scratch.url.appending(path: "notes.tar.gz")

    Benchmark("Import8MBTarGz", configuration: configuration(setup: {
        try makeDocuments(at: source.appending(path: "Documents"), files: 200, bytesEach: 40_000)
        try await Exporter(container: .iOSSandbox(root: source)).export(to: archive, options: ExportOptions(format: .tarGz))
    }, teardown: {
        scratch.remove()
    })) { benchmark in
        let target = scratch.url.appending(path: "target")
        try? FileManager.default.removeItem(at: target)
        // An app's container exists before anything is imported into it (import refuses a missing one).
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        // Import makes the staged tree durable with one syncfs, which also flushes whatever else is
        // dirty on the file system: flush the previous iterations' and suites' writes first.
        sync()
        benchmark.startMeasurement()
        blackHole(try await Importer(container: .iOSSandbox(root: target)).importArchive(archive))
        benchmark.stopMeasurement()
    }
}
