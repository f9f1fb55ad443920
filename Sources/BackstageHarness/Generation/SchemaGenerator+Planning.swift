import Backstage
import Foundation
import GRDB

/// How many rows each table gets for a store of a given size, and what the store holds besides
/// its rows (external data, the header written once the rows are in).
extension SchemaGenerator {
    // MARK: Planning

    /// Rows per table for a store (and its external data) of about `bytes`: the captured counts
    /// times one factor. The captured sizes only estimate it — a table of three rows fills a whole
    /// page, indexes and triggers add their own bytes; Apple Photos' schema came out at a fifth of
    /// the size asked, chinook's six times the size — so the factor is measured on pilot stores
    /// generated in memory: small ones (from a five-hundredth of the size by the estimate, growing
    /// until they weigh half of a sixty-fourth, 1 MB at least) give a first line of weight against
    /// factor, the fixed part (empty tables and indexes, half-filled last pages) cancelling out; a
    /// last one, at a sixteenth of what that line predicts (2 to 16 MB, the store's size at most),
    /// corrects the line where the weight does not grow in proportion. The pilots cost about a
    /// tenth of a store of 50 MB or more.
    func rowCounts(for bytes: Int64) throws -> [String: Int] {
        // A table of a few pages says more of its page than of its rows: its rows' measured sizes then.
        let captured =
            schema.tables.values.reduce(Int64(0)) { total, table in
                let rows = Int64(table.rows == 0 ? emptyTableRows : table.rows)
                let rowBytes = Int64(
                    table.columns.reduce(12.0) {
                        $0 + $1.averageBytes * ($1.textFraction + $1.blobFraction) + 8
                            * ($1.integerFraction + $1.realFraction)
                    })
                return total
                    + (table.bytes > Int64(schema.pageSize) * 8 ? table.bytes : max(rows * max(rowBytes, 16), 1))
            } + (schema.coreData?.externalBytes ?? 0)
        let target = Double(bytes)
        let estimate = target / Double(max(captured, 1))
        let pilot = min(max(target / 64, 1_048_576), 16_777_216, target)
        // The first pilot small, an eighth of the pilot's size by the estimate, which can be several
        // times off (chinook's captured schema: a pilot meant for 3 MB weighed 20 MB, half the time
        // of a 50 MB store).
        var large = estimate * pilot / max(target, 1) / 8
        var points = [(scale: large, weight: try weigh(counts: rowCounts(scale: large)))]
        // A store of a few rows per table (a page each) says little of the bytes per row: the
        // pilot grows until its rows, not its empty pages, make most of its size.
        for _ in 0..<8 where points[points.count - 1].weight < pilot / 2 {
            large *= min(16, max(2, pilot / max(points[points.count - 1].weight, 1)))
            points.append((large, try weigh(counts: rowCounts(scale: large))))
        }
        // The line's second point: the pilot before the last one when it grew, else a quarter of it.
        if points.count == 1 {
            points.insert((large / 4, try weigh(counts: rowCounts(scale: large / 4))), at: 0)
        }
        points = Array(points.suffix(2))
        /// The factor for `bytes` on the line through the last two pilots.
        func predicted() -> Double? {
            let (a, b) = (points[points.count - 2], points[points.count - 1])
            guard b.weight > a.weight, b.scale > a.scale else { return nil }
            let perScale = (b.weight - a.weight) / (b.scale - a.scale)
            // Smaller than the schema's empty tables and indexes cannot be made: the smallest pilot's rows then.
            return max(points[0].scale, (target - (a.weight - a.scale * perScale)) / perScale)
        }
        guard var scale = predicted() else { return rowCounts(scale: estimate) }
        // (2 MB at least, below which the line through the first pilots misses Apple Photos' 16 MB
        // by 17 %; never more than the store.)
        let refine = min(
            max(scale / 16, scale * 2_097_152 / max(target, 1)), scale, scale * 16_777_216 / max(target, 1))
        if refine > large * 1.5 {
            points.append((refine, try weigh(counts: rowCounts(scale: refine))))
            scale = predicted() ?? scale
        }
        return rowCounts(scale: scale)
    }

