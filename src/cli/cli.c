/* cli.c - the 'project' and 'list' subcommands and helpers shared by all
 * subcommands (option parsing, catalog loading, JSON output). */
#include "ccsweep/cli/cli.h"
#include "ccsweep/cost/opmodel.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_int(const char *cmd, const char *opt, const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < min || v > max) {
        fprintf(stderr, "ccsweep %s: %s: expected an integer in [%ld, %ld], got '%s'\n", cmd, opt,
                min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

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

/* Levenshtein distance between a and b (short words). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cli_suggest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t bd = (size_t)-1, len = strlen(word);
    for (size_t i = 0; word && i < n; i++) {
        if (!cands[i])
            continue;
        size_t d = edit_distance(word, cands[i]);
        /* a prefix of a candidate ("--mod", "list model") also counts as close */
        if (len >= 2 && !strncmp(word, cands[i], len))
            d = 0;
        if (d < bd) {
            bd = d;
            best = cands[i];
        }
    }
    size_t limit = len < 6 ? 2 : len / 3 + 1;
    return best && bd <= limit ? best : NULL;
}

void cli_bad_option(const char *cmd, const char *arg, const struct option *opts)
{
    char word[64];
    const char *cands[128];
    size_t n = 0;
    ccs_strlcpy(word, arg ? arg : "?", sizeof word);
    char *eq = strchr(word, '=');
    if (eq)
        *eq = '\0';
    const char *name = word[0] == '-' && word[1] == '-' ? word + 2 : word;
    for (size_t i = 0; opts[i].name && n < sizeof cands / sizeof cands[0]; i++) {
        if (!strcmp(opts[i].name, name) && opts[i].has_arg == required_argument) {
            fprintf(stderr, "ccsweep %s: option '--%s' needs a value (see 'ccsweep %s --help')\n",
                    cmd, name, cmd);
            return;
        }
        cands[n++] = opts[i].name;
    }
    const char *best = word[0] == '-' ? cli_suggest(name, cands, n) : NULL;
    if (best)
        fprintf(stderr,
                "ccsweep %s: unknown option '%s'; did you mean '--%s'? (see 'ccsweep %s "
                "--help')\n",
                cmd, word, best, cmd);
    else
        fprintf(stderr, "ccsweep %s: unknown option '%s' (see 'ccsweep %s --help')\n", cmd, word,
                cmd);
}

/* " (did you mean 'x'?)" for a mistyped catalog name, or "". */
static const char *name_hint(char *buf, size_t n, const char *word, const ccs_catalog *cat,
                             int kind)
{
    const char *cands[512];
    size_t k = 0;
    size_t total = kind == 0   ? catalog_n_models(cat)
                   : kind == 1 ? catalog_n_hw(cat)
                               : catalog_n_evolutions(cat);
    for (size_t i = 0; i < total && k < sizeof cands / sizeof cands[0]; i++)
        cands[k++] = kind == 0   ? catalog_model_at(cat, i)->name
                     : kind == 1 ? catalog_hw_at(cat, i)->name
                                 : catalog_evolution_at(cat, i)->name;
    const char *best = cli_suggest(word, cands, k);
    if (best)
        snprintf(buf, n, "; did you mean '%s'?", best);
    else
        buf[0] = '\0';
    return buf;
}

int cli_add_catalog(const char *cmd, const char **overlays, size_t *n, const char *path)
{
    if (*n >= CLI_MAX_CATALOGS) {
        fprintf(stderr, "ccsweep %s: --catalog: at most %d overlays\n", cmd, CLI_MAX_CATALOGS);
        return -1;
    }
    overlays[(*n)++] = path;
    return 0;
}

