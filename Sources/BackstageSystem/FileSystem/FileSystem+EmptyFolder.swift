import Foundation

extension FileSystem {
    /// Removes the folder at `path` if it is empty (`rmdir`): a folder that holds anything stays,
    /// with `ENOTEMPTY`.
    package func removeEmptyFolder(_ path: String) throws(FileSystemError) {
        try inject(.rmdir, path)
        try Syscalls.rmdir(path)
    }
}
