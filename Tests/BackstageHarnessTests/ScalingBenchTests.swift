import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

@Suite struct ScalingBenchTests {
    /// This process's resident memory now (VmRSS), in bytes.
    static func residentBytes() -> Int64 {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return (line?.split(separator: " ").dropFirst().first.flatMap { Int64($0) } ?? 0) * 1024
    }

    @Test func reportHasTimePerFileAndTheChildsPeakForEveryOperationAndShape() throws {
        let folder = try TemporaryDirectory()
        // A large parent: a child forked from it would count these 384 MB as its own peak.
        let ballast = UnsafeMutableRawBufferPointer.allocate(byteCount: 384 << 20, alignment: 4096)
        defer { ballast.deallocate() }
        ballast.initializeMemory(as: UInt8.self, repeating: 1)
        let parent = Self.residentBytes()
        #expect(parent > 384 << 20)

        let bench = ScalingBench(
            executable: URL(filePath: backstageExecutable), fileCounts: [2_000, 200], workspace: folder.url)
        let report = try bench.run()

        #expect(report.trees.count == 2 * 2 * ScalingBench.treeOperations.count)
        for shape in ScalingTree.Shape.allCases {
            for files in [200, 2_000] {
                let rows = report.trees.filter { $0.shape == shape && $0.files == files }
                #expect(rows.map(\.operation) == ScalingBench.treeOperations, "\(shape) \(files)")
                for row in rows {
                    #expect(row.seconds > 0 && row.microsecondsPerFile > 0, "\(row.operation) \(shape) \(files)")
                    #expect(row.peakBytes > 0, "\(row.operation): the child's peak is measured")
                    #expect(row.peakBytes < parent, "\(row.operation): the child's own peak, not the parent's size")
                }
            }
        }
        #expect(report.targets.filter { $0.name.contains("time per file") }.count == 2 * ScalingBench.treeOperations.count)
        #expect(report.targets.contains { $0.name.hasPrefix("peak RSS") })
        #expect(ballast[4096] == 1)
    }

    @Test func treesAreWrittenOnceAndKeptBetweenRuns() throws {
        let folder = try TemporaryDirectory()
        let deep = ScalingTree(shape: .deep, files: 300)
        let container = try deep.container(in: folder.url)
        let documents = container.appending(path: "Documents")
        let files = FileManager.default.enumerator(atPath: documents.path)!.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".txt") }
        #expect(files.count == 300)
        #expect(files.allSatisfy { $0.split(separator: "/").count == 9 }, "8 folders deep")
        let kept = documents.appending(path: files[0])
        try Data("changed".utf8).write(to: kept)
        _ = try deep.container(in: folder.url)
        #expect(try Data(contentsOf: kept) == Data("changed".utf8), "a complete tree is reused, not rewritten")

        let flat = try ScalingTree(shape: .flat, files: 100).container(in: folder.url)
        let folders = try FileManager.default.contentsOfDirectory(atPath: flat.appending(path: "Documents").path)
        #expect(folders.count == 16)
    }

    @Test func benchFilesPrintsAndWritesTheScalingReport() throws {
        let scratch = try TemporaryDirectory()
        let refused = try runProcess(
            backstageExecutable, ["bench", "--files", "100", "--svg", scratch.path + "/x.svg", "--allow-debug"])
        #expect(refused.status != 0 && refused.stderr.contains("with --files, use --json"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/x.svg"))

        let json = scratch.path + "/scale.json"
        let run = try runProcess(
            backstageExecutable,
            ["bench", "--files", "100", "--workspace", scratch.path + "/work", "--json", json, "--allow-debug"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("µs/file") && run.stdout.contains("import tar.zst"))
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(filePath: json))) as? [String: Any]
        #expect((object?["trees"] as? [Any])?.count == 2 * ScalingBench.treeOperations.count)
        #expect((object?["targets"] as? [Any])?.isEmpty == false)
    }

    @Test func jsonRoundTripsWithTheTargets() throws {
        var report = ScalingReport(date: Date(timeIntervalSince1970: 1_790_000_000), machine: "2 cores")
        report.trees = [
            .init(shape: .flat, files: 10_000, operation: "audit", seconds: 0.1, peakBytes: 20 << 20),
            .init(shape: .flat, files: 100_000, operation: "audit", seconds: 2.0, peakBytes: 70 << 20),
        ]
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(report)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"targets\""))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let back = try decoder.decode(ScalingReport.self, from: data)
        #expect(back.trees == report.trees)
        #expect(report.targets.map(\.met) == [false, false], "2.00× the time per file; 70 MB over 64 MB")
        #expect(report.table.contains("MISSED audit · flat: time per file at 100000 over 10000: 2.00×"))
    }
}
