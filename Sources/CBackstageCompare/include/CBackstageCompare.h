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
    /// The guard's handler could not be installed: nothing was read.
    BACKSTAGE_COMPARE_UNGUARDED = -2,
};

/// 1 when the `length` bytes at `a` and at `b` (mapped files) are the same, 0 when they differ,
/// else one of the answers above. The guard is this thread's, for this call only; its handler,
/// installed at the first call, hands every other SIGBUS to the handler installed before it (the
/// Swift runtime's backtracer, an app's crash reporter) or to the default action.
int backstage_guarded_compare(const void *a, const void *b, size_t length);

#endif
