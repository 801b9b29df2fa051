/* fuzz_catalog.c - catalog files: the input is loaded as models.yaml,
 * hardware.yaml, evolutions.yaml and stacks.yaml in turn (through a memory
 * file, the same code path as files on disk), then every entry is looked up
 * again and every stack checked. */
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
        catalog_load_models, catalog_load_hardware, catalog_load_evolutions, catalog_load_stacks};
    for (int k = 0; k < 4; k++)
        if (load[k](c, path, &err) != CCS_OK && !err.msg[0])
            abort(); /* a refused catalog must say why */
    for (size_t i = 0; i < catalog_n_models(c); i++)
        if (catalog_model(c, catalog_model_at(c, i)->name) != catalog_model_at(c, i))
            abort();
    for (size_t i = 0; i < catalog_n_hw(c); i++)
        if (catalog_hw(c, catalog_hw_at(c, i)->name) != catalog_hw_at(c, i))
            abort();
    for (size_t i = 0; i < catalog_n_stacks(c); i++)
        if (catalog_stack(c, catalog_stack_at(c, i)->name) != catalog_stack_at(c, i) ||
            stack_validate(catalog_stack_at(c, i), &err) != CCS_OK)
            abort(); /* a loaded stack is a valid one */
    catalog_free(c);
    close(fd);
    return 0;
}
