import Foundation
import Synchronization

/// A flag set when the consumer of a stream goes away.
final class CancellationFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    func get() -> Bool { value.withLock { $0 } }
}

extension AsyncThrowingStream where Failure == Error {
    /// Runs blocking file and SQLite work on a dispatch thread (never on the cooperative pool),
    /// delivering its events; when the consumer stops iterating, `isCancelled` turns true.
    package static func runningOffTheCooperativePool(_ work: @escaping @Sendable (_ yield: @escaping (Element) -> Void, _ isCancelled: @escaping () -> Bool) throws -> Void) -> AsyncThrowingStream<Element, Error> where Element: Sendable {
        let (stream, continuation) = AsyncThrowingStream<Element, Error>.makeStream()
        let cancelled = CancellationFlag()
        continuation.onTermination = { _ in cancelled.set() }
        DispatchQueue.global(qos: .userInitiated).async {
            do {
                try work({ continuation.yield($0) }, cancelled.get)
                continuation.finish()
            } catch {
                // Work stopped because its consumer went away says so the Swift way, whatever the
                // subsystem's own "cancelled" case: the undoing has been done by then.
                continuation.finish(throwing: cancelled.get() ? CancellationError() : error)
            }
        }
        return stream
    }
}
