import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation

/// What a run says of the steps it skipped and of what it could not find: why each skipped step had
/// nothing to do, and the internal files left in Documents that no step of the plan accounts for
/// (a store the plan missed, such as one named with a typo).
struct RunAccount: StepAccount {
    let plan: UpgradePlan
    let container: AppContainer
    let fileSystem: FileSystem

    /// The plan's locations, indexed once: what is asked of each step then costs the same whatever
    /// the plan's length (a scan of every step for each one made a plan of 4,000 steps quadratic).
    private let index: PlanIndex

    init(plan: UpgradePlan, container: AppContainer, fileSystem: FileSystem) {
        self.plan = plan
        self.container = container
        self.fileSystem = fileSystem
        self.index = PlanIndex(plan)
    }

    func exists(_ location: ContainerLocation) -> Bool { fileSystem.exists(location, in: container) }

    var steps: [UpgradeStep] { plan.steps }

    func place(of index: Int) -> (plan: String, step: Int) { plan.stepPlace(index) }

    /// True when no store the plan names is in the container, and no internal file the plan
    /// misses is in Documents: an app installed fresh. Looked at once.
    private var freshInstall: Bool?
    private mutating func isFreshInstall() -> Bool {
        if let freshInstall { return freshInstall }
        let named = plan.steps.contains { step in step.definition.storeFields.contains { exists($0.location) } }
        let fresh = !named && ((try? unaccountedFiles().isEmpty) ?? false)
        freshInstall = fresh
        return fresh
    }

    /// The first step after `index` that takes the store at `location` further (moves or splits it).
    func laterStep(taking location: ContainerLocation, after index: Int) -> Int? {
        guard let takers = self.index.takers[location.fileKey] else { return nil }
        // The first of the steps (in order) past `index`.
        var low = 0, high = takers.count
        while low < high {
            let middle = (low + high) / 2
            if takers[middle] <= index { low = middle + 1 } else { high = middle }
        }
        return low < takers.count ? takers[low] : nil
    }

    /// True when a step of the plan (before step `before`, when given) puts a store at `location`:
    /// a relocation's destination, a split's target.
    func isProduced(_ location: ContainerLocation, before: Int = .max) -> Bool {
        index.firstProducer[location.fileKey].map { $0 < before } ?? false
    }

    /// Why the step at `index` has nothing to do, and a problem when that is not a sound reason.
    mutating func skipped(_ index: Int) -> (reason: String, problem: String?) {
        plan.steps[index].definition.skipped(&self, at: index)
    }

    /// Why a step that changes `store` in place found none: a later step took it further, a fresh
    /// install, a purgeable folder; a problem when a store a few letters away is there (a typo).
    mutating func absentInPlace(_ store: ContainerLocation, index: Int) -> (reason: String, problem: String?) {
        if let later = laterStep(taking: store, after: index) { return (Self.alreadyDone(plan.stepPlace(later)), nil) }
        if isFreshInstall() { return ("absent: fresh install", nil) }
        // The system empties Caches and tmp when it likes: a store missing there is rebuilt by the app.
        if store.isPurgeable { return ("absent: no store at \(store) (purgeable)", nil) }
        guard let typo = closestPresent(to: store, where: exists), Self.looksLikeTypo(typo, of: store) else {
            return ("absent: no store at \(store)", nil)
        }
        let place = plan.stepPlace(index)
        let problem =
            "step \(place.step) of \(place.plan) migrates \(store), but no store is there, "
            + "though there is one at \(typo)"
        return ("absent: no store at \(store)", problem)
    }

    mutating func absent(
        _ source: ContainerLocation, made: [ContainerLocation], index: Int
    ) -> (reason: String, problem: String?) {
        if made.contains(where: exists) { return ("already done", nil) }
        if let target = made.first(where: { laterStep(taking: $0, after: index) != nil }),
            let later = laterStep(taking: target, after: index)
        {
            return (
                Self.alreadyDone(plan.stepPlace(later)),
                nil
            )
        }
        if isFreshInstall() { return ("absent: fresh install", nil) }
        return ("absent: no store at \(source)", nil)
    }

