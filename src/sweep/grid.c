/* grid.c - mixed-radix decoding of a spec's axes into scenarios, the
 * per-scenario projection and filter, and the scenario key. */
#include "ccsweep/sweep/grid.h"
#include "ccsweep/sweep/fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ccs_grid {
    const ccs_spec *spec;
    int64_t count;
    int ndims;
    int64_t dim_len[SPEC_AX_N];
    int axis_dim[SPEC_AX_N];       /* digit that selects each axis's value, -1 when constant */
    const double *vals[SPEC_AX_N]; /* the spec's values per axis */
    int devices_given, dp_given;
    int nlead;                  /* digits of the cell */
    int64_t plan_n;             /* product of the digits after the cell's */
    int lead_shared[SPEC_AX_N]; /* cell digit d is zipped with a plan axis */
    int64_t n_shared;           /* product of the shared cell digits */
    size_t n_gen;
    ccs_hw *hwgen;     /* n_hw * n_gen evolved hardware */
    uint64_t *hw_hash; /* per (hw, gen_i) */
    uint64_t *model_hash;
    double *model_params;
    const ccs_expr *where;
    int where_post;     /* the filter needs projection outputs */
    ccs_costmemo *memo; /* grid_eval's cost cache (its contents change, not its results) */
};

static uint64_t mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ULL;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#define KEY_SEED 0xcbf29ce484222325ULL

static uint64_t absorb(uint64_t h, uint64_t w)
{
    return mix64(h ^ w);
}

static uint64_t absorb_d(uint64_t h, double x)
{
    uint64_t w;
    if (x == 0)
        x = 0; /* -0.0 and 0.0 hash alike */
    memcpy(&w, &x, sizeof w);
    return absorb(h, w);
}

static uint64_t absorb_name(uint64_t h, const char *name)
{
    unsigned char b[CCS_NAME_MAX] = {0};
    size_t n = strlen(name);
    memcpy(b, name, n < sizeof b ? n : sizeof b - 1);
    for (size_t i = 0; i < sizeof b; i += 8) {
        uint64_t w = 0;
        for (int j = 7; j >= 0; j--)
            w = w << 8 | b[i + (size_t)j]; /* little-endian word */
        h = absorb(h, w);
    }
    return h;
}

static uint64_t model_hash(const ccs_model *m)
{
    uint64_t h = absorb_name(KEY_SEED, m->name);
    const int64_t f[] = {m->layers, m->hidden,  m->heads, m->kv_heads, m->ffn,
                         m->vocab,  m->max_pos, m->gated, m->bias,     m->tied};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        h = absorb(h, (uint64_t)f[i]);
    if (m->experts > 0) { /* only for MoE models: dense models keep their keys */
        const int64_t e[] = {m->experts, m->top_k, m->shared_experts, m->moe_ffn};
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
            h = absorb(h, (uint64_t)e[i]);
        if (m->dense_layers > 0 || m->route_nodes > 0) /* so too the fields added later */
            for (int i = 0; i < 2; i++)
                h = absorb(h, (uint64_t)(int64_t)(i ? m->route_nodes : m->dense_layers));
    }
    if (m->head_dim > 0) /* only where it is not hidden / heads: other models keep their keys */
        h = absorb(h, (uint64_t)(int64_t)m->head_dim);
    if (model_is_mla(m)) {
        const int64_t a[] = {m->q_lora_rank, m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim,
                             m->v_head_dim};
        for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
            h = absorb(h, (uint64_t)a[i]);
    }
    return h;
}