    /// The bytes of a store with `counts` rows, generated in memory (external data counted, not written).
    func weigh(counts: [String: Int]) throws -> Double {
        let queue = try DatabaseQueue(configuration: try configuration())
        let external = schema.coreData.map { _ in ExternalDataWriter(folder: nil, averageSize: externalAverage) }
        _ = try populate(queue, counts: counts, external: external)
        let pages = try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 }
        return Double(pages * schema.pageSize) + Double(external?.bytes ?? 0)
    }

    /// The captured counts times `scale`, at least one row where the capture saw any. Core Data's
    /// bookkeeping tables keep their own counts.
    func rowCounts(scale: Double) -> [String: Int] {
        var counts: [String: Int] = [:]
        for (table, statistics) in schema.tables {
            if schema.coreData != nil && ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(table) {
                counts[table] = table == "Z_PRIMARYKEY" ? 0 : min(statistics.rows, 1)
                continue
            }
            counts[table] = max(
                1, Int((Double(statistics.rows == 0 ? emptyTableRows : statistics.rows) * scale).rounded()))
        }
        for table in schema.tableNames where counts[table] == nil {
            counts[table] = max(1, Int((Double(emptyTableRows) * scale).rounded()))
        }
        let empty = Set((schema.emptyTables ?? []).map { $0.lowercased() })
        for table in schema.tableNames
        where externalContent(of: table) != nil || schema.appRows?[table] != nil
            || empty.contains(table.lowercased())
        { counts[table] = 0 }
        return counts
    }

    /// Rows a table empty in the captured store stands for (every table is exercised): the
    /// median of the others' counts.
    var emptyTableRows: Int {
        let counts = schema.tables.values.map(\.rows).filter { $0 > 0 }.sorted()
        return counts.isEmpty ? 1 : counts[counts.count / 2]
    }

    /// The table an FTS table with external content (`content=table`) indexes; nil for others.
    func externalContent(of table: String) -> String? {
        guard let object = schema.objects.first(where: { $0.name == table }), object.kind == .virtualTable,
            object.sql.range(of: #"USING\s+FTS[345]"#, options: [.regularExpression, .caseInsensitive]) != nil,
            let match = object.sql.firstMatch(of: #/(?i)content\s*=\s*['"\[`]?([^'"\]`,)\s]+)/#)
        else { return nil }
        return String(match.1)
    }

    /// FTS tables with external content are rebuilt from their table once its rows are in.
    func rebuildExternalContent(_ db: Database) throws {
        for table in schema.tableNames where externalContent(of: table) != nil {
            let name = table.quotedSQLIdentifier
            do {
                try db.execute(sql: "INSERT INTO \(name)(\(name)) VALUES ('rebuild')")
            } catch let error as DatabaseError {
                throw GeneratorError.schema(object: table, message: error.message ?? "\(error)")
            }
        }
    }

    /// The captured header fields an app may read: `user_version` and `application_id`.
    func writeHeader(_ db: Database) throws {
        if let version = schema.userVersion { try db.execute(sql: "PRAGMA user_version = \(version)") }
        if let id = schema.applicationID { try db.execute(sql: "PRAGMA application_id = \(id)") }
    }

    /// Functions the triggers call that SQLite does not have (Core Data registers them in the app):
    /// stand-ins that return NULL, so triggers fire while the rows go in.
    /// (`callersOnly`: the functions triggers and views call, which the shell baseline rewrites;
    /// else also those of CHECKs, defaults and indexes, and harmless stand-ins for type names.)
    func stubFunctions(callersOnly: Bool = false) throws -> [DatabaseFunction] {
        let sql = schema.objects.filter { !callersOnly || $0.kind == .trigger || $0.kind == .view }.map(\.sql).joined(
            separator: " ")
        return try DatabaseQueue().read { db in try MissingFunctions.missing(in: sql, db: db) }.map(
            MissingFunctions.standIn)
    }
}
