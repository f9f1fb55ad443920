#ifndef CBACKSTAGE_COMPARE_H
#define CBACKSTAGE_COMPARE_H

#include <stddef.h>

// The comparison of two mapped windows of files, guarded against SIGBUS: what Swift cannot do
// itself. A mapping faults when its file is shortened by another process, or when the disk
// cannot return a page; the default action of that SIGBUS ends the process.

/// `backstage_guarded_compare`'s answers besides 1 (equal) and 0 (different).
enum {
    /// Reading a mapping faulted (SIGBUS): nothing was decided.
    BACKSTAGE_COMPARE_FAULTED = -1,
    /// The guard is not the installed SIGBUS action (it could not be installed, it handed a signal
    /// on, or the app replaced it): nothing was read. Read the files instead.
    BACKSTAGE_COMPARE_UNGUARDED = -2,
};

/// 1 when the `length` bytes at `a` and at `b` (mapped files) are the same, 0 when they differ,
/// else one of the answers above. The guard is this thread's, for this call only. Its handler,
/// installed at the first call, puts back the action that was there before it (the Swift runtime's
/// backtracer, an app's crash reporter, the default) for any other SIGBUS, and lets the signal reach
/// it; later calls then answer BACKSTAGE_COMPARE_UNGUARDED, as they do when the app has installed a
/// handler of its own since.
int backstage_guarded_compare(const void *a, const void *b, size_t length);

#endif