static uint64_t hw_hash(const ccs_hw *b, int gen, const ccs_evolution *ev)
{
    uint64_t h = absorb_name(KEY_SEED, b->name);
    h = absorb(h, (uint64_t)(int64_t)gen);
    const int64_t iv[] = {b->devices_per_node, b->compute_units, b->tile_m, b->tile_n};
    for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++)
        h = absorb(h, (uint64_t)iv[i]);
    /* absorbed only when it differs from the default, so that the keys of
     * entries that do not set it stay what they were before it existed */
    if (b->gemm_ref_k != CCS_GEMM_REF_K_DEFAULT)
        h = absorb(h, (uint64_t)(int64_t)b->gemm_ref_k);
    if (hw_scaleup(b) != b->devices_per_node || b->nvls_eff > 0 || b->oversub > 1) {
        h = absorb(h, (uint64_t)(int64_t)hw_scaleup(b));
        h = absorb_d(h, b->nvls_eff);
        h = absorb_d(h, b->oversub);
    }
    for (int i = 0; i < CCS_AR_TABLES && b->ar[i].ranks; i++) {
        h = absorb(h, (uint64_t)(int64_t)b->ar[i].ranks);
        for (int j = 0; j < b->ar[i].n; j++) {
            h = absorb_d(h, b->ar[i].bytes[j]);
            h = absorb_d(h, b->ar[i].t[j]);
        }
    }
    if (b->gemm_eff_fp8 > 0) {
        h = absorb_d(h, b->gemm_eff_fp8);
        h = absorb(h, (uint64_t)(int64_t)b->gemm_fp8_ref_k);
    }
    if (b->gemm_eff_fp4 > 0) {
        h = absorb_d(h, b->gemm_eff_fp4);
        h = absorb(h, (uint64_t)(int64_t)b->gemm_fp4_ref_k);
    }
    for (int d = 0; d < CCS_DTYPE_N; d++)
        h = absorb_d(h, b->peak_flops[d]);
    const double dv[] = {b->mem_cap,   b->mem_bw,     b->intra_bw,   b->inter_bw,    b->intra_lat,
                         b->inter_lat, b->kernel_lat, b->gemm_eff,   b->clock_ratio, b->mem_eff,
                         b->intra_eff, b->inter_eff,  b->variability};
    for (size_t i = 0; i < sizeof dv / sizeof dv[0]; i++)
        h = absorb_d(h, dv[i]);
    if (gen > 0 && ev) {
        h = absorb_name(h, ev->name);
        const double ef[] = {ev->flops,    ev->mem_bw,   ev->mem_cap,
                             ev->intra_bw, ev->inter_bw, ev->latency};
        for (size_t i = 0; i < sizeof ef / sizeof ef[0]; i++)
            h = absorb_d(h, ef[i]);
    }
    return h;
}

static uint64_t scenario_key(const ccs_grid *g, const ccs_scenario *s)
{
    const ccs_plan *p = &s->plan;
    uint64_t h = absorb(KEY_SEED, g->model_hash[s->model]);
    h = absorb(h, g->hw_hash[(size_t)s->hw * g->n_gen + (size_t)s->gen_i]);
    const int64_t f[] = {p->devices,    p->tp,         p->pp,         p->dp,
                         p->vpp,        p->mbs,        p->gbs,        p->seq,
                         p->dtype,      p->sp,         p->zero,       p->recompute,
                         p->flash_attn, p->tp_overlap, p->dp_overlap, p->innet_reduce};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        h = absorb(h, (uint64_t)f[i]);
    h = absorb_d(h, p->comm_compress);
    h = absorb_d(h, p->net_bw_factor);
    /* absorbed only when one differs from its default, so that plans without
     * them keep the keys they had before these axes existed */
    if (plan_cp(p) > 1 || p->cp_comm != CCS_CP_RING || plan_ep(p) > 1 || p->capacity_factor != 0 ||
        p->pp_first > 0 || p->pp_last > 0) {
        const int64_t f2[] = {plan_cp(p), p->cp_comm, plan_ep(p), p->pp_first, p->pp_last};
        for (size_t i = 0; i < sizeof f2 / sizeof f2[0]; i++)
            h = absorb(h, (uint64_t)f2[i]);
        h = absorb_d(h, p->capacity_factor);
    }
    /* a stack other than the default: its name and every figure (so that an
     * overlay changing one gives a new key), absorbed only then (the default
     * named in plan.stack keeps the key of a spec without the axis) */
    const ccs_stack *st = p->stack > 0 ? spec_stack(g->spec, (size_t)p->stack - 1) : NULL;
    if (st && !stack_is_default(st)) {
        h = absorb_name(h, st->name);
        const int64_t fs[] = {st->attn_kernel, st->grad_dtype};
        for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
            h = absorb(h, (uint64_t)fs[i]);
        if (st->no_dropout) /* absorbed only when set: older entries keep their keys */
            h = absorb(h, 1);
        if (st->fused_loss || st->logit_metrics) /* likewise */
            h = absorb(h, 2 + (uint64_t)st->fused_loss + 2 * (uint64_t)st->logit_metrics);
        if (st->bias_grad_sep) /* likewise (above every value the line before absorbs) */
            h = absorb(h, 64);
        if (st->eager) /* likewise */
            h = absorb(h, 65);
        if (st->sac_op) /* likewise */
            h = absorb(h, 66);
        const double ds[] = {st->eltwise_factor, st->op_overhead, st->layer_overhead,
                             st->iter_overhead,  st->comm_units,  st->tp_overlap_share,
                             st->zero3_units};
        for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
            h = absorb_d(h, ds[i]);
    }
    return h;
}

