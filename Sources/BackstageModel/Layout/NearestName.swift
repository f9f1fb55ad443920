import BackstageSystem
/// The name a user most likely meant, for "did you mean" in an error: the closest of the known
/// names by edit distance (case folded), when it is only a few letters away.
///
/// For example:
///
/// ```swift
/// NearestName.suggestion(for: "v33", among: ["v1", "v2", "v3"])  // "v3"
/// NearestName.suggestion(for: "Recipes.sqlite", among: ["Notes.sqlite"])  // nil: not a typo
/// ```
public enum NearestName {
    /// The known name nearest `name`, when it looks like a typo of it: at most 2 edits, or 15% of
    /// the longer name; nil when none is that close or `name` is itself known.
    public static func suggestion(for name: String, among known: some Sequence<String>) -> String? {
        var best: (name: String, distance: Int)?
        for candidate in known where candidate != name {
            let d = distance(candidate, name)
            if d < best?.distance ?? .max { best = (candidate, d) }
        }
        guard let best, isTypo(distance: best.distance, best.name, name) else { return nil }
        return best.name
    }

    /// " (did you mean X?)", or "" when no known name is close.
    public static func didYouMean(_ name: String, among known: some Sequence<String>) -> String {
        suggestion(for: name, among: known).map { " (did you mean \($0)?)" } ?? ""
    }

    /// True when `distance` edits between `a` and `b` is a typo's: at most 2, or 15% of the longer.
    package static func isTypo(distance: Int, _ a: String, _ b: String) -> Bool {
        distance <= max(2, max(a.count, b.count) * 15 / 100)
    }

    /// Levenshtein distance of the two strings, case folded.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased())
        let b = Array(b.lowercased())
        guard !a.isEmpty else { return b.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }
}
