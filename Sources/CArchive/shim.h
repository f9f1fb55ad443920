// libarchive for Swift, with the codecs export calls itself (zlib, libdeflate, libzstd): the headers,
// plus wrappers for what does not import (cast macros) and a thread-local UTF-8 locale. Only
// Sources/BackstageExport/LibArchive/ imports this module.
#ifndef BACKSTAGE_CARCHIVE_SHIM_H
#define BACKSTAGE_CARCHIVE_SHIM_H

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>
#include <zlib.h>
#include <libdeflate.h>
#include <zstd.h>
#include <zstd_errors.h>

/// archive_set_error is variadic: a fixed message for read callbacks.
static inline void backstage_archive_set_error(struct archive *a, int code, const char *message) {
    archive_set_error(a, code, "%s", message);
}

/// inflateInit2 is a macro: a gzip-only inflater (RFC 1952, header and trailer checked).
static inline int backstage_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}

/// deflateInit2 is a macro: a raw deflate stream (no zlib or gzip wrapper), for gzip members
/// compressed block by block on several threads.
static inline int backstage_deflate_init_raw(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}

static inline unsigned int backstage_ae_ifreg(void) { return AE_IFREG; }
static inline unsigned int backstage_ae_ifdir(void) { return AE_IFDIR; }
static inline unsigned int backstage_ae_iflnk(void) { return AE_IFLNK; }

/// Switches the calling thread (only) to the C.UTF-8 locale and returns the previous one, so
/// libarchive converts UTF-8 names whatever the process locale; give the result to
/// backstage_restore_locale. In the C locale libarchive 3.6 drops or mangles non-ASCII names.
static inline locale_t backstage_use_utf8_locale(void) {
    locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (utf8 == (locale_t)0) return (locale_t)0;
    return uselocale(utf8);
}

static inline void backstage_restore_locale(locale_t previous) {
    if (previous == (locale_t)0) return;
    locale_t current = uselocale(previous);
    if (current != (locale_t)0 && current != LC_GLOBAL_LOCALE) freelocale(current);
}

#endif
