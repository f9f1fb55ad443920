import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

/// Where the commands that read Documents learn which databases are the app's own: its plan, its
/// catalog, or stores named one by one. Every other database there is the user's document.
struct DeclarationOptions: ParsableArguments {
    @Option(
        name: .customLong("plan"),
        help: ArgumentHelp(
            "An upgrade plan of the app (repeatable): the stores in Documents its steps name are the app's.",
            valueName: "file"),
        completion: .file(extensions: ["json"]))
    var plans: [String] = []

    @Option(
        help: ArgumentHelp(
            "The app's catalog folder: the stores in Documents of every version and plan are the app's.",
            valueName: "dir"),
        completion: .directory)
    var catalog: String?

    @Option(
        name: .customLong("store"),
        help: ArgumentHelp(
            "A store of the app, as a path relative to Documents or a pattern such as Accounts/*/UserData.sqlite (repeatable).",
            valueName: "path"))
    var stores: [String] = []

    /// True when nothing was declared: every database in Documents is then the user's.
    var isEmpty: Bool { plans.isEmpty && catalog == nil && stores.isEmpty }

    /// What the options declare.
    func declarations() throws -> StoreDeclarations {
        let workingDirectory = URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        var declarations = StoreDeclarations(stores)
        for plan in plans {
            declarations = declarations.adding(
                StoreDeclarations(plan: try UpgradePlan.load(from: URL(filePath: plan, relativeTo: workingDirectory))))
        }
        if let catalog {
            let folder = try CatalogFolder(
                at: URL(filePath: catalog, directoryHint: .isDirectory, relativeTo: workingDirectory)
                    .standardizedFileURL)
            declarations = declarations.adding(folder.declaredStores)
        }
        return declarations
    }

    /// `container` declaring these stores.
    func declaring(in container: AppContainer) throws -> AppContainer {
        container.declaringStores(try declarations())
    }
}
