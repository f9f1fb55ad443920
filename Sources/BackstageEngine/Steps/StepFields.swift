import BackstageModel
import BackstageSystem
import Foundation

/// The field checks every kind's ``StepDefinition/fieldProblems`` shares.
enum StepFields {
    /// A store location must name a file below its root, not the root itself.
    static func problem(_ location: ContainerLocation, _ place: String) -> String? {
        let parts = location.path.split(separator: "/", omittingEmptySubsequences: false)
        if location.path.isEmpty || parts.contains(where: { $0.isEmpty || $0 == "." }) || location.path.hasSuffix("/") {
            return
                "\(place) \(location) does not name a store: write <root>/<path of the store>, such as applicationSupport/Notes.sqlite"
        }
        return nil
    }

    /// An empty table name in `tables`, at `place`.
    static func tableProblems(_ tables: [String], _ place: String) -> [String] {
        tables.enumerated().compactMap { index, table in
            table.trimmingCharacters(in: .whitespaces).isEmpty
                ? "\(place)[\(index)] is empty: write a table's name" : nil
        }
    }

    /// True when `sql` holds nothing but whitespace, comments and semicolons.
    static func isBlank(sql: String) -> Bool {
        var rest = Substring(sql)
        while let first = rest.first {
            if first.isWhitespace || first == ";" {
                rest = rest.dropFirst()
            } else if rest.hasPrefix("--") {
                rest = rest.drop { $0 != "\n" }
            } else if rest.hasPrefix("/*") {
                guard let end = rest.range(of: "*/") else { return true }
                rest = rest[end.upperBound...]
            } else {
                return false
            }
        }
        return true
    }
}
