import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// Runs a migration's SQL inside the transaction Backstage opened for it, one statement at a time,
/// and refuses, before it runs, any statement that would end or open that transaction.
///
/// SQLite splits the SQL: each statement is prepared after the one before it ran, from the tail
/// the previous prepare left (so comments, string literals, quoted names and trigger bodies are
/// SQLite's to read, never a text search's). The first keyword of each prepared statement decides:
/// `BEGIN`, `COMMIT`, `END` and `ROLLBACK` are refused (a `COMMIT` would make everything before it
/// permanent, and a failure after it could no longer be rolled back); `SAVEPOINT`, `RELEASE` and
/// `ROLLBACK TO` only for savepoints the migration opened itself, all released by its end.
enum MigrationSQL {
    /// Why a migration's SQL is refused.
    struct Refusal: Error, Equatable {
        /// The statement's number in the migration's SQL, from 1.
        var statement: Int
        var reason: String
    }

    /// Runs `sql` statement by statement in `db`, checking each before it runs.
    /// `onStatement` sees each statement's SQL before it runs.
    static func execute(_ sql: String, in db: Database, onStatement: (String) -> Void = { _ in }) throws {
        var savepoints = Savepoints()
        var number = 0
        let statements = try db.allStatements(sql: sql)
        while let statement = try statements.next() {
            number += 1
            if let reason = savepoints.refusal(of: statement.sql) { throw Refusal(statement: number, reason: reason) }
            onStatement(statement.sql)
            try statement.execute()
        }
        if let open = savepoints.open.last {
            throw Refusal(
                statement: number, reason: "SAVEPOINT \(open) is never released, so the migration would end inside it")
        }
    }

    /// The savepoints a migration opened and has not released.
    struct Savepoints {
        var open: [String] = []

        mutating func refusal(of statement: String) -> String? {
            var tokens = SQLWords(statement)
            guard let first = tokens.next()?.uppercased() else { return nil }
            switch first {
            case "BEGIN", "COMMIT", "END":
                return "\(first) would end or open the transaction Backstage runs the migration in, all or nothing"
            case "ROLLBACK":
                var word = tokens.next()
                if word?.uppercased() == "TRANSACTION" { word = tokens.next() }
                guard word?.uppercased() == "TO" else {
                    return "ROLLBACK would end the transaction Backstage runs the migration in, all or nothing"
                }
                return release(&tokens, keeping: true, verb: "ROLLBACK TO")
            case "SAVEPOINT":
                guard let name = tokens.next() else { return nil }
                open.append(name.lowercased())
                return nil
            case "RELEASE":
                return release(&tokens, keeping: false, verb: "RELEASE")
            default:
                return nil
            }
        }

        private mutating func release(_ tokens: inout SQLWords, keeping: Bool, verb: String) -> String? {
            var name = tokens.next()
            if name?.uppercased() == "SAVEPOINT" { name = tokens.next() }
            guard let name, let index = open.lastIndex(of: name.lowercased()) else {
                return "\(verb) names no savepoint the migration opened, so it would reach Backstage's own transaction"
            }
            open.removeSubrange((keeping ? index + 1 : index)...)
            return nil
        }
    }
}

/// The words of one statement SQLite prepared: keywords and names, with comments and white space
/// skipped and quotes (`"x"`, `` `x` ``, `[x]`) removed. Only the first few are read.
struct SQLWords: IteratorProtocol {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    /// - parameter limit: How many characters of `sql` are read.
    init(_ sql: String, limit: Int = 4096) {
        scalars = Array(sql.unicodeScalars.prefix(limit))
    }

    mutating func next() -> String? {
        skipSpaceAndComments()
        guard index < scalars.count else { return nil }
        let first = scalars[index]
        let closing: Unicode.Scalar? =
            switch first {
            case "\"": "\""
            case "`": "`"
            case "[": "]"
            case "'": "'"
            default: nil
            }
        var word = String.UnicodeScalarView()
        if let closing {
            index += 1
            while index < scalars.count {
                if scalars[index] == closing {
                    // A doubled quote is one quote character inside the name.
                    if closing != "]", index + 1 < scalars.count, scalars[index + 1] == closing {
                        word.append(closing)
                        index += 2
                        continue
                    }
                    index += 1
                    break
                }
                word.append(scalars[index])
                index += 1
            }
            return String(word)
        }
        while index < scalars.count, Self.isWordCharacter(scalars[index]) {
            word.append(scalars[index])
            index += 1
        }
        if word.isEmpty {
            // Punctuation: one character is one word.
            index += 1
            return String(first)
        }
        return String(word)
    }

    private static func isWordCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value > 0x7F || scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_"
            || scalar == "$"
    }

    private mutating func skipSpaceAndComments() {
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar.properties.isWhitespace || scalar == ";" {
                index += 1
            } else if scalar == "-", index + 1 < scalars.count, scalars[index + 1] == "-" {
                while index < scalars.count, scalars[index] != "\n" { index += 1 }
            } else if scalar == "/", index + 1 < scalars.count, scalars[index + 1] == "*" {
                index += 2
                while index + 1 < scalars.count, !(scalars[index] == "*" && scalars[index + 1] == "/") { index += 1 }
                index = min(index + 2, scalars.count)
            } else {
                return
            }
        }
    }
}
