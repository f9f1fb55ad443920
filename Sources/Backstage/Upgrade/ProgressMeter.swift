import BackstageEngine
import BackstageModel
import BackstageSystem
import Foundation

/// Turns each step's phases and bytes into the whole plan's fraction done, each step weighted by
/// its estimated seconds: what a progress bar shows. The fraction only grows, and reaches 1.0 only
/// once the run has ended.
final class ProgressMeter {
    /// Where each pending step starts and how much of the plan it weighs, by step index.
    private var spans: [Int: (start: Double, width: Double)] = [:]
    private(set) var fraction = 0.0
    /// The last step and phase reported, and how many events in a row repeated it without bytes:
    /// work that counts none (a long migration statement) creeps toward the next boundary.
    private var last: (step: Int, phase: StepPhase)?
    private var repeats = 0

    init(_ estimate: UpgradeEstimate) {
        // A step estimated at nothing still moves the bar a little.
        let weights = estimate.steps.map { max($0.seconds, 0.001) }
        let total = max(weights.reduce(0, +), .leastNonzeroMagnitude)
        var start = 0.0
        for (step, weight) in zip(estimate.steps, weights) {
            spans[step.index] = (start / total, weight / total)
            start += weight
        }
    }

    /// The steps whose end was reported.
    private var ended: Set<Int> = []

    /// False for a second report of a step's end (the step's own `done` boundary, then the runner's).
    func isFirstReport(of phase: StepPhase, step index: Int) -> Bool {
        phase != .done || ended.insert(index).inserted
    }

    /// The plan's fraction done at `phase` of step `index` (of kind `kind`), with the step's bytes.
    func advance(step index: Int, kind: UpgradeStep, phase: StepPhase, bytesDone: Int64, bytesTotal: Int64) -> Double {
        guard let span = spans[index] else { return fraction }
        let phases = Self.phases(of: kind)
        let position = Double(phases.firstIndex(of: phase) ?? 0)
        var within = phase == .done ? 1 : position / Double(max(phases.count, 1))
        if bytesTotal > 0 {
            // Bytes move the bar between the boundary reached and the next one.
            within += Double(min(bytesDone, bytesTotal)) / Double(bytesTotal) / Double(max(phases.count, 1))
        } else {
            repeats = last.map { $0.step == index && $0.phase == phase } == true ? repeats + 1 : 0
            within += (1 - pow(0.9, Double(repeats))) / Double(max(phases.count, 1))
        }
        last = (index, phase)
        // 1.0 belongs to the end of the run (``finish()``), after the launch record.
        fraction = max(fraction, min(span.start + span.width * min(within, 1), 0.999))
        return fraction
    }

    /// The end of the run.
    func finish() -> Double {
        fraction = 1
        return fraction
    }

    /// The step's boundaries (``UpgradeStep/phases``), from the preflight to the end, which the
    /// upgrader reports for every step.
    private static func phases(of step: UpgradeStep) -> [StepPhase] {
        var phases = step.definition.phases
        if phases.first != .preflight { phases.insert(.preflight, at: 0) }
        if phases.last != .done { phases.append(.done) }
        return phases
    }
}
