import Backstage
import Foundation
import GRDB

extension PlanFingerprint {
    /// The fingerprint of `plan` as it is now.
    public init(of plan: UpgradePlan) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var migrations: [String: String] = [:]
        for step in plan.steps.compactMap({ $0.as(UpgradeStep.MigrateSchema.self) }) {
            for migration in step.migrations {
                migrations["\(step.store) \(migration.id)"] = SHA256.hash(Array(migration.sql.utf8))
            }
        }
        self.init(plan: SHA256.hash(Array(try encoder.encode(plan))), migrations: migrations)
    }

    /// What changed from this (the shipped fingerprint) to `current`, one line each; empty when
    /// nothing did.
    public func changes(to current: PlanFingerprint) -> [String] {
        guard plan != current.plan else { return [] }
        var changes: [String] = []
        for key in Set(migrations.keys).union(current.migrations.keys).sorted() {
            let parts = key.split(separator: " ", maxSplits: 1).map(String.init)
            let (store, id) = (parts.first ?? "", parts.last ?? key)
            switch (migrations[key], current.migrations[key]) {
            case (_?, nil): changes.append("migration \(id) of \(store) was removed")
            case (nil, _?): changes.append("migration \(id) of \(store) was added")
            case (let a?, let b?) where a != b: changes.append("migration \(id) of \(store) was edited")
            default: break
            }
        }
        return changes.isEmpty ? ["its steps were edited"] : changes
    }
}

extension DataCheck {
    /// The check's query run on `db`: every row, every column.
    public func result(in db: Database) throws -> [[CheckValue]] {
        try Row.fetchAll(db, sql: sql).map { row in
            row.databaseValues.map { value in
                switch value.storage {
                case .null: .null
                case .int64(let number): .integer(number)
                case .double(let number): .real(number)
                case .string(let text): .text(text)
                case .blob(let data): .text("x'" + data.map { String(format: "%02x", $0) }.joined() + "'")
                }
            }
        }
    }

    /// Why the check's query is not one read-only query compiling against `schema` (SQLite
    /// prepares it: one statement, `sqlite3_stmt_readonly`, returning columns), nil when it is.
    /// The reason reads after the check's name: "does not compile against …".
    public func queryProblem(against schema: StoreSchema) -> String? {
        do {
            return try SchemaDescription.withDatabase(recorded: schema) { db -> String? in
                let statement: Statement
                do {
                    statement = try db.makeStatement(sql: sql)
                } catch let error as DatabaseError where error.message?.hasPrefix("Multiple statements found") == true {
                    return "holds more than one statement: a check is one SELECT"
                }
                guard statement.isReadonly, statement.columnCount > 0 else {
                    return "is not a read-only query: a check is one SELECT, which never changes the store"
                }
                return nil
            }
        } catch let error as DatabaseError {
            return "does not compile against \(store): \(error.message ?? "\(error.resultCode)")"
        } catch {
            return "cannot be checked: \(error)"
        }
    }

    /// The check's query run on a private copy of `store`.
    public func result(of store: StoreFileSet) throws -> [[CheckValue]] {
        try StoreInspector.withCopy(of: store) { db in try result(in: db) }
    }

    /// Why the check fails, nil when it holds. `before` is the result before the upgrade, for an
    /// `DataCheck/Expectation/unchanged` check.
    public func failure(after: [[CheckValue]], before: [[CheckValue]]?) -> String? {
        switch expect {
        case .equals(let value):
            guard after.count == 1, after[0].count == 1 else {
                return "check \"\(name)\" expects one value, \(value); its query returned \(after.count) row(s)"
                    + (after.first.map { " of \($0.count) column(s)" } ?? "")
            }
            return after[0][0].matches(value) ? nil : "check \"\(name)\" expects \(value), found \(after[0][0])"
        case .unchanged:
            guard let before else {
                return "check \"\(name)\": no store of the version upgraded from could run its query"
            }
            guard before != after else { return nil }
            func show(_ rows: [[CheckValue]]) -> String {
                let shown = rows.prefix(3).map { "(" + $0.map(\.description).joined(separator: ", ") + ")" }.joined(
                    separator: ", ")
                return rows.count > 3 ? shown + ", … (\(rows.count) rows)" : shown.isEmpty ? "no rows" : shown
            }
            return "check \"\(name)\" changed: \(show(before)) before the upgrade, \(show(after)) after it"
        }
    }

    /// The result before an upgrade: the query run on the first of `stores` where it runs (the
    /// tables it reads may live elsewhere in the older version); nil when none can run it.
    public func resultBefore(in stores: [StoreFileSet]) -> [[CheckValue]]? {
        for store in stores where FileManager.default.fileExists(atPath: store.main.path) {
            if let result = try? result(of: store) { return result }
        }
        return nil
    }
}
