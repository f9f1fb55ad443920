import ArgumentParser
import BackstageHarness
import Foundation

/// `--catalog DIR`: an app's catalog; without it, the bundled Notes sample.
struct CatalogOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The app's catalog folder (made with `backstage catalog init`); default: the bundled Notes sample.",
            valueName: "dir"),
        completion: .directory)
    var catalog: String?

    func load() throws -> CatalogFolder {
        try CatalogFolder.at(
            catalog.map {
                URL(
                    filePath: $0,
                    relativeTo: URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
                ).standardizedFileURL
            })
    }
}
