// A SQLite VFS for bulk work, layered over the default VFS of the moment it is registered (the
// unix one; in the simulator's child, the disk recorder, which then records these writes too).
// SQLite reads and writes a database one page at a time, a system call each: a split of a 600 MB
// store made 150,000 `pread`s and as many `pwrite`s, and the kernel's cost per call weighed more
// than its copy. Only files opened through a URI that asks for it, and the connection's own
// temporary files, change behaviour:
//
// - A main database opened `immutable=1`, read-only: read ahead. A page inside the bytes held is
//   copied from memory; one near the last read (a scan) or just past the bytes held brings the
//   next 124 KiB in one read; any other read goes to the file. Sound only because the file cannot
//   change while it is open (what `immutable` promises: the split holds the store's exclusive lock
//   for as long as its readers live) and every commit is in it: so the open checks both, and reads
//   through when no connection of this process holds a lock above SHARED on it, or its `-wal` or
//   `-journal` holds bytes.
// - A main database opened `backstage_combine_writes=1`: page writes are gathered in a window of
//   124 KiB of the file, each run of written pages going out in one write when a write falls
//   outside it. A statement's journal, a sort's spill file: appended to in order and written
//   124 KiB at a time. Reads of bytes held write them out first, and so do every sync, truncation
//   (unless it cuts them all), size query, unlock and file control but the size hint. Only for a
//   file no other connection reads while it is written (a split's temporary target): a `-wal` is
//   never gathered, since at `synchronous` below FULL SQLite announces a commit's frames to other
//   connections (in the wal-index) without a sync or any other call this VFS sees.
// - A write that fails is never forgotten: the file keeps its error and every later read, write,
//   sync, truncation, size query, unlock and file control returns it, so a failure in a call
//   whose result SQLite ignores (a close, a hint such as a checkpoint's end) still fails the next
//   call that matters, and nothing is reported done. SQLite ignores the result of a close: the
//   owner asks for the flush (the opcode of backstage_bulk_flush_opcode) to get its error; the
//   file then writes through.
//
// Each file's methods are those of the file it wraps, version for version (as SQLite's
// ext/misc/vfstrace.c does): a method the wrapped file lacks (xShmMap of a version-1 file, xFetch
// of a version-2 one) is absent here too, never forwarded to a NULL pointer.
//
// 124 KiB: the unix VFS reads and writes at most 128 KiB - 1 bytes a call (it masks the count).
#include "CBackstageSQLite.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK = 124 * 1024 };
/// An opcode of no SQLite release (theirs are below 100; this one spells "BKFL").
enum { FLUSH_OPCODE = 0x424B464C };

enum Mode { THROUGH = 0, READ_AHEAD = 1, COMBINE = 2, APPEND = 3 };

typedef struct {
    sqlite3_file base;
    sqlite3_file *real;
    int mode;
    int length;               // READ_AHEAD: bytes held; COMBINE: the window's bytes, 0 when none is open
    sqlite3_int64 offset;     // file offset of the first byte held (of the window)
    int unit;                 // COMBINE: the size of the writes the window gathers (a page)
    sqlite3_int64 last;       // READ_AHEAD: the offset of the last read
    unsigned char *buffer;    // CHUNK bytes, NULL when THROUGH
    unsigned char filled[CHUNK / 512];  // COMBINE: which units of the window were written
    int error;                // the first failed write-out: SQLITE_OK until one fails, then kept
    sqlite3_io_methods methods;  // this file's: the wrapped file's version and methods
} BulkFile;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs bulk_vfs;

#define REAL(f) (((BulkFile *)(f))->real)

