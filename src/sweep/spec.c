/* spec.c - sweep spec parsing and validation. Every error names the file,
 * line, column and field and says what was expected; nothing here touches a
 * database, so a bad spec fails before any output exists. */
#include "ccsweep/sweep/spec.h"
#include "ccsweep/cost/opmodel.h"
#include "ccsweep/util/file.h"
#include "ccsweep/util/sha256.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct axis {
    double *v;
    size_t n;
    int given;
    int zip;
} axis;

struct ccs_spec {
    char name[CCS_NAME_MAX * 2];
    char *path;
    char *text;
    size_t text_len;
    char sha[65];
    ccs_model *models;
    size_t n_models;
    ccs_hw *hw;
    size_t n_hw;
    ccs_stack *stacks; /* plan.stack's entries (copied) */
    size_t n_stacks;
    ccs_opmodel **om;
    char **calib;
    ccs_evolution evo;
    int have_evo;
    axis ax[SPEC_AX_N];
    ccs_expr *where;
    char *where_text;
    char *tpl;
    spec_tpl_part *parts;
    spec_keep keep;
    int has_keep;
    size_t n_parts;
};

/* How the values of an axis are read and bounded. */
enum {
    K_INDEX,
    K_INT,
    K_INT_MODEL,
    K_REAL,
    K_BOOL,
    K_DTYPE,
    K_RECOMP,
    K_DPOV,
    K_CPCOMM,
    K_CAPF,
    K_STACK /* names (read_stacks), stored as 1-based indices */
};
static const struct {
    const char *name; /* key in the spec (plan axes under plan:) */
    int kind;
    double min, max, def;
} axes[SPEC_AX_N] = {
    [SPEC_AX_MODEL] = {"models", K_INDEX, 0, 0, 0},
    [SPEC_AX_HW] = {"hardware", K_INDEX, 0, 0, 0},
    [SPEC_AX_GEN] = {"generations", K_INT, 0, CCS_MAX_GEN, 0},
    [SPEC_AX_DEVICES] = {"devices", K_INT, 1, CCS_MAX_DEVICES, 0},
    [SPEC_AX_TP] = {"tp", K_INT, 1, CCS_MAX_DEVICES, 1},
    [SPEC_AX_CP] = {"cp", K_INT, 1, CCS_MAX_DEVICES, 1},
    [SPEC_AX_CP_COMM] = {"cp_comm", K_CPCOMM, 0, 1, CCS_CP_RING},
    [SPEC_AX_EP] = {"ep", K_INT, 1, CCS_MAX_DEVICES, 1},
    [SPEC_AX_CAPACITY_FACTOR] = {"capacity_factor", K_CAPF, 0, CCS_MAX_FACTOR, 0},
    [SPEC_AX_PP] = {"pp", K_INT, 1, CCS_MAX_DEVICES, 1},
    [SPEC_AX_PP_FIRST_LAYERS] = {"pp_first_layers", K_INT, 0, CCS_MAX_LAYERS, 0},
    [SPEC_AX_PP_LAST_LAYERS] = {"pp_last_layers", K_INT, 0, CCS_MAX_LAYERS, 0},
    [SPEC_AX_DP] = {"dp", K_INT, 1, CCS_MAX_DEVICES, 0},
    [SPEC_AX_VPP] = {"vpp", K_INT, 1, CCS_MAX_VPP, 1},
    [SPEC_AX_MBS] = {"mbs", K_INT, 1, CCS_MAX_MBS, 1},
    [SPEC_AX_GBS] = {"gbs", K_INT_MODEL, 1, CCS_MAX_GBS, SPEC_FROM_MODEL},
    [SPEC_AX_SEQ] = {"seq", K_INT_MODEL, 1, CCS_MAX_SEQ, SPEC_FROM_MODEL},
    [SPEC_AX_DTYPE] = {"dtype", K_DTYPE, 0, 0, CCS_BF16},
    [SPEC_AX_SP] = {"sp", K_BOOL, 0, 1, 0},
    [SPEC_AX_ZERO] = {"zero", K_INT, 0, 3, 0},
    [SPEC_AX_RECOMPUTE] = {"recompute", K_RECOMP, 0, 0, CCS_RECOMPUTE_NONE},
    [SPEC_AX_FLASH_ATTN] = {"flash_attn", K_BOOL, 0, 1, 0},
    [SPEC_AX_TP_OVERLAP] = {"tp_overlap", K_BOOL, 0, 1, 0},
    [SPEC_AX_DP_OVERLAP] = {"dp_overlap", K_DPOV, 0, 2, CCS_DPOV_NONE},
    [SPEC_AX_INNET_REDUCE] = {"innet_reduce", K_BOOL, 0, 1, 0},
    [SPEC_AX_COMM_COMPRESS] = {"comm_compress", K_REAL, 0, CCS_MAX_FACTOR, 1},
    [SPEC_AX_NET_BW_FACTOR] = {"net_bw_factor", K_REAL, 0, CCS_MAX_FACTOR, 1},
    [SPEC_AX_STACK] = {"stack", K_STACK, 0, 0, 0},
};

const char *spec_axis_name(int axis)
{
    return (axis >= 0 && axis < SPEC_AX_N) ? axes[axis].name : "?";
}

static int axis_by_name(const char *name)
{
    for (int a = 0; name && a < SPEC_AX_N; a++)
        if (!strcmp(axes[a].name, name))
            return a;
    return -1;
}

/* Field name used in messages: plan axes are "plan.tp". */
static void field_name(int a, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", a >= SPEC_AX_DEVICES ? "plan." : "", axes[a].name);
}

