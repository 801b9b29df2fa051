/* fuzz_catalog.c - catalog files: the input is loaded as models.yaml,
 * hardware.yaml and evolutions.yaml in turn (through a memory file, the same
 * code path as files on disk), then every entry is looked up again. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-catalog", 0);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ccs_catalog *c = catalog_new();
    ccs_err err;
    int (*const load[])(ccs_catalog *, const char *, ccs_err *) = {
        catalog_load_models, catalog_load_hardware, catalog_load_evolutions};
    for (int k = 0; k < 3; k++)
        if (load[k](c, path, &err) != CCS_OK && !err.msg[0])
            abort(); /* a refused catalog must say why */
    for (size_t i = 0; i < catalog_n_models(c); i++)
        if (catalog_model(c, catalog_model_at(c, i)->name) != catalog_model_at(c, i))
            abort();
    for (size_t i = 0; i < catalog_n_hw(c); i++)
        if (catalog_hw(c, catalog_hw_at(c, i)->name) != catalog_hw_at(c, i))
            abort();
    catalog_free(c);
    close(fd);
    return 0;
}
