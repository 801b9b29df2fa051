/* buf.c - growable array and string (buf.h). */
#include "ccsweep/util/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int ccs_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return -1;
        nc *= 2;
    }
    if (elem && nc > SIZE_MAX / elem)
        return -1;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

int ccs_buf_printf(ccs_buf *b, const char *fmt, ...)
{
    if (b->oom)
        return -1;
    for (;;) {
        size_t room = b->s ? b->cap - b->len : 0;
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return -1;
        }
        if ((size_t)k < room) {
            b->len += (size_t)k;
            return 0;
        }
        /* room for the text and its NUL, at least doubling */
        size_t cap = b->cap, need = b->len + (size_t)k + 1;
        if (ccs_grow((void **)&b->s, &cap, need < 256 ? 256 : need, 1)) {
            b->oom = 1;
            return -1;
        }
        if (!b->cap)
            b->s[0] = '\0';
        b->cap = cap;
    }
}

const char *ccs_buf_str(const ccs_buf *b)
{
    return b->s ? b->s : "";
}

void ccs_buf_free(ccs_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}
