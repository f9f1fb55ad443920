import BackstageModel
import BackstageSystem
import Foundation
import GRDBSQLite

/// What a migration's SQL will cost on a store, read from its statements and the sizes of the
/// tables they name, before anything runs.
///
/// Each statement is known by its first words: adding a plain column or creating a view costs
/// nothing that grows with the store; adding a column with a `CHECK` scans its table; an index
/// reads and sorts its table; `UPDATE`, `DELETE … WHERE`, `INSERT … SELECT`, `CREATE TABLE … AS`
/// and dropping a column rewrite theirs; dropping a table or deleting all its rows overwrites its
/// pages (SQLite builds here zero freed pages); `VACUUM` rewrites the store. Each kind's cost is a
/// time per row plus a time per byte of the table it touches (its indexes included where SQLite
/// maintains them), measured on this machine's class of disk: see ``Throughput/migrationRates``.
package struct MigrationCost {
    /// What a statement does to the table it names.
    package enum Work: Equatable {
        case constant
        case scan(String)
        case index(String)
        case rewrite(String)
        case overwrite(String)
        /// Every table: `VACUUM`, or a statement whose work cannot be read from its words.
        case wholeStore(rewrite: Bool)
    }

    /// The work of each statement of `sql`, split where SQLite would split it.
    package static func works(_ sql: String) -> [Work] {
        statements(sql).map(work)
    }

    /// The statements of `sql`: text up to each `;` after which SQLite says the statement is complete
    /// (`sqlite3_complete`: quotes, comments and trigger bodies are SQLite's to read).
    package static func statements(_ sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        for character in sql {
            current.append(character)
            if character == ";", sqlite3_complete(current) != 0 {
                statements.append(current)
                current = ""
            }
        }
        if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { statements.append(current) }
        return statements
    }

    package static func work(_ statement: String) -> Work {
        var words = SQLWords(statement)
        var all: [String] = []
        while let word = words.next(), all.count < 400 { all.append(word) }
        let upper = all.map { $0.uppercased() }
        guard let verb = upper.first else { return .constant }
        /// The name after the words `after`, skipping `IF [NOT] EXISTS` and a schema prefix.
        func name(after index: Int) -> String? {
            var at = index
            while at < upper.count,
                ["IF", "NOT", "EXISTS", "OR", "ROLLBACK", "ABORT", "REPLACE", "FAIL", "IGNORE"]
                    .contains(upper[at])
            { at += 1 }
            guard at < all.count else { return nil }
            if at + 2 < all.count, all[at + 1] == "." { return all[at + 2] }
            return all[at]
        }
        func firstIndex(of word: String, from start: Int = 0) -> Int? {
            upper.indices.first { $0 >= start && upper[$0] == word }
        }
        func sourceTable() -> String? {
            guard let select = firstIndex(of: "SELECT"), let from = firstIndex(of: "FROM", from: select) else {
                return nil
            }
            return name(after: from + 1)
        }
        switch verb {
        case "CREATE":
            var at = 1
            while at < upper.count, ["TEMP", "TEMPORARY", "UNIQUE"].contains(upper[at]) { at += 1 }
            guard at < upper.count else { return .constant }
            if upper[at] == "INDEX", let on = firstIndex(of: "ON", from: at), let table = name(after: on + 1) {
                return .index(table)
            }
            if upper[at] == "TABLE", firstIndex(of: "AS") != nil, let table = sourceTable() { return .rewrite(table) }
            return .constant
        case "ALTER":
            guard upper.count > 3, upper[1] == "TABLE", let table = name(after: 2) else { return .constant }
            let action = upper.firstIndex { ["ADD", "DROP", "RENAME"].contains($0) }.map { upper[$0] }
            switch action {
            case "ADD": return upper.contains("CHECK") ? .scan(table) : .constant
            case "DROP": return .rewrite(table)
            default: return .constant
            }
        case "UPDATE":
            return name(after: 1).map(Work.rewrite) ?? .wholeStore(rewrite: true)
        case "DELETE":
            guard let from = firstIndex(of: "FROM"), let table = name(after: from + 1) else {
                return .wholeStore(rewrite: true)
            }
            return upper.contains("WHERE") ? .rewrite(table) : .overwrite(table)
        case "INSERT", "REPLACE":
            return sourceTable().map(Work.rewrite) ?? .constant
        case "DROP":
            guard upper.count > 2, upper[1] == "TABLE" || upper[1] == "INDEX", let name = name(after: 2) else {
                return .constant
            }
            return .overwrite(name)
        case "VACUUM":
            return .wholeStore(rewrite: true)
        case "REINDEX":
            return .wholeStore(rewrite: false)
        case "WITH":
            return .wholeStore(rewrite: true)
        default:
            return .constant
        }
    }

    /// The seconds `works` take on a store of `sizes` (nil: unreadable, so every statement that
    /// names a table counts the whole store, `storeBytes`).
    package static func seconds(
        _ works: [Work], sizes: BTreeSizes?, storeBytes: Int64, rates: Throughput.MigrationRates
    ) -> Double {
        let storeRows = sizes.map { $0.rows.values.reduce(0, +) } ?? storeBytes / 200
        func cost(_ rate: Throughput.MigrationRates.Rate, _ table: String?, withIndexes: Bool = true) -> Double {
            let name = table?.lowercased()
            let bytes =
                name.flatMap { withIndexes ? sizes?.bytesWithIndexes(of: $0) ?? sizes?.bytes[$0] : sizes?.bytes[$0] }
                ?? storeBytes
            let rows = name.flatMap { sizes?.rows[$0] } ?? storeRows
            return Double(rows) * rate.secondsPerRow + Double(bytes) / rate.bytesPerSecond
        }
        return works.reduce(0) { total, work in
            switch work {
            case .constant: total
            case .scan(let table): total + cost(rates.scan, table, withIndexes: false)
            case .index(let table): total + cost(rates.index, table, withIndexes: false)
            case .rewrite(let table): total + cost(rates.rewrite, table)
            case .overwrite(let table): total + cost(rates.overwrite, table)
            case .wholeStore(let rewrite): total + cost(rewrite ? rates.rewrite : rates.index, nil)
            }
        }
    }
}
