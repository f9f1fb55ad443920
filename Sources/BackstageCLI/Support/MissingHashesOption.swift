import ArgumentParser
import BackstageHarness
import Foundation

/// `--omit-missing-hashes`: run a catalog whose Core Data migrations lack the destination's version
/// hashes, leaving them out of the migrated stores (simulate, bench).
struct MissingHashesOption: ParsableArguments {
    @Flag(
        name: .customLong("omit-missing-hashes"),
        help:
            "Run Core Data migrations whose version hashes are unknown, leaving NSStoreModelVersionHashes out of the migrated stores (the app would refuse them): for timing and crash-testing the table rewrites only."
    )
    var omitMissingHashes = false

    /// `catalog`, or, with the flag and unresolved plans, a copy under `scratch` that runs them
    /// without hashes, with what was omitted.
    ///
    /// - throws: `ExitCode` (usage) after naming each unresolved plan, when the flag is not given.
    func load(_ catalog: CatalogFolder, scratch: URL) throws -> (CatalogFolder, [CoreDataCatalog.UnresolvedPlan]) {
        let unresolved = try CoreDataCatalog.unresolvedPlans(in: catalog)
        guard !unresolved.isEmpty else { return (catalog, []) }
        guard omitMissingHashes else {
            for plan in unresolved { Output.err("error: \(plan.version) (\(plan.migration)): \(plan.reason)") }
            Output.err(
                "The app's Core Data would refuse a store without them: give the hashes (catalog init --momd App.momd, "
                    + "or --from a store of that version), or pass --omit-missing-hashes to run the rewrites without them."
            )
            throw ExitCode(ExitStatus.usage)
        }
        return try CoreDataCatalog.omittingMissingHashes(of: catalog, at: scratch)
    }

    /// The line a report prints when hashes were omitted.
    static func note(_ omitted: [CoreDataCatalog.UnresolvedPlan]) -> String? {
        guard !omitted.isEmpty else { return nil }
        return "version hashes omitted (--omit-missing-hashes): "
            // One per migration: a version of several configuration stores migrates each of them.
            + omitted.map { "\($0.version) (\($0.migration))" }.reduce(into: [String]()) {
                if !$0.contains($1) { $0.append($1) }
            }.joined(separator: ", ")
            + ": the migrated stores lack NSStoreModelVersionHashes, which the app's Core Data would refuse"
    }
}
