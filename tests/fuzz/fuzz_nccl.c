/* fuzz_nccl.c - the nccl-tests log importer (tools/nccl_import.c, built
 * without its main): any text as an all_reduce_perf log, in-place and
 * out-of-place. */
#define NCCL_IMPORT_NO_MAIN
#include "../../tools/nccl_import.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0; /* fmemopen needs a non-empty buffer */
    FILE *out = fopen("/dev/null", "w");
    if (!out)
        abort();
    for (int in_place = 0; in_place < 2; in_place++) {
        FILE *f = fmemopen((void *)(uintptr_t)data, size, "r");
        if (!f)
            abort();
        opts o = {.in_place = in_place};
        nccl_import_stream(f, "all_reduce_perf.log", &o, out);
        fclose(f);
    }
    fclose(out);
    return 0;
}