/// Writes out what a combining file holds: each run of written units in one write (an appending
/// file holds one run).
static int flush(BulkFile *file) {
    if (file->error != SQLITE_OK) return file->error;
    if (file->mode == APPEND && file->length > 0) {
        int rc = file->real->pMethods->xWrite(file->real, file->buffer, file->length, file->offset);
        if (rc != SQLITE_OK) return file->error = rc;
        file->length = 0;
        return SQLITE_OK;
    }
    if (file->mode != COMBINE || file->length == 0) return SQLITE_OK;
    int units = file->length / file->unit;
    int rc = SQLITE_OK;
    for (int first = 0; first < units && rc == SQLITE_OK;) {
        if (!file->filled[first]) {
            first++;
            continue;
        }
        int end = first;
        while (end < units && file->filled[end]) end++;
        rc = file->real->pMethods->xWrite(
            file->real, file->buffer + first * file->unit, (end - first) * file->unit,
            file->offset + (sqlite3_int64)first * file->unit);
        first = end;
    }
    if (rc != SQLITE_OK) return file->error = rc;
    file->length = 0;
    return SQLITE_OK;
}

static int bulk_close(sqlite3_file *f) {
    BulkFile *file = (BulkFile *)f;
    int flushed = flush(file);
    int rc = file->real->pMethods ? file->real->pMethods->xClose(file->real) : SQLITE_OK;
    free(file->buffer);
    file->buffer = NULL;
    return flushed != SQLITE_OK ? flushed : rc;
}

/// A read of a read-ahead file: from the bytes held, else, when it is near the last read (a scan:
/// a leaf, the overflow pages just before or after it, the next leaf) or just past the bytes held,
/// from a new chunk that starts a little before it, or right after the bytes held.
static int read_ahead(BulkFile *file, void *out, int amount, sqlite3_int64 offset) {
    sqlite3_int64 end = file->offset + file->length;
    sqlite3_int64 last = file->last;
    file->last = offset;
    if (offset >= file->offset && offset + amount <= end) {
        memcpy(out, file->buffer + (offset - file->offset), (size_t)amount);
        return SQLITE_OK;
    }
    int pastHeld = offset >= end && offset + amount <= end + CHUNK;
    int nearLast = offset >= last - CHUNK / 4 && offset < last + CHUNK;
    if (amount > CHUNK / 4 || !(pastHeld || nearLast)) {
        return file->real->pMethods->xRead(file->real, out, amount, offset);
    }
    sqlite3_int64 start = pastHeld ? end : (offset > CHUNK / 4 ? offset - CHUNK / 4 : 0);
    int rc = file->real->pMethods->xRead(file->real, file->buffer, CHUNK, start);
    file->offset = start;
    file->length = 0;
    if (rc == SQLITE_OK) {
        file->length = CHUNK;
    } else if (rc == SQLITE_IOERR_SHORT_READ) {
        // Near the end of the file: keep only the bytes it has.
        sqlite3_int64 size = 0;
        if (file->real->pMethods->xFileSize(file->real, &size) == SQLITE_OK && size > start) {
            file->length = size - start < CHUNK ? (int)(size - start) : CHUNK;
        }
    } else {
        return rc;
    }
    if (offset + amount <= start + file->length) {
        memcpy(out, file->buffer + (offset - start), (size_t)amount);
        return SQLITE_OK;
    }
    return file->real->pMethods->xRead(file->real, out, amount, offset);
}

static int bulk_read(sqlite3_file *f, void *out, int amount, sqlite3_int64 offset) {
    BulkFile *file = (BulkFile *)f;
    if (file->mode == READ_AHEAD) return read_ahead(file, out, amount, offset);
    if (file->error != SQLITE_OK) return file->error;
    if ((file->mode == COMBINE || file->mode == APPEND) && file->length > 0
        && offset < file->offset + file->length && offset + amount > file->offset) {
        int rc = flush(file);
        if (rc != SQLITE_OK) return rc;
    }
    return file->real->pMethods->xRead(file->real, out, amount, offset);
}

