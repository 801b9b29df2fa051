/* serve_search.h - the best serving plans of one serving job (model, hardware
 * generation, devices, prompt and output lengths, weight and KV formats):
 * every structurally valid replica shape (tp, pp, ep, attention data
 * parallelism) at the concurrencies that meet a TTFT and a TPOT limit,
 * ranked by output tokens/s per GPU. Pure: no MPI, no I/O, no allocation. */
#ifndef CCSWEEP_SERVE_SEARCH_H
#define CCSWEEP_SERVE_SEARCH_H

#include "ccsweep/cost/serve.h"

/* One plan at the concurrency chosen for it. Flat and pointer-free. */
typedef struct serve_hit {
    ccs_serve_plan plan; /* concurrency: the one projected */
    ccs_serve_result r;
} serve_hit;

typedef struct serve_search_stats {
    int64_t plans;       /* structurally valid replica shapes */
    int64_t fit;         /* of them, shapes whose weights and one request fit memory */
    int64_t meet;        /* of them, shapes with a concurrency that meets both limits */
    int64_t projections; /* serve_project calls */
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
int serve_best_cmp(const serve_hit *a, const serve_hit *b);
#define CCS_SERVE_BEST_GROUP "run_id, model_id, hw_id, devices, isl, osl, wdtype, kvdtype"
#define CCS_SERVE_BEST_ORDER "tok_s_gpu DESC, tpot, ttft, tp, pp, ep, attn_dp, idx"

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
