extension Array where Element == Double {
    /// The median (the mean of the two middle values for an even count; 0 when empty): what every
    /// benchmark here reports, so one noisy run does not decide a figure.
    package var median: Double {
        let sorted = self.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
