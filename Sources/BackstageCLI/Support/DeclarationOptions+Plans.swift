import Backstage
import BackstageHarness
import Foundation

extension DeclarationOptions {
    /// The app's upgrade plans, oldest first: each `--plan` in the order given, then the plans of the
    /// `--catalog`, version by version. `import --restore-databases` restores a store snapshot where
    /// they move the store it was taken of.
    func upgradePlans() throws -> [UpgradePlan] {
        let workingDirectory = URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        var result = try plans.map { try UpgradePlan.load(from: URL(filePath: $0, relativeTo: workingDirectory)) }
        if let catalog {
            let folder = try CatalogFolder(
                at: URL(filePath: catalog, directoryHint: .isDirectory, relativeTo: workingDirectory)
                    .standardizedFileURL)
            if let first = folder.manifest.versions.first, let last = folder.manifest.versions.last {
                result += try folder.chain(from: first.name, to: last.name).map(\.plan)
            }
        }
        return result
    }
}
