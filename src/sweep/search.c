/* search.c - the plan space of one training job and its best plans. */
#include "ccsweep/sweep/search.h"

#include "ccsweep/cost/timeline.h"

#include <stdlib.h>
#include <string.h>

/* A (tp, pp, vpp, mbs) combination; dp follows from devices. */
typedef struct shape {
    int32_t tp, cp, ep, pp, dp, vpp, mbs;
} shape;

/* Switch combinations per shape: recompute 3 x sp 2 x zero 4 x dp_overlap 3 x flash 2. */
enum { N_RC = 3, N_SP = 2, N_ZERO = 4, N_DPOV = 3, N_FA = 2 };
#define N_SWITCH (N_RC * N_SP * N_ZERO * N_DPOV * N_FA)

struct ccs_search {
    ccs_model m;
    ccs_hw hw;
    ccs_cost cost; /* cost.hw points at hw, cost.stack at stack when has_stack */
    ccs_stack stack;
    ccs_plan base;
    shape *shapes;
    int64_t n_shapes;
};

static void base_plan(const ccs_search *s, const shape *sh, ccs_plan *p)
{
    *p = s->base;
    p->tp = sh->tp;
    p->cp = sh->cp;
    p->ep = sh->ep;
    p->pp = sh->pp;
    p->dp = sh->dp;
    p->vpp = sh->vpp;
    p->mbs = sh->mbs;
}

static int push_shape(ccs_search *s, int64_t *cap, const shape *sh)
{
    ccs_plan p;
    base_plan(s, sh, &p);
    if (plan_check(&s->m, &s->hw, &p) != CCS_R_OK)
        return 0;
    if (s->n_shapes == *cap) {
        int64_t nc = *cap ? 2 * *cap : 256;
        shape *ns = realloc(s->shapes, (size_t)nc * sizeof *ns);
        if (!ns)
            return -1;
        s->shapes = ns;
        *cap = nc;
    }
    s->shapes[s->n_shapes++] = *sh;
    return 0;
}

/* Divisors of a positive n in ascending order (at most SEARCH_MAX_DIV: no
 * n below 2^31 has more than 1600), by trial division up to sqrt(n) once;
 * 0 for n <= 0. The shape loops below filter these lists instead of trial
 * dividing each candidate (gbs / dp up to 2^30 per shape took minutes). */
static int divisors(int64_t n, int32_t *d)
{
    int lo = 0, hi = 0;
    int32_t big[SEARCH_MAX_DIV];
    for (int64_t i = 1; n > 0 && i * i <= n; i++) {
        if (n % i)
            continue;
        d[lo++] = (int32_t)i;
        if (i * i != n)
            big[hi++] = (int32_t)(n / i);
    }
    while (hi > 0)
        d[lo++] = big[--hi];
    return lo;
}

int search_divisors(int64_t n, int32_t *d)
{
    return divisors(n, d);
}

void search_set_stack(ccs_search *s, const ccs_stack *st)
{
    if (st)
        s->stack = *st;
    cost_set_stack(&s->cost, st ? &s->stack : NULL);
}

ccs_search *search_new(const ccs_model *m, const ccs_hw *hw, const struct ccs_opmodel *om,
                       const ccs_evolution *ev, int gen, int32_t devices, int32_t gbs, int32_t seq,
                       int dtype, int32_t max_cp, ccs_err *err)
{
    if (devices <= 0 || gbs <= 0 || seq <= 0) {
        ccs_err_set(err, "devices, gbs and seq must be positive (got %d, %d, %d)", devices, gbs,
                    seq);
        return NULL;
    }
    ccs_search *s = calloc(1, sizeof *s);
    if (!s) {
        ccs_err_set(err, "out of memory");
        return NULL;
    }
    s->m = *m;
    s->hw = *hw;
    plan_defaults(&s->base);
    s->base.devices = devices;
    s->base.gbs = gbs;
    s->base.seq = seq;
    s->base.dtype = (int8_t)dtype;
    cost_init(&s->cost, &s->hw, om, ev, gen, &s->base);

    /* The loops run over divisors in ascending order, the order of the
     * trial-division loops they replace (tests/test_search.c keeps those as
     * the reference): tp | devices, cp | devices/tp (at most max_cp; seq a
     * multiple of 2 cp), pp | rest (at most the layers), mbs | gbs/dp,
     * vpp | the middle stages' layers, ep | experts and dp * cp. */
    int32_t *div = malloc(sizeof(int32_t) * 4 * SEARCH_MAX_DIV);
    if (!div) {
        ccs_err_set(err, "out of memory");
        search_free(s);
        return NULL;
    }
    int32_t *dev_div = div, *gbs_div = div + SEARCH_MAX_DIV, *exp_div = div + 2 * SEARCH_MAX_DIV,
            *lm_div = div + 3 * SEARCH_MAX_DIV;
    static const int32_t one[1] = {1};
    int n_dev = divisors(devices, dev_div), n_gbs = divisors(gbs, gbs_div);
    const int32_t *eps = m->experts > 0 ? exp_div : one;
    int n_ep = m->experts > 0 ? divisors(m->experts, exp_div) : 1;
    int64_t cap = 0;
    for (int a = 0; a < n_dev; a++) {
        int32_t tp = dev_div[a];
        for (int b = 0; b < n_dev && dev_div[b] <= max_cp; b++) {
            int32_t cp = dev_div[b];
            if ((devices / tp) % cp || (cp > 1 && seq % (2 * cp) != 0))
                continue;
            int32_t rest = devices / tp / cp; /* pp * dp */
            for (int c = 0; c < n_dev && dev_div[c] <= m->layers; c++) {
                int32_t pp = dev_div[c];
                if (rest % pp)
                    continue;
                /* pp need not divide the layers: plan_stage_layers' default split */
                ccs_plan sp = s->base;
                sp.pp = pp;
                int32_t lf, lm, ll;
                if (plan_stage_layers(m, &sp, &lf, &lm, &ll) != CCS_R_OK)
                    continue;
                int32_t dp = rest / pp;
                if (gbs % dp)
                    continue;
                int32_t per = gbs / dp; /* sequences per replica */
                const int32_t *vpps = one;
                int n_vpp = 1;
                if (pp > 1) {
                    vpps = lm_div;
                    n_vpp = divisors(lm, lm_div);
                }
                for (int e = 0; e < n_gbs; e++) {
                    int32_t mbs = gbs_div[e];
                    if (per % mbs)
                        continue;
                    for (int f = 0; f < n_vpp; f++) {
                        int32_t vpp = vpps[f];
                        /* expert parallelism over the dp x cp ranks (MoE only) */
                        for (int g = 0; g < n_ep; g++) {
                            int32_t ep = eps[g];
                            if (((int64_t)dp * cp) % ep)
                                continue;
                            shape sh = {tp, cp, ep, pp, dp, vpp, mbs};
                            if (push_shape(s, &cap, &sh)) {
                                ccs_err_set(err, "out of memory");
                                free(div);
                                search_free(s);
                                return NULL;
                            }
                        }
                    }
                }
            }
        }
    }
    free(div);
    return s;
}

