/* catalog.c - YAML catalogs of models, hardware and evolution rules.
 * Catalog units are the datasheets' (TFLOP/s, GiB, GB/s, microseconds);
 * entries are converted to SI here, once. */
#include "ccsweep/model/catalog.h"
#include "ccsweep/model/stack.h"
#include "ccsweep/util/buf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CCS_DATADIR
#define CCS_DATADIR "/usr/local/share/ccsweep"
#endif

struct ccs_catalog {
    ccs_model *models;
    size_t n_models, cap_models;
    ccs_hw *hw;
    size_t n_hw, cap_hw;
    ccs_evolution *evo;
    size_t n_evo, cap_evo;
    ccs_stack *stacks;
    size_t n_stacks, cap_stacks;
    /* While an overlay loads: entries below these indices came from earlier
     * layers and are replaced by name; 0 otherwise (a repeated name is an
     * error). */
    size_t below_models, below_hw, below_evo, below_stacks;
    ccs_names *idx[4]; /* name -> position, per kind: linear-time loading */
};

ccs_catalog *catalog_new(void)
{
    return calloc(1, sizeof(ccs_catalog));
}

void catalog_free(ccs_catalog *c)
{
    if (!c)
        return;
    free(c->models);
    free(c->hw);
    free(c->evo);
    free(c->stacks);
    for (int k = 0; k < 4; k++)
        ccs_names_free(c->idx[k]);
    free(c);
}

/* ---- field readers ---------------------------------------------------- */

/* Ranges of the hardware and evolution figures, in catalog units: wide
 * enough for any device of the coming decades, narrow enough that every
 * product the projection forms stays finite (a mem_gib of 1e308 once gave
 * infinite capacity). Stated in sweeps/README.md; model sizes are bounded by
 * model_validate (CCS_MAX_* in util/common.h). */
#define CAT_MAX_TFLOPS 1e6  /* peak_tflops.*, TFLOP/s */
#define CAT_MAX_GIB 1048576 /* mem_gib: 1 PiB */
#define CAT_MAX_GBPS 1e7    /* mem_gbps, intra_gbps, inter_gbps: 10 PB/s */
#define CAT_MAX_LAT_US 1e6  /* latencies: 1 s */
/* devices_per_node, compute_units, scaleup_domain, *_ref_k */
#define CAT_MAX_COUNT CCS_MAX_DEVICES
#define CAT_MAX_OVERSUB CCS_MAX_FACTOR
#define CAT_MIN_EVO 1e-3 /* evolution factors per generation, in [1e-3, 1e3]: */
#define CAT_MAX_EVO 1e3  /* over 64 generations still finite and non-zero */
#define CAT_MAX_YEARS 100

/* Read an integer field; required fields must be present. Values must be in
 * [min, max]. */
static int get_int(const ydoc *d, const ynode *map, const char *key, int required, int64_t min,
                   int64_t max, int32_t *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, key);
    if (!v) {
        if (!required)
            return CCS_OK;
        ydoc_error(d, map, err, "missing field '%s'", key);
        return CCS_EINPUT;
    }
    int64_t x;
    if (ynode_int(d, v, key, &x, err) != CCS_OK)
        return CCS_EINPUT;
    if (x < min || x > INT32_MAX) {
        ydoc_error(d, v, err, "field '%s': must be %s integer (got %lld)", key,
                   min > 0 ? "a positive" : "a non-negative", (long long)x);
        return CCS_EINPUT;
    }
    if (x > max) {
        ydoc_error(d, v, err, "field '%s': must be in [%lld, %lld] (got %lld)", key, (long long)min,
                   (long long)max, (long long)x);
        return CCS_EINPUT;
    }
    *out = (int32_t)x;
    return CCS_OK;
}

/* Read a positive number at most max (or in (0, 1] when frac), scaled by
 * `unit`. */
static int get_num(const ydoc *d, const ynode *map, const char *key, int required, int frac,
                   double max, double unit, double *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, key);
    if (!v) {
        if (!required)
            return CCS_OK;
        ydoc_error(d, map, err, "missing field '%s'", key);
        return CCS_EINPUT;
    }
    double x;
    if (ynode_double(d, v, key, &x, err) != CCS_OK)
        return CCS_EINPUT;
    if (frac ? !(x > 0 && x <= 1) : !(x > 0)) {
        ydoc_error(d, v, err, "field '%s': must be %s (got %g)", key,
                   frac ? "in (0, 1]" : "a positive number", x);
        return CCS_EINPUT;
    }
    if (!frac && x > max) {
        ydoc_error(d, v, err, "field '%s': must be in (0, %.10g] (got %g)", key, max, x);
        return CCS_EINPUT;
    }
    *out = x * unit;
    return CCS_OK;
}

/* Read a number in [0, max], scaled by `unit`. */
static int get_nonneg(const ydoc *d, const ynode *map, const char *key, double max, double unit,
                      double *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, key);
    if (!v) {
        ydoc_error(d, map, err, "missing field '%s'", key);
        return CCS_EINPUT;
    }
    double x;
    if (ynode_double(d, v, key, &x, err) != CCS_OK)
        return CCS_EINPUT;
    if (x < 0) {
        ydoc_error(d, v, err, "field '%s': must not be negative (got %g)", key, x);
        return CCS_EINPUT;
    }
    if (x > max) {
        ydoc_error(d, v, err, "field '%s': must be in [0, %.10g] (got %g)", key, max, x);
        return CCS_EINPUT;
    }
    *out = x * unit;
    return CCS_OK;
}

/* oversubscription: optional, in [1, CAT_MAX_OVERSUB] (hw_validate also
 * refuses below 1, for entries built in code). */
