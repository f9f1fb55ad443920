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

/// `files` compressible text files spread over 10 folders.
func makeDocuments(at folder: URL, files: Int, bytesEach: Int) throws {
    let words = ["note", "meeting", "lisbon", "café", "draft", "budget", "photo", "trip", "idea", "résumé"]
    var random = SystemRandomNumberGenerator()
    for n in 0..<files {
        let directory = folder.appending(path: "Folder \(n % 10)", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var text = ""
        while text.utf8.count < bytesEach { text += words[Int(random.next() % UInt64(words.count))] + " " }
        try Data(text.utf8.prefix(bytesEach)).write(to: directory.appending(path: "note \(n).txt"))
    }
}
