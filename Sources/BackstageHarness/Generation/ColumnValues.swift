import Backstage
import Foundation
import GRDB

/// How one column's values are made: its role in the table (key, reference, Core Data bookkeeping)
/// and, for the rest, the kinds, sizes and cardinality the capture measured.
///
/// A class: a row reads every column's plan, and copying a struct of strings, arrays and
/// statistics per value retained each of them (a sixth of a generation in retains and releases).
final class ColumnPlan {
    enum Role {
        /// The rowid alias or a key column: the row number, distinct by construction.
        case rowNumber
        /// A declared foreign key: a key of an already generated parent row.
        case reference(parentRows: Int)
        /// Core Data's `Z_ENT`: one of the entity ids stored in this table.
        case entity([Int])
        /// Core Data's `Z_OPT`: an optimistic-locking counter.
        case version
        /// Values shaped by the column's statistics; `unique` when an index demands distinct values.
        case statistics(unique: Bool)
    }

    let name: String
    /// ``stableHash(_:)`` of the name, which seeds every drawn value: hashed once, not per value.
    let nameHash: UInt64
    var role: Role
    var notNull: Bool
    let statistics: ColumnStatistics
    /// Its numbers, without the names: read per value without retaining a string.
    let shape: Shape
    /// The affinity of the declared type, used when the capture saw no value.
    var affinity: Affinity
    /// For a column of a foreign key: which reference of the table plan, and which of its columns.
    var link: (Int, Int)?
    /// What the table's `CHECK` constraints allow of the column.
    var domain: ColumnDomain?
    /// Values must differ row to row (the column stands for a `UNIQUE` group).
    var distinct = false
    /// ``EdgeValues/admissible(_:)`` once the plan is complete (nil: worked out at each use).
    var edgeValues: [DatabaseValue]?
    /// The column holds dates (``isDateLike(name:declared:)``): its text is `YYYY-MM-DD HH:MM:SS` and
    /// its integers Unix times, as apps write them, not words and small numbers an app's date
    /// parser would reject.
    var dateLike = false
    /// Its declared type names dates (`DATE`, `DATETIME`, `TIMESTAMP`).
    var declaredDate = false
    /// Its drawn text goes straight into a batch's ``TextArena`` (no `CHECK` to fit, no key of the
    /// table's own rows to keep as a value).
    var boundInPlace = false

    init(name: String, role: Role, notNull: Bool, statistics: ColumnStatistics, affinity: Affinity) {
        self.name = name
        self.nameHash = stableHash(name)
        self.role = role
        self.notNull = notNull
        self.statistics = statistics
        self.shape = Shape(statistics)
        self.affinity = affinity
    }

    /// The numbers of ``ColumnStatistics`` a value is drawn from.
    struct Shape {
        let nullFraction, integerFraction, realFraction, textFraction, blobFraction: Double
        let averageBytes, distinctRatio, externalFraction: Double
        let maxBytes, integerBits: Int

        init(_ s: ColumnStatistics) {
            (nullFraction, integerFraction, realFraction) = (s.nullFraction, s.integerFraction, s.realFraction)
            (textFraction, blobFraction, averageBytes) = (s.textFraction, s.blobFraction, s.averageBytes)
            (distinctRatio, externalFraction) = (s.distinctRatio, s.externalFraction)
            (maxBytes, integerBits) = (s.maxBytes, s.integerBits)
        }
    }

    var isRowNumber: Bool {
        if case .rowNumber = role { return true }
        return false
    }

    /// Its values are drawn (not a key, a reference or Core Data's bookkeeping).
    var isFree: Bool {
        if case .statistics = role { return true }
        return false
    }

    /// A STRICT table's declared type: exactly one storage class, or any.
    static func strictAffinity(of declared: String) -> Affinity {
        switch declared.uppercased() {
        case "INT", "INTEGER": .integer
        case "REAL": .real
        case "TEXT": .text
        case "BLOB": .blob
        default: affinity(of: declared)
        }
    }

    /// What a column of a table the capture saw empty looks like: its declared type's values,
    /// mostly present, of a modest size.
    static func defaultStatistics(name: String, declared: String, affinity: Affinity) -> ColumnStatistics {
        // A DATE / DATETIME / TIMESTAMP column nobody captured: text, as most apps write dates in SQLite.
        if declaresDate(declared), affinity == .numeric {
            return ColumnStatistics(
                name: name, declaredType: declared, nullFraction: 0.1, integerFraction: 0, realFraction: 0,
                textFraction: 0.9, blobFraction: 0, averageBytes: 19, maxBytes: 19, distinctRatio: 0.8,
                integerBits: 0)
        }
        let kinds: (Double, Double, Double, Double) =
            switch affinity {
            case .integer, .numeric: (0.9, 0, 0, 0)
            case .real: (0, 0.9, 0, 0)
            case .text: (0, 0, 0.9, 0)
            case .blob: declared.isEmpty ? (0, 0, 0.9, 0) : (0, 0, 0, 0.9)
            }
        return ColumnStatistics(
            name: name, declaredType: declared, nullFraction: 0.1, integerFraction: kinds.0, realFraction: kinds.1,
            textFraction: kinds.2, blobFraction: kinds.3, averageBytes: 24, maxBytes: 64, distinctRatio: 0.8,
            integerBits: 20)
    }

