import BackstageEngine
import BackstageModel
extension Duration {
    /// The duration in seconds, as a `Double` (for reports and medians).
    package var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
