/* common.c - data-type tables and the error-buffer helper. */
#include "ccsweep/common.h"

#include <stdarg.h>
#include <stdio.h>
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
