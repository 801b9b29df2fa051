/* fuzz_common.h - shared by the libFuzzer harnesses in tests/fuzz: a catalog
 * loaded once from sweeps/catalog (run from the repository root, or set
 * CCSWEEP_CATALOG), and a NUL-terminated copy of the input. */
#ifndef CCSWEEP_FUZZ_COMMON_H
#define CCSWEEP_FUZZ_COMMON_H

#include "ccsweep/model/catalog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline const ccs_catalog *fuzz_catalog(void)
{
    static ccs_catalog *cat;
    if (!cat) {
        const char *dir = getenv("CCSWEEP_CATALOG");
        ccs_err err;
        cat = catalog_new();
        if (!cat || catalog_load_dir(cat, dir ? dir : "sweeps/catalog", &err) != CCS_OK) {
            fprintf(stderr, "fuzz: cannot load the catalog: %s\n", err.msg);
            abort();
        }
    }
    return cat;
}

/* A NUL-terminated copy of data (the parsers take lengths, the expression
 * compiler a C string); the caller frees it. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t)
        abort();
    memcpy(t, data, size);
    t[size] = 0;
    return t;
}

#endif
