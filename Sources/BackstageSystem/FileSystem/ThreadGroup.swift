import Foundation

/// Threads started one by one and waited for together (parallel export, tree copies and removals).
package final class ThreadGroup: Sendable {
    private let group = DispatchGroup()

    package init() {}

    package func start(_ body: @escaping @Sendable () -> Void) {
        let group = self.group
        group.enter()
        let thread = Thread {
            body()
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    package func wait() {
        group.wait()
    }

    /// Waits at most `seconds`; true when every thread ended.
    package func wait(timeout seconds: Double) -> Bool {
        group.wait(timeout: .now() + seconds) == .success
    }
}
