/* cli_search.c - 'ccsweep search': the best plans of one training job (model,
 * hardware generation, devices, global batch, sequence), every valid plan
 * enumerated and projected (search.h), ranked as best.h defines, on one
 * process or across the ranks of a launcher (dist_search). */
#include "ccsweep/cli/cli.h"
#include "ccsweep/cli/cli_narrow.h"
#include "ccsweep/dist/dist.h"
#include "ccsweep/model/hfconfig.h"
#include "ccsweep/sweep/search.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOP_MAX 1000
#define XSTR(x) STR(x)
#define STR(x) #x

/* ---- options ------------------------------------------------------------------ */

typedef struct search_args {
    const char *model, *hw, *evolution, *stack, *model_config;
    cli_catalogs catalogs;
    long devices, gen, seq, gbs, top, max_cp; /* seq, gbs 0: the model's */
    int dtype, json, csv, serve; /* serve: only for --help (cli_search_serve takes --serve) */
    cli_narrow nw;               /* --tp LIST ..., --max-mem-frac, --where */
} search_args;

/* The bounds are project's (CCS_MAX_*): a job search takes is one project takes. */
#define A search_args
static const cli_opt search_rows[] = {
    CLI_O_STR("model", "NAME", A, model, "catalog model (see 'ccsweep list models')"),
    CLI_O_STR("model-config", "FILE", A, model_config,
              "the model of a Hugging Face config.json instead"),
    CLI_O_STR("hw", "NAME", A, hw, "catalog hardware (see 'ccsweep list hardware')"),
    CLI_O_INT("devices", "N", A, devices, 1, CCS_MAX_DEVICES, "devices of the job"),
    CLI_O_INT("gen", "G", A, gen, 0, CCS_MAX_GEN, "hardware generation (0)"),
    CLI_O_STR("evolution", "RULE", A, evolution, "scaling rule for --gen (memory-wall)"),
    CLI_O_INT("seq", "S", A, seq, 1, CCS_MAX_SEQ, "sequence length (the model's)"),
    CLI_O_INT("gbs", "B", A, gbs, 1, CCS_MAX_GBS, "global batch in sequences (the model's)"),
    CLI_O_ENUM("dtype", "T", A, dtype, dtype_parse, "bf16, fp16, fp8, tf32 or fp32",
               "arithmetic type (bf16)"),
    CLI_O_INT("max-cp", "C", A, max_cp, 1, CCS_MAX_DEVICES,
              "also try context parallelism up to cp = C (1: none, the\n"
              "space a sweep can hold; the space grows with C)"),
    CLI_O_STR("stack", "NAME", A, stack, "software stack (see 'ccsweep list stacks')"),
    CLI_NARROW_ROWS(A, nw),
    CLI_O_INT("top", "K", A, top, 1, TOP_MAX,
              "distinct answers to print, 1.." XSTR(
                  TOP_MAX) " (10): plans\n"
                           "with the same outputs are one answer, listed on its line"),
    CLI_O_FLAG("json", A, json,
               "one JSON object: the job, counts, and the plans with\n"
               "every output under the database's column names"),
    CLI_O_FLAG("csv", A, csv, "one CSV row per plan, every output a column"),
    CLI_O_CATALOG(A, catalogs, "catalog overlay (repeatable)"),
    CLI_O_FLAG("serve", A, serve, "serving plans instead ('ccsweep search --serve --help')"),
    CLI_O_HELP,
};
#undef A

