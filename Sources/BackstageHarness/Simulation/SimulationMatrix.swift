import Backstage
import Foundation

/// One way a device upgrades: from the version it has to a newer one.
public struct UpgradePath: Sendable, Hashable, Codable, CustomStringConvertible {
    public var from: String
    public var to: String

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }

    /// `v1→v4`.
    public var description: String { "\(from)→\(to)" }

    /// Every path a device of an app with `versions` (oldest first) can take: each version to the
    /// latest, each pair a device skips versions between, and each single step — every pair, older
    /// first (a history of six versions has fifteen). Ordered by `from`, then `to`.
    ///
    /// For example, `v1, v2, v3` gives `v1→v2, v1→v3, v2→v3`.
    public static func every(_ versions: [String]) -> [UpgradePath] {
        versions.indices.flatMap { start in
            versions[(start + 1)...].map { UpgradePath(from: versions[start], to: $0) }
        }
    }
}

/// A part of a simulation that one shard runs whole: one crash point, the uninterrupted run with
/// the random kills timed against it, the power cuts of one fixture (known only once recorded), or
/// the downgrade after the upgrade. Each unit gives one run, except the last two kinds of it.
public struct SimulationUnit: Sendable, Hashable, Codable, CustomStringConvertible {
    public var path: UpgradePath
    public var size: Int64
    public var state: FixtureState
    public var kind: Kind
    /// What the unit is expected to cost, in arbitrary units: the fixture's size times the
    /// boundaries of the path's chain, times the runs it makes. What shards are balanced by.
    public var cost: Double

    /// What a unit runs.
    public enum Kind: Sendable, Hashable, Codable {
        /// A kill with SIGKILL at this boundary, then the reruns.
        case crashPoint(CrashPoint)
        /// One uninterrupted run, then this many runs killed at a random instant of it.
        case uninterrupted(randomKills: Int)
        /// Every power cut the chain's first run allows (or at most `limit`).
        case powerCuts(limit: Int?)
        /// The upgrade, then the build of `version` (older than the path's `to`) launched on the
        /// upgraded storage: it must refuse and change nothing.
        case downgrade(to: String)
    }

    public init(path: UpgradePath, size: Int64, state: FixtureState, kind: Kind, cost: Double) {
        self.path = path
        self.size = size
        self.state = state
        self.kind = kind
        self.cost = cost
    }

    /// `v1→v4 2000000 wal-pending relocate:copying@1`: what `--list` prints, one unit a line.
    public var description: String { "\(path) \(size) \(state.rawValue) \(label)" }

    /// The unit's kind as its runs are labelled.
    var label: String {
        switch kind {
        case .crashPoint(let point): point.description
        case .uninterrupted(0): "none"
        case .uninterrupted(let kills): "none+random×\(kills)"
        case .powerCuts(nil): "power-cuts"
        case .powerCuts(let limit?): "power-cuts≤\(limit)"
        case .downgrade(let version): SimulationRun.Fault.downgrade(to: version).description
        }
    }

    /// The identity of a run of this unit: `label` is the run's own part (a crash point, `random#2`,
    /// a power cut's description).
    func runIdentity(_ label: String) -> String { "\(path) \(size) \(state.rawValue) \(label)" }

    /// The fixture the unit's runs start from.
    var fixture: FixtureKey { FixtureKey(layout: path.from, size: size, state: state) }

    struct FixtureKey: Hashable {
        var layout: String
        var size: Int64
        var state: FixtureState
    }
}

/// Which part of a sharded simulation one process runs: the `index`-th of `count`, from 1.
public struct Shard: Sendable, Hashable, Codable, CustomStringConvertible {
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// `K/N` with 1 ≤ K ≤ N, nil otherwise.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1,
            (1...count).contains(index)
        else { return nil }
        self.init(index: index, count: count)
    }

    /// `K/N`.
    public var description: String { "\(index)/\(count)" }

    /// The positions in `units` this shard runs: units go, costliest first (ties in list order), to
    /// the shard with the least cost so far (the lowest-numbered among equals). Deterministic: the
    /// same units give every shard the same part on every machine, and the parts cover the units
    /// once.
    public func positions(in units: [SimulationUnit]) -> [Int] {
        let order = units.indices.sorted { a, b in
            units[a].cost != units[b].cost ? units[a].cost > units[b].cost : a < b
        }
        var load = [Double](repeating: 0, count: count)
        var mine: [Int] = []
        for position in order {
            // The first among the least loaded: deterministic ties.
            var target = 0
            for candidate in load.indices where load[candidate] < load[target] { target = candidate }
            load[target] += units[position].cost
            if target == index - 1 { mine.append(position) }
        }
        return mine.sorted()
    }
}

extension Simulator {
    /// The units of the matrix: for each path, size and state, the crash points `crashPoints` says,
    /// the uninterrupted run with ``randomKills``, the power cuts when ``powerCuts`` is set, and,
    /// when `downgrades`, the downgrade to the version before `to` (when that version has a plan:
    /// the first version's build has no Backstage to refuse with).
    public func units(
        paths: [UpgradePath], sizes: [Int64], states: [FixtureState], crashPoints: CrashPoints,
        downgrades: Bool = false
    ) throws -> [SimulationUnit] {
        let versions = catalog.manifest.versions.map(\.name)
        var units: [SimulationUnit] = []
        for path in paths {
            let all = try self.crashPoints(from: path.from, to: path.to)
            let points: [CrashPoint?] =
                switch crashPoints {
                case .none: [nil]
                case .all: all
                case .count(let n): n == 0 ? [nil] : Self.spread(n, of: all)
                }
            let boundaries = Double(max(all.count, 1))
            let older = versions.firstIndex(of: path.to).flatMap { $0 >= 2 ? versions[$0 - 1] : nil }
            for size in sizes {
                // A run costs about the chain's work; tiny fixtures still cost a process or two.
                let work = Double(max(size, 100_000)) * boundaries
                for state in states {
                    func unit(_ kind: SimulationUnit.Kind, _ runs: Double) -> SimulationUnit {
                        SimulationUnit(path: path, size: size, state: state, kind: kind, cost: work * runs)
                    }
                    if points.contains(nil) || randomKills > 0 {
                        units.append(unit(.uninterrupted(randomKills: randomKills), Double(1 + randomKills)))
                    }
                    units += points.compactMap { $0 }.map { unit(.crashPoint($0), 1) }
                    if let powerCuts {
                        let limit: Int? =
                            switch powerCuts {
                            case .all: nil
                            case .bounded(let limit): limit
                            }
                        // Cuts are known once recorded; each is tried with writes kept and, where some are
                        // unsynced, lost: counted twice, the most it costs.
                        units.append(unit(.powerCuts(limit: limit), 1 + 2 * Double(limit ?? 3 * all.count)))
                    }
                    if downgrades, plans == nil, let older {
                        units.append(unit(.downgrade(to: older), 1.2))
                    }
                }
            }
        }
        return units
    }
}
