import ArgumentParser
import Backstage
import BackstageHarness
import Foundation

extension ContainerLocation: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

struct Catalog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Describe your own app's storage history, captured from its real stores.",
        discussion: """
            A catalog is a folder: catalog.json lists the app's versions in order, with each version's stores \
            (where they live, which tables each holds) and the plan that reaches it; each store's schema and \
            statistics sit in a file of their own. fixture, simulate and bench take it with --catalog DIR.

            Example:
              backstage catalog init Cookbook --from ~/Pulled/Cookbook.sqlite --at documents/Cookbook.sqlite --app Cookbook
            """,
        subcommands: [
            CatalogInit.self, CatalogAddVersion.self, CatalogAddCheck.self, CatalogShow.self, CatalogCheckCommand.self,
            CatalogLintCommand.self,
        ]
    )
}
