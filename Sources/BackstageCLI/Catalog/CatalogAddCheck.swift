import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct CatalogAddCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-check",
        abstract: "Declare a query whose result must hold after an upgrade to a version.",
        discussion: """
            `simulate` runs every check of its --to version after every run and names the check that fails. \
            With --unchanged, the result (every row and column) must be what the same query returned before \
            the upgrade, on the first store of the version upgraded from where it runs; with --equals VALUE, \
            the query must return that one value (NULL, a number or text).

            The query must be exactly one read-only statement that returns rows (a SELECT), compiling against \
            the store's recorded schema: SQLite prepares it and says whether it could change the store. A \
            check the version already has is kept unless --replace is given (the replaced check is printed).

            Exit status: 0 when the check was added or replaced; 1 when it was refused (not one read-only \
            query, not compiling, its name taken without --replace), with nothing written; 2 for a usage \
            error; 3 when the catalog cannot be read or written.

            Examples:
              backstage catalog add-check Cookbook v3 "no favourite unset" --store applicationSupport/Cookbook.sqlite \\
                --sql "SELECT count(*) FROM ZRECIPE WHERE ZFAVORITE IS NULL" --equals 0
              backstage catalog add-check Cookbook v3 "recipes kept" --store applicationSupport/Cookbook.sqlite \\
                --sql "SELECT count(*), total(length(ZTITLE)) FROM ZRECIPE" --unchanged
            """
    )

    @Argument(help: "The catalog folder.", completion: .directory)
    var directory: String

    @Argument(help: "The version the check holds after.")
    var version: String

    @Argument(help: "The check's name, for reports.")
    var name: String

    @Option(help: "The store of that version it queries.")
    var store: ContainerLocation

    @Option(help: "One read-only SELECT.")
    var sql: String

    @Option(help: "The one value the query must return: NULL, a number or text.")
    var equals: String?

    @Flag(help: "The result must be the same before and after the upgrade.")
    var unchanged = false

    @Flag(help: "Replace the version's check of this name (the one it replaces is printed).")
    var replace = false

    func validate() throws {
        guard (equals != nil) != unchanged else {
            throw ValidationError("Give exactly one of --equals VALUE and --unchanged.")
        }
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ValidationError("Give the check a name, for reports.")
        }
        guard !sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ValidationError("--sql is empty: give one SELECT.")
        }
    }

    func run() async throws {
        var catalog = try CatalogFolder(at: URL(filePath: directory))
        guard let index = catalog.manifest.versions.firstIndex(where: { $0.name == version }) else {
            throw CatalogError.unknownVersion(version, known: catalog.manifest.versions.map(\.name))
        }
        let existing = catalog.manifest.versions[index].checks?.first { $0.name == name }
        if let existing, !replace {
            Output.out(
                "\(version): it already has a check \"\(name)\" (\(Self.describe(existing))): "
                    + "give another name, or --replace to replace it")
            throw ExitCode(ExitStatus.checkFailed)
        }
        let check = DataCheck(
            name: name, store: store, sql: sql, expect: equals.map { .equals(CheckValue(parsing: $0)) } ?? .unchanged)
        var updated = catalog
        updated.manifest.versions[index].checks = (catalog.manifest.versions[index].checks ?? []).map {
            $0.name == name ? check : $0
        }
        if existing == nil {
            updated.manifest.versions[index].checks = (updated.manifest.versions[index].checks ?? []) + [check]
        }
        let problems = CatalogCheck.problems(in: updated).filter {
            $0.version == version && $0.message.hasPrefix("check \"\(name)\"")
        }
        guard problems.isEmpty else {
            for problem in problems { Output.out(problem.description) }
            throw ExitCode(ExitStatus.checkFailed)
        }
        catalog = updated
        try catalog.writeManifest()
        let count = catalog.manifest.versions[index].checks?.count ?? 0
        if let existing {
            Output.out("\(version): check \"\(name)\" replaced (it was \(Self.describe(existing)); \(count) check(s))")
        } else {
            Output.out("\(version): check \"\(name)\" added (\(count) check(s))")
        }
    }

    static func describe(_ check: DataCheck) -> String {
        let expectation =
            switch check.expect {
            case .unchanged: "unchanged by the upgrade"
            case .equals(let value): "= \(value)"
            }
        return "\(check.sql) on \(check.store), \(expectation)"
    }
}
