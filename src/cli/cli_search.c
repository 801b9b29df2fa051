/* cli_search.c - 'ccsweep search': the best plans of one training job (model,
 * hardware generation, devices, global batch, sequence), every valid plan
 * enumerated and projected (search.h), ranked as best.h defines, on one
 * process or across the ranks of a launcher (dist_search). */
#include "ccsweep/cli/cli.h"
#include "ccsweep/dist/dist.h"
#include "ccsweep/sweep/search.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOP_MAX 1000

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ccsweep search --model NAME --hw NAME --devices N [--gen G]\n"
            "                      [--evolution RULE] [--seq S] [--gbs B] [--dtype T]\n"
            "                      [--max-cp C] [--top K] [--json] [--catalog PATH]\n\n"
            "Finds the best parallel plans for one training job: every valid plan of\n"
            "the model on N devices of the hardware generation (tp x cp x pp x dp = N,\n"
            "vpp, micro-batch, recompute, sequence parallelism, ZeRO 0-3, flash\n"
            "attention, DP overlap mode) is projected, and the K best are printed with\n"
            "their time\n"
            "breakdown. Best: highest tokens/s at this model, hardware generation,\n"
            "devices, global batch and sequence; ties to lower memory per device\n"
            "(results/README.md, \"Best plan\": the best_plan view ranks the same way).\n"
            "Under mpirun the plans are split over the ranks; rank 0 prints.\n\n"
            "  --model NAME       catalog model (see 'ccsweep list models')\n"
            "  --hw NAME          catalog hardware (see 'ccsweep list hardware')\n"
            "  --devices N        devices of the job\n"
            "  --gen G            hardware generation (0)\n"
            "  --evolution RULE   scaling rule for --gen (memory-wall)\n"
            "  --seq S            sequence length (the model's)\n"
            "  --gbs B            global batch in sequences (the model's)\n"
            "  --dtype T          arithmetic type (bf16)\n"
            "  --max-cp C         also try context parallelism up to cp = C (1: none, the\n"
            "                     space a sweep can hold; the space grows with C)\n"
            "  --top K            plans to print, 1..%d (10)\n"
            "  --json             one JSON object: the job, counts, and the plans with\n"
            "                     every output under the database's column names\n"
            "  --catalog PATH     catalog overlay (repeatable)\n",
            TOP_MAX);
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
                      const ccs_plan *job, const search_hit *top, int n, const search_stats *st,
                      double secs, int ranks)
{
    json_t *o = json_object(), *arr = json_array();
    int rc = !o || !arr;
    if (!rc) {
        rc |= json_object_set_new(o, "model", json_string(m->name));
        rc |= json_object_set_new(o, "hardware", json_string(hw->name));
        rc |= json_object_set_new(o, "generation", json_integer(gen));
        rc |= json_object_set_new(o, "evolution", gen ? json_string(evo) : json_null());
        rc |= json_object_set_new(o, "devices", json_integer(job->devices));
        rc |= json_object_set_new(o, "gbs", json_integer(job->gbs));
        rc |= json_object_set_new(o, "seq", json_integer(job->seq));
        rc |= json_object_set_new(o, "dtype", json_string(dtype_name(job->dtype)));
        rc |= json_object_set_new(o, "plans", json_integer(st->plans));
        rc |= json_object_set_new(o, "plans_fit", json_integer(st->fit));
        rc |= json_object_set_new(o, "seconds", json_real(secs));
        rc |= json_object_set_new(o, "ranks", json_integer(ranks));
        for (int i = 0; !rc && i < n; i++) {
            json_t *e =
                cli_json_projection(m, hw, gen ? evo : NULL, &top[i].plan, &top[i].r, NULL, NULL);
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

enum {
    O_MODEL = 1,
    O_HW,
    O_DEVICES,
    O_GEN,
    O_EVO,
    O_SEQ,
    O_GBS,
    O_DTYPE,
    O_TOP,
    O_JSON,
    O_CATALOG,
    O_HELP,
    O_MAXCP
};

int cli_search(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, O_MODEL},     {"hw", required_argument, 0, O_HW},
        {"devices", required_argument, 0, O_DEVICES}, {"gen", required_argument, 0, O_GEN},
        {"evolution", required_argument, 0, O_EVO},   {"seq", required_argument, 0, O_SEQ},
        {"gbs", required_argument, 0, O_GBS},         {"dtype", required_argument, 0, O_DTYPE},
        {"top", required_argument, 0, O_TOP},         {"json", no_argument, 0, O_JSON},
        {"catalog", required_argument, 0, O_CATALOG}, {"help", no_argument, 0, O_HELP},
        {"max-cp", required_argument, 0, O_MAXCP},    {0, 0, 0, 0}};
    const char *model_name = NULL, *hw_name = NULL, *evo_name = "memory-wall",
               *catdirs[CLI_MAX_CATALOGS];
    size_t ncat = 0;
    long devices = 0, gen = 0, seq = 0, gbs = 0, topk = 10, max_cp = 1;
    int dtype = CCS_BF16, json = 0;
    const long IMAX = 2147483647L;

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case O_MODEL:
            model_name = optarg;
            break;
        case O_HW:
            hw_name = optarg;
            break;
        case O_DEVICES:
            bad = cli_int("search", "--devices", optarg, 1, IMAX, &devices);
            break;
        case O_GEN:
            bad = cli_int("search", "--gen", optarg, 0, 64, &gen);
            break;
        case O_EVO:
            evo_name = optarg;
            break;
        case O_SEQ:
            bad = cli_int("search", "--seq", optarg, 1, IMAX, &seq);
            break;
        case O_GBS:
            bad = cli_int("search", "--gbs", optarg, 1, IMAX, &gbs);
            break;
        case O_TOP:
            bad = cli_int("search", "--top", optarg, 1, TOP_MAX, &topk);
            break;
        case O_MAXCP:
            bad = cli_int("search", "--max-cp", optarg, 1, IMAX, &max_cp);
            break;
        case O_DTYPE:
            if ((dtype = dtype_parse(optarg)) < 0) {
                fprintf(stderr,
                        "ccsweep search: --dtype: expected bf16, fp16, fp8, tf32 or fp32, "
                        "got '%s'\n",
                        optarg);
                bad = -1;
            }
            break;
        case O_JSON:
            json = 1;
            break;
        case O_CATALOG:
            bad = cli_add_catalog("search", catdirs, &ncat, optarg);
            break;
        case O_HELP:
            usage(stdout);
            return 0;
        default:
            cli_bad_option("search", argv[optind - 1], opts);
            return 1;
        }
        if (bad)
            return 1;
    }
    if (optind < argc) {
        fprintf(stderr, "ccsweep search: unexpected argument '%s'\n", argv[optind]);
        return 1;
    }
    if (!model_name || !hw_name || !devices) {
        fprintf(stderr, "ccsweep search: --model, --hw and --devices are required "
                        "(see 'ccsweep search --help')\n");
        return 1;
    }

    ccs_catalog *cat = cli_catalog("search", catdirs, ncat);
    if (!cat)
        return 1;
    int rc = 1;
    ccs_search *s = NULL;
    search_hit *top = NULL;
    const ccs_model *m = catalog_model(cat, model_name);
    const ccs_hw *base = catalog_hw(cat, hw_name);
    const ccs_evolution *ev = catalog_evolution(cat, evo_name);
    if (!m) {
        fprintf(stderr, "ccsweep search: --model: unknown model '%s' (see 'ccsweep list models')\n",
                model_name);
        goto out;
    }
    if (!base) {
        fprintf(stderr,
                "ccsweep search: --hw: unknown hardware '%s' (see 'ccsweep list hardware')\n",
                hw_name);
        goto out;
    }
    if (!ev && gen > 0) {
        fprintf(stderr,
                "ccsweep search: --evolution: unknown rule '%s' (see 'ccsweep list evolutions')\n",
                evo_name);
        goto out;
    }
    /* The job is fixed: plans are only compared at this batch and sequence,
     * never at one made up per plan. */
    if (!gbs && !(gbs = m->gbs)) {
        fprintf(stderr, "ccsweep search: --gbs: model '%s' has no global batch; give --gbs\n",
                m->name);
        goto out;
    }
    if (!seq)
        seq = m->seq ? m->seq : 2048;

    ccs_hw hw;
    hw_evolve(base, ev, (int)gen, &hw);
    ccs_err err;
    s = search_new(m, &hw, NULL, ev, (int)gen, (int32_t)devices, (int32_t)gbs, (int32_t)seq, dtype,
                   (int32_t)max_cp, &err);
    top = calloc((size_t)topk, sizeof *top);
    if (!s || !top) {
        fprintf(stderr, "ccsweep search: %s\n", s ? "out of memory" : err.msg);
        rc = 2;
        goto out;
    }
    ccs_plan job;
    plan_defaults(&job);
    job.devices = (int32_t)devices;
    job.gbs = (int32_t)gbs;
    job.seq = (int32_t)seq;
    job.dtype = (int8_t)dtype;

    int n = 0, ranks = 1, rank = 0, mpi = launched();
    search_stats st = {0, 0};
    double t0 = now_s();
    if (mpi) {
        if (dist_init(&argc, &argv) != CCS_OK) {
            fprintf(stderr, "ccsweep search: MPI_Init failed\n");
            rc = 2;
            goto out;
        }
        dist_comm *w = dist_world();
        ranks = dist_size(w);
        rank = dist_rank(w);
        int r = dist_search(w, s, (int)topk, top, &n, &st);
        dist_finalize();
        if (r != CCS_OK) {
            if (rank == 0)
                fprintf(stderr, "ccsweep search: out of memory\n");
            rc = 2;
            goto out;
        }
    } else if (search_count(s) > 0) {
        search_range(s, 0, search_count(s), 1, top, (int)topk, &n, &st);
    }
    double secs = now_s() - t0;
    rc = 0;
    if (rank != 0)
        goto out;
    if (json) {
        if (print_json(m, &hw, evo_name, (int)gen, &job, top, n, &st, secs, ranks)) {
            fprintf(stderr, "ccsweep search: out of memory writing JSON\n");
            rc = 2;
        }
    } else {
        print_table(m, &hw, evo_name, (int)gen, &job, top, n, &st, secs, ranks);
    }
out:
    free(top);
    search_free(s);
    catalog_free(cat);
    return rc;
}
