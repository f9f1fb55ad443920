#ifndef CBACKSTAGE_DISK_H
#define CBACKSTAGE_DISK_H

// The disk recorder of test builds (the power-loss explorer's log), shared by Backstage's one
// system-call layer and a SQLite VFS registered over the default one. Release builds compile
// these as no-ops: see DiskRecorder.c.

/// True when the process records its disk operations (BACKSTAGE_DISK_LOG is set, test build).
int backstage_disk_is_on(void);

/// Starts operation `operation` on `path`: returns its index, first killing the process with
/// SIGKILL when it is the cut (BACKSTAGE_DISK_CUT), and stashing `victim` (a file about to be
/// unlinked or replaced; may be NULL). Returns -1 when not recording.
long backstage_disk_begin(const char *victim);

/// Records operation `index` as done: `operation`, `path` and an optional `second` field.
void backstage_disk_done(long index, const char *operation, const char *path, const char *second);

#endif