static int get_oversub(const ydoc *d, const ynode *map, double *out, ccs_err *err)
{
    double x = *out;
    if (get_num(d, map, "oversubscription", 0, 0, HUGE_VAL, 1, &x, err))
        return CCS_EINPUT;
    if (!(x >= 1 && x <= CAT_MAX_OVERSUB)) {
        ydoc_error(d, ynode_get(d, map, "oversubscription"), err,
                   "field 'oversubscription': must be in [1, %.10g] (got %g)", CAT_MAX_OVERSUB, x);
        return CCS_EINPUT;
    }
    *out = x;
    return CCS_OK;
}

/* An evolution factor per generation: positive, in [CAT_MIN_EVO, CAT_MAX_EVO]. */
static int get_factor(const ydoc *d, const ynode *map, const char *key, int required, double *out,
                      ccs_err *err)
{
    double x = *out;
    if (get_num(d, map, key, required, 0, HUGE_VAL, 1, &x, err))
        return CCS_EINPUT;
    if (!(x >= CAT_MIN_EVO && x <= CAT_MAX_EVO)) {
        ydoc_error(d, ynode_get(d, map, key), err, "field '%s': must be in [%g, %g] (got %g)", key,
                   CAT_MIN_EVO, CAT_MAX_EVO, x);
        return CCS_EINPUT;
    }
    *out = x;
    return CCS_OK;
}

/* Optional fraction in [0, 1). */
static int get_frac0(const ydoc *d, const ynode *map, const char *key, double *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, key);
    if (!v)
        return CCS_OK;
    double x;
    if (ynode_double(d, v, key, &x, err) != CCS_OK)
        return CCS_EINPUT;
    if (!(x >= 0 && x < 1)) {
        ydoc_error(d, v, err, "field '%s': must be in [0, 1) (got %g)", key, x);
        return CCS_EINPUT;
    }
    *out = x;
    return CCS_OK;
}

/* Optional number in [lo, hi], scaled by `unit`; untouched when absent. */
static int get_range(const ydoc *d, const ynode *map, const char *key, double lo, double hi,
                     double unit, double *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, key);
    if (!v)
        return CCS_OK;
    double x;
    if (ynode_double(d, v, key, &x, err) != CCS_OK)
        return CCS_EINPUT;
    if (!(x >= lo && x <= hi)) {
        ydoc_error(d, v, err, "field '%s': must be in [%g, %g] (got %g)", key, lo, hi, x);
        return CCS_EINPUT;
    }
    *out = x * unit;
    return CCS_OK;
}

static int get_bool(const ydoc *d, const ynode *map, const char *key, int8_t *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, key);
    if (!v)
        return CCS_OK;
    int b;
    if (ynode_bool(d, v, key, &b, err) != CCS_OK)
        return CCS_EINPUT;
    *out = (int8_t)b;
    return CCS_OK;
}

static int get_name(const ydoc *d, const ynode *map, char *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, "name");
    if (!v) {
        ydoc_error(d, map, err, "missing field 'name'");
        return CCS_EINPUT;
    }
    const char *s;
    if (ynode_string(d, v, "name", &s, err) != CCS_OK)
        return CCS_EINPUT;
    if (!*s || strlen(s) >= CCS_NAME_MAX) {
        ydoc_error(d, v, err, "field 'name': must be 1 to %d characters", CCS_NAME_MAX - 1);
        return CCS_EINPUT;
    }
    if (!ccs_name_ok(s)) {
        ydoc_error(d, v, err, "field 'name': '%s' may hold only letters, digits, '-', '_', '.'", s);
        return CCS_EINPUT;
    }
    ccs_strlcpy(out, s, CCS_NAME_MAX);
    return CCS_OK;
}

/* An optional field naming one of names[0..n) (NULL entries are not
 * allowed values): *out becomes its index; untouched when absent. */
static int get_choice(const ydoc *d, const ynode *map, const char *key, const char *const *names,
                      int n, int8_t *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, key);
    if (!v)
        return CCS_OK;
    const char *s;
    if (ynode_string(d, v, key, &s, err) != CCS_OK)
        return CCS_EINPUT;
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        if (!names[i])
            continue;
        if (strcmp(s, names[i]) == 0) {
            *out = (int8_t)i;
            return CCS_OK;
        }
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s'%s'", l ? ", " : "", names[i]);
    }
    ydoc_error(d, v, err, "field '%s': unknown value '%s' (expected one of %s)", key, s, list);
    return CCS_EINPUT;
}

static int expect_map(const ydoc *d, const ynode *n, const char *what, ccs_err *err)
{
    if (ynode_kind(n) != YN_MAP) {
        ydoc_error(d, n, err, "%s: expected a mapping of fields", what);
        return CCS_EINPUT;
    }
    return CCS_OK;
}

/* ---- entries -------------------------------------------------------------- */

static const char *const model_keys[] = {
    "name",        "layers",       "hidden",      "heads",     "kv_heads",    "ffn",
    "vocab",       "max_pos",      "gated",       "bias",      "tied",        "seq",
    "gbs",         "source",       "description", "experts",   "top_k",       "shared_experts",
    "moe_ffn",     "dense_layers", "route_nodes", "attention", "q_lora_rank", "kv_lora_rank",
    "qk_nope_dim", "qk_rope_dim",  "v_head_dim",  "head_dim",  NULL};

/* The attention kind: 'mha' (multi-head, grouped-query with kv_heads; the
 * default) or 'mla' (multi-head latent attention), whose shape fields are
 * required with it and refused without it. */