static int push(axis *x, double v, const ydoc *d, const ynode *at, const char *field, ccs_err *err)
{
    if (x->n >= SPEC_AXIS_MAX) {
        ydoc_error(d, at, err, "field '%s': more than %d values", field, SPEC_AXIS_MAX);
        return CCS_EINPUT;
    }
    if ((x->n & (x->n - 1)) == 0) { /* grow at powers of two */
        double *nv = realloc(x->v, (x->n ? 2 * x->n : 1) * sizeof *nv);
        if (!nv) {
            ydoc_error(d, at, err, "field '%s': out of memory", field);
            return CCS_ENOMEM;
        }
        x->v = nv;
    }
    x->v[x->n++] = v;
    return CCS_OK;
}

/* One scalar value of axis a. */
static int read_value(const ydoc *d, const ynode *n, int a, const char *field, double *out,
                      ccs_err *err)
{
    const char *s = ynode_scalar(n);
    int64_t iv;
    double dv;
    int b;
    switch (axes[a].kind) {
    case K_INT_MODEL:
        if (s && !strcmp(s, "model")) {
            *out = SPEC_FROM_MODEL;
            return CCS_OK;
        }
        /* fall through */
    case K_INT:
        if (ynode_int(d, n, field, &iv, err) != CCS_OK) {
            if (axes[a].kind == K_INT_MODEL)
                ydoc_error(d, n, err,
                           "field '%s': expected a positive integer or 'model', got "
                           "'%s'",
                           field, s ? s : "a collection");
            return CCS_EINPUT;
        }
        if (iv < axes[a].min || iv > axes[a].max) {
            ydoc_error(d, n, err, "field '%s': expected an integer in [%.0f, %.0f], got %lld",
                       field, axes[a].min, axes[a].max, (long long)iv);
            return CCS_EINPUT;
        }
        *out = (double)iv;
        return CCS_OK;
    case K_CAPF:
        /* 0 (the default) is dropless: every routed token, balanced load */
        if (s && !strcmp(s, "dropless")) {
            *out = 0;
            return CCS_OK;
        }
        /* fall through */
    case K_REAL:
        if (ynode_double(d, n, field, &dv, err) != CCS_OK ||
            !(dv > axes[a].min && dv <= axes[a].max)) {
            ydoc_error(d, n, err, "field '%s': expected a positive number%s, got '%s'", field,
                       axes[a].kind == K_CAPF ? " (tokens an expert takes, times its balanced "
                                                "share) or 'dropless'"
                                              : "",
                       s ? s : "a collection");
            return CCS_EINPUT;
        }
        *out = dv;
        return CCS_OK;
    case K_BOOL:
        if (ynode_bool(d, n, field, &b, err) != CCS_OK)
            return CCS_EINPUT;
        *out = b;
        return CCS_OK;
    case K_DTYPE:
        b = dtype_parse(s);
        if (b < 0 || b == CCS_TF32) {
            ydoc_error(d, n, err, "field '%s': expected bf16, fp16, fp8 or fp32, got '%s'", field,
                       s ? s : "a collection");
            return CCS_EINPUT;
        }
        *out = b;
        return CCS_OK;
    case K_DPOV:
        /* true/false name the two Megatron-LM settings (--overlap-grad-reduce or not) */
        b = dp_overlap_parse(s);
        if (b < 0 && s && (!strcmp(s, "true") || !strcmp(s, "false")))
            b = !strcmp(s, "true") ? CCS_DPOV_LAST_MICRO : CCS_DPOV_NONE;
        if (b < 0) {
            ydoc_error(d, n, err,
                       "field '%s': expected none, last-microbatch, bucketed, true or false, "
                       "got '%s'",
                       field, s ? s : "a collection");
            return CCS_EINPUT;
        }
        *out = b;
        return CCS_OK;
    case K_STACK: /* names: read_stacks */
        ydoc_error(d, n, err, "field '%s': expected stack names", field);
        return CCS_EINPUT;
    case K_CPCOMM:
    case K_RECOMP:
        b = axes[a].kind == K_RECOMP ? recompute_parse(s) : cp_comm_parse(s);
        if (b < 0) {
            ydoc_error(d, n, err, "field '%s': expected %s, got '%s'", field,
                       axes[a].kind == K_RECOMP ? "none, selective or full" : "ring or allgather",
                       s ? s : "a collection");
            return CCS_EINPUT;
        }
        *out = b;
        return CCS_OK;
    }
    return CCS_EINPUT;
}

