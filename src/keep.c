/* keep.c - best K per group: groups in an open-addressing hash table on the
 * per-field values; each group's records sorted by (score, idx), so the worst
 * is last. */
#include "ccsweep/keep.h"

#include "ccsweep/best.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct group {
    double key[SPEC_KEEP_PER_MAX];
    int n; /* records held, <= K */
} group;

struct ccs_keep {
    const ccs_grid *g;
    const spec_keep *rule;
    int fixed;         /* capacity fixed at keep_new */
    size_t n_groups;   /* in use */
    size_t cap_groups; /* allocated */
    group *groups;
    ccs_record *recs; /* K per group */
    double *score;    /* K per group */
    size_t n_recs;
    size_t n_hash; /* power of two, > 2 * cap_groups */
    int64_t *hash; /* group index + 1, 0 = empty */
};

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

static int grow(ccs_keep *k, size_t cap)
{
    size_t kk = (size_t)k->rule->best;
    group *ng = realloc(k->groups, cap * sizeof *ng);
    if (!ng)
        return CCS_ENOMEM;
    k->groups = ng;
    ccs_record *nr = realloc(k->recs, cap * kk * sizeof *nr);
    if (!nr)
        return CCS_ENOMEM;
    k->recs = nr;
    double *ns = realloc(k->score, cap * kk * sizeof *ns);
    if (!ns)
        return CCS_ENOMEM;
    k->score = ns;
    size_t nh = hash_size(cap);
    int64_t *h = calloc(nh, sizeof *h);
    if (!h)
        return CCS_ENOMEM;
    free(k->hash);
    k->hash = h;
    k->n_hash = nh;
    k->cap_groups = cap;
    /* rehash the groups in use */
    for (size_t i = 0; i < k->n_groups; i++) {
        uint64_t hv = key_hash(k->groups[i].key, k->rule->n_per);
        size_t at = (size_t)hv & (nh - 1);
        while (h[at])
            at = (at + 1) & (nh - 1);
        h[at] = (int64_t)i + 1;
    }
    return CCS_OK;
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
    free(k->groups);
    free(k->recs);
    free(k->score);
    free(k->hash);
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
    if (rec->r.status == CCS_ST_INVALID)
        return KEEP_DROPPED;
    double vals[EXPR_F_N];
    grid_fields(k->g, &rec->s, &rec->r, vals);
    if (rule->by == SPEC_KEEP_BY_BEST && !best_eligible(&rec->s.plan, &rec->r))
        return KEEP_DROPPED;
    double score = rule->by == SPEC_KEEP_BY_BEST ? 0
                   : rule->desc                  ? -vals[rule->by]
                                                 : vals[rule->by];
    if (isnan(score))
        return KEEP_DROPPED;
    if (score == 0)
        score = 0; /* -0.0 and 0.0 rank alike */
    double key[SPEC_KEEP_PER_MAX];
    for (int f = 0; f < rule->n_per; f++) {
        int id = rule->per[f];
        key[f] = id == SPEC_PER_MODEL ? rec->s.model : id == SPEC_PER_HW ? rec->s.hw : vals[id];
        if (key[f] == 0)
            key[f] = 0;
    }
    size_t at = (size_t)key_hash(key, rule->n_per) & (k->n_hash - 1);
    int64_t gi = -1;
    while (k->hash[at]) {
        group *gr = &k->groups[k->hash[at] - 1];
        if (!memcmp(gr->key, key, (size_t)rule->n_per * sizeof key[0])) {
            gi = k->hash[at] - 1;
            break;
        }
        at = (at + 1) & (k->n_hash - 1);
    }
    if (gi < 0) {
        if (k->n_groups == k->cap_groups) {
            if (k->fixed)
                return KEEP_FULL;
            if (grow(k, k->cap_groups * 2))
                return CCS_ENOMEM;
            return keep_offer(k, rec, displaced, out_idx, out_status);
        }
        gi = (int64_t)k->n_groups++;
        group *gr = &k->groups[gi];
        memset(gr->key, 0, sizeof gr->key);
        memcpy(gr->key, key, (size_t)rule->n_per * sizeof key[0]);
        gr->n = 0;
        k->hash[at] = gi + 1;
    }
    group *gr = &k->groups[gi];
    size_t base = (size_t)gi * (size_t)rule->best;
    ccs_record *rs = k->recs + base;
    double *sc = k->score + base;
    int n = gr->n;
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
    gr->n = n + 1;
    k->n_recs++;
    return KEEP_KEPT;
}

size_t keep_slots(const ccs_keep *k)
{
    return k->n_groups * (size_t)k->rule->best;
}

const ccs_record *keep_at(const ccs_keep *k, size_t slot)
{
    size_t gi = slot / (size_t)k->rule->best, j = slot % (size_t)k->rule->best;
    if (gi >= k->n_groups || (int)j >= k->groups[gi].n)
        return NULL;
    return &k->recs[slot];
}

size_t keep_count(const ccs_keep *k)
{
    return k->n_recs;
}

void keep_clear(ccs_keep *k)
{
    k->n_groups = 0;
    k->n_recs = 0;
    memset(k->hash, 0, k->n_hash * sizeof *k->hash);
}
