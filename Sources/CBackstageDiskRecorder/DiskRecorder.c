// The power-loss explorer's recorder: every operation of this process that changes the disk,
// Backstage's own (its system-call layer calls backstage_disk_begin/done through the recorder the
// child installs) and SQLite's (through a VFS made the default one by backstage_disk_install), in
// one numbered log, so the harness can build each state a power cut could leave. SQLite's writes
// keep the bytes they overwrite, so a cut that loses them can put the old bytes back.
//
// Linked only by the simulator's child (backstage-simulate-child), never by a library an app links:
// nothing runs until that process calls backstage_disk_install, and nothing is read from the
// environment.
#include "CBackstageDiskRecorder.h"

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int log_fd = -1;
static long cut = -1;
static const char *stash;
static long next_index;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/// Copies `from` to `to` byte for byte (the stash across file systems, where a link fails).
static void copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0) return;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out >= 0) {
        char buffer[65536];
        ssize_t n;
        while ((n = read(in, buffer, sizeof buffer)) > 0) {
            if (write(out, buffer, (size_t)n) != n) break;
        }
        close(out);
    }
    close(in);
}

long backstage_disk_begin(const char *victim) {
    if (log_fd < 0) return -1;
    pthread_mutex_lock(&lock);
    long index = next_index++;
    pthread_mutex_unlock(&lock);
    if (index == cut) kill(getpid(), SIGKILL);
    if (victim && stash) {
        struct stat st;
        if (lstat(victim, &st) == 0 && !S_ISDIR(st.st_mode)) {
            char kept[4096];
            snprintf(kept, sizeof kept, "%s/%ld", stash, index);
            if (link(victim, kept) != 0 && S_ISREG(st.st_mode)) copy_file(victim, kept);
        }
    }
    return index;
}

/// Appends `text` with `%`, tab and newline percent-encoded.
static size_t escape(char *out, size_t room, const char *text) {
    size_t used = 0;
    for (const char *c = text; c && *c && used + 4 < room; c++) {
        if (*c == '%' || *c == '\t' || *c == '\n') used += (size_t)snprintf(out + used, room - used, "%%%02X", (unsigned char)*c);
        else out[used++] = *c;
    }
    out[used] = 0;
    return used;
}

void backstage_disk_done(long index, const char *operation, const char *path, const char *second) {
    if (log_fd < 0 || index < 0) return;
    char line[12288];
    size_t used = (size_t)snprintf(line, sizeof line, "%ld\t%s\t", index, operation);
    used += escape(line + used, sizeof line - used, path);
    if (second && *second) {
        line[used++] = '\t';
        used += escape(line + used, sizeof line - used, second);
    }
    line[used++] = '\n';
    (void)!write(log_fd, line, used);
}

// MARK: - The recording VFS

typedef struct {
    sqlite3_file base;
    sqlite3_file *real;
    char *path;
    int newJournal;   // a journal or WAL opened to create: its first sync also fsyncs the folder, as the unix VFS does
} RecordedFile;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs recording_vfs;

static char *parent_of(const char *path) {
    char *parent = strdup(path);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) *slash = 0;
    else if (slash) slash[1] = 0;
    return parent;
}

/// Keeps the bytes a write or truncate is about to replace: `<stash>/<index>.undo`.
static void keep_old_bytes(RecordedFile *file, long index, sqlite3_int64 offset, sqlite3_int64 length) {
    if (!stash || length <= 0) return;
    char kept[4096];
    snprintf(kept, sizeof kept, "%s/%ld.undo", stash, index);
    int out = open(kept, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) return;
    char buffer[65536];
    while (length > 0) {
        int chunk = length > (sqlite3_int64)sizeof buffer ? (int)sizeof buffer : (int)length;
        int rc = file->real->pMethods->xRead(file->real, buffer, chunk, offset);
        if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) break;
        if (write(out, buffer, (size_t)chunk) != chunk) break;
        offset += chunk;
        length -= chunk;
    }
    close(out);
}

static int rf_close(sqlite3_file *f) {
    RecordedFile *file = (RecordedFile *)f;
    int rc = file->real->pMethods ? file->real->pMethods->xClose(file->real) : SQLITE_OK;
    free(file->path);
    return rc;
}

static int rf_read(sqlite3_file *f, void *buffer, int amount, sqlite3_int64 offset) {
    RecordedFile *file = (RecordedFile *)f;
    return file->real->pMethods->xRead(file->real, buffer, amount, offset);
}

