import Backstage
import Foundation
import GRDB
import GRDBSQLite

/// Rows inserted many to a statement (`INSERT INTO t (…) VALUES (…), (…), …`), for the same rows
/// as one statement per row: SQLite's cost per statement (cursors opened and closed, the table's
/// last page sought for each new rowid, `sqlite_sequence` read and written for AUTOINCREMENT)
/// paid once per batch instead of once per row.
///
/// The rows of a batch are drawn one after the other exactly as one at a time, and SQLite inserts
/// them in order, checking each as it comes, as it would row by row. When one is refused, the
/// rows before it are in (with `journal_mode = OFF` a failed statement's rows stay; with the
/// journal the generator keeps where triggers fire, none do) and those after it were never tried:
/// the generator is put back as it was before the refused row was drawn, and that row goes
/// through ``SchemaGenerator/insert(_:_:table:plan:row:rows:maker:memory:random:)`` and its
/// repairs, one at a time. How many went in is counted by rowid, so only tables with one
/// are batched, and only where a batch has no effect of its own to undo: no trigger fires on
/// insert, no Core Data external data file is written for a value.
final class RowBatches {
    /// Rows per statement at most by default (fewer when the table's columns would pass SQLite's
    /// limit on bound parameters).
    static let largestBatch = 64
    /// After a refused row, rows go in one at a time for this many before batches start again.
    static let singleRows = 16

    private let db: Database
    private let head: String, tuple: String
    private let width: Int
    private let largest: Int
    /// The statement of each number of rows, prepared when first used.
    private var statements: [Statement?]
    /// `SELECT max(rowid)` and `SELECT count(*) … WHERE rowid > ?`: the rows a refused batch left in.
    private let largestRowid: Statement, countAfter: Statement
    /// Rows in the next batch (1: one at a time, `singles` more rows).
    private var size: Int
    private var singles = 0
    /// The text of the batch's values, for a ``ValueMaker`` drawing the batch's rows.
    let arena: TextArena