static const cli_cmd search_cmd = {
    .name = "search",
    .synopsis = "ccsweep search --model NAME --hw NAME --devices N [--gen G]\n"
                "                      [--evolution RULE] [--seq S] [--gbs B] [--dtype T]\n"
                "                      [--max-cp C] [--stack NAME] [--tp LIST] [--pp LIST] ...\n"
                "                      [--max-mem-frac X] [--where EXPR] [--top K]\n"
                "                      [--json | --csv] [--catalog PATH]",
    .about = "Finds the best parallel plans for one training job: every valid plan of\n"
             "the model on N devices of the hardware generation (tp x cp x pp x dp = N,\n"
             "vpp, micro-batch, recompute, sequence parallelism, ZeRO 0-3, flash\n"
             "attention, DP overlap mode) is projected, and the K best are printed with\n"
             "their time breakdown. Best: highest tokens/s at this model, hardware\n"
             "generation, devices, global batch and sequence; ties to lower memory per\n"
             "device (results/README.md, \"Best plan\": the best_plan view ranks the\n"
             "same way). Plans whose outputs are all the same are one answer: the best\n"
             "of them is shown, and its line lists the settings of the others. The\n"
             "options below narrow the space; under mpirun the plans are split over the\n"
             "ranks and rank 0 prints.",
    .opts = search_rows,
    .n_opts = sizeof search_rows / sizeof search_rows[0],
    .col = 18,
};

/* CLI_OK, CLI_BAD (message printed) or CLI_DONE (--help). */
static int parse_search_args(int argc, char **argv, search_args *a)
{
    memset(a, 0, sizeof *a);
    a->evolution = "memory-wall";
    a->top = 10;
    a->max_cp = 1;
    a->dtype = CCS_BF16;
    cli_narrow_init(&a->nw);
    int first, rc = cli_opt_parse(&search_cmd, argc, argv, a, stderr, &first);
    if (rc != CLI_OK)
        return rc;
    if (first < argc)
        return cli_fail("search", "unexpected argument '%s'", argv[first]);
    if ((!a->model && !a->model_config) || !a->hw || !a->devices)
        return cli_fail("search", "--model (or --model-config), --hw and --devices are required "
                                  "(see 'ccsweep search --help')");
    if (a->model && a->model_config)
        return cli_fail("search", "--model and --model-config: give one");
    if (a->json && a->csv)
        return cli_fail("search", "--json and --csv: give one");
    if (a->nw.so.ax[SEARCH_AX_CP].n && a->max_cp > 1)
        return cli_fail("search", "--cp and --max-cp: give one");
    a->nw.so.max_cp = (int32_t)a->max_cp;
    return cli_narrow_prepare("search", &a->nw) ? CLI_BAD : CLI_OK;
}

/* A launcher started this process (then MPI is used; a plain run needs none). */
static int launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *dpov_short(int mode)
{
    static const char *const n[] = {"none", "last", "bucket"};
    return mode >= 0 && mode < 3 ? n[mode] : "?";
}

/* The job, its answer and how it was found: what every output format prints. */
typedef struct search_view {
    const ccs_model *m;
    const ccs_hw *hw;
    const char *evo; /* NULL at generation 0 */
    const char *stack;
    const ccs_stack *stk; /* NULL: the default */
    int gen;
    const ccs_plan *job;
    const ccs_search *s;
    const search_hit *top;
    int n, ranks;
    const search_stats *st;
    const char *where; /* --where text, or NULL */
    int where_first;   /* 1: --where names no output, so drops plans before projection */
    double secs;
    char narrow[512]; /* cli_narrow_text */
} search_view;

