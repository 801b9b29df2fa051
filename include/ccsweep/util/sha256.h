/* sha256.h - SHA-256 (FIPS 180-4) of a byte string, for the provenance of
 * sweep specs in the database (runs.spec_sha256) and resume matching. */
#ifndef CCSWEEP_SHA256_H
#define CCSWEEP_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Incremental state; initialise with sha256_init, feed with sha256_update. */
typedef struct ccs_sha256 {
    uint32_t h[8];
    uint64_t len;    /* bytes fed so far */
    uint8_t buf[64]; /* pending partial block */
    size_t nbuf;
} ccs_sha256;

void sha256_init(ccs_sha256 *s);
void sha256_update(ccs_sha256 *s, const void *data, size_t n);
/* Write the 32-byte digest; s must be re-initialised before reuse. */
void sha256_final(ccs_sha256 *s, uint8_t out[32]);

/* One-shot digest of data as 64 lower-case hex digits plus NUL. */
void sha256_hex(const void *data, size_t n, char out[65]);

#endif
