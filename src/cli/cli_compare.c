/* cli_compare.c - 'ccsweep compare': the best plan of one training job (or
 * one fixed plan) side by side across hardware, generations and software
 * stacks, with the share of the iteration each part takes. The job (model,
 * devices, global batch, sequence, dtype) is the same in every column: a
 * comparison of plans is fair only at equal work, so nothing that changes
 * the work may differ between columns. With --db it compares stored runs
 * instead (cli_compare_runs.c), under the same rule: groups pair only at
 * equal work. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/cli/cli_narrow.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define CMP_MAX_COLS 16
#define CMP_MAX_NAMES 8

/* A comma-separated list of names (borrowed copies in buf). */
typedef struct name_list {
    int n;
    char buf[256];
    const char *v[CMP_MAX_NAMES];
} name_list;

static int parse_names(const char *text, void *dst)
{
    name_list *l = dst;
    if (strlen(text) >= sizeof l->buf)
        return -1;
    memcpy(l->buf, text, strlen(text) + 1);
    l->n = 0;
    for (char *p = l->buf;;) {
        char *c = strchr(p, ',');
        if (c)
            *c = '\0';
        if (!*p || l->n == CMP_MAX_NAMES)
            return -1;
        l->v[l->n++] = p;
        if (!c)
            return 0;
        p = c + 1;
    }
}

/* --db PATH: one more stored run, the latest training run of PATH unless a
 * --run follows. */
static int parse_db(const char *text, void *dst)
{
    cli_compare_runs_opts *o = dst;
    if (!*text || o->n == CLI_CMP_MAX_RUNS)
        return -1;
    o->runs[o->n++] = (cli_run_ref){text, 0};
    return 0;
}

/* --run ID: that run of the last --db (another --run: one more run of it). */
static int parse_run(const char *text, void *dst)
{
    cli_compare_runs_opts *o = dst;
    char *end;
    errno = 0; /* ERANGE: a run id past 2^63 - 1, which strtoll clamps */
    long long v = strtoll(text, &end, 10);
    if (!o->n || !*text || *end || errno || v < 1)
        return -1;
    cli_run_ref *last = &o->runs[o->n - 1];
    if (!last->run) {
        last->run = v;
        return 0;
    }
    if (o->n == CLI_CMP_MAX_RUNS)
        return -1;
    o->runs[o->n++] = (cli_run_ref){last->db, v};
    return 0;
}

/* --across LIST: hw, gen, stack */
static int parse_across(const char *text, void *dst)
{
    unsigned *a = dst, v = 0;
    for (const char *p = text;;) {
        size_t len = strcspn(p, ",");
        if (len == 2 && !strncmp(p, "hw", 2))
            v |= CLI_ACROSS_HW;
        else if (len == 3 && !strncmp(p, "gen", 3))
            v |= CLI_ACROSS_GEN;
        else if (len == 5 && !strncmp(p, "stack", 5))
            v |= CLI_ACROSS_STACK;
        else
            return -1;
        if (!p[len])
            break;
        p += len + 1;
    }
    *a = v;
    return 0;
}

typedef struct compare_args {
    const char *model, *evolution;
    name_list hw, stack;
    search_axis gens;
    cli_catalogs catalogs;
    long devices, seq, gbs;
    int dtype, json, fixed;
    int across_given;
    cli_narrow nw;
    cli_compare_runs_opts st; /* --db, --run, --across */
} compare_args;

