/* hw.c - hardware validation and generation scaling (hardware at
 * generation g is the base scaled by the evolution factors^g). */
#include "ccsweep/model/hw.h"

#include <math.h>

int hw_validate(const ccs_hw *hw, ccs_err *err)
{
    const struct {
        const char *field;
        double v;
    } pos[] = {
        {"mem_gib", hw->mem_cap},
        {"mem_gbps", hw->mem_bw},
        {"intra_gbps", hw->intra_bw},
        {"inter_gbps", hw->inter_bw},
        {"devices_per_node", hw->devices_per_node},
        {"compute_units", hw->compute_units},
        {"gemm_tile", hw->tile_m * (double)hw->tile_n},
    };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        if (!(pos[i].v > 0)) {
            ccs_err_set(err, "hardware '%s': field '%s' must be positive", hw->name, pos[i].field);
            return CCS_EINPUT;
        }
    }
    const struct {
        const char *field;
        double v;
    } frac[] = {{"gemm_efficiency", hw->gemm_eff},
                {"clock_ratio", hw->clock_ratio},
                {"mem_efficiency", hw->mem_eff},
                {"intra_efficiency", hw->intra_eff},
                {"inter_efficiency", hw->inter_eff}};
    for (size_t i = 0; i < sizeof frac / sizeof frac[0]; i++) {
        if (!(frac[i].v > 0 && frac[i].v <= 1)) {
            ccs_err_set(err, "hardware '%s': field '%s' must be in (0, 1] (got %g)", hw->name,
                        frac[i].field, frac[i].v);
            return CCS_EINPUT;
        }
    }
    if (hw->scaleup != 0 && hw->scaleup < hw->devices_per_node) {
        ccs_err_set(err,
                    "hardware '%s': field 'scaleup_domain' (%d) must be at least devices_per_node "
                    "(%d)",
                    hw->name, (int)hw->scaleup, (int)hw->devices_per_node);
        return CCS_EINPUT;
    }
    if (!(hw->nvls_eff >= 0 && hw->nvls_eff <= 1) || !(hw->oversub == 0 || hw->oversub >= 1)) {
        ccs_err_set(err,
                    "hardware '%s': field 'nvls_efficiency' must be in (0, 1] and "
                    "'oversubscription' at least 1",
                    hw->name);
        return CCS_EINPUT;
    }
    if (!(hw->gemm_eff_fp8 >= 0 && hw->gemm_eff_fp8 <= 1)) {
        ccs_err_set(err, "hardware '%s': field 'gemm_efficiency_fp8' must be in (0, 1] (got %g)",
                    hw->name, hw->gemm_eff_fp8);
        return CCS_EINPUT;
    }
    if (!(hw->gemm_eff_fp4 >= 0 && hw->gemm_eff_fp4 <= 1)) {
        ccs_err_set(err, "hardware '%s': field 'gemm_efficiency_fp4' must be in (0, 1] (got %g)",
                    hw->name, hw->gemm_eff_fp4);
        return CCS_EINPUT;
    }
    if (hw->gemm_eff_fp4 > 0 && !(hw->peak_fp4 > 0)) {
        ccs_err_set(err,
                    "hardware '%s': field 'gemm_efficiency_fp4' needs an fp4 peak "
                    "(peak_tflops.fp4)",
                    hw->name);
        return CCS_EINPUT;
    }
    if (!(hw->variability >= 0 && hw->variability < 0.1)) {
        ccs_err_set(err,
                    "hardware '%s': field 'variability' (relative standard deviation) must be "
                    "in [0, 0.1)",
                    hw->name);
        return CCS_EINPUT;
    }
    if (hw->intra_lat < 0 || hw->inter_lat < 0 || hw->kernel_lat < 0) {
        ccs_err_set(err, "hardware '%s': latencies must not be negative", hw->name);
        return CCS_EINPUT;
    }
    int any = 0;
    for (int d = 0; d < CCS_DTYPE_N; d++) {
        if (hw->peak_flops[d] < 0) {
            ccs_err_set(err, "hardware '%s': peak_tflops.%s must not be negative", hw->name,
                        dtype_name(d));
            return CCS_EINPUT;
        }
        any |= hw->peak_flops[d] > 0;
    }
    if (!any) {
        ccs_err_set(err, "hardware '%s': field 'peak_tflops' needs at least one dtype", hw->name);
        return CCS_EINPUT;
    }
    return CCS_OK;
}

int evolution_validate(const ccs_evolution *ev, ccs_err *err)
{
    const struct {
        const char *field;
        double v;
    } pos[] = {{"flops", ev->flops},       {"mem_bw", ev->mem_bw},     {"mem_cap", ev->mem_cap},
               {"intra_bw", ev->intra_bw}, {"inter_bw", ev->inter_bw}, {"latency", ev->latency},
               {"years", ev->years}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        if (!(pos[i].v > 0)) {
            ccs_err_set(err, "evolution '%s': field '%s' must be positive", ev->name, pos[i].field);
            return CCS_EINPUT;
        }
    }
    return CCS_OK;
}

void hw_evolve(const ccs_hw *base, const ccs_evolution *ev, int gen, ccs_hw *out)
{
    if (out != base)
        *out = *base;
    if (gen == 0 || !ev)
        return;
    double g = gen;
    double fc = pow(ev->flops, g);
    for (int d = 0; d < CCS_DTYPE_N; d++)
        out->peak_flops[d] *= fc;
    out->peak_fp4 *= fc;
    out->mem_bw *= pow(ev->mem_bw, g);
    out->mem_cap *= pow(ev->mem_cap, g);
    out->intra_bw *= pow(ev->intra_bw, g);
    out->inter_bw *= pow(ev->inter_bw, g);
    double fl = pow(ev->latency, g);
    out->intra_lat /= fl;
    out->inter_lat /= fl;
    out->kernel_lat /= fl;
    out->generation += gen;
}

double hw_gemm_flops(const ccs_hw *hw, int dtype)
{
    if (dtype < 0 || dtype >= CCS_DTYPE_N)
        return 0.0;
    return hw->peak_flops[dtype] * hw_gemm_eff(hw, dtype, NULL) * hw->clock_ratio;
}

double hw_gemm_eff(const ccs_hw *hw, int dtype, double *ref_k)
{
    int fp8 = dtype == CCS_FP8 && hw->gemm_eff_fp8 > 0;
    if (ref_k) {
        int32_t k = fp8 ? hw->gemm_fp8_ref_k : hw->gemm_ref_k;
        *ref_k = k > 0 ? k : CCS_GEMM_REF_K_DEFAULT;
    }
    return fp8 ? hw->gemm_eff_fp8 : hw->gemm_eff;
}
