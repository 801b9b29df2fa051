/* cli_narrow.c - the options that narrow a plan search, and the per-plan
 * output 'search' and 'compare' share (cli_narrow.h). */
#include "ccsweep/cli/cli_narrow.h"
#include "ccsweep/cli/cli.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Split text at commas, each item through conv (the value, or < 0 when bad). */
static int axis_list(const char *text, search_axis *a, int (*conv)(const char *item))
{
    char item[64];
    a->n = 0;
    for (const char *p = text;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item || a->n == SEARCH_MAX_VALUES)
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        int v = conv(item);
        if (v < 0)
            return -1;
        int seen = 0;
        for (int i = 0; i < a->n; i++)
            seen |= a->v[i] == v;
        if (!seen)
            a->v[a->n++] = v;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

static int conv_int(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *end || end == s || v < 0 || v > CCS_MAX_DEVICES ? -1 : (int)v;
}

static int conv_bool(const char *s)
{
    if (!strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "off"))
        return 0;
    if (!strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "on"))
        return 1;
    return -1;
}

static int conv_dpov(const char *s)
{
    if (!strcmp(s, "last"))
        return CCS_DPOV_LAST_MICRO;
    if (!strcmp(s, "bucket"))
        return CCS_DPOV_BUCKETED;
    return dp_overlap_parse(s);
}

int cli_axis_ints(const char *text, void *dst)
{
    return axis_list(text, dst, conv_int);
}
int cli_axis_recompute(const char *text, void *dst)
{
    return axis_list(text, dst, recompute_parse);
}
int cli_axis_bool(const char *text, void *dst)
{
    return axis_list(text, dst, conv_bool);
}
int cli_axis_dpov(const char *text, void *dst)
{
    return axis_list(text, dst, conv_dpov);
}

void cli_narrow_init(cli_narrow *n)
{
    memset(n, 0, sizeof *n);
    search_opts_init(&n->so);
}

int cli_narrow_prepare(const char *cmd, cli_narrow *n)
{
    static const int sized[] = {SEARCH_AX_TP, SEARCH_AX_CP,  SEARCH_AX_EP, SEARCH_AX_PP,
                                SEARCH_AX_DP, SEARCH_AX_VPP, SEARCH_AX_MBS};
    for (size_t i = 0; i < sizeof sized / sizeof sized[0]; i++) {
        const search_axis *a = &n->so.ax[sized[i]];
        for (int j = 0; j < a->n; j++)
            if (a->v[j] < 1)
                return cli_fail(cmd, "--%s: %d is not a positive integer",
                                search_axis_name(sized[i]), a->v[j]);
    }
    const search_axis *z = &n->so.ax[SEARCH_AX_ZERO];
    for (int j = 0; j < z->n; j++)
        if (z->v[j] > 3)
            return cli_fail(cmd, "--zero: stage %d is not one of 0-3", z->v[j]);
    if (n->where) {
        ccs_err err;
        if (!(n->expr = expr_compile(n->where, &err, NULL)))
            return cli_fail(cmd, "--where: %s", err.msg);
        n->so.where = n->expr;
    }
    return 0;
}

void cli_narrow_free(cli_narrow *n)
{
    expr_free(n->expr);
    n->expr = NULL;
    n->so.where = NULL;
}

int cli_where_undefined(const char *cmd, const cli_narrow *n, const ccs_search *s,
                        const search_stats *st)
{
    ccs_plan p;
    if (!search_plan(s, st->undefined_idx, &p))
        plan_defaults(&p); /* not reached: the index names a plan search_range projected */
    return cli_fail(cmd,
                    "--where: '%s' divides by zero for %lld plans; the first: tp %d, cp %d, "
                    "ep %d, pp %d, dp %d, vpp %d, mbs %d; guard the divisor (e.g. 'dp > 1 and "
                    "gbs / (dp - 1) > 8')",
                    n->where, (long long)st->undefined, p.tp, plan_cp(&p), plan_ep(&p), p.pp, p.dp,
                    p.vpp, p.mbs);
}

