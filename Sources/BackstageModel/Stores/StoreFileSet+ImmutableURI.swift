import BackstageSystem
import Foundation

extension StoreFileSet {
    /// The URI SQLite opens `path` by without locking it, read-only: `file:` and the path with
    /// `%`, `?` and `#` (and anything not allowed in a URI path) percent-encoded.
    package static func immutableURI(_ path: String) -> String {
        uri(path) + "?immutable=1"
    }

    /// `file:` and the absolute path, percent-encoded, without query.
    static func uri(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return "file://" + (absolute.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? absolute)
    }
}
