/* serve_grid.c - serving sweeps: the spec (`workload: serve`) read with ydoc,
 * every value checked before a scenario runs, and the lazy grid over it. */
#include "ccsweep/sweep/serve_grid.h"
#include "ccsweep/model/hw.h"
#include "ccsweep/cost/timeline.h"
#include "ccsweep/util/ydoc.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVE_AXIS_MAX 4096

struct serve_grid {
    char name[CCS_NAME_MAX * 2];
    ccs_model *models;
    ccs_hw *hw; /* n_hw x n_gen, evolved */
    ccs_evolution evo;
    int have_evo;
    int32_t *ax[SERVE_AX_N];
    size_t n[SERVE_AX_N];
    int64_t count, plan_n;
    serve_keep keep;
    ccs_cost cost; /* the last scenario's context */
    int cost_hw, cost_rep;
};

static const char *const ax_names[SERVE_AX_N] = {
    "models",   "hardware", "generations", "devices", "isl",     "osl",        "weight_dtype",
    "kv_dtype", "tp",       "pp",          "ep",      "attn_dp", "concurrency"};

int serve_spec_is_serve(const char *text, size_t len)
{
    ccs_err err;
    ydoc *d = ydoc_load_string(text, len, "spec", &err);
    if (!d)
        return 0;
    const ynode *w = ydoc_root(d) && ynode_kind(ydoc_root(d)) == YN_MAP
                         ? ynode_get(d, ydoc_root(d), "workload")
                         : NULL;
    int serve = w && ynode_scalar(w) && !strcmp(ynode_scalar(w), "serve");
    ydoc_free(d);
    return serve;
}

/* One value of axis a at node v into *out. */
static int read_one(const ydoc *d, const ynode *v, int a, const ccs_catalog *cat, int32_t *out,
                    ccs_err *err)
{
    const char *f = ax_names[a], *s = ynode_scalar(v);
    int64_t i;
    switch (a) {
    case SERVE_AX_MODEL:
    case SERVE_AX_HW:
        if (!s || (a == SERVE_AX_MODEL ? !catalog_model(cat, s) : !catalog_hw(cat, s))) {
            ydoc_error(d, v, err, "field '%s': unknown %s '%s' (see 'ccsweep list %s')", f,
                       a == SERVE_AX_MODEL ? "model" : "hardware", s ? s : "?",
                       a == SERVE_AX_MODEL ? "models" : "hardware");
            return CCS_EINPUT;
        }
        *out = 0; /* resolved by the caller */
        return CCS_OK;
    case SERVE_AX_WDTYPE:
    case SERVE_AX_KVDTYPE:
        if ((*out = serve_dtype_parse(s)) < 0) {
            ydoc_error(d, v, err, "field '%s': expected bf16, fp16, fp8 or fp4, got '%s'", f,
                       s ? s : "?");
            return CCS_EINPUT;
        }
        return CCS_OK;
    case SERVE_AX_ATTN_DP: {
        int b;
        if (ynode_bool(d, v, f, &b, err))
            return CCS_EINPUT;
        *out = b;
        return CCS_OK;
    }
    case SERVE_AX_CONCURRENCY:
        if (s && !strcmp(s, "max")) {
            *out = 0;
            return CCS_OK;
        }
        break;
    default:
        break;
    }
    long lo = a == SERVE_AX_GEN ? 0 : 1;
    long hi = a == SERVE_AX_GEN                        ? CCS_MAX_GEN
              : a == SERVE_AX_ISL || a == SERVE_AX_OSL ? CCS_MAX_SEQ
              : a == SERVE_AX_CONCURRENCY              ? 1 << 30
                                                       : CCS_MAX_DEVICES;
    if (ynode_int(d, v, f, &i, err))
        return CCS_EINPUT;
    if (i < lo || i > hi) {
        ydoc_error(d, v, err, "field '%s': expected an integer in [%ld, %ld]%s, got %lld", f, lo,
                   hi, a == SERVE_AX_CONCURRENCY ? " or max" : "", (long long)i);
        return CCS_EINPUT;
    }
    *out = (int32_t)i;
    return CCS_OK;
}