    enum Affinity { case integer, real, text, blob, numeric }

    /// A column declared as a date (`DATE`, `DATETIME`, `TIMESTAMP`, `TIME`), or named as one (`created_at`,
    /// `updated_on`, `due_date`, `birthdate`, `timestamp`, `InvoiceDate`) without a declared type
    /// that says otherwise (`BLOB`, `BOOLEAN`, `INTEGER` flags such as `is_dated` are not).
    static func isDateLike(name: String, declared: String) -> Bool {
        if declaresDate(declared) { return true }
        let type = declared.uppercased()
        if type.contains("BLOB") || type.contains("BOOL") || type.contains("CHAR(1)") { return false }
        let lower = name.lowercased()
        if lower.hasPrefix("is_") || lower.hasPrefix("has_") { return false }
        let words = lower.split(whereSeparator: { $0 == "_" || $0 == "-" })
        if let last = words.last, ["at", "on", "date", "timestamp", "datetime"].contains(last), words.count > 1 {
            return true
        }
        return ["date", "timestamp", "datetime", "birthdate"].contains(lower)
            || (lower.count > 4 && (lower.hasSuffix("date") || lower.hasSuffix("timestamp")))
    }

    /// The declared type names dates or times (`DATE`, `DATETIME`, `TIMESTAMP`, `TIME`).
    static func declaresDate(_ declared: String) -> Bool {
        let type = declared.uppercased()
        return type.contains("DATE") || type.contains("TIME")
    }

    /// A Unix time between 2000 and about 2030 (distinct per `row` when `unique`).
    static func unixTime(unique row: Int?, random: inout SeededRandom) -> Int {
        946_684_800 + (row.map { $0 * 61 } ?? Int(random.next() % 950_000_000))
    }

    static func affinity(of declared: String) -> Affinity {
        let type = declared.uppercased()
        if type.contains("INT") { return .integer }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return .text }
        if type.contains("BLOB") || type.isEmpty { return .blob }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return .real }
        return .numeric
    }
}

/// Makes the value of one column for one row, deterministically from the row's generator.
struct ValueMaker {
    /// Words for text values: ASCII and not, so names and bodies exercise UTF-8.
    static let words = [
        "note", "lisbon", "café", "meeting", "idea", "naïve", "résumé", "北京", "garden", "invoice", "draft", "plan",
        "budget", "river", "photo", "über", "sketch", "travel", "recipe", "book", "σοφία", "straße", "ocean", "city",
    ]

    /// Writes Core Data external data files for the store being generated, when asked to.
    var external: ExternalDataWriter?
    /// Edge values (``EdgeValues``) in the rows that carry them; off for the repair of a row.
    var edges = true
    /// Whether some table's foreign keys may name no parent row (shared by copies).
    let keys = KeyLedger()
    /// Where the text of columns ``ColumnPlan/boundInPlace`` goes while a batch of rows is drawn
    /// (the value returned is then a NULL standing in for it); nil: into a `String`.
    var arena: TextArena?

    func value(_ plan: ColumnPlan, row: Int, rows: Int, random: inout SeededRandom) throws -> DatabaseValue {
        switch plan.role {
        case .rowNumber:
            return row.databaseValue
        case .reference(let parentRows):
            if !plan.notNull && random.unit() < plan.shape.nullFraction { return .null }
            return parentRows == 0
                ? (plan.notNull ? 0.databaseValue : .null) : Int(1 + random.next() % UInt64(parentRows)).databaseValue
        case .entity(let ids):
            return ids[Int(random.next() % UInt64(max(ids.count, 1)))].databaseValue
        case .version:
            return Int(1 + random.next() % 3).databaseValue
        case .statistics(let unique):
            if edges && !unique && !plan.distinct, let edge = EdgeValues.value(plan, row: row) { return edge }
            let value = try statistical(plan, unique: unique || plan.distinct, row: row, rows: rows, random: &random)
            guard let domain = plan.domain else { return value }
            return domain.fit(value, distinct: plan.distinct ? row : nil, affinity: plan.affinity, random: &random)
        }
    }