const char *cli_narrow_text(const cli_narrow *n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (len < size) {                                                                          \
            int w_ = snprintf(buf + len, size - len, __VA_ARGS__);                                 \
            len = w_ < 0 ? size : len + (size_t)w_;                                                \
        }                                                                                          \
    } while (0)
    for (int ax = 0; ax < SEARCH_AX_N; ax++) {
        const search_axis *a = &n->so.ax[ax];
        if (a->n)
            PUT("%s%s ", len ? ", " : "", search_axis_name(ax));
        for (int j = 0; j < a->n; j++) {
            if (ax == SEARCH_AX_RECOMPUTE)
                PUT("%s%s", j ? "," : "", recompute_name(a->v[j]));
            else if (ax == SEARCH_AX_DP_OVERLAP)
                PUT("%s%s", j ? "," : "", dp_overlap_name(a->v[j]));
            else
                PUT("%s%d", j ? "," : "", (int)a->v[j]);
        }
    }
    if (n->so.max_mem_frac < 1)
        PUT("%smax-mem-frac %g", len ? ", " : "", n->so.max_mem_frac);
    if (n->where)
        PUT("%swhere '%s'", len ? ", " : "", n->where);
#undef PUT
    return buf;
}

int cli_json_job(json_t *o, const ccs_model *m, const ccs_plan *job, const char *narrow)
{
    int rc = json_object_set_new(o, "model", json_string(m->name));
    rc |= json_object_set_new(o, "devices", json_integer(job->devices));
    rc |= json_object_set_new(o, "gbs", json_integer(job->gbs));
    rc |= json_object_set_new(o, "seq", json_integer(job->seq));
    rc |= json_object_set_new(o, "dtype", json_string(dtype_name(job->dtype)));
    rc |= json_object_set_new(o, "narrowed", json_string(narrow));
    return rc;
}

const char *const cli_share_names[CLI_N_SHARES] = {"compute", "tp",     "cp",    "ep",
                                                   "dp",      "pp p2p", "bubble"};

void cli_shares(const ccs_result *r, double *pct)
{
    double t = r->t_iter > 0 ? r->t_iter : 1;
    const double v[CLI_N_SHARES] = {r->t_compute, r->t_tp_comm_exposed, r->t_cp_comm_exposed,
                                    r->t_ep_comm, r->t_dp_comm_exposed, r->t_pp_comm,
                                    r->t_bubble};
    for (int i = 0; i < CLI_N_SHARES; i++)
        pct[i] = 100 * v[i] / t;
}

void cli_hits_csv_header(FILE *f, const char *lead)
{
    if (lead)
        fprintf(f, "%s,", lead);
    fputs("rank,tp,cp,ep,pp,dp,vpp,mbs,recompute,sp,zero,flash_attn,dp_overlap,status", f);
    for (int i = 0; i < CCS_N_OUTPUTS; i++)
        fprintf(f, ",%s", ccs_outputs[i].name);
    fputs(",same_plans,same_settings\n", f);
}

void cli_hits_csv_row(FILE *f, const char *lead, int rank, const search_hit *h, const char *same)
{
    const ccs_plan *p = &h->plan;
    if (lead) {
        cli_csv_field(f, lead);
        fputc(',', f);
    }
    fprintf(f, "%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%d,%d,%s,%d", rank, p->tp, plan_cp(p), plan_ep(p),
            p->pp, p->dp, p->vpp, p->mbs, recompute_name(p->recompute), p->sp, p->zero,
            p->flash_attn, dp_overlap_name(p->dp_overlap), h->r.status);
    for (int i = 0; i < CCS_N_OUTPUTS; i++)
        fprintf(f, ",%.17g", ccs_output_of(&h->r, i));
    fprintf(f, ",%d,", h->n_same);
    cli_csv_field(f, same ? same : "");
    fputc('\n', f);
}
