/* keep.c - best K per group, and per-group aggregates: groups in an
 * open-addressing hash table on the per-field values (shared by both
 * tables); each group's records sorted by (score, idx), so the worst is
 * last; each group's aggregates exact (xsum.h), so merging is order-free. */
#include "ccsweep/sweep/keep.h"

#include "ccsweep/sweep/best.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- groups by key ---------------------------------------------------------------- */

typedef struct gindex {
    int n_per;
    size_t n, cap; /* groups in use, allocated */
    double *keys;  /* SPEC_KEEP_PER_MAX per group */
    size_t n_hash; /* power of two, > 2 * cap */
    int64_t *hash; /* group index + 1, 0 = empty */
} gindex;

static uint64_t key_hash(const double *key, int n)
{
    uint64_t hv = 1469598103934665603ULL;
    for (int f = 0; f < n; f++) {
        uint64_t w;
        memcpy(&w, &key[f], sizeof w);
        hv = (hv ^ w) * 1099511628211ULL;
        hv ^= hv >> 29;
    }
    return hv;
}

static size_t hash_size(size_t groups)
{
    size_t n = 16;
    while (n < 2 * groups + 2)
        n *= 2;
    return n;
}

/* Room for cap groups, the ones in use rehashed. */
static int gindex_grow(gindex *x, size_t cap)
{
    double *nk = realloc(x->keys, cap * SPEC_KEEP_PER_MAX * sizeof *nk);
    if (!nk)
        return CCS_ENOMEM;
    x->keys = nk;
    size_t nh = hash_size(cap);
    int64_t *h = calloc(nh, sizeof *h);
    if (!h)
        return CCS_ENOMEM;
    free(x->hash);
    x->hash = h;
    x->n_hash = nh;
    x->cap = cap;
    for (size_t i = 0; i < x->n; i++) {
        size_t at = (size_t)key_hash(x->keys + i * SPEC_KEEP_PER_MAX, x->n_per) & (nh - 1);
        while (h[at])
            at = (at + 1) & (nh - 1);
        h[at] = (int64_t)i + 1;
    }
    return CCS_OK;
}

/* The group of key: its index, or -1 with *at the free slot it would take. */
static int64_t gindex_find(const gindex *x, const double *key, size_t *at)
{
    size_t a = (size_t)key_hash(key, x->n_per) & (x->n_hash - 1);
    while (x->hash[a]) {
        int64_t gi = x->hash[a] - 1;
        if (!memcmp(x->keys + (size_t)gi * SPEC_KEEP_PER_MAX, key,
                    (size_t)x->n_per * sizeof key[0]))
            return gi;
        a = (a + 1) & (x->n_hash - 1);
    }
    *at = a;
    return -1;
}

/* A new group of key at slot at (from gindex_find); there is room. */
static size_t gindex_add(gindex *x, size_t at, const double *key)
{
    size_t gi = x->n++;
    double *k = x->keys + gi * SPEC_KEEP_PER_MAX;
    memset(k, 0, SPEC_KEEP_PER_MAX * sizeof *k);
    memcpy(k, key, (size_t)x->n_per * sizeof *key);
    x->hash[at] = (int64_t)gi + 1;
    return gi;
}

static void gindex_clear(gindex *x)
{
    x->n = 0;
    memset(x->hash, 0, x->n_hash * sizeof *x->hash);
}

static void gindex_free(gindex *x)
{
    free(x->keys);
    free(x->hash);
}

/* The rule ranks rec: its field values to vals, its score (lower ranks first)
 * and its group key; 0 when the rule never keeps it (invalid plans, plans
 * best.h does not rank under keep.by best, an undefined score). */
static int rank_key(const spec_keep *rule, const ccs_grid *g, const ccs_record *rec, double *vals,
                    double *score, double *key)
{
    if (rec->r.status == CCS_ST_INVALID)
        return 0;
    grid_fields(g, &rec->s, &rec->r, vals);
    if (rule->by == SPEC_KEEP_BY_BEST && !best_eligible(&rec->s.plan, &rec->r))
        return 0;
    *score = rule->by == SPEC_KEEP_BY_BEST ? 0 : rule->desc ? -vals[rule->by] : vals[rule->by];
    if (isnan(*score))
        return 0;
    if (*score == 0)
        *score = 0; /* -0.0 and 0.0 rank alike */
    for (int f = 0; f < rule->n_per; f++) {
        int id = rule->per[f];
        key[f] = id == SPEC_PER_MODEL ? rec->s.model : id == SPEC_PER_HW ? rec->s.hw : vals[id];
        if (key[f] == 0)
            key[f] = 0;
    }
    return 1;
}

