import BackstageSystem
/// The name that reaches a rowid table's rowid in SQL: `rowid`, else `_rowid_`, else `oid`, the
/// first that no column of the table is named (a column of one of those names shadows it).
package enum RowidName {
    /// Nil when the table has a column of each of the three names: no statement can read or set
    /// its rowid, so nothing can depend on it either.
    package static func name(amongColumns columns: [String]) -> String? {
        let taken = Set(columns.map { $0.lowercased() })
        return ["rowid", "_rowid_", "oid"].first { !taken.contains($0) }
    }
}
