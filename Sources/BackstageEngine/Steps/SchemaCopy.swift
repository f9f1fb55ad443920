import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// Empty in-memory copies of a store's schema.
package enum SchemaCopy {
    struct Unbuildable: Error {
        var reason: String
    }

    /// One schema object, in creation order.
    struct Object {
        var type: String
        var name: String
        var table: String
        var sql: String
    }

    /// The objects of `db`'s schema that a copy creates: no SQLite table, no shadow table (its
    /// virtual table makes it), in the order they were created.
    static func objects(_ db: Database) throws -> [Object] {
        let shadows = Set(
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow'")
        )
        return try Row.fetchAll(
            db, sql: "SELECT type, name, tbl_name, sql FROM main.sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
        )
        .map { Object(type: $0["type"], name: $0["name"], table: $0["tbl_name"], sql: $0["sql"]) }
        .filter { !$0.name.hasPrefix("sqlite_") && !shadows.contains($0.name) }
    }

    /// A copy of the schema of the store at `path`, with the identifiers of the migrations it
    /// applied, read `immutable=1`: no lock, no `-shm`, no byte written; a `-wal`'s frames are not read.
    package static func make(of path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "Backstage.MigrationRehearsal"
        let source: DatabaseQueue
        do {
            source = try DatabaseQueue(path: StoreFileSet.immutableURI(path), configuration: configuration)
        } catch {
            throw BackstageError(error, path: path, during: .upgrading)
        }
        defer { try? source.close() }
        let found: [Object] = try source.read { db in try Self.objects(db) }
        let applied: [String] = try source.read { db in
            guard try db.tableExists("grdb_migrations") else { return [] }
            return try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        }
        return try build(found, applied: applied)
    }

    /// An in-memory database with `objects`, and `applied` recorded as GRDB records migrations.
    static func build(_ objects: [Object], applied: [String]) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let copy = try DatabaseQueue(configuration: configuration)
        do {
            try copy.writeWithoutTransaction { db in
                for object in objects { try db.execute(sql: object.sql) }
                for identifier in applied {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
                }
                try MissingFunctions.register(in: db)
            }
        } catch let error as DatabaseError {
            throw Unbuildable(reason: error.message ?? "\(error.resultCode)")
        }
        return copy
    }
}