/* {range: [a, b]}, {range: [a, b, step]} or {geom: [a, b, factor]}. */
static int read_generator(const ydoc *d, const ynode *map, int a, const char *field, axis *x,
                          ccs_err *err)
{
    static const char *const forms = "expected a value, a list, {range: [a, b]}, {range: [a, b, "
                                     "step]} or {geom: [a, b, factor]}";
    const char *k = ynode_scalar(ynode_key(d, map, 0));
    ynode *v = ynode_value(d, map, 0);
    int is_range = k && !strcmp(k, "range"), is_geom = k && !strcmp(k, "geom");
    if (ynode_len(map) != 1 || !(is_range || is_geom)) {
        ydoc_error(d, map, err, "field '%s': %s", field, forms);
        return CCS_EINPUT;
    }
    int kind = axes[a].kind;
    if (kind != K_INT && kind != K_INT_MODEL && kind != K_REAL && kind != K_CAPF) {
        ydoc_error(d, map, err, "field '%s': %s takes only a value or a list", field, field);
        return CCS_EINPUT;
    }
    size_t len = ynode_len(v);
    if (ynode_kind(v) != YN_SEQ || len < 2 || len > 3 || (is_geom && len != 3)) {
        ydoc_error(d, v ? v : map, err, "field '%s': bad %s: expected %s", field, k,
                   is_range ? "[first, last] or [first, last, step]" : "[first, last, factor]");
        return CCS_EINPUT;
    }
    double lo, hi, step = 1;
    char sub[96];
    snprintf(sub, sizeof sub, "%s.%s", field, k);
    if (read_value(d, ynode_item(d, v, 0), a, sub, &lo, err) ||
        read_value(d, ynode_item(d, v, 1), a, sub, &hi, err))
        return CCS_EINPUT;
    if (len == 3 && ynode_double(d, ynode_item(d, v, 2), sub, &step, err))
        return CCS_EINPUT;
    if (lo == SPEC_FROM_MODEL || hi == SPEC_FROM_MODEL || lo > hi) {
        ydoc_error(d, v, err, "field '%s': bad %s: first (%g) must not exceed last (%g)", field, k,
                   lo, hi);
        return CCS_EINPUT;
    }
    int integral = kind != K_REAL && kind != K_CAPF;
    if (is_range) {
        if (!(step > 0) || (integral && step != floor(step))) {
            ydoc_error(d, ynode_item(d, v, 2), err,
                       "field '%s': bad range: step must be a "
                       "positive %s, got %g",
                       field, integral ? "integer" : "number", step);
            return CCS_EINPUT;
        }
        double count = floor((hi - lo) / step * (1 + 1e-12)) + 1;
        if (count == 1 && hi > lo) {
            ydoc_error(d, ynode_item(d, v, 2), err,
                       "field '%s': bad range: [first, last, step] = [%g, %g, %g]: the step is "
                       "wider than the span from first to last, so it yields only %g; use a "
                       "step of at most %g, or give the single value",
                       field, lo, hi, step, lo, hi - lo);
            return CCS_EINPUT;
        }
        if (count > SPEC_AXIS_MAX) {
            ydoc_error(d, v, err, "field '%s': bad range: more than %d values", field,
                       SPEC_AXIS_MAX);
            return CCS_EINPUT;
        }
        for (double i = 0; i < count; i++)
            if (push(x, lo + i * step, d, v, field, err))
                return CCS_EINPUT;
        return CCS_OK;
    }
    if (!(step > 1) || !(lo > 0)) {
        ydoc_error(d, v, err,
                   "field '%s': bad geom: needs first > 0 and factor > 1, got "
                   "first %g, factor %g",
                   field, lo, step);
        return CCS_EINPUT;
    }
    if (hi > lo && lo * step > hi * (1 + 1e-12)) {
        ydoc_error(d, ynode_item(d, v, 2), err,
                   "field '%s': bad geom: [first, last, factor] = [%g, %g, %g]: first times the "
                   "factor is already past last, so it yields only %g; use a factor of at most "
                   "%g, or give the single value",
                   field, lo, hi, step, lo, hi / lo);
        return CCS_EINPUT;
    }
    for (double g = lo; g <= hi * (1 + 1e-12); g *= step) {
        if (integral && g != floor(g)) {
            ydoc_error(d, v, err,
                       "field '%s': bad geom: it produces the non-integer %g; use "
                       "an integer factor",
                       field, g);
            return CCS_EINPUT;
        }
        if (push(x, g, d, v, field, err))
            return CCS_EINPUT;
    }
    return CCS_OK;
}

/* A plan axis or generations: scalar, list, or generator. */
static int read_axis(const ydoc *d, const ynode *n, int a, axis *x, ccs_err *err)
{
    char field[64];
    field_name(a, field, sizeof field);
    x->given = 1;
    switch (ynode_kind(n)) {
    case YN_SCALAR: {
        double v;
        return read_value(d, n, a, field, &v, err) ? CCS_EINPUT : push(x, v, d, n, field, err);
    }
    case YN_SEQ:
        if (ynode_len(n) == 0) {
            ydoc_error(d, n, err, "field '%s': expected a non-empty list", field);
            return CCS_EINPUT;
        }
        for (size_t i = 0; i < ynode_len(n); i++) {
            ynode *it = ynode_item(d, n, i);
            double v;
            if (ynode_kind(it) != YN_SCALAR) {
                ydoc_error(d, it, err, "field '%s': list items must be single values", field);
                return CCS_EINPUT;
            }
            if (read_value(d, it, a, field, &v, err) || push(x, v, d, it, field, err))
                return CCS_EINPUT;
        }
        return CCS_OK;
    case YN_MAP:
        return read_generator(d, n, a, field, x, err);
    }
    ydoc_error(d, n, err, "field '%s': expected a value", field);
    return CCS_EINPUT;
}

/* plan.stack: a catalog stack's name, an inline entry, or a list of them; each
 * becomes the value of its 1-based position (0 is the default stack). */
static int read_stacks(ccs_spec *s, const ydoc *d, const ynode *n, const ccs_catalog *cat,
                       ccs_err *err)
{
    size_t cnt = ynode_kind(n) == YN_SEQ ? ynode_len(n) : 1;
    if (ynode_kind(n) == YN_MAP && ynode_get(d, n, "name") == NULL) {
        ydoc_error(d, n, err,
                   "field 'plan.stack': expected a stack name, an inline entry or a "
                   "list of them");
        return CCS_EINPUT;
    }
    if (cnt == 0) {
        ydoc_error(d, n, err, "field 'plan.stack': expected a non-empty list");
        return CCS_EINPUT;
    }
    if (cnt > 32767) {
        ydoc_error(d, n, err, "field 'plan.stack': more than 32767 stacks");
        return CCS_EINPUT;
    }
    if (!(s->stacks = calloc(cnt, sizeof *s->stacks))) {
        ccs_err_set(err, "%s: out of memory", ydoc_name(d));
        return CCS_ENOMEM;
    }
    s->ax[SPEC_AX_STACK].given = 1;
    for (size_t i = 0; i < cnt; i++) {
        const ynode *it = ynode_kind(n) == YN_SEQ ? ynode_item(d, n, i) : n;
        const char *name = ynode_scalar(it);
        if (name) {
            const ccs_stack *st = catalog_stack(cat, name);
            if (!st) {
                ydoc_error(d, it, err,
                           "field 'plan.stack': unknown stack '%s' (expected a catalog name, "
                           "see 'ccsweep list stacks', or an inline entry)",
                           name);
                return CCS_EINPUT;
            }
            s->stacks[i] = *st;
        } else if (catalog_parse_stack(d, it, &s->stacks[i], err)) {
            return CCS_EINPUT;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(s->stacks[j].name, s->stacks[i].name)) {
                ydoc_error(d, it, err, "field 'plan.stack': '%s' is listed twice",
                           s->stacks[i].name);
                return CCS_EINPUT;
            }
        s->n_stacks = i + 1;
        if (push(&s->ax[SPEC_AX_STACK], (double)(i + 1), d, it, "plan.stack", err))
            return CCS_EINPUT;
    }
    return CCS_OK;
}