#define A compare_args
static const cli_opt compare_rows[] = {
    CLI_O_STR("model", "NAME", A, model, "catalog model (see 'ccsweep list models')"),
    CLI_O_FN("hw", "LIST", A, hw, parse_names, "hardware names, comma-separated",
             "catalog hardware, one or more (a100-80g,h100-sxm)"),
    CLI_O_FN("gen", "LIST", A, gens, cli_axis_ints, "generations, comma-separated",
             "hardware generations, one or more (0)"),
    CLI_O_STR("evolution", "RULE", A, evolution, "scaling rule for --gen (memory-wall)"),
    CLI_O_FN("stack", "LIST", A, stack, parse_names, "stack names, comma-separated",
             "software stacks, one or more (the default stack)"),
    CLI_O_INT("devices", "N", A, devices, 1, CCS_MAX_DEVICES, "devices of the job"),
    CLI_O_INT("seq", "S", A, seq, 1, CCS_MAX_SEQ, "sequence length (the model's)"),
    CLI_O_INT("gbs", "B", A, gbs, 1, CCS_MAX_GBS, "global batch in sequences (the model's)"),
    CLI_O_ENUM("dtype", "T", A, dtype, dtype_parse, "bf16, fp16, fp8, tf32 or fp32",
               "arithmetic type (bf16)"),
    CLI_O_FLAG("fixed", A, fixed,
               "one plan in every column: the first column's best,\n"
               "projected as it is elsewhere (else each column's best)"),
    CLI_NARROW_ROWS(A, nw),
    CLI_O_FLAG("json", A, json,
               "one JSON object: the job and a column per configuration\n"
               "(with --db: the runs, the paired groups, those only in one)"),
    CLI_O_CATALOG(A, catalogs, "catalog overlay (repeatable)"),
    CLI_O_FN("db", "PATH", A, st, parse_db, "a database path (at most 16 runs in all)",
             "stored runs instead: the latest training run of PATH\n"
             "(repeatable; two or more runs in all)"),
    CLI_O_FN("run", "ID", A, st, parse_run,
             "a run id (a positive integer) after the --db it belongs to",
             "that run of the --db before it instead of its latest\n"
             "(repeatable: --db A.db --run 1 --run 2)"),
    {.name = "across",
     .kind = CLI_FN,
     .arg = "LIST",
     CLI_AT(A, st.across),
     CLI_GIVEN(A, across_given),
     .fn = parse_across,
     .expect = "a comma-separated list of hw, gen and stack",
     .help = "with --db: pair groups that differ in these (hw, gen,\n"
             "stack) at equal work; default: equal in all three"},
    CLI_O_HELP,
};
#undef A

static const cli_cmd compare_cmd = {
    .name = "compare",
    .synopsis = "ccsweep compare --model NAME --devices N --hw LIST [--gen LIST]\n"
                "                       [--stack LIST] [--evolution RULE] [--seq S] [--gbs B]\n"
                "                       [--dtype T] [--fixed] [--tp LIST] ... [--where EXPR]\n"
                "                       [--json] [--catalog PATH]\n"
                "       ccsweep compare --db PATH [--run ID ...] --db PATH [--run ID ...] ...\n"
                "                       [--across hw,gen,stack] [--model NAME] [--devices N]\n"
                "                       [--seq S] [--gbs B] [--json]",
    .about = "Compares one training job across configurations: one column for each\n"
             "hardware x generation x stack given (two or more), each with its best\n"
             "plan as 'ccsweep search' finds it (the same options narrow it), or with\n"
             "--fixed the first column's best plan in every column. The model,\n"
             "devices, global batch, sequence and dtype are the same in every column:\n"
             "plans compare fairly only at equal work.\n\n"
             "With --db, compares stored training runs (two or more; each --db adds its\n"
             "latest training run, or the runs --run names): the best plan of each group\n"
             "(the best_plan view: model x hardware x generation x devices x gbs x seq x\n"
             "stack) side by side for the groups the runs share, with t_iter, speed-up,\n"
             "MFU, exposed communication and the plan; groups in only one run are\n"
             "counted and listed. Groups pair only at equal work (model: its name and\n"
             "stored definition; devices, global batch, sequence), and at equal hardware,\n"
             "generation and stack unless --across names them; --model, --devices,\n"
             "--gbs, --seq keep only that work.",
    .opts = compare_rows,
    .n_opts = sizeof compare_rows / sizeof compare_rows[0],
    .col = 18,
};

/* One configuration and its answer. */
typedef struct column {
    const ccs_hw *base;
    const ccs_stack *stack; /* NULL: the default */
    const char *stack_name;
    int gen;
    ccs_hw hw; /* at gen */
    search_hit best;
    int found;
    search_stats st;
    char label[96];
} column;

/* --db: the options of a comparison of stored runs, checked. */
static int stored_args(compare_args *a)
{
    char narrow[512];
    cli_narrow_text(&a->nw, narrow, sizeof narrow);
    const char *proj = a->hw.n                               ? "--hw"
                       : a->gens.n                           ? "--gen"
                       : a->stack.n                          ? "--stack"
                       : a->fixed                            ? "--fixed"
                       : a->dtype >= 0                       ? "--dtype"
                       : a->catalogs.n                       ? "--catalog"
                       : strcmp(a->evolution, "memory-wall") ? "--evolution"
                       : narrow[0]                           ? "the plan options (--tp ...)"
                                                             : NULL;
    if (proj)
        return cli_fail("compare",
                        "%s projects plans; with --db the stored runs' plans are compared "
                        "(see 'ccsweep compare --help')",
                        proj);
    if (a->st.n < 2)
        return cli_fail("compare",
                        "one stored run: give two or more (--db A.db --db B.db, or --db A.db "
                        "--run 1 --run 2)");
    a->st.model = a->model;
    a->st.devices = a->devices;
    a->st.gbs = a->gbs;
    a->st.seq = a->seq;
    a->st.json = a->json;
    return CLI_OK;
}

