/* search.c - the plan space of one training job and its best plans. */
#include "ccsweep/sweep/search.h"

#include "ccsweep/cost/timeline.h"
#include "ccsweep/sweep/fields.h"

#include <assert.h>
#include <stdio.h>
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
    int has_stack;
    ccs_plan base;
    search_opts o; /* o.stack unused: stack above */
    int gen;
    double params;  /* model_params(&m), for the filter */
    double mem_lim; /* bytes per device a plan may use */
    shape *shapes;
    int64_t n_shapes;
};

void search_opts_init(search_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_cp = 1;
    o->max_mem_frac = 1;
}

const char *search_axis_name(int ax)
{
    static const char *const n[SEARCH_AX_N] = {"tp",  "cp",        "ep", "pp",   "dp", "vpp",
                                               "mbs", "recompute", "sp", "zero", "fa", "dpov"};
    return ax >= 0 && ax < SEARCH_AX_N ? n[ax] : "?";
}

/* 1 when axis ax may take value v. */
static int allowed(const ccs_search *s, int ax, int32_t v)
{
    const search_axis *a = &s->o.ax[ax];
    if (a->n == 0)
        return 1;
    for (int i = 0; i < a->n; i++)
        if (a->v[i] == v)
            return 1;
    return 0;
}

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

ccs_search *search_new(const ccs_model *m, const ccs_hw *hw, const struct ccs_opmodel *om,
                       const ccs_evolution *ev, int gen, int32_t devices, int32_t gbs, int32_t seq,
                       int dtype, int32_t max_cp, ccs_err *err)
{
    search_opts o;
    search_opts_init(&o);
    o.max_cp = max_cp;
    return search_new_opts(m, hw, om, ev, gen, devices, gbs, seq, dtype, &o, err);
}