/* models: / hardware: a name, an inline entry, or a list of them. */
static int read_entries(ccs_spec *s, const ydoc *d, const ynode *n, int a, const ccs_catalog *cat,
                        ccs_err *err)
{
    const char *field = axes[a].name;
    if (!n) {
        ydoc_error(d, ydoc_root(d), err, "missing field '%s' (catalog names or inline entries)",
                   field);
        return CCS_EINPUT;
    }
    size_t cnt = ynode_kind(n) == YN_SEQ ? ynode_len(n) : 1;
    if (ynode_kind(n) == YN_SEQ && cnt == 0) {
        ydoc_error(d, n, err, "field '%s': expected a non-empty list", field);
        return CCS_EINPUT;
    }
    if (a == SPEC_AX_MODEL)
        s->models = calloc(cnt, sizeof *s->models);
    else
        s->hw = calloc(cnt, sizeof *s->hw);
    if (a == SPEC_AX_MODEL ? !s->models : !s->hw) {
        ccs_err_set(err, "%s: out of memory", ydoc_name(d));
        return CCS_ENOMEM;
    }
    ccs_names *seen = ccs_names_new(); /* names so far: duplicates in linear time */
    for (size_t i = 0; i < cnt; i++) {
        const ynode *it = ynode_kind(n) == YN_SEQ ? ynode_item(d, n, i) : n;
        const char *name = ynode_scalar(it);
        const char *nm;
        if (name) {
            if (a == SPEC_AX_MODEL) {
                const ccs_model *m = catalog_model(cat, name);
                if (!m) {
                    ydoc_error(d, it, err,
                               "field 'models': unknown model '%s' (expected a "
                               "catalog name, see 'ccsweep list models', or an inline entry)",
                               name);
                    ccs_names_free(seen);
                    return CCS_EINPUT;
                }
                s->models[i] = *m;
            } else {
                const ccs_hw *h = catalog_hw(cat, name);
                if (!h) {
                    ydoc_error(d, it, err,
                               "field 'hardware': unknown hardware '%s' (expected "
                               "a catalog name, see 'ccsweep list hardware', or an inline entry)",
                               name);
                    ccs_names_free(seen);
                    return CCS_EINPUT;
                }
                s->hw[i] = *h;
            }
        } else if (a == SPEC_AX_MODEL ? catalog_parse_model(d, it, &s->models[i], err)
                                      : catalog_parse_hw(d, it, &s->hw[i], err)) {
            ccs_names_free(seen);
            return CCS_EINPUT;
        }
        nm = a == SPEC_AX_MODEL ? s->models[i].name : s->hw[i].name;
        int added = seen ? ccs_names_add(seen, nm, (long)i) : CCS_ENOMEM;
        if (added == 1) {
            const ynode *first =
                ynode_kind(n) == YN_SEQ ? ynode_item(d, n, (size_t)ccs_names_find(seen, nm)) : n;
            ydoc_error(d, it, err, "field '%s': '%s' is listed twice (first at line %d)", field, nm,
                       ynode_line(first));
        } else if (added) {
            ccs_err_set(err, "%s: out of memory", ydoc_name(d));
        }
        if (added || push(&s->ax[a], (double)i, d, it, field, err)) {
            ccs_names_free(seen);
            return added == CCS_ENOMEM ? CCS_ENOMEM : CCS_EINPUT;
        }
    }
    ccs_names_free(seen);
    if (a == SPEC_AX_MODEL)
        s->n_models = cnt;
    else
        s->n_hw = cnt;
    s->ax[a].given = 1;
    return CCS_OK;
}

static int read_evolution(ccs_spec *s, const ydoc *d, const ynode *n, const ccs_catalog *cat,
                          ccs_err *err)
{
    if (!n) {
        const ccs_evolution *e = catalog_evolution(cat, "memory-wall");
        if (e) {
            s->evo = *e;
            s->have_evo = 1;
        }
        return CCS_OK;
    }
    const char *name = ynode_scalar(n);
    if (name) {
        const ccs_evolution *e = catalog_evolution(cat, name);
        if (!e) {
            ydoc_error(d, n, err,
                       "field 'evolution': unknown evolution rule '%s' (expected a "
                       "catalog name, see 'ccsweep list evolutions', or an inline entry)",
                       name);
            return CCS_EINPUT;
        }
        s->evo = *e;
    } else if (catalog_parse_evolution(d, n, &s->evo, err)) {
        return CCS_EINPUT;
    }
    s->have_evo = 1;
    return CCS_OK;
}