static int parse_compare_args(int argc, char **argv, compare_args *a)
{
    memset(a, 0, sizeof *a);
    a->evolution = "memory-wall";
    cli_narrow_init(&a->nw);
    a->dtype = -1; /* given or not: --db refuses it */
    int first, rc = cli_opt_parse(&compare_cmd, argc, argv, a, stderr, &first);
    if (rc != CLI_OK)
        return rc;
    if (first < argc)
        return cli_fail("compare", "unexpected argument '%s'", argv[first]);
    if (a->st.n)
        return stored_args(a);
    if (a->across_given)
        return cli_fail("compare", "--across pairs the groups of stored runs: give it with --db");
    if (a->dtype < 0)
        a->dtype = CCS_BF16;
    if (!a->model || !a->hw.n || !a->devices)
        return cli_fail("compare", "--model, --hw and --devices are required "
                                   "(see 'ccsweep compare --help')");
    if (!a->gens.n)
        a->gens = (search_axis){1, {0}};
    for (int i = 0; i < a->gens.n; i++)
        if (a->gens.v[i] > CCS_MAX_GEN)
            return cli_fail("compare", "--gen: %d is above the limit %d", a->gens.v[i],
                            CCS_MAX_GEN);
    int cols = a->hw.n * a->gens.n * (a->stack.n ? a->stack.n : 1);
    if (cols < 2)
        return cli_fail("compare", "one configuration (hardware x generation x stack): give two "
                                   "or more hardware, generations or stacks");
    if (cols > CMP_MAX_COLS)
        return cli_fail("compare", "%d configurations; at most %d", cols, CMP_MAX_COLS);
    return cli_narrow_prepare("compare", &a->nw) ? CLI_BAD : CLI_OK;
}

/* The best plan of column c under so (search_new_opts), into c. */
static int search_column(const ccs_model *m, const ccs_evolution *ev, const ccs_plan *job,
                         const search_opts *so, const cli_narrow *nw, column *c)
{
    search_opts o = *so;
    o.stack = c->stack;
    ccs_err err;
    ccs_search *s = search_new_opts(m, &c->hw, NULL, ev, c->gen, job->devices, job->gbs, job->seq,
                                    job->dtype, &o, &err);
    if (!s)
        return cli_fail("compare", "%s", err.msg) + 1;
    int n = 0;
    search_range(s, 0, search_count(s), 1, &c->best, 1, &n, &c->st);
    c->found = n == 1;
    int rc = c->st.undefined ? cli_where_undefined("compare", nw, s, &c->st) : 0;
    search_free(s);
    return rc;
}

/* search_opts that admit exactly plan p's settings. */
static void fix_plan(const search_opts *so, const ccs_plan *p, search_opts *out)
{
    *out = *so;
    const int32_t v[SEARCH_AX_N] = {p->tp, plan_cp(p), plan_ep(p),    p->pp,
                                    p->dp, p->vpp,     p->mbs,        p->recompute,
                                    p->sp, p->zero,    p->flash_attn, p->dp_overlap};
    for (int ax = 0; ax < SEARCH_AX_N; ax++)
        out->ax[ax] = (search_axis){1, {v[ax]}};
}

