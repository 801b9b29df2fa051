/* fuzz_spec.c - sweep specs: parse any YAML against the shipped catalog, as
 * 'ccsweep run' does: a serving spec (workload: serve) by serve_grid_parse,
 * whose first and last scenarios are projected, any other by spec_parse,
 * whose grid is built and its first and last scenarios projected (the
 * where-filter included). */
#include "fuzz_common.h"
#include "ccsweep/cost/timeline.h"
#include "ccsweep/sweep/grid.h"
#include "ccsweep/sweep/serve_grid.h"
#include "ccsweep/sweep/spec.h"

#include <math.h>

/* A projected serving scenario: a known status, and figures that are
 * numbers (a fitting plan's finite and not negative). */
static void check_serve(const serve_record *rec)
{
    const ccs_serve_result *r = &rec->r;
    if (r->status != CCS_ST_OK && r->status != CCS_ST_INVALID && r->status != CCS_ST_OOM)
        abort();
    if (r->status != CCS_ST_OK)
        return;
    const double v[] = {r->mem_weights, r->mem_kv,     r->kv_tokens,  r->t_prefill,
                        r->ttft,        r->tpot,       r->tok_s_gpu,  r->tok_s_system,
                        r->step.t,      r->step.flops, r->step.bytes, r->share_compute};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!(v[i] >= 0 && isfinite(v[i])))
            abort();
}

static void fuzz_serve(const char *text, size_t size, const ccs_catalog *cat)
{
    ccs_err err;
    memset(&err, 0, sizeof err);
    serve_grid *g = serve_grid_parse(text, size, "/nonexistent/fuzz.yaml", cat, &err);
    if (!g) {
        if (!err.msg[0])
            abort(); /* a refused spec must say why */
        return;
    }
    int64_t n = serve_grid_count(g), per = serve_grid_plan_n(g);
    if (n < 1 || per < 1 || n % per != 0)
        abort(); /* groups are whole ranges of plan_n scenarios */
    serve_record rec;
    for (int64_t i = 0; i < n && i < 4; i++) {
        serve_grid_eval(g, i, &rec);
        check_serve(&rec);
        serve_grid_eval(g, n - 1 - i, &rec);
        check_serve(&rec);
    }
    serve_grid_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ccs_catalog *cat = fuzz_catalog();
    char *text = fuzz_text(data, size);
    if (serve_spec_is_serve(text, size)) {
        fuzz_serve(text, size, cat);
        free(text);
        return 0;
    }
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
