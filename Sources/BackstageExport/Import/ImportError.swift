import Backstage

/// Why an import refused an archive: the archive, the entry and the rule it broke.
///
/// Nothing is written into Documents when an import throws one: entries are staged in the
/// container's temporary folder and moved in only after every entry passed.
///
/// For example, a zip-slip archive gives:
///
/// ```swift
/// ImportError(archivePath: "/tmp/evil.zip", entryPath: "../../.bashrc", reason: .parentComponent)
/// // /tmp/evil.zip: entry ../../.bashrc: its path climbs out of the folder with "..", refused
/// ```
public struct ImportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rule an entry broke.
    public enum Reason: Sendable, Hashable {
        /// The name is not valid UTF-8.
        case undecodableName
        /// The name is empty.
        case emptyName
        /// The name starts with `/`.
        case absolutePath
        /// A component is `..`.
        case parentComponent
        /// The name holds a backslash, which other systems read as a separator.
        case backslash
        /// The name holds a control character (U+0000–U+001F, U+007F–U+009F).
        case controlCharacter
        /// A device, FIFO or socket.
        case specialFile(String)
        /// A symbolic link whose target resolves outside the import (absolute, climbing out, or a loop).
        case linkOutside(target: String)
        /// A hard link to something that is not an earlier file of the same archive.
        case hardLinkTarget(String)
        /// The entry is reached through a symbolic link of the archive.
        case throughLink(String)
        /// The entry would be written through a symbolic link Documents already has at `link`
        /// (the archive has a folder there).
        case behindLinkInDocuments(link: String)
        /// A parent of the entry is a file, not a folder.
        case parentIsFile(String)
        /// The same path appears twice.
        case duplicate
        /// The path equals another one of the archive or of Documents except for letter case.
        case caseCollision(with: String)
        /// The path equals another one of the archive or of Documents except for Unicode normalization (NFC/NFD).
        case normalizationCollision(with: String)
        /// The entry would recreate an internal file in Documents (a database by its header, a sidecar,
        /// a Core Data support folder, a Backstage temporary).
        case internalFile(FileKind)
        /// More entries than ``ImportLimits/maxEntries``.
        case tooManyEntries(limit: Int)
        /// More bytes than ``ImportLimits/maxTotalBytes``.
        case tooLarge(limit: Int64)
        /// More bytes than the space free where the import is staged (``ImportLimits/maxTotalBytes`` not set).
        case exceedsFreeSpace(available: Int64)
        /// The entry expands more than ``ImportLimits/maxCompressionRatio`` times its compressed size.
        case compressionRatio(limit: Double)
        /// The archive so far expands more than ``ImportLimits/maxCompressionRatio`` times the bytes
        /// read from it (many small entries of zeros, each under the per-entry grace).
        case archiveCompressionRatio(limit: Double)
        /// Documents already holds something of another kind there (a folder where the archive has a
        /// file, or a link where it has a folder), which `replace` does not overwrite.
        case conflict(existing: String)
        /// The file in Documents the entry replaces changed (another file took its name) after the
        /// import set it aside: replacing it would lose what was written since.
        case changedWhileImported
        /// Replacing this user's database would leave the `-wal` or `-journal` of the one in Documents
        /// (`sidecar`) beside the archive's, which SQLite would then apply to it.
        case companionLeftBehind(sidecar: String)
        /// A store snapshot taken in Documents (`location`) that this container gives no place out of
        /// Documents, and does not declare there either: restored there it would put an app's store
        /// where users see it, as if it were their document.
        case restoreIntoDocuments(location: String)
        /// A store snapshot whose location already holds a store: restoring never replaces one.
        case storeExists(location: String)
        /// A store snapshot under a root this container does not have (an App Group not added).
        case unknownStoreLocation
    }

    /// The archive.
    public var archivePath: String
    /// The entry, as named in the archive.
    public var entryPath: String
    public var reason: Reason

    public init(archivePath: String, entryPath: String, reason: Reason) {
        self.archivePath = archivePath
        self.entryPath = entryPath
        self.reason = reason
    }

    public var description: String {
        "\(archivePath): entry \(entryPath): \(reasonText), refused"
    }

    private var reasonText: String {
        switch reason {
        case .undecodableName: "its name is not valid UTF-8"
        case .emptyName: "its name is empty"
        case .absolutePath: "its path is absolute"
        case .parentComponent: "its path climbs out of the folder with \"..\""
        case .backslash: "its name holds a backslash"
        case .controlCharacter: "its name holds a control character"
        case .specialFile(let kind): "it is a \(kind)"
        case .linkOutside(let target): "it is a link to \(target), outside the imported folder"
        case .hardLinkTarget(let target): "it is a hard link to \(target), which is not a file of this archive"
        case .throughLink(let link): "it lies behind the link \(link)"
        case .behindLinkInDocuments(let link):
            "it lies behind \(link), a link Documents already has, and would be written through it"
        case .parentIsFile(let parent): "its parent \(parent) is a file"
        case .duplicate: "the archive holds it twice"
        case .caseCollision(let other): "it differs from \(other) only by letter case"
        case .normalizationCollision(let other): "it differs from \(other) only by Unicode normalization"
        case .internalFile(let kind): "it would recreate an internal file (\(kind.rawValue)) in Documents"
        case .tooManyEntries(let limit): "the archive holds more than \(limit) entries"
        case .tooLarge(let limit): "the archive expands to more than \(limit) bytes"
        case .exceedsFreeSpace(let available):
            "the archive expands to more than the \(available) bytes free on the disk"
        case .compressionRatio(let limit): "it expands more than \(Int(limit)) times its compressed size"
        case .archiveCompressionRatio(let limit):
            "the archive expands more than \(Int(limit)) times its compressed size"
        case .conflict(let existing): "Documents already has \(existing) of another kind"
        case .changedWhileImported: "the file it replaces in Documents changed while it was imported"
        case .storeExists(let location):
            "the container already has a store at \(location); move it away to restore this snapshot"
        case .unknownStoreLocation: "it names no store location of this container"
        case .companionLeftBehind(let sidecar):
            "replacing it would leave \(sidecar) of the database in Documents beside it, mixing the two"
        case .restoreIntoDocuments(let location):
            "it is a snapshot of \(location), and this container neither declares that store in Documents nor "
                + "moves it out (no plan relocates it): restored there it would lie among the user's documents; "
                + "give the app's plans or catalog so that it goes where the app keeps the store now"
        }
    }
}
