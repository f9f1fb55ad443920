import Foundation

/// Threads started one by one and waited for together.
final class ThreadGroup: Sendable {
    private let group = DispatchGroup()

    func start(_ body: @escaping @Sendable () -> Void) {
        let group = self.group
        group.enter()
        let thread = Thread {
            body()
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    func wait() {
        group.wait()
    }
}
