import Backstage
import Foundation

/// What `simulate --json` writes: the runs, and what a shard's report needs to be merged with the
/// others — the catalog's fingerprint, the seed, the options that chose the matrix, the shard.
public struct SimulationReport: Sendable, Codable {
    /// The report format; a newer one is refused by ``merge(_:)``.
    public static let currentFormat = 1

    public var format: Int = Self.currentFormat
    /// The app the catalog describes.
    public var app: String
    /// The catalog's fingerprint (``CatalogFolder/fingerprint()``): shards of another catalog are refused.
    public var catalog: String
    public var seed: UInt64
    /// The options that chose the matrix, normalised (`--paths every --sizes 2000000 ...`):
    /// neither the shard nor where the output goes.
    public var command: [String]
    /// The part of the matrix this report holds; nil when it holds all of it (unsharded or merged).
    public var shard: Shard?
    /// The units of the whole matrix, and the positions among them this report ran.
    public var units: Int
    public var unitsRun: [Int]
    public var runs: [SimulationRun]
    /// The crash points (and other faults) the runs tried, each once, in the order of their labels.
    public var crashPointsTried: [SimulationRun.Fault]
    /// The power-cut states tried (each cut with unsynced writes kept, then, where a write was not
    /// yet fsynced, lost), and how many failed.
    public var powerLossStates: Int
    public var powerLossFailures: Int
    public var passed: Bool
    public var seconds: Double
    /// Where the runs' time went, by kind of run.
    public var costs: CostBreakdown
    /// The versions whose Core Data migration ran without version hashes (`--omit-missing-hashes`);
    /// nil when none did.
    public var versionHashesOmitted: [String]?

    public init(
        app: String, catalog: String, seed: UInt64, command: [String], shard: Shard?, units: Int, unitsRun: [Int],
        runs: [SimulationRun], seconds: Double
    ) {
        self.app = app
        self.catalog = catalog
        self.seed = seed
        self.command = command
        self.shard = shard
        self.units = units
        self.unitsRun = unitsRun
        self.runs = runs
        self.seconds = seconds
        crashPointsTried = Set(runs.compactMap(\.crashPoint)).sorted { $0.description < $1.description }
        let cuts = runs.filter { $0.crashPoint?.kind == .powerCut }
        powerLossStates = cuts.count
        powerLossFailures = cuts.filter { !$0.passed }.count
        passed = runs.allSatisfy(\.passed)
        costs = CostBreakdown(runs)
    }

    /// One report of the shards' reports, as the unsharded run would have written it: the runs in
    /// the matrix's order, one verdict. `reports` are the shards with the files they were read
    /// from, to name them.
    ///
    /// - Throws: ``SimulationMergeError`` naming the file when a report is not a shard, is of
    ///   another catalog, seed or command, when a shard is missing or given twice, or when two
    ///   shards ran the same unit.
    public static func merge(_ reports: [(file: String, report: SimulationReport)]) throws -> SimulationReport {
        guard let (firstFile, first) = reports.first else { throw SimulationMergeError(file: "", reason: .noReports) }
        var seen: [Int: String] = [:]
        var owner: [Int: String] = [:]
        for (file, report) in reports {
            guard report.format <= currentFormat else {
                throw SimulationMergeError(file: file, reason: .newerFormat(report.format))
            }
            guard let shard = report.shard else { throw SimulationMergeError(file: file, reason: .notAShard) }
            if report.catalog != first.catalog {
                throw SimulationMergeError(file: file, reason: .otherCatalog(report.catalog, first.catalog, firstFile))
            }
            if report.seed != first.seed {
                throw SimulationMergeError(file: file, reason: .otherSeed(report.seed, first.seed, firstFile))
            }
            if report.command != first.command || report.units != first.units {
                throw SimulationMergeError(
                    file: file,
                    reason: .otherCommand(
                        report.command.joined(separator: " "), first.command.joined(separator: " "), firstFile))
            }
            if shard.count != first.shard?.count {
                throw SimulationMergeError(
                    file: file, reason: .otherShardCount(shard.count, first.shard?.count ?? 0, firstFile))
            }
            if let other = seen[shard.index] {
                throw SimulationMergeError(file: file, reason: .duplicatedShard(shard, other))
            }
            seen[shard.index] = file
            for unit in report.unitsRun {
                if let other = owner[unit] {
                    throw SimulationMergeError(file: file, reason: .duplicatedUnit(unit, other))
                }
                owner[unit] = file
            }
        }
        let count = first.shard?.count ?? 0
        let missing = (1...max(count, 1)).filter { seen[$0] == nil }
        if !missing.isEmpty {
            throw SimulationMergeError(file: firstFile, reason: .missingShards(missing, of: count))
        }
        let runs = reports.flatMap(\.report.runs).enumerated().sorted { a, b in
            (a.element.unit ?? 0, a.offset) < (b.element.unit ?? 0, b.offset)
        }.map(\.element)
        return SimulationReport(
            app: first.app, catalog: first.catalog, seed: first.seed, command: first.command, shard: nil,
            units: first.units, unitsRun: owner.keys.sorted(), runs: runs,
            seconds: reports.map(\.report.seconds).max() ?? 0)
    }
}

