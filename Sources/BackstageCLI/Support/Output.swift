import ArgumentParser
import Backstage
import BackstageExport
import BackstageHarness
import Foundation
import GRDB

/// Exit statuses of the CLI contract.
enum ExitStatus {
    static let success: Int32 = 0
    static let checkFailed: Int32 = 1
    static let usage: Int32 = 2
    static let failure: Int32 = 3
}

/// Writes to stdout and stderr through FileHandle (C's `stdout` is not concurrency-safe).
enum Output {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func err(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// The CLI's JSON: sorted keys, indented, ISO 8601 dates.
    static func jsonData(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(value)
    }

    /// Prints one JSON object on stdout.
    static func json(_ value: some Encodable) throws {
        FileHandle.standardOutput.write(try jsonData(value) + Data("\n".utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// Prints an error as one sentence on stderr and returns the exit status of the contract.
    static func report(_ error: Error, root: any ParsableCommand.Type = BackstageCommand.self) -> Int32 {
        if let exit = error as? ExitCode { return exit.rawValue }
        let parserCode = root.exitCode(for: error)
        if parserCode == .success {
            // --help, --version
            var message = root.fullMessage(for: error)
            while message.hasSuffix("\n") { message.removeLast() }
            out(message)
            return ExitStatus.success
        }
        // Only what the parser calls a usage error (a bad option, a failed validate()) is one;
        // every other failure is operational: exit 3 with one sentence.
        // A version named on the command line that the catalog lacks is a usage error too.
        if parserCode == .validationFailure || Self.isUsage(error) {
            let message =
                parserCode == .validationFailure ? usageSentence(for: error, root: root) : sentence(for: error)
            err("error: \(message)")
            return ExitStatus.usage
        }
        err("error: \(sentence(for: error))")
        return ExitStatus.failure
    }

    /// Errors the command line caused that only the loaded catalog could tell: usage, exit 2.
    static func isUsage(_ error: Error) -> Bool {
        if case .unknownVersion = error as? CatalogError { return true }
        return false
    }

    /// The parser's message for a usage error as one sentence (no usage lines: `--help` has them).
    static func usageSentence(for error: Error, root: any ParsableCommand.Type) -> String {
        let lines = root.message(for: error).split(separator: "\n").map(String.init)
        var message = lines.first ?? ""
        // A list the parser gives after its sentence (the values an option takes) stays, on the same line.
        let items = lines.dropFirst().prefix { $0.hasPrefix("  - ") }.map { String($0.dropFirst(4)) }
        if !items.isEmpty { message += " " + items.joined(separator: ", ") }
        for prefix in ["Error: ", "error: "] where message.hasPrefix(prefix) { message.removeFirst(prefix.count) }
        if message.isEmpty { return "the command line is not valid; see --help" }
        // The parser's two sentences ("... is invalid for '--x'. Please provide one of ...") as one.
        message = message.replacingOccurrences(of: ". Please provide", with: "; provide")
        return message.prefix(1).lowercased() + message.dropFirst()
    }

    /// One sentence for an operational failure.
    static func sentence(for error: Error) -> String {
        switch error {
        case is CancellationError:
            "the operation was cancelled; nothing that was not committed was kept"
        case let error as DatabaseError:
            "SQLite error \(error.resultCode.rawValue)\(error.message.map { ": " + $0 } ?? "")"
        case let error as CustomStringConvertible:
            error.description
        default:
            "\(error)"
        }
    }
}

/// An operational failure of the CLI itself.
struct CLIError: Error, CustomStringConvertible {
    var description: String
}
