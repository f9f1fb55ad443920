// Thin wrappers for the Linux system calls that do not import into Swift: calls glibc
// declares only under _GNU_SOURCE (which must not be defined here, or this module's view of
// the C headers would differ from Glibc's), ioctl numbers and variadic functions.
// Only Sources/Backstage/FileSystem/Syscalls.swift calls them.
#ifndef BACKSTAGE_SYSTEM_SHIM_H
#define BACKSTAGE_SYSTEM_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/ioctl.h>
#include <sys/syscall.h>
#endif

/// copy_file_range(2) between the current offsets of two descriptors.
/// Returns -1 with errno ENOSYS where the call does not exist.
static inline long backstage_copy_file_range(int in_fd, int out_fd, unsigned long len) {
#if defined(__linux__) && defined(SYS_copy_file_range)
    return syscall(SYS_copy_file_range, in_fd, (void *)0, out_fd, (void *)0, len, 0u);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/// syncfs(2): flush every dirty page of the file system holding fd. Falls back to sync(2).
static inline int backstage_syncfs(int fd) {
#if defined(__linux__) && defined(SYS_syncfs)
    return (int)syscall(SYS_syncfs, fd);
#else
    (void)fd;
    sync();
    return 0;
#endif
}

/// sync_file_range(SYNC_FILE_RANGE_WRITE) over the whole file: starts writing its dirty pages
/// without waiting for them. Returns -1 with errno ENOSYS where the call does not exist.
static inline int backstage_start_writeback(int fd) {
#if defined(__linux__) && defined(SYS_sync_file_range)
    return (int)syscall(SYS_sync_file_range, fd, (long)0, (long)0, 2u /* SYNC_FILE_RANGE_WRITE */);
#else
    (void)fd;
    errno = ENOSYS;
    return -1;
#endif
}

/// Whether any of `length` bytes of fd from `offset` is in the page cache: 1 yes, 0 no, -1 when
/// the kernel cannot say. cachestat(2) (Linux 6.5 and later), which reads nothing and starts no
/// read-ahead (a read with RWF_NOWAIT would: it fails with EAGAIN, the read-ahead started).
struct backstage_cachestat_range { unsigned long long offset, length; };
struct backstage_cachestat {
    unsigned long long cache, dirty, writeback, evicted, recently_evicted;
};
#if defined(SYS_cachestat)
#define BACKSTAGE_SYS_CACHESTAT SYS_cachestat
#elif defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define BACKSTAGE_SYS_CACHESTAT 451 /* headers older than Linux 6.5 do not name it */
#endif
static inline int backstage_is_cached(int fd, long long offset, long long length) {
#if defined(BACKSTAGE_SYS_CACHESTAT)
    struct backstage_cachestat_range range = { (unsigned long long)offset, (unsigned long long)length };
    struct backstage_cachestat status;
    if (syscall(BACKSTAGE_SYS_CACHESTAT, fd, &range, &status, 0u) != 0) return -1;
    return status.cache > 0 ? 1 : 0;
#else
    (void)fd;
    (void)offset;
    (void)length;
    errno = ENOSYS;
    return -1;
#endif
}

/// ioctl(FICLONE): a copy-on-write clone of a whole file (btrfs, xfs).
static inline int backstage_ficlone(int dest_fd, int src_fd) {
#if defined(__linux__)
    return ioctl(dest_fd, 0x40049409 /* FICLONE = _IOW(0x94, 9, int) */, src_fd);
#else
    errno = ENOTSUP;
    return -1;
#endif
}

/// renameat2(RENAME_NOREPLACE): a rename that fails with EEXIST instead of replacing.
static inline int backstage_rename_noreplace(const char *from, const char *to) {
#if defined(__linux__) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1u /* RENAME_NOREPLACE */);
#else
    errno = ENOSYS;
    return -1;
#endif
}

#endif