void search_free(ccs_search *s)
{
    if (!s)
        return;
    free(s->shapes);
    free(s);
}

int64_t search_count(const ccs_search *s)
{
    return s->n_shapes * N_SWITCH;
}

int search_plan(const ccs_search *s, int64_t i, ccs_plan *p)
{
    const shape *sh = &s->shapes[i / N_SWITCH];
    int64_t w = i % N_SWITCH;
    base_plan(s, sh, p);
    p->flash_attn = (int8_t)(w % N_FA);
    w /= N_FA;
    p->dp_overlap = (int8_t)(w % N_DPOV);
    w /= N_DPOV;
    p->zero = (int8_t)(w % N_ZERO);
    w /= N_ZERO;
    p->sp = (int8_t)(w % N_SP);
    w /= N_SP;
    p->recompute = (int8_t)w;
    if (p->sp && p->tp == 1)
        return 0; /* sequence parallelism needs tensor parallelism */
    if ((p->zero || p->dp_overlap) && p->dp == 1)
        return 0; /* nothing to shard or reduce over one replica */
    return 1;
}

int search_insert(search_hit *top, int k, int *n, const search_hit *h)
{
    if (k <= 0)
        return 0;
    if (*n == k && best_cmp(&h->plan, &h->r, &top[k - 1].plan, &top[k - 1].r) >= 0)
        return 0;
    int i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && best_cmp(&h->plan, &h->r, &top[i - 1].plan, &top[i - 1].r) < 0) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = *h;
    return 1;
}

/* 1 when no switch setting lets shape sh fit: its least memory (full
 * recompute, flash attention, sequence parallelism when valid, ZeRO 3 over
 * dp > 1) does not fit either. Each of those settings only lowers memory, so
 * the shape's other plans are out of memory without projecting them (the
 * unit test checks the count against projecting every plan). */
static int shape_cannot_fit(const ccs_search *s, int64_t sh)
{
    ccs_plan p;
    ccs_result r;
    base_plan(s, &s->shapes[sh], &p);
    p.recompute = CCS_RECOMPUTE_FULL;
    p.flash_attn = 1;
    p.zero = p.dp > 1 ? 3 : 0;
    p.sp = p.tp > 1;
    if (p.sp && plan_check(&s->m, &s->hw, &p) != CCS_R_OK)
        p.sp = 0;
    timeline_project(&s->m, &p, &s->cost, &r, NULL);
    return r.status == CCS_ST_OOM;
}

void search_range(const ccs_search *s, int64_t lo, int64_t hi, int64_t step, search_hit *top, int k,
                  int *n, search_stats *st)
{
    search_hit h;
    int64_t cur = -1;
    int oom = 0;
    for (int64_t i = lo; i < hi; i += step) {
        if (!search_plan(s, i, &h.plan) || plan_check(&s->m, &s->hw, &h.plan) != CCS_R_OK)
            continue;
        st->plans++;
        if (i / N_SWITCH != cur) {
            cur = i / N_SWITCH;
            oom = shape_cannot_fit(s, cur);
        }
        if (oom)
            continue;
        timeline_project(&s->m, &h.plan, &s->cost, &h.r, NULL);
        if (!best_eligible(&h.plan, &h.r))
            continue;
        st->fit++;
        search_insert(top, k, n, &h);
    }
}
