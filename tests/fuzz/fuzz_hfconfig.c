/* fuzz_hfconfig.c - Hugging Face config.json files: the input is imported by
 * hfconfig_load (through a memory file, the same code path as a file on
 * disk), without a name and with one. A model it accepts must be valid,
 * named as the catalog names entries, with a finite positive parameter
 * count, and its catalog entry (hfconfig_write_entry, what 'catalog import'
 * prints) must load back as the same model, byte for byte. */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include "ccsweep/model/hfconfig.h"

#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

/* A memory file holding n bytes of data; its path into path. */
static int mem_file(const char *what, const void *data, size_t n, char *path, size_t cap)
{
    int fd = memfd_create(what, 0);
    if (fd < 0 || (n && write(fd, data, n) != (ssize_t)n))
        abort();
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

static void check_model(const ccs_model *m, const char *path)
{
    ccs_err err;
    double p = model_params(m);
    if (!ccs_name_ok(m->name) || model_validate(m, &err) != CCS_OK || !(p > 0 && isfinite(p)))
        abort(); /* an accepted config is a model the catalog takes */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    hfconfig_write_entry(f, m, path);
    if (fclose(f) != 0)
        abort();
    char ypath[64];
    int fd = mem_file("fuzz-hfconfig-entry", text, len, ypath, sizeof ypath);
    free(text);
    ccs_catalog *c = catalog_new();
    if (!c || catalog_load_models(c, ypath, &err) != CCS_OK) {
        fprintf(stderr, "fuzz_hfconfig: the entry of '%s' does not load: %s\n", m->name, err.msg);
        abort();
    }
    const ccs_model *back = catalog_model(c, m->name);
    if (!back || memcmp(back, m, sizeof *m) != 0)
        abort(); /* the entry is the model */
    catalog_free(c);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = mem_file("fuzz-hfconfig", data, size, path, sizeof path);
    for (int named = 0; named < 2; named++) {
        ccs_model m;
        ccs_err err;
        memset(&err, 0, sizeof err);
        if (hfconfig_load(path, named ? "fuzz-model" : NULL, &m, &err) == CCS_OK)
            check_model(&m, path);
        else if (!err.msg[0])
            abort(); /* a refused config must say why */
    }
    close(fd);
    return 0;
}
