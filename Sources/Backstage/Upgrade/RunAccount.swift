import Foundation

/// What a run says of the steps it skipped and of what it could not find: why each skipped step had
/// nothing to do, and the internal files left in Documents that no step of the plan accounts for
/// (a store the plan missed, such as one named with a typo).
struct RunAccount {
    let plan: UpgradePlan
    let container: AppContainer
    let fileSystem: FileSystem

    init(plan: UpgradePlan, container: AppContainer, fileSystem: FileSystem) {
        self.plan = plan
        self.container = container
        self.fileSystem = fileSystem
    }

    private func exists(_ location: ContainerLocation) -> Bool { fileSystem.exists(location, in: container) }

    /// True when no store the plan names is in the container, and no internal file the plan
    /// misses is in Documents: an app installed fresh. Looked at once.
    private var freshInstall: Bool?
    private mutating func isFreshInstall() -> Bool {
        if let freshInstall { return freshInstall }
        let named = plan.steps.contains { step in
            switch step {
            case .quarantine: false
            default: step.locations.contains(where: exists)
            }
        }
        let fresh = !named && ((try? unaccountedFiles().isEmpty) ?? false)
        freshInstall = fresh
        return fresh
    }

    /// The first step after `index` that takes the store at `location` further (moves or splits it).
    func laterStep(taking location: ContainerLocation, after index: Int) -> Int? {
        plan.steps.indices.dropFirst(index + 1).first { later in
            switch plan.steps[later] {
            case .relocate(let relocate): relocate.from.sameFile(as: location)
            case .split(let split): split.store.sameFile(as: location)
            default: false
            }
        }
    }

    /// Why the step at `index` has nothing to do, and a problem when that is not a sound reason.
    mutating func skipped(_ index: Int) -> (reason: String, problem: String?) {
        let step = plan.steps[index]
        let place = plan.stepPlace(index)
        switch step {
        case .relocate(let relocate):
            return absent(relocate.from, made: [relocate.to], index: index)
        case .split(let split):
            return absent(split.store, made: split.into.map(\.store), index: index)
        case .migrateSchema(let migrate):
            if exists(migrate.store) { return ("up to date", nil) }
            if let later = laterStep(taking: migrate.store, after: index) {
                return (
                    Self.alreadyDone(plan.stepPlace(later)),
                    nil
                )
            }
            if isFreshInstall() { return ("absent: fresh install", nil) }
            // The system empties Caches and tmp when it likes: a store missing there is rebuilt by the app.
            if migrate.store.isPurgeable { return ("absent: no store at \(migrate.store) (purgeable)", nil) }
            guard let typo = closest(to: migrate.store, where: exists), Self.looksLikeTypo(typo, of: migrate.store)
            else {
                return ("absent: no store at \(migrate.store)", nil)
            }
            let problem =
                "step \(place.step) of \(place.plan) migrates \(migrate.store), but no store is there, "
                + "though there is one at \(typo)"
            return ("absent: no store at \(migrate.store)", problem)
        case .quarantine:
            return ("nothing to quarantine", nil)
        }
    }

    private mutating func absent(
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

    /// True when `location` is a few letters from `other` (at most 2, or 15% of the longer path).
    static func looksLikeTypo(_ other: ContainerLocation, of location: ContainerLocation) -> Bool {
        NearestName.isTypo(distance: distance(other.path, location.path), other.path, location.path)
    }

    private static func alreadyDone(_ later: (plan: String, step: Int)) -> String {
        "already done: step \(later.step) of \(later.plan) took the store further"
    }

    static func distance(_ a: String, _ b: String) -> Int { NearestName.distance(a, b) }
}

extension ContainerLocation {
    /// True in Caches and tmp, which the system empties when it needs space.
    var isPurgeable: Bool { root == .caches || root == .temporary }
}

extension UpgradeStep {
    /// True when the step puts a store at `location` (a relocation's destination, a split's target).
    func produces(_ location: ContainerLocation) -> Bool {
        switch self {
        case .relocate(let relocate): relocate.to.sameFile(as: location)
        case .split(let split): split.into.contains { $0.store.sameFile(as: location) }
        default: false
        }
    }
}
