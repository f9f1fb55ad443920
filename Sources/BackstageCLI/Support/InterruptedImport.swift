import Backstage
import BackstageExport

/// The commands that move files in a container (`relocate`, `upgrade`) first finish or undo an
/// import a kill interrupted, so they never take its staging folder for a stray temporary; the
/// `Backstage` library they call knows nothing of imports.
enum InterruptedImport {
    /// Recovers an interrupted import in `container`, saying what became of it on stderr; nothing
    /// when none waits (the container untouched).
    static func recover(in container: AppContainer) throws {
        if let recovery = try Importer(container: container).recoverInterruptedImport() {
            Output.err(Import.render(recovery))
        }
    }
}
