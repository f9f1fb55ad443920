import Foundation

extension FileSystem {
    /// Waits until a change made from now on gets a later change time than `changed` (nanoseconds
    /// since 1970): the kernel stamps a change with the real time of its last tick (a few
    /// milliseconds coarse), never earlier, so once that clock has passed `changed` by a
    /// microsecond, every change to come carries a later time. Usually no wait at all, or a tick.
    ///
    /// - parameter limit: How long to wait at most, in nanoseconds.
    /// - returns: False when the clock had not passed `changed` after `limit` (a time ahead of the
    ///   clock: it was set back).
    package func waitForStampClock(toPass changed: Int64, atMost limit: Int64) -> Bool {
        let target = changed + 1_000
        var now = Syscalls.stampClock()
        let deadline = now + limit
        while now <= target {
            guard now < deadline else { return false }
            Syscalls.sleep(microseconds: 1_000)
            now = Syscalls.stampClock()
        }
        return true
    }
}
