import Backstage
import Foundation

extension CoreDataCatalog {
    /// A plan of a catalog whose Core Data migration does not know the destination's version hashes.
    public struct UnresolvedPlan: Sendable, Hashable, CustomStringConvertible {
        /// The catalog version the plan reaches.
        public var version: String
        /// The plan file, relative to the catalog folder.
        public var plan: String
        /// The program's source and destination model versions.
        public var migration: String
        /// What is unresolved, one sentence.
        public var reason: String

        public var description: String { "\(version) (\(plan), \(migration)): \(reason)" }
    }

    /// The plans of `catalog` with a `coreDataMigration` step whose program is unresolved and not run
    /// with `missingHashes: omitForTesting`: plans that are refused when read.
    public static func unresolvedPlans(in catalog: CatalogFolder) throws -> [UnresolvedPlan] {
        var result: [UnresolvedPlan] = []
        for version in catalog.manifest.versions {
            guard let file = version.plan else { continue }
            for step in try migrationSteps(in: catalog.url.appending(path: file)) {
                guard let program = try? decodedProgram(step), !program.unresolved.isEmpty,
                    step["missingHashes"] as? String != CoreDataMigrationProgram.MissingHashes.omitForTesting.rawValue
                else { continue }
                result.append(
                    UnresolvedPlan(
                        version: version.name, plan: file,
                        migration: "\(program.sourceVersion) → \(program.destinationVersion)",
                        reason: program.unresolved.map(\.description).joined(separator: "; ")))
            }
        }
        return result
    }

    /// A copy of `catalog` at `url` whose unresolved Core Data migrations run with
    /// `missingHashes: omitForTesting` (their stores then lack `NSStoreModelVersionHashes`: for
    /// simulations and benches of the table rewrites only), fingerprints updated; with the plans
    /// changed. `catalog` itself is left as it is.
    public static func omittingMissingHashes(
        of catalog: CatalogFolder, at url: URL
    ) throws -> (catalog: CatalogFolder, omitted: [UnresolvedPlan]) {
        let omitted = try unresolvedPlans(in: catalog)
        try FileManager.default.copyItem(at: catalog.url, to: url)
        var copy = try CatalogFolder(at: url)
        for plan in omitted {
            let file = url.appending(path: plan.plan)
            guard let changed = try planJSONOmittingMissingHashes(at: file) else { continue }
            try changed.write(to: file)
            for (v, version) in copy.manifest.versions.enumerated() where version.plan == plan.plan {
                copy.manifest.versions[v].frozen = try PlanFingerprint(of: UpgradePlan.load(from: file))
            }
        }
        try copy.writeManifest()
        return (copy, omitted)
    }

    /// The plan at `file` with its Core Data migrations run with `missingHashes: omitForTesting`:
    /// for reading what else the plan does (`catalog lint`), never to upgrade a user's store.
    ///
    /// - throws: `BackstageError` (`invalidPlan`) naming `file` when it is not a plan.
    public static func planOmittingMissingHashes(at file: URL) throws -> UpgradePlan {
        guard let changed = try planJSONOmittingMissingHashes(at: file) else { return try UpgradePlan.load(from: file) }
        let scratch = FileManager.default.temporaryDirectory.appending(path: "backstage-plan-\(UUID().uuidString).json")
        try changed.write(to: scratch)
        defer { try? FileManager.default.removeItem(at: scratch) }
        do {
            return try UpgradePlan.load(from: scratch)
        } catch let error as BackstageError {
            // Named after the user's file, not the scratch copy.
            throw BackstageError(error.cause, path: file.path, during: .checkingPlan)
        }
    }

    /// A copy in `folder` of the plan at `file` whose Core Data migrations run with
    /// `missingHashes: omitForTesting` (`simulate --plan FILE --omit-missing-hashes`); `file` itself
    /// when it is not a plan's JSON (reading it then names it).
    public static func planFileOmittingMissingHashes(at file: URL, in folder: URL) throws -> URL {
        guard let changed = try planJSONOmittingMissingHashes(at: file) else { return file }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let copy = folder.appending(path: "\(UUID().uuidString)-\(file.lastPathComponent)")
        try changed.write(to: copy)
        return copy
    }

    /// The JSON of the plan at `file` with `"missingHashes": "omitForTesting"` in each Core Data
    /// migration step; nil when it is not a plan's JSON.
    private static func planJSONOmittingMissingHashes(at file: URL) throws -> Data? {
        guard var json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any],
            var steps = json["steps"] as? [[String: Any]]
        else { return nil }
        for (index, step) in steps.enumerated() {
            guard var migration = step[StepKind.coreDataMigration.rawValue] as? [String: Any] else { continue }
            migration["missingHashes"] = CoreDataMigrationProgram.MissingHashes.omitForTesting.rawValue
            steps[index][StepKind.coreDataMigration.rawValue] = migration
        }
        json["steps"] = steps
        return try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .prettyPrinted])
    }

    private static func migrationSteps(in file: URL) throws -> [[String: Any]] {
        guard FileManager.default.fileExists(atPath: file.path),
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any],
            let steps = json["steps"] as? [[String: Any]]
        else { return [] }
        return steps.compactMap { $0[StepKind.coreDataMigration.rawValue] as? [String: Any] }
    }

    private static func decodedProgram(_ step: [String: Any]) throws -> CoreDataMigrationProgram? {
        guard let program = step["program"] else { return nil }
        return try JSONDecoder().decode(
            CoreDataMigrationProgram.self, from: JSONSerialization.data(withJSONObject: program))
    }
}