ccs_search *search_new_opts(const ccs_model *m, const ccs_hw *hw, const struct ccs_opmodel *om,
                            const ccs_evolution *ev, int gen, int32_t devices, int32_t gbs,
                            int32_t seq, int dtype, const search_opts *o, ccs_err *err)
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
    if (o)
        s->o = *o;
    else
        search_opts_init(&s->o);
    s->o.stack = NULL;
    if (s->o.max_mem_frac <= 0 || s->o.max_mem_frac > 1)
        s->o.max_mem_frac = 1;
    int32_t max_cp = s->o.max_cp;
    const search_axis *cps = &s->o.ax[SEARCH_AX_CP];
    for (int i = 0; i < cps->n; i++)
        max_cp = i == 0 || cps->v[i] > max_cp ? cps->v[i] : max_cp;
    s->gen = gen;
    s->params = model_params(m);
    s->mem_lim = s->o.max_mem_frac * hw->mem_cap;
    cost_init(&s->cost, &s->hw, om, ev, gen, &s->base);
    if (o && o->stack) {
        s->stack = *o->stack;
        s->has_stack = 1;
        cost_set_stack(&s->cost, &s->stack);
    }

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
        if (!allowed(s, SEARCH_AX_TP, tp))
            continue;
        for (int b = 0; b < n_dev && dev_div[b] <= max_cp; b++) {
            int32_t cp = dev_div[b];
            if ((devices / tp) % cp || (cp > 1 && seq % (2 * cp) != 0) ||
                !allowed(s, SEARCH_AX_CP, cp))
                continue;
            int32_t rest = devices / tp / cp; /* pp * dp */
            for (int c = 0; c < n_dev && dev_div[c] <= m->layers; c++) {
                int32_t pp = dev_div[c];
                if (rest % pp || !allowed(s, SEARCH_AX_PP, pp))
                    continue;
                /* pp need not divide the layers: plan_stage_layers' default split */
                ccs_plan sp = s->base;
                sp.pp = pp;
                int32_t lf, lm, ll;
                if (plan_stage_layers(m, &sp, &lf, &lm, &ll) != CCS_R_OK)
                    continue;
                int32_t dp = rest / pp;
                if (gbs % dp || !allowed(s, SEARCH_AX_DP, dp))
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
                    if (per % mbs || !allowed(s, SEARCH_AX_MBS, mbs))
                        continue;
                    for (int f = 0; f < n_vpp; f++) {
                        int32_t vpp = vpps[f];
                        if (!allowed(s, SEARCH_AX_VPP, vpp))
                            continue;
                        /* expert parallelism over the dp x cp ranks (MoE only) */
                        for (int g = 0; g < n_ep; g++) {
                            int32_t ep = eps[g];
                            if (((int64_t)dp * cp) % ep || !allowed(s, SEARCH_AX_EP, ep))
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
    return allowed(s, SEARCH_AX_RECOMPUTE, p->recompute) && allowed(s, SEARCH_AX_SP, p->sp) &&
           allowed(s, SEARCH_AX_ZERO, p->zero) && allowed(s, SEARCH_AX_FLASH_ATTN, p->flash_attn) &&
           allowed(s, SEARCH_AX_DP_OVERLAP, p->dp_overlap);
}

int search_same(const ccs_result *a, const ccs_result *b)
{
    if (a->status != b->status)
        return 0;
    for (int i = 0; i < CCS_N_OUTPUTS; i++)
        if (ccs_output_of(a, i) != ccs_output_of(b, i))
            return 0;
    return 1;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Add plan o and its equal plans to w's: the count is exact, the list keeps
 * the lowest indices, so the answer does not depend on the merge order. */
static void join_same(search_hit *w, const search_hit *o)
{
    int64_t all[2 * SEARCH_MAX_SAME + 1];
    int n = 0;
    for (int i = 0; i < w->n_listed; i++)
        all[n++] = w->same[i];
    all[n++] = o->idx;
    for (int i = 0; i < o->n_listed; i++)
        all[n++] = o->same[i];
    qsort(all, (size_t)n, sizeof all[0], cmp_i64);
    w->n_same += 1 + o->n_same;
    w->n_listed = n < SEARCH_MAX_SAME ? n : SEARCH_MAX_SAME;
    memcpy(w->same, all, sizeof all[0] * (size_t)w->n_listed);
}

static int insert_sorted(search_hit *top, int k, int *n, const search_hit *h)
{
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

int search_insert(search_hit *top, int k, int *n, const search_hit *h)
{
    if (k <= 0)
        return 0;
    /* equal outputs mean equal tokens/s: only a plan that could rank needs the scan */
    if (*n == k && h->r.tokens_per_s < top[k - 1].r.tokens_per_s)
        return 0;
    for (int j = 0; j < *n; j++) {
        if (top[j].r.tokens_per_s != h->r.tokens_per_s || !search_same(&top[j].r, &h->r))
            continue;
        int h_wins = best_cmp(&h->plan, &h->r, &top[j].plan, &top[j].r) < 0;
        search_hit w = h_wins ? *h : top[j];
        join_same(&w, h_wins ? &top[j] : h);
        memmove(&top[j], &top[j + 1], sizeof *top * (size_t)(*n - j - 1));
        (*n)--;
        return insert_sorted(top, k, n, &w);
    }
    return insert_sorted(top, k, n, h);
}

/* A plan's settings as search_axis_id values. */
static void axis_values(const ccs_plan *p, int32_t *v)
{
    v[SEARCH_AX_TP] = p->tp;
    v[SEARCH_AX_CP] = plan_cp(p);
    v[SEARCH_AX_EP] = plan_ep(p);
    v[SEARCH_AX_PP] = p->pp;
    v[SEARCH_AX_DP] = p->dp;
    v[SEARCH_AX_VPP] = p->vpp;
    v[SEARCH_AX_MBS] = p->mbs;
    v[SEARCH_AX_RECOMPUTE] = p->recompute;
    v[SEARCH_AX_SP] = p->sp;
    v[SEARCH_AX_ZERO] = p->zero;
    v[SEARCH_AX_FLASH_ATTN] = p->flash_attn;
    v[SEARCH_AX_DP_OVERLAP] = p->dp_overlap;
}

static const char *axis_value_text(int ax, int32_t v, char *tmp, size_t size)
{
    static const char *const dpov[] = {"none", "last", "bucket"};
    if (ax == SEARCH_AX_RECOMPUTE)
        return recompute_name(v);
    if (ax == SEARCH_AX_DP_OVERLAP)
        return v >= 0 && v < 3 ? dpov[v] : "?";
    snprintf(tmp, size, "%d", (int)v);
    return tmp;
}

/* Append text to buf[*len..size), keeping it NUL-terminated. */
static void put(char *buf, size_t size, size_t *len, const char *text)
{
    int w = snprintf(buf + *len, size - *len, "%s", text);
    if (w > 0)
        *len += (size_t)w < size - *len ? (size_t)w : size - *len - 1;
}

const char *search_same_text(const ccs_search *s, const search_hit *h, char *buf, size_t size)
{
    assert(size > 0);
    size_t len = 0;
    char tmp[24];
    buf[0] = '\0';
    if (h->n_same == 0)
        return buf;
    int32_t v[SEARCH_MAX_SAME + 1][SEARCH_AX_N];
    int np = 1;
    axis_values(&h->plan, v[0]);
    for (int i = 0; i < h->n_listed; i++) {
        ccs_plan p;
        search_plan(s, h->same[i], &p);
        axis_values(&p, v[np++]);
    }
    /* the values each axis takes over the plans */
    int32_t set[SEARCH_AX_N][SEARCH_MAX_SAME + 1];
    int n_set[SEARCH_AX_N], combos = 1;
    for (int ax = 0; ax < SEARCH_AX_N; ax++) {
        n_set[ax] = 0;
        for (int i = 0; i < np; i++) {
            int j = 0;
            while (j < n_set[ax] && set[ax][j] != v[i][ax])
                j++;
            if (j == n_set[ax])
                set[ax][n_set[ax]++] = v[i][ax];
        }
        combos *= n_set[ax];
    }
    if (h->n_listed == h->n_same && combos == np) {
        /* distinct plans as many as the combinations: every combination */
        for (int ax = 0; ax < SEARCH_AX_N; ax++) {
            if (n_set[ax] < 2)
                continue;
            put(buf, size, &len, len ? " x " : "");
            put(buf, size, &len, search_axis_name(ax));
            qsort(set[ax], (size_t)n_set[ax], sizeof set[ax][0], cmp_i32);
            for (int j = 0; j < n_set[ax]; j++) {
                put(buf, size, &len, j ? "|" : " ");
                put(buf, size, &len, axis_value_text(ax, set[ax][j], tmp, sizeof tmp));
            }
        }
        return buf;
    }
    for (int i = 1; i < np; i++) {
        put(buf, size, &len, i > 1 ? "; " : "");
        int first = 1;
        for (int ax = 0; ax < SEARCH_AX_N; ax++) {
            if (v[i][ax] == v[0][ax])
                continue;
            put(buf, size, &len, first ? "" : " ");
            put(buf, size, &len, search_axis_name(ax));
            put(buf, size, &len, " ");
            put(buf, size, &len, axis_value_text(ax, v[i][ax], tmp, sizeof tmp));
            first = 0;
        }
    }
    if (h->n_same > h->n_listed) {
        snprintf(tmp, sizeof tmp, "; +%d more", (int)(h->n_same - h->n_listed));
        put(buf, size, &len, tmp);
    }
    return buf;
}

/* 1 when no switch setting lets shape sh fit: its least memory (full
 * recompute, flash attention, sequence parallelism when valid, ZeRO 3 over
 * dp > 1 with bucketed reduction, the one schedule that keeps only a shard of
 * the gradients: plan_grads_sharded) does not fit either. Each of those settings only lowers
 * memory, so the shape's other plans are out of memory without projecting them (the unit test
 * checks the count against projecting every plan). */
static int shape_cannot_fit(const ccs_search *s, int64_t sh)
{
    ccs_plan p;
    ccs_result r;
    base_plan(s, &s->shapes[sh], &p);
    p.recompute = CCS_RECOMPUTE_FULL;
    p.flash_attn = 1;
    p.zero = p.dp > 1 ? 3 : 0;
    p.dp_overlap = p.dp > 1 ? CCS_DPOV_BUCKETED : CCS_DPOV_NONE;
    p.sp = p.tp > 1;
    if (p.sp && plan_check(&s->m, &s->hw, &p) != CCS_R_OK)
        p.sp = 0;
    timeline_project(&s->m, &p, &s->cost, &r, NULL);
    return r.status == CCS_ST_OOM || r.mem_total > s->mem_lim;
}

/* 1: keep, 0: drop, by the filter (after projection when r is not NULL);
 * a plan it is undefined for (plan i) is dropped and counted in st. */
static int passes(const ccs_search *s, int64_t i, const ccs_plan *p, const ccs_result *r,
                  search_stats *st)
{
    double vals[EXPR_F_N];
    fields_fill(&s->m, s->params, &s->hw, s->gen, p, r, vals);
    int k = expr_eval(s->o.where, vals);
    if (k == EXPR_UNDEFINED) {
        if (!st->undefined++ || i < st->undefined_idx)
            st->undefined_idx = i;
        return 0;
    }
    st->filtered += !k;
    return k;
}

void search_range(const ccs_search *s, int64_t lo, int64_t hi, int64_t step, search_hit *top, int k,
                  int *n, search_stats *st)
{
    search_hit h;
    memset(&h, 0, sizeof h);
    int64_t cur = -1;
    int oom = 0;
    const ccs_expr *where = s->o.where;
    int post = where && expr_uses_results(where);
    for (int64_t i = lo; i < hi; i += step) {
        if (!search_plan(s, i, &h.plan) || plan_check(&s->m, &s->hw, &h.plan) != CCS_R_OK)
            continue;
        st->plans++;
        if (where && !post && !passes(s, i, &h.plan, NULL, st))
            continue;
        if (i / N_SWITCH != cur) {
            cur = i / N_SWITCH;
            oom = shape_cannot_fit(s, cur);
        }
        if (oom)
            continue;
        timeline_project(&s->m, &h.plan, &s->cost, &h.r, NULL);
        if (!best_eligible(&h.plan, &h.r) || h.r.mem_total > s->mem_lim)
            continue;
        st->fit++;
        if (post && !passes(s, i, &h.plan, &h.r, st))
            continue;
        st->kept++;
        h.idx = i;
        search_insert(top, k, n, &h);
    }
}
