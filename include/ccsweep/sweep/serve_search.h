/* serve_search.h - the best serving plans of one serving job (model, hardware
 * generation, devices, prompt and output lengths, weight and KV formats):
 * every structurally valid replica shape (tp, pp, ep, attention data
 * parallelism) at the concurrencies that meet a TTFT and a TPOT limit,
 * ranked by output tokens/s per GPU. Pure: no MPI, no I/O, no allocation. */
#ifndef CCSWEEP_SERVE_SEARCH_H
#define CCSWEEP_SERVE_SEARCH_H

#include "ccsweep/cost/serve.h"

/* One projected serving scenario. Flat and pointer-free. In a sweep
 * (serve_grid.h) idx, model, hw, gen_i and gen place it in the grid; the
 * search leaves them 0. */
typedef struct serve_record {
    int64_t idx;
    int32_t model, hw, gen_i, gen; /* indices into the spec's lists; the generation */
    ccs_serve_plan plan;           /* dp and devices derived; concurrency as projected */
    ccs_serve_result r;
} serve_record;
/* A plan the search found, at the concurrency chosen for it. */
typedef serve_record serve_hit;

typedef struct serve_search_stats {
    int64_t plans;       /* structurally valid replica shapes */
    int64_t fit;         /* of them, shapes whose weights and one request fit memory */
    int64_t meet;        /* of them, shapes with a concurrency that meets both limits */
    int64_t projections; /* serve_project calls */
    int64_t stages;      /* pipeline stages their steady-state steps costed (the work) */
} serve_search_stats;

/* Limits a plan must meet; 0: none. */
typedef struct serve_limits {
    double ttft_max; /* s */
    double tpot_max; /* s */
} serve_limits;

/* 1 when r fits (status ok) and meets the limits. */
int serve_meets(const ccs_serve_result *r, const serve_limits *lim);

/* Order of two projected plans: negative when a is better. Better: higher
 * output tokens/s per GPU, then lower TPOT, lower TTFT, then the simpler
 * plan (smaller tp, pp, ep, no attention data parallelism). The SQL form
 * for the serve_results table is CCS_SERVE_BEST_ORDER. */
int serve_best_cmp(const ccs_serve_plan *pa, const ccs_serve_result *ra, const ccs_serve_plan *pb,
                   const ccs_serve_result *rb);
#define CCS_SERVE_BEST_GROUP                                                                       \
    "run_id, model, hardware, generation, devices, isl, osl, wdtype, kvdtype"
#define CCS_SERVE_BEST_ORDER "tok_s_gpu DESC, tpot, ttft, tp, pp, ep, attn_dp, idx"

/* Insert h into the sorted top[0..*n) of capacity k when it ranks among
 * the best k (serve_best_cmp; of equal ones the earlier stays first).
 * Returns 1 if kept. */
int serve_top_insert(serve_record *top, int k, int *n, const serve_record *h);

/* Search job (devices, isl, osl, wdtype, kvdtype, chunked, kv_fraction
 * and max_num_tokens as given; tp, pp, ep, attn_dp, dp and concurrency are
 * the search's) of model m on hw (at its generation). Shapes: every tp
 * dividing devices, every pp dividing devices / tp, for a mixture of experts
 * every ep dividing tp and attention data parallelism with ep = tp; each
 * shape serve_plan_check accepts counts as a plan. For each that fits, every
 * concurrency from 1 to the most its KV cache holds is projected (TTFT,
 * TPOT and tokens/s are not monotone in it); the shape's hit is its best
 * concurrency within the limits (serve_best_cmp). The best k hits go to
 * top[0..*n), best first. Adds to st. */
void serve_search(const ccs_model *m, const ccs_hw *hw, const ccs_serve_plan *job,
                  const serve_limits *lim, serve_hit *top, int k, int *n, serve_search_stats *st);

#endif
