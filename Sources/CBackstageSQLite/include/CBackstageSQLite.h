#ifndef CBACKSTAGE_SQLITE_H
#define CBACKSTAGE_SQLITE_H

// A SQLite VFS for bulk work (copies, migrations), layered over the default VFS: see BulkVFS.c.

/// Registers the bulk VFS (once, over the default VFS of that moment) and returns its name, for a
/// URI's `vfs=` parameter; NULL when it could not be registered.
const char *backstage_bulk_vfs(void);

/// The file-control opcode that writes out the bytes a combining file holds and makes it write
/// through from then on: `sqlite3_file_control(db, schema, backstage_bulk_flush_opcode(), NULL)`.
/// SQLITE_OK when everything reached the file, else the failed write's code.
int backstage_bulk_flush_opcode(void);

#endif