/// A write of an appending file (a `-wal`: frame headers and pages, one after the other): after
/// the bytes held when it follows them and fits, over them when it falls inside them, else the
/// bytes held go out and it starts a new run.
static int append(BulkFile *file, const void *bytes, int amount, sqlite3_int64 offset) {
    if (file->length > 0 && offset == file->offset + file->length && file->length + amount <= CHUNK) {
        memcpy(file->buffer + file->length, bytes, (size_t)amount);
        file->length += amount;
        return SQLITE_OK;
    }
    if (file->length > 0 && offset >= file->offset && offset + amount <= file->offset + file->length) {
        memcpy(file->buffer + (offset - file->offset), bytes, (size_t)amount);
        return SQLITE_OK;
    }
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    if (amount > CHUNK / 2) return file->real->pMethods->xWrite(file->real, bytes, amount, offset);
    memcpy(file->buffer, bytes, (size_t)amount);
    file->offset = offset;
    file->length = amount;
    return SQLITE_OK;
}

/// A write of a combining file: into the open window when it is one of its units, else it opens
/// the window around it (pages come nearly in order: a leaf, then the overflow page before it).
static int bulk_write(sqlite3_file *f, const void *bytes, int amount, sqlite3_int64 offset) {
    BulkFile *file = (BulkFile *)f;
    if (file->error != SQLITE_OK) return file->error;
    if (file->mode == APPEND) return append(file, bytes, amount, offset);
    if (file->mode != COMBINE) return file->real->pMethods->xWrite(file->real, bytes, amount, offset);
    if (file->length > 0 && amount == file->unit && offset >= file->offset
        && offset + amount <= file->offset + file->length && (offset - file->offset) % amount == 0) {
        int unit = (int)((offset - file->offset) / amount);
        memcpy(file->buffer + (size_t)unit * (size_t)amount, bytes, (size_t)amount);
        file->filled[unit] = 1;
        return SQLITE_OK;
    }
    int rc = flush(file);
    if (rc != SQLITE_OK) return rc;
    if (amount < 512 || amount > CHUNK / 2 || amount % 512 != 0) {
        return file->real->pMethods->xWrite(file->real, bytes, amount, offset);
    }
    int window = (CHUNK / amount) * amount;
    file->unit = amount;
    file->offset = offset - offset % window;
    file->length = window;
    memset(file->filled, 0, sizeof file->filled);
    int unit = (int)((offset - file->offset) / amount);
    memcpy(file->buffer + (size_t)unit * (size_t)amount, bytes, (size_t)amount);
    file->filled[unit] = 1;
    return SQLITE_OK;
}

