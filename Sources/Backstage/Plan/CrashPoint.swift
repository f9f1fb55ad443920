import Foundation
import Synchronization

/// A boundary an upgrade passes, where a crash test kills it: the kind of step, the phase, and
/// which time this boundary is reached in the run (from 1), such as `relocate:committed@2`, the
/// second relocation's commit.
///
/// The simulator lists a plan's boundaries with ``boundaries(of:)``, `backstage upgrade
/// --crash-at` parses one and refuses a point the plan never reaches, and the upgrader reports
/// each boundary it passes as one.
///
/// ```swift
/// let point = CrashPoint("relocate:committed@2")     // CrashPoint(.relocate, .committed, occurrence: 2)
/// let reached = CrashPoint.possibleBoundaries(of: plan).contains(point!)
/// ```
public struct CrashPoint: Sendable, Hashable, Codable, CustomStringConvertible, LosslessStringConvertible {
    public var kind: StepKind
    public var phase: StepPhase
    /// Which time this kind and phase is reached in the run, from 1.
    public var occurrence: Int

    public init(_ kind: StepKind, _ phase: StepPhase, occurrence: Int = 1) {
        self.kind = kind
        self.phase = phase
        self.occurrence = occurrence
    }

    /// Parses `kind:phase[@N]` (N from 1, 1 when left out); nil for anything else, and for a
    /// phase the kind of step never passes (`migrateSchema:copying`).
    public init?(_ text: String) {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        let names = parts[0].split(separator: ":", omittingEmptySubsequences: false)
        guard names.count == 2, let kind = StepKind(rawValue: String(names[0])),
            let phase = StepPhase(rawValue: String(names[1])),
            Self.phases(of: kind).contains(phase)
        else { return nil }
        var occurrence = 1
        if parts.count == 2 {
            guard let number = Int(parts[1]), number >= 1, String(number) == parts[1] else { return nil }
            occurrence = number
        }
        self.init(kind, phase, occurrence: occurrence)
    }

    /// `kind:phase@N`.
    public var description: String { "\(kind):\(phase.rawValue)@\(occurrence)" }

    /// Every `kind:phase` a step can pass, the forms ``init(_:)`` reads (without `@N`).
    public static let forms: [String] = StepKind.allCases.flatMap { kind in
        phases(of: kind).map { "\(kind):\($0.rawValue)" }
    }

    /// The phases a step of `kind` can pass, in order (a relocation's include a copy's).
    public static func phases(of kind: StepKind) -> [StepPhase] {
        switch kind {
        case .relocate: StepPhase.boundaries(for: .copy)
        case .split: StepPhase.splitBoundaries
        case .migrateSchema: StepPhase.migrationBoundaries
        case .quarantine: []
        }
    }

    /// The boundaries `plan` passes when every step runs, in order, each numbered by occurrence;
    /// a relocation that may rename (strategy `auto` or `rename`) counted as a rename.
    public static func boundaries(of plan: UpgradePlan) -> [CrashPoint] {
        numbered(
            plan.steps.map { step in
                if case .relocate(let relocate) = step {
                    return (step.kind, StepPhase.boundaries(for: relocate.strategy ?? .auto))
                }
                return (step.kind, phases(of: step.kind))
            })
    }

    /// Every boundary `plan` can pass: ``boundaries(of:)``, and a copy's phases for a relocation
    /// that copies when its store is on another file system (strategy `auto`).
    public static func possibleBoundaries(of plan: UpgradePlan) -> [CrashPoint] {
        numbered(plan.steps.map { ($0.kind, $0.phases) })
    }

    private static func numbered(_ steps: [(StepKind, [StepPhase])]) -> [CrashPoint] {
        var seen: [String: Int] = [:]
        var points: [CrashPoint] = []
        for (kind, phases) in steps {
            for phase in phases {
                let count = (seen["\(kind):\(phase.rawValue)"] ?? 0) + 1
                seen["\(kind):\(phase.rawValue)"] = count
                points.append(CrashPoint(kind, phase, occurrence: count))
            }
        }
        return points
    }

    /// In JSON, a crash point is its string: `"split:verified@1"`.
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let point = CrashPoint(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "\(text) is not a crash point (kind:phase@N)"))
        }
        self = point
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Numbers the boundaries one run passes, as ``boundaries(of:)`` numbers them.
    final class Tally: Sendable {
        private let counts = Mutex<[String: Int]>([:])

        func reached(_ kind: StepKind, _ phase: StepPhase) -> CrashPoint {
            let occurrence = counts.withLock { counts in
                counts["\(kind):\(phase.rawValue)", default: 0] += 1
                return counts["\(kind):\(phase.rawValue)"] ?? 1
            }
            return CrashPoint(kind, phase, occurrence: occurrence)
        }
    }
}

extension UpgradeStep {
    /// The boundaries this step can pass, in order: the phases its observer is told of, where a crash
    /// test may kill it (``CrashPoint/possibleBoundaries(of:)``), and, between the preflight and the end
    /// the runner reports for every step, the phases its progress moves through. A relocation's include
    /// a copy's unless its strategy is `rename`.
    var phases: [StepPhase] {
        if case .relocate(let relocate) = self, relocate.strategy == .rename {
            return StepPhase.boundaries(for: .rename)
        }
        return CrashPoint.phases(of: kind)
    }
}
