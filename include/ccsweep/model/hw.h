/* hw.h - a device + node + network description and its evolution into future
 * generations. Values are SI (FLOP/s, bytes, bytes/s, seconds); catalog.h
 * converts from the catalog's units. */
#ifndef CCSWEEP_HW_H
#define CCSWEEP_HW_H

#include "ccsweep/util/common.h"

/* k of the measurement behind gemm_efficiency when the catalog does not say:
 * published maximum-achievable figures come from large-k shapes. */
#define CCS_GEMM_REF_K_DEFAULT 4096

/* A measured NCCL all-reduce curve inside the scale-up domain (catalog
 * allreduce_us): times at increasing buffer sizes for one group size. */
#define CCS_AR_TABLES 4
#define CCS_AR_POINTS 16
typedef struct ccs_ar_table {
    int32_t ranks; /* group size measured; 0 = unused slot */
    int32_t n;     /* points */
    double bytes[CCS_AR_POINTS];
    double t[CCS_AR_POINTS]; /* s, non-decreasing in bytes */
} ccs_ar_table;

typedef struct ccs_hw {
    char name[CCS_NAME_MAX];
    int32_t generation;             /* 0 = as catalogued, g = evolved g times */
    int32_t devices_per_node;       /* devices of one node (sharing its NICs) */
    int32_t scaleup;                /* devices on one scale-up fabric (NVLink domain); >= a
                                       node, e.g. 72 for GB200 NVL72 (catalog default: a node) */
    int32_t compute_units;          /* SMs / CUs, for GEMM wave quantization */
    int32_t tile_m, tile_n;         /* output tile of large library GEMM kernels */
    int32_t gemm_ref_k;             /* k of the GEMM shape gemm_eff was measured at */
    int32_t gemm_fp8_ref_k;         /* same for gemm_eff_fp8 */
    int32_t gemm_fp4_ref_k;         /* same for gemm_eff_fp4 */
    double peak_flops[CCS_DTYPE_N]; /* FLOP/s, dense matrix units; 0 = unsupported */
    double peak_fp4;     /* FLOP/s, dense fp4 (NVFP4) matrix units for serving; 0 = none */
    double mem_cap;      /* bytes of device memory */
    double mem_bw;       /* bytes/s, peak device memory bandwidth */
    double intra_bw;     /* bytes/s per device per direction, intra-node */
    double inter_bw;     /* bytes/s per device per direction, inter-node */
    double intra_lat;    /* s, per step of an intra-node collective */
    double inter_lat;    /* s, per step of an inter-node collective */
    double kernel_lat;   /* s, fixed cost of launching one kernel */
    double gemm_eff;     /* achieved fraction of peak by the best large GEMM (measured) */
    double gemm_eff_fp8; /* the same for fp8 GEMMs against the fp8 peak; 0 = gemm_eff */
    double gemm_eff_fp4; /* the same for fp4 (NVFP4) GEMMs against peak_fp4; 0 = the fp8
                            figure (serving, cost/serve.c) */
    double clock_ratio;  /* sustained / boost clock under dense matrix load (1 = none) */
    double mem_eff;      /* achieved fraction of mem_bw by large streaming kernels */
    double intra_eff;    /* achieved all-reduce bus bandwidth / intra_bw */
    double inter_eff;    /* achieved all-reduce bus bandwidth / inter_bw */
    double nvls_eff;     /* in-switch all-reduce (NVLink SHARP) on the scale-up fabric:
                            measured algorithm bandwidth / intra_bw; 0 = not available */
    double oversub;      /* scale-out oversubscription: inter-node traffic runs at
                            inter_bw / oversub (1 = non-blocking, rail-optimized) */
    double variability;  /* relative standard deviation of sustained matrix throughput
                            between devices of this part; a synchronized job of n
                            devices runs at the slowest (cost_straggler_derate) */
    int8_t attn_ref;     /* CCS_ATTN_REF_*: the benchmarked device whose attention-kernel
                            tables apply (the same SM architecture); NONE: the newest
                            one's, scaled by the GEMM efficiencies (cost/attention.h) */
    /* measured all-reduce curves (cost/opcost.c, coll_time_direct) and the
     * fabric they were measured on: intra_bw and intra_lat as catalogued,
     * which hw_evolve leaves, so evolved hardware scales the curve by the
     * analytic model's ratio */
    ccs_ar_table ar[CCS_AR_TABLES];
    double ar_ref_intra_bw, ar_ref_intra_lat;
} ccs_hw;

enum { CCS_ATTN_REF_NONE = 0, CCS_ATTN_REF_A100 = 1, CCS_ATTN_REF_H100 = 2 };

/* Per-generation scaling rule: hardware at generation g is the base with each
 * figure multiplied by its factor^g (latencies divided by latency^g). */
typedef struct ccs_evolution {
    char name[CCS_NAME_MAX];
    double years;    /* calendar years per generation (documentation only) */
    double flops;    /* peak FLOP/s factor */
    double mem_bw;   /* memory bandwidth factor */
    double mem_cap;  /* memory capacity factor */
    double intra_bw; /* intra-node bandwidth factor */
    double inter_bw; /* inter-node bandwidth factor */
    double latency;  /* latency improvement factor (latencies divided by it) */
} ccs_evolution;

/* Devices on one scale-up fabric: hw->scaleup, or a node when unset. Groups
 * within it communicate over intra_bw; beyond it over the NICs. */
static inline int32_t hw_scaleup(const ccs_hw *hw)
{
    return hw->scaleup > hw->devices_per_node ? hw->scaleup : hw->devices_per_node;
}

/* Check a hardware entry: every size/bandwidth positive, efficiencies in (0,1].
 * Returns CCS_OK or CCS_EINPUT with err naming the field. */
int hw_validate(const ccs_hw *hw, ccs_err *err);
int evolution_validate(const ccs_evolution *ev, ccs_err *err);

/* Derive generation gen (>= 0) of base under ev into *out (may alias base).
 * ev may be NULL only when gen == 0. out->generation = base->generation + gen. */
void hw_evolve(const ccs_hw *base, const ccs_evolution *ev, int gen, ccs_hw *out);

/* Measured large-GEMM efficiency for dtype (gemm_eff_fp8 for fp8 when the
 * catalog gives it) and the GEMM depth it was measured at. */
double hw_gemm_eff(const ccs_hw *hw, int dtype, double *ref_k);

/* Effective matrix FLOP/s for dtype: peak * efficiency * clock_ratio, or 0 when
 * the device lacks the dtype. */
double hw_gemm_flops(const ccs_hw *hw, int dtype);

#endif
