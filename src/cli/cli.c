/* cli.c - helpers shared by the subcommands: the launcher's rank, the
 * catalog and its names, and a projection as JSON. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/cost/opmodel.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_launch_rank(void)
{
    /* Open MPI, PMIx (also srun --mpi=pmix), MPICH/Hydra, plain srun */
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (v && *v) {
            long r = strtol(v, &end, 10);
            if (!*end && r >= 0 && r < 1L << 30)
                return (int)r;
        }
    }
    return 0;
}

int cli_unknown(const char *cmd, const ccs_catalog *cat, cli_entry kind, const char *name)
{
    static const char *const what[] = {"model", "hardware", "rule", "stack"};
    static const char *const opt[] = {"--model", "--hw", "--evolution", "--stack"};
    static const char *const list[] = {"models", "hardware", "evolutions", "stacks"};
    const char *cands[512];
    size_t k = 0;
    size_t total = kind == CLI_ENTRY_MODEL       ? catalog_n_models(cat)
                   : kind == CLI_ENTRY_HW        ? catalog_n_hw(cat)
                   : kind == CLI_ENTRY_EVOLUTION ? catalog_n_evolutions(cat)
                                                 : catalog_n_stacks(cat);
    for (size_t i = 0; i < total && k < sizeof cands / sizeof cands[0]; i++)
        cands[k++] = kind == CLI_ENTRY_MODEL       ? catalog_model_at(cat, i)->name
                     : kind == CLI_ENTRY_HW        ? catalog_hw_at(cat, i)->name
                     : kind == CLI_ENTRY_EVOLUTION ? catalog_evolution_at(cat, i)->name
                                                   : catalog_stack_at(cat, i)->name;
    const char *best = cli_suggest(name, cands, k);
    char hint[128] = "";
    if (best)
        snprintf(hint, sizeof hint, "; did you mean '%s'?", best);
    return cli_fail(cmd, "%s: unknown %s '%s'%s (see 'ccsweep list %s')", opt[kind], what[kind],
                    name, hint, list[kind]);
}

ccs_catalog *cli_catalog(const char *cmd, const cli_catalogs *overlays)
{
    ccs_catalog *c = catalog_new();
    ccs_err err;
    if (!c) {
        cli_fail(cmd, "out of memory");
        return NULL;
    }
    if (catalog_load_layers(c, overlays->path, overlays->n, &err) != CCS_OK) {
        cli_fail(cmd, "%s", err.msg);
        catalog_free(c);
        return NULL;
    }
    return c;
}

/* ---- JSON ------------------------------------------------------------------ */

static int jset(json_t *o, const char *k, json_t *v)
{
    return v ? json_object_set_new(o, k, v) : -1;
}

/* A count (parameters, occurrences): an exact JSON integer. */
static json_t *jcount(double v)
{
    return fabs(v) < 9.0e18 ? json_integer((json_int_t)llround(v)) : json_real(v);
}

void cli_op_sources_of(const ccs_model *m, const ccs_plan *p, const ccs_hw *hw,
                       const struct ccs_opmodel *om, const char *calibration, cli_op_sources *out)
{
    static ccs_oplist ops; /* large; the CLI is single-threaded */
    regions_build(m, p, hw_scaleup(hw), &ops);
    memset(out, 0, sizeof *out);
    out->calibration = om ? calibration : NULL;
    for (int i = 0; i < ops.n; i++) {
        const ccs_op *op = &ops.ops[i];
        int coll = opkind_is_collective(op->kind);
        int level = !coll                    ? 0
                    : op->kind == CCS_OP_P2P ? op->per_node < 2
                                             : op->per_node < op->group;
        int dtype = coll ? -1 : op->dtype, j = 0;
        while (j < out->n && !(out->v[j].kind == op->kind && out->v[j].dtype == dtype &&
                               out->v[j].level == level))
            j++;
        if (j < out->n || out->n == (int)(sizeof out->v / sizeof out->v[0]))
            continue;
        cli_op_source *e = &out->v[out->n++];
        e->kind = op->kind;
        e->dtype = dtype;
        e->level = level;
        e->measured = opmodel_measured(om, op->kind, coll ? CCS_FP32 : op->dtype, level);
        out->n_measured += e->measured;
    }
}

