import BackstageSystem
import Foundation

/// A store's companions follow their database's owner. A `-wal`, `-shm` or `-journal` is the app's
/// beside a declared store (``FileKind/wal``...) and the user's beside a database nobody declared
/// (``FileKind/userDatabaseSidecar``); a Core Data `.Name_SUPPORT` folder is the app's beside a
/// declared store (``FileKind/coreDataSupport``, moved with it), the user's beside a user's database
/// (``FileKind/userDatabaseSupport``: never quarantined, exported and imported with it), and an
/// orphan beside no database (quarantined). Audit, relocation, export and import all read it here.
extension FileClassifier {
    /// Hands `visit` every entry under the support folder of a user's database, depth first in
    /// sorted order, each ``FileKind/userDatabaseSupport`` and hidden (inside a dot-folder), never
    /// following a link: an export archives the folder's files with the database.
    func visitUserSupport(
        _ folder: OpenFolder, relative: String, visit: (ClassifiedFile, EntryStatus) throws -> Void
    ) throws {
        for name in try fileSystem.contents(of: folder) {
            guard let status = try fileSystem.status(name, in: folder) else { continue }
            let path = relative + "/" + name
            try visit(
                ClassifiedFile(
                    path: path, kind: .userDatabaseSupport, isDirectory: status.kind == .directory,
                    bytes: status.kind == .regular ? status.size : 0, isVisible: false),
                EntryStatus(status))
            if status.kind == .directory {
                try visitUserSupport(try fileSystem.openFolder(name, in: folder), relative: path, visit: visit)
            }
        }
    }
}
