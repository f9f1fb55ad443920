import BackstageModel
/// Callbacks of one move: phase boundaries (where tests inject crashes), byte progress and cancellation.
package struct MoveObserver {
    var phase: (StepPhase) -> Void = { _ in }
    var progress: (Int64, Int64) -> Void = { _, _ in }
    /// Work goes on within `phase` that counts no bytes (a long migration statement): at most every 100 ms.
    var heartbeat: (StepPhase) -> Void = { _ in }
    var isCancelled: () -> Bool = { false }
}