/// Why shards' reports could not be merged, naming the report's file.
public struct SimulationMergeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var reason: Reason

    public enum Reason: Sendable, Hashable {
        case noReports
        case unreadable(String)
        case newerFormat(Int)
        /// The report is of an unsharded run (or already merged).
        case notAShard
        /// Found, expected, the file expected from.
        case otherCatalog(String, String, String)
        case otherSeed(UInt64, UInt64, String)
        case otherCommand(String, String, String)
        case otherShardCount(Int, Int, String)
        /// The shard, the other file that holds it.
        case duplicatedShard(Shard, String)
        case duplicatedUnit(Int, String)
        case missingShards([Int], of: Int)
    }

    public init(file: String, reason: Reason) {
        self.file = file
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .noReports: "no shard reports to merge"
        case .unreadable(let cause): "\(file) is not a simulate --json report: \(cause)"
        case .newerFormat(let format):
            "\(file) is a report of format \(format), newer than this backstage reads (\(SimulationReport.currentFormat))"
        case .notAShard: "\(file) is not a shard's report: it was made without --shard (or is already merged)"
        case .otherCatalog(let found, let expected, let other):
            "\(file) simulated another catalog (\(found.prefix(19))) than \(other) (\(expected.prefix(19)))"
        case .otherSeed(let found, let expected, let other):
            "\(file) was run with --seed \(found), \(other) with --seed \(expected)"
        case .otherCommand(let found, let expected, let other):
            "\(file) ran another matrix than \(other): `\(found)` against `\(expected)`"
        case .otherShardCount(let found, let expected, let other):
            "\(file) is a shard of \(found), \(other) of \(expected)"
        case .duplicatedShard(let shard, let other): "\(file) and \(other) are both shard \(shard)"
        case .duplicatedUnit(let unit, let other): "\(file) and \(other) both ran unit \(unit) of the matrix"
        case .missingShards(let missing, let count):
            "shard\(missing.count == 1 ? "" : "s") \(missing.map { "\($0)/\(count)" }.joined(separator: ", ")) missing: merge every shard's report"
        }
    }
}

/// A simulation that could not run as asked.
public enum SimulationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A unit names a crash point the path's chain does not pass.
    case unknownCrashPoint(CrashPoint, path: String)
    /// `backstage-simulate-child` is not beside `backstage` (a build or install without it).
    case childNotFound(path: String)

    public var description: String {
        switch self {
        case .unknownCrashPoint(let point, let path): "the chain of \(path) has no crash point \(point)"
        case .childNotFound(let path):
            "\(path) is missing: every simulated run runs it; build it beside backstage "
                + "(`swift build --product backstage-simulate-child`) or install both (`make install`)"
        }
    }
}

extension CatalogFolder {
    /// `sha256:…` of every file of the catalog (paths and bytes, in path order): two shards ran the
    /// same catalog when their fingerprints are equal.
    public func fingerprint() throws -> String {
        var hash = SHA256()
        let files = (FileManager.default.subpaths(atPath: url.path) ?? []).sorted()
        for path in files {
            var isFolder: ObjCBool = false
            let file = url.appending(path: path)
            guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isFolder), !isFolder.boolValue
            else { continue }
            hash.update(Array(path.utf8) + [0])
            hash.update(try Data(contentsOf: file))
            hash.update([0])
        }
        return "sha256:" + hash.finalize()
    }
}
