import Foundation

extension FileSystem {
    /// Copies `from` to a new file `to` like ``copyFile(_:to:mode:progress:)`` and proves the copy
    /// byte-identical, comparing each 8 MiB window on a second thread as soon as it is written,
    /// so verification overlaps the copy instead of following it.
    ///
    /// - returns: The bytes copied, and whether the copy matches the source.
    package func copyVerified(
        _ from: String, to: String, progress: (Int64) throws -> Void = { _ in }
    ) throws -> (bytes: Int64, identical: Bool) {
        let state = VerificationState()
        let window: Int64 = 8 << 20
        let finished = DispatchSemaphore(value: 0)
        let fileSystem = self
        let verifier = Thread {
            defer { finished.signal() }
            do {
                state.setResult(try fileSystem.compareWhileCopying(from, to, state: state, window: window))
            } catch {
                state.setResult(false)
            }
        }
        verifier.stackSize = 1 << 20
        verifier.start()
        let copied: Int64
        do {
            copied = try copyFile(
                from, to: to,
                progress: { bytes in
                    state.publish(bytes)
                    try progress(bytes)
                })
        } catch {
            state.abandon()
            finished.wait()
            throw error
        }
        state.finish(total: copied)
        finished.wait()
        return (copied, state.result)
    }

    /// The verifier's side: compares windows of the two files up to what the copier published.
    fileprivate func compareWhileCopying(
        _ a: String, _ b: String, state: VerificationState, window: Int64
    ) throws -> Bool {
        // The destination is created by the copier: wait for its first bytes (or the end).
        guard state.waitForProgress(beyond: 0, window: 1) != nil else {
            return state.total == 0 && contentsEqualIfPresent(a, b)
        }
        let fa = try Syscalls.open(a, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fa) }
        let fb = try Syscalls.open(b, O_RDONLY | O_NOFOLLOW)
        defer { Syscalls.close(fb) }
        var offset: Int64 = 0
        while let available = state.waitForProgress(beyond: offset, window: window) {
            let length = Int(min(window, available - offset))
            guard try Self.windowsEqual(fa, a, fb, b, offset: offset, length: length) else { return false }
            offset += Int64(length)
        }
        guard let total = state.total, offset == total else { return false }
        // Nothing may have been appended to the source behind the copier's back.
        let sizeA = Int64(try Syscalls.fstat(fa, path: a).st_size)
        let sizeB = Int64(try Syscalls.fstat(fb, path: b).st_size)
        return sizeA == total && sizeB == total
    }

    private func contentsEqualIfPresent(_ a: String, _ b: String) -> Bool {
        (try? contentsEqual(a, b)) ?? false
    }
}

/// What the copier has published and the verifier has concluded, under one condition variable.
private final class VerificationState: @unchecked Sendable {
    private let condition = NSCondition()
    private var published: Int64 = 0
    private var finalTotal: Int64?
    private var abandoned = false
    private var identical = false

    func publish(_ bytes: Int64) {
        condition.withLock {
            published = bytes
            condition.signal()
        }
    }

    func finish(total: Int64) {
        condition.withLock {
            published = total
            finalTotal = total
            condition.signal()
        }
    }

    func abandon() {
        condition.withLock {
            abandoned = true
            condition.signal()
        }
    }

    var total: Int64? { condition.withLock { finalTotal } }

    /// Waits until a whole window past `offset` is published, or the copy ended with bytes left;
    /// returns the published size, or nil when there is nothing more to compare.
    func waitForProgress(beyond offset: Int64, window: Int64) -> Int64? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if abandoned { return nil }
            if published - offset >= window { return published }
            if let finalTotal { return finalTotal > offset ? finalTotal : nil }
            condition.wait()
        }
    }

    func setResult(_ value: Bool) { condition.withLock { identical = value } }
    var result: Bool { condition.withLock { identical } }
}
