import BackstageModel
import BackstageSystem
import Foundation

/// The ordered steps that take an app's storage from one version's layout to the next.
///
/// Each step is idempotent and resumable: a step already done is skipped, and a step a crash
/// interrupted is finished or undone from the ``UpgradeJournal``. A plan is written in Swift or
/// in JSON (the CLI and the fixture catalog use JSON):
///
/// ```json
/// {
///   "name": "v2-to-v3",
///   "steps": [
///     { "split": { "store": "applicationSupport/Notes.sqlite",
///                  "into": [ { "store": "applicationSupport/UserData.sqlite", "tables": ["ZFOLDER", "ZNOTE", "ZATTACHMENT"] },
///                            { "store": "caches/Cache.sqlite", "tables": ["ZTHUMBNAIL"] } ],
///                  "discard": ["ZLOG"] } },
///     { "migrateSchema": { "store": "applicationSupport/UserData.sqlite",
///                          "migrations": [ { "id": "v3-pinned", "sql": "ALTER TABLE ZNOTE ADD COLUMN ZPINNED INTEGER NOT NULL DEFAULT 0" } ] } }
///   ]
/// }
/// ```
///
/// Locations are `"<root>/<path>"` with root `documents`, `applicationSupport`, `caches` or `temporary`.
public struct UpgradePlan: Sendable, Hashable, Codable {
    /// A name for reports, such as `v1-to-v2`.
    public var name: String
    /// The steps, run in order.
    public var steps: [UpgradeStep] { didSet { launchQuestions = LaunchQuestions(steps) } }
    /// The storage version the plan reaches, such as `v4` or `2.3`. When set, a completed run
    /// records it in the container, and a build of the app that knows fewer versions refuses to
    /// run over storage a newer build upgraded (see ``init(chain:)``).
    public var version: String?
    /// The versions of the plans of a chain, oldest first.
    package private(set) var chainVersions: [String]?
    /// The plans of a chain, each with its number of steps, so that a step is named in its own plan.
    private(set) var chainParts: [ChainPart]?

    struct ChainPart: Sendable, Hashable {
        var name: String
        var steps: Int
    }

    /// What the launch check asks the launch record about each step, worked out with the steps.
    package private(set) var launchQuestions: LaunchQuestions

    private enum CodingKeys: String, CodingKey { case name, steps, version }

    /// Creates a plan.
    public init(name: String, version: String? = nil, steps: [UpgradeStep]) {
        self.name = name
        self.version = version
        self.steps = steps
        launchQuestions = LaunchQuestions(steps)
    }