/* Axis a from node n: a value, a list of values, or {range: [first, last]}. */
static int read_axis(serve_grid *g, const ydoc *d, const ynode *n, int a, const ccs_catalog *cat,
                     ccs_err *err)
{
    int32_t lo = 0, hi = 0;
    const ynode *r = ynode_kind(n) == YN_MAP ? ynode_get(d, n, "range") : NULL;
    if (ynode_kind(n) == YN_MAP) {
        if (!r || ynode_len(n) != 1 || ynode_kind(r) != YN_SEQ || ynode_len(r) != 2 ||
            read_one(d, ynode_item(d, r, 0), a, cat, &lo, err) ||
            read_one(d, ynode_item(d, r, 1), a, cat, &hi, err) || hi < lo ||
            hi - lo >= SERVE_AXIS_MAX || a <= SERVE_AX_HW) {
            if (!err->msg[0])
                ydoc_error(d, n, err,
                           "field '%s': expected a value, a list or {range: [first, "
                           "last]} with first <= last",
                           ax_names[a]);
            return CCS_EINPUT;
        }
    }
    size_t len = r ? (size_t)(hi - lo + 1) : ynode_kind(n) == YN_SEQ ? ynode_len(n) : 1;
    if (len == 0 || len > SERVE_AXIS_MAX) {
        ydoc_error(d, n, err, "field '%s': expected 1 to %d values", ax_names[a], SERVE_AXIS_MAX);
        return CCS_EINPUT;
    }
    if (!(g->ax[a] = calloc(len, sizeof *g->ax[a]))) {
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    g->n[a] = len;
    for (size_t i = 0; i < len; i++) {
        const ynode *v = r ? NULL : ynode_kind(n) == YN_SEQ ? ynode_item(d, n, i) : n;
        if (r)
            g->ax[a][i] = lo + (int32_t)i;
        else if (read_one(d, v, a, cat, &g->ax[a][i], err))
            return CCS_EINPUT;
        /* a value twice would sweep the same scenarios twice (as the training
         * spec's names, refused); models and hardware compare by name */
        for (size_t j = 0; v && j < i; j++) {
            const ynode *w = ynode_item(d, n, j);
            if (a <= SERVE_AX_HW ? strcmp(ynode_scalar(w), ynode_scalar(v))
                                 : g->ax[a][j] != g->ax[a][i])
                continue;
            ydoc_error(d, v, err, "field '%s': '%s' is listed twice (first at line %d)",
                       ax_names[a], ynode_scalar(v), ynode_line(w));
            return CCS_EINPUT;
        }
    }
    /* models and hardware: the catalog entries, copied */
    if (a == SERVE_AX_MODEL && !(g->models = calloc(len, sizeof *g->models)))
        return ccs_err_set(err, "out of memory"), CCS_ENOMEM;
    for (size_t i = 0; a == SERVE_AX_MODEL && i < len; i++)
        g->models[i] =
            *catalog_model(cat, ynode_scalar(ynode_kind(n) == YN_SEQ ? ynode_item(d, n, i) : n));
    return CCS_OK;
}

static int parse_doc(serve_grid *g, const ydoc *d, const ccs_catalog *cat, ccs_err *err)
{
    const ynode *root = ydoc_root(d);
    static const char *const top[] = {"name",      "workload", "models", "hardware", "generations",
                                      "evolution", "serve",    "plan",   "keep",     NULL};
    static const char *const serve_keys[] = {"isl",          "osl",      "concurrency",
                                             "weight_dtype", "kv_dtype", NULL};
    static const char *const plan_keys[] = {"devices", "tp", "pp", "ep", "attn_dp", NULL};
    static const char *const keep_keys[] = {"best", "ttft_max_ms", "tpot_max_ms", NULL};
    if (ynode_kind(root) != YN_MAP) {
        ydoc_error(d, root, err, "a serving spec is a mapping");
        return CCS_EINPUT;
    }
    if (ydoc_check_keys(d, root, "the spec", top, err))
        return CCS_EINPUT;
    const char *name = "serve";
    const ynode *n = ynode_get(d, root, "name");
    if (n && ynode_string(d, n, "name", &name, err))
        return CCS_EINPUT;
    snprintf(g->name, sizeof g->name, "%s", name);
    const ynode *sv = ynode_get(d, root, "serve"), *pl = ynode_get(d, root, "plan");
    const ynode *kp = ynode_get(d, root, "keep");
    if ((sv && ynode_kind(sv) != YN_MAP) || (pl && ynode_kind(pl) != YN_MAP) ||
        (kp && ynode_kind(kp) != YN_MAP)) {
        ydoc_error(d,
                   sv && ynode_kind(sv) != YN_MAP   ? sv
                   : pl && ynode_kind(pl) != YN_MAP ? pl
                                                    : kp,
                   err, "field '%s': expected a mapping",
                   sv && ynode_kind(sv) != YN_MAP   ? "serve"
                   : pl && ynode_kind(pl) != YN_MAP ? "plan"
                                                    : "keep");
        return CCS_EINPUT;
    }
    if ((sv && ydoc_check_keys(d, sv, "serve", serve_keys, err)) ||
        (pl && ydoc_check_keys(d, pl, "plan", plan_keys, err)) ||
        (kp && ydoc_check_keys(d, kp, "keep", keep_keys, err)))
        return CCS_EINPUT;
    for (int a = 0; a < SERVE_AX_N; a++) {
        int in_plan = a == SERVE_AX_DEVICES || (a >= SERVE_AX_TP && a != SERVE_AX_CONCURRENCY);
        const ynode *at = a <= SERVE_AX_GEN ? root : in_plan ? pl : sv;
        const ynode *v = at ? ynode_get(d, at, ax_names[a]) : NULL;
        if (v) {
            if (read_axis(g, d, v, a, cat, err))
                return CCS_EINPUT;
            continue;
        }
        if (a <= SERVE_AX_HW || a == SERVE_AX_ISL || a == SERVE_AX_OSL) {
            ydoc_error(d, at ? at : root, err, "field '%s' is required in a serving spec%s",
                       ax_names[a], a > SERVE_AX_HW ? " (under serve:)" : "");
            return CCS_EINPUT;
        }
        /* defaults: generation 0, devices from tp x pp, bf16, tp = pp = ep = 1,
         * no attention DP, the most requests that fit */
        if (!(g->ax[a] = calloc(1, sizeof *g->ax[a])))
            return ccs_err_set(err, "out of memory"), CCS_ENOMEM;
        g->n[a] = 1;
        g->ax[a][0] = a >= SERVE_AX_TP && a <= SERVE_AX_EP ? 1 : 0;
    }
    int need_evo = 0;
    for (size_t i = 0; i < g->n[SERVE_AX_GEN]; i++)
        need_evo |= g->ax[SERVE_AX_GEN][i] > 0;
    const char *evname = "memory-wall";
    const ynode *ev = ynode_get(d, root, "evolution");
    if (ev && ynode_string(d, ev, "evolution", &evname, err))
        return CCS_EINPUT;
    const ccs_evolution *e = catalog_evolution(cat, evname);
    if ((ev || need_evo) && !e) {
        ydoc_error(d, ev ? ev : root, err, "field 'evolution': unknown rule '%s'", evname);
        return CCS_EINPUT;
    }
    if (e && (ev || need_evo)) {
        g->evo = *e;
        g->have_evo = 1;
    }
    /* the hardware, evolved to every generation */
    const ynode *hn = ynode_get(d, root, "hardware");
    size_t nh = g->n[SERVE_AX_HW], ng = g->n[SERVE_AX_GEN];
    if (!(g->hw = calloc(nh * ng, sizeof *g->hw)))
        return ccs_err_set(err, "out of memory"), CCS_ENOMEM;
    for (size_t h = 0; h < nh; h++) {
        const ccs_hw *base =
            catalog_hw(cat, ynode_scalar(ynode_kind(hn) == YN_SEQ ? ynode_item(d, hn, h) : hn));
        for (size_t j = 0; j < ng; j++)
            hw_evolve(base, g->have_evo ? &g->evo : NULL, g->ax[SERVE_AX_GEN][j],
                      &g->hw[h * ng + j]);
    }
    if (kp) {
        const ynode *b = ynode_get(d, kp, "best"), *t1 = ynode_get(d, kp, "ttft_max_ms"),
                    *t2 = ynode_get(d, kp, "tpot_max_ms");
        int64_t k = 0;
        double ms1 = 0, ms2 = 0;
        if (!b || ynode_int(d, b, "keep.best", &k, err) || k < 1 || k > 1000) {
            if (!err->msg[0])
                ydoc_error(d, b ? b : kp, err,
                           "field 'keep.best': expected an integer in [1, 1000]");
            return CCS_EINPUT;
        }
        if ((t1 && (ynode_double(d, t1, "keep.ttft_max_ms", &ms1, err) || !(ms1 > 0))) ||
            (t2 && (ynode_double(d, t2, "keep.tpot_max_ms", &ms2, err) || !(ms2 > 0)))) {
            if (!err->msg[0])
                ydoc_error(d, t1 && !(ms1 > 0) ? t1 : t2, err,
                           "field 'keep': a latency limit is a positive number of milliseconds");
            return CCS_EINPUT;
        }
        g->keep.best = (int)k;
        g->keep.lim.ttft_max = ms1 * 1e-3;
        g->keep.lim.tpot_max = ms2 * 1e-3;
    }
    g->count = g->plan_n = 1;
    for (int a = 0; a < SERVE_AX_N; a++) {
        if (g->count > INT64_MAX / (int64_t)g->n[a]) {
            ccs_err_set(err, "%s: the serving grid holds more than 2^63 scenarios", ydoc_name(d));
            return CCS_EINPUT;
        }
        g->count *= (int64_t)g->n[a];
        if (a >= SERVE_AX_TP)
            g->plan_n *= (int64_t)g->n[a];
    }
    return CCS_OK;
}

serve_grid *serve_grid_parse(const char *text, size_t len, const char *path, const ccs_catalog *cat,
                             ccs_err *err)
{
    err->msg[0] = 0;
    ydoc *d = ydoc_load_string(text, len, path, err);
    if (!d)
        return NULL;
    serve_grid *g = calloc(1, sizeof *g);
    if (!g) {
        ccs_err_set(err, "out of memory");
        ydoc_free(d);
        return NULL;
    }
    g->cost_hw = -1;
    int rc = parse_doc(g, d, cat, err);
    ydoc_free(d);
    if (rc) {
        serve_grid_free(g);
        return NULL;
    }
    return g;
}

void serve_grid_free(serve_grid *g)
{
    if (!g)
        return;
    for (int a = 0; a < SERVE_AX_N; a++)
        free(g->ax[a]);
    free(g->models);
    free(g->hw);
    free(g);
}

const char *serve_grid_name(const serve_grid *g)
{
    return g->name;
}
const char *serve_grid_evolution(const serve_grid *g)
{
    return g->have_evo ? g->evo.name : NULL;
}
int64_t serve_grid_count(const serve_grid *g)
{
    return g->count;
}
int64_t serve_grid_plan_n(const serve_grid *g)
{
    return g->plan_n;
}
const serve_keep *serve_grid_keep(const serve_grid *g)
{
    return &g->keep;
}
size_t serve_grid_axis_len(const serve_grid *g, int axis)
{
    return axis >= 0 && axis < SERVE_AX_N ? g->n[axis] : 0;
}
int32_t serve_grid_axis_value(const serve_grid *g, int axis, size_t i)
{
    assert(axis >= SERVE_AX_DEVICES && axis < SERVE_AX_N && i < g->n[axis]);
    return g->ax[axis][i];
}
const ccs_model *serve_grid_model(const serve_grid *g, size_t i)
{
    return &g->models[i];
}
const ccs_hw *serve_grid_hw(const serve_grid *g, size_t i, size_t gen_i)
{
    return &g->hw[i * g->n[SERVE_AX_GEN] + gen_i];
}

void serve_grid_eval(serve_grid *g, int64_t idx, serve_record *out)
{
    assert(idx >= 0 && idx < g->count);
    int32_t v[SERVE_AX_N];
    int64_t rest = idx;
    for (int a = SERVE_AX_N - 1; a >= 0; a--) {
        int64_t d = rest % (int64_t)g->n[a];
        rest /= (int64_t)g->n[a];
        v[a] = a <= SERVE_AX_HW ? (int32_t)d : g->ax[a][d];
        if (a == SERVE_AX_GEN)
            out->gen_i = (int32_t)d;
    }
    out->idx = idx;
    out->model = v[SERVE_AX_MODEL];
    out->hw = v[SERVE_AX_HW];
    out->gen = v[SERVE_AX_GEN];
    ccs_serve_plan *p = &out->plan;
    serve_plan_defaults(p);
    p->devices = v[SERVE_AX_DEVICES];
    p->isl = v[SERVE_AX_ISL];
    p->osl = v[SERVE_AX_OSL];
    p->wdtype = (int8_t)v[SERVE_AX_WDTYPE];
    p->kvdtype = (int8_t)v[SERVE_AX_KVDTYPE];
    p->tp = v[SERVE_AX_TP];
    p->pp = v[SERVE_AX_PP];
    p->ep = v[SERVE_AX_EP];
    p->attn_dp = (int8_t)v[SERVE_AX_ATTN_DP];
    p->concurrency = v[SERVE_AX_CONCURRENCY];
    const ccs_model *m = &g->models[out->model];
    const ccs_hw *hw = serve_grid_hw(g, (size_t)out->hw, (size_t)out->gen_i);
    memset(&out->r, 0, sizeof out->r);
    int reason = serve_plan_check(m, hw, p);
    if (reason != CCS_R_OK) {
        out->r.status = CCS_ST_INVALID;
        out->r.reason = reason;
        return;
    }
    /* the cost context depends on the hardware generation and the replica's
     * device count (its straggler derate) */
    int hwk = out->hw * (int)g->n[SERVE_AX_GEN] + out->gen_i, rep = p->tp * p->pp;
    if (hwk != g->cost_hw || rep != g->cost_rep) {
        serve_cost_init(&g->cost, hw, p);
        g->cost_hw = hwk;
        g->cost_rep = rep;
    }
    serve_project(m, p, &g->cost, &out->r);
}
