import Backstage
import Foundation

/// Consistent copies of the user's own databases in Documents (databases the app did not declare),
/// made with SQLite's backup API in a scratch folder of the container's temporary folder: an
/// archive holds each as one file with every committed row, never a main file torn from its `-wal`.
final class DatabaseCopies {
    private let scratch: String
    private let fileSystem: FileSystem
    private var count = 0
    private var created = false

    init(container: AppContainer, fileSystem: FileSystem) {
        self.fileSystem = fileSystem
        scratch = container.temporary.path + "/" + TemporaryName.unique("export-databases")
    }

    /// The path of a consistent copy of the database at `live`, or nil when SQLite cannot read it
    /// (damaged, encrypted, locked past the busy timeout).
    func copy(of live: URL) throws -> String? {
        if !created {
            try fileSystem.createDirectories(scratch)
            created = true
        }
        let path = scratch + "/\(count).sqlite"
        count += 1
        do {
            try StoreSnapshot.write(of: live, to: URL(filePath: path))
        } catch is StoreError {
            return nil
        }
        return path
    }

    /// Removes the copies.
    func remove() {
        if created { try? fileSystem.removeTree(scratch) }
    }
}