static int parse_attention(const ydoc *d, const ynode *map, ccs_model *out, ccs_err *err)
{
    ynode *v = ynode_get(d, map, "attention");
    int mla = 0;
    if (v) {
        const char *s;
        if (ynode_string(d, v, "attention", &s, err) != CCS_OK)
            return CCS_EINPUT;
        mla = !strcmp(s, "mla");
        if (!mla && strcmp(s, "mha")) {
            ydoc_error(d, v, err, "field 'attention': expected mha or mla (got '%s')", s);
            return CCS_EINPUT;
        }
    }
    /* q_lora_rank may be left out (queries projected directly), and the
     * rotary part may be 0; the others are required */
    const struct {
        const char *key;
        int32_t *out;
        int required;
    } f[] = {{"kv_lora_rank", &out->kv_lora_rank, 1},
             {"qk_nope_dim", &out->qk_nope_dim, 1},
             {"qk_rope_dim", &out->qk_rope_dim, 1},
             {"v_head_dim", &out->v_head_dim, 1},
             {"q_lora_rank", &out->q_lora_rank, 0}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        ynode *k = ynode_get(d, map, f[i].key);
        if (k && !mla) {
            ydoc_error(d, k, err, "field '%s': a latent-attention shape, needs attention: mla",
                       f[i].key);
            return CCS_EINPUT;
        }
        int req = mla && f[i].required;
        int64_t min = req && f[i].out != &out->qk_rope_dim ? 1 : 0;
        if (get_int(d, map, f[i].key, req, min, INT32_MAX, f[i].out, err))
            return CCS_EINPUT;
    }
    return CCS_OK;
}

/* A model_validate message naming a field ("field 'top_k' ...") is reported
 * at that field's line when the entry gives it, else at the entry's. */
static const ynode *named_field(const ydoc *d, const ynode *map, const char *msg)
{
    const char *f = strstr(msg, "field '");
    if (!f)
        return map;
    f += 7;
    const char *end = strchr(f, '\'');
    char key[32];
    if (!end || (size_t)(end - f) >= sizeof key)
        return map;
    memcpy(key, f, (size_t)(end - f));
    key[end - f] = '\0';
    const ynode *v = ynode_get(d, map, key);
    return v ? v : map;
}

int catalog_parse_model(const ydoc *d, const ynode *map, ccs_model *out, ccs_err *err)
{
    memset(out, 0, sizeof *out);
    out->bias = 1;
    out->tied = 1;
    if (expect_map(d, map, "model entry", err) ||
        ydoc_check_keys(d, map, "a model entry", model_keys, err) ||
        get_name(d, map, out->name, err) ||
        get_int(d, map, "layers", 1, 1, INT32_MAX, &out->layers, err) ||
        get_int(d, map, "hidden", 1, 1, INT32_MAX, &out->hidden, err) ||
        get_int(d, map, "heads", 1, 1, INT32_MAX, &out->heads, err) ||
        get_int(d, map, "kv_heads", 0, 1, INT32_MAX, &out->kv_heads, err) ||
        get_int(d, map, "head_dim", 0, 1, INT32_MAX, &out->head_dim, err) ||
        get_int(d, map, "ffn", 0, 1, INT32_MAX, &out->ffn, err) ||
        get_int(d, map, "vocab", 1, 1, INT32_MAX, &out->vocab, err) ||
        get_int(d, map, "max_pos", 0, 0, INT32_MAX, &out->max_pos, err) ||
        get_int(d, map, "seq", 0, 0, INT32_MAX, &out->seq, err) ||
        get_int(d, map, "gbs", 0, 0, INT32_MAX, &out->gbs, err) ||
        get_bool(d, map, "gated", &out->gated, err) || get_bool(d, map, "bias", &out->bias, err) ||
        get_bool(d, map, "tied", &out->tied, err) ||
        get_int(d, map, "experts", 0, 0, INT32_MAX, &out->experts, err) ||
        get_int(d, map, "top_k", 0, 1, INT32_MAX, &out->top_k, err) ||
        get_int(d, map, "shared_experts", 0, 0, INT32_MAX, &out->shared_experts, err) ||
        get_int(d, map, "moe_ffn", 0, 1, INT32_MAX, &out->moe_ffn, err) ||
        get_int(d, map, "dense_layers", 0, 0, INT32_MAX, &out->dense_layers, err) ||
        get_int(d, map, "route_nodes", 0, 1, INT32_MAX, &out->route_nodes, err) ||
        parse_attention(d, map, out, err))
        return CCS_EINPUT;
    model_fill_defaults(out);
    ccs_err inner;
    if (model_validate(out, &inner) != CCS_OK) {
        ydoc_error(d, named_field(d, map, inner.msg), err, "%s", inner.msg);
        return CCS_EINPUT;
    }
    return CCS_OK;
}

/* The end of an entry with a 'sources' field (a mapping of field name to
 * citation) and a validity check (valid: its CCS_* result, inner its
 * message): CCS_OK, or CCS_EINPUT with err at the entry, sources first. */
static int entry_done(const ydoc *d, const ynode *map, int valid, const ccs_err *inner,
                      ccs_err *err)
{
    ynode *src = ynode_get(d, map, "sources");
    if (src && ynode_kind(src) != YN_MAP) {
        ydoc_error(d, src, err, "field 'sources': expected a mapping of field name to citation");
        return CCS_EINPUT;
    }
    if (valid != CCS_OK) {
        ydoc_error(d, map, err, "%s", inner->msg);
        return CCS_EINPUT;
    }
    return CCS_OK;
}

static const char *const hw_keys[] = {"name",
                                      "description",
                                      "peak_tflops",
                                      "mem_gib",
                                      "mem_gbps",
                                      "devices_per_node",
                                      "compute_units",
                                      "gemm_tile",
                                      "intra_gbps",
                                      "inter_gbps",
                                      "intra_latency_us",
                                      "inter_latency_us",
                                      "kernel_latency_us",
                                      "gemm_efficiency",
                                      "clock_ratio",
                                      "mem_efficiency",
                                      "intra_efficiency",
                                      "inter_efficiency",
                                      "variability",
                                      "sources",
                                      "gemm_ref_k",
                                      "gemm_efficiency_fp8",
                                      "gemm_fp8_ref_k",
                                      "gemm_efficiency_fp4",
                                      "gemm_fp4_ref_k",
                                      "scaleup_domain",
                                      "nvls_efficiency",
                                      "oversubscription",
                                      "attention_ref",
                                      "allreduce_us",
                                      NULL};

