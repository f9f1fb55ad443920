import Backstage
import Foundation
import GRDB
import Testing

/// The byte scanner that finds the functions a schema calls, and the quarantine's folder stamp,
/// give what the regular expression and the `DateFormatter` they replaced gave.
@Suite struct SchemaScanAndStampTests {
    static let samples = [
        "CREATE TRIGGER t AFTER UPDATE ON ZNOTE BEGIN SELECT NSCoreDataTriggerUpdateAffectedObjectValue('ZNOTE', "
            + "Z_ENT, NEW.Z_PK, 'ZTITLE', NEW.ZTITLE, 0); END",
        "INSERT INTO t (a, b) VALUES (lower(x), COUNT (*))",
        "CREATE INDEX i ON t(abs(a), 9abc(b), x1_y\t\n(c), _f  (d))",
        "SELECT é(1), naïve(2), a.b(3), \"q\"(4), [w](5), 12(6), x.y\r\n(7)",
        "CHECK (json_valid(x) AND date(y) IS NOT NULL AND z NOT LIKE '%X%')",
        "", "(", "abc", "abc (", "abc def(",
    ]

    @Test func calledNamesAreTheRegularExpressionsMatches() {
        for sql in Self.samples {
            let expected = Set(sql.matches(of: /([A-Za-z_][A-Za-z0-9_]*)\s*\(/).map { String($0.1) })
            #expect(MissingFunctions.calledNames(in: sql) == expected, "\(sql)")
        }
    }

    @Test func missingNamesAreOnlyTheAppsFunctions() throws {
        let sql = Self.samples.joined(separator: " ")
        let missing = try DatabaseQueue().read { db in try MissingFunctions.missing(in: sql, db: db) }
        // SQLite's own (lower, COUNT, abs, json_valid, date) and keywords (VALUES) are not missing.
        #expect(
            missing == [
                "CHECK", "NSCoreDataTriggerUpdateAffectedObjectValue", "_f", "abc", "b", "def", "t", "ve", "x1_y", "y",
            ])
        #expect(try DatabaseQueue().read { db in try MissingFunctions.missing(in: "SELECT lower(1)", db: db) }.isEmpty)
    }

    @Test func quarantineStampIsTheFormattersUTCStamp() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        var random = SystemRandomNumberGenerator()
        let fixed: [TimeInterval] = [0, 59.999, 951_782_400, 951_868_799, 1_764_100_000.5, 4_102_444_799, -1, -86_401]
        let drawn = (0..<500).map { _ in TimeInterval(Int64.random(in: -2_000_000_000...8_000_000_000, using: &random)) }
        for seconds in fixed + drawn {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(Quarantine.stamp(date) == formatter.string(from: date), "\(seconds)")
        }
    }
}