static int rf_write(sqlite3_file *f, const void *buffer, int amount, sqlite3_int64 offset) {
    RecordedFile *file = (RecordedFile *)f;
    sqlite3_int64 size = 0;
    file->real->pMethods->xFileSize(file->real, &size);
    long index = backstage_disk_begin(NULL);
    sqlite3_int64 overlap = offset < size ? (offset + amount < size ? amount : size - offset) : 0;
    keep_old_bytes(file, index, offset, overlap);
    int rc = file->real->pMethods->xWrite(file->real, buffer, amount, offset);
    if (rc == SQLITE_OK) {
        char second[96];
        snprintf(second, sizeof second, "%lld %d %lld", (long long)offset, amount, (long long)size);
        backstage_disk_done(index, "write", file->path, second);
    }
    return rc;
}

static int rf_truncate(sqlite3_file *f, sqlite3_int64 length) {
    RecordedFile *file = (RecordedFile *)f;
    sqlite3_int64 size = 0;
    file->real->pMethods->xFileSize(file->real, &size);
    long index = backstage_disk_begin(NULL);
    keep_old_bytes(file, index, length, size - length);
    int rc = file->real->pMethods->xTruncate(file->real, length);
    if (rc == SQLITE_OK) {
        char second[96];
        snprintf(second, sizeof second, "%lld %d %lld", (long long)length, 0, (long long)size);
        backstage_disk_done(index, "write", file->path, second);
    }
    return rc;
}

static int rf_sync(sqlite3_file *f, int flags) {
    RecordedFile *file = (RecordedFile *)f;
    long index = backstage_disk_begin(NULL);
    int rc = file->real->pMethods->xSync(file->real, flags);
    if (rc == SQLITE_OK) {
        backstage_disk_done(index, "fsync", file->path, NULL);
        if (file->newJournal) {
            file->newJournal = 0;
            char *parent = parent_of(file->path);
            backstage_disk_done(backstage_disk_begin(NULL), "fsync", parent, NULL);
            free(parent);
        }
    }
    return rc;
}

static int rf_size(sqlite3_file *f, sqlite3_int64 *size) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xFileSize(file->real, size); }
static int rf_lock(sqlite3_file *f, int level) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xLock(file->real, level); }
static int rf_unlock(sqlite3_file *f, int level) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xUnlock(file->real, level); }
static int rf_check(sqlite3_file *f, int *out) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xCheckReservedLock(file->real, out); }
static int rf_control(sqlite3_file *f, int op, void *arg) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xFileControl(file->real, op, arg); }
static int rf_sector(sqlite3_file *f) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xSectorSize(file->real); }
static int rf_device(sqlite3_file *f) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xDeviceCharacteristics(file->real); }
static int rf_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out) {
    RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xShmMap(file->real, page, size, extend, out);
}
static int rf_shm_lock(sqlite3_file *f, int offset, int n, int flags) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xShmLock(file->real, offset, n, flags); }
static void rf_shm_barrier(sqlite3_file *f) { RecordedFile *file = (RecordedFile *)f; file->real->pMethods->xShmBarrier(file->real); }
static int rf_shm_unmap(sqlite3_file *f, int del) { RecordedFile *file = (RecordedFile *)f; return file->real->pMethods->xShmUnmap(file->real, del); }
static int rf_fetch(sqlite3_file *f, sqlite3_int64 offset, int amount, void **out) {
    // No memory-mapped reads: every page goes through xRead, and so every write through xWrite.
    (void)f; (void)offset; (void)amount; *out = 0; return SQLITE_OK;
}
static int rf_unfetch(sqlite3_file *f, sqlite3_int64 offset, void *page) { (void)f; (void)offset; (void)page; return SQLITE_OK; }

static const sqlite3_io_methods recorded_methods = {
    3, rf_close, rf_read, rf_write, rf_truncate, rf_sync, rf_size, rf_lock, rf_unlock, rf_check, rf_control,
    rf_sector, rf_device, rf_shm_map, rf_shm_lock, rf_shm_barrier, rf_shm_unmap, rf_fetch, rf_unfetch,
};

static int rv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *outFlags) {
    (void)vfs;
    RecordedFile *file = (RecordedFile *)f;
    memset(file, 0, sizeof *file);
    file->real = (sqlite3_file *)(file + 1);
    struct stat st;
    int creating = name && (flags & SQLITE_OPEN_CREATE) && lstat(name, &st) != 0;
    long index = creating ? backstage_disk_begin(NULL) : -1;
    int rc = real_vfs->xOpen(real_vfs, name, file->real, flags, outFlags);
    if (rc != SQLITE_OK) {
        file->base.pMethods = 0;
        return rc;
    }
    file->path = strdup(name ? name : "");
    if (creating) backstage_disk_done(index, "create", name, NULL);
    // As the unix VFS's unixOpen: a journal or WAL opened with SQLITE_OPEN_CREATE fsyncs its folder
    // on its first sync, whether this open made the file or found it (a WAL another connection
    // created and never synced: its name becomes durable with this connection's first sync).
    file->newJournal = (flags & SQLITE_OPEN_CREATE)
        && (flags & (SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_SUPER_JOURNAL | SQLITE_OPEN_WAL)) != 0;
    file->base.pMethods = &recorded_methods;
    return SQLITE_OK;
}

