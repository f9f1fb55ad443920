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

        var bench = ScalingBench(
            executable: URL(filePath: backstageExecutable), fileCounts: [2_000, 200], workspace: folder.url)
        bench.caches = [.warm, .cold]
        // The control the cold runs write "3" to: a file of the test's, not the machine's page cache.
        let control = folder.url.appending(path: "drop_caches")
        try Data().write(to: control)
        bench.pageCache = PageCache(control: control.path)
        let report = try bench.run()

        #expect(report.trees.count == 2 * 2 * 2 * ScalingBench.treeOperations.count)
        for cache in [BenchCache.warm, .cold] {
            for shape in ScalingTree.Shape.allCases {
                for files in [200, 2_000] {
                    let rows = report.trees.filter { $0.shape == shape && $0.files == files && $0.cache == cache }
                    #expect(rows.map(\.operation) == ScalingBench.treeOperations, "\(shape) \(files) \(cache)")
                    for row in rows {
                        #expect(row.seconds > 0 && row.microsecondsPerFile > 0, "\(row.operation) \(shape) \(files)")
                        #expect(row.peakBytes > 0, "\(row.operation): the child's peak is measured")
                        #expect(row.peakBytes < parent, "\(row.operation): the child's own peak, not the parent's size")
                        #expect(row.diskReadBytes != nil, "\(row.operation): the child's disk reads are measured")
                    }
                }
            }
        }
        let drops = 1 + 2 * 2 * ScalingBench.treeOperations.count
        #expect(
            try String(contentsOf: control, encoding: .utf8) == String(repeating: "3\n", count: drops),
            "the probe, then each cold run dropped the caches")
        let growth = report.targets.filter { $0.name.contains("time per file") }
        #expect(growth.count == 2 * 2 * ScalingBench.treeOperations.count, "each operation, shape and cache")
        #expect(growth.contains { $0.name.hasPrefix("import tar.zst · deep, cold: time per file at 2000 over 200") })
        #expect(report.targets.contains { $0.name.hasPrefix("peak RSS") })
        #expect(report.table.split(separator: "\n").contains { $0.contains(" cold  audit ") })
        #expect(ballast[4096] == 1)
    }

    /// GNU time's figures are its last line's two numbers, whatever comes before it; anything else is none.
    @Test func timeFiguresAreReadFromTheLastLineOnly() {
        func figures(_ text: String) -> [Int64]? { ChildProcess.timeFigures(text).map { [$0.0, $0.1] } }
        #expect(figures("2048 16\n") == [2048 * 1024, 16 * 512])
        #expect(figures("Command exited with non-zero status 3\n2048 16\n") == [2048 * 1024, 16 * 512])
        #expect(ChildProcess.timeFigures("Command terminated by signal 9\n") == nil)
        #expect(ChildProcess.timeFigures("") == nil && ChildProcess.timeFigures("x 16\n") == nil)
    }

    @Test func treesAreTimedWarmOnlyWhenTheCachesCannotBeDropped() throws {
        let folder = try TemporaryDirectory()
        var bench = ScalingBench(executable: URL(filePath: backstageExecutable), fileCounts: [50], workspace: folder.url)
        bench.shapes = [.flat]
        bench.caches = [.warm, .cold]
        bench.pageCache = PageCache(control: folder.path + "/absent/drop_caches")
        let report = try bench.run()
        #expect(report.trees.map(\.cache) == Array(repeating: .warm, count: ScalingBench.treeOperations.count))
        #expect(report.notes.contains { $0.hasPrefix("no cold runs: writing to \(folder.path)/absent/drop_caches") })
        bench.caches = [.cold]
        #expect(throws: BenchError.self, "cold alone, and cold refused: nothing to time") { try bench.run() }
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
            [
                "bench", "--files", "100", "--cache", "warm", "--workspace", scratch.path + "/work", "--json", json,
                "--allow-debug",
            ])
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

    // MARK: The large store beside its baselines

    /// The store rows of a report: (operation, baseline) for those with a baseline's fields.
    static let storeTargets: [(operation: String, baseline: String, title: String)] = [
        (BenchTarget.Name.relocateCopy, BenchTarget.Name.durableMove, "relocate across file systems"),
        ("split", BenchTarget.Name.vacuumInto, "split"),
        ("migrate", BenchTarget.Name.migrateShell, "schema migration step (journal, lock, migration, checkpoint)"),
    ]

    @Test func benchStoreSizeTimesEachBaselineBesideBackstageWithItsRatioAndTarget() throws {
        let scratch = try TemporaryDirectory()
        let json = scratch.path + "/large.json"
        let run = try runProcess(
            backstageExecutable,
            [
                "bench", "--files", "100", "--store-size", "4MB", "--runs", "1", "--cache", "warm", "--workspace",
                scratch.path + "/work", "--json", json, "--allow-debug",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(filePath: json))) as? [String: Any]
        let store = object?["store"] as? [[String: Any]] ?? []
        #expect(store.count == 4, "rename, copy, split, migrate")
        for (operation, baseline, title) in Self.storeTargets {
            let row = store.first { $0["operation"] as? String == operation } ?? [:]
            #expect(row["baseline"] as? String == baseline, "\(operation)")
            let seconds = row["seconds"] as? Double ?? 0, baselineSeconds = row["baselineSeconds"] as? Double ?? 0
            #expect(seconds > 0 && baselineSeconds > 0, "\(operation): both sides timed")
            let ratio = row["ratio"] as? Double ?? 0
            #expect(abs(ratio - seconds / baselineSeconds) <= 1e-9 * ratio, "\(operation): one run, its own ratio")
            #expect((row["baselinePeakBytes"] as? Int ?? 0) > 0 && (row["peakBytes"] as? Int ?? 0) > 0)
            #expect(row["cache"] as? String == "warm" && row["runs"] as? Int == 1)
            let targets = object?["targets"] as? [[String: Any]] ?? []
            #expect(
                targets.contains { ($0["name"] as? String ?? "").hasPrefix("\(title) · store of ") },
                "\(operation): its design target checked")
        }
        func row(_ operation: String) -> [String: Any] { store.first { $0["operation"] as? String == operation } ?? [:] }
        // The baselines of `bench --sizes`, and each checked to have done its work.
        let move = row(BenchTarget.Name.relocateCopy)
        #expect((move["baselineCommand"] as? String ?? "").contains("cp -r --reflink=never \"$1\" \"$2\"/ && sync -f"))
        #expect((move["baselineDid"] as? String ?? "").contains("source removed"))
        #expect(row("split")["baselineCommand"] as? String == "\"$1\" \"$2\" \"VACUUM INTO '$3'\" && sync -f \"$3\"")
        let vacuum = row("split")["baselineDid"] as? String ?? ""
        let rows = 4_000_000 / 8_300
        #expect(vacuum.hasPrefix("vacuum.sqlite: ") && vacuum.hasSuffix("item and attachment to ids \(rows) \(rows)"))
        #expect(
            row("migrate")["baselineCommand"] as? String
                == "\"$1\" \"$2\" \"PRAGMA synchronous=FULL; BEGIN; ALTER TABLE item ADD COLUMN flag INTEGER NOT NULL "
                + "DEFAULT 0; CREATE INDEX item_title ON item(title); COMMIT;\" >/dev/null")
        #expect(row("migrate")["baselineDid"] as? String == "item.flag and index item_title in Big.sqlite")
        #expect(row("relocate · rename")["baseline"] == nil)
        #expect((object?["notes"] as? [String] ?? []).contains { $0.contains("rename has no baseline target") })
        #expect(run.stdout.contains("VACUUM INTO + fsync") && run.stdout.contains("(no baseline target)"))

        let replot = try runProcess(backstageExecutable, ["bench", "--replot", json])
        #expect(replot.status == 0, "\(replot.stderr)")
        #expect(replot.stdout.contains("sqlite3 shell, synchronous=FULL") && replot.stdout.contains("µs/file"))
    }

    @Test func storeRunsAlternateBackstageAndItsBaselineAndReportTheSpread() throws {
        let scratch = try TemporaryDirectory()
        var bench = ScalingBench(executable: URL(filePath: backstageExecutable), fileCounts: [], workspace: scratch.url)
        bench.storeBytes = 2 << 20
        bench.storeRuns = 2
        var order: [String] = []
        bench.log = { order.append($0) }
        let report = try bench.run()
        #expect(report.store.map(\.operation) == ["relocate · rename"] + Self.storeTargets.map(\.operation))
        for row in report.store where row.baseline != nil {
            #expect(row.runs == 2 && row.cache == .warm)
            let (low, ratio, high) = (row.ratioLow ?? .nan, row.ratio ?? .nan, row.ratioHigh ?? .nan)
            #expect(low <= ratio && ratio <= high, "\(row.operation): the median within its spread")
        }
        let split = order.filter { $0.hasPrefix("split ·") || $0.hasPrefix("VACUUM INTO") }
        // One untimed run of the baseline first (the first run after an idle spell pays for the
        // memory its host took back), then each pair's first side inherits the machine as the one
        // before left it: the order alternates.
        #expect(split.first?.hasSuffix("warm-up (not timed)") == true, "\(split)")
        #expect(split.dropFirst().map { $0.hasPrefix("split") } == [true, false, false, true], "\(split)")
        #expect(order.filter { $0.hasSuffix("warm-up (not timed)") }.count == 3, "one per operation with a baseline")
        #expect(report.targets.filter { $0.name.contains(", warm: ") }.count == 3)
    }

    /// A machine that gives its freed memory back to its host (a VM's balloon) is told apart from
    /// one that keeps it: the order Linux reports from, up to its largest block (2^10 pages).
    @Test func freePageReportingIsReadFromItsControl() throws {
        let scratch = try TemporaryDirectory()
        let control = scratch.url.appending(path: "page_reporting_order")
        try Data("9\n".utf8).write(to: control)
        #expect(ScalingBench.freePageReportingOrder(control: control.path) == 9)
        try Data("11\n".utf8).write(to: control)
        #expect(ScalingBench.freePageReportingOrder(control: control.path) == nil, "above every block: none reported")
        #expect(ScalingBench.freePageReportingOrder(control: scratch.path + "/absent") == nil)
    }

    @Test func oldStoreRowsStillLoadAndNewOnesAreCheckedAgainstTheDesignLimits() throws {
        // Tree rows from before the trees were timed per cache: no cache, no disk reads.
        let old = """
            {"date": "2026-11-25T14:00:00Z", "machine": "2 cores", "debugBuild": false, "notes": [],
             "trees": [{"shape": "deep", "files": 10000, "operation": "audit", "seconds": 1.0, "peakBytes": 1},
                       {"shape": "deep", "files": 1000000, "operation": "audit", "seconds": 580, "peakBytes": 1}],
             "store": [{"operation": "split", "bytes": 1000000000, "seconds": 3.0, "peakBytes": 40000000}]}
            """
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var report = try decoder.decode(ScalingReport.self, from: Data(old.utf8))
        #expect(report.trees.map(\.cache) == [nil, nil] && report.trees.map(\.diskReadBytes) == [nil, nil])
        #expect(report.table.contains("MISSED audit · deep: time per file at 1000000 over 10000: 5.80×"))
        report.trees = []
        #expect(report.store.first?.baseline == nil && report.store.first?.ratio == nil)
        #expect(report.table.contains("split") && !report.table.contains("MISSED"))
        let scratch = try TemporaryDirectory()
        try Data(old.utf8).write(to: scratch.url.appending(path: "old.json"))
        let replot = try runProcess(backstageExecutable, ["bench", "--replot", scratch.path + "/old.json"])
        #expect(replot.status == 0 && replot.stdout.contains("split"), "\(replot.stderr)")

        var split = report.store[0]
        split.cache = .cold
        split.baseline = BenchTarget.Name.vacuumInto
        split.baselineSeconds = 2.5
        split.ratio = 1.2
        split.ratioLow = 1.1
        split.ratioHigh = 1.3
        var migrate = ScalingReport.StoreRow(operation: "migrate", bytes: 1_000_000_000, seconds: 1, peakBytes: 1)
        migrate.cache = .cold
        migrate.baseline = BenchTarget.Name.migrateShell
        migrate.baselineSeconds = 1
        migrate.ratio = 1.1
        report.store = [split, migrate]
        let lines = report.table.split(separator: "\n")
        #expect(lines.contains("MISSED split · store of 1 GB, cold: split over VACUUM INTO + fsync ≤ 1.00×: 1.20× (1.10–1.30×)"))
        #expect(lines.contains { $0.hasPrefix("met    schema migration step") && $0.hasSuffix("≤ 1.10×: 1.10×") })
    }
}
