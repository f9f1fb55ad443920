import Foundation
import Synchronization

/// The events of blocking work (an upgrade, a relocation, an export, an import) running on a
/// thread of its own, for `for try await`.
///
/// Unlike an `AsyncThrowingStream`, which just ends when the iterating task is cancelled, a work
/// stream ends only when the work ends: cancelling the task asks the work to stop at its next safe
/// point, the events up to then are still delivered, and the loop throws `CancellationError` once
/// the step in progress has been undone (or finished, when it had committed). A loop that ends
/// without an error means the work completed.
///
/// For example:
///
/// ```swift
/// let task = Task {
///     for try await event in upgrader.run(plan) { show(event) }
/// }
/// task.cancel()   // the loop throws CancellationError once the container is consistent
/// ```
public struct WorkStream<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = any Error

    private let channel: Channel

    /// Runs `work` on a dispatch thread (never on the cooperative pool), delivering what it yields.
    /// `isCancelled` turns true once the consumer is cancelled or stops iterating.
    package init(
        _ work:
            @escaping @Sendable (
                _ yield: @escaping @Sendable (Element) -> Void, _ isCancelled: @escaping @Sendable () -> Bool
            ) throws -> Void
    ) {
        let channel = Channel()
        self.channel = channel
        DispatchQueue.global(qos: .userInitiated).async {
            do {
                try work({ channel.send($0) }, { channel.isCancelled })
                channel.finish(nil)
            } catch {
                // Work stopped because its consumer went away says so the Swift way, whatever the
                // subsystem's own "cancelled" case: the undoing has been done by then.
                channel.finish(channel.isCancelled ? CancellationError() : error)
            }
        }
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(consumer: Consumer(channel: channel))
    }

    public struct Iterator: AsyncIteratorProtocol {
        fileprivate let consumer: Consumer

        public mutating func next() async throws -> Element? {
            try await consumer.next()
        }
    }

    /// Ends the work when the iterator goes away without having reached the end (a `break`).
    fileprivate final class Consumer: Sendable {
        let channel: Channel
        init(channel: Channel) { self.channel = channel }
        deinit { channel.cancel() }

        func next() async throws -> Element? {
            let channel = self.channel
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in channel.receive(continuation) }
            } onCancel: {
                channel.cancel()
            }
        }
    }

    /// The events between the work's thread and the consumer, and how the work ended.
    fileprivate final class Channel: Sendable {
        private struct State {
            var buffer: [Element] = []
            var waiting: CheckedContinuation<Element?, any Error>?
            /// Set once the work ended: nil error for success.
            var ended: (any Error)?? = nil
            var cancelled = false
            /// Set once the consumer was told of the end: later calls of `next()` return nil.
            var delivered = false
        }
        private let state = Mutex(State())

        private enum Answer { case element(Element), ended((any Error)?), wait }

        var isCancelled: Bool { state.withLock { $0.cancelled } }

        func cancel() { state.withLock { $0.cancelled = true } }

        func send(_ element: Element) {
            let waiting = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
                guard let waiting = state.waiting else {
                    state.buffer.append(element)
                    return nil
                }
                state.waiting = nil
                return waiting
            }
            waiting?.resume(returning: element)
        }

        func finish(_ error: (any Error)?) {
            let waiting = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
                state.ended = .some(error)
                guard state.buffer.isEmpty, let waiting = state.waiting else { return nil }
                state.waiting = nil
                state.delivered = true
                return waiting
            }
            if let waiting { Self.resume(waiting, ended: error) }
        }

        func receive(_ continuation: CheckedContinuation<Element?, any Error>) {
            let answer = state.withLock { state -> Answer in
                if !state.buffer.isEmpty { return .element(state.buffer.removeFirst()) }
                if state.delivered { return .ended(nil) }
                if let ended = state.ended {
                    state.delivered = true
                    return .ended(ended)
                }
                state.waiting = continuation
                return .wait
            }
            switch answer {
            case .element(let element): continuation.resume(returning: element)
            case .ended(let error): Self.resume(continuation, ended: error)
            case .wait: break
            }
        }

        private static func resume(_ continuation: CheckedContinuation<Element?, any Error>, ended error: (any Error)?)
        {
            if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: nil) }
        }
    }
}