    private func statistical(
        _ plan: ColumnPlan, unique: Bool, row: Int, rows: Int, random: inout SeededRandom
    ) throws -> DatabaseValue {
        let s = plan.shape
        var pick = random.unit()
        if !plan.notNull && !unique {
            if pick < s.nullFraction { return .null }
            pick -= s.nullFraction
        }
        let measured = s.integerFraction + s.realFraction + s.textFraction + s.blobFraction
        var kind = plan.affinity == .numeric ? .integer : plan.affinity
        if measured > 0 {
            // Rescale over the non-null kinds (a NOT NULL column never draws NULL).
            var target = pick / max(1 - (plan.notNull || unique ? 0 : s.nullFraction), 1e-9) * measured
            // The kinds in turn, without an array per value: true once `target` falls in one.
            func lands(_ share: Double, _ candidate: ColumnPlan.Affinity) -> Bool {
                guard share > 0 else { return false }
                kind = candidate
                if target < share { return true }
                target -= share
                return false
            }
            _ =
                lands(s.integerFraction, .integer) || lands(s.realFraction, .real) || lands(s.textFraction, .text)
                || lands(s.blobFraction, .blob)
        }
        // Few distinct values (flags, states, enumerations): draw from a small pool; else from the row.
        let poolSize = unique ? rows : max(1, Int((s.distinctRatio * Double(max(rows, 1))).rounded()))
        let key =
            unique
            ? row
            : (poolSize >= rows
                ? Int(random.next() % UInt64(max(rows, 1) * 4 + 1)) : Int(random.next() % UInt64(poolSize)))
        var keyed = SeededRandom(seed: UInt64(truncatingIfNeeded: key) &* 0x9E37_79B9_7F4A_7C15 ^ plan.nameHash)
        switch kind {
        case .integer, .numeric:
            // Unix times where the declared type says dates, or the captured integers are that large.
            if plan.dateLike && (plan.declaredDate || s.integerBits >= 28) {
                return ColumnPlan.unixTime(unique: unique ? row : nil, random: &keyed).databaseValue
            }
            let bits = max(1, min(62, s.integerBits == 0 ? 16 : s.integerBits))
            if unique { return Int64(row).databaseValue }
            return Int64(keyed.next() % (UInt64(1) << UInt64(bits))).databaseValue
        case .real:
            return (Double(keyed.next() % 1_000_000_000) / 1000 + 600_000_000).databaseValue
        case .text:
            // A date's text is about 19 bytes; a "date" column of longer text holds something else.
            if plan.dateLike && s.averageBytes <= 40 {
                let unix = ColumnPlan.unixTime(unique: unique ? row : nil, random: &keyed)
                // `YYYY-MM-DD` where the app wrote dates without a time (10 bytes on average).
                let dateOnly = s.averageBytes > 0 && s.averageBytes <= 12 && !unique
                if let arena, plan.boundInPlace {
                    arena.writeDate(unix, dateOnly: dateOnly)
                    return .null
                }
                let text = ColumnDomain.dateTime(unix)
                return (dateOnly ? String(text.prefix(10)) : text).databaseValue
            }
            let bytes = size(s, &random)
            if let arena, plan.boundInPlace {
                arena.write(bytes: bytes, unique: unique ? row : nil, random: &keyed)
                return .null
            }
            return text(bytes: bytes, unique: unique ? row : nil, random: &keyed).databaseValue
        case .blob:
            if let external, s.externalFraction > 0, random.unit() < s.externalFraction {
                return try external.write(
                    size: Int(Double(external.averageSize) * (0.5 + random.unit())), random: &random
                ).databaseValue
            }
            return Data(keyed.bytes(max(1, size(s, &random)))).databaseValue
        }
    }

    /// A size around the measured average, within what was seen.
    private func size(_ s: ColumnPlan.Shape, _ random: inout SeededRandom) -> Int {
        let average = max(s.averageBytes, 8)
        let drawn = Int(average * (0.5 + random.unit()))
        return s.maxBytes > 0 ? min(drawn, max(s.maxBytes, 8)) : drawn
    }

    /// ``words`` in UTF-8, each with its trailing space, end to end in one buffer, and where each
    /// starts (the last entry: the end). One flat table: an array per word was retained and
    /// released per word appended.
    private static let wordTable: (bytes: [UInt8], starts: [Int]) = {
        var bytes: [UInt8] = [], starts: [Int] = []
        for word in words {
            starts.append(bytes.count)
            bytes += Array((word + " ").utf8)
        }
        return (bytes, starts + [bytes.count])
    }()