static int read_zip(ccs_spec *s, const ydoc *d, const ynode *n, ccs_err *err)
{
    if (ynode_kind(n) != YN_SEQ || ynode_len(n) == 0) {
        ydoc_error(d, n, err, "field 'zip': expected a list of axis lists, e.g. [[tp, pp]]");
        return CCS_EINPUT;
    }
    for (size_t g = 0; g < ynode_len(n); g++) {
        ynode *grp = ynode_item(d, n, g);
        if (ynode_kind(grp) != YN_SEQ || ynode_len(grp) < 2) {
            ydoc_error(d, grp, err, "field 'zip': expected a list of two or more axis names");
            return CCS_EINPUT;
        }
        int first = -1;
        for (size_t i = 0; i < ynode_len(grp); i++) {
            ynode *it = ynode_item(d, grp, i);
            int a = axis_by_name(ynode_scalar(it));
            if (a < 0) {
                ydoc_error(d, it, err,
                           "field 'zip': unknown axis '%s' (expected models, "
                           "hardware, generations or a plan axis)",
                           ynode_scalar(it) ? ynode_scalar(it) : "a collection");
                return CCS_EINPUT;
            }
            if (!s->ax[a].given) {
                ydoc_error(d, it, err, "field 'zip': axis '%s' is not set by this spec",
                           axes[a].name);
                return CCS_EINPUT;
            }
            if (s->ax[a].zip >= 0) {
                ydoc_error(d, it, err, "field 'zip': axis '%s' is already zipped", axes[a].name);
                return CCS_EINPUT;
            }
            if (first >= 0 && s->ax[a].n != s->ax[first].n) {
                ydoc_error(d, it, err,
                           "field 'zip': axes '%s' (%zu values) and '%s' (%zu "
                           "values) must have the same length",
                           axes[first].name, s->ax[first].n, axes[a].name, s->ax[a].n);
                return CCS_EINPUT;
            }
            if (first < 0)
                first = a;
            s->ax[a].zip = (int)g;
        }
    }
    return CCS_OK;
}

/* Error positioned inside a scalar: column of the node plus an offset. */
static void inner_error(const ydoc *d, const ynode *n, int col_in_text, ccs_err *err,
                        const char *field, const char *msg)
{
    int col = ynode_col(n) + (ynode_quoted(n) ? 1 : 0) + col_in_text - 1;
    ccs_err_set(err, "%s:%d:%d: field '%s': %s", ydoc_name(d), ynode_line(n), col, field, msg);
}

/* keep.aggregate: a field or a list of distinct fields (expr.h). */
static int read_keep_aggregate(spec_keep *k, const ydoc *d, const ynode *a, ccs_err *err)
{
    if (!a)
        return CCS_OK;
    size_t na = ynode_kind(a) == YN_SEQ ? ynode_len(a) : 1;
    if (na < 1 || na > SPEC_KEEP_AGG_MAX || ynode_kind(a) == YN_MAP) {
        ydoc_error(d, a, err,
                   "field 'keep.aggregate': expected a list of 1 to %d fields, e.g. [t_iter, "
                   "comm_fraction, mfu]",
                   SPEC_KEEP_AGG_MAX);
        return CCS_EINPUT;
    }
    for (size_t i = 0; i < na; i++) {
        const ynode *f = ynode_kind(a) == YN_SEQ ? ynode_item(d, a, i) : a;
        const char *name = f ? ynode_scalar(f) : NULL;
        int id = name ? expr_field_lookup(name) : -1;
        if (id < 0) {
            ydoc_error(d, f ? f : a, err,
                       "field 'keep.aggregate': expected a field such as t_iter, "
                       "comm_fraction or mfu, got '%s'",
                       name ? name : "?");
            return CCS_EINPUT;
        }
        for (int j = 0; j < k->n_agg; j++)
            if (k->agg[j] == id) {
                ydoc_error(d, f, err, "field 'keep.aggregate': '%s' is listed twice", name);
                return CCS_EINPUT;
            }
        k->agg[k->n_agg++] = id;
    }
    return CCS_OK;
}

static int read_keep(ccs_spec *s, const ydoc *d, const ynode *n, ccs_err *err)
{
    static const char *const keys[] = {"best", "by", "per", "aggregate", NULL};
    if (ynode_kind(n) != YN_MAP) {
        ydoc_error(d, n, err,
                   "field 'keep': expected a map such as {best: 1, by: t_iter, per: [model, "
                   "hardware, generation]}");
        return CCS_EINPUT;
    }
    if (ydoc_check_keys(d, n, "keep", keys, err))
        return CCS_EINPUT;
    spec_keep *k = &s->keep;
    if (read_keep_aggregate(k, d, ynode_get(d, n, "aggregate"), err))
        return CCS_EINPUT;
    int64_t best = 1;
    const ynode *b = ynode_get(d, n, "best");
    if (b && ynode_int(d, b, "keep.best", &best, err))
        return CCS_EINPUT;
    if (best < (k->n_agg ? 0 : 1) || best > SPEC_KEEP_BEST_MAX) {
        ydoc_error(d, b ? b : n, err,
                   k->n_agg ? "field 'keep.best': expected 0 (the aggregates only) to %d plans "
                              "per group"
                            : "field 'keep.best': expected 1 to %d plans per group (0 only with "
                              "keep.aggregate)",
                   SPEC_KEEP_BEST_MAX);
        return CCS_EINPUT;
    }
    k->best = (int)best;
    const ynode *by = ynode_get(d, n, "by");
    const char *t = by ? ynode_scalar(by) : "best";
    if (!t || !*t) {
        ydoc_error(d, by ? by : n, err,
                   "field 'keep.by': expected best (the default) or a field to rank by, e.g. "
                   "t_iter (lowest first) or -mfu (highest first)");
        return CCS_EINPUT;
    }
    k->desc = t[0] == '-';
    k->by = !strcmp(t, "best") ? SPEC_KEEP_BY_BEST : expr_field_lookup(t + k->desc);
    if (k->by == -1) {
        ydoc_error(d, by, err, "field 'keep.by': unknown field '%s'", t + k->desc);
        return CCS_EINPUT;
    }
    const ynode *per = ynode_get(d, n, "per");
    size_t np = per ? (ynode_kind(per) == YN_SEQ ? ynode_len(per) : 1) : 0;
    if (np > SPEC_KEEP_PER_MAX) {
        ydoc_error(d, per, err, "field 'keep.per': at most %d fields", SPEC_KEEP_PER_MAX);
        return CCS_EINPUT;
    }
    for (size_t i = 0; i < np; i++) {
        const ynode *f = ynode_kind(per) == YN_SEQ ? ynode_item(d, per, i) : per;
        const char *name = f ? ynode_scalar(f) : NULL;
        int id = !name                         ? -1
                 : !strcmp(name, "model")      ? SPEC_PER_MODEL
                 : !strcmp(name, "hardware")   ? SPEC_PER_HW
                 : !strcmp(name, "generation") ? EXPR_F_GEN
                                               : expr_field_lookup(name);
        if (id == -1 || id >= EXPR_F_RESULT) {
            ydoc_error(d, f ? f : per, err,
                       "field 'keep.per': expected model, hardware, generation or a plan, "
                       "model or hardware field, got '%s'",
                       name ? name : "?");
            return CCS_EINPUT;
        }
        k->per[k->n_per++] = id;
    }
    if (!per && k->by == SPEC_KEEP_BY_BEST) { /* best.h's group: plans compare only there */
        static const int group[] = {SPEC_PER_MODEL, SPEC_PER_HW, EXPR_F_GEN,
                                    EXPR_F_DEVICES, EXPR_F_GBS,  EXPR_F_SEQ};
        for (size_t i = 0; i < sizeof group / sizeof group[0]; i++)
            k->per[k->n_per++] = group[i];
    }
    s->has_keep = 1;
    return CCS_OK;
}