json_t *cli_json_projection(const ccs_model *m, const ccs_hw *hw, const char *evolution,
                            const ccs_stack *st, const ccs_plan *p, const ccs_result *r,
                            const ccs_region_time *regions, const cli_op_sources *src)
{
    json_t *o = json_object();
    json_t *plan = json_object();
    if (!o || !plan) {
        json_decref(o);
        json_decref(plan);
        return NULL;
    }
    /* Keys are the column names of the database's view results (and regions
     * table), so one quantity has one name everywhere; units are SI. The plan's
     * dp_overlap is its word (none, last-microbatch, bucketed), as in results. */
    int rc = 0;
    rc |= jset(o, "model", json_string(m->name));
    rc |= jset(o, "params", jcount(r->params));
    rc |= jset(o, "hardware", json_string(hw->name));
    rc |= jset(o, "generation", json_integer(hw->generation));
    rc |= jset(o, "evolution", evolution ? json_string(evolution) : json_null());
    if (!st)
        st = stack_default_entry();
    rc |= jset(o, "stack", json_string(st->name));
    rc |= jset(o, "attention_kernel", json_string(attn_kernel_name(st->attn_kernel)));
    rc |= jset(plan, "devices", json_integer(p->devices));
    rc |= jset(plan, "tp", json_integer(p->tp));
    rc |= jset(plan, "cp", json_integer(plan_cp(p)));
    rc |= jset(plan, "cp_comm", json_string(cp_comm_name(p->cp_comm)));
    rc |= jset(plan, "ep", json_integer(plan_ep(p)));
    rc |= jset(plan, "capacity_factor", json_real(p->capacity_factor));
    rc |= jset(plan, "pp", json_integer(p->pp));
    rc |= jset(plan, "pp_first_layers", json_integer(p->pp_first));
    rc |= jset(plan, "pp_last_layers", json_integer(p->pp_last));
    rc |= jset(plan, "dp", json_integer(p->dp));
    rc |= jset(plan, "vpp", json_integer(p->vpp));
    rc |= jset(plan, "mbs", json_integer(p->mbs));
    rc |= jset(plan, "gbs", json_integer(p->gbs));
    rc |= jset(plan, "seq", json_integer(p->seq));
    rc |= jset(plan, "dtype", json_string(dtype_name(p->dtype)));
    rc |= jset(plan, "sp", json_integer(p->sp));
    rc |= jset(plan, "zero", json_integer(p->zero));
    rc |= jset(plan, "recompute", json_string(recompute_name(p->recompute)));
    rc |= jset(plan, "flash_attn", json_integer(p->flash_attn));
    rc |= jset(plan, "dp_overlap", json_string(dp_overlap_name(p->dp_overlap)));
    rc |= jset(plan, "tp_overlap", json_integer(p->tp_overlap));
    rc |= jset(plan, "innet_reduce", json_integer(p->innet_reduce));
    rc |= jset(plan, "comm_compress", json_real(p->comm_compress));
    rc |= jset(plan, "net_bw_factor", json_real(p->net_bw_factor));
    rc |= json_object_set_new(o, "plan", plan);

    static const char *const status[] = {"ok", "invalid", "oom"};
    rc |= jset(o, "status", json_string(status[r->status]));
    rc |= jset(o, "reason", r->reason ? json_string(plan_reason_name(r->reason)) : json_null());
    rc |=
        jset(o, "reason_text", r->reason ? json_string(plan_reason_text(r->reason)) : json_null());
    char why[256];
    jset(o, "reason_detail",
         r->reason ? json_string(plan_reason_detail(r->reason, m, p, why, sizeof why))
                   : json_null());
    int timed = r->status != CCS_ST_INVALID;
    rc |= jset(o, "fits", timed ? json_integer(r->fits) : json_null());
    rc |= jset(o, "micro_batches", timed ? json_integer(r->micro_batches) : json_null());
    for (int i = 0; i < CCS_N_OUTPUTS; i++)
        rc |= jset(o, ccs_outputs[i].name, timed ? json_real(ccs_output_of(r, i)) : json_null());
    rc |= jset(o, "mem_cap", json_real(hw->mem_cap));
    rc |= jset(o, "mem_frac", timed ? json_real(r->mem_total / hw->mem_cap) : json_null());

    json_t *arr = json_array();
    for (int i = 0; arr && regions && timed && i < CCS_RG_N; i++) {
        if (regions[i].time <= 0)
            continue;
        json_t *e = json_object();
        rc |= jset(e, "name", json_string(region_name(i)));
        rc |= jset(e, "kind", json_string(region_is_comm(i) ? "comm" : "compute"));
        rc |= jset(e, "time", json_real(regions[i].time));
        rc |= jset(e, "count", jcount(regions[i].count));
        rc |= jset(e, "flops", json_real(regions[i].flops));
        rc |= jset(e, "bytes", json_real(regions[i].bytes));
        rc |= json_array_append_new(arr, e);
    }
    if (regions)
        rc |= jset(o, "regions", arr);
    else
        json_decref(arr);
    /* the op_sources table's columns, for the operators of this scenario */
    json_t *srcs = src && timed ? json_array() : json_null();
    for (int i = 0; src && timed && srcs && i < src->n; i++) {
        const cli_op_source *e = &src->v[i];
        json_t *x = json_object();
        rc |= jset(x, "op", json_string(opkind_name(e->kind)));
        rc |= jset(x, "dtype", e->dtype < 0 ? json_null() : json_string(dtype_name(e->dtype)));
        rc |= jset(x, "level",
                   e->dtype < 0 ? json_string(e->level ? "inter" : "intra") : json_null());
        rc |= jset(x, "source", json_string(e->measured ? "measured" : "synthetic"));
        rc |= jset(x, "calibration",
                   e->measured && src->calibration ? json_string(src->calibration) : json_null());
        rc |= json_array_append_new(srcs, x);
    }
    rc |= jset(o, "op_sources", srcs);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int cli_json_emit(json_t *o, json_t *arr, const char *key, int rc)
{
    rc = rc || !o || !arr;
    if (!rc)
        rc |= json_object_set(o, key, arr);
    if (!rc)
        rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    fputc('\n', stdout);
    json_decref(arr);
    json_decref(o);
    return rc ? -1 : 0;
}

int cli_print_json(FILE *f, const ccs_model *m, const ccs_hw *hw, const char *evolution,
                   const ccs_stack *st, const ccs_plan *p, const ccs_result *r,
                   const ccs_region_time *regions, const cli_op_sources *src)
{
    json_t *o = cli_json_projection(m, hw, evolution, st, p, r, regions, src);
    /* 15 significant digits (DBL_DIG): every decimal the model prints survives */
    int rc = o ? json_dumpf(o, f, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : -1;
    fputc('\n', f);
    json_decref(o);
    return rc ? -1 : 0;
}

/* A CSV field: quoted when it holds a comma, quote or newline. */
void cli_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
