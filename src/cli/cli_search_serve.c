/* cli_search_serve.c - 'ccsweep search --serve': the best serving plans of one
 * serving job (sweep/serve_search.h) under TTFT and TPOT limits, ranked by
 * output tokens/s per GPU, printed as a table or JSON. In phases: parse (one
 * table), resolve the names, search, print. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/sweep/serve_search.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define SERVE_TOP_MAX 1000

typedef struct sserve_args {
    const char *model, *hw, *evolution;
    cli_catalogs catalogs;
    long gen, top;
    int serve, json, no_chunked;
    double ttft_ms, tpot_ms;
    ccs_serve_plan job;
} sserve_args;

/* clang-format off */
#define A sserve_args
static const cli_opt sserve_opts[] = {
    CLI_O_FLAG("serve", A, serve, "search serving plans (this command)"),
    CLI_O_STR("model", "NAME", A, model, "catalog model (see 'ccsweep list models')"),
    CLI_O_STR("hw", "NAME", A, hw, "catalog hardware (see 'ccsweep list hardware')"),
    CLI_O_INT("devices", "N", A, job.devices, 1, CCS_MAX_DEVICES,
              "devices: each plan's replicas (tp x pp) must divide N"),
    CLI_O_INT("gen", "G", A, gen, 0, CCS_MAX_GEN, "hardware generation (0)"),
    CLI_O_STR("evolution", "RULE", A, evolution, "scaling rule for --gen (memory-wall)"),
    CLI_O_INT("isl", "IN", A, job.isl, 1, CCS_MAX_SEQ, "input (prompt) tokens per request"),
    CLI_O_INT("osl", "OUT", A, job.osl, 1, CCS_MAX_SEQ, "output tokens per request"),
    CLI_O_REAL("ttft-max", "MS", A, ttft_ms, 1e9, "time to first token limit, ms (none)"),
    CLI_O_REAL("tpot-max", "MS", A, tpot_ms, 1e9, "time per output token limit, ms (none)"),
    CLI_O_SERVE_FORMATS(A, job, no_chunked),
    CLI_O_INT("top", "K", A, top, 1, SERVE_TOP_MAX, "plans to print, 1..1000 (10)"),
    CLI_O_FLAG("json", A, json,
               "one JSON object: the job, counts, and the plans with\n"
               "the keys of 'serve --json'"),
    CLI_O_CATALOG(A, catalogs, "catalog overlay (repeatable)"),
    CLI_O_HELP,
};
#undef A
/* clang-format on */

static const cli_cmd sserve_cmd = {
    .name = "search",
    .synopsis =
        "ccsweep search --serve --model NAME --hw NAME --devices N --isl IN --osl OUT\n"
        "                      [--ttft-max MS] [--tpot-max MS] [--gen G] [--evolution RULE]\n"
        "                      [--weight-dtype T] [--kv-dtype T] [--top K] [--json]",
    .about = "Finds the best serving plans for one serving job: every replica shape of the\n"
             "model on the hardware generation (tp x pp dividing N; for a mixture of\n"
             "experts every ep dividing tp, and attention data parallelism with ep = tp)\n"
             "at every concurrency from 1 to what its KV cache holds. Best: the most\n"
             "output tokens/s per GPU within --ttft-max and --tpot-max; ties to lower\n"
             "TPOT, TTFT, then the simpler plan. Each plan is printed at its best\n"
             "concurrency (requests in flight per replica).",
    .opts = sserve_opts,
    .n_opts = sizeof sserve_opts / sizeof sserve_opts[0],
    .col = 22,
};

static void print_table(const sserve_args *a, const ccs_hw *hw, const serve_hit *top, int n,
                        const serve_search_stats *st)
{
    const ccs_serve_plan *j = &a->job;
    printf("%s on %s (generation %ld), %d devices, isl %d, osl %d, %s weights, %s KV\n", a->model,
           hw->name, a->gen, j->devices, j->isl, j->osl, serve_dtype_name(j->wdtype),
           serve_dtype_name(j->kvdtype));
    char ttft[32] = "none", tpot[32] = "none";
    if (a->ttft_ms > 0)
        snprintf(ttft, sizeof ttft, "%g ms", a->ttft_ms);
    if (a->tpot_ms > 0)
        snprintf(tpot, sizeof tpot, "%g ms", a->tpot_ms);
    printf("  limits: TTFT %s, TPOT %s; %lld plans, %lld fit, %lld meet the limits "
           "(%lld projections); best %d by output tokens/s per GPU\n\n",
           ttft, tpot, (long long)st->plans, (long long)st->fit, (long long)st->meet,
           (long long)st->projections, n);
    if (n == 0) {
        printf("  no plan %s\n", st->fit ? "meets the limits" : "fits device memory");
        return;
    }
    printf("  %3s %4s %3s %3s %3s %5s %6s %6s %9s %8s %10s %10s %6s %6s %6s\n", "#", "tp", "pp",
           "ep", "adp", "repl", "conc", "max", "TTFT ms", "TPOT ms", "tok/s/GPU", "tok/s sys",
           "comp", "mem", "comm");
    for (int i = 0; i < n; i++) {
        const ccs_serve_plan *p = &top[i].plan;
        const ccs_serve_result *r = &top[i].r;
        printf("  %3d %4d %3d %3d %3d %5d %6d %6d %9.2f %8.3f %10.1f %10.4g %5.1f%% %5.1f%% "
               "%5.1f%%\n",
               i + 1, p->tp, p->pp, p->ep, p->attn_dp, p->dp, r->concurrency, r->max_concurrency,
               r->ttft * 1e3, r->tpot * 1e3, r->tok_s_gpu, r->tok_s_system, 100 * r->share_compute,
               100 * r->share_memory, 100 * r->share_comm);
    }
    printf("\n  adp: attention data parallel; repl: replicas on the devices; conc: requests in "
           "flight per replica (max: what the KV cache holds); comp/mem/comm: the decode "
           "step's compute-bound, memory-bound and communication time\n");
}

