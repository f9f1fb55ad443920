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
            problems += step.fieldProblems.map { "steps[\(index)].\(step.kind)\($0)" }
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

extension UpgradeStep {
    /// The step's field problems, each starting with its path below the step (`.from is …`).
    var fieldProblems: [String] {
        switch self {
        case .relocate(let step):
            return [Self.problem(step.from, ".from"), Self.problem(step.to, ".to")].compactMap { $0 }
        case .split(let step):
            var problems = [Self.problem(step.store, ".store")].compactMap { $0 }
            if step.into.isEmpty { problems.append(".into is empty: name the store (or stores) the tables go to") }
            for (index, target) in step.into.enumerated() {
                problems += [Self.problem(target.store, ".into[\(index)].store")].compactMap { $0 }
                if target.tables.isEmpty {
                    problems.append(".into[\(index)].tables is empty: name the tables that go to \(target.store)")
                }
                problems += Self.tableProblems(target.tables, ".into[\(index)].tables")
            }
            return problems + Self.tableProblems(step.discard, ".discard")
        case .migrateSchema(let step):
            var problems = [Self.problem(step.store, ".store")].compactMap { $0 }
            if step.migrations.isEmpty { problems.append(".migrations is empty: give at least one {\"id\", \"sql\"}") }
            var seen: Set<String> = []
            for (index, migration) in step.migrations.enumerated() {
                let place = ".migrations[\(index)]"
                if migration.id.trimmingCharacters(in: .whitespaces).isEmpty {
                    problems.append("\(place).id is empty: give each migration an identifier, such as v2-add-rating")
                } else if !seen.insert(migration.id).inserted {
                    problems.append(
                        "\(place).id \(migration.id) is the identifier of an earlier migration of this step: each has its own"
                    )
                }
                if Self.isBlank(sql: migration.sql) {
                    problems.append("\(place).sql holds no SQL statement: write the migration's SQL")
                }
            }
            return problems
        case .quarantine:
            return []
        }
    }

    /// A store location must name a file below its root, not the root itself.
    private static func problem(_ location: ContainerLocation, _ place: String) -> String? {
        let parts = location.path.split(separator: "/", omittingEmptySubsequences: false)
        if location.path.isEmpty || parts.contains(where: { $0.isEmpty || $0 == "." }) || location.path.hasSuffix("/") {
            return
                "\(place) \(location) does not name a store: write <root>/<path of the store>, such as applicationSupport/Notes.sqlite"
        }
        return nil
    }

    private static func tableProblems(_ tables: [String], _ place: String) -> [String] {
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
