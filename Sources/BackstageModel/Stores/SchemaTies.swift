import BackstageSystem

/// One object of a store's schema, as `sqlite_schema` holds it.
package struct SchemaObject: Sendable, Hashable {
    /// `table`, `index`, `view` or `trigger` (a virtual table is a `table`).
    package var type: String
    package var name: String
    /// The table an index or trigger is on; the object itself for tables and views.
    package var table: String
    /// The `CREATE` statement.
    package var sql: String

    package init(type: String, name: String, table: String, sql: String) {
        self.type = type
        self.name = name
        self.table = table
        self.sql = sql
    }
}

/// What ties the tables of one schema together, read from its SQL with ``SQLTokens``: foreign keys
/// (`REFERENCES`), triggers whose body touches another table than their own, views reading several
/// tables, full-text tables (fts3/4/5) whose `content=` names another table, shadow tables and their
/// virtual table. Indexes need nothing: each is on one table and goes with it.
///
/// A split asks which ties it would separate (``separated(by:)``): the run's preflight and the step
/// itself (``MigrationRehearsal``, ``SplitRun``), and the catalog's `add-version`, `check` and `lint`
/// use this one analysis.
package struct SchemaTies: Sendable {
    /// `table` needs `other` (as the schema spells them), the way `kind` says.
    package struct Tie: Sendable, Hashable {
        package var table: String
        package var other: String
        package var kind: TableTie
    }

    /// A tie a split breaks: where it puts each table (nil: discarded).
    package struct Separation: Sendable, Hashable {
        package var tie: Tie
        package var tableStore: String?
        package var otherStore: String?

        /// The sentence naming both tables and both stores.
        package var sentence: String {
            tie.kind.separation(table: tie.table, in: tableStore, other: tie.other, in: otherStore)
        }
    }

    /// Where a split puts a table: in a store (named as the plan names it), or nowhere.
    package enum Place: Sendable, Hashable {
        case store(String)
        case discarded

        var store: String? {
            if case .store(let name) = self { return name }
            return nil
        }
    }

    /// Every tie, in the order of the schema's objects.
    package private(set) var ties: [Tie] = []

    /// The ties of `objects`; `shadows` gives each virtual table's shadow tables (which SQLite
    /// lists as tables of their own).
    package init(_ objects: [SchemaObject], shadows: [String: [String]] = [:]) {
        let tables = Set(objects.filter { $0.type == "table" }.map { $0.name.lowercased() })
        let viewObjects = objects.filter { $0.type == "view" }
        let views = Set(viewObjects.map { $0.name.lowercased() })
        var spelled: [String: String] = [:]
        for object in objects where object.type == "table" { spelled[object.name.lowercased()] = object.name }
        for (virtual, names) in shadows { for name in names + [virtual] { spelled[name.lowercased()] = name } }
        var seen: Set<Tie> = []
        func add(_ table: String, _ other: String, _ kind: TableTie) {
            guard table != other else { return }
            let tie = Tie(table: spelled[table] ?? table, other: spelled[other] ?? other, kind: kind)
            if seen.insert(tie).inserted { ties.append(tie) }
        }
        // What each view reads, through the views it reads.
        var named: [String: Set<String>] = [:]
        for view in viewObjects {
            named[view.name.lowercased()] = Self.tablesNamed(in: view.sql, among: tables.union(views))
        }
        func read(_ name: String, visiting: Set<String> = []) -> Set<String> {
            guard let direct = named[name], !visiting.contains(name) else { return tables.contains(name) ? [name] : [] }
            return direct.reduce(into: Set<String>()) { $0.formUnion(read($1, visiting: visiting.union([name]))) }
        }
        for object in objects {
            let name = object.name.lowercased()
            switch object.type {
            case "table":
                for parent in Self.foreignKeyParents(inCreateTable: object.sql) where tables.contains(parent) {
                    add(name, parent, .foreignKey)
                }
                if let content = Self.fullTextContent(inCreateVirtualTable: object.sql) {
                    for other in read(content) { add(name, other, .fullTextContent) }
                }
            case "trigger":
                let on = read(object.table.lowercased())
                for touched in Self.tablesNamed(in: object.sql, among: tables.union(views)) {
                    for other in read(touched) {
                        for table in on { add(table, other, .trigger(object.name)) }
                    }
                }
            case "view":
                let all = read(name).sorted()
                for (index, table) in all.enumerated() {
                    for other in all[(index + 1)...] { add(table, other, .view(object.name)) }
                }
            default:
                break
            }
        }
        for (virtual, names) in shadows.sorted(by: { $0.key < $1.key }) {
            for shadow in names { add(shadow.lowercased(), virtual.lowercased(), .shadowTable) }
        }
    }

    /// The ties a split breaks, given where it puts each table (`place` is asked lower-cased names;
    /// nil for a table the split does not place, such as Core Data's metadata, which every target
    /// gets): a table kept apart from one it needs, or kept while it is discarded. One separation a
    /// view, the first.
    package func separated(by place: (String) -> Place?) -> [Separation] {
        var found: [Separation] = []
        var views: Set<String> = []
        for tie in ties {
            guard let here = place(tie.table.lowercased()), let there = place(tie.other.lowercased()), here != there
            else { continue }
            // A table discarded with what needs it takes nothing with it, unless the tie is mutual.
            if here == .discarded && !tie.kind.isMutual { continue }
            if case .view(let name) = tie.kind, !views.insert(name.lowercased()).inserted { continue }
            found.append(Separation(tie: tie, tableStore: here.store, otherStore: there.store))
        }
        return found
    }

    // MARK: - Reading the SQL

    /// The tables a `CREATE TABLE` statement's foreign keys reference, lower-cased.
    static func foreignKeyParents(inCreateTable sql: String) -> [String] {
        let tokens = SQLTokens.tokens(sql)
        var parents: [String] = []
        for (index, token) in tokens.enumerated() where token == .word("references") {
            guard index + 1 < tokens.count, case .word(var parent) = tokens[index + 1] else { continue }
            // `REFERENCES main.parent`: a foreign key is always within its own database.
            if index + 3 < tokens.count, tokens[index + 2] == .symbol("."), case .word(let name) = tokens[index + 3] {
                parent = name
            }
            parents.append(parent)
        }
        return parents
    }

    /// The table (or view) a full-text virtual table reads its rows from (`content=`), lower-cased;
    /// nil for another module, a full-text table keeping its own content, or a contentless one.
    static func fullTextContent(inCreateVirtualTable sql: String) -> String? {
        let tokens = SQLTokens.tokens(sql)
        guard tokens.starts(with: [.word("create"), .word("virtual"), .word("table")]),
            let using = tokens.firstIndex(of: .word("using")), using + 1 < tokens.count,
            case .word(let module) = tokens[using + 1], ["fts3", "fts4", "fts5"].contains(module),
            let (parts, _) = SQLTokens.parenthesizedParts(tokens, from: using + 1)
        else { return nil }
        for part in parts {
            let items = Array(part)
            guard items.count == 3, items[0] == .word("content"), items[1] == .symbol("=") else { continue }
            let value: String
            switch items[2] {
            case .word(let name): value = name
            case .literal(let text) where text.hasPrefix("'") && text.count >= 2:
                value = String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'").lowercased()
            default: continue
            }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// The names among `known` (lower-cased) that `sql` uses as tables: after `FROM`, `JOIN` (and
    /// the commas of a `FROM` list), `INTO`, `UPDATE [OR …]`, or qualifying a column (`podcast.id`,
    /// `main.podcast`). A column that happens to share a table's name is not one of them.
    static func tablesNamed(in sql: String, among known: Set<String>) -> Set<String> {
        let tokens = SQLTokens.tokens(sql)
        let endsFromList: Set<String> = [
            "where", "group", "order", "limit", "on", "using", "having", "window", "union", "intersect", "except",
            "select", "set", "values", "returning", "begin", "end", "natural", "left", "right", "full", "inner",
            "cross", "outer", "join",
        ]
        var found: Set<String> = []
        var depth = 0
        var fromListDepth: Set<Int> = []
        for (index, token) in tokens.enumerated() {
            switch token {
            case .symbol("("): depth += 1; continue
            case .symbol(")"):
                fromListDepth.remove(depth)
                depth -= 1
                continue
            case .symbol(";"): fromListDepth.removeAll(); continue
            case .word(let word) where endsFromList.contains(word): fromListDepth.remove(depth)
            default: break
            }
            let previous = index > 0 ? tokens[index - 1] : nil
            if previous == .word("from") || previous == .word("join") { fromListDepth.insert(depth) }
            guard case .word(let name) = token, known.contains(name) else { continue }
            let next = index + 1 < tokens.count ? tokens[index + 1] : nil
            var isTable = false
            switch previous {
            case .word("from"), .word("join"), .word("into"), .word("update"): isTable = true
            case .symbol(","): isTable = fromListDepth.contains(depth)
            case .symbol("."):
                // `main.podcast` names the table; `p.podcast`, a column.
                isTable = index >= 2 && [.word("main"), .word("temp")].contains(tokens[index - 2])
            case .word("rollback"), .word("abort"), .word("replace"), .word("fail"), .word("ignore"):
                isTable = index >= 3 && tokens[index - 2] == .word("or") && tokens[index - 3] == .word("update")
            default: break
            }
            if !isTable, next == .symbol("."), previous != .symbol(".") { isTable = true }
            if isTable { found.insert(name) }
        }
        return found
    }
}

extension SchemaTies.Separation {
    /// The error a split of the store at `path` is refused with, before anything is changed.
    package func error(splitting path: String) -> BackstageError {
        BackstageError(
            .tablesSeparated(
                table: tie.table, tableStore: tableStore, other: tie.other, otherStore: otherStore, tie: tie.kind),
            path: path, during: .checkingPlan)
    }
}
