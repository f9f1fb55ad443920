import BackstageModel
import BackstageSystem
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
/// The work never runs ahead of its consumer past a step: before it starts a step (or commits an
/// archive), it waits until the consumer has taken every event so far and asked for the next. So a
/// task cancelled while it handles an event (a Cancel pressed on a progress screen) stops the work
/// before the next step, however fast the steps are; an iteration that never asks for more holds
/// the work there. Dropping the iterator (a `break`), or the stream before iterating it, cancels.
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

    private let owner: Owner

    /// Runs `work` on a dispatch thread (never on the cooperative pool), delivering what it yields.
    /// `isCancelled` turns true once the consumer is cancelled or stops iterating. `caughtUp` is
    /// for the safe points between steps: it waits until the consumer has taken every event yielded
    /// so far and asked for the next (or went away), then says whether the work is cancelled.
    package init(
        _ work:
            @escaping @Sendable (
                _ yield: @escaping @Sendable (Element) -> Void, _ isCancelled: @escaping @Sendable () -> Bool,
                _ caughtUp: @escaping @Sendable () -> Bool
            ) throws -> Void
    ) {
        let channel = Channel()
        self.owner = Owner(channel: channel)
        DispatchQueue.global(qos: .userInitiated).async {
            do {
                try work({ channel.send($0) }, { channel.isCancelled }, { channel.awaitConsumer() })
                channel.finish(nil)
            } catch {
                // Work stopped because its consumer went away says so the Swift way, whatever the
                // subsystem's own "cancelled" case: the undoing has been done by then.
                channel.finish(channel.isCancelled ? CancellationError() : error)
            }
        }
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(consumer: Consumer(owner: owner))
    }

    public struct Iterator: AsyncIteratorProtocol {
        fileprivate let consumer: Consumer

        public mutating func next() async throws -> Element? {
            try await consumer.next()
        }
    }

    /// Ends the work once nothing can iterate the stream: every copy of it and every iterator
    /// gone (a stream dropped without being iterated).
    fileprivate final class Owner: Sendable {
        let channel: Channel
        init(channel: Channel) { self.channel = channel }
        deinit { channel.cancel() }
    }

    /// Ends the work when the iterator goes away without having reached the end (a `break`).
    fileprivate final class Consumer: Sendable {
        let owner: Owner
        var channel: Channel { owner.channel }
        init(owner: Owner) { self.owner = owner }
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
            /// The work waiting in ``awaitConsumer()``, woken when the consumer asks or cancels.
            var workWaiting: DispatchSemaphore?

            /// The consumer took every event and waits for the next, or will never take more.
            var caughtUp: Bool { cancelled || (buffer.isEmpty && waiting != nil) }
        }
        private let state = Mutex(State())

        private enum Answer { case element(Element), ended((any Error)?), wait }

        var isCancelled: Bool { state.withLock { $0.cancelled } }

        func cancel() {
            let work = state.withLock { state -> DispatchSemaphore? in
                state.cancelled = true
                defer { state.workWaiting = nil }
                return state.workWaiting
            }
            work?.signal()
        }

        /// Blocks the work's thread until the consumer has caught up (``State/caughtUp``); returns
        /// whether the work is cancelled.
        func awaitConsumer() -> Bool {
            while true {
                let wait = state.withLock { state -> DispatchSemaphore? in
                    if state.caughtUp { return nil }
                    let semaphore = DispatchSemaphore(value: 0)
                    state.workWaiting = semaphore
                    return semaphore
                }
                guard let wait else { return isCancelled }
                wait.wait()
            }
        }

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
            case .wait: wakeWork()
            }
        }

        /// Wakes the work waiting for the consumer, which asks for the next event.
        private func wakeWork() {
            let work = state.withLock { state -> DispatchSemaphore? in
                defer { state.workWaiting = nil }
                return state.workWaiting
            }
            work?.signal()
        }

        private static func resume(_ continuation: CheckedContinuation<Element?, any Error>, ended error: (any Error)?)
        {
            if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: nil) }
        }
    }
}
