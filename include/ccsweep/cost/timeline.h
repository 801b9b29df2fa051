/* timeline.h - compose operator times into one training iteration and report
 * it split into computation and (serialized, hidden, exposed) communication.
 * timeline_project is the whole per-scenario projection: plan check, operator
 * list, memory, analytic figures, timeline. Pure; allocates nothing. */
#ifndef CCSWEEP_TIMELINE_H
#define CCSWEEP_TIMELINE_H

#include "ccsweep/cost/analytic.h"
#include "ccsweep/cost/memory.h"
#include "ccsweep/cost/opcost.h"

#include <stddef.h>
#include <string.h>

enum { CCS_ST_OK = 0, CCS_ST_INVALID = 1, CCS_ST_OOM = 2 };

/* One projected scenario. Flat and pointer-free: it crosses MPI as bytes. */
typedef struct ccs_result {
    int32_t status; /* CCS_ST_* */
    int32_t reason; /* ccs_reason (CCS_R_OK when ok) */
    int32_t fits;   /* 1 when mem_total <= device memory */
    int32_t micro_batches;
    double t_iter;               /* s per iteration */
    double t_iter_lo, t_iter_hi; /* s, uncertainty band */
    double extrap;            /* largest work / measured range ratio beyond the profile; 0 inside */
    double t_compute;         /* s, compute on the critical path (incl. optimizer) */
    double t_comm;            /* s, all communication, hidden or not */
    double t_comm_exposed;    /* s, communication on the critical path */
    double t_tp_comm;         /* s, tensor-parallel collectives */
    double t_tp_comm_exposed; /* s */
    double t_dp_comm;         /* s, data-parallel collectives */
    double t_dp_comm_exposed; /* s */
    double t_pp_comm;         /* s, pipeline p2p (serialized) */
    double t_bubble;          /* s, pipeline fill/drain */
    double t_optimizer;       /* s */
    double comm_fraction;     /* t_comm_exposed / t_iter */
    double hidden_fraction;   /* share of TP + CP + DP communication hidden under compute */
    double mem_weights, mem_grads, mem_optimizer, mem_activations; /* bytes per device */
    double mem_total;   /* bytes per device: the parts and memory_reserve's */
    double params;      /* model parameters */
    double model_flops; /* per iteration, all devices */
    double hw_flops;    /* per iteration, all devices, incl. recompute */
    double mfu;         /* model_flops / (t_iter * devices * peak), Megatron/PaLM */
    double tokens_per_s;
    double tp_bytes, dp_bytes, pp_bytes; /* sent per device per iteration */
    double ccr;                          /* analytic per-layer FLOPs/TP byte, 0 when tp == 1 */
    double hfu;                          /* hw_flops / (t_iter * devices * peak) */
    double t_cp_comm;                    /* s, context-parallel K/V ring transfers */
    double t_cp_comm_exposed;            /* s, the part the attention core does not cover */
    double cp_bytes;                     /* sent per device per iteration by CP transfers */
    double t_ep_comm;                    /* s, expert-parallel all-to-alls (on the critical path) */
    double ep_bytes;                     /* sent per device per iteration by EP all-to-alls */
} ccs_result;

/* The real-valued outputs of a result, by name: the database stores each in
 * the result_rows column of that name (results/README.md) and 'project --json'
 * prints it under that key. The first CCS_OUTPUTS_V5 are the columns of schema
 * version 5, in their order; the rest came with version 6. */
typedef struct ccs_output {
    const char *name;
    size_t off; /* offsetof(ccs_result, the double field) */
    /* how a row of schema version 9 on stores it: CCS_OUT_STORED; derived (the
     * column is left NULL, the view result_codes computes it from the stored
     * ones); or stored only when it differs from t_iter (the band's ends) */
    int store;
} ccs_output;
enum { CCS_OUT_STORED = 0, CCS_OUT_DERIVED, CCS_OUT_UNLESS_T_ITER };
#define CCS_N_OUTPUTS 35
#define CCS_N_DERIVED 5 /* outputs marked CCS_OUT_DERIVED */
#define CCS_OUTPUTS_V5 29
extern const ccs_output ccs_outputs[CCS_N_OUTPUTS];

/* Output i (0 <= i < CCS_N_OUTPUTS) of r. */
static inline double ccs_output_of(const ccs_result *r, int i)
{
    double v;
    memcpy(&v, (const char *)r + ccs_outputs[i].off, sizeof v);
    return v;
}

/* Per-region breakdown for one micro-batch (layer regions: one layer). */
typedef struct ccs_region_time {
    double time;  /* s, one occurrence of the region */
    double flops; /* FLOPs of one occurrence */
    double bytes; /* bytes moved (compute) or buffer bytes (comm) of one occurrence */
    double count; /* occurrences per iteration on the critical path */
} ccs_region_time;

/* Project model m with plan p (dp/devices already derived) on the cost context c
 * (whose hw is the scenario's hardware generation). Fills *out; regions, when
 * not NULL, receives CCS_RG_N entries. Always returns a result: invalid plans
 * get status CCS_ST_INVALID and a reason, plans that do not fit CCS_ST_OOM
 * (timeline still computed). m, p, c, c->hw and out must not be NULL
 * (asserted); the composed times are asserted finite and non-negative. */
void timeline_project(const ccs_model *m, const ccs_plan *p, const ccs_cost *c, ccs_result *out,
                      ccs_region_time *regions);

#endif
