/* cli_search.c - 'ccsweep search': the best plans of one training job (model,
 * hardware generation, devices, global batch, sequence), every valid plan
 * enumerated and projected (search.h), ranked as best.h defines, on one
 * process or across the ranks of a launcher (dist_search). */
#include "ccsweep/cli/cli.h"
#include "ccsweep/dist/dist.h"
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
    const char *model, *hw, *evolution, *stack;
    cli_catalogs catalogs;
    long devices, gen, seq, gbs, top, max_cp; /* seq, gbs 0: the model's */
    int dtype, json, serve; /* serve: only for --help (cli_search_serve takes --serve) */
} search_args;

/* The bounds are project's (CCS_MAX_*): a job search takes is one project takes. */
#define A search_args
static const cli_opt search_opts[] = {
    CLI_O_STR("model", "NAME", A, model, "catalog model (see 'ccsweep list models')"),
    CLI_O_STR("hw", "NAME", A, hw, "catalog hardware (see 'ccsweep list hardware')"),
    CLI_O_INT("devices", "N", A, devices, 1, CCS_MAX_DEVICES, "devices of the job"),
    CLI_O_INT("gen", "G", A, gen, 0, CCS_MAX_GEN, "hardware generation (0)"),
    CLI_O_STR("evolution", "RULE", A, evolution, "scaling rule for --gen (memory-wall)"),
    CLI_O_STR("stack", "NAME", A, stack,
              "software stack (see 'ccsweep list stacks'; megatron-core)"),
    CLI_O_INT("seq", "S", A, seq, 1, CCS_MAX_SEQ, "sequence length (the model's)"),
    CLI_O_INT("gbs", "B", A, gbs, 1, CCS_MAX_GBS, "global batch in sequences (the model's)"),
    CLI_O_ENUM("dtype", "T", A, dtype, dtype_parse, "bf16, fp16, fp8, tf32 or fp32",
               "arithmetic type (bf16)"),
    CLI_O_INT("max-cp", "C", A, max_cp, 1, CCS_MAX_DEVICES,
              "also try context parallelism up to cp = C (1: none, the\n"
              "space a sweep can hold; the space grows with C)"),
    CLI_O_INT("top", "K", A, top, 1, TOP_MAX, "plans to print, 1.." XSTR(TOP_MAX) " (10)"),
    CLI_O_FLAG("json", A, json,
               "one JSON object: the job, counts, and the plans with\n"
               "every output under the database's column names"),
    CLI_O_CATALOG(A, catalogs, "catalog overlay (repeatable)"),
    CLI_O_FLAG("serve", A, serve, "serving plans instead ('ccsweep search --serve --help')"),
    CLI_O_HELP,
};
#undef A

