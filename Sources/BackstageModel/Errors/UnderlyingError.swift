import BackstageSystem
/// An error Backstage did not raise itself, kept whole inside one of its own errors that names the
/// file (``RelocationError/failed(path:underlying:)``), so that nothing about the cause is lost to an
/// invented code.
///
/// Match on ``error`` by its type:
///
/// ```swift
/// if case .failed(_, let underlying) = relocationError, underlying.error is CancellationError {
///     // the work was cancelled
/// }
/// ```
///
/// Errors in general cannot be compared: two are equal when their errors are of one type and read
/// the same.
public struct UnderlyingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error as it was thrown.
    public let error: any Error

    /// Keeps `error` as it was thrown.
    public init(_ error: any Error) {
        self.error = error
    }

    public var description: String { String(describing: error) }

    public static func == (lhs: UnderlyingError, rhs: UnderlyingError) -> Bool {
        type(of: lhs.error) == type(of: rhs.error) && lhs.description == rhs.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(type(of: error)))
        hasher.combine(description)
    }
}