    /// Decodes a plan's `name`, `steps` and `version`, in that order (``load(from:)`` reads a
    /// file strictly).
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .name)
        let steps = try container.decode([UpgradeStep].self, forKey: .steps)
        self.init(name: name, version: try container.decodeIfPresent(String.self, forKey: .version), steps: steps)
    }

    /// One plan running the steps of `plans`, in order: the app's whole history, as a GRDB
    /// migrator holds every migration. Steps already done are skipped in microseconds, so an app
    /// passes every plan it ever shipped, whatever version its user's storage is at.
    ///
    /// The chain knows the ``version`` of each of its plans: when the container was upgraded by a
    /// chain that knew all of them and one more (a newer build, then this older one installed
    /// over it), ``Upgrader/needsUpgrade(_:_:)`` says so and ``Upgrader`` refuses to run with
    /// ``BackstageError/Cause/newerStorage(version:known:)``, touching nothing.
    ///
    /// ```swift
    /// let chain = UpgradePlan(chain: try ["v1-to-v2", "v2-to-v3", "v3-to-v4"].map { name in
    ///     try UpgradePlan.load(from: Bundle.main.url(forResource: name, withExtension: "json")!)
    /// })
    /// if Upgrader.needsUpgrade(container, chain) { try await Upgrader(container: container).upgrade(chain) }
    /// ```
    public init(chain plans: [UpgradePlan]) {
        self.name = plans.count == 1 ? plans[0].name : plans.map(\.name).joined(separator: " → ")
        self.steps = plans.flatMap(\.steps)
        self.chainVersions = plans.flatMap(\.versions)
        self.chainParts = plans.flatMap { $0.chainParts ?? [ChainPart(name: $0.name, steps: $0.steps.count)] }
        self.version = chainVersions?.last
        launchQuestions = LaunchQuestions(steps)
    }

    /// The storage versions this plan knows, oldest first: its own ``version``, or those of the
    /// plans of a chain.
    public var versions: [String] { chainVersions ?? version.map { [$0] } ?? [] }

    /// True when the plan knows a storage version (``versions`` is not empty), the list unbuilt.
    package var knowsVersions: Bool { chainVersions.map { !$0.isEmpty } ?? (version != nil) }

    /// The stores the launch check looks for, split into their folder and name, once each, in
    /// the plan's order.
    package var probedStores: [(folder: ContainerLocation, name: String)] {
        var stores: [(folder: ContainerLocation, name: String)] = []
        // Each once, in order: a set, not a search of those found (quadratic in a long plan).
        var seen: Set<ContainerLocation> = []
        for step in steps {
            guard case .store(let store)? = step.definition.launchLook else { continue }
            let slash = store.path.lastIndex(of: "/")
            let folder = ContainerLocation(store.root, slash.map { String(store.path[..<$0]) } ?? "")
            let name = String(slash.map { store.path[store.path.index(after: $0)...] } ?? store.path[...])
            if !name.isEmpty, seen.insert(ContainerLocation(folder.root, folder.path + "/" + name)).inserted {
                stores.append((folder, name))
            }
        }
        return stores
    }

    /// Creates a plan from its steps, written one per line.
    ///
    /// ```swift
    /// let plan = UpgradePlan(name: "v1-to-v2") {
    ///     UpgradeStep.relocate(from: ContainerLocation(.documents, "Notes.sqlite"),
    ///                          to: ContainerLocation(.applicationSupport, "Notes.sqlite"))
    ///     UpgradeStep.quarantine()
    /// }
    /// ```
    public init(name: String, version: String? = nil, @UpgradePlanBuilder steps: () -> [UpgradeStep]) {
        self.init(name: name, version: version, steps: steps())
    }

    /// Reads a plan from JSON, strictly: a syntax error is reported at its line and column, a key
    /// the format does not have (`"stratgy"`) or a field without a usable value (an empty store
    /// path, a migration without SQL) at its JSON path.
    ///
    /// - throws: ``BackstageError/Cause/invalidPlan(reason:)`` naming the file and what is wrong.
    public static func load(from url: URL) throws -> UpgradePlan {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw BackstageError(
                .invalidPlan(reason: "it cannot be read (\(Self.readFailure(error, at: url)))"), path: url.path,
                during: .checkingPlan)
        }
        let plan: UpgradePlan
        do {
            plan = try StrictDecoding.decode(UpgradePlan.self, from: data)
        } catch {
            throw BackstageError(.invalidPlan(reason: error.description), path: url.path, during: .checkingPlan)
        }
        if let problem = plan.fieldProblems.first {
            throw BackstageError(.invalidPlan(reason: problem), path: url.path, during: .checkingPlan)
        }
        return plan
    }

    /// Why `url` could not be read, in a few words.
    package static func readFailure(_ error: Error, at url: URL) -> String {
        var isFolder: ObjCBool = false
        if !FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) { return "there is no such file" }
        return isFolder.boolValue ? "it is a folder" : (error as NSError).localizedDescription
    }
}

/// Builds the steps of an ``UpgradePlan``.
/// Builds a plan's steps, with `if`, `if`/`else` and `for` as in any Swift result builder:
///
/// ```swift
/// let plan = UpgradePlan(name: "v3-to-v4") {
///     for account in accounts {
///         UpgradeStep.relocate(from: ContainerLocation(.applicationSupport, "\(account).sqlite"),
///                              to: ContainerLocation(.applicationSupport, "Accounts/\(account)/UserData.sqlite"))
///     }
///     if cleanDocuments { UpgradeStep.quarantine() }
/// }
/// ```
@resultBuilder
public enum UpgradePlanBuilder {
    public static func buildExpression(_ step: UpgradeStep) -> [UpgradeStep] { [step] }
    public static func buildBlock(_ steps: [UpgradeStep]...) -> [UpgradeStep] { steps.flatMap { $0 } }
    public static func buildOptional(_ steps: [UpgradeStep]?) -> [UpgradeStep] { steps ?? [] }
    public static func buildEither(first steps: [UpgradeStep]) -> [UpgradeStep] { steps }
    public static func buildEither(second steps: [UpgradeStep]) -> [UpgradeStep] { steps }
    public static func buildArray(_ steps: [[UpgradeStep]]) -> [UpgradeStep] { steps.flatMap { $0 } }
}
