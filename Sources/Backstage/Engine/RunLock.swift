import Foundation

/// An advisory `flock` on `applicationSupport/.backstage/lock`, so two Backstage processes
/// never work on one container at once. Released on close or when the process dies.
///
/// It waits up to `timeout` for the lock: another run may be finishing, and a child process
/// forked by another thread holds an inherited descriptor until its `exec` closes it.
package final class RunLock {
    private var fd: Int32 = -1
    let path: String

    package init(container: AppContainer, fileSystem: FileSystem, timeout: Double = 2) throws(EngineError) {
        path = container.backstageDirectory.appending(path: "lock").path
        do {
            try fileSystem.createDirectories(container.backstageDirectory.path)
            fd = try Syscalls.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0o644)
            let deadline = Date().addingTimeInterval(timeout)
            while try !Syscalls.flockExclusive(fd, blocking: false, path: path) {
                guard Date() < deadline else {
                    Syscalls.close(fd)
                    fd = -1
                    throw EngineError.containerBusy(path: path)
                }
                usleep(10_000)
            }
        } catch let error as EngineError {
            throw error
        } catch let error as FileSystemError {
            if fd >= 0 { Syscalls.close(fd) }
            throw .fileSystem(error)
        } catch {
            throw .fileSystem(FileSystemError(operation: .lock, path: path, code: EIO))
        }
    }

    package func release() {
        if fd >= 0 { Syscalls.close(fd) }
        fd = -1
    }

    deinit { release() }
}