static int parse_peaks(const ydoc *d, const ynode *map, ccs_hw *out, ccs_err *err)
{
    ynode *pk = ynode_get(d, map, "peak_tflops");
    if (!pk) {
        ydoc_error(d, map, err, "missing field 'peak_tflops'");
        return CCS_EINPUT;
    }
    if (ynode_kind(pk) != YN_MAP || ynode_len(pk) == 0) {
        ydoc_error(d, pk, err,
                   "field 'peak_tflops': expected a mapping of dtype to TFLOP/s, e.g. {bf16: 312}");
        return CCS_EINPUT;
    }
    for (size_t i = 0; i < ynode_len(pk); i++) {
        ynode *k = ynode_key(d, pk, i);
        /* fp4 (NVFP4) is no training dtype: serving reads it (hw->peak_fp4) */
        int fp4 = ynode_scalar(k) && !strcmp(ynode_scalar(k), "fp4");
        int dt = fp4 ? CCS_FP8 : dtype_parse(ynode_scalar(k));
        if (dt < 0) {
            ydoc_error(d, k, err,
                       "field 'peak_tflops': unknown dtype '%s' (expected fp32, tf32, bf16, fp16, "
                       "fp8, fp4)",
                       ynode_scalar(k) ? ynode_scalar(k) : "?");
            return CCS_EINPUT;
        }
        char field[64];
        snprintf(field, sizeof field, "peak_tflops.%s", fp4 ? "fp4" : dtype_name(dt));
        ynode *v = ynode_value(d, pk, i);
        double x;
        if (ynode_double(d, v, field, &x, err) != CCS_OK)
            return CCS_EINPUT;
        if (!(x > 0)) {
            ydoc_error(d, v, err, "field '%s': must be a positive number (got %g)", field, x);
            return CCS_EINPUT;
        }
        if (x > CAT_MAX_TFLOPS) {
            ydoc_error(d, v, err, "field '%s': must be in (0, %.10g] (got %g)", field,
                       CAT_MAX_TFLOPS, x);
            return CCS_EINPUT;
        }
        if (fp4)
            out->peak_fp4 = x * 1e12;
        else
            out->peak_flops[dt] = x * 1e12;
    }
    return CCS_OK;
}

static int parse_tile(const ydoc *d, const ynode *map, ccs_hw *out, ccs_err *err)
{
    ynode *t = ynode_get(d, map, "gemm_tile");
    if (!t) {
        ydoc_error(d, map, err, "missing field 'gemm_tile'");
        return CCS_EINPUT;
    }
    int64_t v[2];
    if (ynode_kind(t) != YN_SEQ || ynode_len(t) != 2) {
        ydoc_error(d, t, err, "field 'gemm_tile': expected [m, n], two positive integers");
        return CCS_EINPUT;
    }
    for (int i = 0; i < 2; i++) {
        ynode *it = ynode_item(d, t, (size_t)i);
        if (ynode_int(d, it, "gemm_tile", &v[i], err) != CCS_OK)
            return CCS_EINPUT;
        if (v[i] <= 0 || v[i] > 4096) {
            ydoc_error(d, it, err,
                       "field 'gemm_tile': must be positive and at most 4096 (got %lld)",
                       (long long)v[i]);
            return CCS_EINPUT;
        }
    }
    out->tile_m = (int32_t)v[0];
    out->tile_n = (int32_t)v[1];
    return CCS_OK;
}

/* allreduce_us: {ranks: [[MiB, us], ...], ...}, measured NCCL all-reduce
 * times inside the scale-up domain, sizes increasing, times not falling */
static int parse_allreduce(const ydoc *d, const ynode *map, ccs_hw *out, ccs_err *err)
{
    static const char *const what =
        "field 'allreduce_us': expected a mapping of group size to a list of [MiB, us] pairs, "
        "e.g. {8: [[1, 25], [16, 121]]}";
    ynode *a = ynode_get(d, map, "allreduce_us");
    if (!a)
        return CCS_OK;
    if (ynode_kind(a) != YN_MAP || ynode_len(a) == 0 || ynode_len(a) > CCS_AR_TABLES) {
        ydoc_error(d, a, err, "%s, at most %d group sizes", what, CCS_AR_TABLES);
        return CCS_EINPUT;
    }
    for (size_t i = 0; i < ynode_len(a); i++) {
        ccs_ar_table *tab = &out->ar[i];
        ynode *k = ynode_key(d, a, i), *v = ynode_value(d, a, i);
        int64_t ranks;
        if (ynode_int(d, k, "allreduce_us", &ranks, err) != CCS_OK)
            return CCS_EINPUT;
        if (ranks < 2 || ranks > CAT_MAX_COUNT) {
            ydoc_error(d, k, err, "field 'allreduce_us': group size must be in [2, %d] (got %lld)",
                       (int)CAT_MAX_COUNT, (long long)ranks);
            return CCS_EINPUT;
        }
        if (ynode_kind(v) != YN_SEQ || ynode_len(v) < 2 || ynode_len(v) > CCS_AR_POINTS) {
            ydoc_error(d, v, err, "%s, 2 to %d pairs per group size", what, CCS_AR_POINTS);
            return CCS_EINPUT;
        }
        tab->ranks = (int32_t)ranks;
        tab->n = (int32_t)ynode_len(v);
        for (size_t j = 0; j < ynode_len(v); j++) {
            ynode *pt = ynode_item(d, v, j);
            double x[2];
            if (ynode_kind(pt) != YN_SEQ || ynode_len(pt) != 2) {
                ydoc_error(d, pt, err, "%s", what);
                return CCS_EINPUT;
            }
            for (int c = 0; c < 2; c++)
                if (ynode_double(d, ynode_item(d, pt, (size_t)c), "allreduce_us", &x[c], err))
                    return CCS_EINPUT;
            if (!(x[0] > 0 && x[1] > 0) || (j > 0 && !(x[0] * 1048576.0 > tab->bytes[j - 1])) ||
                (j > 0 && x[1] * 1e-6 < tab->t[j - 1])) {
                ydoc_error(d, pt, err,
                           "field 'allreduce_us': sizes must be positive and increasing, times "
                           "positive and not falling (got [%g, %g])",
                           x[0], x[1]);
                return CCS_EINPUT;
            }
            tab->bytes[j] = x[0] * 1048576.0;
            tab->t[j] = x[1] * 1e-6;
        }
        for (size_t j = 0; j < i; j++)
            if (out->ar[j].ranks == tab->ranks) {
                ydoc_error(d, k, err, "field 'allreduce_us': group size %lld given twice",
                           (long long)ranks);
                return CCS_EINPUT;
            }
    }
    return CCS_OK;
}

