/* common.h - shared types of ccsweep: status codes, data types, error buffers.
 * Every module includes this; it has no dependencies beyond libc. */
#ifndef CCSWEEP_COMMON_H
#define CCSWEEP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define CCS_VERSION "0.1.0"

/* Names of catalog entries (models, hardware, evolutions) fit in this, NUL included. */
#define CCS_NAME_MAX 48

/* Status codes: 0 ok, negative on error. */
enum {
    CCS_OK = 0,
    CCS_EINPUT = -1,   /* bad user input (file, option, value) */
    CCS_ENOMEM = -2,   /* allocation failed */
    CCS_EIO = -3,      /* a file or database operation failed */
    CCS_ERUNTIME = -4, /* anything else that is not the user's fault */
};

/* Element data types of a plan. */
typedef enum ccs_dtype {
    CCS_FP32 = 0,
    CCS_TF32,
    CCS_BF16,
    CCS_FP16,
    CCS_FP8,
    CCS_DTYPE_N
} ccs_dtype;

/* Bytes per element of a dtype (tf32 is stored as fp32). */
double dtype_bytes(int dtype);
/* Lower-case name ("bf16"), or "?" for an out-of-range value. */
const char *dtype_name(int dtype);
/* Parse a dtype name; returns the enum value or -1. */
int dtype_parse(const char *s);

/* An error message filled by the function that knows the context (file, line,
 * field). Callers own it, usually on the stack; functions accept NULL. */
typedef struct ccs_err {
    char msg[512];
} ccs_err;

/* printf-style; sets err->msg (truncating), no-op when err is NULL. */
void ccs_err_set(ccs_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Copy src into a fixed-size buffer of n bytes, always NUL-terminated.
 * Returns 0, or -1 when src was truncated. */
int ccs_strlcpy(char *dst, const char *src, size_t n);

#endif