/* ---- best K per group ------------------------------------------------------------- */

struct ccs_keep {
    const ccs_grid *g;
    const spec_keep *rule;
    int fixed; /* capacity fixed at keep_new */
    gindex ix;
    int *held;        /* records per group, <= K */
    ccs_record *recs; /* K per group */
    double *score;    /* K per group */
    size_t n_recs;
};

static int grow(ccs_keep *k, size_t cap)
{
    size_t kk = k->rule->best > 0 ? (size_t)k->rule->best : 1;
    int *nh = realloc(k->held, cap * sizeof *nh);
    if (!nh)
        return CCS_ENOMEM;
    k->held = nh;
    ccs_record *nr = realloc(k->recs, cap * kk * sizeof *nr);
    if (!nr)
        return CCS_ENOMEM;
    k->recs = nr;
    double *ns = realloc(k->score, cap * kk * sizeof *ns);
    if (!ns)
        return CCS_ENOMEM;
    k->score = ns;
    return gindex_grow(&k->ix, cap);
}

ccs_keep *keep_new(const ccs_grid *g, size_t max_groups)
{
    const spec_keep *rule = spec_keep_rule(grid_spec(g));
    if (!rule)
        return NULL;
    ccs_keep *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->g = g;
    k->rule = rule;
    k->ix.n_per = rule->n_per;
    k->fixed = max_groups > 0;
    if (grow(k, max_groups > 0 ? max_groups : 64)) {
        keep_free(k);
        return NULL;
    }
    return k;
}

void keep_free(ccs_keep *k)
{
    if (!k)
        return;
    gindex_free(&k->ix);
    free(k->held);
    free(k->recs);
    free(k->score);
    free(k);
}

/* 1 when record a (score sa) ranks before b (score sb): by score, or in
 * best.h's order for keep.by best; ties to the lower index. */
static int better(const spec_keep *rule, double sa, const ccs_record *a, double sb,
                  const ccs_record *b)
{
    if (rule->by == SPEC_KEEP_BY_BEST) {
        int c = best_cmp(&a->s.plan, &a->r, &b->s.plan, &b->r);
        if (c)
            return c < 0;
    } else if (sa != sb) {
        return sa < sb;
    }
    return a->s.idx < b->s.idx;
}

int keep_offer(ccs_keep *k, const ccs_record *rec, int *displaced, int64_t *out_idx,
               int *out_status)
{
    const spec_keep *rule = k->rule;
    *displaced = 0;
    double vals[EXPR_F_N], score, key[SPEC_KEEP_PER_MAX];
    if (rule->best == 0 || !rank_key(rule, k->g, rec, vals, &score, key))
        return KEEP_DROPPED;
    size_t at = 0;
    int64_t gi = gindex_find(&k->ix, key, &at);
    if (gi < 0) {
        if (k->ix.n == k->ix.cap) {
            if (k->fixed)
                return KEEP_FULL;
            if (grow(k, k->ix.cap * 2))
                return CCS_ENOMEM;
            return keep_offer(k, rec, displaced, out_idx, out_status);
        }
        gi = (int64_t)gindex_add(&k->ix, at, key);
        k->held[gi] = 0;
    }
    size_t base = (size_t)gi * (size_t)rule->best;
    ccs_record *rs = k->recs + base;
    double *sc = k->score + base;
    int n = k->held[gi];
    if (n == rule->best) {
        if (!better(rule, score, rec, sc[n - 1], &rs[n - 1]))
            return KEEP_DROPPED;
        *displaced = 1;
        if (out_idx)
            *out_idx = rs[n - 1].s.idx;
        if (out_status)
            *out_status = rs[n - 1].r.status;
        n--;
        k->n_recs--;
    }
    int pos = n;
    while (pos > 0 && better(rule, score, rec, sc[pos - 1], &rs[pos - 1])) {
        rs[pos] = rs[pos - 1];
        sc[pos] = sc[pos - 1];
        pos--;
    }
    rs[pos] = *rec;
    sc[pos] = score;
    k->held[gi] = n + 1;
    k->n_recs++;
    return KEEP_KEPT;
}

size_t keep_slots(const ccs_keep *k)
{
    return k->ix.n * (size_t)k->rule->best;
}

const ccs_record *keep_at(const ccs_keep *k, size_t slot)
{
    if (k->rule->best == 0)
        return NULL;
    size_t gi = slot / (size_t)k->rule->best, j = slot % (size_t)k->rule->best;
    if (gi >= k->ix.n || (int)j >= k->held[gi])
        return NULL;
    return &k->recs[slot];
}

