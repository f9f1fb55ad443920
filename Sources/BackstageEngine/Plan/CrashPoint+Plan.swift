import BackstageModel
import BackstageSystem
import Foundation

extension CrashPoint: LosslessStringConvertible, Codable {
    /// Parses `kind:phase[@N]` (N from 1, 1 when left out); nil for anything else, and for a
    /// phase the kind of step never passes (`migrateSchema:copying`).
    public init?(_ text: String) {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        let names = parts[0].split(separator: ":", omittingEmptySubsequences: false)
        guard names.count == 2, let phase = StepPhase(rawValue: String(names[1])) else { return nil }
        let kind = StepKind(rawValue: String(names[0]))
        guard Self.phases(of: kind).contains(phase) else { return nil }
        var occurrence = 1
        if parts.count == 2 {
            guard let number = Int(parts[1]), number >= 1, String(number) == parts[1] else { return nil }
            occurrence = number
        }
        self.init(kind, phase, occurrence: occurrence)
    }

    /// Every `kind:phase` a step can pass, the forms ``init(_:)`` reads (without `@N`).
    public static let forms: [String] = StepKinds.all.flatMap { kind in
        kind.phases.map { "\(kind.kind):\($0.rawValue)" }
    }

    /// The phases a step of `kind` can pass, in order (a relocation's include a copy's); none for a
    /// kind no step has.
    public static func phases(of kind: StepKind) -> [StepPhase] {
        StepKinds.named(kind)?.phases ?? []
    }

    /// The boundaries `plan` passes when every step runs, in order, each numbered by occurrence;
    /// a relocation that may rename (strategy `auto` or `rename`) counted as a rename.
    public static func boundaries(of plan: UpgradePlan) -> [CrashPoint] {
        numbered(plan.steps.map { ($0.kind, $0.definition.plannedPhases) })
    }

    /// Every boundary `plan` can pass: ``boundaries(of:)``, and a copy's phases for a relocation
    /// that copies when its store is on another file system (strategy `auto`).
    public static func possibleBoundaries(of plan: UpgradePlan) -> [CrashPoint] {
        numbered(plan.steps.map { ($0.kind, $0.definition.phases) })
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
}