    /// The internal files left in Documents that no location the plan names accounts for, each as
    /// one sentence with the closest location the plan names. Only for plans that name Documents.
    ///
    /// A database nobody declared is the user's document and is left alone, unless its name is a
    /// few letters from a location the plan names: then the plan most likely misspelled the app's
    /// store (`Workouts.sqlite` for `Workout.sqlite`), and the run must not say it is done.
    func unaccountedFiles() throws -> [String] {
        let named = plan.steps.flatMap(\.locations).filter { $0.root == .documents }
        guard !named.isEmpty else { return [] }
        let declared = container.declaredStores.adding(StoreDeclarations(plan: plan))
        // Kinds and paths only: a support folder's files are not listed to measure it.
        let entries = try FileClassifier(fileSystem: fileSystem).scan(container.documents, measuringFolders: false)
        let keys = Set(named.map(\.fileKey))
        var problems: [String] = []
        for entry in entries where entry.kind.isInternal {
            let store = ContainerLocation(.documents, Self.storePath(of: entry.path))
            guard !keys.contains(store.fileKey) else { continue }
            if !declared.declares(store.path), !named.contains(where: { Self.looksLikeTypo($0, of: store) }) {
                continue
            }
            var sentence = "Documents still holds \(entry.path) (\(entry.kind)), which no step of the plan accounts for"
            if let closest = closest(to: store) { sentence += "; the closest location the plan names is \(closest)" }
            problems.append(sentence)
        }
        return problems
    }

    /// The store a file belongs to: a sidecar's database, a support folder's store (`.Name_SUPPORT` to `Name.*`
    /// is left as it is: its name differs).
    private static func storePath(of path: String) -> String {
        for suffix in ["-wal", "-shm", "-journal"] where path.hasSuffix(suffix) {
            return String(path.dropLast(suffix.count))
        }
        return path
    }

    /// The location the plan names that is nearest `location` by edit distance, in the same root.
    func closest(
        to location: ContainerLocation, where included: (ContainerLocation) -> Bool = { _ in true }
    ) -> ContainerLocation? {
        let candidates = plan.steps.flatMap(\.locations).filter {
            $0.root == location.root && !$0.sameFile(as: location) && !$0.path.isEmpty && included($0)
        }
        return candidates.min { Self.distance($0.path, location.path) < Self.distance($1.path, location.path) }
    }

    /// ``closest(to:where:)`` among the locations that can hold a store during the run: those that
    /// held one when first asked (one `lstat` of each, once) and those a step puts one at. The
    /// others never do, so they need not be tried (nor `included` called on them) at every step.
    func closestPresent(
        to location: ContainerLocation, where included: (ContainerLocation) -> Bool
    ) -> ContainerLocation? {
        let candidates = index.mayHoldStore(exists).filter {
            $0.location.root == location.root && $0.key != location.fileKey && !$0.location.path.isEmpty
                && included($0.location)
        }
        return candidates.min {
            Self.distance($0.location.path, location.path) < Self.distance($1.location.path, location.path)
        }?.location
    }

    /// True when `location` is a few letters from `other` (at most 2, or 15% of the longer path).
    static func looksLikeTypo(_ other: ContainerLocation, of location: ContainerLocation) -> Bool {
        NearestName.isTypo(distance: distance(other.path, location.path), other.path, location.path)
    }

    private static func alreadyDone(_ later: (plan: String, step: Int)) -> String {
        "already done: step \(later.step) of \(later.plan) took the store further"
    }

    static func distance(_ a: String, _ b: String) -> Int { NearestName.distance(a, b) }
}

/// The locations of a plan by file key, read once per run (``RunAccount``).
private final class PlanIndex {
    /// The steps that take the store at a location further (a relocation's source, a split's store), in order.
    let takers: [String: [Int]]
    /// Where steps put a store (a relocation's destination, a split's targets): the first such step.
    let firstProducer: [String: Int]
    /// Every location the plan names, one per file, in the plan's order.
    let locations: [(location: ContainerLocation, key: String)]
    private var holders: [(location: ContainerLocation, key: String)]?

    init(_ plan: UpgradePlan) {
        var takers: [String: [Int]] = [:]
        var produced: [String: Int] = [:]
        for (index, step) in plan.steps.enumerated() {
            if let taken = step.definition.takes { takers[taken.fileKey, default: []].append(index) }
            for put in step.definition.puts { produced[put.fileKey] = produced[put.fileKey] ?? index }
        }
        var seen: Set<String> = []
        var locations: [(location: ContainerLocation, key: String)] = []
        for location in plan.steps.flatMap(\.locations) {
            let key = location.fileKey
            if seen.insert(key).inserted { locations.append((location, key)) }
        }
        self.takers = takers
        self.firstProducer = produced
        self.locations = locations
    }

    /// The locations that hold a store now (by `exists`, asked once for each) or that a step puts one at.
    func mayHoldStore(_ exists: (ContainerLocation) -> Bool) -> [(location: ContainerLocation, key: String)] {
        if let holders { return holders }
        let found = locations.filter { firstProducer[$0.key] != nil || exists($0.location) }
        holders = found
        return found
    }
}

extension ContainerLocation {
    /// True in Caches and tmp, which the system empties when it needs space.
    var isPurgeable: Bool { root == .caches || root == .temporary }
}