static void print_text(const ccs_model *m, const ccs_plan *job, const compare_args *a,
                       const column *c, int nc, const char *narrow)
{
    printf("%s, %d devices, gbs %d, seq %d, %s: %s\n", m->name, job->devices, job->gbs, job->seq,
           dtype_name(job->dtype),
           a->fixed ? "one plan (the first column's best) in every column"
                    : "the best plan of each configuration");
    printf("  every column trains the same job (model, devices, global batch, sequence, dtype):\n"
           "  plans compare fairly only at equal work%s%s\n\n",
           narrow[0] ? "; only plans with " : "", narrow);
    int w = 20;
    for (int i = 0; i < nc; i++)
        w = (int)strlen(c[i].label) > w ? (int)strlen(c[i].label) : w;
    printf("  %-22s", "");
    for (int i = 0; i < nc; i++)
        printf(" %*s", w, c[i].label);
    printf("\n");
#define ROW(NAME, FMT, ...)                                                                        \
    do {                                                                                           \
        printf("  %-22s", NAME);                                                                   \
        for (int i = 0; i < nc; i++) {                                                             \
            const ccs_plan *p = &c[i].best.plan;                                                   \
            const ccs_result *r = &c[i].best.r;                                                    \
            char cell[64];                                                                         \
            if (c[i].found)                                                                        \
                snprintf(cell, sizeof cell, FMT, __VA_ARGS__);                                     \
            else                                                                                   \
                ccs_strlcpy(cell,                                                                  \
                            c[i].st.fit || c[i].st.filtered == c[i].st.plans                       \
                                ? "none passes --where"                                            \
                                : "no plan fits",                                                  \
                            sizeof cell);                                                          \
            (void)p, (void)r;                                                                      \
            printf(" %*s", w, cell);                                                               \
        }                                                                                          \
        printf("\n");                                                                              \
    } while (0)
    ROW("tp x cp x pp x dp", "%d x %d x %d x %d", p->tp, plan_cp(p), p->pp, p->dp);
    ROW("ep, vpp, mbs", "%d, %d, %d", plan_ep(p), p->vpp, p->mbs);
    ROW("recompute, sp, zero", "%s, %d, %d", recompute_name(p->recompute), p->sp, p->zero);
    ROW("flash attn, dp overlap", "%d, %s", p->flash_attn, dp_overlap_name(p->dp_overlap));
    ROW("t_iter", "%.4f s", r->t_iter);
    ROW("tokens/s", "%.4g", r->tokens_per_s);
    ROW("speed-up vs first", "%.2fx", c[0].found ? r->tokens_per_s / c[0].best.r.tokens_per_s : 0);
    ROW("MFU", "%.1f%%", 100 * r->mfu);
    ROW("memory/device", "%.2f GiB", r->mem_total / 1073741824.0);
    printf("  share of t_iter\n");
    for (int k = 0; k < CLI_N_SHARES; k++) {
        int any = 0; /* cp and ep only where a column has them */
        for (int i = 0; i < nc; i++) {
            double sh[CLI_N_SHARES];
            cli_shares(&c[i].best.r, sh);
            any |= c[i].found && sh[k] > 0;
        }
        if (!any && (k == 2 || k == 3))
            continue;
        char name[32];
        snprintf(name, sizeof name, "  %s%s", cli_share_names[k], k ? " exposed" : "");
        if (k == 5 || k == 6)
            snprintf(name, sizeof name, "  %s", cli_share_names[k]);
        double sh[CLI_N_SHARES];
        ROW(name, "%.1f%%", (cli_shares(r, sh), sh[k]));
    }
    ROW("comm exposed", "%.1f%%", 100 * r->comm_fraction);
#undef ROW
    /* the counts, found or not: what fit, and what --where kept of it */
    printf("  %-22s", a->nw.where ? "plans/fit/kept" : "plans projected/fit");
    for (int i = 0; i < nc; i++) {
        char cell[64];
        if (a->nw.where)
            snprintf(cell, sizeof cell, "%lld/%lld/%lld", (long long)c[i].st.plans,
                     (long long)c[i].st.fit, (long long)c[i].st.kept);
        else
            snprintf(cell, sizeof cell, "%lld/%lld", (long long)c[i].st.plans,
                     (long long)c[i].st.fit);
        printf(" %*s", w, cell);
    }
    printf("\n");
}

static int print_json(const ccs_model *m, const ccs_plan *job, const compare_args *a,
                      const column *c, int nc, const char *narrow)
{
    json_t *o = json_object(), *arr = json_array();
    int rc = !o || !arr;
    if (!rc) {
        rc |= cli_json_job(o, m, job, narrow);
        rc |= json_object_set_new(o, "fixed_plan", json_boolean(a->fixed));
        rc |= json_object_set_new(
            o, "fairness",
            json_string("every column trains the same job (model, devices, global batch, "
                        "sequence, dtype): plans compare fairly only at equal work"));
        for (int i = 0; !rc && i < nc; i++) {
            json_t *e = json_object(), *sh = json_object();
            rc |= !e || !sh;
            if (rc)
                break;
            rc |= json_object_set_new(e, "hardware", json_string(c[i].hw.name));
            rc |= json_object_set_new(e, "generation", json_integer(c[i].gen));
            rc |= json_object_set_new(e, "stack",
                                      c[i].stack_name ? json_string(c[i].stack_name) : json_null());
            rc |= json_object_set_new(e, "plans", json_integer(c[i].st.plans));
            rc |= json_object_set_new(e, "plans_fit", json_integer(c[i].st.fit));
            rc |= json_object_set_new(e, "plans_kept", json_integer(c[i].st.kept));
            json_t *b = c[i].found ? cli_json_projection(m, &c[i].hw,
                                                         c[i].gen ? a->evolution : NULL, c[i].stack,
                                                         &c[i].best.plan, &c[i].best.r, NULL, NULL)
                                   : json_null();
            rc |= !b || json_object_set_new(e, "best", b);
            if (c[i].found) {
                double pct[CLI_N_SHARES];
                cli_shares(&c[i].best.r, pct);
                for (int k = 0; k < CLI_N_SHARES; k++)
                    rc |= json_object_set_new(sh, cli_share_names[k], json_real(pct[k] / 100));
                rc |= json_object_set_new(
                    e, "speedup",
                    c[0].found ? json_real(c[i].best.r.tokens_per_s / c[0].best.r.tokens_per_s)
                               : json_null());
            }
            rc |= json_object_set_new(e, "share", sh);
            rc |= json_array_append_new(arr, e);
        }
    }
    return cli_json_emit(o, arr, "columns", rc);
}

