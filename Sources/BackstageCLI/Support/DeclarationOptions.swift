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

    /// The options as given, to repeat in a command the output suggests (`--store X --plan P`).
    var arguments: [String] {
        plans.flatMap { ["--plan", $0] } + (catalog.map { ["--catalog", $0] } ?? [])
            + stores.flatMap { ["--store", $0] }
    }

    /// True when nothing was declared: every database in Documents is then the user's.
    var isEmpty: Bool { plans.isEmpty && catalog == nil && stores.isEmpty }

    /// The `--store` paths relative to `documents`: an absolute path inside it is made relative (it
    /// was joined onto Documents before), one outside it is a usage error naming it.
    func storePaths(in documents: URL) throws -> [String] {
        try checkNames()
        let folder = documents.standardizedFileURL.resolvingSymlinksInPath().path
        return try stores.map { store in
            guard store.hasPrefix("/") else { return store }
            let path = URL(filePath: store).standardizedFileURL
            for candidate in [path.path, path.resolvingSymlinksInPath().path]
            where candidate.hasPrefix(folder + "/") && candidate.count > folder.count + 1 {
                return String(candidate.dropFirst(folder.count + 1))
            }
            throw ValidationError(
                "--store \(store) is not inside \(documents.path): give the store's path relative to Documents, "
                    + "such as \(path.lastPathComponent) or Accounts/*/\(path.lastPathComponent)")
        }
    }

    /// Refuses a `--store` whose file name is too long for a store (``ContainerLocation/storeNameTooLong``).
    func checkNames() throws {
        for store in stores {
            if let reason = ContainerLocation(.documents, store).storeNameTooLong {
                throw ValidationError("--store \(reason).")
            }
        }
    }

    /// What the options declare, `--store` paths read relative to `documents`.
    func declarations(documents: URL? = nil) throws -> StoreDeclarations {
        try checkNames()
        let workingDirectory = URL(filePath: FileManager.default.currentDirectoryPath, directoryHint: .isDirectory)
        var declarations = StoreDeclarations(try documents.map { try storePaths(in: $0) } ?? stores)
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

    /// `container` declaring these stores, `--store` paths read relative to `root` (Documents unless
    /// a command moves stores from another root).
    func declaring(in container: AppContainer, root: ContainerRoot = .documents) throws -> AppContainer {
        container.declaringStores(try declarations(documents: container.defines(root) ? container[root] : nil))
    }
}