static int print_json(const sserve_args *a, const ccs_hw *hw, const serve_hit *top, int n,
                      const serve_search_stats *st)
{
    json_t *o = json_object(), *arr = json_array();
    int rc = !o || !arr;
    if (!rc) {
        rc |= json_object_set_new(o, "model", json_string(a->model));
        rc |= json_object_set_new(o, "hardware", json_string(hw->name));
        rc |= json_object_set_new(o, "generation", json_integer(a->gen));
        rc |= json_object_set_new(o, "devices", json_integer(a->job.devices));
        rc |= json_object_set_new(o, "isl", json_integer(a->job.isl));
        rc |= json_object_set_new(o, "osl", json_integer(a->job.osl));
        rc |= json_object_set_new(o, "ttft_max",
                                  a->ttft_ms > 0 ? json_real(a->ttft_ms * 1e-3) : json_null());
        rc |= json_object_set_new(o, "tpot_max",
                                  a->tpot_ms > 0 ? json_real(a->tpot_ms * 1e-3) : json_null());
        rc |= json_object_set_new(o, "plans", json_integer(st->plans));
        rc |= json_object_set_new(o, "plans_fit", json_integer(st->fit));
        rc |= json_object_set_new(o, "plans_meet", json_integer(st->meet));
        rc |= json_object_set_new(o, "projections", json_integer(st->projections));
        for (int i = 0; !rc && i < n; i++) {
            json_t *e = cli_serve_json(a->model, hw, a->gen, &top[i].plan, &top[i].r);
            rc |= !e || json_array_append_new(arr, e);
        }
    }
    return cli_json_emit(o, arr, "top", rc);
}

int cli_search_serve(int argc, char **argv)
{
    sserve_args a;
    memset(&a, 0, sizeof a);
    a.evolution = "memory-wall";
    a.top = 10;
    serve_plan_defaults(&a.job);
    int first, rc = cli_opt_parse(&sserve_cmd, argc, argv, &a, stderr, &first);
    if (rc != CLI_OK)
        return rc == CLI_DONE ? 0 : 1;
    if (first < argc)
        return cli_fail("search", "unexpected argument '%s'", argv[first]);
    if (!a.model || !a.hw || !a.job.devices || !a.job.isl || !a.job.osl)
        return cli_fail("search", "--serve needs --model, --hw, --devices, --isl and --osl "
                                  "(see 'ccsweep search --serve --help')");
    a.job.chunked = (int8_t)!a.no_chunked;
    /* no MPI: under a launcher rank 0 alone searches and prints */
    if (cli_launch_rank() != 0)
        return 0;
    ccs_catalog *cat;
    const ccs_model *m;
    ccs_hw hw;
    rc = cli_serve_resolve("search", &a.catalogs, a.model, a.hw, a.evolution, a.gen, &cat, &m, &hw);
    if (rc)
        return rc;
    serve_hit *top = calloc((size_t)a.top, sizeof *top);
    if (!top) {
        catalog_free(cat);
        cli_fail("search", "out of memory");
        return 2;
    }
    serve_limits lim = {.ttft_max = a.ttft_ms * 1e-3, .tpot_max = a.tpot_ms * 1e-3};
    serve_search_stats st = {0};
    int n = 0;
    serve_search(m, &hw, &a.job, &lim, top, (int)a.top, &n, &st);
    if (a.json) {
        if (print_json(&a, &hw, top, n, &st)) {
            cli_fail("search", "out of memory writing JSON");
            rc = 2;
        }
    } else
        print_table(&a, &hw, top, n, &st);
    free(top);
    catalog_free(cat);
    return rc;
}
