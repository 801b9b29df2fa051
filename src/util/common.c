/* common.c - data-type tables, the error-buffer helper and a name index. */
#include "ccsweep/util/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[CCS_DTYPE_N] = {"fp32", "tf32", "bf16", "fp16", "fp8"};
static const double dtype_size[CCS_DTYPE_N] = {4, 4, 2, 2, 1};

double dtype_bytes(int dtype)
{
    return (dtype >= 0 && dtype < CCS_DTYPE_N) ? dtype_size[dtype] : 0.0;
}

const char *dtype_name(int dtype)
{
    return (dtype >= 0 && dtype < CCS_DTYPE_N) ? dtype_names[dtype] : "?";
}

int dtype_parse(const char *s)
{
    for (int i = 0; i < CCS_DTYPE_N; i++)
        if (s && strcmp(s, dtype_names[i]) == 0)
            return i;
    return -1;
}

void ccs_err_set(ccs_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

void ccs_put_le64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

uint64_t ccs_get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v |= (uint64_t)p[k] << (8 * k);
    return v;
}

int ccs_strlcpy(char *dst, const char *src, size_t n)
{
    size_t len = strlen(src);
    if (n == 0)
        return -1;
    if (len >= n) {
        memcpy(dst, src, n - 1);
        dst[n - 1] = '\0';
        return -1;
    }
    memcpy(dst, src, len + 1);
    return 0;
}

int ccs_name_ok(const char *s)
{
    size_t n = 0;
    for (; s && s[n]; n++) {
        char c = s[n];
        if (!(c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') ||
              (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return 0;
    }
    return n > 0 && n < CCS_NAME_MAX;
}

/* ---- name index ----------------------------------------------------------- */

typedef struct names_slot {
    char *name; /* NULL: empty */
    long value;
} names_slot;

struct ccs_names {
    names_slot *slot;
    size_t cap, n; /* cap is a power of two, kept at most half full */
};

static size_t names_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

ccs_names *ccs_names_new(void)
{
    return calloc(1, sizeof(ccs_names));
}

void ccs_names_free(ccs_names *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        free(t->slot[i].name);
    free(t->slot);
    free(t);
}

static names_slot *names_probe(const ccs_names *t, const char *name)
{
    size_t mask = t->cap - 1;
    for (size_t i = names_hash(name) & mask;; i = (i + 1) & mask)
        if (!t->slot[i].name || !strcmp(t->slot[i].name, name))
            return &t->slot[i];
}

long ccs_names_find(const ccs_names *t, const char *name)
{
    if (!t || !t->cap || !name)
        return -1;
    const names_slot *s = names_probe(t, name);
    return s->name ? s->value : -1;
}

int ccs_names_add(ccs_names *t, const char *name, long value)
{
    if (2 * (t->n + 1) > t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 16;
        names_slot *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return CCS_ENOMEM;
        ccs_names old = *t;
        t->slot = ns;
        t->cap = nc;
        for (size_t i = 0; i < old.cap; i++)
            if (old.slot[i].name)
                *names_probe(t, old.slot[i].name) = old.slot[i];
        free(old.slot);
    }
    names_slot *s = names_probe(t, name);
    if (s->name)
        return 1;
    s->name = strdup(name);
    if (!s->name)
        return CCS_ENOMEM;
    s->value = value;
    t->n++;
    return CCS_OK;
}
