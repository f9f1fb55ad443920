import Backstage
import Foundation

extension CatalogVersion {
    /// Why `name` cannot name a version, nil when it can. A version's name names its folder
    /// (`stores/NAME/`) and its plan (`plans/A-to-NAME.json`): letters, digits, `.`, `-`, `_` and
    /// `+`, not starting with `.`, so nothing is ever written outside the catalog folder.
    public static func problem(withName name: String) -> String? {
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || ".-_+".unicodeScalars.contains(scalar))
        }
        guard !name.isEmpty, name.count <= 64, allowed, !name.hasPrefix("."), !name.hasPrefix("-") else {
            return
                "is not a version name: use up to 64 letters, digits, '.', '-', '_' or '+', not starting with '.' or '-', such as v2 or 2.3"
        }
        return nil
    }
}

extension CatalogManifest {
    /// What is wrong with the manifest's fields, one sentence each naming the JSON path: a version
    /// name that is not usable or is used twice, a store location that names only a root, a file
    /// path that leaves the catalog folder, a data check without a name or SQL.
    public var fieldProblems: [String] {
        var problems: [String] = []
        if versions.isEmpty {
            problems.append("versions is empty: a catalog starts with the version `catalog init` captures")
        }
        var names: [String: Int] = [:]
        for (index, version) in versions.enumerated() {
            let place = "versions[\(index)]"
            if let reason = CatalogVersion.problem(withName: version.name) {
                problems.append("\(place).name \(version.name) \(reason)")
            } else if let first = names[version.name] {
                problems.append(
                    "\(place).name \(version.name) is also the name of versions[\(first)]: each version has its own name"
                )
            }
            names[version.name] = names[version.name] ?? index
            problems += version.fieldProblems.map { place + $0 }
        }
        return problems
    }
}

extension CatalogVersion {
    var fieldProblems: [String] {
        var problems: [String] = []
        if let plan, let reason = Self.problem(withRelativePath: plan) { problems.append(".plan \(plan) \(reason)") }
        if stores.isEmpty { problems.append(".stores is empty: a version keeps at least one store") }
        var locations: Set<ContainerLocation> = []
        for (index, store) in stores.enumerated() {
            let place = ".stores[\(index)]"
            if store.location.path.isEmpty || store.location.path.hasSuffix("/") {
                problems.append(
                    "\(place).location \(store.location) does not name a store: write <root>/<path of the store>")
            } else if !locations.insert(store.location).inserted {
                problems.append("\(place).location \(store.location) is named by an earlier store of this version too")
            }
            for (tableIndex, table) in store.tables.enumerated() where table.isEmpty {
                problems.append("\(place).tables[\(tableIndex)] is empty: write a table's name")
            }
            if let reason = Self.problem(withRelativePath: store.schema) {
                problems.append("\(place).schema \(store.schema) \(reason)")
            }
            if let fresh = store.freshInstall, let reason = Self.problem(withRelativePath: fresh) {
                problems.append("\(place).freshInstall \(fresh) \(reason)")
            }
        }
        var checkNames: Set<String> = []
        for (index, check) in (checks ?? []).enumerated() {
            let place = ".checks[\(index)]"
            if check.name.trimmingCharacters(in: .whitespaces).isEmpty {
                problems.append("\(place).name is empty: give the check a name for reports")
            } else if !checkNames.insert(check.name).inserted {
                problems.append(
                    "\(place).name \"\(check.name)\" is the name of an earlier check of this version: each has its own")
            }
            if check.sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                problems.append("\(place).sql is empty: write one SELECT")
            }
        }
        return problems
    }

    /// Why `path` cannot name a file of the catalog, nil when it can: relative, inside the folder.
    static func problem(withRelativePath path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        if path.isEmpty || path.hasPrefix("/") || parts.contains(where: { $0 == ".." || $0.isEmpty })
            || path.contains("\0")
        {
            return "is not a file of the catalog: write a path relative to the catalog folder, without '..'"
        }
        return nil
    }
}

extension StoreSchema {
    /// What is wrong with the schema's fields, one sentence each naming the JSON path.
    public var fieldProblems: [String] {
        var problems: [String] = []
        if !(512...65536).contains(pageSize) || pageSize & (pageSize - 1) != 0 {
            problems.append("pageSize \(pageSize) is not a SQLite page size (a power of two from 512 to 65536)")
        }
        for (index, object) in objects.enumerated() {
            if object.name.isEmpty { problems.append("objects[\(index)].name is empty") }
            if object.table.isEmpty { problems.append("objects[\(index)].table is empty") }
            if object.sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                problems.append("objects[\(index)].sql is empty: it holds the CREATE statement of \(object.name)")
            }
        }
        for (table, statistics) in tables.sorted(by: { $0.key < $1.key }) {
            if statistics.rows < 0 || statistics.bytes < 0 {
                problems.append("tables.\(table) counts fewer than 0 rows or bytes")
            }
            for (index, column) in statistics.columns.enumerated() {
                let fractions = [
                    column.nullFraction, column.integerFraction, column.realFraction, column.textFraction,
                    column.blobFraction, column.distinctRatio, column.externalFraction,
                ]
                if fractions.contains(where: { !(0...1).contains($0) }) {
                    problems.append("tables.\(table).columns[\(index)] has a share outside 0...1")
                }
            }
        }
        return problems
    }
}
