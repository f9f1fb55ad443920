import BackstageModel
import BackstageSystem
import Foundation

/// What a ``CoreDataMigrationProgram`` will cost on a store, from its statements and the sizes of
/// the tables they reach, before anything runs.
///
/// The program renames each table it rebuilds aside, creates the new one, copies the rows, builds the
/// indexes, drops the old table: each name is followed through those renames and copies back to the
/// store's table whose rows it holds, so that `CREATE INDEX … ON ZNOTE` weighs the rows copied into
/// the new `ZNOTE` and `DROP TABLE _BACKSTAGE_SOURCE_ZNOTE` the old table and its indexes. Each kind
/// of work costs a time per row plus a time per byte (``Throughput/CoreDataMigrationRates``); the
/// estimate once divided the tables' bytes by ``Throughput/migrate`` (the rate of adding a column,
/// 8 GB/s), 0.1–5 % of the time measured.
package struct CoreDataMigrationCost {
    /// One piece of work, on the store's tables whose rows it reads.
    package enum Work: Equatable {
        /// Rows copied from these tables (`INSERT … SELECT`, `UPDATE`).
        case copy([String])
        /// Positions numbered from these tables' rows into a temporary table.
        case positions([String])
        /// An index built over the rows of these tables.
        case index([String])
        /// These tables dropped (or emptied), with their indexes.
        case drop([String])
    }

    /// The work of `program`'s statements, each table named as the store names it (lowercased).
    package static func works(_ program: CoreDataMigrationProgram) -> [Work] {
        // What each name holds now: the store's tables whose rows are in it (none for a new table).
        var holds: [String: [String]] = [:]
        func origin(_ name: String) -> [String] { holds[name] ?? [name] }
        var works: [Work] = []
        for statement in program.sql {
            let parsed = Statement(statement)
            guard let verb = parsed.words.first else { continue }
            switch verb {
            case "ALTER":
                guard let from = parsed.name(after: 2), let rename = parsed.index(of: "RENAME"),
                    parsed.word(rename + 1) == "TO", let to = parsed.name(after: rename + 2)
                else { continue }
                holds[to] = origin(from)
                holds[from] = []
            case "CREATE":
                if let on = parsed.index(of: "ON"), parsed.index(of: "INDEX").map({ $0 < on }) == true,
                    let table = parsed.name(after: on + 1)
                {
                    works.append(.index(origin(table)))
                } else if let table = parsed.index(of: "TABLE").flatMap({ parsed.name(after: $0 + 1) }) {
                    let read = parsed.outermostSource.map(origin) ?? []
                    if !read.isEmpty { works.append(.copy(read)) }
                    holds[table] = read
                }
            case "INSERT", "REPLACE":
                guard let into = parsed.index(of: "INTO"), let table = parsed.name(after: into + 1),
                    let source = parsed.outermostSource
                else { continue }
                let read = origin(source)
                works.append(parsed.isTemporary(at: into + 1) ? .positions(read) : .copy(read))
                holds[table] = origin(table) + read
            case "UPDATE":
                if let table = parsed.name(after: 1) { works.append(.copy(origin(table))) }
            case "DELETE":
                if let from = parsed.index(of: "FROM"), let table = parsed.name(after: from + 1) {
                    works.append(.drop(origin(table)))
                    holds[table] = []
                }
            case "DROP":
                guard parsed.word(1) == "TABLE", let table = parsed.name(after: 2) else { continue }
                if !parsed.isTemporary(at: 2) { works.append(.drop(origin(table))) }
                holds[table] = []
            default:
                continue
            }
        }
        return works
    }

    /// The store's tables `works` read, lowercased: the b-trees an estimate sizes.
    package static func tables(_ works: [Work]) -> Set<String> {
        Set(
            works.flatMap { work -> [String] in
                switch work {
                case .copy(let tables), .positions(let tables), .index(let tables), .drop(let tables): tables
                }
            })
    }

    /// The seconds `works` take on a store of `sizes` (nil: unreadable, so each table named weighs
    /// the whole store, `storeBytes`, at 200 bytes a row).
    package static func seconds(
        _ works: [Work], sizes: BTreeSizes?, storeBytes: Int64, rates: Throughput.CoreDataMigrationRates
    ) -> Double {
        func cost(_ rate: Throughput.MigrationRates.Rate, _ tables: [String], withIndexes: Bool = false) -> Double {
            tables.reduce(0) { total, table in
                let bytes: Int64, rows: Int64
                if let sizes {
                    bytes = (withIndexes ? sizes.bytesWithIndexes(of: table) : sizes.bytes[table]) ?? 0
                    rows = sizes.rows[table] ?? 0
                } else {
                    (bytes, rows) = (storeBytes, storeBytes / 200)
                }
                return total + Double(rows) * rate.secondsPerRow + Double(bytes) / rate.bytesPerSecond
            }
        }
        return works.reduce(0) { total, work in
            switch work {
            case .copy(let tables): total + cost(rates.copy, tables)
            case .positions(let tables): total + cost(rates.positions, tables)
            case .index(let tables): total + cost(rates.index, tables)
            case .drop(let tables): total + cost(rates.drop, tables, withIndexes: true)
            }
        }
    }

    /// One statement's words, uppercased, with the depth of parentheses each is at.
    private struct Statement {
        var words: [String] = []
        var names: [String] = []
        var depths: [Int] = []

        init(_ sql: String) {
            var reader = SQLWords(sql, limit: .max)
            var depth = 0
            while let word = reader.next() {
                if word == ")" { depth -= 1 }
                words.append(word.uppercased())
                names.append(word.lowercased())
                depths.append(depth)
                if word == "(" { depth += 1 }
            }
        }

        func word(_ index: Int) -> String? { index < words.count ? words[index] : nil }

        func index(of word: String) -> Int? { words.firstIndex(of: word) }

        /// Where the name after `start` begins, past `IF [NOT] EXISTS`, `OR REPLACE` and the like.
        private func nameStart(_ start: Int) -> Int {
            var at = start
            while at < words.count,
                ["IF", "NOT", "EXISTS", "OR", "REPLACE", "IGNORE"]
                    .contains(words[at])
            { at += 1 }
            return at
        }

        /// The name at `start` (lowercased), its schema (`temp.`, `main.`) left off.
        func name(after start: Int) -> String? {
            let at = nameStart(start)
            guard at < names.count else { return nil }
            if at + 2 < names.count, names[at + 1] == "." { return names[at + 2] }
            return names[at]
        }

        /// True when the name at `start` is in the `temp` schema.
        func isTemporary(at start: Int) -> Bool {
            let at = nameStart(start)
            return at + 1 < names.count && names[at + 1] == "." && ["temp", "temporary"].contains(names[at])
        }

        /// The table the statement reads its rows from: the first named after a `FROM` at the least
        /// depth (not a subquery's lookup of another table per row), not a temporary one.
        var outermostSource: String? {
            var best: (depth: Int, name: String)?
            for index in words.indices where words[index] == "FROM" || words[index] == "JOIN" {
                guard index + 1 < words.count, words[index + 1] != "(", !isTemporary(at: index + 1),
                    let name = name(after: index + 1)
                else { continue }
                if best.map({ depths[index] < $0.depth }) ?? true { best = (depths[index], name) }
            }
            return best?.name
        }
    }
}
