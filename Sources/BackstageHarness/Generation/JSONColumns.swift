import Backstage
import Foundation

extension SchemaGenerator {
    /// SQLite's JSON functions that refuse text that is not JSON ("malformed JSON").
    static let jsonReaders: Set<String> = [
        "json", "jsonb", "json_extract", "jsonb_extract", "json_array_length", "json_type", "json_valid",
        "json_each", "json_tree", "json_remove", "jsonb_remove", "json_set", "jsonb_set", "json_insert",
        "jsonb_insert", "json_replace", "jsonb_replace", "json_patch", "jsonb_patch", "json_pretty",
    ]

    /// The columns of `table` (lower-cased) that a JSON function reads where a row's insertion
    /// evaluates it: a generated column, an index expression or a `CHECK` of the table, a trigger
    /// on it (`NEW.c`). Signal Desktop's `callId TEXT GENERATED ALWAYS AS (json_extract(json,
    /// '$.callId'))`, indexed: a row whose `json` is not JSON is refused with "malformed JSON".
    /// Their values are JSON text.
    func jsonColumns(of table: String, names: [String]) -> Set<String> {
        let columns = Set(names.map { $0.lowercased() })
        var found: Set<String> = []
        for object in schema.objects
        where (object.kind == .table && object.name.lowercased() == table.lowercased())
            || ((object.kind == .index || object.kind == .trigger) && object.table.lowercased() == table.lowercased())
        {
            let tokens = SQLTokens.tokens(object.sql)
            /// The column named at `at` (`c`, `NEW.c`, `t.c`) when it is a whole argument.
            func column(at: Int) -> String? {
                guard at < tokens.count, case .word(let first) = tokens[at] else { return nil }
                var name = first, end = at + 1
                if end + 1 < tokens.count, tokens[end] == .symbol("."), case .word(let second) = tokens[end + 1] {
                    (name, end) = (second, end + 2)
                }
                guard columns.contains(name), end < tokens.count,
                    tokens[end] == .symbol(",") || tokens[end] == .symbol(")") || tokens[end] == .symbol("->")
                else { return nil }
                return name
            }
            for index in tokens.indices {
                if case .word(let function) = tokens[index], Self.jsonReaders.contains(function),
                    index + 1 < tokens.count, tokens[index + 1] == .symbol("("), let name = column(at: index + 2)
                {
                    found.insert(name)
                }
                // `c -> '$.x'`, `c ->> '$.x'`
                if tokens[index] == .symbol("->"), index > 0, case .word(let name) = tokens[index - 1],
                    columns.contains(name)
                {
                    found.insert(name)
                }
            }
        }
        return found
    }
}