static int read_where(ccs_spec *s, const ydoc *d, const ynode *n, ccs_err *err)
{
    const char *text = ynode_scalar(n);
    if (!text || !*text) {
        ydoc_error(d, n, err, "field 'where': expected a condition, e.g. \"fits and tp <= 8\"");
        return CCS_EINPUT;
    }
    ccs_err e;
    int col = 1;
    s->where = expr_compile(text, &e, &col);
    if (!s->where) {
        inner_error(d, n, col, err, "where", e.msg);
        return CCS_EINPUT;
    }
    s->where_text = strdup(text);
    return s->where_text ? CCS_OK : CCS_ENOMEM;
}

static int read_template(ccs_spec *s, const ydoc *d, const ynode *n, ccs_err *err)
{
    const char *t = ynode_scalar(n);
    if (!t || !*t) {
        ydoc_error(d, n, err,
                   "field 'scenario_name': expected a template such as "
                   "\"{model}-tp{tp}-pp{pp}\"");
        return CCS_EINPUT;
    }
    s->tpl = strdup(t);
    size_t len = strlen(t);
    s->parts = calloc(len + 1, sizeof *s->parts);
    if (!s->tpl || !s->parts)
        return CCS_ENOMEM;
    const char *p = s->tpl;
    while (*p) {
        spec_tpl_part *part = &s->parts[s->n_parts++];
        if (*p != '{') {
            const char *q = strchr(p, '{');
            part->field = SPEC_TPL_LITERAL;
            part->lit = p;
            part->len = q ? (size_t)(q - p) : strlen(p);
            p += part->len;
            continue;
        }
        const char *close = strchr(p, '}');
        char name[48] = "";
        int col = (int)(p - s->tpl) + 1;
        if (!close || (size_t)(close - p - 1) >= sizeof name) {
            inner_error(d, n, col, err, "scenario_name", "expected '{field}'");
            return CCS_EINPUT;
        }
        memcpy(name, p + 1, (size_t)(close - p - 1));
        name[close - p - 1] = 0;
        int f = expr_field_lookup(name);
        if (!strcmp(name, "model"))
            f = SPEC_TPL_MODEL;
        else if (!strcmp(name, "hardware") || !strcmp(name, "hw"))
            f = SPEC_TPL_HW;
        else if (!strcmp(name, "evolution"))
            f = SPEC_TPL_EVOLUTION;
        if (f < 0 || (f < EXPR_F_N && f >= EXPR_F_RESULT)) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "unknown field '{%s}' (expected model, hardware, "
                     "evolution, gen or a plan or model field)",
                     name);
            inner_error(d, n, col, err, "scenario_name", msg);
            return CCS_EINPUT;
        }
        part->field = f;
        p = close + 1;
    }
    return CCS_OK;
}

static int read_calibration(ccs_spec *s, const ydoc *d, const ynode *n, ccs_err *err)
{
    if (ynode_kind(n) != YN_MAP) {
        ydoc_error(d, n, err,
                   "field 'calibration': expected a mapping of hardware name to "
                   "profile CSV path");
        return CCS_EINPUT;
    }
    char dir[PATH_MAX] = ".";
    const char *slash = strrchr(s->path, '/');
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - s->path), s->path);
    for (size_t i = 0; i < ynode_len(n); i++) {
        ynode *k = ynode_key(d, n, i), *v = ynode_value(d, n, i);
        const char *hw = ynode_scalar(k), *file;
        size_t h;
        for (h = 0; hw && h < s->n_hw; h++)
            if (!strcmp(s->hw[h].name, hw))
                break;
        if (!hw || h == s->n_hw) {
            ydoc_error(d, k, err, "field 'calibration': '%s' is not in this spec's hardware",
                       hw ? hw : "?");
            return CCS_EINPUT;
        }
        char field[80];
        snprintf(field, sizeof field, "calibration.%s", hw);
        if (ynode_string(d, v, field, &file, err))
            return CCS_EINPUT;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s%s%s", file[0] == '/' ? "" : dir,
                     file[0] == '/' ? "" : "/", file) >= (int)sizeof path) {
            ydoc_error(d, v, err, "field '%s': path too long", field);
            return CCS_EINPUT;
        }
        ccs_err e;
        s->om[h] = opmodel_load(path, &e);
        if (!s->om[h]) {
            ydoc_error(d, v, err, "field '%s': cannot load the profile: %s", field, e.msg);
            return CCS_EINPUT;
        }
        s->calib[h] = strdup(path);
        if (!s->calib[h])
            return CCS_ENOMEM;
    }
    return CCS_OK;
}