/* hw->attn_ref (CCS_ATTN_REF_*): the benchmarked devices of cost/attention.c */
static const char *const attn_refs[] = {NULL, "a100", "h100"};

int catalog_parse_hw(const ydoc *d, const ynode *map, ccs_hw *out, ccs_err *err)
{
    memset(out, 0, sizeof *out);
    out->clock_ratio = 1.0;
    out->gemm_ref_k = CCS_GEMM_REF_K_DEFAULT;
    out->gemm_fp8_ref_k = CCS_GEMM_REF_K_DEFAULT;
    out->gemm_fp4_ref_k = CCS_GEMM_REF_K_DEFAULT;
    out->oversub = 1.0;
    if (expect_map(d, map, "hardware entry", err) ||
        ydoc_check_keys(d, map, "a hardware entry", hw_keys, err) ||
        get_name(d, map, out->name, err) || parse_peaks(d, map, out, err) ||
        get_num(d, map, "mem_gib", 1, 0, CAT_MAX_GIB, 1073741824.0, &out->mem_cap, err) ||
        get_num(d, map, "mem_gbps", 1, 0, CAT_MAX_GBPS, 1e9, &out->mem_bw, err) ||
        get_int(d, map, "devices_per_node", 1, 1, CAT_MAX_COUNT, &out->devices_per_node, err) ||
        get_int(d, map, "compute_units", 1, 1, CAT_MAX_COUNT, &out->compute_units, err) ||
        parse_tile(d, map, out, err) ||
        get_int(d, map, "gemm_ref_k", 0, 1, CAT_MAX_COUNT, &out->gemm_ref_k, err) ||
        get_int(d, map, "gemm_fp8_ref_k", 0, 1, CAT_MAX_COUNT, &out->gemm_fp8_ref_k, err) ||
        get_num(d, map, "gemm_efficiency_fp8", 0, 1, 1, 1, &out->gemm_eff_fp8, err) ||
        get_int(d, map, "gemm_fp4_ref_k", 0, 1, CAT_MAX_COUNT, &out->gemm_fp4_ref_k, err) ||
        get_num(d, map, "gemm_efficiency_fp4", 0, 1, 1, 1, &out->gemm_eff_fp4, err) ||
        get_int(d, map, "scaleup_domain", 0, 1, CAT_MAX_COUNT, &out->scaleup, err) ||
        get_num(d, map, "nvls_efficiency", 0, 1, 1, 1, &out->nvls_eff, err) ||
        get_oversub(d, map, &out->oversub, err) ||
        get_num(d, map, "intra_gbps", 1, 0, CAT_MAX_GBPS, 1e9, &out->intra_bw, err) ||
        get_num(d, map, "inter_gbps", 1, 0, CAT_MAX_GBPS, 1e9, &out->inter_bw, err) ||
        get_nonneg(d, map, "intra_latency_us", CAT_MAX_LAT_US, 1e-6, &out->intra_lat, err) ||
        get_nonneg(d, map, "inter_latency_us", CAT_MAX_LAT_US, 1e-6, &out->inter_lat, err) ||
        get_nonneg(d, map, "kernel_latency_us", CAT_MAX_LAT_US, 1e-6, &out->kernel_lat, err) ||
        get_num(d, map, "gemm_efficiency", 1, 1, 1, 1, &out->gemm_eff, err) ||
        get_num(d, map, "clock_ratio", 0, 1, 1, 1, &out->clock_ratio, err) ||
        get_num(d, map, "mem_efficiency", 1, 1, 1, 1, &out->mem_eff, err) ||
        get_num(d, map, "intra_efficiency", 1, 1, 1, 1, &out->intra_eff, err) ||
        get_num(d, map, "inter_efficiency", 1, 1, 1, 1, &out->inter_eff, err) ||
        get_frac0(d, map, "variability", &out->variability, err) ||
        get_choice(d, map, "attention_ref", attn_refs, 3, &out->attn_ref, err) ||
        parse_allreduce(d, map, out, err))
        return CCS_EINPUT;
    out->ar_ref_intra_bw = out->intra_bw;
    out->ar_ref_intra_lat = out->intra_lat;
    ccs_err inner;
    int valid = hw_validate(out, &inner);
    return entry_done(d, map, valid, &inner, err);
}

static const char *const evo_keys[] = {"name",    "years",       "flops",    "mem_bw",
                                       "mem_cap", "intra_bw",    "inter_bw", "latency",
                                       "source",  "description", NULL};

