import Backstage
import Foundation

/// One simulated upgrade: a fixture, the plan chain killed at one point (or not), rerun, checked.
public struct SimulationRun: Sendable, Hashable, Codable {
    public var from: String
    public var to: String
    public var size: Int64
    public var state: FixtureState
    /// What the run did to the upgrade: killed it at a boundary or at a random instant, cut the
    /// power, or launched an older build after it; nil for an uninterrupted run. In JSON, its label
    /// (`"relocate:copying@1"`, see ``Fault``).
    public var crashPoint: Fault?
    /// False when the crash point was never reached (the step had nothing to do in this state).
    public var crashed: Bool
    /// Runs needed after the crash to complete the chain; for an uninterrupted run (and a
    /// downgrade's upgrade), the runs after its first: 0 when it completed.
    public var reruns: Int
    /// Wall time of the uninterrupted run or of the runs after the crash.
    public var seconds: Double
    /// True when the upgrade took longer than the launch budget: an app would be killed at launch.
    public var exceedsBudget: Bool
    /// The invariants that broke; empty when the run passed.
    public var failures: [String]
    /// What names the run the same way in every shard and on every machine:
    /// `v1→v4 2000000 wal-pending relocate:copying@1` (`random#2` for the second random kill,
    /// whose instant in milliseconds varies); nil for runs made before identities.
    public var identity: String?
    /// The position of the run's ``SimulationUnit`` among the matrix's units.
    public var unit: Int?
    /// Where the run's time went.
    public var cost: RunCost?

    public var passed: Bool { failures.isEmpty }

    public init(
        from: String, to: String, size: Int64, state: FixtureState, crashPoint: Fault?, crashed: Bool, reruns: Int,
        seconds: Double, exceedsBudget: Bool, failures: [String]
    ) {
        self.from = from
        self.to = to
        self.size = size
        self.state = state
        self.crashPoint = crashPoint
        self.crashed = crashed
        self.reruns = reruns
        self.seconds = seconds
        self.exceedsBudget = exceedsBudget
        self.failures = failures
    }

    /// What a simulated run did to the upgrade: how it was interrupted, or the older build it
    /// launched after it.
    ///
    /// Its description is the run's label in reports, and its JSON that label as one string, which
    /// ``init(_:)`` reads back:
    ///
    /// ```swift
    /// SimulationRun.Fault.crashPoint(CrashPoint(.relocate, .copying))  // "relocate:copying@1"
    /// SimulationRun.Fault.randomKill(milliseconds: 120)                // "random:120ms"
    /// SimulationRun.Fault.powerCut(PowerCut(after: 53, losesUnsyncedWrites: true))  // "power cut @53, writes lost"
    /// SimulationRun.Fault.downgrade(to: "v3")                          // "downgrade-to-v3"
    /// ```
    public enum Fault: Sendable, Hashable, Codable, LosslessStringConvertible {
        /// Killed with SIGKILL at a step/phase boundary.
        case crashPoint(CrashPoint)
        /// Killed with SIGKILL at a random instant, this many milliseconds after the run started.
        case randomKill(milliseconds: Int)
        /// A power cut: the writes not yet synced may be lost.
        case powerCut(PowerCut)
        /// Not interrupted: the upgrade ran to its end, then the build of this older version was
        /// launched on the upgraded storage (it must refuse and change nothing).
        case downgrade(to: String)

        /// What to count runs by.
        public enum Kind: String, Sendable, Hashable, CaseIterable {
            case crashPoint, randomKill, powerCut, downgrade
        }

        public var kind: Kind {
            switch self {
            case .crashPoint: .crashPoint
            case .randomKill: .randomKill
            case .powerCut: .powerCut
            case .downgrade: .downgrade
            }
        }

        /// `kind:phase@N`, `random:Nms`, `power cut @N …` (``PowerCut/description``) or `downgrade-to-V`.
        public var description: String {
            switch self {
            case .crashPoint(let point): point.description
            case .randomKill(let milliseconds): "random:\(milliseconds)ms"
            case .powerCut(let cut): cut.description
            case .downgrade(let version): "downgrade-to-\(version)"
            }
        }

        /// Reads a ``description``; nil for any other text.
        public init?(_ text: String) {
            if text.hasPrefix("random:"), text.hasSuffix("ms"),
                let milliseconds = Int(text.dropFirst("random:".count).dropLast(2)), milliseconds >= 0
            {
                self = .randomKill(milliseconds: milliseconds)
            } else if let cut = PowerCut(text) {
                self = .powerCut(cut)
            } else if text.hasPrefix("downgrade-to-"), text.count > "downgrade-to-".count {
                self = .downgrade(to: String(text.dropFirst("downgrade-to-".count)))
            } else if let point = CrashPoint(text) {
                self = .crashPoint(point)
            } else {
                return nil
            }
        }

        /// In JSON, a fault is its label: `"split:verified@1"`.
        public init(from decoder: Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let fault = Fault(text) else {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: decoder.codingPath,
                        debugDescription:
                            "\(text) is not a crash point (kind:phase@N), random:Nms, power cut @N or downgrade-to-V"))
            }
            self = fault
        }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }
    }
}
