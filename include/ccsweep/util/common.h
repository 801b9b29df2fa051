/* common.h - shared types of ccsweep: status codes, data types, error buffers.
 * Every module includes this; it has no dependencies beyond libc. */
#ifndef CCSWEEP_COMMON_H
#define CCSWEEP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define CCS_VERSION "0.1.0"

/* Names of catalog entries (models, hardware, evolutions) fit in this, NUL included. */
#define CCS_NAME_MAX 48

/* Limits on input sizes, the same wherever a size enters (catalog, spec,
 * 'ccsweep project' options): within them every product the projection forms
 * (tokens = mbs * seq, devices = tp * pp * dp, 4 * hidden, ...) fits its type
 * and every output is finite. Stated in --help, README.md and sweeps/README.md. */
#define CCS_MAX_LAYERS 100000
#define CCS_MAX_HIDDEN (1 << 20)  /* 1,048,576; also heads and kv_heads */
#define CCS_MAX_FFN (1 << 22)     /* 4,194,304; also moe_ffn */
#define CCS_MAX_EXPERTS 65536     /* experts, shared_experts (top_k <= experts) */
#define CCS_MAX_VOCAB (1 << 24)   /* 16,777,216; also max_pos */
#define CCS_MAX_SEQ (1 << 24)     /* 16,777,216 tokens per sequence */
#define CCS_MAX_DEVICES (1 << 24) /* 16,777,216; also tp, pp and dp */
#define CCS_MAX_VPP 1024
#define CCS_MAX_MBS (1 << 20) /* 1,048,576 sequences per micro-batch */
#define CCS_MAX_GBS (1 << 30) /* 1,073,741,824 sequences per batch */
#define CCS_MAX_GEN 64        /* hardware generations */
#define CCS_MAX_FACTOR 1e6    /* comm_compress, net_bw_factor: in (0, 1e6] */

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

/* v as 8 little-endian bytes at p, and back: byte layouts stored in files. */
void ccs_put_le64(unsigned char *p, uint64_t v);
uint64_t ccs_get_le64(const unsigned char *p);

/* 1 when s is a valid catalog entry name: 1 to CCS_NAME_MAX-1 characters,
 * each a letter, a digit, '-', '_' or '.'. Names read back from a database
 * are checked again with it before they reach a plot script. */
int ccs_name_ok(const char *s);

/* An index of names (hash table; names are copied) to a value each, so that
 * duplicate checks and lookups over many entries stay linear in time. */
typedef struct ccs_names ccs_names;
ccs_names *ccs_names_new(void);    /* NULL when out of memory */
void ccs_names_free(ccs_names *t); /* NULL is a no-op */
/* The value of name, or -1 when absent. */
long ccs_names_find(const ccs_names *t, const char *name);
/* Add name with value: CCS_OK, 1 when the name is already present (nothing
 * changes), or CCS_ENOMEM. */
int ccs_names_add(ccs_names *t, const char *name, long value);

#endif
