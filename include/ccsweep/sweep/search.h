/* search.h - every valid plan of one training job (model, hardware
 * generation, devices, global batch, sequence), projected, with the best K
 * kept in best.h's order. The plans form an index space [0, search_count)
 * so callers can split it (dist_search spreads it over MPI ranks). Pure: no
 * MPI, no I/O; search_new allocates the plan shapes once, search_range
 * allocates nothing. */
#ifndef CCSWEEP_SEARCH_H
#define CCSWEEP_SEARCH_H

#include "ccsweep/sweep/best.h"
#include "ccsweep/cost/opcost.h"

/* One projected plan. Flat and pointer-free: it crosses MPI as bytes. */
typedef struct search_hit {
    ccs_plan plan;
    ccs_result r;
} search_hit;

typedef struct search_stats {
    int64_t plans; /* distinct, structurally valid plans (projected, or known not to fit) */
    int64_t fit;   /* of them, plans that fit device memory */
} search_stats;

typedef struct ccs_search ccs_search;

/* The plan space of model m (copied) on hardware hw (the evolved generation,
 * copied; ev and gen scale a measured om as cost_init does, both may be
 * NULL/0) with devices, gbs and seq fixed and dtype as given. Axes: every tp
 * dividing devices, every context-parallel cp up to max_cp (1: none) that
 * divides devices / tp and splits seq into 2 cp chunks, every pp dividing
 * devices / (tp * cp) (up to the layers; stages
 * split by plan_stage_layers' default rule when pp does not divide them, no
 * hand-set first/last stage sizes), dp = devices / (tp * cp * pp), for a
 * mixture of experts every ep dividing the experts and dp * cp (the
 * capacity factor left at the plan default),
 * every mbs with mbs * dp dividing gbs, vpp 1 or any divisor of the layers
 * per stage that interleaving allows, recompute none/selective/full, sp (when
 * tp > 1), ZeRO 0-3 and the three dp_overlap modes (when dp > 1), flash
 * attention off/on. Plans plan_check rejects are not counted. Returns NULL
 * with err on a nonpositive size or out of memory. */
ccs_search *search_new(const ccs_model *m, const ccs_hw *hw, const struct ccs_opmodel *om,
                       const ccs_evolution *ev, int gen, int32_t devices, int32_t gbs, int32_t seq,
                       int dtype, int32_t max_cp, ccs_err *err);
void search_free(ccs_search *s);
/* Project every plan under software stack st (copied; NULL: the default). */
void search_set_stack(ccs_search *s, const ccs_stack *st);

/* Size of the index space (including indices that decode to a redundant
 * plan, which search_range skips). */
int64_t search_count(const ccs_search *s);

/* Decode index i into a plan; 0 when i names a redundant plan (sp without
 * tp, ZeRO or DP overlap without dp), 1 otherwise. */
int search_plan(const ccs_search *s, int64_t i, ccs_plan *p);

/* Project the indices lo, lo + step, ... below hi and keep the best k in
 * top[0..*n) (best first; *n and top carry over between calls, start with
 * *n = 0). Adds to st. */
void search_range(const ccs_search *s, int64_t lo, int64_t hi, int64_t step, search_hit *top, int k,
                  int *n, search_stats *st);

/* Divisors of a positive n in ascending order into d[0..SEARCH_MAX_DIV) (no n
 * below 2^31 has more than 1600); returns their number, 0 for n <= 0. */
#define SEARCH_MAX_DIV 2048
int search_divisors(int64_t n, int32_t *d);

/* Insert h into the sorted top[0..*n) of capacity k when it ranks among the
 * best k (best_cmp; equal plans keep the earlier one). Returns 1 if kept. */
int search_insert(search_hit *top, int k, int *n, const search_hit *h);

#endif
