import Backstage
import Foundation

/// Measures Backstage against the baselines a developer would compare with, on the same data, in
/// one run: each case runs as a child process (so its peak memory is its own), cases are
/// interleaved run by run, each Backstage case beside its baselines, and medians are reported.
/// Every case is timed warm (what it reads was just read into the page cache) and cold (every cache
/// dropped with `sync; echo 3 > /proc/sys/vm/drop_caches` before each run of either side); when the
/// cache cannot be dropped the report says why and has no cold figures.
///
/// For each size it builds a v1 container of the sample app (the store in Documents), a Documents
/// tree of that size and a tree of incompressible files, then times (the targets of issue 31):
/// `backstage relocate` by rename and by copy to `/dev/shm` against `cp` + fsync + `rm` + fsync of
/// the source folder; a split against `VACUUM INTO` + fsync; a schema migration step against the
/// `sqlite3` shell running the same SQL with `synchronous=FULL`; export zip against `bsdtar`, and
/// of the incompressible tree against `cp` + fsync; tar.gz against GNU `tar -I pigz` and tar.zst
/// against `tar -I 'zstd -T0'` (each baseline fsyncs its archive, as Backstage does); import
/// against `bsdtar -xf` + `sync -f`; fixture generation against the `sqlite3` shell inserting the
/// same rows; and `needsUpgrade` in process against the bare system calls it cannot avoid.
public struct BenchRunner {
    /// The `backstage` executable.
    public var executable: URL
    public var sizes: [Int64]
    public var runs: Int
    /// Where data is generated (a disk file system); `/dev/shm` is the other file system.
    public var workspace: URL
    public var crossDevice = URL(filePath: "/dev/shm")
    public var budget = Upgrader.defaultBudget
    /// Called before each step with what it is and the fraction of the runs done, for progress.
    public var log: (String, Double) -> Void = { _, _ in }
    /// Called before each timed run with the runs timed so far, the runs in all and what it is,
    /// for a progress line with the time left.
    public var progress: (_ done: Int, _ total: Int, _ what: String) -> Void = { _, _, _ in }
    /// Apps whose fixture generation is timed against the `sqlite3` shell, beside the Notes
    /// sample's: catalogs captured from real stores (`backstage catalog init`).
    public var generationCatalogs: [CatalogFolder] = []
    /// SQL schema files (`CREATE TABLE ...`) whose generation is timed too: each is run into an
    /// empty store in the workspace and captured as a catalog named after the file.
    public var generationSchemas: [URL] = []
    /// The size the schema migration step is timed at; nil: at every size of `sizes`.
    public var migrationSize: Int64?
    /// The caches each case is timed with: warm, cold, or both (the default).
    public var caches: [BenchCache] = BenchCache.allCases
    /// How cold runs drop the page cache.
    public var pageCache = PageCache()

    public init(executable: URL, sizes: [Int64], runs: Int = 3, workspace: URL) {
        self.executable = executable
        self.sizes = sizes
        self.runs = max(1, runs)
        self.workspace = workspace
    }

    /// One timed command: how to prepare its run folder, and what to run.
    struct Case {
        var name: String
        var kind: BenchResult.Kind
        var bytes: Int64
        var baselines: [String] = []
        /// What it may read besides its run folder (its size's data): dropped from the page cache
        /// before it runs, with the run folder.
        var inputs: [URL] = []
        var prepare: (URL) throws -> Void = { _ in }
        var command: (URL) -> (executable: String, arguments: [String], environment: [String: String]?)
    }