static const char *const top_keys[] = {
    "name", "description", "models",        "hardware",    "generations", "evolution", "plan",
    "zip",  "where",       "scenario_name", "calibration", "keep",        NULL};

/* The grid size, checked here so that the error can point at the axis that
 * overflows (grid_new checks again for specs built otherwise). */
static int check_count(const ccs_spec *s, const ydoc *d, ynode *const *node, ccs_err *err)
{
    int64_t count = 1;
    int zip_seen[SPEC_AX_N] = {0};
    for (int a = 0; a < SPEC_AX_N; a++) {
        int64_t len = (int64_t)s->ax[a].n;
        int z = s->ax[a].zip;
        if (len <= 1 || (z >= 0 && zip_seen[z]++))
            continue;
        if (count > INT64_MAX / len) {
            char field[64];
            field_name(a, field, sizeof field);
            ydoc_error(d, node[a], err,
                       "field '%s': the grid would hold more than 2^63-1 "
                       "scenarios; narrow the axes or split the sweep",
                       field);
            return CCS_EINPUT;
        }
        count *= len;
    }
    return CCS_OK;
}

/* gbs "model" (the default) needs a model with a batch: a plan never makes
 * one up from mbs * dp. With models and gbs zipped only the pairs count. */
static int check_model_batch(const ccs_spec *s, const ydoc *d, ynode *const *node, ccs_err *err)
{
    const axis *g = &s->ax[SPEC_AX_GBS], *mo = &s->ax[SPEC_AX_MODEL];
    int zipped = g->zip >= 0 && g->zip == mo->zip;
    for (size_t j = 0; j < g->n; j++) {
        if (g->v[j] != SPEC_FROM_MODEL)
            continue;
        for (size_t i = zipped ? j : 0; i < (zipped ? j + 1 : mo->n); i++) {
            const ccs_model *m = &s->models[(size_t)mo->v[i]];
            if (m->gbs > 0)
                continue;
            const ynode *ms = ynode_get(d, ydoc_root(d), "models");
            const ynode *at = g->given                   ? node[SPEC_AX_GBS]
                              : ynode_kind(ms) == YN_SEQ ? ynode_item(d, ms, i)
                                                         : ms;
            ydoc_error(d, at, err,
                       "field 'plan.gbs': model '%s' has no global batch (gbs) and the plan "
                       "leaves the batch to the model; give gbs in the model entry or "
                       "under plan",
                       m->name);
            return CCS_EINPUT;
        }
    }
    return CCS_OK;
}

static int parse_doc(ccs_spec *s, const ydoc *d, const ccs_catalog *cat, ccs_err *err)
{
    ynode *root = ydoc_root(d);
    ynode *node[SPEC_AX_N];
    for (int a = 0; a < SPEC_AX_N; a++)
        node[a] = root;
    if (ynode_kind(root) != YN_MAP) {
        ydoc_error(d, root, err, "expected a mapping with models, hardware and plan");
        return CCS_EINPUT;
    }
    if (ydoc_check_keys(d, root, "the spec's top level", top_keys, err))
        return CCS_EINPUT;
    for (int a = 0; a < SPEC_AX_N; a++)
        s->ax[a].zip = -1;

    ynode *n = ynode_get(d, root, "name");
    if (n) {
        const char *nm;
        if (ynode_string(d, n, "name", &nm, err))
            return CCS_EINPUT;
        ccs_strlcpy(s->name, nm, sizeof s->name);
    } else {
        const char *b = strrchr(s->path, '/');
        ccs_strlcpy(s->name, b ? b + 1 : s->path, sizeof s->name);
        char *dot = strrchr(s->name, '.');
        if (dot && dot != s->name)
            *dot = 0;
    }
    n = ynode_get(d, root, "description");
    if (n && !ynode_scalar(n)) {
        ydoc_error(d, n, err, "field 'description': expected text");
        return CCS_EINPUT;
    }
    if (read_entries(s, d, ynode_get(d, root, "models"), SPEC_AX_MODEL, cat, err) ||
        read_entries(s, d, ynode_get(d, root, "hardware"), SPEC_AX_HW, cat, err))
        return CCS_EINPUT;
    s->om = calloc(s->n_hw, sizeof *s->om);
    s->calib = calloc(s->n_hw, sizeof *s->calib);
    if (!s->om || !s->calib)
        return CCS_ENOMEM;
    n = ynode_get(d, root, "generations");
    if (n && read_axis(d, n, SPEC_AX_GEN, &s->ax[SPEC_AX_GEN], err))
        return CCS_EINPUT;
    if (read_evolution(s, d, ynode_get(d, root, "evolution"), cat, err))
        return CCS_EINPUT;
    for (size_t i = 0; i < s->ax[SPEC_AX_GEN].n; i++) {
        if (s->ax[SPEC_AX_GEN].v[i] > 0 && !s->have_evo) {
            ydoc_error(d, n, err,
                       "field 'evolution': generations above 0 need an evolution "
                       "rule (see 'ccsweep list evolutions')");
            return CCS_EINPUT;
        }
    }

    ynode *plan = ynode_get(d, root, "plan");
    if (!plan || ynode_kind(plan) != YN_MAP) {
        ydoc_error(d, plan ? plan : root, err,
                   "field 'plan': expected a mapping of plan axes "
                   "(devices, tp, pp, ...)");
        return CCS_EINPUT;
    }
    for (size_t i = 0; i < ynode_len(plan); i++) {
        ynode *k = ynode_key(d, plan, i);
        int a = axis_by_name(ynode_scalar(k));
        if (a < SPEC_AX_DEVICES) {
            char list[400] = "";
            for (int b = SPEC_AX_DEVICES; b < SPEC_AX_N; b++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         b == SPEC_AX_DEVICES ? "" : ", ", axes[b].name);
            ydoc_error(d, k, err, "field 'plan.%s': unknown axis (expected one of: %s)",
                       ynode_scalar(k) ? ynode_scalar(k) : "?", list);
            return CCS_EINPUT;
        }
        if (s->ax[a].given) {
            ydoc_error(d, k, err, "field 'plan.%s': given twice", axes[a].name);
            return CCS_EINPUT;
        }
        node[a] = ynode_value(d, plan, i);
        if (a == SPEC_AX_STACK ? read_stacks(s, d, node[a], cat, err)
                               : read_axis(d, node[a], a, &s->ax[a], err))
            return CCS_EINPUT;
    }
    /* Axes the spec leaves out take one default value. */
    for (int a = 0; a < SPEC_AX_N; a++)
        if (!s->ax[a].n && push(&s->ax[a], axes[a].def, d, root, axes[a].name, err))
            return CCS_ENOMEM;

    if ((n = ynode_get(d, root, "zip")) && read_zip(s, d, n, err))
        return CCS_EINPUT;
    if (check_count(s, d, node, err) || check_model_batch(s, d, node, err))
        return CCS_EINPUT;
    if ((n = ynode_get(d, root, "keep")) && read_keep(s, d, n, err))
        return CCS_EINPUT;
    if ((n = ynode_get(d, root, "where")) && read_where(s, d, n, err))
        return CCS_EINPUT;
    if ((n = ynode_get(d, root, "scenario_name")) && read_template(s, d, n, err))
        return CCS_EINPUT;
    if ((n = ynode_get(d, root, "calibration")) && read_calibration(s, d, n, err))
        return CCS_EINPUT;
    return CCS_OK;
}

