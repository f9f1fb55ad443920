import Foundation
import GRDB
import GRDBSQLite

/// The values real stores hold at the edges, which a migration must carry: NULL, empty and
/// maximal text, non-ASCII, emoji, right-to-left text, text holding NUL, integers at the 64-bit
/// limits, floats at their edges (±0, subnormal, the largest), empty and large blobs, and the same
/// value twice in a column that is not unique. The first rows of every table, and one row in 29
/// after them, carry them, wherever the column's declared type and constraints allow; keys,
/// references, Core Data's bookkeeping and external data stay ordinary.
enum EdgeValues {
    /// One row in this many (after the first ones) carries edge values.
    static let period = 29
    /// The first rows carry them all, each once (a column has at most 9 edge values).
    static let first = 10
    /// Bytes of the large blob: two pages of 4 KiB, so that it spills into overflow pages.
    static let largeBlob = 8_192
    /// Characters of the longest text where no `length()` CHECK bounds it: the longest the
    /// captured store held (at least 64), up to 4 KiB.
    static func longText(_ plan: ColumnPlan) -> Int { min(max(plan.statistics.maxBytes, 64), 4_096) }

    /// The edge value of `plan`'s column in row `row`, or nil when the row is ordinary there or no
    /// edge value fits the column. Within the first rows each admissible value comes once (the
    /// duplicate twice), starting at a place of the column's own, so the values of a row vary.
    static func value(_ plan: ColumnPlan, row: Int) -> DatabaseValue? {
        guard row <= first || row % period == 0 else { return nil }
        // Worked out once per table (a long text and filters per call were a seventh of a generation).
        let candidates = plan.edgeValues ?? admissible(plan)
        guard !candidates.isEmpty, row <= candidates.count || row % period == 0 else { return nil }
        let start = Int(plan.nameHash % UInt64(candidates.count))
        return candidates[(row - 1 + start) % candidates.count]
    }

    /// The edge values the column's type, `NOT NULL` and parsed `CHECK` allow.
    static func admissible(_ plan: ColumnPlan) -> [DatabaseValue] {
        if plan.statistics.externalFraction > 0 { return [] }
        return candidates(plan).filter { admits($0, plan) }
    }

    private static func candidates(_ plan: ColumnPlan) -> [DatabaseValue] {
        let duplicate: DatabaseValue
        var values: [DatabaseValue] = [.null]
        switch plan.affinity {
        case .integer, .numeric:
            duplicate = 42.databaseValue
            values += [Int64.max.databaseValue, Int64.min.databaseValue, 0.databaseValue, (-1).databaseValue]
        case .real:
            duplicate = 0.5.databaseValue
            values += [
                (-0.0).databaseValue, Double.leastNonzeroMagnitude.databaseValue,
                Double.leastNormalMagnitude.databaseValue, Double.greatestFiniteMagnitude.databaseValue,
                (-Double.greatestFiniteMagnitude).databaseValue,
            ]
        case .text:
            duplicate = "duplicate".databaseValue
            let limit = plan.domain?.maxLength ?? longText(plan)
            let texts = [
                "", String(repeating: "m", count: max(limit, 0)), "naïve café 北京 Ελληνικά",
                "👩‍👩‍👧‍👦 🎉", "שלום עולם مرحبا", "a\u{0}b",
            ]
            // Too long for a length() CHECK: cut (by code points, as SQLite counts).
            values += texts.map { text in
                String(String.UnicodeScalarView(text.unicodeScalars.prefix(max(limit, 0)))).databaseValue
            }
        case .blob:
            duplicate = Data([1, 2, 3]).databaseValue
            values += [Data().databaseValue, Data(repeating: 0xA5, count: largeBlob).databaseValue]
        }
        // Twice, so that the first rows already hold a duplicate (what a later UNIQUE index trips on).
        return values + [duplicate, duplicate]
    }

    /// Whether `value` fits the column as far as its declared constraints say (a constraint the
    /// parser does not read is met by the insertion's repair, which draws ordinary values).
    private static func admits(_ value: DatabaseValue, _ plan: ColumnPlan) -> Bool {
        let domain = plan.domain
        let kind: String =
            switch value.storage {
            case .null: "null"
            case .int64: "integer"
            case .double: "real"
            case .string: "text"
            case .blob: "blob"
            }
        if value.isNull && plan.notNull { return false }
        guard let domain else { return true }
        if let kinds = domain.kinds, !kinds.contains(kind) { return false }
        if value.isNull { return true }
        if domain.values != nil || domain.date || domain.json || domain.glob != nil || domain.like != nil
            || domain.caseFunction != nil
        {
            return false
        }
        switch value.storage {
        case .int64, .double:
            guard let number = Double.fromDatabaseValue(value) else { return false }
            if let lower = domain.lower, number < lower || (number == lower && domain.lowerStrict) { return false }
            if let upper = domain.upper, number > upper || (number == upper && domain.upperStrict) { return false }
            return true
        case .string(let text):
            guard domain.lower == nil, domain.upper == nil else { return false }
            // SQLite's length() counts code points up to the first NUL.
            let length = text.unicodeScalars.prefix { $0 != "\u{0}" }.count
            if let minimum = domain.minLength, length < minimum { return false }
            if let maximum = domain.maxLength, text.unicodeScalars.count > maximum { return false }
            return !text.contains { domain.excluded.contains($0) }
        default:
            return domain.lower == nil && domain.upper == nil
        }
    }

    /// Binds `value` at `index`. Text is bound with its length in bytes, straight from the
    /// string's UTF-8: GRDB's binding goes through a C string, which ends a text holding NUL there
    /// and, for a short string, is a copy (a tenth of a row's time, chinook's schema).
    static func bind(_ value: DatabaseValue, to statement: SQLiteStatement, at index: CInt) -> CInt {
        guard case .string(var text) = value.storage else { return value.bind(to: statement, at: index) }
        let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
        // (A NULL pointer would bind NULL: the empty text has its own.)
        guard !text.isEmpty else { return sqlite3_bind_text(statement, index, "", 0, transient) }
        text.makeContiguousUTF8()  // (every text made here already is: no copy)
        return text.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                sqlite3_bind_text(statement, index, $0.baseAddress, CInt($0.count), transient)
            }
        } ?? SQLITE_MISUSE
    }
}
