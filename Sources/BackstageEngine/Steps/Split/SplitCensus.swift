import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// Each table's rows and the Core Data external data files they reference, counted on a second
/// connection while the split's locked connection copies the rows.
///
/// The split's exclusive lock refuses every other connection, its own process's included, so the
/// census opens the store `immutable=1`: read-only, without locks. That is sound only because of
/// the lock: with the WAL checkpointed into the main file and every other writer shut out, the
/// file cannot change while the lock is held, which is what `immutable` asks. Counting on the
/// locked connection instead reads every page twice in a row with one core idle (0.2 s of a 1.5 s
/// split of a 430 MB store).
///
/// The rows the copy inserted are compared with these counts before the split is `verified`.
package final class SplitCensus: @unchecked Sendable {
    package struct Counts: Sendable, Equatable {
        package var rows: [String: Int] = [:]
        /// The external data files each table's BLOB columns reference.
        package var references: [String: Set<String>] = [:]

        package init(rows: [String: Int] = [:], references: [String: Set<String>] = [:]) {
            self.rows = rows
            self.references = references
        }

        /// Every table (and shadow table) of every target received as many rows as were counted
        /// in the source, or the first target that differs is named.
        /// - parameter copied: The rows inserted into each table, a dictionary a target.
        /// - parameter targets: The targets' paths, in the same order.
        package func verify(copied: [[String: Int]], targets: [String]) throws(BackstageError) {
            for (inserted, target) in zip(copied, targets) where inserted.contains(where: { rows[$0.key] != $0.value })
            {
                throw BackstageError(.verificationFailed, path: target, during: .upgrading)
            }
        }
    }

    private let threads = ThreadGroup()
    private let queue: DatabaseQueue
    private let path: String
    /// Written by the census thread, read after ``wait()`` (the group's wait orders the two).
    private var outcome: Result<Counts, any Error>?

    /// Starts counting `tables` (references and rows) and `shadows` (rows only) of the store at
    /// `path`, which the caller holds locked for as long as the census runs.
    ///
    /// - parameter references: False when the store has no external data folder: the rows are
    ///   only counted (SQLite counts a b-tree's cells without decoding a row, and uses the
    ///   smallest index when there is one).
    /// - throws: ``BackstageError/Cause/sqlite(code:message:)`` naming the store when SQLite cannot open it.
    package init(
        store path: String, tables: [String], shadows: [String], references: Bool = true
    ) throws(BackstageError) {
        self.path = path
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "Backstage.SplitCensus"
        do {
            queue = try DatabaseQueue(path: BulkCopy.sourceURI(path), configuration: configuration)
        } catch {
            throw BackstageError(error, path: path, during: .upgrading)
        }
        let queue = queue
        threads.start { [self] in
            outcome = Result {
                try queue.inDatabase { db in
                    try Self.count(db, tables: tables, shadows: shadows, references: references)
                }
            }
        }
    }

    /// Waits for the census and returns its counts.
    ///
    /// - throws: ``BackstageError/Cause/sqlite(code:message:)`` naming the store when SQLite failed
    ///   to read it (a damaged page, say).
    package func wait() throws(BackstageError) -> Counts {
        threads.wait()
        defer { try? queue.close() }
        guard let outcome else { preconditionFailure("the census thread ends before wait() returns") }
        switch outcome {
        case .success(let counts): return counts
        case .failure(let error): throw BackstageError(error, path: path, during: .upgrading)
        }
    }

    /// Stops the census at its next row and waits for its thread (a split that failed).
    package func cancel() {
        queue.interrupt()
        threads.wait()
        try? queue.close()
    }

    /// Counts on one connection, in one pass a table.
    static func count(_ db: Database, tables: [String], shadows: [String], references: Bool) throws -> Counts {
        var counts = Counts()
        for table in tables where references {
            (counts.rows[table], counts.references[table]) = try countAndReferences(db, table: table)
        }
        for table in references ? shadows : tables + shadows {
            counts.rows[table] =
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM main.\(table.quotedSQLIdentifier)") ?? 0
        }
        return counts
    }

    /// A table's row count and the external data files its BLOB columns reference, in one pass.
    /// A reference is a BLOB of byte 0x02 then the file's UUID (Core Data's external-storage
    /// marker); anything else in that shape is not a file name Core Data wrote and is ignored (a
    /// hostile store cannot name `../` through it).
    static func countAndReferences(_ db: Database, table: String) throws -> (rows: Int, references: Set<String>) {
        let name = table.quotedSQLIdentifier
        let lists = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(name))")
            .filter { ($0["type"] as String? ?? "").uppercased().contains("BLOB") }
            .map { ($0["name"] as String).quotedSQLIdentifier }
            .map {
                "group_concat(CASE WHEN typeof(\($0)) = 'blob' AND length(\($0)) BETWEEN 37 AND 38 AND substr(\($0), 1, 1) = x'02' THEN CAST(substr(\($0), 2, 36) AS TEXT) END, ',')"
            }
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT \((["COUNT(*)"] + lists).joined(separator: ", ")) FROM main.\(name)")
        else { return (0, []) }
        var references: Set<String> = []
        for index in lists.indices {
            guard let list = row[index + 1] as String? else { continue }
            references.formUnion(
                list.split(separator: ",").lazy.map(String.init).filter { UUID(uuidString: $0) != nil })
        }
        return (row[0], references)
    }
}
