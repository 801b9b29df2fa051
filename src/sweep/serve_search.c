/* serve_search.c - the best serving plans of one serving job: replica shapes
 * enumerated, the concurrency of each chosen under the latency limits. */
#include "ccsweep/sweep/serve_search.h"
#include "ccsweep/sweep/search.h"
#include "ccsweep/cost/timeline.h"

#include <assert.h>
#include <string.h>

static int cmp_int(double a, double b)
{
    return (a > b) - (a < b);
}

int serve_best_cmp(const ccs_serve_plan *pa, const ccs_serve_result *ra, const ccs_serve_plan *pb,
                   const ccs_serve_result *rb)
{
    int c;
    if ((c = cmp_int(rb->tok_s_gpu, ra->tok_s_gpu)) || (c = cmp_int(ra->tpot, rb->tpot)) ||
        (c = cmp_int(ra->ttft, rb->ttft)) || (c = cmp_int(pa->tp, pb->tp)) ||
        (c = cmp_int(pa->pp, pb->pp)) || (c = cmp_int(pa->ep, pb->ep)))
        return c;
    return cmp_int(pa->attn_dp, pb->attn_dp);
}

static int hit_cmp(const serve_hit *a, const serve_hit *b)
{
    return serve_best_cmp(&a->plan, &a->r, &b->plan, &b->r);
}

int serve_top_insert(serve_record *top, int k, int *n, const serve_record *h)
{
    if (k <= 0 || (*n == k && hit_cmp(h, &top[k - 1]) >= 0))
        return 0;
    int i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && hit_cmp(h, &top[i - 1]) < 0) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = *h;
    return 1;
}

int serve_meets(const ccs_serve_result *r, const serve_limits *lim)
{
    return r->status == CCS_ST_OK && (!(lim->ttft_max > 0) || r->ttft <= lim->ttft_max) &&
           (!(lim->tpot_max > 0) || r->tpot <= lim->tpot_max);
}

/* Project shape p at concurrency conc into h; 1 when it meets the limits. */
static int try_at(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, int32_t conc,
                  const serve_limits *lim, serve_hit *h, serve_search_stats *st)
{
    h->plan = *p;
    h->plan.concurrency = conc;
    serve_project(m, &h->plan, c, &h->r);
    st->projections++;
    st->stages += h->r.step.stages;
    return serve_meets(&h->r, lim);
}

/* Keep the better of *best (valid when *have) and h. */
static void keep(serve_hit *best, int *have, const serve_hit *h)
{
    if (!*have || hit_cmp(h, best) < 0) {
        *best = *h;
        *have = 1;
    }
}

/* The best concurrency of the checked shape p within the limits. */
static void one_shape(const ccs_model *m, const ccs_serve_plan *p, const ccs_hw *hw,
                      const serve_limits *lim, serve_hit *top, int k, int *n,
                      serve_search_stats *st)
{
    ccs_cost c;
    serve_cost_init(&c, hw, p);
    serve_hit h = {0}, best;
    int have = 0;
    /* the maximum concurrency, and whether anything fits at all */
    try_at(m, p, &c, 0, lim, &h, st);
    if (h.r.status != CCS_ST_OK)
        return;
    st->fit++;
    /* every concurrency: tokens/s and TPOT are not monotone in it (the GEMMs'
     * wave quantization makes a batch of 320 faster per token than one of 330) */
    for (int32_t conc = 1; conc <= h.r.max_concurrency; conc++)
        if (try_at(m, p, &c, conc, lim, &h, st))
            keep(&best, &have, &h);
    if (!have)
        return;
    st->meet++;
    serve_top_insert(top, k, n, &best);
}

void serve_search(const ccs_model *m, const ccs_hw *hw, const ccs_serve_plan *job,
                  const serve_limits *lim, serve_hit *top, int k, int *n, serve_search_stats *st)
{
    assert(m && hw && job && lim && top && n && st && job->devices > 0);
    int32_t dev_div[SEARCH_MAX_DIV], tp_div[SEARCH_MAX_DIV];
    int n_dev = search_divisors(job->devices, dev_div);
    for (int a = 0; a < n_dev; a++) {
        int32_t tp = dev_div[a];
        int n_ep = m->experts > 0 ? search_divisors(tp, tp_div) : 1;
        if (m->experts == 0)
            tp_div[0] = 1;
        for (int b = 0; b < n_dev; b++) {
            int32_t pp = dev_div[b];
            if ((job->devices / tp) % pp)
                continue;
            for (int e = 0; e < n_ep; e++) {
                for (int8_t adp = 0; adp <= (m->experts > 0 && tp_div[e] == tp && tp > 1); adp++) {
                    ccs_serve_plan p = *job;
                    p.tp = tp;
                    p.pp = pp;
                    p.ep = tp_div[e];
                    p.attn_dp = adp;
                    p.dp = 0;
                    p.concurrency = 0;
                    if (serve_plan_check(m, hw, &p) != CCS_R_OK)
                        continue;
                    st->plans++;
                    one_shape(m, &p, hw, lim, top, k, n, st);
                }
            }
        }
    }
}