static void print_table(const search_view *v)
{
    const ccs_plan *job = v->job;
    printf("%s on %s (generation %d%s%s), %d devices, gbs %d, seq %d, %s%s%s\n", v->m->name,
           v->hw->name, v->gen, v->evo ? ", " : "", v->evo ? v->evo : "", job->devices, job->gbs,
           job->seq, dtype_name(job->dtype), v->stack ? ", stack " : "", v->stack ? v->stack : "");
    if (v->narrow[0])
        printf("  only plans with %s\n", v->narrow);
    const search_stats *st = v->st;
    long long dropped = (long long)st->filtered;
    if (v->where && v->where_first && dropped == st->plans)
        printf("  %lld plans, all dropped by --where before projection", (long long)st->plans);
    else if (v->where && v->where_first)
        printf("  %lld plans, %lld dropped by --where before projection; of the other %lld, "
               "%lld fit",
               (long long)st->plans, dropped, (long long)(st->plans - st->filtered),
               (long long)st->fit);
    else if (v->where)
        printf("  %lld plans projected, %lld fit, %lld of them dropped by --where",
               (long long)st->plans, (long long)st->fit, dropped);
    else
        printf("  %lld plans projected, %lld fit", (long long)st->plans, (long long)st->fit);
    printf("; best %d by tokens/s (ties: memory per device); %.3f s on %d rank%s\n\n", v->n,
           v->secs, v->ranks, v->ranks == 1 ? "" : "s");
    if (v->n == 0 && v->where && st->plans > 0 && dropped == st->plans)
        printf("  no plan passes --where '%s': it drops all %lld plans before projection\n",
               v->where, dropped);
    else if (v->n == 0 && v->where && !v->where_first && st->fit > 0)
        printf("  no plan passes --where '%s': it drops all %lld plans that fit memory\n", v->where,
               (long long)st->fit);
    if (v->n == 0 && (!v->where || (st->fit == 0 && dropped < st->plans)))
        printf("  no plan %sfits %d x %s memory (%.1f GiB per device)%s\n",
               v->where && v->where_first ? "--where keeps " : "", job->devices, v->hw->name,
               v->hw->mem_cap / 1073741824.0, v->narrow[0] ? " under these limits" : "");
    if (v->n == 0)
        return;
    printf("  %3s %4s %3s %3s %4s %5s %3s %4s %-9s %2s %4s %2s %-6s %9s %11s %5s %6s %7s  %6s "
           "%6s %6s %6s %6s  %s\n",
           "#", "tp", "cp", "ep", "pp", "dp", "vpp", "mbs", "recompute", "sp", "zero", "fa", "dpov",
           "t_iter", "tokens/s", "mfu", "comm", "mem GiB", "comp", "tp", "dp", "pp", "bubble",
           "same outputs");
    int same = 0;
    for (int i = 0; i < v->n; i++) {
        const ccs_plan *p = &v->top[i].plan;
        const ccs_result *r = &v->top[i].r;
        double sh[CLI_N_SHARES];
        char eq[512];
        cli_shares(r, sh);
        search_same_text(v->s, &v->top[i], eq, sizeof eq);
        same |= eq[0] != '\0';
        printf(
            "  %3d %4d %3d %3d %4d %5d %3d %4d %-9s %2d %4d %2d %-6s %8.4fs %11.4g %4.1f%% %5.1f%% "
            "%7.2f  %5.1f%% %5.1f%% %5.1f%% %5.1f%% %5.1f%%  %s\n",
            i + 1, p->tp, plan_cp(p), plan_ep(p), p->pp, p->dp, p->vpp, p->mbs,
            recompute_name(p->recompute), p->sp, p->zero, p->flash_attn, dpov_short(p->dp_overlap),
            r->t_iter, r->tokens_per_s, 100 * r->mfu, 100 * r->comm_fraction,
            r->mem_total / 1073741824.0, sh[0], sh[1], sh[4], sh[5], sh[6], eq);
    }
    printf("\n  comp/tp/dp/pp/bubble: compute, exposed TP, exposed DP, pipeline p2p and bubble "
           "in %% of t_iter; fa: flash attention; dpov: DP gradient reduction overlap\n");
    if (same)
        printf("  same outputs: the settings of plans whose every output equals the line's "
               "(a x b: every combination)\n");
}

static void print_csv(const search_view *v)
{
    cli_hits_csv_header(stdout, NULL);
    for (int i = 0; i < v->n; i++) {
        char eq[512];
        cli_hits_csv_row(stdout, NULL, i + 1, &v->top[i],
                         search_same_text(v->s, &v->top[i], eq, sizeof eq));
    }
}

