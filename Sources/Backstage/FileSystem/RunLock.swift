#if canImport(Glibc)
import Glibc
#endif

/// An advisory `flock` on `applicationSupport/.backstage/lock`, so two Backstage processes
/// never work on one container at once. Released on close or when the process dies.
final class RunLock {
    private var fd: Int32 = -1
    let path: String

    init(container: AppContainer, fileSystem: FileSystem) throws(RelocationError) {
        path = container.backstageDirectory.appending(path: "lock").path
        do {
            try fileSystem.createDirectories(container.backstageDirectory.path)
            fd = try Syscalls.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0o644)
            guard try Syscalls.flockExclusive(fd, blocking: false, path: path) else {
                Syscalls.close(fd)
                fd = -1
                throw RelocationError.containerBusy(path: path)
            }
        } catch let error as RelocationError {
            throw error
        } catch let error as FileSystemError {
            if fd >= 0 { Syscalls.close(fd) }
            throw error.isReadOnly ? .readOnlyDestination(path: error.path) : .fileSystem(error)
        } catch {
            throw .fileSystem(FileSystemError(operation: .lock, path: path, code: EIO))
        }
    }

    func release() {
        if fd >= 0 { Syscalls.close(fd) }
        fd = -1
    }

    deinit { release() }
}
