import BackstageModel
import BackstageSystem
import Foundation

/// An advisory `flock` on `applicationSupport/.backstage/lock`, so two Backstage processes
/// never work on one container at once. Released on close or when the process dies.
///
/// It waits up to `timeout` for the lock: another run may be finishing, and a child process
/// forked by another thread holds an inherited descriptor until its `exec` closes it.
package final class RunLock {
    private var fd: Int32 = -1
    let path: String

    package init(container: AppContainer, fileSystem: FileSystem, timeout: Double = 2) throws(BackstageError) {
        path = container.backstageDirectory.appending(path: "lock").path
        var locked = false
        do throws(FileSystemError) {
            try fileSystem.createDirectories(container.backstageDirectory.path)
            fd = try Syscalls.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0o644)
            let deadline = Date().addingTimeInterval(timeout)
            while !locked {
                locked = try Syscalls.flockExclusive(fd, blocking: false, path: path)
                if !locked {
                    guard Date() < deadline else { break }
                    usleep(10_000)
                }
            }
        } catch {
            release()
            throw BackstageError(.system(error), path: error.path, during: .journaling)
        }
        guard locked else {
            release()
            throw BackstageError(.containerBusy, path: path, during: .journaling)
        }
    }

    package func release() {
        if fd >= 0 { Syscalls.close(fd) }
        fd = -1
    }

    deinit { release() }
}