int catalog_parse_evolution(const ydoc *d, const ynode *map, ccs_evolution *out, ccs_err *err)
{
    memset(out, 0, sizeof *out);
    out->latency = 1.0;
    out->years = 1.0;
    if (expect_map(d, map, "evolution entry", err) ||
        ydoc_check_keys(d, map, "an evolution entry", evo_keys, err) ||
        get_name(d, map, out->name, err) ||
        get_num(d, map, "years", 0, 0, CAT_MAX_YEARS, 1, &out->years, err) ||
        get_factor(d, map, "flops", 1, &out->flops, err) ||
        get_factor(d, map, "mem_bw", 1, &out->mem_bw, err) ||
        get_factor(d, map, "mem_cap", 1, &out->mem_cap, err) ||
        get_factor(d, map, "intra_bw", 1, &out->intra_bw, err) ||
        get_factor(d, map, "inter_bw", 1, &out->inter_bw, err) ||
        get_factor(d, map, "latency", 0, &out->latency, err))
        return CCS_EINPUT;
    return CCS_OK;
}

static const char *const stack_keys[] = {"name",
                                         "description",
                                         "attention_kernel",
                                         "grad_dtype",
                                         "eltwise_factor",
                                         "op_overhead_us",
                                         "layer_overhead_us",
                                         "iter_overhead_ms",
                                         "comm_units",
                                         "tp_overlap_share",
                                         "zero3_units",
                                         "dropout",
                                         "loss_kernel",
                                         "logit_metrics",
                                         "bias_grad",
                                         "elementwise",
                                         "selective",
                                         "sources",
                                         NULL};

/* gradient types a stack may keep (ccs_dtype order) */
static const char *const grad_dtypes[] = {"fp32", NULL, "bf16", "fp16"};

int catalog_parse_stack(const ydoc *d, const ynode *map, ccs_stack *out, ccs_err *err)
{
    stack_default(out);
    memset(out->name, 0, sizeof out->name); /* the bytes are hashed whole (run_inputs) */
    if (expect_map(d, map, "stack entry", err) ||
        ydoc_check_keys(d, map, "a stack entry", stack_keys, err) ||
        get_name(d, map, out->name, err) ||
        get_choice(d, map, "attention_kernel", ccs_attn_kernel_names, CCS_ATTN_N, &out->attn_kernel,
                   err) ||
        get_choice(d, map, "grad_dtype", grad_dtypes, 4, &out->grad_dtype, err) ||
        get_range(d, map, "eltwise_factor", 1, 100, 1, &out->eltwise_factor, err) ||
        get_range(d, map, "op_overhead_us", 0, 1e6, 1e-6, &out->op_overhead, err) ||
        get_range(d, map, "layer_overhead_us", 0, 1e6, 1e-6, &out->layer_overhead, err) ||
        get_range(d, map, "iter_overhead_ms", 0, 1e3, 1e-3, &out->iter_overhead, err) ||
        get_range(d, map, "comm_units", 0, 4096, 1, &out->comm_units, err) ||
        get_range(d, map, "tp_overlap_share", 0, 1, 1, &out->tp_overlap_share, err) ||
        get_choice(d, map, "loss_kernel", ccs_loss_kernel_names, 2, &out->fused_loss, err) ||
        get_choice(d, map, "bias_grad", ccs_bias_grad_names, 2, &out->bias_grad_sep, err) ||
        get_choice(d, map, "elementwise", ccs_elementwise_names, 2, &out->eager, err) ||
        get_choice(d, map, "selective", ccs_selective_names, 2, &out->sac_op, err))
        return CCS_EINPUT;
    int32_t metrics = 0, units = (int32_t)out->zero3_units;
    if (get_int(d, map, "logit_metrics", 0, 0, CCS_STACK_MAX_METRICS, &metrics, err) ||
        get_int(d, map, "zero3_units", 0, 0, 1024, &units, err)) /* whole blocks */
        return CCS_EINPUT;
    out->zero3_units = units;
    out->logit_metrics = (int8_t)metrics;
    int8_t dropout = 1;
    if (get_bool(d, map, "dropout", &dropout, err))
        return CCS_EINPUT;
    out->no_dropout = (int8_t)!dropout;
    ccs_err inner;
    int valid = stack_validate(out, &inner);
    return entry_done(d, map, valid, &inner, err);
}

/* ---- collections ---------------------------------------------------------- */

enum { K_MODEL, K_HW, K_EVO, K_STACK, K_N };

/* Add entry e (elem bytes, named name) of kind k: an overlay's entry replaces
 * the same-named one of an earlier layer in place; otherwise a repeated name
 * is an error and a new one is appended and indexed. */