static int print_json(const search_view *v)
{
    json_t *o = json_object(), *arr = json_array();
    int rc = !o || !arr;
    if (!rc) {
        rc |= cli_json_job(o, v->m, v->job, v->narrow);
        rc |= json_object_set_new(o, "hardware", json_string(v->hw->name));
        rc |= json_object_set_new(o, "generation", json_integer(v->gen));
        rc |= json_object_set_new(o, "evolution", v->evo ? json_string(v->evo) : json_null());
        rc |= json_object_set_new(o, "stack", json_string(v->stk ? v->stk->name : "megatron-core"));
        rc |= json_object_set_new(o, "plans", json_integer(v->st->plans));
        rc |= json_object_set_new(o, "plans_fit", json_integer(v->st->fit));
        rc |= json_object_set_new(o, "plans_filtered", json_integer(v->st->filtered));
        rc |= json_object_set_new(o, "plans_kept", json_integer(v->st->kept));
        rc |= json_object_set_new(o, "where_before_projection",
                                  v->where ? json_boolean(v->where_first) : json_null());
        rc |= json_object_set_new(o, "seconds", json_real(v->secs));
        rc |= json_object_set_new(o, "ranks", json_integer(v->ranks));
        for (int i = 0; !rc && i < v->n; i++) {
            char eq[512];
            json_t *e = cli_json_projection(v->m, v->hw, v->evo, v->stk, &v->top[i].plan,
                                            &v->top[i].r, NULL, NULL);
            rc |= !e;
            if (!rc) {
                rc |= json_object_set_new(e, "same_plans", json_integer(v->top[i].n_same));
                rc |= json_object_set_new(
                    e, "same_settings",
                    json_string(search_same_text(v->s, &v->top[i], eq, sizeof eq)));
            }
            rc |= !e || json_array_append_new(arr, e);
        }
    }
    return cli_json_emit(o, arr, "top", rc);
}

/* ---- resolve and compute --------------------------------------------------------- */

/* A job ready to search: its names looked up, its batch and sequence fixed. */
typedef struct search_job {
    ccs_catalog *cat;
    const ccs_model *m;     /* borrowed from cat, or own */
    ccs_model own;          /* --model-config's */
    const ccs_stack *stack; /* borrowed from cat; NULL: the default */
    ccs_hw hw;              /* at generation gen */
    ccs_plan job;           /* devices, gbs, seq, dtype */
    ccs_search *s;
} search_job;

/* 0, or the exit status with the message printed; j owns what it holds
 * either way (search_job_free). */
static int resolve_search(const search_args *a, search_job *j)
{
    memset(j, 0, sizeof *j);
    if (!(j->cat = cli_catalog("search", &a->catalogs)))
        return 1;
    ccs_err err;
    if (a->model_config && hfconfig_load(a->model_config, NULL, &j->own, &err) != CCS_OK)
        return cli_fail("search", "--model-config: %s", err.msg);
    const ccs_model *m = j->m = a->model_config ? &j->own : catalog_model(j->cat, a->model);
    const ccs_hw *base = catalog_hw(j->cat, a->hw);
    const ccs_evolution *ev = catalog_evolution(j->cat, a->evolution);
    if (!m)
        return cli_unknown("search", j->cat, CLI_ENTRY_MODEL, a->model);
    if (!base)
        return cli_unknown("search", j->cat, CLI_ENTRY_HW, a->hw);
    if (!ev && a->gen > 0)
        return cli_unknown("search", j->cat, CLI_ENTRY_EVOLUTION, a->evolution);
    if (a->stack && !(j->stack = catalog_stack(j->cat, a->stack)))
        return cli_unknown("search", j->cat, CLI_ENTRY_STACK, a->stack);
    /* The job is fixed: plans are only compared at this batch and sequence,
     * never at one made up per plan. */
    long gbs = a->gbs, seq = a->seq;
    if (!gbs && !(gbs = m->gbs))
        return cli_fail("search", "--gbs: model '%s' has no global batch; give --gbs", m->name);
    if (!seq)
        seq = m->seq ? m->seq : 2048;
    hw_evolve(base, ev, (int)a->gen, &j->hw);
    search_opts so = a->nw.so;
    so.stack = j->stack;
    j->s = search_new_opts(m, &j->hw, NULL, ev, (int)a->gen, (int32_t)a->devices, (int32_t)gbs,
                           (int32_t)seq, a->dtype, &so, &err);
    if (!j->s) {
        cli_fail("search", "%s", err.msg);
        return 2;
    }
    plan_defaults(&j->job);
    j->job.devices = (int32_t)a->devices;
    j->job.gbs = (int32_t)gbs;
    j->job.seq = (int32_t)seq;
    j->job.dtype = (int8_t)a->dtype;
    return 0;
}