ccs_grid *grid_new(const ccs_spec *spec, ccs_err *err)
{
    ccs_grid *g = calloc(1, sizeof *g);
    if (!g) {
        ccs_err_set(err, "out of memory");
        return NULL;
    }
    g->spec = spec;
    g->count = 1;
    int zip_dim[SPEC_AX_N];
    for (int a = 0; a < SPEC_AX_N; a++)
        zip_dim[a] = -1;
    for (int a = 0; a < SPEC_AX_N; a++) {
        int64_t len = (int64_t)spec_axis_len(spec, a);
        int z = spec_axis_zip(spec, a);
        g->vals[a] = spec_axis_values(spec, a);
        g->axis_dim[a] = -1;
        if (len <= 1)
            continue; /* constant: no digit */
        if (z >= 0 && zip_dim[z] >= 0) {
            g->axis_dim[a] = zip_dim[z]; /* zipped axes share the group's digit */
            continue;
        }
        if (g->count > INT64_MAX / len) {
            ccs_err_set(err,
                        "%s: the grid has more than 2^63-1 scenarios (overflow at axis "
                        "'%s'); narrow the axes or split the sweep",
                        spec_path(spec), spec_axis_name(a));
            free(g);
            return NULL;
        }
        g->count *= len;
        g->dim_len[g->ndims] = len;
        g->axis_dim[a] = g->ndims;
        if (z >= 0)
            zip_dim[z] = g->ndims;
        g->ndims++;
    }
    /* Model, hardware and generation come first in axis order, so their
     * digits (with any zip group they start) are the leading ones. */
    int nlead = 0;
    for (int a = 0; a <= SPEC_AX_GEN; a++)
        if (g->axis_dim[a] >= nlead)
            nlead = g->axis_dim[a] + 1;
    g->nlead = nlead;
    g->plan_n = 1;
    for (int d = nlead; d < g->ndims; d++)
        g->plan_n *= g->dim_len[d];
    for (int a = SPEC_AX_GEN + 1; a < SPEC_AX_N; a++)
        if (g->axis_dim[a] >= 0 && g->axis_dim[a] < nlead)
            g->lead_shared[g->axis_dim[a]] = 1;
    g->n_shared = 1;
    for (int d = 0; d < nlead; d++)
        if (g->lead_shared[d])
            g->n_shared *= g->dim_len[d];
    g->devices_given = spec_axis_given(spec, SPEC_AX_DEVICES);
    g->dp_given = spec_axis_given(spec, SPEC_AX_DP);
    g->n_gen = spec_axis_len(spec, SPEC_AX_GEN);
    size_t nhw = spec_n_hw(spec), nm = spec_n_models(spec);
    g->hwgen = calloc(nhw * g->n_gen, sizeof *g->hwgen);
    g->hw_hash = calloc(nhw * g->n_gen, sizeof *g->hw_hash);
    g->model_hash = calloc(nm, sizeof *g->model_hash);
    g->model_params = calloc(nm, sizeof *g->model_params);
    g->memo = cost_memo_new();
    if (!g->hwgen || !g->hw_hash || !g->model_hash || !g->model_params || !g->memo) {
        ccs_err_set(err, "out of memory");
        grid_free(g);
        return NULL;
    }
    const ccs_evolution *ev = spec_evolution(spec);
    const double *gens = spec_axis_values(spec, SPEC_AX_GEN);
    for (size_t h = 0; h < nhw; h++) {
        for (size_t j = 0; j < g->n_gen; j++) {
            hw_evolve(spec_hw(spec, h), ev, (int)gens[j], &g->hwgen[h * g->n_gen + j]);
            g->hw_hash[h * g->n_gen + j] = hw_hash(spec_hw(spec, h), (int)gens[j], ev);
        }
    }
    for (size_t m = 0; m < nm; m++) {
        g->model_hash[m] = model_hash(spec_model(spec, m));
        g->model_params[m] = model_params(spec_model(spec, m));
    }
    g->where = spec_where(spec);
    g->where_post = g->where && expr_uses_results(g->where);
    return g;
}

void grid_free(ccs_grid *g)
{
    if (!g)
        return;
    free(g->hwgen);
    free(g->hw_hash);
    free(g->model_hash);
    free(g->model_params);
    cost_memo_free(g->memo);
    free(g);
}

int64_t grid_count(const ccs_grid *g)
{
    return g->count;
}

const ccs_spec *grid_spec(const ccs_grid *g)
{
    return g->spec;
}

int64_t grid_plan_n(const ccs_grid *g)
{
    return g->plan_n;
}

int64_t grid_plan_tables(const ccs_grid *g)
{
    return (int64_t)spec_n_models(g->spec) * g->n_shared;
}

