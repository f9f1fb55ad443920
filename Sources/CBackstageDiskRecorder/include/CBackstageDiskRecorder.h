#ifndef CBACKSTAGE_DISK_RECORDER_H
#define CBACKSTAGE_DISK_RECORDER_H

// The power-loss explorer's disk recorder (see DiskRecorder.c): linked by the simulator's child
// only, and inert until backstage_disk_install is called.

/// Starts recording this process's disk operations into the log at `log` (appended; one line per
/// operation that succeeded, never fsynced: a SIGKILL keeps what the kernel has), and makes a
/// recording VFS, layered over the default one, SQLite's default VFS. `cut_before` >= 0: the
/// process kills itself with SIGKILL before operation `cut_before` (from 0); -1: never.
/// `stash_folder` (or NULL) receives a hard link (a copy across file systems) of every file an
/// operation unlinks or renames over, named by the operation's index, and the bytes each of
/// SQLite's writes replaced (`<index>.undo`). Call it once, before any database is opened.
/// Returns 0, or the errno that says why nothing is recorded (EALREADY: installed already).
int backstage_disk_install(const char *log, long cut_before, const char *stash_folder);

/// Starts an operation: returns its index, first killing the process with SIGKILL when it is the
/// cut, and stashing `victim` (a file about to be unlinked or replaced; may be NULL). Returns -1
/// when not recording.
long backstage_disk_begin(const char *victim);

/// Records operation `index` as done: `operation`, `path` and an optional `second` field.
void backstage_disk_done(long index, const char *operation, const char *path, const char *second);

#endif