/* Resolve the names into columns (hardware outer, then generation, then
 * stack). 0, or the exit status with the message printed. */
static int resolve_columns(const compare_args *a, const ccs_catalog *cat, const ccs_evolution *ev,
                           column *c, int *nc)
{
    *nc = 0;
    int ns = a->stack.n ? a->stack.n : 1;
    for (int h = 0; h < a->hw.n; h++) {
        const ccs_hw *base = catalog_hw(cat, a->hw.v[h]);
        if (!base)
            return cli_unknown("compare", cat, CLI_ENTRY_HW, a->hw.v[h]);
        for (int g = 0; g < a->gens.n; g++)
            for (int s = 0; s < ns; s++) {
                column *k = &c[(*nc)++];
                memset(k, 0, sizeof *k);
                k->base = base;
                k->gen = a->gens.v[g];
                k->stack_name = a->stack.n ? a->stack.v[s] : NULL;
                if (k->stack_name && !(k->stack = catalog_stack(cat, k->stack_name)))
                    return cli_unknown("compare", cat, CLI_ENTRY_STACK, k->stack_name);
                hw_evolve(base, ev, k->gen, &k->hw);
                snprintf(k->label, sizeof k->label, "%s g%d%s%s", base->name, k->gen,
                         k->stack_name ? " " : "", k->stack_name ? k->stack_name : "");
            }
    }
    return 0;
}

int cli_compare(int argc, char **argv)
{
    compare_args a;
    int rc = parse_compare_args(argc, argv, &a);
    if (rc != CLI_OK || a.st.n) {
        cli_narrow_free(&a.nw);
        return rc == CLI_DONE ? 0 : rc != CLI_OK ? 1 : cli_compare_runs(&a.st);
    }
    ccs_catalog *cat = cli_catalog("compare", &a.catalogs);
    column c[CMP_MAX_COLS];
    int nc = 0;
    const ccs_model *m = cat ? catalog_model(cat, a.model) : NULL;
    const ccs_evolution *ev = cat ? catalog_evolution(cat, a.evolution) : NULL;
    ccs_plan job;
    plan_defaults(&job);
    if (!cat)
        rc = 1;
    else if (!m)
        rc = cli_unknown("compare", cat, CLI_ENTRY_MODEL, a.model);
    else if (!ev)
        rc = cli_unknown("compare", cat, CLI_ENTRY_EVOLUTION, a.evolution);
    else if (!a.gbs && !m->gbs)
        rc = cli_fail("compare", "--gbs: model '%s' has no global batch; give --gbs", m->name);
    else
        rc = resolve_columns(&a, cat, ev, c, &nc);
    if (rc == 0) {
        /* one job for every column: the fairness of the comparison */
        job.devices = (int32_t)a.devices;
        job.gbs = (int32_t)(a.gbs ? a.gbs : m->gbs);
        job.seq = (int32_t)(a.seq ? a.seq : m->seq ? m->seq : 2048);
        job.dtype = (int8_t)a.dtype;
        for (int i = 0; rc == 0 && i < nc; i++) {
            search_opts so = a.nw.so;
            if (a.fixed && i > 0 && c[0].found)
                fix_plan(&a.nw.so, &c[0].best.plan, &so);
            rc = search_column(m, ev, &job, &so, &a.nw, &c[i]);
        }
    }
    if (rc == 0) {
        char narrow[512];
        cli_narrow_text(&a.nw, narrow, sizeof narrow);
        if (!a.json)
            print_text(m, &job, &a, c, nc, narrow);
        else if (print_json(m, &job, &a, c, nc, narrow))
            rc = cli_fail("compare", "out of memory writing JSON") + 1;
    }
    catalog_free(cat);
    cli_narrow_free(&a.nw);
    return rc;
}