ccs_spec *spec_parse(const char *text, size_t len, const char *path, const ccs_catalog *cat,
                     ccs_err *err)
{
    ccs_spec *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path)) || !(s->text = malloc(len + 1))) {
        ccs_err_set(err, "%s: out of memory", path);
        spec_free(s);
        return NULL;
    }
    memcpy(s->text, text, len);
    s->text[len] = 0;
    s->text_len = len;
    sha256_hex(text, len, s->sha);
    ydoc *d = ydoc_load_string(text, len, path, err);
    if (!d || parse_doc(s, d, cat, err) != CCS_OK) {
        ydoc_free(d);
        spec_free(s);
        return NULL;
    }
    ydoc_free(d);
    return s;
}

int spec_read_file(const char *path, char **text, size_t *len, ccs_err *err)
{
    if (ccs_read_file(path, CCS_MAX_YAML_BYTES, "spec and catalog files", text, len, err))
        return CCS_EINPUT;
    return CCS_OK;
}

ccs_spec *spec_load(const char *path, const ccs_catalog *cat, ccs_err *err)
{
    char *buf;
    size_t len;
    if (spec_read_file(path, &buf, &len, err))
        return NULL;
    ccs_spec *s = spec_parse(buf, len, path, cat, err);
    free(buf);
    return s;
}

void spec_free(ccs_spec *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->om && i < s->n_hw; i++)
        opmodel_free(s->om[i]);
    for (size_t i = 0; s->calib && i < s->n_hw; i++)
        free(s->calib[i]);
    for (int a = 0; a < SPEC_AX_N; a++)
        free(s->ax[a].v);
    free(s->om);
    free(s->calib);
    free(s->models);
    free(s->hw);
    free(s->stacks);
    expr_free(s->where);
    free(s->where_text);
    free(s->tpl);
    free(s->parts);
    free(s->path);
    free(s->text);
    free(s);
}

const char *spec_name(const ccs_spec *s)
{
    return s->name;
}
const char *spec_path(const ccs_spec *s)
{
    return s->path;
}
const char *spec_text(const ccs_spec *s, size_t *len)
{
    if (len)
        *len = s->text_len;
    return s->text;
}
const char *spec_sha256(const ccs_spec *s)
{
    return s->sha;
}
size_t spec_n_models(const ccs_spec *s)
{
    return s->n_models;
}
const ccs_model *spec_model(const ccs_spec *s, size_t i)
{
    return i < s->n_models ? &s->models[i] : NULL;
}
size_t spec_n_hw(const ccs_spec *s)
{
    return s->n_hw;
}
size_t spec_n_stacks(const ccs_spec *s)
{
    return s->n_stacks;
}

const ccs_stack *spec_stack(const ccs_spec *s, size_t i)
{
    return i < s->n_stacks ? &s->stacks[i] : NULL;
}

const ccs_hw *spec_hw(const ccs_spec *s, size_t i)
{
    return i < s->n_hw ? &s->hw[i] : NULL;
}
const struct ccs_opmodel *spec_opmodel(const ccs_spec *s, size_t i)
{
    return i < s->n_hw ? s->om[i] : NULL;
}
const char *spec_calibration(const ccs_spec *s, size_t i)
{
    return i < s->n_hw ? s->calib[i] : NULL;
}
const ccs_evolution *spec_evolution(const ccs_spec *s)
{
    return s->have_evo ? &s->evo : NULL;
}
size_t spec_axis_len(const ccs_spec *s, int axis)
{
    return s->ax[axis].n;
}
const double *spec_axis_values(const ccs_spec *s, int axis)
{
    return s->ax[axis].v;
}
int spec_axis_given(const ccs_spec *s, int axis)
{
    return s->ax[axis].given;
}
int spec_axis_zip(const ccs_spec *s, int axis)
{
    return s->ax[axis].zip;
}
const ccs_expr *spec_where(const ccs_spec *s)
{
    return s->where;
}
const char *spec_where_text(const ccs_spec *s)
{
    return s->where_text;
}
const spec_keep *spec_keep_rule(const ccs_spec *s)
{
    return s->has_keep ? &s->keep : NULL;
}

const char *spec_name_template(const ccs_spec *s)
{
    return s->tpl;
}
const spec_tpl_part *spec_name_parts(const ccs_spec *s, size_t *n)
{
    *n = s->n_parts;
    return s->parts;
}