static int add_entry(ccs_catalog *c, int k, const void *e, size_t elem, const char *name,
                     ccs_err *err)
{
    static const char *const what[] = {"model", "hardware", "evolution", "stack"};
    void **arr = k == K_MODEL ? (void **)&c->models
                 : k == K_HW  ? (void **)&c->hw
                 : k == K_EVO ? (void **)&c->evo
                              : (void **)&c->stacks;
    size_t *n = k == K_MODEL ? &c->n_models
                : k == K_HW  ? &c->n_hw
                : k == K_EVO ? &c->n_evo
                             : &c->n_stacks;
    size_t *cap = k == K_MODEL ? &c->cap_models
                  : k == K_HW  ? &c->cap_hw
                  : k == K_EVO ? &c->cap_evo
                               : &c->cap_stacks;
    size_t below = k == K_MODEL ? c->below_models
                   : k == K_HW  ? c->below_hw
                   : k == K_EVO ? c->below_evo
                                : c->below_stacks;
    if (!c->idx[k] && !(c->idx[k] = ccs_names_new())) {
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    long old = ccs_names_find(c->idx[k], name);
    if (old >= 0 && (size_t)old < below) {
        memcpy((char *)*arr + (size_t)old * elem, e, elem); /* an overlay redefines it */
        return CCS_OK;
    }
    if (old >= 0) {
        ccs_err_set(err, "%s '%s' is defined twice", what[k], name);
        return CCS_EINPUT;
    }
    if (ccs_grow(arr, cap, *n + 1, elem) || ccs_names_add(c->idx[k], name, (long)*n)) {
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    memcpy((char *)*arr + *n * elem, e, elem);
    (*n)++;
    return CCS_OK;
}

int catalog_add_model(ccs_catalog *c, const ccs_model *m, ccs_err *err)
{
    return add_entry(c, K_MODEL, m, sizeof *m, m->name, err);
}

int catalog_add_hw(ccs_catalog *c, const ccs_hw *hw, ccs_err *err)
{
    return add_entry(c, K_HW, hw, sizeof *hw, hw->name, err);
}

int catalog_add_evolution(ccs_catalog *c, const ccs_evolution *ev, ccs_err *err)
{
    return add_entry(c, K_EVO, ev, sizeof *ev, ev->name, err);
}

int catalog_add_stack(ccs_catalog *c, const ccs_stack *st, ccs_err *err)
{
    return add_entry(c, K_STACK, st, sizeof *st, st->name, err);
}

static const char *const tops[K_N] = {"models", "hardware", "evolutions", "stacks"};

/* Load a file whose root maps some of the keys allowed by mask (bit k: tops[k])
 * to lists of entries, and add each entry. required: bits that must be present. */
static int load_file(ccs_catalog *c, const char *path, int mask, int required, ccs_err *err)
{
    ydoc *d = ydoc_load_file(path, err);
    if (!d)
        return CCS_EINPUT;
    int rc = CCS_OK;
    ynode *root = ydoc_root(d);
    const char *allowed[K_N + 1];
    int na = 0;
    for (int k = 0; k < K_N; k++)
        if (mask & (1 << k))
            allowed[na++] = tops[k];
    allowed[na] = NULL;
    if (ynode_kind(root) != YN_MAP) {
        ydoc_error(d, root, err, "expected a mapping with the key%s '%s'%s%s%s%s",
                   na > 1 ? "s" : "", allowed[0], na > 1 ? ", '" : "", na > 1 ? allowed[1] : "",
                   na > 1 ? "' or '" : "", na > 2 ? allowed[2] : "");
        rc = CCS_EINPUT;
    } else {
        rc = ydoc_check_keys(d, root, "the catalog's top level", allowed, err);
    }
    int found = 0;
    for (int kind = 0; rc == CCS_OK && kind < K_N; kind++) {
        if (!(mask & (1 << kind)))
            continue;
        const char *top = tops[kind];
        ynode *list = ynode_get(d, root, top);
        if (!list && !(required & (1 << kind)))
            continue;
        found = 1;
        if (ynode_kind(list) != YN_SEQ || ynode_len(list) == 0) {
            ydoc_error(d, list ? list : root, err,
                       "field '%s': expected a non-empty list of entries", top);
            rc = CCS_EINPUT;
        }
        for (size_t i = 0; rc == CCS_OK && i < ynode_len(list); i++) {
            ynode *e = ynode_item(d, list, i);
            ccs_err inner;
            if (kind == K_MODEL) {
                ccs_model m;
                rc = catalog_parse_model(d, e, &m, err);
                if (rc == CCS_OK && (rc = catalog_add_model(c, &m, &inner)) != CCS_OK)
                    ydoc_error(d, e, err, "%s", inner.msg);
            } else if (kind == K_HW) {
                ccs_hw hw;
                rc = catalog_parse_hw(d, e, &hw, err);
                if (rc == CCS_OK && (rc = catalog_add_hw(c, &hw, &inner)) != CCS_OK)
                    ydoc_error(d, e, err, "%s", inner.msg);
            } else if (kind == K_EVO) {
                ccs_evolution ev;
                rc = catalog_parse_evolution(d, e, &ev, err);
                if (rc == CCS_OK && (rc = catalog_add_evolution(c, &ev, &inner)) != CCS_OK)
                    ydoc_error(d, e, err, "%s", inner.msg);
            } else {
                ccs_stack st;
                rc = catalog_parse_stack(d, e, &st, err);
                if (rc == CCS_OK && (rc = catalog_add_stack(c, &st, &inner)) != CCS_OK)
                    ydoc_error(d, e, err, "%s", inner.msg);
            }
        }
    }
    if (rc == CCS_OK && !found) {
        ydoc_error(d, root, err,
                   "no catalog entries: expected the key 'models', 'hardware', "
                   "'evolutions' or 'stacks'");
        rc = CCS_EINPUT;
    }
    ydoc_free(d);
    return rc;
}

int catalog_load_models(ccs_catalog *c, const char *path, ccs_err *err)
{
    return load_file(c, path, 1 << K_MODEL, 1 << K_MODEL, err);
}

int catalog_load_hardware(ccs_catalog *c, const char *path, ccs_err *err)
{
    return load_file(c, path, 1 << K_HW, 1 << K_HW, err);
}

int catalog_load_evolutions(ccs_catalog *c, const char *path, ccs_err *err)
{
    return load_file(c, path, 1 << K_EVO, 1 << K_EVO, err);
}

int catalog_load_stacks(ccs_catalog *c, const char *path, ccs_err *err)
{
    return load_file(c, path, 1 << K_STACK, 1 << K_STACK, err);
}

static const char *const files[K_N] = {"models.yaml", "hardware.yaml", "evolutions.yaml",
                                       "stacks.yaml"};

int catalog_load_dir(ccs_catalog *c, const char *dir, ccs_err *err)
{
    for (int k = 0; k < K_N; k++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, files[k]) >= (int)sizeof path) {
            ccs_err_set(err, "%s: path too long", dir);
            return CCS_EINPUT;
        }
        int rc = load_file(c, path, 1 << k, 1 << k, err);
        if (rc != CCS_OK)
            return rc;
    }
    return CCS_OK;
}