ccs_catalog *cli_catalog(const char *cmd, const char *const *overlays, size_t n)
{
    ccs_catalog *c = catalog_new();
    ccs_err err;
    if (!c) {
        fprintf(stderr, "ccsweep %s: out of memory\n", cmd);
        return NULL;
    }
    if (catalog_load_layers(c, overlays, n, &err) != CCS_OK) {
        fprintf(stderr, "ccsweep %s: %s\n", cmd, err.msg);
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

static void source_name(const cli_op_source *e, char *buf, size_t n)
{
    if (e->dtype < 0)
        snprintf(buf, n, "%s %s", opkind_name(e->kind), e->level ? "inter" : "intra");
    else
        snprintf(buf, n, "%s %s", opkind_name(e->kind), dtype_name(e->dtype));
}

json_t *cli_json_projection(const ccs_model *m, const ccs_hw *hw, const char *evolution,
                            const ccs_plan *p, const ccs_result *r,
                            const ccs_region_time *regions, const cli_op_sources *src)
{
    json_t *o = json_object();
    json_t *plan = json_object();
    if (!o || !plan) {
        json_decref(o);
        json_decref(plan);
        return NULL;
    }
    /* Keys are the column names of the database's results_view (and regions
     * table), so one quantity has one name everywhere; units are SI. */
    int rc = 0;
    rc |= jset(o, "model", json_string(m->name));
    rc |= jset(o, "params", jcount(r->params));
    rc |= jset(o, "hardware", json_string(hw->name));
    rc |= jset(o, "generation", json_integer(hw->generation));
    rc |= jset(o, "evolution", evolution ? json_string(evolution) : json_null());
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
    rc |= jset(plan, "dp_overlap", json_integer(p->dp_overlap));
    rc |= jset(plan, "tp_overlap", json_integer(p->tp_overlap));
    rc |= jset(plan, "innet_reduce", json_integer(p->innet_reduce));
    rc |= jset(plan, "comm_compress", json_real(p->comm_compress));
    rc |= jset(plan, "net_bw_factor", json_real(p->net_bw_factor));
    rc |= json_object_set_new(o, "plan", plan);

    static const char *const st[] = {"ok", "invalid", "oom"};
    rc |= jset(o, "status", json_string(st[r->status]));
    rc |= jset(o, "reason", r->reason ? json_string(plan_reason_name(r->reason)) : json_null());
    rc |=
        jset(o, "reason_text", r->reason ? json_string(plan_reason_text(r->reason)) : json_null());
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

int cli_print_json(FILE *f, const ccs_model *m, const ccs_hw *hw, const char *evolution,
                   const ccs_plan *p, const ccs_result *r, const ccs_region_time *regions,
                   const cli_op_sources *src)
{
    json_t *o = cli_json_projection(m, hw, evolution, p, r, regions, src);
    /* 15 significant digits (DBL_DIG): every decimal the model prints survives */
    int rc = o ? json_dumpf(o, f, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : -1;
    fputc('\n', f);
    json_decref(o);
    return rc ? -1 : 0;
}

/* ---- project ------------------------------------------------------------------ */

static void project_usage(FILE *f)
{
    fprintf(f,
            "usage: ccsweep project (--model NAME | --layers L --hidden H --heads A [--kv-heads G]\n"
            "                        [--ffn F] [--vocab V] [--gated])\n"
            "                       --hw NAME [--gen G] [--evolution RULE] [--devices N]\n"
            "                       [--tp T] [--pp P] [--dp D] [--vpp V] [--seq S] [--gbs B]\n"
            "                       [--mbs b] [--sp] [--recompute none|selective|full]\n"
            "                       [--zero 0..3] [--dtype bf16|fp16|fp8|fp32] [--flash-attn]\n"
            "                       [--tp-overlap] [--dp-overlap none|last-microbatch|bucketed]\n"
            "                       [--innet-reduce]\n"
            "                       [--comm-compress X] [--net-bw-factor X]\n"
            "                       [--calib FILE] [--catalog PATH] [--json]\n\n"
            "Projects one training iteration: analytic FLOPs, bytes and memory, and a\n"
            "timeline split into compute, tensor/data/pipeline communication (serialized,\n"
            "hidden, exposed) and pipeline bubble.\n\n"
            "  --model NAME       catalog model (see 'ccsweep list models'), or an ad-hoc one\n"
            "                     from --layers/--hidden/--heads (GPT-style: biases, tied head)\n"
            "  --hw NAME          catalog hardware (see 'ccsweep list hardware')\n"
            "  --gen G            hardware generation, base scaled by the evolution rule^G (0)\n"
            "  --evolution RULE   scaling rule for --gen (memory-wall)\n"
            "  --devices N        total devices; dp = N/(tp*cp*pp) unless --dp is given\n"
            "  --tp/--pp/--dp     tensor, pipeline, data parallel degrees (1)\n"
            "  --vpp V            interleaved 1F1B virtual stages per device (1)\n"
            "  --cp C             context parallelism: the sequence split over C ranks, K/V\n"
            "                     passed around a ring under the attention (1)\n"
            "  --cp-comm MODE     ring (overlapped with the attention) or allgather (K/V\n"
            "                     gathered first, not overlapped) (ring)\n"
            "  --ep E             expert parallelism (mixture-of-experts models): the routed\n"
            "                     experts spread over E of the data-parallel ranks (1)\n"
            "  --capacity-factor X  tokens an expert takes, x its balanced share (dropless)\n"
            "  --pp-first-layers N, --pp-last-layers N\n"
            "                     layers on the first / last pipeline stage; the other stages\n"
            "                     share the rest evenly. Without them, when pp does not divide\n"
            "                     the layers, middle stages take ceil(layers/pp) and the first\n"
            "                     and last split the remainder (126 on 16: 7 + 14 x 8 + 7)\n"
            "  --seq S            sequence length (the model's, else 2048)\n"
            "  --gbs B            global batch in sequences (the model's; required for ad-hoc models)\n"
            "  --mbs b            micro-batch size (1)\n"
            "  --sp               Megatron sequence parallelism\n"
            "  --recompute MODE   activation recomputation (none)\n"
            "  --zero Z           ZeRO stage over the data-parallel group (0)\n"
            "  --dtype T          arithmetic type (bf16)\n"
            "  --flash-attn       fused attention kernel (no s^2 tensors)\n"
            "  --tp-overlap       overlap TP collectives with their GEMMs (max instead of sum)\n"
            "  --dp-overlap MODE  when DP gradients are reduced: none (after the backward pass,\n"
            "                     Megatron-LM's default), last-microbatch (under the last\n"
            "                     micro-batch's backward), bucketed (under every backward) (none)\n"
            "  --no-dp-overlap    same as --dp-overlap none\n"
            "  --innet-reduce     in-network reduction: all-reduce traffic halved\n"
            "  --comm-compress X  bytes factor on TP/DP collectives, e.g. 0.5 (1)\n"
            "  --net-bw-factor X  factor on every link bandwidth (1)\n"
            "  --calib FILE       measured calibration profile instead of the synthetic curves\n"
            "  --catalog PATH     catalog overlay (directory or YAML file): its entries add to\n"
            "                     and override the built-in ones by name; repeatable, later\n"
            "                     wins; $CCSWEEP_CATALOG_PATH lists overlays too (':')\n"
            "  --json             one JSON object with every output, SI units\n\n");
    /* a second string: C11 compilers need support literals of 4095 bytes only */
    fprintf(f,
            "Limits (also in specs and catalogs): layers and --pp-first/last-layers <= 100000;\n"
            "hidden, heads, kv-heads <= 1048576; ffn <= 4194304; vocab <= 16777216; seq <=\n"
            "16777216; devices, tp, cp, ep, pp, dp and tp*cp*pp*dp <= 16777216; vpp <= 1024;\n"
            "mbs <= 1048576; gbs <= 1073741824; experts <= 65536; gen <= 64;\n"
            "comm-compress, net-bw-factor and capacity-factor in (0, 1e6].\n");
}

static double gib(double b)
{
    return b / 1073741824.0;
}

static void pct_line(const char *label, double t, double total)
{
    printf("  %-20s %12.4f s  %5.1f%%\n", label, t, total > 0 ? 100 * t / total : 0);
}

/* "measured (FILE): a, b" / "synthetic: c": the operator kinds by source. */
static void print_sources(const cli_op_sources *src)
{
    for (int pass = 1; pass >= 0; pass--) {
        int n = pass ? src->n_measured : src->n - src->n_measured;
        if (!n)
            continue;
        char line[1024];
        size_t len = 0;
        for (int i = 0; i < src->n; i++) {
            if (src->v[i].measured != pass)
                continue;
            char one[64];
            source_name(&src->v[i], one, sizeof one);
            len += (size_t)snprintf(line + len, len < sizeof line ? sizeof line - len : 0, "%s%s",
                                    len ? ", " : "", one);
        }
        if (pass)
            printf("  %-20s measured (%s): %s\n", "operator curves", src->calibration, line);
        else
            printf("  %-20s synthetic%s: %s\n", src->n_measured ? "" : "operator curves",
                   src->n_measured ? " (no curve in the profile)" : " (catalog roofline)", line);
    }
}

static void print_human(const ccs_model *m, const ccs_hw *hw, const char *evo, const ccs_plan *p,
                        const ccs_result *r, const ccs_region_time *rg, const cli_op_sources *src)
{
    char cps[24] = "", eps[40] = "";
    if (plan_cp(p) > 1)
        snprintf(cps, sizeof cps, " x cp %d", plan_cp(p));
    if (m->experts > 0)
        snprintf(eps, sizeof eps, " (experts over ep %d)", plan_ep(p));
    printf("%s on %s (generation %d%s%s), %d devices = tp %d%s x pp %d x dp %d%s\n", m->name,
           hw->name, hw->generation, hw->generation ? ", " : "", hw->generation ? evo : "",
           p->devices, p->tp, cps, p->pp, p->dp, eps);
    char mb[32] = "";
    if (r->micro_batches > 0)
        snprintf(mb, sizeof mb, " (%d micro-batch%s)", r->micro_batches,
                 r->micro_batches == 1 ? "" : "es");
    char stages[64] = "";
    int32_t lf, lm, ll;
    if (p->pp > 1 && plan_stage_layers(m, p, &lf, &lm, &ll) == CCS_R_OK &&
        (lf != lm || ll != lm))
        snprintf(stages, sizeof stages, ", stages %d + %d x %d + %d layers", lf, p->pp - 2, lm,
                 ll);
    printf("  %-20s seq %d, gbs %d, mbs %d%s, vpp %d%s, %s%s, recompute %s, "
           "zero %d%s, dp-overlap %s\n",
           "plan", p->seq, p->gbs, p->mbs, mb, p->vpp, stages, dtype_name(p->dtype),
           p->sp ? ", sp" : "", recompute_name(p->recompute), p->zero,
           p->flash_attn ? ", flash-attn" : "", dp_overlap_name(p->dp_overlap));
    printf("  %-20s %.4g (%.1f B)\n", "parameters", r->params, r->params / 1e9);
    if (r->status == CCS_ST_INVALID) {
        printf("  %-20s invalid: %s\n", "status", plan_reason_text(r->reason));
        return;
    }
    printf("  %-20s %s (%.2f GiB of %.2f GiB per device)\n", "status",
           r->status == CCS_ST_OK ? "ok, fits" : "does not fit device memory", gib(r->mem_total),
           gib(hw->mem_cap));
    printf("  %-20s %12.4f s  (band %.4f .. %.4f s)\n", "iteration", r->t_iter, r->t_iter_lo,
           r->t_iter_hi);
    pct_line("compute", r->t_compute, r->t_iter);
    pct_line("  optimizer", r->t_optimizer, r->t_iter);
    pct_line("comm exposed", r->t_comm_exposed, r->t_iter);
    pct_line("  tp", r->t_tp_comm_exposed, r->t_iter);
    if (plan_cp(p) > 1)
        pct_line("  cp", r->t_cp_comm_exposed, r->t_iter);
    if (m->experts > 0)
        pct_line("  ep all-to-all", r->t_ep_comm, r->t_iter);
    pct_line("  dp exposed", r->t_dp_comm_exposed, r->t_iter);
    pct_line("  pp p2p", r->t_pp_comm, r->t_iter);
    pct_line("pipeline bubble", r->t_bubble, r->t_iter);
    printf("  %-20s %12.4f s  (dp %.4f s, %.0f%% of tp + dp comm hidden)\n", "comm total",
           r->t_comm, r->t_dp_comm, 100 * r->hidden_fraction);
    printf("  %-20s weights %.2f + grads %.2f + optimizer %.2f + activations %.2f GiB\n",
           "memory/device", gib(r->mem_weights), gib(r->mem_grads), gib(r->mem_optimizer),
           gib(r->mem_activations));
    printf("  %-20s %.4g FLOP/iter, MFU %.1f%%, HFU %.1f%%, %.4g tokens/s\n", "throughput",
           r->model_flops, 100 * r->mfu, 100 * r->hfu, r->tokens_per_s);
    printf("  %-20s tp %.4g, dp %.4g, pp %.4g bytes/device/iter\n", "traffic", r->tp_bytes,
           r->dp_bytes, r->pp_bytes);
    if (r->ccr > 0)
        printf("  %-20s %.1f FLOP per TP byte (per layer)\n", "compute/comm", r->ccr);
    if (r->extrap > 0)
        printf("  %-20s an operator is %.1fx beyond the measured range\n", "extrapolation",
               r->extrap);
    if (src && src->calibration)
        print_sources(src);
    printf("\n  %-22s %8s %12s %12s %14s\n", "region", "kind", "time (s)", "count", "total (s)");
    for (int i = 0; i < CCS_RG_N; i++) {
        if (rg[i].time <= 0)
            continue;
        printf("  %-22s %8s %12.4g %12.0f %14.4g\n", region_name(i),
               region_is_comm(i) ? "comm" : "compute", rg[i].time, rg[i].count,
               rg[i].time * rg[i].count);
    }
}

/* 1 when every output of the projection is a finite number. */
static int result_finite(const ccs_result *r, const ccs_region_time *rg)
{
    if (!isfinite(r->params))
        return 0;
    for (int i = 0; i < CCS_N_OUTPUTS; i++)
        if (!isfinite(ccs_output_of(r, i)))
            return 0;
    for (int i = 0; i < CCS_RG_N; i++)
        if (!isfinite(rg[i].time) || !isfinite(rg[i].count) || !isfinite(rg[i].flops) ||
            !isfinite(rg[i].bytes))
            return 0;
    return 1;
}

enum {
    O_MODEL = 256, O_LAYERS, O_HIDDEN, O_HEADS, O_KV, O_FFN, O_VOCAB, O_GATED, O_HW, O_GEN,
    O_EVO, O_DEVICES, O_TP, O_PP, O_DP, O_VPP, O_SEQ, O_GBS, O_MBS, O_SP, O_RECOMP, O_ZERO,
    O_DTYPE, O_FLASH, O_TPOV, O_NODPOV, O_DPOV, O_INNET, O_COMPRESS, O_NETBW, O_CALIB, O_CATALOG,
    O_JSON, O_HELP, O_PPFIRST, O_PPLAST, O_CP, O_EP, O_CAPF, O_CPCOMM
};

/* 1 with a message when an enum option's text parsed to v < 0, else 0. */
static int enum_opt(const char *opt, const char *text, int v, const char *expected)
{
    if (v >= 0)
        return 0;
    fprintf(stderr, "ccsweep project: %s: expected %s, got '%s'\n", opt, expected, text);
    return 1;
}

static int pos_double(const char *opt, const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v > 0) || !(v <= CCS_MAX_FACTOR)) {
        fprintf(stderr, "ccsweep project: %s: expected a number in (0, %g], got '%s'\n", opt,
                CCS_MAX_FACTOR, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_project(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, O_MODEL},   {"layers", required_argument, 0, O_LAYERS},
        {"hidden", required_argument, 0, O_HIDDEN}, {"heads", required_argument, 0, O_HEADS},
        {"kv-heads", required_argument, 0, O_KV},   {"ffn", required_argument, 0, O_FFN},
        {"vocab", required_argument, 0, O_VOCAB},   {"gated", no_argument, 0, O_GATED},
        {"hw", required_argument, 0, O_HW},         {"gen", required_argument, 0, O_GEN},
        {"evolution", required_argument, 0, O_EVO}, {"devices", required_argument, 0, O_DEVICES},
        {"tp", required_argument, 0, O_TP},         {"pp", required_argument, 0, O_PP},
        {"dp", required_argument, 0, O_DP},         {"vpp", required_argument, 0, O_VPP},
        {"pp-first-layers", required_argument, 0, O_PPFIRST},
        {"cp", required_argument, 0, O_CP},
        {"cp-comm", required_argument, 0, O_CPCOMM},
        {"ep", required_argument, 0, O_EP},
        {"capacity-factor", required_argument, 0, O_CAPF},
        {"pp-last-layers", required_argument, 0, O_PPLAST},
        {"seq", required_argument, 0, O_SEQ},       {"gbs", required_argument, 0, O_GBS},
        {"mbs", required_argument, 0, O_MBS},       {"sp", no_argument, 0, O_SP},
        {"recompute", required_argument, 0, O_RECOMP}, {"zero", required_argument, 0, O_ZERO},
        {"dtype", required_argument, 0, O_DTYPE},   {"flash-attn", no_argument, 0, O_FLASH},
        {"tp-overlap", no_argument, 0, O_TPOV},     {"no-dp-overlap", no_argument, 0, O_NODPOV},
        {"dp-overlap", required_argument, 0, O_DPOV},
        {"innet-reduce", no_argument, 0, O_INNET},
        {"comm-compress", required_argument, 0, O_COMPRESS},
        {"net-bw-factor", required_argument, 0, O_NETBW},
        {"calib", required_argument, 0, O_CALIB},   {"catalog", required_argument, 0, O_CATALOG},
        {"json", no_argument, 0, O_JSON},           {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0}};
    const char *model_name = NULL, *hw_name = NULL, *evo_name = "memory-wall", *calib = NULL,
               *catdirs[CLI_MAX_CATALOGS];
    size_t ncat = 0;
    ccs_model adhoc;
    memset(&adhoc, 0, sizeof adhoc);
    adhoc.bias = adhoc.tied = 1;
    adhoc.vocab = 51200;
    ccs_plan p;
    plan_defaults(&p);
    p.mbs = 0; /* 0 = not given */
    long gen = 0, v;
    int json = 0, have_dp = 0, adhoc_given = 0;

    optind = 1;
    opterr = 0;
    int c, li = -1;
    while ((c = getopt_long(argc, argv, "", opts, &li)) != -1) {
        char o[40] = "?";
        if (li >= 0)
            snprintf(o, sizeof o, "--%s", opts[li].name);
        else if (optind > 0 && optind <= argc)
            ccs_strlcpy(o, argv[optind - 1], sizeof o);
        li = -1;
        int bad = 0;
        switch (c) {
        case O_MODEL: model_name = optarg; break;
        case O_HW: hw_name = optarg; break;
        case O_EVO: evo_name = optarg; break;
        case O_CALIB: calib = optarg; break;
        case O_CATALOG:
            bad = cli_add_catalog("project", catdirs, &ncat, optarg);
            break;
        case O_JSON: json = 1; break;
        case O_GATED: adhoc.gated = 1; adhoc_given = 1; break;
        case O_SP: p.sp = 1; break;
        case O_FLASH: p.flash_attn = 1; break;
        case O_TPOV: p.tp_overlap = 1; break;
        case O_NODPOV: p.dp_overlap = CCS_DPOV_NONE; break;
        case O_DPOV:
            p.dp_overlap = (int8_t)dp_overlap_parse(optarg);
            bad = enum_opt("--dp-overlap", optarg, p.dp_overlap, "none, last-microbatch or bucketed");
            break;
        case O_INNET: p.innet_reduce = 1; break;
        case O_COMPRESS: bad = pos_double("--comm-compress", optarg, &p.comm_compress); break;
        case O_NETBW: bad = pos_double("--net-bw-factor", optarg, &p.net_bw_factor); break;
        case O_GEN: bad = cli_int("project", "--gen", optarg, 0, CCS_MAX_GEN, &gen); break;
        case O_RECOMP:
            p.recompute = (int8_t)recompute_parse(optarg);
            bad = enum_opt("--recompute", optarg, p.recompute, "none, selective or full");
            break;
        case O_DTYPE: {
            int d = dtype_parse(optarg);
            if (d < 0 || d == CCS_TF32) {
                fprintf(stderr, "ccsweep project: --dtype: expected bf16, fp16, fp8 or fp32, got "
                                "'%s'\n", optarg);
                bad = 1;
            }
            p.dtype = (int8_t)d;
            break;
        }
        case O_ZERO:
            bad = cli_int("project", "--zero", optarg, 0, 3, &v);
            p.zero = (int8_t)v;
            break;
        case O_LAYERS: case O_HIDDEN: case O_HEADS: case O_KV: case O_FFN: case O_VOCAB:
        case O_DEVICES: case O_TP: case O_PP: case O_DP: case O_VPP: case O_SEQ: case O_GBS:
        case O_MBS: {
            static const long lim[] = {
                [O_LAYERS - O_LAYERS] = CCS_MAX_LAYERS,   [O_HIDDEN - O_LAYERS] = CCS_MAX_HIDDEN,
                [O_HEADS - O_LAYERS] = CCS_MAX_HIDDEN,    [O_KV - O_LAYERS] = CCS_MAX_HIDDEN,
                [O_FFN - O_LAYERS] = CCS_MAX_FFN,         [O_VOCAB - O_LAYERS] = CCS_MAX_VOCAB,
                [O_DEVICES - O_LAYERS] = CCS_MAX_DEVICES, [O_TP - O_LAYERS] = CCS_MAX_DEVICES,
                [O_PP - O_LAYERS] = CCS_MAX_DEVICES,      [O_DP - O_LAYERS] = CCS_MAX_DEVICES,
                [O_VPP - O_LAYERS] = CCS_MAX_VPP,         [O_SEQ - O_LAYERS] = CCS_MAX_SEQ,
                [O_GBS - O_LAYERS] = CCS_MAX_GBS,         [O_MBS - O_LAYERS] = CCS_MAX_MBS};
            if (cli_int("project", o, optarg, 1, lim[c - O_LAYERS], &v)) {
                bad = 1;
                break;
            }
            int32_t *dst[] = {
                [O_LAYERS - O_LAYERS] = &adhoc.layers, [O_HIDDEN - O_LAYERS] = &adhoc.hidden,
                [O_HEADS - O_LAYERS] = &adhoc.heads,   [O_KV - O_LAYERS] = &adhoc.kv_heads,
                [O_FFN - O_LAYERS] = &adhoc.ffn,       [O_VOCAB - O_LAYERS] = &adhoc.vocab};
            if (c <= O_VOCAB) {
                *dst[c - O_LAYERS] = (int32_t)v;
                adhoc_given = 1;
            } else if (c == O_DEVICES) p.devices = (int32_t)v;
            else if (c == O_TP) p.tp = (int32_t)v;
            else if (c == O_PP) p.pp = (int32_t)v;
            else if (c == O_DP) { p.dp = (int32_t)v; have_dp = 1; }
            else if (c == O_VPP) p.vpp = (int32_t)v;
            else if (c == O_SEQ) p.seq = (int32_t)v;
            else if (c == O_GBS) p.gbs = (int32_t)v;
            else p.mbs = (int32_t)v;
            break;
        }
        case O_CP:
        case O_EP:
            bad = cli_int("project", o, optarg, 1, CCS_MAX_DEVICES, &v);
            *(c == O_CP ? &p.cp : &p.ep) = (int32_t)v;
            break;
        case O_CAPF: bad = pos_double("--capacity-factor", optarg, &p.capacity_factor); break;
        case O_CPCOMM:
            p.cp_comm = (int8_t)cp_comm_parse(optarg);
            bad = enum_opt("--cp-comm", optarg, p.cp_comm, "ring or allgather");
            break;
        case O_PPFIRST:
        case O_PPLAST:
            bad = cli_int("project", o, optarg, 1, CCS_MAX_LAYERS, &v);
            *(c == O_PPFIRST ? &p.pp_first : &p.pp_last) = (int32_t)v;
            break;
        case O_HELP: project_usage(stdout); return 0;
        default:
            cli_bad_option("project", optind > 0 ? argv[optind - 1] : o, opts);
            return 1;
        }
        if (bad)
            return 1;
    }
    if (optind < argc) {
        fprintf(stderr, "ccsweep project: unexpected argument '%s'\n", argv[optind]);
        return 1;
    }
    if (!hw_name) {
        fprintf(stderr, "ccsweep project: --hw NAME is required (see 'ccsweep list hardware')\n");
        return 1;
    }
    if (!model_name && !adhoc_given) {
        fprintf(stderr, "ccsweep project: give --model NAME or --layers, --hidden and --heads\n");
        return 1;
    }
    if (model_name && adhoc_given) {
        fprintf(stderr, "ccsweep project: --model cannot be combined with --layers/--hidden/"
                        "--heads/--kv-heads/--ffn/--vocab/--gated\n");
        return 1;
    }

    ccs_catalog *cat = cli_catalog("project", catdirs, ncat);
    if (!cat)
        return 1;
    int rc = 1;
    ccs_opmodel *om = NULL;
    ccs_model m;
    const ccs_hw *base = catalog_hw(cat, hw_name);
    const ccs_evolution *ev = catalog_evolution(cat, evo_name);
    if (model_name) {
        const ccs_model *cm = catalog_model(cat, model_name);
        if (!cm) {
            char hint[128];
            fprintf(stderr,
                    "ccsweep project: --model: unknown model '%s'%s (see 'ccsweep list "
                    "models')\n",
                    model_name, name_hint(hint, sizeof hint, model_name, cat, 0));
            goto out;
        }
        m = *cm;
    } else {
        ccs_err err;
        m = adhoc;
        ccs_strlcpy(m.name, "adhoc", sizeof m.name);
        model_fill_defaults(&m);
        if (!m.layers || !m.hidden || !m.heads) {
            fprintf(stderr, "ccsweep project: an ad-hoc model needs --layers, --hidden and --heads\n");
            goto out;
        }
        if (model_validate(&m, &err) != CCS_OK) {
            fprintf(stderr, "ccsweep project: %s\n", err.msg);
            goto out;
        }
    }
    if (!base) {
        char hint[128];
        fprintf(stderr,
                "ccsweep project: --hw: unknown hardware '%s'%s (see 'ccsweep list "
                "hardware')\n",
                hw_name, name_hint(hint, sizeof hint, hw_name, cat, 1));
        goto out;
    }
    if (!ev && gen > 0) {
        char hint[128];
        fprintf(stderr,
                "ccsweep project: --evolution: unknown rule '%s'%s (see 'ccsweep list "
                "evolutions')\n",
                evo_name, name_hint(hint, sizeof hint, evo_name, cat, 2));
        goto out;
    }
    if (calib) {
        ccs_err err;
        om = opmodel_load(calib, &err);
        if (!om) {
            fprintf(stderr, "ccsweep project: --calib: %s\n", err.msg);
            goto out;
        }
    }
    if (p.seq == 0)
        p.seq = m.seq ? m.seq : 2048;
    if (p.mbs == 0)
        p.mbs = 1;
    if (!have_dp)
        p.dp = 0;
    if (p.devices == 0 && !have_dp)
        p.dp = 1;
    if (plan_derive(&p) != CCS_R_OK) {
        long long tpp = (long long)p.tp * p.pp * plan_cp(&p); /* each <= 2^24: fits */
        if (p.devices && tpp <= CCS_MAX_DEVICES)
            fprintf(stderr, "ccsweep project: --devices %d is not a multiple of tp*cp*pp = %lld\n",
                    p.devices, tpp);
        else if (p.devices)
            fprintf(stderr, "ccsweep project: tp*cp*pp = %d*%d*%d is more than %d devices (the "
                            "limit)\n", p.tp, plan_cp(&p), p.pp, CCS_MAX_DEVICES);
        else
            fprintf(stderr,
                    "ccsweep project: tp*cp*pp*dp = %d*%d*%d*%d is more than %d devices (the "
                    "limit)\n",
                    p.tp, plan_cp(&p), p.pp, p.dp, CCS_MAX_DEVICES);
        goto out;
    }
    if (p.gbs == 0 && !(p.gbs = m.gbs)) { /* never a batch made up from mbs * dp */
        fprintf(stderr, "ccsweep project: --gbs: model '%s' has no global batch; give --gbs\n",
                m.name);
        goto out;
    }

    ccs_hw hw;
    hw_evolve(base, ev, (int)gen, &hw);
    ccs_cost cost;
    cost_init(&cost, &hw, om, ev, (int)gen, &p);
    ccs_result r;
    ccs_region_time rg[CCS_RG_N];
    timeline_project(&m, &p, &cost, &r, rg);
    if (!result_finite(&r, rg)) {
        /* within the input limits this does not happen; never print inf or nan */
        fprintf(stderr, "ccsweep project: the projection overflowed (a non-finite output); "
                        "please report the command line\n");
        rc = 2;
        goto out;
    }
    static cli_op_sources srcs;
    if (r.status != CCS_ST_INVALID)
        cli_op_sources_of(&m, &p, &hw, om, calib, &srcs);
    if (json) {
        if (cli_print_json(stdout, &m, &hw, gen ? evo_name : NULL, &p, &r, rg,
                           r.status != CCS_ST_INVALID ? &srcs : NULL)) {
            fprintf(stderr, "ccsweep project: out of memory writing JSON\n");
            rc = 2;
            goto out;
        }
    } else {
        print_human(&m, &hw, evo_name, &p, &r, rg, &srcs);
    }
    rc = 0;
out:
    opmodel_free(om);
    catalog_free(cat);
    return rc;
}

/* ---- list ------------------------------------------------------------------------ */

int cli_list(int argc, char **argv)
{
    const char *catdirs[CLI_MAX_CATALOGS], *what = NULL;
    size_t ncat = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: ccsweep list models|hardware|evolutions [--catalog PATH]...\n\n"
                   "Lists the catalog entries with their key figures: the built-in catalog,\n"
                   "then the overlays of $CCSWEEP_CATALOG_PATH and --catalog (repeatable),\n"
                   "whose entries add to and override earlier ones by name.\n");
            return 0;
        } else if (!strcmp(argv[i], "--catalog") && i + 1 < argc) {
            if (cli_add_catalog("list", catdirs, &ncat, argv[++i]))
                return 1;
        } else if (!what && argv[i][0] != '-') {
            what = argv[i];
        } else if (argv[i][0] == '-') {
            static const struct option lopts[] = {
                {"catalog", required_argument, 0, 1}, {"help", no_argument, 0, 2}, {0, 0, 0, 0}};
            cli_bad_option("list", argv[i], lopts);
            return 1;
        } else {
            fprintf(stderr, "ccsweep list: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
    }
    static const char *const subjects[] = {"models", "hardware", "evolutions"};
    if (!what) {
        fprintf(stderr, "ccsweep list: what to list? expected models, hardware or evolutions\n");
        return 1;
    }
    if (strcmp(what, "models") && strcmp(what, "hardware") && strcmp(what, "evolutions")) {
        const char *best = cli_suggest(what, subjects, 3);
        fprintf(stderr,
                "ccsweep list: unknown list '%s' (expected models, hardware or "
                "evolutions)%s%s%s\n",
                what, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
        return 1;
    }
    ccs_catalog *cat = cli_catalog("list", catdirs, ncat);
    if (!cat)
        return 1;
    if (!strcmp(what, "models")) {
        printf("%-14s %7s %7s %6s %4s %7s %7s %5s %5s %9s\n", "name", "layers", "hidden", "heads",
               "kv", "ffn", "vocab", "gated", "seq", "params");
        for (size_t i = 0; i < catalog_n_models(cat); i++) {
            const ccs_model *m = catalog_model_at(cat, i);
            printf("%-14s %7d %7d %6d %4d %7d %7d %5s %5d %8.2fB\n", m->name, m->layers,
                   m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->gated ? "yes" : "no",
                   m->seq, model_params(m) / 1e9);
        }
    } else if (!strcmp(what, "hardware")) {
        /* dense peaks; '-' where the device has no such arithmetic */
        printf("%-10s %9s %9s %9s %9s %7s %8s %5s %10s %10s\n", "name", "fp16 TF/s", "bf16 TF/s",
               "fp8 TF/s", "fp32 TF/s", "HBM GiB", "HBM GB/s", "/node", "intra GB/s", "inter GB/s");
        for (size_t i = 0; i < catalog_n_hw(cat); i++) {
            const ccs_hw *h = catalog_hw_at(cat, i);
            const int dt[] = {CCS_FP16, CCS_BF16, CCS_FP8, CCS_FP32};
            char pk[4][16];
            for (int k = 0; k < 4; k++) {
                double v = h->peak_flops[dt[k]] / 1e12;
                if (v > 0)
                    snprintf(pk[k], sizeof pk[k], "%.1f", v);
                else
                    ccs_strlcpy(pk[k], "-", sizeof pk[k]);
            }
            printf("%-10s %9s %9s %9s %9s %7.0f %8.0f %5d %10.0f %10.1f\n", h->name, pk[0], pk[1],
                   pk[2], pk[3], gib(h->mem_cap), h->mem_bw / 1e9, h->devices_per_node,
                   h->intra_bw / 1e9, h->inter_bw / 1e9);
        }
    } else {
        printf("%-16s %6s %7s %7s %8s %9s %9s %8s\n", "name", "years", "flops", "mem_bw",
               "mem_cap", "intra_bw", "inter_bw", "latency");
        for (size_t i = 0; i < catalog_n_evolutions(cat); i++) {
            const ccs_evolution *e = catalog_evolution_at(cat, i);
            printf("%-16s %6.1f %7.2f %7.2f %8.2f %9.2f %9.2f %8.2f\n", e->name, e->years,
                   e->flops, e->mem_bw, e->mem_cap, e->intra_bw, e->inter_bw, e->latency);
        }
    }
    catalog_free(cat);
    return 0;
}