    public func run() throws -> BenchReport {
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: workspace, withIntermediateDirectories: true)
        var skipped: [String] = []
        let tools = ["sqlite3", "bsdtar", "zstd", "pigz", "python3", "tar"].filter { which($0) == nil }
        if !tools.isEmpty { skipped.append("missing tools: \(tools.joined(separator: ", "))") }
        var caches = self.caches
        var coldUnavailable: String?
        if caches.contains(.cold), let refused = pageCache.drop() {
            coldUnavailable = refused
            caches.removeAll { $0 == .cold }
        }
        let cases = try allCases(skipping: &skipped)
        var samples: [String: [Double]] = [:]
        var peaks: [String: Int64] = [:]
        var commands: [String: String] = [:]
        let total = Double(runs * caches.count * cases.count)
        var done = 0.0
        for run in 1...runs {
            for cache in caches {
                // A case inherits the machine as the one before it left it (memory just freed,
                // write-back under way): every other run goes through the cases backwards, so
                // that each Backstage case runs as often after its baselines as before them.
                for item in run.isMultiple(of: 2) ? Array(cases.reversed()) : cases {
                    let what = "run \(run)/\(runs), \(cache): \(item.name) at \(BenchReport.size(item.bytes))"
                    log(what, done / total)
                    progress(Int(done), Int(total), what)
                    let measured = try time(item, cache: cache)
                    let key = "\(item.name)@\(item.bytes)@\(cache)"
                    commands[item.name] = commands[item.name] ?? Self.text(of: item.command(workspace))
                    samples[key, default: []].append(measured.seconds)
                    peaks[key] = max(peaks[key] ?? 0, measured.peakBytes)
                    done += 1
                }
            }
        }
        var results = caches.flatMap { cache in
            cases.map { item in
                let key = "\(item.name)@\(item.bytes)@\(cache)"
                var result = BenchResult(
                    name: item.name, kind: item.kind, bytes: item.bytes, runs: samples[key] ?? [0],
                    peakBytes: peaks[key] ?? 0, baselines: item.baselines, cache: cache)
                result.command = commands[item.name]
                return result
            }
        }
        log("timing needsUpgrade", 1)
        let launchCheck = try measureNeedsUpgrade(caches: caches)
        results += launchCheck.results
        var report = BenchReport(
            date: Date(), machine: Self.machine(), runsPerCase: runs, sizes: sizes, results: results,
            needsUpgradeMicroseconds: launchCheck.steady, budget: budget, skipped: skipped)
        report.needsUpgradeDocumentsChangedMicroseconds = launchCheck.documentsChanged
        report.coldUnavailable = coldUnavailable
        return report
    }

    /// Every case of every size, each Backstage case followed by its baselines.
    private func allCases(skipping skipped: inout [String]) throws -> [Case] {
        var cases: [Case] = []
        let catalogs = try [CatalogFolder.notes()] + generationCatalogs + schemaCatalogs(skipping: &skipped)
        for size in sizes {
            log("preparing \(BenchReport.size(size))", 0)
            let prepared = try prepare(size: size)
            cases += makeCases(prepared, skipping: &skipped)
            cases += incompressibleCases(try prepareIncompressible(size: size))
            if migrationSize == nil { cases += migrationCases(prepared) }
            if which("sqlite3") != nil {
                for (index, catalog) in catalogs.enumerated() {
                    log("preparing generation of \(catalog.manifest.app) at \(BenchReport.size(size))", 0)
                    cases += try generationCases(catalog, bundled: index == 0, size: size)
                }
            }
        }
        if let migrationSize {
            log("preparing the migration at \(BenchReport.size(migrationSize))", 0)
            cases += migrationCases(try prepare(size: migrationSize, documents: false))
        }
        return cases
    }

    /// One run of `item`: its folder prepared, nothing left to write back, then its inputs read into
    /// the page cache (warm) or every cache dropped (cold), and the command timed.
    private func time(_ item: Case, cache: BenchCache) throws -> ChildProcess.Measurement {
        let fileManager = FileManager.default
        let folder = workspace.appending(path: "run", directoryHint: .isDirectory)
        try? fileManager.removeItem(at: folder)
        try fileManager.createDirectory(at: folder, withIntermediateDirectories: true)
        try item.prepare(folder)
        // Each case starts with nothing of the last one's still to write back: its writeback would
        // slow this one, and on ext4 without a journal, files deleted while their inode blocks are
        // dirty make every file creation scan past them.
        try pageCache.settle(cache, reading: item.inputs + [folder])
        let command = item.command(folder)
        let measured = try ChildProcess.measure(
            URL(filePath: command.executable), command.arguments, environment: command.environment)
        guard measured.status == 0 else {
            throw BenchError(
                message:
                    "\(item.name) at \(BenchReport.size(item.bytes)) failed (exit \(measured.status)): \(measured.stderr)"
            )
        }
        try? fileManager.removeItem(at: folder)
        try? fileManager.removeItem(at: crossDevice.appending(path: shmFolder))
        return measured
    }

    // MARK: Data

    struct Prepared {
        var size: Int64
        /// A v1 container: the store (and its support folder) in Documents.
        var container: URL
        var storeBytes: Int64
        /// A Documents tree of about `size` bytes, and its tar.gz.
        var documents: URL
        var documentsBytes: Int64
        var archive: URL

        /// Everything a case of this size may read.
        var inputs: [URL] { [container, documents, archive] }
    }

    var shmFolder: String { "backstage-bench-\(getpid())" }

    /// The v1 container of `size`, and unless `documents` is false the Documents tree and its archive.
    private func prepare(size: Int64, documents withDocuments: Bool = true) throws -> Prepared {
        let folder = workspace.appending(path: "data-\(size)", directoryHint: .isDirectory)
        let container = folder.appending(path: "store", directoryHint: .isDirectory)
        if !FileManager.default.fileExists(atPath: container.path) {
            _ = try FixtureGenerator(executable: executable, catalog: try CatalogFolder.notes()).generate(
                FixtureSpec(layout: "v1", size: size, state: .clean, seed: 1), at: container)
        }
        let store = container.appending(path: "Documents/Notes.sqlite").path
        let support = container.appending(path: "Documents/.Notes_SUPPORT").path
        let fileSystem = FileSystem()
        let storeBytes = (try fileSystem.status(store)?.size ?? 0) + (try fileSystem.treeSize(support))
        let documents = folder.appending(path: "tree", directoryHint: .isDirectory)
        let archive = folder.appending(path: "tree.tar.gz")
        guard withDocuments else {
            return Prepared(
                size: size, container: container, storeBytes: storeBytes, documents: documents, documentsBytes: 0,
                archive: archive)
        }
        if !FileManager.default.fileExists(atPath: documents.path) {
            try Self.writeDocuments(at: documents.appending(path: "Documents"), bytes: size)
        }
        let documentsBytes = try fileSystem.treeSize(documents.path)
        if !FileManager.default.fileExists(atPath: archive.path) {
            let made = try ChildProcess.measure(
                executable, ["export", documents.path, "-o", archive.path], environment: nil)
            guard made.status == 0 else { throw BenchError(message: "exporting the tree failed: \(made.stderr)") }
        }
        return Prepared(
            size: size, container: container, storeBytes: storeBytes, documents: documents,
            documentsBytes: documentsBytes, archive: archive)
    }

    /// Text notes in 40 folders (60 % of the bytes, compressible) and 20 MB media files half
    /// random, half text — what a notes app's Documents looks like to a compressor.
    static func writeDocuments(at folder: URL, bytes: Int64) throws {
        var random = SeededRandom(seed: 7)
        let words = (0..<4000).map { _ in
            String(decoding: random.bytes(Int(random.next() % 8) + 2).map { 97 + $0 % 26 }, as: UTF8.self)
        }
        func text(_ count: Int) -> Data {
            var out = [UInt8]()
            out.reserveCapacity(count + 16)
            while out.count < count {
                out += Array(words[Int(random.next() % UInt64(words.count))].utf8); out.append(32)
            }
            return Data(out.prefix(count))
        }
        var written: Int64 = 0
        var n = 0
        let media = folder.appending(path: "Media", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        while written + (20 << 20) <= bytes * 4 / 10 {
            try (Data(random.bytes(10 << 20)) + text(10 << 20)).write(to: media.appending(path: "clip \(n).bin"))
            written += 20 << 20
            n += 1
        }
        while written < bytes {
            let notes = folder.appending(path: "Notes/\(n % 40)", directoryHint: .isDirectory)
            try FileManager.default.createDirectory(at: notes, withIntermediateDirectories: true)
            let count = 2_000 + Int(random.next() % 58_000)
            try text(count).write(to: notes.appending(path: "note \(n).txt"))
            written += Int64(count)
            n += 1
        }
    }

    /// `backstage fixture` making the first version of `catalog` at `size`, against the `sqlite3`
    /// shell inserting as many rows of the same kinds and sizes with `generate_series`
    /// (``SchemaGenerator/shellScript(rows:externalDataFolder:)``), its Core Data external data
    /// written with the shell's `writefile()`. Both time the stores only: the fixture's few
    /// documents are a fraction of a percent.
    /// `bundled`: the Notes sample, which `backstage fixture` finds without `--catalog`.
    private func generationCases(_ catalog: CatalogFolder, bundled: Bool, size: Int64) throws -> [Case] {
        guard let first = catalog.manifest.versions.first else { return [] }
        let app = catalog.manifest.app
        let folder = workspace.appending(path: "data-\(size)/generate-\(app)", directoryHint: .isDirectory)
        let made = folder.appending(path: "fixture")
        if !FileManager.default.fileExists(atPath: made.path) {
            _ = try FixtureGenerator(executable: executable, catalog: catalog).generate(
                FixtureSpec(layout: first.name, size: size, state: .clean, seed: 1), at: made)
        }
        let container = catalog.container(at: made)
        let fileSystem = FileSystem()
        var bytes: Int64 = 0
        var shell = ""
        for (index, store) in first.stores.enumerated() {
            let set = StoreFileSet(main: store.location.url(in: container))
            bytes +=
                (try fileSystem.status(set.main.path)?.size ?? 0) + (try fileSystem.treeSize(set.supportFolder.path))
            let rows = try StoreInspector.rowCounts(of: set)
            let script = folder.appending(path: "store-\(index).sql")
            // Its external data too, with the shell's writefile(), relative to the run's folder.
            let external = ".store-\(index)_SUPPORT/_EXTERNAL_DATA"
            try Data(
                try SchemaGenerator(schema: try catalog.schema(of: store), seed: 1).shellScript(
                    rows: rows, externalDataFolder: external
                ).utf8
            ).write(to: script)
            shell +=
                (shell.isEmpty ? "cd \"$1\" && " : " && ")
                + "mkdir -p '\(external)' && sqlite3 store-\(index).sqlite \".read '\(script.path)'\" >/dev/null"
        }
        let baseline = "sqlite3 shell · \(app)"
        return [
            Case(name: "generate · \(app)", kind: .backstage, bytes: bytes, baselines: [baseline]) { run in
                (
                    executable.path,
                    [
                        "fixture", run.appending(path: "f").path, "--layout", first.name, "--size", "\(size)B",
                        "--state", "clean", "--seed", "1",
                    ]
                        + (bundled ? [] : ["--catalog", catalog.url.path]), nil
                )
            },
            Case(name: baseline, kind: .baseline, bytes: bytes) { run in
                ("/bin/sh", ["-c", shell, "sh", run.path], nil)
            },
        ]
    }

    static let splitPlan = """
        {"name": "split", "steps": [{"split": {"store": "documents/Notes.sqlite",
          "into": [{"store": "applicationSupport/UserData.sqlite", "tables": ["Z_PRIMARYKEY", "Z_METADATA", "ZFOLDER", "ZNOTE", "ZATTACHMENT"]},
                   {"store": "caches/Cache.sqlite", "tables": ["ZTHUMBNAIL"]}], "discard": ["ZLOG"]}}]}
        """

    // MARK: Helpers

    /// A command as the report shows it: a shell script's text, else the program and its arguments.
    static func text(of command: (executable: String, arguments: [String], environment: [String: String]?)) -> String {
        if command.executable == "/bin/sh", command.arguments.count > 1, command.arguments[0] == "-c" {
            return command.arguments[1]
        }
        return ([URL(filePath: command.executable).lastPathComponent] + command.arguments).joined(separator: " ")
    }

    static func copy(_ source: URL, to target: URL) throws {
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        let result = try ChildProcess.run(
            URL(filePath: "/bin/cp"), ["-a", "--reflink=never", source.path, target.path])
        guard result.status == 0 else { throw BenchError(message: "cp \(source.path): \(result.stderr)") }
    }

    func which(_ tool: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].map { $0 + tool }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    static func machine() -> String {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
            .first { $0.hasPrefix("model name") }.map {
                $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            } ?? "unknown CPU"
        let memory = ProcessInfo.processInfo.physicalMemory >> 30
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores (\(cpu)), \(memory) GiB, Linux"
    }
}

/// A benchmark case that could not run.
public struct BenchError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
