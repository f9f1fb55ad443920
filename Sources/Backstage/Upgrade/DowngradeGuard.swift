import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation

/// The downgrade guard that holds whatever a run did: before the first step of a versioned chain
/// changes anything, the chain's versions are written to `applicationSupport/.backstage/versions`
/// (temp, fsync, rename), so an older build finds them even when the newer build's run was killed
/// mid-step (its journal removed the launch record), failed, or stopped after some steps. The
/// older build then refuses with ``BackstageError/Cause/newerStorage(version:known:)`` (a sibling
/// build, whose chain shares a version with it, with ``BackstageError/Cause/unknownStorage(version:known:)``):
/// it never recovers, finishes or forgets that build's step. The launch record still carries the
/// guard for the launch check once a run completes; this file carries it between. A run refused
/// before its first change puts the file back as it was (``ClaimedRecords``).
///
/// The file is JSON: `{"claimed": "v4", "known": ["v2", "v3", "v4"]}`, of any length.
struct DowngradeGuard: Codable, Equatable {
    /// The version the chain that wrote it set out to reach.
    var claimed: String
    /// The versions that chain knew.
    var known: [String]

    static func path(in container: AppContainer) -> String {
        container.backstageDirectory.appending(path: "versions").path
    }

    /// The guard a run left, nil when there is none or it cannot be read (then the launch record
    /// is the guard, as before this file existed).
    static func read(_ container: AppContainer, fileSystem: FileSystem) -> DowngradeGuard? {
        guard let bytes = try? fileSystem.readFile(path(in: container)) else { return nil }
        return try? JSONDecoder().decode(DowngradeGuard.self, from: Data(bytes))
    }

    /// True when a build knowing `versions` is older than the one that wrote this (as
    /// ``LaunchRecord/isNewer(than:)`` decides).
    func isNewer(than versions: [String]) -> Bool {
        !versions.contains(claimed) && Set(versions).isSubset(of: known)
    }

    /// True when a build knowing `versions` does not know the version this guard claims, though
    /// it shares one with the chain that wrote it (as ``LaunchRecord/isUnknown(to:)`` decides).
    func isUnknown(to versions: [String]) -> Bool {
        !versions.contains(claimed) && versions.contains(where: known.contains)
    }

    /// Throws when a newer build's run, or a sibling build's, started changing the storage: killed,
    /// refused or failed since.
    static func check(_ plan: UpgradePlan, in container: AppContainer, fileSystem: FileSystem) throws {
        let versions = plan.versions
        guard !versions.isEmpty, let found = read(container, fileSystem: fileSystem), found.isUnknown(to: versions)
        else { return }
        let path = container.applicationSupport.path
        throw found.isNewer(than: versions)
            ? BackstageError(.newerStorage(version: found.claimed, known: versions), path: path, during: .checkingPlan)
            : BackstageError(
                .unknownStorage(version: found.claimed, known: versions), path: path, during: .checkingPlan)
    }

    /// Records, before its first step changes anything, that a chain knowing `plan`'s versions
    /// runs. Written only when it says more than what is there (a newer chain, or none before).
    static func claim(_ plan: UpgradePlan, in container: AppContainer, fileSystem: FileSystem) throws {
        guard let last = plan.versions.last else { return }
        let mine = DowngradeGuard(claimed: last, known: plan.versions)
        if let found = read(container, fileSystem: fileSystem),
            found == mine || Set(mine.known).isSubset(of: found.known)
        {
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(mine)
        try fileSystem.createDirectories(container.backstageDirectory.path)
        try fileSystem.writeAtomically(Array(data), to: path(in: container))
    }
}
