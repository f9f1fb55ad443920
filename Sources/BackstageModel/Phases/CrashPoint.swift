import BackstageSystem
import Foundation
import Synchronization

/// A boundary an upgrade passes, where a crash test kills it: the kind of step, the phase, and
/// which time this boundary is reached in the run (from 1), such as `relocate:committed@2`, the
/// second relocation's commit.
///
/// The simulator lists a plan's boundaries with ``boundaries(of:)``, the simulator's child parses
/// one and refuses a point the plan never reaches, and the upgrader reports each boundary it passes
/// as one.
///
/// ```swift
/// let point = CrashPoint("relocate:committed@2")     // CrashPoint(.relocate, .committed, occurrence: 2)
/// let reached = CrashPoint.possibleBoundaries(of: plan).contains(point!)
/// ```
public struct CrashPoint: Sendable, Hashable, CustomStringConvertible {
    public var kind: StepKind
    public var phase: StepPhase
    /// Which time this kind and phase is reached in the run, from 1.
    public var occurrence: Int

    public init(_ kind: StepKind, _ phase: StepPhase, occurrence: Int = 1) {
        self.kind = kind
        self.phase = phase
        self.occurrence = occurrence
    }

    /// `kind:phase@N`.
    public var description: String { "\(kind):\(phase.rawValue)@\(occurrence)" }

    /// Numbers the boundaries one run passes, as ``boundaries(of:)`` numbers them.
    package final class Tally: Sendable {
        private let counts = Mutex<[String: Int]>([:])

        package init() {}

        package func reached(_ kind: StepKind, _ phase: StepPhase) -> CrashPoint {
            let occurrence = counts.withLock { counts in
                counts["\(kind):\(phase.rawValue)", default: 0] += 1
                return counts["\(kind):\(phase.rawValue)"] ?? 1
            }
            return CrashPoint(kind, phase, occurrence: occurrence)
        }
    }
}
