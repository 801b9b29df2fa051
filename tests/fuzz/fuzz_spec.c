/* fuzz_spec.c - sweep specs: parse any YAML against the shipped catalog; for
 * a spec that parses, build its grid and project its first and last
 * scenarios (the where-filter included). */
#include "fuzz_common.h"
#include "ccsweep/sweep/grid.h"
#include "ccsweep/sweep/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ccs_catalog *cat = fuzz_catalog();
    char *text = fuzz_text(data, size);
    ccs_err err;
    /* a path in a directory without calibration files: profiles do not load */
    ccs_spec *s = spec_parse(text, size, "/nonexistent/fuzz.yaml", cat, &err);
    if (s) {
        ccs_grid *g = grid_new(s, &err);
        if (g) {
            ccs_record rec;
            int64_t n = grid_count(g);
            for (int64_t i = 0; i < n && i < 4; i++) {
                grid_eval(g, i, &rec, NULL);
                grid_eval(g, n - 1 - i, &rec, NULL);
            }
            char name[256];
            grid_format_name(g, &rec, name, sizeof name);
            grid_free(g);
        }
        spec_free(s);
    } else if (!err.msg[0]) {
        abort(); /* a refused spec must say why */
    }
    free(text);
    return 0;
}
