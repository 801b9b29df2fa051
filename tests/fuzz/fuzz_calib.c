/* fuzz_calib.c - calibration profiles (CSV): parse and fit any text; for a
 * profile that loads, project a catalog model with it, so the fitted curves
 * are evaluated inside, below and beyond their measured range. */
#include "fuzz_common.h"
#include "ccsweep/cost/opmodel.h"
#include "ccsweep/cost/timeline.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ccs_catalog *cat = fuzz_catalog();
    ccs_err err;
    ccs_opmodel *om = opmodel_parse((const char *)data, size, "fuzz.csv", &err);
    if (!om) {
        if (!err.msg[0])
            abort(); /* a refused profile must say why */
        return 0;
    }
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
    return 0;
}
