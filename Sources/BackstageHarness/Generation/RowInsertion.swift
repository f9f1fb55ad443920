import Backstage
import Foundation
import GRDB
import GRDBSQLite

extension SchemaGenerator {
    /// Inserts one row. A constraint the drawn values still broke (one over several columns, or
    /// a trigger's `RAISE`) is repaired from the constraint's columns and literals; a row whose
    /// key exists already (a trigger made it) is left out.
    func insert(
        _ statement: Statement, _ values: [DatabaseValue], table: String, plan: TablePlan, row: Int, rows: Int,
        maker: ValueMaker, memory: RepairMemory, random: inout SeededRandom
    ) throws {
        var values = values
        let attempts = 24
        var next = 0, tried: Set<Int> = [], applied: (message: String, attempt: Int)?
        for step in 0..<attempts {
            do {
                // Bound in place: building a StatementArguments per row (a generic map through a key
                // path, not specialised across modules) was a quarter of a captured schema's
                // generation time (perf, Apple Photos' schema).
                sqlite3_reset(statement.sqliteStatement)  // bindings are refused after a step until then
                for (index, value) in values.enumerated() {
                    let code = EdgeValues.bind(value, to: statement.sqliteStatement, at: CInt(index + 1))
                    guard code == 0 else {
                        throw DatabaseError(
                            resultCode: ResultCode(rawValue: code), message: "binding column \(index + 1) of \(table)")
                    }
                }
                try Self.step(statement.sqliteStatement)
                if let applied { memory.learned[applied.message] = applied.attempt }
                return
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                let message = error.message ?? "\(error.extendedResultCode)"
                let normalized = memory.normalized(message)
                let check = plan.checks.first { normalized.hasSuffix($0.sql) }
                // "UNIQUE constraint failed: t.a, t.b" names its columns; a CHECK, its expression.
                let named =
                    message.split(separator: ": ", maxSplits: 1).last.map {
                        $0.split(separator: ", ").compactMap { $0.split(separator: ".").last.map(String.init) }
                    } ?? []
                // A trigger's RAISE names neither: the trigger is found by its message, and its
                // columns are those it reads of the new row.
                let raised =
                    error.extendedResultCode == .SQLITE_CONSTRAINT_TRIGGER
                    ? memory.trigger(for: message) { raisingTrigger(of: table, message: message) } : nil
                let columns =
                    raised?.columns ?? check?.columns
                    ?? (named.allSatisfy { name in plan.columns.contains { $0.name == name } } && !named.isEmpty
                        ? named : plan.checks.flatMap(\.columns))
                guard step < attempts - 1, error.extendedResultCode != .SQLITE_CONSTRAINT_PRIMARYKEY,
                    !(error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE && step >= 3)
                else {
                    if let raised {
                        throw GeneratorError.trigger(
                            table: table, trigger: raised.name, columns: raised.columns, message: message)
                    }
                    throw GeneratorError.constraint(
                        table: table, column: columns.isEmpty ? "-" : columns.joined(separator: ", "), message: message)
                }
                // The repair that met this constraint last time first, then the others in turn.
                let attempt: Int
                if let known = memory.learned[message], !tried.contains(known) {
                    attempt = known
                } else {
                    while tried.contains(next) { next += 1 }
                    attempt = next
                }
                tried.insert(attempt)
                applied = (message, attempt)
                values = try repaired(
                    values, plan: plan, columns: Set(columns), check: check, attempt: attempt, row: row, rows: rows,
                    maker: maker, random: &random)
            } catch is DatabaseError where step == 0 {
                // An edge value a trigger or generated column cannot take (abs() of the smallest
                // integer overflows): the row again with ordinary values.
                values = try repaired(
                    values, plan: plan, columns: [], check: nil, attempt: 0, row: row, rows: rows,
                    maker: maker, random: &random)
            } catch let error as DatabaseError {
                let message = error.message ?? "\(error)"
                if let raised = memory.trigger(for: message, { raisingTrigger(of: table, message: message) }) {
                    throw GeneratorError.trigger(
                        table: table, trigger: raised.name, columns: raised.columns, message: message)
                }
                throw GeneratorError.constraint(
                    table: table, column: plan.columns.map(\.name).joined(separator: ", "), message: message)
            }
        }
    }

