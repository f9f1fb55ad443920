import BackstageModel
import BackstageSystem
import Foundation
import GRDB

/// The Core Data external data files a store's rows reference, and which of them are missing:
/// what a finished split vouches for, and what the simulator checks after every crash.
package enum ExternalDataReferences {
    /// The names (UUIDs) the rows of every table of the store open on `db` reference: BLOBs of
    /// byte 0x02 then the file's UUID, Core Data's external-storage marker.
    package static func referenced(_ db: Database) throws -> Set<String> {
        try String.fetchAll(db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table'")
            .reduce(into: Set<String>()) { $0.formUnion(try SplitCensus.countAndReferences(db, table: $1).references) }
    }

    /// How many of `names` have no regular file in `folder` (a store's `_EXTERNAL_DATA`).
    package static func missing(_ names: Set<String>, in folder: URL, fileSystem: FileSystem = FileSystem()) -> Int {
        names.reduce(0) { count, name in
            let status = (try? fileSystem.status(folder.appending(path: name).path)) ?? nil
            return status?.kind == .regular ? count : count + 1
        }
    }
}
