/* analytic.h - closed-form work of an iteration: model and hardware FLOPs,
 * communication bytes per device, and the per-layer compute/communication
 * ratio of tensor parallelism. Pure. */
#ifndef CCSWEEP_ANALYTIC_H
#define CCSWEEP_ANALYTIC_H

#include "ccsweep/cost/regions.h"

typedef struct ccs_analytic {
    double layer_fwd_flops; /* one layer, one micro-batch, whole layer (all TP ranks) */
    double model_flops;     /* per iteration, all devices: forward + backward, no recompute */
    double hw_flops;        /* per iteration, all devices, with recompute */
    double tp_bytes;        /* sent per device per iteration by TP collectives */
    double dp_bytes;        /* same, data-parallel collectives */
    double pp_bytes;        /* same, pipeline p2p */
    double cp_bytes;        /* same, context-parallel K/V ring */
    double ep_bytes;        /* same, expert-parallel all-to-alls */
    double ccr;             /* layer forward FLOPs per device / TP bytes sent per device
                               in that forward (FLOP/byte); 0 when tp == 1 */
} ccs_analytic;

/* Forward FLOPs of one layer for b sequences (Narayanan et al. 2021, eq. 3
 * generalised: QKV 2bsh(h+2h g/a), scores and context 4bs^2h, out-projection
 * 2bsh^2, MLP 2bshf per matrix). */
double analytic_layer_fwd_flops(const ccs_model *m, double b, double s);

/* Model FLOPs per iteration: 3 x forward (layers + logits) x gbs, as Megatron
 * and PaLM (Chowdhery et al. 2022, appendix B) count them for MFU. */
double analytic_model_flops(const ccs_model *m, const ccs_plan *p);

/* Fill *out from the model, plan and its operator list. dense_ops: for a
 * mixture of experts with dense first layers, the operator list of its
 * dense-FFN block (model_dense_variant), whose layer ops count on the most
 * loaded stage's dense blocks; NULL otherwise. */
void analytic_compute(const ccs_model *m, const ccs_plan *p, const ccs_oplist *ops,
                      const ccs_oplist *dense_ops, ccs_analytic *out);

#endif
