import BackstageSystem
/// Why a store could not be loaded, switched or written. Every case names the file.
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The description points into the user-visible Documents folder.
    case insideDocuments(path: String)
    /// The same file is already loaded (by another description, configuration or account).
    case duplicateStore(path: String)
    /// A write was attempted on a store loaded read-only.
    case readOnlyStore(path: String)
    /// Another connection held its lock for longer than the store's timeout.
    case busy(path: String, timeout: Double)
    /// No loaded store serves this configuration.
    case notLoaded(configuration: String)
    /// The model assigns this table to no configuration.
    case unknownTable(String)
    /// A pragma name or value that is not a plain identifier or number.
    case invalidPragma(name: String, value: String)
    /// An account identifier that cannot be a folder name.
    case invalidAccountID(String)
    /// SQLite reported an error.
    case sqlite(path: String, code: Int32, message: String)
    /// A file-system call failed.
    case fileSystem(FileSystemError)

    public var description: String {
        switch self {
        case .insideDocuments(let path):
            "\(path) is inside the user-visible Documents folder; put internal stores in Application Support (or set allowsDocumentsLocation)"
        case .duplicateStore(let path):
            "\(path) is already loaded; the same store file cannot be added twice"
        case .readOnlyStore(let path):
            "\(path) is loaded read-only; the write was refused"
        case .busy(let path, let timeout):
            "\(path) is locked by another connection (waited \(timeout) s)"
        case .notLoaded(let configuration):
            "no store is loaded for configuration \(configuration)"
        case .unknownTable(let table):
            "table \(table) belongs to no configuration of the model"
        case .invalidPragma(let name, let value):
            "invalid pragma \(name) = \(value): names and values must be plain identifiers or numbers"
        case .invalidAccountID(let id):
            "\(id) cannot be an account identifier: use letters, digits, '-', '_' or '.'"
        case .sqlite(let path, let code, let message):
            SQLiteFailure.sentence(code: code, message: message, path: path)
        case .fileSystem(let error):
            error.description
        }
    }
}