int catalog_overlay(ccs_catalog *c, const char *path, ccs_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        ccs_err_set(err, "%s: cannot open catalog overlay: %s", path, strerror(errno));
        return CCS_EINPUT;
    }
    c->below_models = c->n_models;
    c->below_hw = c->n_hw;
    c->below_evo = c->n_evo;
    c->below_stacks = c->n_stacks;
    int rc = CCS_OK, any = 0, dir = S_ISDIR(sb.st_mode);
    if (!dir) {
        rc = load_file(c, path, (1 << K_N) - 1, 0, err);
        any = 1;
    }
    for (int k = 0; rc == CCS_OK && dir && k < K_N; k++) {
        char file[PATH_MAX];
        if (snprintf(file, sizeof file, "%s/%s", path, files[k]) >= (int)sizeof file) {
            ccs_err_set(err, "%s: path too long", path);
            rc = CCS_EINPUT;
        } else if (lstat(file, &sb) == 0) {
            /* present, as a file or as a link: a link to nothing (dangling,
             * or a loop) is an error, not a file left out */
            if (S_ISLNK(sb.st_mode) && stat(file, &sb) != 0) {
                ccs_err_set(err, "%s: a symbolic link to nothing (%s)", file, strerror(errno));
                rc = CCS_EINPUT;
            } else {
                rc = load_file(c, file, 1 << k, 1 << k, err);
            }
            any |= 1 << k;
        } else if (errno != ENOENT) {
            ccs_err_set(err, "%s: cannot open: %s", file, strerror(errno));
            rc = CCS_EINPUT;
        }
    }
    if (rc == CCS_OK && !any) {
        ccs_err_set(err,
                    "%s: a catalog overlay directory needs models.yaml, hardware.yaml, "
                    "evolutions.yaml or stacks.yaml",
                    path);
        rc = CCS_EINPUT;
    }
    c->below_models = c->below_hw = c->below_evo = c->below_stacks = 0;
    return rc;
}

int catalog_load_layers(ccs_catalog *c, const char *const *overlays, size_t n, ccs_err *err)
{
    char dir[PATH_MAX];
    int rc = catalog_load_dir(c, catalog_default_dir(dir, sizeof dir), err);
    const char *env = getenv("CCSWEEP_CATALOG_PATH");
    if (rc == CCS_OK && env && *env) {
        char *copy = strdup(env), *save = NULL;
        if (!copy) {
            ccs_err_set(err, "out of memory");
            return CCS_ENOMEM;
        }
        for (char *p = strtok_r(copy, ":", &save); p && rc == CCS_OK;
             p = strtok_r(NULL, ":", &save)) {
            rc = catalog_overlay(c, p, err);
            if (rc != CCS_OK) {
                char msg[sizeof err->msg];
                ccs_strlcpy(msg, err->msg, sizeof msg);
                ccs_err_set(err, "%s (from $CCSWEEP_CATALOG_PATH)", msg);
            }
        }
        free(copy);
    }
    for (size_t i = 0; rc == CCS_OK && i < n; i++)
        rc = catalog_overlay(c, overlays[i], err);
    return rc;
}

const char *catalog_default_dir(char *buf, size_t n)
{
    const char *env = getenv("CCSWEEP_CATALOG");
    if (env && *env) {
        ccs_strlcpy(buf, env, n);
        return buf;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            /* the binary sits at the top of a build tree, in build/tests or build/tools
             * below it, or in PREFIX/bin of an installation (relocatable) */
            const char *rel[] = {"/sweeps/catalog", "/../sweeps/catalog", "/../../sweeps/catalog",
                                 "/../share/ccsweep/catalog"};
            for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
                char cand[PATH_MAX + 32];
                snprintf(cand, sizeof cand, "%s%s/models.yaml", exe, rel[i]);
                if (access(cand, R_OK) == 0) {
                    snprintf(buf, n, "%s%s", exe, rel[i]);
                    return buf;
                }
            }
        }
    }
    snprintf(buf, n, "%s/catalog", CCS_DATADIR);
    return buf;
}

#define LOOKUP(fn, type, arr, k)                                                                   \
    const type *fn(const ccs_catalog *c, const char *name)                                         \
    {                                                                                              \
        long i = c ? ccs_names_find(c->idx[k], name) : -1;                                         \
        return i < 0 ? NULL : &c->arr[i];                                                          \
    }
LOOKUP(catalog_model, ccs_model, models, 0)
LOOKUP(catalog_hw, ccs_hw, hw, 1)
LOOKUP(catalog_evolution, ccs_evolution, evo, 2)

size_t catalog_n_models(const ccs_catalog *c)
{
    return c->n_models;
}
size_t catalog_n_hw(const ccs_catalog *c)
{
    return c->n_hw;
}
size_t catalog_n_evolutions(const ccs_catalog *c)
{
    return c->n_evo;
}
const ccs_model *catalog_model_at(const ccs_catalog *c, size_t i)
{
    return i < c->n_models ? &c->models[i] : NULL;
}
const ccs_hw *catalog_hw_at(const ccs_catalog *c, size_t i)
{
    return i < c->n_hw ? &c->hw[i] : NULL;
}
const ccs_evolution *catalog_evolution_at(const ccs_catalog *c, size_t i)
{
    return i < c->n_evo ? &c->evo[i] : NULL;
}
LOOKUP(catalog_stack, ccs_stack, stacks, 3)
size_t catalog_n_stacks(const ccs_catalog *c)
{
    return c->n_stacks;
}
const ccs_stack *catalog_stack_at(const ccs_catalog *c, size_t i)
{
    return i < c->n_stacks ? &c->stacks[i] : NULL;
}
