import BackstageSystem
/// What ties one table of a store to another in its schema, so that both must stay in one store
/// when it is split: SQLite resolves each of these by name inside one database file, and finds
/// nothing (`no such table: main.podcast`) once the other table is in another file or discarded.
public enum TableTie: Sendable, Hashable, CustomStringConvertible {
    /// The table declares a foreign key (`REFERENCES`) into the other.
    case foreignKey
    /// The trigger of this name, on the table, reads or writes the other in its body.
    case trigger(String)
    /// The view of this name reads both tables.
    case view(String)
    /// The table is a full-text index (fts4, fts5) whose `content=` option names the other: its
    /// rows are read from there.
    case fullTextContent
    /// The table is a shadow table (`_data`, `_node`...) of the other, a virtual table, which
    /// SQLite creates and keeps it with.
    case shadowTable

    /// How `table` is tied to `other`, as a clause: `table thumbnail references podcast (a foreign key)`.
    public func clause(_ table: String, _ other: String) -> String {
        switch self {
        case .foreignKey: "table \(table) references \(other) (a foreign key)"
        case .trigger(let name): "trigger \(name) on table \(table) touches table \(other)"
        case .view(let name): "view \(name) reads tables \(table) and \(other)"
        case .fullTextContent: "full-text table \(table) indexes the content of table \(other) (content=)"
        case .shadowTable: "table \(table) is a shadow table of virtual table \(other)"
        }
    }

    /// True when both tables need each other (a view reads both, a shadow table is part of its
    /// virtual table); false when only the first needs the second (a child its parent).
    public var isMutual: Bool {
        switch self {
        case .view, .shadowTable: true
        case .foreignKey, .trigger, .fullTextContent: false
        }
    }

    public var description: String {
        switch self {
        case .foreignKey: "foreign key"
        case .trigger(let name): "trigger \(name)"
        case .view(let name): "view \(name)"
        case .fullTextContent: "full-text content"
        case .shadowTable: "shadow table"
        }
    }

    /// The sentence saying why a split that puts `table` in `tableStore` and `other` in
    /// `otherStore` (nil: discarded) breaks the tie, naming both tables and both stores.
    public func separation(table: String, in tableStore: String?, other: String, in otherStore: String?) -> String {
        let places =
            switch (tableStore, otherStore) {
            case (let here?, let there?): "puts \(table) in \(here) and \(other) in \(there)"
            case (let here?, nil): "puts \(table) in \(here) and discards \(other)"
            case (nil, let there?): "discards \(table) and puts \(other) in \(there)"
            case (nil, nil): "discards \(table) and \(other)"
            }
        let consequence =
            switch self {
            case .view: "the view could be created in neither store and would be lost"
            case .shadowTable: "the virtual table's index would be torn apart"
            case .fullTextContent: "a search of \(table) would fail (no such table: main.\(other))"
            case .foreignKey, .trigger:
                "the app's first write to \(table) would fail (no such table: main.\(other))"
            }
        return "\(clause(table, other)), but the split \(places): "
            + "\(consequence); keep them in one store, or discard both"
    }
}
