/* fuzz_calib.c - calibration profiles (CSV): parse and fit any text; for a
 * profile that loads, project a catalog model with it, so the fitted curves
 * are evaluated inside, below and beyond their measured range. The same
 * bytes are also read as measurements (5 bytes a row: operator, three
 * dimensions and a size, a time, all within the parser's bounds) and written
 * as a profile that always parses, so that the fit itself (binning, the
 * monotone interpolation, the GEMM shape regression, the linear fits of the
 * ends) runs on fuzzer-chosen points: repeated works, equal times, huge
 * spreads. */
#include "fuzz_common.h"
#include "ccsweep/cost/opmodel.h"
#include "ccsweep/cost/timeline.h"

#include <math.h>
#include <stdio.h>

static void project(ccs_opmodel *om);

/* Rows from bytes: b0 picks the operator (and the group and level), b1..b3
 * the dimensions (2^(b/8), up to 2^31), b1 also the size (up to 2^50 bytes),
 * b4 the time (1e-12 s to 1e3 s, log-spaced). */
static void fit_points(const uint8_t *data, size_t size)
{
    static const char *const ops[] = {"gemm",      "bmm",       "attention", "elementwise",
                                      "layernorm", "allreduce", "allgather", "p2p"};
    size_t rows = size / 5;
    if (!rows)
        return;
    char *text = malloc(64 + rows * 96), *p = text;
    if (!text)
        abort();
    p += sprintf(p, "op,dtype,m,n,k,bytes,group,level,time_s,reps\n");
    for (size_t i = 0; i < rows; i++) {
        const uint8_t *b = data + 5 * i;
        const char *op = ops[b[0] % 8];
        double m = floor(ldexp(1, b[1] / 8)), n = floor(ldexp(1, b[2] / 8)),
               k = floor(ldexp(1, b[3] / 8)), t = 1e-12 * pow(10, b[4] / 17.0);
        int coll = b[0] % 8 >= 5, mem = b[0] % 8 == 3 || b[0] % 8 == 4;
        p += sprintf(p, "%s,bf16,%.0f,%.0f,%.0f,%.0f,%d,%s,%.6e,3\n", op, coll ? 0 : m,
                     coll ? 0 : n, coll ? 0 : k, coll || mem ? ldexp(1, b[1] % 51) : 0,
                     coll ? 2 + (b[0] >> 3) % 15 : 1 + (b[0] >> 3) % 4,
                     coll ? (b[0] & 0x80 ? "inter" : "intra") : "", t);
    }
    ccs_err err;
    ccs_opmodel *om = opmodel_parse(text, (size_t)(p - text), "points.csv", &err);
    free(text);
    if (!om)
        abort(); /* every row is within the bounds: the profile must load */
    project(om);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fit_points(data, size);
    ccs_err err;
    ccs_opmodel *om = opmodel_parse((const char *)data, size, "fuzz.csv", &err);
    if (!om) {
        if (!err.msg[0])
            abort(); /* a refused profile must say why */
        return 0;
    }
    project(om);
    return 0;
}

/* Project two catalog models with om's curves (and free om). */
static void project(ccs_opmodel *om)
{
    const ccs_catalog *cat = fuzz_catalog();
    static const char *const models[] = {"gpt3-175b", "llama3-8b"};
    const ccs_hw *hw = catalog_hw(cat, "a100-80g");
    const ccs_evolution *ev = catalog_evolution(cat, "memory-wall");
    for (int k = 0; k < 2; k++) {
        const ccs_model *m = catalog_model(cat, models[k]);
        ccs_plan p;
        plan_defaults(&p);
        p.tp = 8;
        p.pp = 8;
        p.devices = 512;
        p.seq = 2048;
        p.gbs = 512;
        if (plan_derive(&p) != CCS_R_OK)
            abort();
        ccs_cost c;
        cost_init(&c, hw, om, ev, k, &p);
        ccs_result r;
        ccs_region_time rg[CCS_RG_N];
        timeline_project(m, &p, &c, &r, rg);
        if (r.status == CCS_ST_OK && !(r.t_iter >= 0))
            abort(); /* a time is never negative or NaN */
    }
    opmodel_free(om);
}