static int rv_delete(sqlite3_vfs *vfs, const char *name, int syncDir) {
    (void)vfs;
    long index = backstage_disk_begin(name);
    int rc = real_vfs->xDelete(real_vfs, name, syncDir);
    if (rc == SQLITE_OK) {
        backstage_disk_done(index, "unlink", name, NULL);
        if (syncDir) {
            char *parent = parent_of(name);
            backstage_disk_done(backstage_disk_begin(NULL), "fsync", parent, NULL);
            free(parent);
        }
    }
    return rc;
}

static int rv_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) { (void)vfs; return real_vfs->xAccess(real_vfs, name, flags, out); }
static int rv_full(sqlite3_vfs *vfs, const char *name, int n, char *out) { (void)vfs; return real_vfs->xFullPathname(real_vfs, name, n, out); }
static void *rv_dlopen(sqlite3_vfs *vfs, const char *name) { (void)vfs; return real_vfs->xDlOpen(real_vfs, name); }
static void rv_dlerror(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; real_vfs->xDlError(real_vfs, n, out); }
static void (*rv_dlsym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) { (void)vfs; return real_vfs->xDlSym(real_vfs, handle, symbol); }
static void rv_dlclose(sqlite3_vfs *vfs, void *handle) { (void)vfs; real_vfs->xDlClose(real_vfs, handle); }
static int rv_random(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; return real_vfs->xRandomness(real_vfs, n, out); }
static int rv_sleep(sqlite3_vfs *vfs, int micro) { (void)vfs; return real_vfs->xSleep(real_vfs, micro); }
static int rv_time(sqlite3_vfs *vfs, double *out) { (void)vfs; return real_vfs->xCurrentTime(real_vfs, out); }
static int rv_error(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; return real_vfs->xGetLastError(real_vfs, n, out); }
static int rv_time64(sqlite3_vfs *vfs, sqlite3_int64 *out) { (void)vfs; return real_vfs->xCurrentTimeInt64(real_vfs, out); }

int backstage_disk_install(const char *log, long cut_before, const char *stash_folder) {
    if (log_fd >= 0) return EALREADY;
    if (sqlite3_initialize() != SQLITE_OK) return EIO;
    real_vfs = sqlite3_vfs_find(NULL);
    if (!real_vfs) return ENOENT;
    static char kept_stash[4096];
    if (stash_folder) {
        if (strlen(stash_folder) >= sizeof kept_stash) return ENAMETOOLONG;
        strcpy(kept_stash, stash_folder);
        stash = kept_stash;
    }
    cut = cut_before;
    recording_vfs = *real_vfs;
    recording_vfs.zName = "backstage-recording";
    recording_vfs.szOsFile = (int)sizeof(RecordedFile) + real_vfs->szOsFile;
    recording_vfs.pAppData = 0;
    recording_vfs.pNext = 0;
    recording_vfs.xOpen = rv_open;
    recording_vfs.xDelete = rv_delete;
    recording_vfs.xAccess = rv_access;
    recording_vfs.xFullPathname = rv_full;
    recording_vfs.xDlOpen = rv_dlopen;
    recording_vfs.xDlError = rv_dlerror;
    recording_vfs.xDlSym = rv_dlsym;
    recording_vfs.xDlClose = rv_dlclose;
    recording_vfs.xRandomness = rv_random;
    recording_vfs.xSleep = rv_sleep;
    recording_vfs.xCurrentTime = rv_time;
    recording_vfs.xGetLastError = rv_error;
    recording_vfs.xCurrentTimeInt64 = rv_time64;
    recording_vfs.iVersion = 2;
    recording_vfs.xSetSystemCall = 0;
    recording_vfs.xGetSystemCall = 0;
    recording_vfs.xNextSystemCall = 0;
    // The log last: nothing is recorded until SQLite's writes are recorded too.
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return errno;
    if (sqlite3_vfs_register(&recording_vfs, 1) != SQLITE_OK) {
        close(fd);
        return EIO;
    }
    log_fd = fd;
    return 0;
}
