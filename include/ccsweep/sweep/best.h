/* best.h - the one definition of the best plan, for the SQL views and canned
 * queries (as text fragments) and for 'ccsweep search' (as a comparison).
 *
 * Plans are compared only within a group of equal model, hardware,
 * hardware generation, devices, global batch, sequence length and software
 * stack: the same job on the same machine and software. Within a group the best plan is the one
 * with the highest tokens/s (equivalently the shortest iteration); ties go to the lower memory per
 * device, then to the simpler plan (smaller tp, cp, ep, pp, vpp, mbs; sp, ZeRO, recompute, flash
 * attention and DP overlap lower; dtype). Only plans that fit (status ok) compete, and the what-if
 * mitigations (tp_overlap, innet_reduce, comm_compress != 1, net_bw_factor != 1) are not plan
 * choices: they model hardware or software changes and are compared with the same plan without them
 * (tools/queries/mitigations.sql). */
#ifndef CCSWEEP_BEST_H
#define CCSWEEP_BEST_H

#include "ccsweep/model/plan.h"
#include "ccsweep/cost/timeline.h"

/* SQL over the columns of the view result_codes (the ids and codes). */
#define CCS_BEST_GROUP "run_id, model_id, hw_id, devices, gbs, seq, stack"
#define CCS_BEST_ELIGIBLE                                                                          \
    "status = 0 AND tp_overlap = 0 AND innet_reduce = 0 AND comm_compress = 1 AND "                \
    "net_bw_factor = 1"
#define CCS_BEST_ORDER                                                                             \
    "tokens_per_s DESC, mem_total, tp, cp, ep, pp, vpp, mbs, sp, zero, recompute, flash_attn, "    \
    "dp_overlap, dtype, idx"

/* 1 when plan p with result r may be ranked (it fits and uses no what-if). */
int best_eligible(const ccs_plan *p, const ccs_result *r);

/* Order of two eligible plans of one group, as CCS_BEST_ORDER without idx:
 * negative when a is better than b, positive when worse, 0 when equal. */
int best_cmp(const ccs_plan *a, const ccs_result *ra, const ccs_plan *b, const ccs_result *rb);

#endif