static int bulk_truncate(sqlite3_file *f, sqlite3_int64 size) {
    BulkFile *file = (BulkFile *)f;
    if (file->error != SQLITE_OK) return file->error;
    // Bytes held past the new end would be cut at once: dropped unwritten once the file is cut (a
    // statement's journal is emptied when the statement ends).
    if ((file->mode == COMBINE || file->mode == APPEND) && file->length > 0 && size <= file->offset) {
        int rc = REAL(f)->pMethods->xTruncate(REAL(f), size);
        if (rc == SQLITE_OK) file->length = 0;
        return rc;
    }
    int rc = flush(file);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int bulk_sync(sqlite3_file *f, int flags) {
    int rc = flush((BulkFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int bulk_size(sqlite3_file *f, sqlite3_int64 *size) {
    int rc = flush((BulkFile *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int bulk_lock(sqlite3_file *f, int level) { return REAL(f)->pMethods->xLock(REAL(f), level); }

static int bulk_unlock(sqlite3_file *f, int level) {
    // Unlocked whatever the flush gave: SQLite records the new level even when this fails.
    int rc = flush((BulkFile *)f);
    int unlocked = REAL(f)->pMethods->xUnlock(REAL(f), level);
    return rc != SQLITE_OK ? rc : unlocked;
}

static int bulk_check_lock(sqlite3_file *f, int *out) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out); }

static int bulk_control(sqlite3_file *f, int op, void *argument) {
    BulkFile *file = (BulkFile *)f;
    if (op == FLUSH_OPCODE) {
        int rc = flush(file);
        if (file->mode == COMBINE || file->mode == APPEND) file->mode = THROUGH;
        return rc;
    }
    // The size hint comes before each batch of pages written: it only reserves room (the unix VFS
    // does nothing unless a chunk size was set), so the bytes held may wait.
    if (op != SQLITE_FCNTL_SIZE_HINT) {
        int rc = flush(file);
        if (rc != SQLITE_OK) return rc;
    } else if (file->error != SQLITE_OK) {
        return file->error;
    }
    return REAL(f)->pMethods->xFileControl(REAL(f), op, argument);
}

static int bulk_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int bulk_device(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int bulk_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out) {
    return REAL(f)->pMethods->xShmMap(REAL(f), page, size, extend, out);
}
static int bulk_shm_lock(sqlite3_file *f, int offset, int n, int flags) {
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static void bulk_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int bulk_shm_unmap(sqlite3_file *f, int delete) { return REAL(f)->pMethods->xShmUnmap(REAL(f), delete); }
static int bulk_fetch(sqlite3_file *f, sqlite3_int64 offset, int amount, void **out) {
    // No memory-mapped pages: every read goes through xRead, which sees the bytes held.
    (void)f; (void)offset; (void)amount;
    *out = NULL;
    return SQLITE_OK;
}
static int bulk_unfetch(sqlite3_file *f, sqlite3_int64 offset, void *page) {
    (void)f; (void)offset; (void)page;
    return SQLITE_OK;
}

/// This file's methods: each of the wrapped file's version, and only those it has.
static void set_methods(BulkFile *file) {
    const sqlite3_io_methods *real = file->real->pMethods;
    sqlite3_io_methods *m = &file->methods;
    memset(m, 0, sizeof *m);
    m->iVersion = real->iVersion < 3 ? real->iVersion : 3;
    m->xClose = bulk_close;
    m->xRead = bulk_read;
    m->xWrite = bulk_write;
    m->xTruncate = bulk_truncate;
    m->xSync = bulk_sync;
    m->xFileSize = bulk_size;
    m->xLock = bulk_lock;
    m->xUnlock = bulk_unlock;
    m->xCheckReservedLock = bulk_check_lock;
    m->xFileControl = bulk_control;
    m->xSectorSize = real->xSectorSize ? bulk_sector : NULL;
    m->xDeviceCharacteristics = real->xDeviceCharacteristics ? bulk_device : NULL;
    if (m->iVersion >= 2) {
        m->xShmMap = real->xShmMap ? bulk_shm_map : NULL;
        m->xShmLock = real->xShmLock ? bulk_shm_lock : NULL;
        m->xShmBarrier = real->xShmBarrier ? bulk_shm_barrier : NULL;
        m->xShmUnmap = real->xShmUnmap ? bulk_shm_unmap : NULL;
    }
    if (m->iVersion >= 3) {
        // Never mapped pages, whatever the wrapped file could do: every read goes through xRead.
        m->xFetch = bulk_fetch;
        m->xUnfetch = bulk_unfetch;
    }
}

/// True when reading `name` ahead is sound: a connection of this process holds a lock above
/// SHARED on it (the caller's exclusive lock: no writer can change it) and its `-wal` and
/// `-journal` are absent or empty (every commit is in the file an `immutable` open reads).
static int may_read_ahead(sqlite3_file *real, const char *name) {
    int locked = 0;
    if (real->pMethods->xCheckReservedLock(real, &locked) != SQLITE_OK || !locked) return 0;
    const char *logs[] = {sqlite3_filename_wal(name), sqlite3_filename_journal(name)};
    for (int i = 0; i < 2; i++) {
        int present = 1;
        if (!logs[i] || real_vfs->xAccess(real_vfs, logs[i], SQLITE_ACCESS_EXISTS, &present) != SQLITE_OK) return 0;
        if (present) return 0;
    }
    return 1;
}

static int bulk_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *outFlags) {
    (void)vfs;
    BulkFile *file = (BulkFile *)f;
    memset(file, 0, sizeof *file);
    file->real = (sqlite3_file *)(file + 1);
    int rc = real_vfs->xOpen(real_vfs, name, file->real, flags, outFlags);
    if (rc != SQLITE_OK) {
        file->base.pMethods = NULL;
        return rc;
    }
    if (name && (flags & SQLITE_OPEN_MAIN_DB)) {
        if ((flags & SQLITE_OPEN_READONLY) && sqlite3_uri_boolean(name, "immutable", 0)) {
            if (may_read_ahead(file->real, name)) file->mode = READ_AHEAD;
        } else if (sqlite3_uri_boolean(name, "backstage_combine_writes", 0)) {
            file->mode = COMBINE;
        }
    } else if (flags & (SQLITE_OPEN_SUBJOURNAL | SQLITE_OPEN_TEMP_JOURNAL)) {
        // A statement's journal or a sort's spill: this connection's own nameless file, written
        // in order, read back only by it, deleted when closed.
        file->mode = APPEND;
    }
    if (file->mode != THROUGH) {
        file->last = -2 * (sqlite3_int64)CHUNK;
        file->buffer = malloc(CHUNK);
        if (!file->buffer) file->mode = THROUGH;
    }
    set_methods(file);
    file->base.pMethods = &file->methods;
    return SQLITE_OK;
}

static int bulk_delete(sqlite3_vfs *vfs, const char *name, int syncDir) {
    (void)vfs;
    return real_vfs->xDelete(real_vfs, name, syncDir);
}
static int bulk_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return real_vfs->xAccess(real_vfs, name, flags, out);
}
static int bulk_full_path(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    (void)vfs;
    return real_vfs->xFullPathname(real_vfs, name, n, out);
}
static void *bulk_dlopen(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return real_vfs->xDlOpen(real_vfs, name);
}
static void bulk_dlerror(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs;
    real_vfs->xDlError(real_vfs, n, out);
}
static void (*bulk_dlsym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    (void)vfs;
    return real_vfs->xDlSym(real_vfs, handle, symbol);
}
static void bulk_dlclose(sqlite3_vfs *vfs, void *handle) {
    (void)vfs;
    real_vfs->xDlClose(real_vfs, handle);
}
static int bulk_random(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs;
    return real_vfs->xRandomness(real_vfs, n, out);
}
static int bulk_sleep(sqlite3_vfs *vfs, int micro) {
    (void)vfs;
    return real_vfs->xSleep(real_vfs, micro);
}
static int bulk_time(sqlite3_vfs *vfs, double *out) {
    (void)vfs;
    return real_vfs->xCurrentTime(real_vfs, out);
}
static int bulk_last_error(sqlite3_vfs *vfs, int n, char *out) {
    (void)vfs;
    return real_vfs->xGetLastError(real_vfs, n, out);
}
static int bulk_time64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *registered;

static void register_vfs(void) {
    if (sqlite3_initialize() != SQLITE_OK) return;
    real_vfs = sqlite3_vfs_find(NULL);
    if (!real_vfs || real_vfs->iVersion < 2) return;
    bulk_vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(BulkFile) + real_vfs->szOsFile,
        .mxPathname = real_vfs->mxPathname,
        .zName = "backstage-bulk",
        .xOpen = bulk_open,
        .xDelete = bulk_delete,
        .xAccess = bulk_access,
        .xFullPathname = bulk_full_path,
        .xDlOpen = bulk_dlopen,
        .xDlError = bulk_dlerror,
        .xDlSym = bulk_dlsym,
        .xDlClose = bulk_dlclose,
        .xRandomness = bulk_random,
        .xSleep = bulk_sleep,
        .xCurrentTime = bulk_time,
        .xGetLastError = bulk_last_error,
        .xCurrentTimeInt64 = bulk_time64,
    };
    if (sqlite3_vfs_register(&bulk_vfs, 0) == SQLITE_OK) registered = bulk_vfs.zName;
}

const char *backstage_bulk_vfs(void) {
    pthread_once(&once, register_vfs);
    return registered;
}

int backstage_bulk_flush_opcode(void) { return FLUSH_OPCODE; }
