/* search.h - every valid plan of one training job (model, hardware
 * generation, devices, global batch, sequence), projected, with the best K
 * kept in best.h's order. The plans form an index space [0, search_count)
 * so callers can split it (dist_search spreads it over MPI ranks). Pure: no
 * MPI, no I/O; search_new allocates the plan shapes once, search_range
 * allocates nothing. */
#ifndef CCSWEEP_SEARCH_H
#define CCSWEEP_SEARCH_H

#include "ccsweep/sweep/best.h"
#include "ccsweep/sweep/expr.h"
#include "ccsweep/cost/opcost.h"

/* Most plans of equal outputs one hit lists by index (it counts them all). */
#define SEARCH_MAX_SAME 15

/* One projected plan, and the plans whose outputs are the same as its own
 * (search_same): they are one answer, shown once, under the best of them.
 * Flat and pointer-free: it crosses MPI as bytes. */
typedef struct search_hit {
    ccs_plan plan;
    ccs_result r;
    int64_t idx;                   /* plan's index (search_plan) */
    int32_t n_same;                /* other plans with the same outputs */
    int32_t n_listed;              /* of them, listed in same[] (the lowest indices) */
    int64_t same[SEARCH_MAX_SAME]; /* ascending */
} search_hit;

/* What a search counted. A filter that names no projection output drops plans
 * before projection: fit counts the plans it keeps that fit. One that names
 * an output drops plans after it: fit counts every plan that fits. */
typedef struct search_stats {
    int64_t plans;         /* distinct, structurally valid plans (projected, or known not to fit) */
    int64_t fit;           /* of them, plans that fit the memory limit (of those projected) */
    int64_t filtered;      /* of them, plans the filter dropped */
    int64_t kept;          /* plans that fit and pass the filter: the ones ranked */
    int64_t undefined;     /* plans the filter is undefined for (a division by zero) */
    int64_t undefined_idx; /* the lowest index of those, when undefined > 0 */
} search_stats;

/* The axes a search may restrict to listed values. */
typedef enum search_axis_id {
    SEARCH_AX_TP,
    SEARCH_AX_CP,
    SEARCH_AX_EP,
    SEARCH_AX_PP,
    SEARCH_AX_DP,
    SEARCH_AX_VPP,
    SEARCH_AX_MBS,
    SEARCH_AX_RECOMPUTE,  /* CCS_RECOMPUTE_* */
    SEARCH_AX_SP,         /* 0/1 */
    SEARCH_AX_ZERO,       /* 0..3 */
    SEARCH_AX_FLASH_ATTN, /* 0/1 */
    SEARCH_AX_DP_OVERLAP, /* CCS_DPOV_* */
    SEARCH_AX_N
} search_axis_id;

#define SEARCH_MAX_VALUES 32
/* The values an axis may take; n == 0: every value the search enumerates. */
typedef struct search_axis {
    int n;
    int32_t v[SEARCH_MAX_VALUES];
} search_axis;

/* What narrows a search beyond the job. */
typedef struct search_opts {
    int32_t max_cp; /* largest cp tried (1: none) unless ax[SEARCH_AX_CP] lists values */
    search_axis ax[SEARCH_AX_N];
    double max_mem_frac;    /* a plan fits when mem_total <= this x device memory, (0, 1] */
    const ccs_expr *where;  /* borrowed, must outlive the search; NULL: no filter */
    const ccs_stack *stack; /* copied; NULL: the default stack */
} search_opts;

/* max_cp 1, every axis open, max_mem_frac 1, no filter, the default stack. */
void search_opts_init(search_opts *o);

/* The short name of an axis ("tp", "recompute", "fa", "dpov"). */
const char *search_axis_name(int ax);

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
/* search_new narrowed by o (NULL: search_opts_init's): only plans whose
 * axes take listed values are in the space (search_plan returns 0 for the
 * others, and max_cp rises to the largest cp listed); a plan fits only under
 * o->max_mem_frac of device memory; o->where drops plans before projection
 * when it names no output, after it otherwise (a plan it is undefined for is
 * dropped and counted in search_stats.undefined: callers report it). */
ccs_search *search_new_opts(const ccs_model *m, const ccs_hw *hw, const struct ccs_opmodel *om,
                            const ccs_evolution *ev, int gen, int32_t devices, int32_t gbs,
                            int32_t seq, int dtype, const search_opts *o, ccs_err *err);
void search_free(ccs_search *s);

/* Size of the index space (including indices that decode to a redundant
 * plan, which search_range skips). */
int64_t search_count(const ccs_search *s);

/* Decode index i into a plan; 0 when i names a redundant plan (sp without
 * tp, ZeRO or DP overlap without dp) or a setting the options exclude, 1
 * otherwise. */
int search_plan(const ccs_search *s, int64_t i, ccs_plan *p);

/* Project the indices lo, lo + step, ... below hi and keep the best k in
 * top[0..*n) (best first; *n and top carry over between calls, start with
 * *n = 0). Adds to st. */
void search_range(const ccs_search *s, int64_t lo, int64_t hi, int64_t step, search_hit *top, int k,
                  int *n, search_stats *st);

/* 1 when two results are one answer: the same status and every output
 * (ccs_outputs) equal. */
int search_same(const ccs_result *a, const ccs_result *b);
/* Divisors of a positive n in ascending order into d[0..SEARCH_MAX_DIV) (no n
 * below 2^31 has more than 1600); returns their number, 0 for n <= 0. */
#define SEARCH_MAX_DIV 2048
int search_divisors(int64_t n, int32_t *d);

/* Insert h into the sorted top[0..*n) of capacity k when it ranks among the
 * best k (best_cmp; equal plans keep the earlier one). A hit whose outputs
 * are the same as a kept one's joins it instead (the better plan of the two
 * stays, with both lists of equal plans), so the top holds k distinct
 * answers. Returns 1 if kept or joined. */
int search_insert(search_hit *top, int k, int *n, const search_hit *h);

/* The settings in which h's equal plans differ from h->plan, into buf (at
 * most size bytes, NUL-terminated): "recompute none|selective x dpov
 * last|bucket" when the plans are every combination of those values, else
 * each plan's differing settings ("zero 2 dpov bucket; ..."), "+N more" for
 * those not listed; "" when h has none. Returns buf. */
const char *search_same_text(const ccs_search *s, const search_hit *h, char *buf, size_t size);

#endif