    /// Room a text of `bytes` may take: its unique number, or past `bytes` its last word.
    static func room(forText bytes: Int) -> Int { max(bytes, 21) + 16 }

    private func text(bytes: Int, unique: Int?, random: inout SeededRandom) -> String {
        // Written straight into the string's storage: appending words to a String was a tenth of
        // a generation, building an array of bytes first another allocation per value.
        String(unsafeUninitializedCapacity: Self.room(forText: bytes)) { buffer in
            Self.writeText(into: buffer.baseAddress!, bytes: bytes, unique: unique, random: &random)
        }
    }

    /// Writes a text of `bytes` or a few more (whole words), after `unique` and a space when given,
    /// at `start`, which has ``room(forText:)``; returns its length.
    static func writeText(
        into start: UnsafeMutablePointer<UInt8>, bytes: Int, unique: Int?, random: inout SeededRandom
    ) -> Int {
        var count = 0
        if let unique {
            var digits = unique.magnitude, first = count
            if unique < 0 {
                start[count] = UInt8(ascii: "-")
                (count, first) = (count + 1, first + 1)
            }
            repeat {
                start[count] = UInt8(ascii: "0") + UInt8(digits % 10)
                (digits, count) = (digits / 10, count + 1)
            } while digits > 0
            var number = UnsafeMutableBufferPointer(start: start + first, count: count - first)
            number.reverse()
            start[count] = UInt8(ascii: " ")
            count += 1
        }
        let (table, starts) = Self.wordTable
        table.withUnsafeBufferPointer { words in
            starts.withUnsafeBufferPointer { starts in
                while count < bytes {
                    let word = Int(random.next() % UInt64(starts.count - 1))
                    let length = starts[word + 1] - starts[word]
                    (start + count).update(from: words.baseAddress! + starts[word], count: length)
                    count += length
                }
            }
        }
        return count
    }
}

/// Set once a table's rows were given a foreign key that may name no parent row
/// (``TablePlan/keysHold``): the store's keys are then checked and repaired.
final class KeyLedger {
    var unsure = false
}

/// Writes Core Data external data: a file named by a UUID in `.Name_SUPPORT/_EXTERNAL_DATA`, and
/// the reference the row keeps (the byte 0x02, the UUID, a NUL), as Core Data stores it.
final class ExternalDataWriter {
    /// Where the files go; nil only counts them (a pilot store, weighed in memory).
    let folder: URL?
    /// The captured average size of an external file.
    let averageSize: Int
    private(set) var files = 0
    private(set) var bytes: Int64 = 0

    /// Files are written on a queue of their own, up to 16 in flight, while the rows go on being
    /// inserted: creating thousands of files is kernel work a second core can do (on this
    /// project's ext4, after many deletions, a third of a Notes fixture's time).
    private let writes = DispatchQueue(label: "backstage.external-data")
    private let room = DispatchSemaphore(value: 16)
    private let failure = FirstError()

    init(folder: URL?, averageSize: Int) {
        self.folder = folder
        self.averageSize = max(averageSize, 1024)
    }

    func write(size: Int, random: inout SeededRandom) throws -> Data {
        let name = random.uuid()
        if let folder {
            try failure.check()
            if files == 0 { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            let content = random.bytes(size), path = folder.appending(path: name).path
            room.wait()
            writes.async { [room, failure] in
                defer { room.signal() }
                // Written, not fsynced (Data.write(to:) fsyncs every file): a fixture is test data,
                // and the states of a killed app come from a process dying, not from power loss.
                do {
                    let file = try FileSystem().createNewFile(path, mode: 0o644)
                    defer { file.close() }
                    var failed: Error?
                    content.withUnsafeBytes { buffer in
                        do { try file.write(buffer, at: 0) } catch { failed = error }
                    }
                    if let failed { throw failed }
                } catch {
                    failure.record(error)
                }
            }
        }
        files += 1
        bytes += Int64(size)
        return Data([0x02] + Array(name.utf8) + [0x00])
    }

    /// Waits for every file to be written; throws the first error writing one met.
    func finish() throws {
        writes.sync {}
        try failure.check()
    }
}

/// The first error any thread recorded.
private final class FirstError: @unchecked Sendable {
    private let lock = NSLock()
    private var error: Error?
    func record(_ error: Error) { lock.withLock { if self.error == nil { self.error = error } } }
    func check() throws { if let error = lock.withLock({ error }) { throw error } }
}

/// FNV-1a of a name: the same on every machine and every run (Swift's `hashValue` is not).
func stableHash(_ text: String) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
}

extension SeededRandom {
    /// A double in [0, 1).
    mutating func unit() -> Double {
        Double(next() >> 11) / Double(1 << 53)
    }
}