int64_t grid_cell_z(const ccs_grid *g, int64_t cell)
{
    int64_t digit[SPEC_AX_N], rest = cell, s = 0;
    for (int d = g->nlead - 1; d >= 0; d--) {
        digit[d] = rest % g->dim_len[d];
        rest /= g->dim_len[d];
    }
    for (int d = 0; d < g->nlead; d++)
        if (g->lead_shared[d])
            s = s * g->dim_len[d] + digit[d];
    int md = g->axis_dim[SPEC_AX_MODEL];
    int64_t model = (int64_t)g->vals[SPEC_AX_MODEL][md < 0 ? 0 : digit[md]];
    return model * g->n_shared + s;
}

int grid_dims(const ccs_grid *g)
{
    return g->ndims;
}

const ccs_hw *grid_hw(const ccs_grid *g, int hw, int gen_i)
{
    return &g->hwgen[(size_t)hw * g->n_gen + (size_t)gen_i];
}

void grid_decode(const ccs_grid *g, int64_t idx, ccs_scenario *out)
{
    int64_t digit[SPEC_AX_N];
    int64_t rest = idx;
    for (int d = g->ndims - 1; d >= 0; d--) {
        if (rest <= UINT32_MAX && g->dim_len[d] <= UINT32_MAX) {
            /* a 32-bit division: several times faster than a 64-bit one on x86-64 */
            uint32_t r = (uint32_t)rest, l = (uint32_t)g->dim_len[d];
            digit[d] = r % l;
            rest = r / l;
        } else {
            digit[d] = rest % g->dim_len[d];
            rest /= g->dim_len[d];
        }
    }
    double v[SPEC_AX_N];
    int64_t at[SPEC_AX_N];
    for (int a = 0; a < SPEC_AX_N; a++) {
        at[a] = g->axis_dim[a] < 0 ? 0 : digit[g->axis_dim[a]];
        v[a] = g->vals[a][at[a]];
    }
    memset(out, 0, sizeof *out);
    out->idx = idx;
    out->model = (int32_t)v[SPEC_AX_MODEL];
    out->hw = (int32_t)v[SPEC_AX_HW];
    out->gen_i = (int32_t)at[SPEC_AX_GEN];
    out->gen = (int32_t)v[SPEC_AX_GEN];
    const ccs_model *m = spec_model(g->spec, (size_t)out->model);
    ccs_plan *p = &out->plan;
    plan_defaults(p);
    p->devices = (int32_t)v[SPEC_AX_DEVICES];
    p->tp = (int32_t)v[SPEC_AX_TP];
    p->cp = (int32_t)v[SPEC_AX_CP];
    p->cp_comm = (int8_t)v[SPEC_AX_CP_COMM];
    p->ep = (int32_t)v[SPEC_AX_EP];
    p->capacity_factor = v[SPEC_AX_CAPACITY_FACTOR];
    p->pp = (int32_t)v[SPEC_AX_PP];
    p->pp_first = (int32_t)v[SPEC_AX_PP_FIRST_LAYERS];
    p->pp_last = (int32_t)v[SPEC_AX_PP_LAST_LAYERS];
    p->dp = (int32_t)v[SPEC_AX_DP];
    if (!g->devices_given && !g->dp_given)
        p->dp = 1;
    p->vpp = (int32_t)v[SPEC_AX_VPP];
    p->mbs = (int32_t)v[SPEC_AX_MBS];
    p->dtype = (int8_t)v[SPEC_AX_DTYPE];
    p->sp = (int8_t)v[SPEC_AX_SP];
    p->zero = (int8_t)v[SPEC_AX_ZERO];
    p->recompute = (int8_t)v[SPEC_AX_RECOMPUTE];
    p->flash_attn = (int8_t)v[SPEC_AX_FLASH_ATTN];
    p->tp_overlap = (int8_t)v[SPEC_AX_TP_OVERLAP];
    p->dp_overlap = (int8_t)v[SPEC_AX_DP_OVERLAP];
    p->innet_reduce = (int8_t)v[SPEC_AX_INNET_REDUCE];
    p->comm_compress = v[SPEC_AX_COMM_COMPRESS];
    p->net_bw_factor = v[SPEC_AX_NET_BW_FACTOR];
    p->stack = (int16_t)v[SPEC_AX_STACK];
    /* seq and gbs "model": the model's published figures, as 'ccsweep project' does */
    p->seq = v[SPEC_AX_SEQ] == SPEC_FROM_MODEL ? (m->seq ? m->seq : 2048) : (int32_t)v[SPEC_AX_SEQ];
    out->derive = plan_derive(p);
    /* gbs "model": the model's batch, never one made up from mbs * dp; spec_load
     * rejects a model without one, so 0 here (invalid: nonpositive) cannot occur
     * from a loaded spec. */
    if (v[SPEC_AX_GBS] == SPEC_FROM_MODEL) {
        p->gbs = m->gbs;
    } else {
        p->gbs = (int32_t)v[SPEC_AX_GBS];
    }
    out->key = scenario_key(g, out);
}

