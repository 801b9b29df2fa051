/* best.c - the best-plan order (best.h); CCS_BEST_ORDER is the same in SQL. */
#include "ccsweep/sweep/best.h"

int best_eligible(const ccs_plan *p, const ccs_result *r)
{
    return r->status == CCS_ST_OK && !p->tp_overlap && !p->innet_reduce &&
           p->comm_compress == 1.0 && p->net_bw_factor == 1.0;
}

#define BY(x, y)                                                                                   \
    do {                                                                                           \
        if ((x) != (y))                                                                            \
            return (x) < (y) ? -1 : 1;                                                             \
    } while (0)

int best_cmp(const ccs_plan *a, const ccs_result *ra, const ccs_plan *b, const ccs_result *rb)
{
    BY(rb->tokens_per_s, ra->tokens_per_s); /* higher first */
    BY(ra->mem_total, rb->mem_total);
    BY(a->tp, b->tp);
    BY(plan_cp(a), plan_cp(b));
    BY(plan_ep(a), plan_ep(b));
    BY(a->pp, b->pp);
    BY(a->vpp, b->vpp);
    BY(a->mbs, b->mbs);
    BY(a->sp, b->sp);
    BY(a->zero, b->zero);
    BY(a->recompute, b->recompute);
    BY(a->flash_attn, b->flash_attn);
    BY(a->dp_overlap, b->dp_overlap);
    BY(a->dtype, b->dtype);
    return 0;
}
