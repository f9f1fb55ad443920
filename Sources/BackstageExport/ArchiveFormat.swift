/// An archive format Backstage writes and reads.
public enum ArchiveFormat: String, Sendable, Hashable, Codable, CaseIterable {
    case zip
    case tar
    case tarGz = "tar.gz"
    case tarBz2 = "tar.bz2"
    case tarXz = "tar.xz"
    case tarZst = "tar.zst"
    case sevenZip = "7z"

    /// The format an archive's file name implies (`notes.tar.zst` → ``tarZst``), if any.
    public init?(fileName: String) {
        let name = fileName.lowercased()
        let aliases: [(String, ArchiveFormat)] = [
            (".tar.gz", .tarGz), (".tgz", .tarGz), (".tar.bz2", .tarBz2), (".tar.xz", .tarXz),
            (".tar.zst", .tarZst), (".tar", .tar), (".zip", .zip), (".7z", .sevenZip),
        ]
        guard let match = aliases.first(where: { name.hasSuffix($0.0) }) else { return nil }
        self = match.1
    }
}
