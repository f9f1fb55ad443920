import BackstageModel
import BackstageSystem
import Foundation

extension UpgradePlan {
    /// What is wrong with the plan's fields, each on its own, one sentence each naming the JSON
    /// path: an empty name, a store location that names only a root, a split into nothing, a
    /// migration without an identifier or SQL. Empty for a plan whose every field is usable.
    /// (Whether the steps agree with each other is a question for the whole plan.)
    package var fieldProblems: [String] {
        var problems: [String] = []
        if name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            problems.append("name is empty: give the plan a name, such as v1-to-v2")
        }
        if let version, let reason = Self.problem(withVersion: version) { problems.append("version \(reason)") }
        for (index, step) in steps.enumerated() {
            problems += step.definition.fieldProblems.map { "steps[\(index)].\(step.kind)\($0)" }
        }
        return problems
    }

    /// Why `version` cannot name a storage version, nil when it can: it is recorded in the
    /// container and names files, so it is short, printable and holds no path separator.
    package static func problem(withVersion version: String) -> String? {
        if version.isEmpty { return "is empty: write a name such as v2 or 2.3" }
        if version.count > 64 { return "\(version.prefix(20))… is longer than 64 characters" }
        if version.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            || version.contains("/")
            || version.contains("\\") || version.hasPrefix(".") || version.contains(where: \.isWhitespace)
        {
            return "\(version) is not a version name: use letters, digits, '.', '-', '_' or '+', not starting with '.'"
        }
        return nil
    }
}
