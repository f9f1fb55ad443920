import BackstageSystem
/// How a store moves.
public enum RelocationStrategy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Rename on one file system, copy across file systems.
    case auto
    /// `rename(2)`: O(1) whatever the size; fails across file systems.
    case rename
    /// Kernel copy under the lock, verify, then switch.
    case copy
}