size_t keep_count(const ccs_keep *k)
{
    return k->n_recs;
}

void keep_clear(ccs_keep *k)
{
    gindex_clear(&k->ix);
    k->n_recs = 0;
}

/* ---- aggregates per group ----------------------------------------------------------- */

void keep_stat_zero(keep_stat *s)
{
    s->n = 0;
    s->min = s->max = 0;
    xsum_zero(&s->sum);
}

/* -0.0 is counted as 0.0: min and max then do not depend on which of two
 * equal zeros came first. */
static void stat_add(keep_stat *s, double v)
{
    if (isnan(v))
        return;
    if (v == 0)
        v = 0;
    if (!s->n || v < s->min)
        s->min = v;
    if (!s->n || v > s->max)
        s->max = v;
    s->n++;
    xsum_add(&s->sum, v);
}

void keep_stat_merge(keep_stat *into, const keep_stat *from)
{
    if (!from->n)
        return;
    if (!into->n || from->min < into->min)
        into->min = from->min;
    if (!into->n || from->max > into->max)
        into->max = from->max;
    into->n += from->n;
    xsum_merge(&into->sum, &from->sum);
}

struct ccs_agg {
    const ccs_grid *g;
    const spec_keep *rule;
    int fixed;
    gindex ix;
    int64_t *scenarios;   /* per group */
    keep_stat *stat;      /* n_agg per group */
    unsigned char *dirty; /* per group: changed since agg_clean */
    size_t *dirty_list, n_dirty;
};

static int agg_grow(ccs_agg *a, size_t cap)
{
    size_t f = (size_t)a->rule->n_agg;
    int64_t *ns = realloc(a->scenarios, cap * sizeof *ns);
    if (!ns)
        return CCS_ENOMEM;
    a->scenarios = ns;
    keep_stat *st = realloc(a->stat, cap * f * sizeof *st);
    if (!st)
        return CCS_ENOMEM;
    a->stat = st;
    unsigned char *d = realloc(a->dirty, cap);
    if (!d)
        return CCS_ENOMEM;
    a->dirty = d;
    size_t *dl = realloc(a->dirty_list, cap * sizeof *dl);
    if (!dl)
        return CCS_ENOMEM;
    a->dirty_list = dl;
    return gindex_grow(&a->ix, cap);
}

ccs_agg *agg_new(const ccs_grid *g, size_t max_groups)
{
    const spec_keep *rule = spec_keep_rule(grid_spec(g));
    if (!rule || !rule->n_agg)
        return NULL;
    ccs_agg *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->g = g;
    a->rule = rule;
    a->ix.n_per = rule->n_per;
    a->fixed = max_groups > 0;
    if (agg_grow(a, max_groups > 0 ? max_groups : 64)) {
        agg_free(a);
        return NULL;
    }
    return a;
}

void agg_free(ccs_agg *a)
{
    if (!a)
        return;
    gindex_free(&a->ix);
    free(a->scenarios);
    free(a->stat);
    free(a->dirty);
    free(a->dirty_list);
    free(a);
}

/* The group of key, created empty when new: its index, KEEP_FULL or CCS_ENOMEM. */
static int64_t agg_group(ccs_agg *a, const double *key)
{
    size_t at = 0;
    int64_t gi = gindex_find(&a->ix, key, &at);
    if (gi >= 0)
        return gi;
    if (a->ix.n == a->ix.cap) {
        if (a->fixed)
            return KEEP_FULL;
        if (agg_grow(a, a->ix.cap * 2))
            return CCS_ENOMEM;
        gindex_find(&a->ix, key, &at); /* the table was rehashed */
    }
    gi = (int64_t)gindex_add(&a->ix, at, key);
    a->scenarios[gi] = 0;
    for (int f = 0; f < a->rule->n_agg; f++)
        keep_stat_zero(&a->stat[(size_t)gi * (size_t)a->rule->n_agg + (size_t)f]);
    a->dirty[gi] = 0;
    return gi;
}

static void mark(ccs_agg *a, size_t gi)
{
    if (!a->dirty[gi]) {
        a->dirty[gi] = 1;
        a->dirty_list[a->n_dirty++] = gi;
    }
}

int agg_offer(ccs_agg *a, const ccs_record *rec)
{
    double vals[EXPR_F_N], score, key[SPEC_KEEP_PER_MAX];
    if (!rank_key(a->rule, a->g, rec, vals, &score, key))
        return KEEP_DROPPED;
    int64_t gi = agg_group(a, key);
    if (gi < 0)
        return (int)gi;
    a->scenarios[gi]++;
    keep_stat *s = &a->stat[(size_t)gi * (size_t)a->rule->n_agg];
    for (int f = 0; f < a->rule->n_agg; f++)
        stat_add(&s[f], vals[a->rule->agg[f]]);
    mark(a, (size_t)gi);
    return KEEP_KEPT;
}