    /// Nil when the table cannot be batched: a WITHOUT ROWID or virtual table, one a trigger
    /// fires on when a row goes in, one with Core Data external data, or all rowid names taken.
    init?(
        _ table: String, plan: TablePlan, schema: StoreSchema, maker: ValueMaker, rows: Int = largestBatch,
        in db: Database
    ) throws {
        guard let object = schema.objects.first(where: { $0.name == table }), object.kind == .table,
            object.withoutRowID != true, !plan.columns.isEmpty,
            maker.external == nil || !plan.columns.contains(where: { $0.shape.externalFraction > 0 }),
            !schema.objects.contains(where: {
                $0.kind == .trigger && $0.table.lowercased() == table.lowercased()
                    && Self.firesOnInsert($0.sql)
            }),
            let rowid = ["rowid", "_rowid_", "oid"].first(where: { name in
                !plan.columns.contains { $0.name.lowercased() == name }
            })
        else { return nil }
        let limit = Int(sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, -1))
        let largest = min(rows, limit / plan.columns.count)
        guard largest > 1 else { return nil }
        let name = table.quotedSQLIdentifier
        self.db = db
        self.width = plan.columns.count
        self.largest = largest
        self.size = largest
        statements = Array(repeating: nil, count: largest + 1)
        arena = TextArena(width: plan.columns.count)
        head = "INSERT INTO \(name) (\(plan.columns.map(\.name.quotedSQLIdentifier).joined(separator: ", "))) VALUES "
        tuple = "(" + Array(repeating: "?", count: width).joined(separator: ", ") + ")"
        largestRowid = try db.makeStatement(sql: "SELECT max(\(rowid)) FROM \(name)")
        countAfter = try db.makeStatement(sql: "SELECT count(*) FROM \(name) WHERE \(rowid) > ?")
    }

    /// Whether a `CREATE TRIGGER` statement's event is an INSERT (its words before `ON`).
    static func firesOnInsert(_ sql: String) -> Bool {
        triggerEvent(sql).map { $0 == "insert" } ?? true
    }

    /// A `CREATE TRIGGER` statement's event, "insert", "update" or "delete" (the first of them
    /// among its words before `ON`); nil when none is found.
    static func triggerEvent(_ sql: String) -> String? {
        for token in SQLTokens.tokens(sql) {
            if token == .word("on") { return nil }
            for event in ["insert", "update", "delete"] where token == .word(event) { return event }
        }
        return nil
    }

    /// How many rows the next batch takes of the `rows` left: 0 when the next row goes in alone.
    func nextCount(of rows: Int) -> Int {
        if size == 1 {
            singles -= 1
            if singles <= 0 { size = 2 }
            return 0
        }
        let count = min(size, rows)
        return count > 1 ? count : 0
    }

    private func statement(rows: Int) throws -> SQLiteStatement {
        if let statement = statements[rows] { return statement.sqliteStatement }
        let statement = try db.makeStatement(sql: head + Array(repeating: tuple, count: rows).joined(separator: ", "))
        statements[rows] = statement
        return statement.sqliteStatement
    }

    /// The table's largest rowid (0 when empty).
    private func largestRowidNow() throws -> Int64 {
        let handle = largestRowid.sqliteStatement
        sqlite3_reset(handle)
        guard sqlite3_step(handle) == SQLITE_ROW else { throw Self.error(db) }
        defer { sqlite3_reset(handle) }
        return sqlite3_column_int64(handle, 0)
    }

    /// Rows whose rowid is above `rowid`.
    private func rows(after rowid: Int64) throws -> Int {
        let handle = countAfter.sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_int64(handle, 1, rowid)
        guard sqlite3_step(handle) == SQLITE_ROW else { throw Self.error(db) }
        defer { sqlite3_reset(handle) }
        return Int(sqlite3_column_int64(handle, 0))
    }

    private static func error(_ db: Database) -> DatabaseError {
        let connection = db.sqliteConnection
        return DatabaseError(
            resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
            message: String(cString: sqlite3_errmsg(connection)))
    }

    /// Inserts rows `first..<first + count` in one statement; returns how many went in, and whether
    /// the one after them was refused (then `random` and the references are as before it was drawn).
    func insert(
        _ first: Int, count: Int, plan: TablePlan, random: inout SeededRandom,
        draw: (Int, inout SeededRandom) throws -> [DatabaseValue]
    ) throws -> (inserted: Int, refused: Bool) {
        let references = plan.references, own = references.filter { $0.ownColumns != nil }
        var rows: [[DatabaseValue]] = [], states: [SeededRandom] = [], tuples: [Int] = [], madeUp: [Bool] = []
        rows.reserveCapacity(count)
        states.reserveCapacity(count)
        arena.reset(rows: count)
        for row in first..<(first + count) {
            arena.row = row - first
            states.append(random)
            for reference in own { tuples.append(reference.count) }
            for reference in references { madeUp.append(reference.madeUp) }
            let values = try draw(row, &random)
            // As each row that goes in: a table that refers to itself takes its keys as parents.
            for reference in own { reference.appendKey(of: values, number: row) }
            rows.append(values)
        }
        let below = try largestRowidNow()
        let statement = try statement(rows: count)
        sqlite3_reset(statement)
        for (row, values) in rows.enumerated() {
            for (column, value) in values.enumerated() {
                let slot = row * width + column, index = CInt(slot + 1)
                let code =
                    arena.bind(slot, to: statement, at: index) ?? EdgeValues.bind(value, to: statement, at: index)
                guard code == SQLITE_OK else { throw Self.error(db) }
            }
        }
        do {
            try SchemaGenerator.step(statement)
            size = min(size * 2, largest)
            return (count, false)
        } catch let error as DatabaseError {
            let went = try self.rows(after: below)
            guard went < count else { throw error }
            random = states[went]
            for (index, reference) in own.enumerated() { reference.truncate(to: tuples[went * own.count + index]) }
            for (index, reference) in references.enumerated() {
                reference.madeUp = madeUp[went * references.count + index]
            }
            size /= 2
            if size == 1 { singles = Self.singleRows }
            return (went, true)
        }
    }
}