void grid_fields(const ccs_grid *g, const ccs_scenario *s, const ccs_result *r, double *vals)
{
    fields_fill(spec_model(g->spec, (size_t)s->model), g->model_params[s->model],
                grid_hw(g, s->hw, s->gen_i), s->gen, &s->plan, r, vals);
}

int grid_eval(const ccs_grid *g, int64_t idx, ccs_record *out, ccs_region_time *regions)
{
    double vals[EXPR_F_N];
    ccs_scenario *s = &out->s;
    grid_decode(g, idx, s);
    if (g->where && !g->where_post) {
        /* the filter needs no outputs: skip the projection of dropped scenarios */
        grid_fields(g, s, NULL, vals);
        int keep = expr_eval(g->where, vals);
        if (keep != 1)
            return keep; /* 0, or EXPR_UNDEFINED */
    }
    const ccs_model *m = spec_model(g->spec, (size_t)s->model);
    if (s->derive != CCS_R_OK) {
        memset(&out->r, 0, sizeof out->r);
        out->r.status = CCS_ST_INVALID;
        out->r.reason = s->derive;
        out->r.params = g->model_params[s->model];
        if (regions)
            memset(regions, 0, sizeof(*regions) * CCS_RG_N);
    } else {
        ccs_cost c;
        cost_init_memo(&c, g->memo, grid_hw(g, s->hw, s->gen_i),
                       spec_opmodel(g->spec, (size_t)s->hw), spec_evolution(g->spec), s->gen,
                       &s->plan);
        if (s->plan.stack > 0)
            cost_set_stack(&c, spec_stack(g->spec, (size_t)s->plan.stack - 1));
        timeline_project(m, &s->plan, &c, &out->r, regions);
    }
    if (g->where_post) {
        grid_fields(g, s, &out->r, vals);
        return expr_eval(g->where, vals);
    }
    return 1;
}

size_t grid_format_name(const ccs_grid *g, const ccs_record *rec, char *buf, size_t n)
{
    size_t np;
    const spec_tpl_part *parts = spec_name_parts(g->spec, &np);
    if (!np || n == 0)
        return 0;
    double vals[EXPR_F_N];
    grid_fields(g, &rec->s, &rec->r, vals);
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < np && len + 1 < n; i++) {
        const spec_tpl_part *p = &parts[i];
        int w;
        if (p->field == SPEC_TPL_LITERAL) {
            size_t k = p->len < n - 1 - len ? p->len : n - 1 - len;
            memcpy(buf + len, p->lit, k);
            len += k;
            buf[len] = 0;
            continue;
        }
        const char *s = NULL;
        if (p->field == SPEC_TPL_MODEL)
            s = spec_model(g->spec, (size_t)rec->s.model)->name;
        else if (p->field == SPEC_TPL_HW)
            s = spec_hw(g->spec, (size_t)rec->s.hw)->name;
        else if (p->field == SPEC_TPL_EVOLUTION)
            s = spec_evolution(g->spec) ? spec_evolution(g->spec)->name : "";
        else if (p->field == EXPR_F_RECOMPUTE)
            s = recompute_name(rec->s.plan.recompute);
        else if (p->field == EXPR_F_DTYPE)
            s = dtype_name(rec->s.plan.dtype);
        else if (p->field == EXPR_F_CP_COMM)
            s = cp_comm_name(rec->s.plan.cp_comm);
        char num[32];
        if (!s) {
            /* plan fields are integers: skip printf's floating-point path */
            double v = vals[p->field];
            if (v == (double)(int64_t)v && v > -1e15 && v < 1e15) {
                char tmp[24];
                int k = 0;
                uint64_t u = (uint64_t)(v < 0 ? -v : v);
                do
                    tmp[k++] = (char)('0' + u % 10);
                while (u /= 10);
                int o = 0;
                if (v < 0)
                    num[o++] = '-';
                while (k)
                    num[o++] = tmp[--k];
                num[o] = 0;
            } else {
                snprintf(num, sizeof num, "%.10g", v);
            }
            s = num;
        }
        w = snprintf(buf + len, n - len, "%s", s);
        len += (size_t)w < n - len ? (size_t)w : n - 1 - len;
    }
    return len;
}
