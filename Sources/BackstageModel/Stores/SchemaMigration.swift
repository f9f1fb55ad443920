import BackstageSystem
/// One schema migration: an identifier recorded in `grdb_migrations`, and its SQL. A
/// ``StoreDescription`` applies them when it loads its store, and an upgrade plan's `migrateSchema`
/// step (``UpgradeStep/MigrateSchema``) runs them; both share the history.
public struct SchemaMigration: Sendable, Hashable, Codable {
    public var id: String
    public var sql: String
    /// True when the migration means to drop data (a table or a column that holds rows):
    /// `backstage catalog lint` reports such a drop as an error unless the plan says so.
    public var destructive: Bool?
    public init(id: String, sql: String, destructive: Bool? = nil) {
        self.id = id
        self.sql = sql
        self.destructive = destructive
    }
}