static void search_job_free(search_job *j)
{
    search_free(j->s);
    catalog_free(j->cat);
}

/* The best plans found, and how they were found. */
typedef struct search_out {
    search_hit *top; /* n of them, best first */
    int n, ranks, rank;
    search_stats st;
    double secs;
} search_out;

/* Search every plan of j, over the ranks of a launcher when there is one.
 * 0, or 2 with the message printed. */
static int compute_search(int argc, char **argv, long topk, search_job *j, search_out *o)
{
    o->ranks = 1;
    if (!(o->top = calloc((size_t)topk, sizeof *o->top))) {
        cli_fail("search", "out of memory");
        return 2;
    }
    double t0 = now_s();
    if (launched()) {
        if (dist_init(&argc, &argv) != CCS_OK) {
            cli_fail("search", "MPI_Init failed");
            return 2;
        }
        dist_comm *w = dist_world();
        o->ranks = dist_size(w);
        o->rank = dist_rank(w);
        int r = dist_search(w, j->s, (int)topk, o->top, &o->n, &o->st);
        dist_finalize();
        if (r != CCS_OK) {
            if (o->rank == 0)
                cli_fail("search", "out of memory");
            return 2;
        }
    } else if (search_count(j->s) > 0) {
        search_range(j->s, 0, search_count(j->s), 1, o->top, (int)topk, &o->n, &o->st);
    }
    o->secs = now_s() - t0;
    return 0;
}

/* ---- the command ----------------------------------------------------------------- */

int cli_search(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--serve"))
            return cli_search_serve(argc, argv);
    search_args a;
    int rc = parse_search_args(argc, argv, &a);
    if (rc != CLI_OK) {
        cli_narrow_free(&a.nw);
        return rc == CLI_DONE ? 0 : 1;
    }
    search_job j;
    search_out o = {0};
    rc = resolve_search(&a, &j);
    if (rc == 0)
        rc = compute_search(argc, argv, a.top, &j, &o);
    if (rc == 0 && o.rank == 0 && o.st.undefined)
        rc = cli_where_undefined("search", &a.nw, j.s, &o.st);
    if (rc == 0 && o.rank == 0) {
        search_view v = {.m = j.m,
                         .hw = &j.hw,
                         .evo = a.gen ? a.evolution : NULL,
                         .stack = a.stack,
                         .stk = j.stack,
                         .gen = (int)a.gen,
                         .job = &j.job,
                         .s = j.s,
                         .top = o.top,
                         .n = o.n,
                         .ranks = o.ranks,
                         .st = &o.st,
                         .where = a.nw.where,
                         .where_first = a.nw.expr && !expr_uses_results(a.nw.expr),
                         .secs = o.secs};
        cli_narrow_text(&a.nw, v.narrow, sizeof v.narrow);
        if (a.csv) {
            print_csv(&v);
        } else if (!a.json) {
            print_table(&v);
        } else if (print_json(&v)) {
            cli_fail("search", "out of memory writing JSON");
            rc = 2;
        }
    }
    free(o.top);
    search_job_free(&j);
    cli_narrow_free(&a.nw);
    return rc;
}