static const cli_cmd search_cmd = {
    .name = "search",
    .synopsis = "ccsweep search --model NAME --hw NAME --devices N [--gen G]\n"
                "                      [--evolution RULE] [--seq S] [--gbs B] [--dtype T]\n"
                "                      [--max-cp C] [--top K] [--json] [--catalog PATH]",
    .about = "Finds the best parallel plans for one training job: every valid plan of\n"
             "the model on N devices of the hardware generation (tp x cp x pp x dp = N,\n"
             "vpp, micro-batch, recompute, sequence parallelism, ZeRO 0-3, flash\n"
             "attention, DP overlap mode) is projected, and the K best are printed with\n"
             "their time\n"
             "breakdown. Best: highest tokens/s at this model, hardware generation,\n"
             "devices, global batch and sequence; ties to lower memory per device\n"
             "(results/README.md, \"Best plan\": the best_plan view ranks the same way).\n"
             "Under mpirun the plans are split over the ranks; rank 0 prints.",
    .opts = search_opts,
    .n_opts = sizeof search_opts / sizeof search_opts[0],
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
    int first, rc = cli_opt_parse(&search_cmd, argc, argv, a, stderr, &first);
    if (rc != CLI_OK)
        return rc;
    if (first < argc)
        return cli_fail("search", "unexpected argument '%s'", argv[first]);
    if (!a->model || !a->hw || !a->devices)
        return cli_fail("search", "--model, --hw and --devices are required "
                                  "(see 'ccsweep search --help')");
    return CLI_OK;
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

static void print_table(const ccs_model *m, const ccs_hw *hw, const char *evo, int gen,
                        const ccs_plan *job, const search_hit *top, int n, const search_stats *st,
                        double secs, int ranks)
{
    printf("%s on %s (generation %d%s%s), %d devices, gbs %d, seq %d, %s\n", m->name, hw->name, gen,
           gen ? ", " : "", gen ? evo : "", job->devices, job->gbs, job->seq,
           dtype_name(job->dtype));
    printf("  %lld plans projected, %lld fit; best %d by tokens/s (ties: memory per device); "
           "%.3f s on %d rank%s\n\n",
           (long long)st->plans, (long long)st->fit, n, secs, ranks, ranks == 1 ? "" : "s");
    if (n == 0) {
        printf("  no plan fits %d x %s memory (%.1f GiB per device)\n", job->devices, hw->name,
               hw->mem_cap / 1073741824.0);
        return;
    }
    printf("  %3s %4s %3s %3s %4s %5s %3s %4s %-9s %2s %4s %2s %-6s %9s %11s %5s %6s %7s  %6s "
           "%6s %6s %6s %6s\n",
           "#", "tp", "cp", "ep", "pp", "dp", "vpp", "mbs", "recompute", "sp", "zero", "fa", "dpov",
           "t_iter", "tokens/s", "mfu", "comm", "mem GiB", "comp", "tp", "dp", "pp", "bubble");
    for (int i = 0; i < n; i++) {
        const ccs_plan *p = &top[i].plan;
        const ccs_result *r = &top[i].r;
        double t = r->t_iter > 0 ? r->t_iter : 1;
        printf(
            "  %3d %4d %3d %3d %4d %5d %3d %4d %-9s %2d %4d %2d %-6s %8.4fs %11.4g %4.1f%% %5.1f%% "
            "%7.2f  %5.1f%% %5.1f%% %5.1f%% %5.1f%% %5.1f%%\n",
            i + 1, p->tp, plan_cp(p), plan_ep(p), p->pp, p->dp, p->vpp, p->mbs,
            recompute_name(p->recompute), p->sp, p->zero, p->flash_attn, dpov_short(p->dp_overlap),
            r->t_iter, r->tokens_per_s, 100 * r->mfu, 100 * r->comm_fraction,
            r->mem_total / 1073741824.0, 100 * r->t_compute / t, 100 * r->t_tp_comm_exposed / t,
            100 * r->t_dp_comm_exposed / t, 100 * r->t_pp_comm / t, 100 * r->t_bubble / t);
    }
    printf("\n  comp/tp/dp/pp/bubble: compute, exposed TP, exposed DP, pipeline p2p and bubble "
           "in %% of t_iter; fa: flash attention; dpov: DP gradient reduction overlap\n");
}

static int print_json(const ccs_model *m, const ccs_hw *hw, const char *evo, int gen,
                      const ccs_stack *stk, const ccs_plan *job, const search_hit *top, int n,
                      const search_stats *st, double secs, int ranks)
{
    json_t *o = json_object(), *arr = json_array();
    int rc = !o || !arr;
    if (!rc) {
        rc |= json_object_set_new(o, "model", json_string(m->name));
        rc |= json_object_set_new(o, "hardware", json_string(hw->name));
        rc |= json_object_set_new(o, "generation", json_integer(gen));
        rc |= json_object_set_new(o, "evolution", gen ? json_string(evo) : json_null());
        rc |= json_object_set_new(o, "stack", json_string(stk ? stk->name : "megatron-core"));
        rc |= json_object_set_new(o, "devices", json_integer(job->devices));
        rc |= json_object_set_new(o, "gbs", json_integer(job->gbs));
        rc |= json_object_set_new(o, "seq", json_integer(job->seq));
        rc |= json_object_set_new(o, "dtype", json_string(dtype_name(job->dtype)));
        rc |= json_object_set_new(o, "plans", json_integer(st->plans));
        rc |= json_object_set_new(o, "plans_fit", json_integer(st->fit));
        rc |= json_object_set_new(o, "seconds", json_real(secs));
        rc |= json_object_set_new(o, "ranks", json_integer(ranks));
        for (int i = 0; !rc && i < n; i++) {
            json_t *e = cli_json_projection(m, hw, gen ? evo : NULL, stk, &top[i].plan, &top[i].r,
                                            NULL, NULL);
            rc |= !e || json_array_append_new(arr, e);
        }
        rc |= json_object_set(o, "top", arr);
    }
    if (!rc)
        rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    fputc('\n', stdout);
    json_decref(arr);
    json_decref(o);
    return rc ? -1 : 0;
}

/* ---- resolve and compute --------------------------------------------------------- */

/* A job ready to search: its names looked up, its batch and sequence fixed. */
typedef struct search_job {
    ccs_catalog *cat;
    const ccs_model *m;     /* borrowed from cat */
    ccs_hw hw;              /* at generation gen */
    ccs_plan job;           /* devices, gbs, seq, dtype */
    const ccs_stack *stack; /* borrowed from cat; NULL: the default */
    ccs_search *s;
} search_job;

/* 0, or the exit status with the message printed; j owns what it holds
 * either way (search_job_free). */
static int resolve_search(const search_args *a, search_job *j)
{
    memset(j, 0, sizeof *j);
    if (!(j->cat = cli_catalog("search", &a->catalogs)))
        return 1;
    const ccs_model *m = j->m = catalog_model(j->cat, a->model);
    const ccs_hw *base = catalog_hw(j->cat, a->hw);
    const ccs_evolution *ev = catalog_evolution(j->cat, a->evolution);
    if (!m)
        return cli_unknown("search", j->cat, CLI_ENTRY_MODEL, a->model);
    if (!base)
        return cli_unknown("search", j->cat, CLI_ENTRY_HW, a->hw);
    if (!ev && a->gen > 0)
        return cli_unknown("search", j->cat, CLI_ENTRY_EVOLUTION, a->evolution);
    const ccs_stack *st = a->stack ? catalog_stack(j->cat, a->stack) : NULL;
    if (a->stack && !st)
        return cli_unknown("search", j->cat, CLI_ENTRY_STACK, a->stack);
    /* The job is fixed: plans are only compared at this batch and sequence,
     * never at one made up per plan. */
    long gbs = a->gbs, seq = a->seq;
    if (!gbs && !(gbs = m->gbs))
        return cli_fail("search", "--gbs: model '%s' has no global batch; give --gbs", m->name);
    if (!seq)
        seq = m->seq ? m->seq : 2048;
    hw_evolve(base, ev, (int)a->gen, &j->hw);
    ccs_err err;
    j->s = search_new(m, &j->hw, NULL, ev, (int)a->gen, (int32_t)a->devices, (int32_t)gbs,
                      (int32_t)seq, a->dtype, (int32_t)a->max_cp, &err);
    if (!j->s) {
        cli_fail("search", "%s", err.msg);
        return 2;
    }
    search_set_stack(j->s, st);
    j->stack = st;
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
    if (rc != CLI_OK)
        return rc == CLI_DONE ? 0 : 1;
    search_job j;
    search_out o = {0};
    rc = resolve_search(&a, &j);
    if (rc == 0)
        rc = compute_search(argc, argv, a.top, &j, &o);
    if (rc == 0 && o.rank == 0 && a.json) {
        if (print_json(j.m, &j.hw, a.evolution, (int)a.gen, j.stack, &j.job, o.top, o.n, &o.st,
                       o.secs, o.ranks)) {
            cli_fail("search", "out of memory writing JSON");
            rc = 2;
        }
    } else if (rc == 0 && o.rank == 0) {
        print_table(j.m, &j.hw, a.evolution, (int)a.gen, &j.job, o.top, o.n, &o.st, o.secs,
                    o.ranks);
    }
    free(o.top);
    search_job_free(&j);
    return rc;
}
