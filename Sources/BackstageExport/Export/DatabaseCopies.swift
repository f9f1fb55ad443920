import Backstage
import Foundation

/// Consistent copies made for an export, in a scratch folder of the container's temporary folder:
/// of the user's own databases in Documents (databases the app did not declare), made with SQLite's
/// backup API, so that an archive holds each as one file with every committed row, never a main
/// file torn from its `-wal`; and of documents an app writes while they are archived.
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
        } catch is BackstageError {
            return nil
        }
        return path
    }

    /// The path of a copy of the document at `path` that is one state of it (read again while the
    /// app writes it, up to `attempts` times), or nil when it changed during every read.
    func stillCopy(of path: String, attempts: Int = 5) throws -> String? {
        if !created {
            try fileSystem.createDirectories(scratch)
            created = true
        }
        let copy = scratch + "/\(count).still"
        count += 1
        return try fileSystem.copyWhileStill(path, to: copy, attempts: attempts) ? copy : nil
    }

    /// Removes the copies.
    func remove() {
        if created { try? fileSystem.removeTree(scratch) }
    }
}
