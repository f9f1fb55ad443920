import Backstage
import BackstageExport
import Benchmark
import BenchmarkSupport
import Foundation

/// Exporting a Documents tree of 200 text notes (8 MB) in the formats users pick most.
let benchmarks: @Sendable () -> Void = {
    let scratch = Scratch("export")
    let root = scratch.url.appending(path: "c")

    for (format, level) in [(ArchiveFormat.zip, 6), (.tarGz, 6), (.tarZst, 3)] {
        Benchmark("Export8MBAs\(format == .zip ? "Zip" : format == .tarGz ? "TarGz" : "TarZst")", configuration: configuration(setup: {
            try makeDocuments(at: root.appending(path: "Documents"), files: 200, bytesEach: 40_000)
        }, teardown: {
            scratch.remove()
        })) { benchmark in
            let exporter = Exporter(container: .iOSSandbox(root: root))
            let archive = scratch.url.appending(path: "out.\(format.rawValue)")
            for _ in benchmark.scaledIterations {
                blackHole(try await exporter.export(to: archive, options: ExportOptions(format: format, level: level)))
            }
        }
    }
}
