/* buf.h - the one growable array and the one growable string of ccsweep.
 *
 * ccs_grow keeps an array of elem-byte elements with room for at least `need`
 * of them (capacity doubles, from 16), so that appenders write
 *     if (ccs_grow((void **)&v, &cap, n + 1, sizeof *v)) return CCS_ENOMEM;
 *     v[n++] = x;
 * ccs_buf is a NUL-terminated string appended to with printf formats; a failed
 * allocation is remembered (oom) and later appends do nothing, so a writer
 * checks once at the end. */
#ifndef CCSWEEP_BUF_H
#define CCSWEEP_BUF_H

#include <stddef.h>

/* Make *arr (capacity *cap elements of elem bytes; NULL and 0 to start) hold
 * at least need elements. Returns 0, or -1 (the array unchanged) on overflow or
 * allocation failure. */
int ccs_grow(void **arr, size_t *cap, size_t need, size_t elem);

typedef struct ccs_buf {
    char *s;    /* NUL-terminated text, or NULL while empty */
    size_t len; /* bytes before the NUL */
    size_t cap; /* bytes allocated */
    int oom;    /* an append failed: the text stops before it */
} ccs_buf;

#define CCS_BUF_INIT                                                                               \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

/* Append printf-formatted text. Returns 0, or -1 (oom set) on failure. */
int ccs_buf_printf(ccs_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The text ("" while empty); borrowed. */
const char *ccs_buf_str(const ccs_buf *b);
/* Free the text; the buffer is empty (and usable) again. */
void ccs_buf_free(ccs_buf *b);

#endif
