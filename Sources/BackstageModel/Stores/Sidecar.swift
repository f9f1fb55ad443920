import BackstageSystem
/// The sidecar files SQLite keeps beside a database.
public enum Sidecar: String, Sendable, Hashable, Codable, CaseIterable {
    case wal = "-wal"
    case shm = "-shm"
    case journal = "-journal"
}
