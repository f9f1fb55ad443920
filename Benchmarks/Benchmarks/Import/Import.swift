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
        let documents = source.appending(path: "Documents")
        let words = ["note", "meeting", "lisbon", "café", "draft", "budget", "photo", "trip", "idea", "résumé"]
        for n in 0..<200 {
            let directory = documents.appending(path: "Folder \(n % 10)", directoryHint: .isDirectory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let text = (0..<8_000).map { words[($0 * 7 + n) % words.count] }.joined(separator: " ")
            try Data(text.utf8.prefix(40_000)).write(to: directory.appending(path: "note \(n).txt"))
        }
        try await Exporter(container: .iOSSandbox(root: source)).export(to: archive, options: ExportOptions(format: .tarGz))
    }, teardown: {
        scratch.remove()
    })) { benchmark in
        let target = scratch.url.appending(path: "target")
        try? FileManager.default.removeItem(at: target)
        // Import makes the staged tree durable with one syncfs, which also flushes whatever else is
        // dirty on the file system: flush the previous iterations' and suites' writes first.
        sync()
        benchmark.startMeasurement()
        blackHole(try await Importer(container: .iOSSandbox(root: target)).importArchive(archive))
        benchmark.stopMeasurement()
    }
}