int agg_add_group(ccs_agg *a, const double *key, int64_t scenarios, const keep_stat *stats)
{
    int64_t gi = agg_group(a, key);
    if (gi < 0)
        return (int)gi;
    a->scenarios[gi] += scenarios;
    keep_stat *s = &a->stat[(size_t)gi * (size_t)a->rule->n_agg];
    for (int f = 0; f < a->rule->n_agg; f++)
        keep_stat_merge(&s[f], &stats[f]);
    mark(a, (size_t)gi);
    return CCS_OK;
}

int agg_merge(ccs_agg *into, const ccs_agg *from)
{
    for (size_t gi = 0; gi < from->ix.n; gi++) {
        int rc = agg_add_group(into, from->ix.keys + gi * SPEC_KEEP_PER_MAX, from->scenarios[gi],
                               &from->stat[gi * (size_t)from->rule->n_agg]);
        if (rc)
            return rc;
    }
    return CCS_OK;
}

size_t agg_groups(const ccs_agg *a)
{
    return a->ix.n;
}

const double *agg_group_at(const ccs_agg *a, size_t gi, int64_t *scenarios, const keep_stat **stats)
{
    *scenarios = a->scenarios[gi];
    *stats = &a->stat[gi * (size_t)a->rule->n_agg];
    return a->ix.keys + gi * SPEC_KEEP_PER_MAX;
}

size_t agg_dirty(const ccs_agg *a, const size_t **groups)
{
    *groups = a->dirty_list;
    return a->n_dirty;
}

void agg_clean(ccs_agg *a)
{
    for (size_t i = 0; i < a->n_dirty; i++)
        a->dirty[a->dirty_list[i]] = 0;
    a->n_dirty = 0;
}

void agg_clear(ccs_agg *a)
{
    gindex_clear(&a->ix);
    a->n_dirty = 0;
}

/* Packed group: the key (n_per doubles), the scenario count, then per field
 * n, min, max and the sum's xsum encoding (self-delimiting); native byte
 * order, as the records that travel with it. */
size_t agg_pack(const ccs_agg *a, size_t gi, unsigned char *buf)
{
    size_t at = 0, nk = (size_t)a->rule->n_per * sizeof(double);
    memcpy(buf, a->ix.keys + gi * SPEC_KEEP_PER_MAX, nk);
    at += nk;
    memcpy(buf + at, &a->scenarios[gi], sizeof(int64_t));
    at += sizeof(int64_t);
    for (int f = 0; f < a->rule->n_agg; f++) {
        const keep_stat *s = &a->stat[gi * (size_t)a->rule->n_agg + (size_t)f];
        memcpy(buf + at, &s->n, sizeof s->n);
        memcpy(buf + at + 8, &s->min, sizeof s->min);
        memcpy(buf + at + 16, &s->max, sizeof s->max);
        at += 24;
        at += xsum_encode(&s->sum, buf + at);
    }
    return at;
}

size_t agg_pack_max(const ccs_agg *a)
{
    return (size_t)a->rule->n_per * sizeof(double) + sizeof(int64_t) +
           (size_t)a->rule->n_agg * (24 + XSUM_ENCODED_MAX);
}

int agg_unpack_add(ccs_agg *a, const unsigned char *buf, size_t n, size_t *used)
{
    double key[SPEC_KEEP_PER_MAX];
    keep_stat st[SPEC_KEEP_AGG_MAX];
    int64_t scen;
    size_t at = 0, nk = (size_t)a->rule->n_per * sizeof(double);
    if (n < nk + sizeof scen)
        return CCS_EINPUT;
    memcpy(key, buf, nk);
    memcpy(&scen, buf + nk, sizeof scen);
    at = nk + sizeof scen;
    for (int f = 0; f < a->rule->n_agg; f++) {
        if (n - at < 24)
            return CCS_EINPUT;
        memcpy(&st[f].n, buf + at, 8);
        memcpy(&st[f].min, buf + at + 8, 8);
        memcpy(&st[f].max, buf + at + 16, 8);
        at += 24;
        size_t len = xsum_decode(&st[f].sum, buf + at, n - at);
        if (!len)
            return CCS_EINPUT;
        at += len;
    }
    *used = at;
    return agg_add_group(a, key, scen, st);
}