    /// Runs a bound INSERT once, as GRDB's `execute()` would but without its bookkeeping per
    /// statement (queue checks, region and observer tracking, a second reset: a tenth of a row's
    /// time). Refused, as GRDB refuses it, once a trigger's `RAISE(ROLLBACK)` ended the transaction
    /// the rows go in; SQLite's error, with its extended code and message, otherwise.
    static func step(_ statement: SQLiteStatement) throws {
        let connection = sqlite3_db_handle(statement)
        guard sqlite3_get_autocommit(connection) == 0 else {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "Transaction was aborted")
        }
        let code = sqlite3_step(statement)
        guard code != SQLITE_DONE else { return }
        throw DatabaseError(
            resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
            message: String(cString: sqlite3_errmsg(connection)))
    }

    /// New values for the columns a failed constraint reads: new draws, then NULL where allowed,
    /// then the constraint's own literals, then one column's value copied to the others (and one
    /// more, one less: `a <= b`, `a < b`).
    func repaired(
        _ values: [DatabaseValue], plan: TablePlan, columns: Set<String>, check: CheckConstraint?, attempt: Int,
        row: Int, rows: Int, maker: ValueMaker, random: inout SeededRandom
    ) throws -> [DatabaseValue] {
        var values = values, maker = maker
        maker.edges = false
        let all = columns.isEmpty
        let involved = plan.columns.indices.filter {
            (all || columns.contains(plan.columns[$0].name.lowercased())) && plan.columns[$0].isFree
        }
        // The references it reads: other parents (or NULL), as the free columns get other values.
        if !all {
            redrawReferences(
                plan, columns: Set(columns.map { $0.lowercased() }), nulls: attempt == 8, row: row, values: &values,
                random: &random)
        }
        switch attempt {
        case 0..<8:
            for index in involved {
                values[index] = try maker.value(plan.columns[index], row: row, rows: rows, random: &random)
            }
        case 8:
            for index in involved where !plan.columns[index].notNull { values[index] = .null }
        case 18, 19:
            // Exactly one of them set (`(a IS NULL) <> (b IS NULL)`): the first, or the last, NULL.
            guard let index = attempt == 18 ? involved.first : involved.last, !plan.columns[index].notNull else {
                break
            }
            for other in involved where other != index {
                var value = try maker.value(plan.columns[other], row: row, rows: rows, random: &random)
                for _ in 0..<8 where value.isNull {
                    value = try maker.value(plan.columns[other], row: row, rows: rows, random: &random)
                }
                values[other] = value.isNull ? row.databaseValue : value
            }
            values[index] = .null
        case 9..<18:
            let literals = check?.literals ?? []
            guard !literals.isEmpty else { fallthrough }
            for (n, index) in involved.enumerated() { values[index] = literals[(attempt - 9 + n) % literals.count] }
        default:
            guard let first = involved.first else { break }
            for (n, index) in involved.enumerated().dropFirst() {
                let step = attempt % 3 == 0 ? 0 : (attempt % 3 == 1 ? n : -n)
                if let number = Int64.fromDatabaseValue(values[first]) {
                    values[index] = (number + Int64(step)).databaseValue
                } else {
                    values[index] = values[first]
                }
            }
        }
        return values
    }
}

/// Which repair met each constraint (by SQLite's message) last, for one table's rows.
final class RepairMemory {
    var learned: [String: Int] = [:]
    private var messages: [String: String] = [:]
    private var triggers: [String: (name: String, columns: [String])?] = [:]

    /// The trigger whose `RAISE` says `message`, and the columns it reads (found once per message).
    func trigger(
        for message: String, _ find: () -> (name: String, columns: [String])?
    ) -> (name: String, columns: [String])? {
        if let known = triggers[message] { return known }
        let found = find()
        triggers[message] = found
        return found
    }

    /// SQLite's message in normalized tokens, as the constraints are kept (once per message).
    func normalized(_ message: String) -> String {
        if let known = messages[message] { return known }
        let text = SQLTokens.normalized(message)
        messages[message] = text
        return text
    }
}
