import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Tell what a store pulled off a device is, without touching it.",
        discussion: """
            Reads a private copy (the store, its -wal and -shm are never opened in place): journal mode, page \
            size, main and -wal sizes, the frames the -wal holds that were not checkpointed yet, a hot journal, \
            rows per table, Core Data's entities with their rows, the model's version hashes and identifiers, \
            external data, and — with --catalog — which catalog version and store it matches and, for a Core \
            Data store, which model version wrote it (by Z_METADATA's version hashes or identifiers, else by \
            its schema; several are listed, never one of them picked).

            Example:
              backstage inspect Pulled/NoteStore.sqlite --catalog AppleNotes --json
            """
    )

    @Argument(help: "The store's main file.", completion: .file())
    var store: String

    @OptionGroup var catalogOption: CatalogOption

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        let url = URL(
            filePath: store,
            relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        ).standardizedFileURL
        let catalog = try catalogOption.load()  // the bundled Notes sample when --catalog is not given
        let inspection = try StoreInspection(of: StoreFileSet(main: url), catalog: catalog)
        if json {
            try Output.json(inspection)
        } else {
            Output.out(Self.render(inspection, catalogGiven: true))
        }
    }

    static func render(_ i: StoreInspection, catalogGiven: Bool) -> String {
        var lines = ["\(i.path): SQLite, \(i.journalMode) journal, \(i.pageSize)-byte pages"]
        lines.append(
            "  main file \(formatBytes(i.mainBytes))"
                + (i.walBytes.map {
                    ", -wal \(formatBytes($0)) with \(i.framesNotCheckpointed) frames not checkpointed"
                } ?? ", no -wal")
                + (i.hotJournal ? "; a hot -journal: the next open rolls a killed transaction back" : ""))
        lines.append("  \(i.tables.count) tables, \(i.tables.values.reduce(0, +)) rows")
        if let entities = i.entities {
            lines.append(
                "  Core Data: \(entities.count) entities, \(i.externalFiles ?? 0) external files (\(formatBytes(i.externalBytes ?? 0))), model \(i.versionIdentifiers?.filter { !$0.isEmpty }.joined(separator: ", ").nonEmpty ?? "without identifiers"), \(i.versionHashes?.count ?? 0) version hashes"
            )
            for entity in entities.sorted(by: { $0.rows > $1.rows }).prefix(12) where entity.rows > 0 {
                lines.append("    \(entity.name) (\(entity.table), Z_ENT \(entity.id)): \(entity.rows) rows")
            }
        }
        if catalogGiven {
            lines.append("  catalog: " + catalogLine(i.catalogMatches))
            if let match = i.modelVersion { lines.append("  Core Data model: " + modelLine(match)) }
        }
        return lines.joined(separator: "\n")
    }

    /// The catalog version whose model wrote the store, or none, or more than one (never one of them).
    static func modelLine(_ match: StoreInspection.ModelVersionMatch) -> String {
        switch (match.versions.count, match.evidence) {
        case (0, _): return "written by no model version of the catalog"
        case (1, .versionHashes?): return "written by version \(match.versions[0]) (its Z_METADATA version hashes)"
        case (1, .versionIdentifiers?):
            return "written by version \(match.versions[0]) (its Z_METADATA version identifiers)"
        case (1, _): return "written by version \(match.versions[0]) (its schema)"
        default:
            return "more than one model version could have written it (\(match.versions.joined(separator: ", "))): "
                + "neither its schema nor its Z_METADATA tells them apart, so none is named"
        }
    }

    /// Every version the store's schema matches: one, none, or several that a schema cannot tell apart.
    static func catalogLine(_ matches: [String]) -> String {
        switch matches.count {
        case 0: return "matches no version of the catalog"
        case 1: return "matches \(matches[0])"
        default:
            return "matches \(matches.count) versions with the same schema, which the store alone cannot tell apart: "
                + matches.joined(separator: ", ")
        }
    }
}

extension String {
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
