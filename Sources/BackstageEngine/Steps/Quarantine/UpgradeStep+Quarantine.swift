import BackstageModel
import BackstageSystem
import Foundation

extension StepKind {
    /// Sets strays aside: ``UpgradeStep/Quarantine``.
    public static let quarantine = StepKind(rawValue: "quarantine")
}

extension UpgradeStep {
    /// Moves orphan sidecars, Backstage temporaries and orphan support folders out of a folder
    /// (Documents by default) into quarantine.
    public static func quarantine(_ step: Quarantine) -> UpgradeStep { UpgradeStep(step) }

    /// ``quarantine(_:)`` of Documents.
    public static func quarantine() -> UpgradeStep {
        .quarantine(Quarantine())
    }

    /// The parameters of ``UpgradeStep/quarantine(_:)``.
    public struct Quarantine: Sendable, Hashable, Codable {
        /// The folder whose direct entries are checked; Documents by default.
        public var folder: ContainerLocation
        public init(folder: ContainerLocation = ContainerLocation(.documents, "")) {
            self.folder = folder
        }
        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            folder =
                try container.decodeIfPresent(ContainerLocation.self, forKey: .folder)
                ?? ContainerLocation(.documents, "")
        }
        private enum CodingKeys: String, CodingKey { case folder }
    }
}

extension UpgradeStep.Quarantine: StepDefinition {
    package static let kind = StepKind.quarantine
    /// A quarantine passes no boundary a crash test names: it keeps no journal.
    package static let phases: [StepPhase] = []
    package static var journaled: any JournaledStep.Type { QuarantineStep.self }

    public var description: String { "quarantine \(folder)" }

    package var locations: [ContainerLocation] { [folder] }

    package func firstLocation(where predicate: (ContainerLocation) -> Bool) -> ContainerLocation? {
        predicate(folder) ? folder : nil
    }

    /// A folder, not a store.
    package var storeFields: [(field: String, location: ContainerLocation)] { [] }
    package var launchLook: LaunchLook? { .folder(folder) }
    package var fieldProblems: [String] { [] }

    package func contradiction(after flow: inout PlanFlow, at index: Int) -> (field: String, reason: String)? { nil }

    package func isNeeded(in container: AppContainer, fileSystem: FileSystem, probe: inout some StoreProbe) -> Bool {
        if probe.isQuiet(folder, in: container, fileSystem: fileSystem) { return false }
        let path = folder.filePath(in: container)
        // A stray has a telling name (a sidecar suffix, a Backstage temporary, a Core Data
        // support folder): one listing without a stat rules them out, the usual launch.
        // A folder that cannot be read is not "nothing to quarantine": the run reads it and says why.
        do {
            guard try fileSystem.anyEntry(of: path, where: FileClassifier.mayBeStray) else { return false }
            let entries = try FileClassifier(fileSystem: fileSystem).scan(
                URL(filePath: path, directoryHint: .isDirectory), recursive: false, measuringFolders: false)
            return !FileClassifier.strays(in: entries).isEmpty
        } catch {
            return fileSystem.exists(path)
        }
    }

    package func estimate(_ estimator: inout StepEstimator) -> (bytes: Int64, seconds: Double)? {
        var probe = PlainProbe()
        guard isNeeded(in: estimator.container, fileSystem: estimator.fileSystem, probe: &probe) else { return nil }
        return (0, estimator.throughput.perStep)
    }

    package func run(_ run: StepRun) throws -> StepOutcome {
        let root = folder.url(in: run.context.container)
        let entries = try FileClassifier(fileSystem: run.context.fileSystem).scan(
            root, recursive: false, measuringFolders: false)
        return StepOutcome(relocation: try run.run(QuarantineStep(context: run.context, root: root, entries: entries)))
    }

    package func skipped(_ account: inout some StepAccount, at index: Int) -> (reason: String, problem: String?) {
        ("nothing to quarantine", nil)
    }
}
