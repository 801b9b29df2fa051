/* cli_project.c - 'ccsweep project': one model x hardware x plan scenario,
 * in phases: parse the options (one table), resolve the names against the
 * catalog and derive the plan, project, then print text or JSON. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/cost/opmodel.h"
#include "ccsweep/model/hfconfig.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- options ------------------------------------------------------------------ */

typedef struct project_args {
    const char *model, *hw, *evolution, *calib, *stack, *attn_kernel, *model_config;
    cli_catalogs catalogs;
    ccs_model adhoc; /* --layers ... --gated: an ad-hoc model */
    int adhoc_given, dp_given, json;
    long gen;
    ccs_plan p; /* as given; mbs, seq, gbs 0: not given */
} project_args;

/* --dtype: the arithmetic types a plan may train in (not tf32) */
static int train_dtype(const char *s)
{
    int d = dtype_parse(s);
    return d == CCS_TF32 ? -1 : d;
}

/* clang-format off */
#define A project_args
#define ADHOC(NAME, ARG, F, MAX, HELP)                                                            \
    {.name = NAME, .kind = CLI_INT, .arg = ARG, CLI_AT(A, adhoc.F), CLI_GIVEN(A, adhoc_given),   \
     .min = 1, .max = MAX, .help = HELP}
static const cli_opt project_opts[] = {
    CLI_O_STR("model", "NAME", A, model,
              "catalog model (see 'ccsweep list models'), or an ad-hoc one\n"
              "from --layers/--hidden/--heads (GPT-style: biases, tied head)"),
    CLI_O_STR("model-config", "FILE", A, model_config,
              "the model of a Hugging Face config.json (" HFCONFIG_TYPES ")"),
    ADHOC("layers", "L", layers, CCS_MAX_LAYERS, "ad-hoc model: Transformer layers"),
    ADHOC("hidden", "H", hidden, CCS_MAX_HIDDEN, "ad-hoc model: hidden size"),
    ADHOC("heads", "A", heads, CCS_MAX_HIDDEN, "ad-hoc model: attention heads"),
    ADHOC("kv-heads", "G", kv_heads, CCS_MAX_HIDDEN,
          "ad-hoc model: key/value heads (grouped-query; --heads)"),
    ADHOC("ffn", "F", ffn, CCS_MAX_FFN, "ad-hoc model: MLP inner width (4 x hidden)"),
    ADHOC("vocab", "V", vocab, CCS_MAX_VOCAB, "ad-hoc model: vocabulary (51200)"),
    {.name = "gated", .kind = CLI_FLAG, CLI_AT(A, adhoc.gated), CLI_GIVEN(A, adhoc_given),
     .value = 1, .help = "ad-hoc model: gated FFN (SwiGLU), three matrices"},
    CLI_O_STR("hw", "NAME", A, hw, "catalog hardware (see 'ccsweep list hardware')"),
    CLI_O_STR("stack", "NAME", A, stack,
              "software stack (see 'ccsweep list stacks'): its attention\n"
              "kernel, gradient type, overheads and contention (megatron-core)"),
    CLI_O_STR("attn-kernel", "K", A, attn_kernel,
              "the stack's fused attention kernel instead: gemm-rel, fa2,\n"
              "fa3, cudnn, triton, unfused, fa1 or fa-triton"),
    CLI_O_INT("gen", "G", A, gen, 0, CCS_MAX_GEN,
              "hardware generation, base scaled by the evolution rule^G (0)"),
    CLI_O_STR("evolution", "RULE", A, evolution, "scaling rule for --gen (memory-wall)"),
    CLI_O_INT("devices", "N", A, p.devices, 1, CCS_MAX_DEVICES,
              "total devices; dp = N/(tp*cp*pp) unless --dp is given"),
    CLI_O_INT("tp", "T", A, p.tp, 1, CCS_MAX_DEVICES, "tensor parallel degree (1)"),
    CLI_O_INT("pp", "P", A, p.pp, 1, CCS_MAX_DEVICES, "pipeline parallel degree (1)"),
    {.name = "dp", .kind = CLI_INT, .arg = "D", CLI_AT(A, p.dp), CLI_GIVEN(A, dp_given),
     .min = 1, .max = CCS_MAX_DEVICES, .help = "data parallel degree (1)"},
    CLI_O_INT("vpp", "V", A, p.vpp, 1, CCS_MAX_VPP,
              "interleaved 1F1B virtual stages per device (1)"),
    CLI_O_INT("cp", "C", A, p.cp, 1, CCS_MAX_DEVICES,
              "context parallelism: the sequence split over C ranks, K/V\n"
              "passed around a ring under the attention (1)"),
    CLI_O_ENUM("cp-comm", "MODE", A, p.cp_comm, cp_comm_parse, "ring or allgather",
               "ring (overlapped with the attention) or allgather (K/V\n"
               "gathered first, not overlapped) (ring)"),
    CLI_O_INT("ep", "E", A, p.ep, 1, CCS_MAX_DEVICES,
              "expert parallelism (mixture-of-experts models): the routed\n"
              "experts spread over E of the data-parallel ranks (1)"),
    CLI_O_REAL("capacity-factor", "X", A, p.capacity_factor, CCS_MAX_FACTOR,
               "tokens an expert takes, x its balanced share (dropless)"),
    CLI_O_INT("pp-first-layers", "N", A, p.pp_first, 1, CCS_MAX_LAYERS,
              "layers on the first pipeline stage; the other stages\n"
              "share the rest evenly. Without it and --pp-last-layers,\n"
              "when pp does not divide the layers, middle stages take\n"
              "ceil(layers/pp) and the first and last split the\n"
              "remainder (126 on 16: 7 + 14 x 8 + 7)"),
    CLI_O_INT("pp-last-layers", "N", A, p.pp_last, 1, CCS_MAX_LAYERS,
              "layers on the last pipeline stage (see --pp-first-layers)"),
    CLI_O_INT("seq", "S", A, p.seq, 1, CCS_MAX_SEQ, "sequence length (the model's, else 2048)"),
    CLI_O_INT("gbs", "B", A, p.gbs, 1, CCS_MAX_GBS,
              "global batch in sequences (the model's; required for ad-hoc models)"),
    CLI_O_INT("mbs", "b", A, p.mbs, 1, CCS_MAX_MBS, "micro-batch size (1)"),
    CLI_O_FLAG("sp", A, p.sp, "Megatron sequence parallelism"),
    CLI_O_ENUM("recompute", "MODE", A, p.recompute, recompute_parse, "none, selective or full",
               "activation recomputation: none, selective or full (none)"),
    CLI_O_INT("zero", "Z", A, p.zero, 0, 3, "ZeRO stage over the data-parallel group, 0..3 (0)"),
    CLI_O_ENUM("dtype", "T", A, p.dtype, train_dtype, "bf16, fp16, fp8 or fp32",
               "arithmetic type: bf16, fp16, fp8 or fp32 (bf16)"),
    CLI_O_FLAG("flash-attn", A, p.flash_attn, "fused attention kernel (no s^2 tensors)"),
    CLI_O_FLAG("tp-overlap", A, p.tp_overlap,
               "overlap TP collectives with their GEMMs (max instead of sum)"),
    CLI_O_ENUM("dp-overlap", "MODE", A, p.dp_overlap, dp_overlap_parse,
               "none, last-microbatch or bucketed",
               "when DP gradients are reduced: none (after the backward pass,\n"
               "Megatron-LM's default), last-microbatch (under the last\n"
               "micro-batch's backward), bucketed (under every backward) (none)"),
    {.name = "no-dp-overlap", .kind = CLI_FLAG, CLI_AT(A, p.dp_overlap), .value = CCS_DPOV_NONE,
     .help = "same as --dp-overlap none"},
    CLI_O_FLAG("innet-reduce", A, p.innet_reduce, "in-network reduction: all-reduce traffic halved"),
    CLI_O_REAL("comm-compress", "X", A, p.comm_compress, CCS_MAX_FACTOR,
               "bytes factor on TP/DP collectives, e.g. 0.5 (1)"),
    CLI_O_REAL("net-bw-factor", "X", A, p.net_bw_factor, CCS_MAX_FACTOR,
               "factor on every link bandwidth (1)"),
    CLI_O_STR("calib", "FILE", A, calib,
              "measured calibration profile instead of the synthetic curves"),
    CLI_O_CATALOG(A, catalogs,
                  "catalog overlay (directory or YAML file): its entries add to\n"
                  "and override the built-in ones by name; repeatable, later\n"
                  "wins; $CCSWEEP_CATALOG_PATH lists overlays too (':')"),
    CLI_O_FLAG("json", A, json, "one JSON object with every output, SI units"),
    CLI_O_HELP,
};
#undef ADHOC
#undef A
/* clang-format on */

static void project_notes(FILE *f)
{
    fprintf(f,
            "\nLimits (also in specs and catalogs): layers and --pp-first/last-layers <= 100000;\n"
            "hidden, heads, kv-heads <= 1048576; ffn <= 4194304; vocab <= 16777216; seq <=\n"
            "16777216; devices, tp, cp, ep, pp, dp and tp*cp*pp*dp <= 16777216; vpp <= 1024;\n"
            "mbs <= 1048576; gbs <= 1073741824; experts <= 65536; gen <= 64;\n"
            "comm-compress, net-bw-factor and capacity-factor in (0, 1e6].\n");
}

static const cli_cmd project_cmd = {
    .name = "project",
    .synopsis = "ccsweep project (--model NAME | --layers L --hidden H --heads A [--kv-heads G]\n"
                "                        [--ffn F] [--vocab V] [--gated])\n"
                "                       --hw NAME [OPTIONS]",
    .about = "Projects one training iteration: analytic FLOPs, bytes and memory, and a\n"
             "timeline split into compute, tensor/data/pipeline communication (serialized,\n"
             "hidden, exposed) and pipeline bubble.",
    .opts = project_opts,
    .n_opts = sizeof project_opts / sizeof project_opts[0],
    .col = 18,
    .notes = project_notes,
};

/* Parse argv into a; CLI_OK, CLI_BAD (message printed) or CLI_DONE (--help). */
static int parse_project_args(int argc, char **argv, project_args *a)
{
    memset(a, 0, sizeof *a);
    a->evolution = "memory-wall";
    a->adhoc.bias = a->adhoc.tied = 1;
    a->adhoc.vocab = 51200;
    plan_defaults(&a->p);
    a->p.mbs = 0; /* 0 = not given */
    int first, rc = cli_opt_parse(&project_cmd, argc, argv, a, stderr, &first);
    if (rc != CLI_OK)
        return rc;
    if (first < argc)
        return cli_fail("project", "unexpected argument '%s'", argv[first]);
    if (!a->hw)
        return cli_fail("project", "--hw NAME is required (see 'ccsweep list hardware')");
    if (!a->model && !a->adhoc_given && !a->model_config)
        return cli_fail("project", "give --model NAME, --model-config FILE or --layers, --hidden "
                                   "and --heads");
    if ((a->model || a->model_config) && a->adhoc_given)
        return cli_fail("project", "--model and --model-config cannot be combined with "
                                   "--layers/--hidden/--heads/--kv-heads/--ffn/--vocab/--gated");
    if (a->model && a->model_config)
        return cli_fail("project", "--model and --model-config: give one");
    return CLI_OK;
}

/* ---- resolve ------------------------------------------------------------------ */

/* A scenario ready to project: its names looked up, its plan derived. */
typedef struct project_job {
    ccs_catalog *cat;
    ccs_opmodel *om; /* the --calib profile; NULL: synthetic curves */
    ccs_model m;
    ccs_plan p;
    const ccs_evolution *ev; /* NULL when --gen is 0 and the rule is unknown */
    ccs_hw hw;               /* the hardware at generation gen */
    ccs_stack stack;         /* the software stack (--stack, --attn-kernel) */
    int has_stack;           /* 0: neither given, the default stack (NULL to the cost) */
} project_job;

/* The model of a: the catalog's, or the ad-hoc one checked. 0, or 1 with the
 * message printed. */
static int resolve_model(const project_args *a, const ccs_catalog *cat, ccs_model *m)
{
    if (a->model) {
        const ccs_model *cm = catalog_model(cat, a->model);
        if (!cm)
            return cli_unknown("project", cat, CLI_ENTRY_MODEL, a->model);
        *m = *cm;
        return 0;
    }
    ccs_err err;
    if (a->model_config) {
        if (hfconfig_load(a->model_config, NULL, m, &err) != CCS_OK)
            return cli_fail("project", "--model-config: %s", err.msg);
        return 0;
    }
    *m = a->adhoc;
    ccs_strlcpy(m->name, "adhoc", sizeof m->name);
    model_fill_defaults(m);
    if (!m->layers || !m->hidden || !m->heads)
        return cli_fail("project", "an ad-hoc model needs --layers, --hidden and --heads");
    if (model_validate(m, &err) != CCS_OK)
        return cli_fail("project", "%s", err.msg);
    return 0;
}

/* Fill the plan's defaults from the model and derive dp (or devices). 0, or 1
 * with the message printed. */
static int resolve_plan(const project_args *a, const ccs_model *m, ccs_plan *p)
{
    *p = a->p;
    if (p->seq == 0)
        p->seq = m->seq ? m->seq : 2048;
    if (p->mbs == 0)
        p->mbs = 1;
    if (!a->dp_given)
        p->dp = 0;
    if (p->devices == 0 && !a->dp_given)
        p->dp = 1;
    if (plan_derive(p) != CCS_R_OK) {
        long long tpp = (long long)p->tp * p->pp * plan_cp(p); /* each <= 2^24: fits */
        if (p->devices && tpp <= CCS_MAX_DEVICES)
            return cli_fail("project", "--devices %d is not a multiple of tp*cp*pp = %lld",
                            p->devices, tpp);
        if (p->devices)
            return cli_fail("project", "tp*cp*pp = %d*%d*%d is more than %d devices (the limit)",
                            p->tp, plan_cp(p), p->pp, CCS_MAX_DEVICES);
        return cli_fail("project", "tp*cp*pp*dp = %d*%d*%d*%d is more than %d devices (the limit)",
                        p->tp, plan_cp(p), p->pp, p->dp, CCS_MAX_DEVICES);
    }
    if (p->gbs == 0 && !(p->gbs = m->gbs)) /* never a batch made up from mbs * dp */
        return cli_fail("project", "--gbs: model '%s' has no global batch; give --gbs", m->name);
    return 0;
}

/* Look up a's names, load the profile, derive the plan. 0, or 1 with the
 * message printed; j owns what it holds either way (project_job_free). */
static int resolve_project(const project_args *a, project_job *j)
{
    memset(j, 0, sizeof *j);
    if (!(j->cat = cli_catalog("project", &a->catalogs)))
        return 1;
    const ccs_hw *base = catalog_hw(j->cat, a->hw);
    j->ev = catalog_evolution(j->cat, a->evolution);
    if (resolve_model(a, j->cat, &j->m))
        return 1;
    if (!base)
        return cli_unknown("project", j->cat, CLI_ENTRY_HW, a->hw);
    if (!j->ev && a->gen > 0)
        return cli_unknown("project", j->cat, CLI_ENTRY_EVOLUTION, a->evolution);
    if (a->calib) {
        ccs_err err;
        if (!(j->om = opmodel_load(a->calib, &err)))
            return cli_fail("project", "--calib: %s", err.msg);
    }
    if (resolve_plan(a, &j->m, &j->p))
        return 1;
    hw_evolve(base, j->ev, (int)a->gen, &j->hw);
    stack_default(&j->stack);
    if (a->stack) {
        const ccs_stack *s = catalog_stack(j->cat, a->stack);
        if (!s)
            return cli_unknown("project", j->cat, CLI_ENTRY_STACK, a->stack);
        j->stack = *s;
        j->has_stack = 1;
    }
    if (a->attn_kernel) {
        int k = attn_kernel_parse(a->attn_kernel);
        if (k < 0)
            return cli_fail("project",
                            "--attn-kernel: unknown kernel '%s' (expected gemm-rel, fa2, fa3, "
                            "cudnn, triton, unfused, fa1 or fa-triton)",
                            a->attn_kernel);
        j->stack.attn_kernel = (int8_t)k;
        j->has_stack = 1;
    }
    return 0;
}

static void project_job_free(project_job *j)
{
    opmodel_free(j->om);
    catalog_free(j->cat);
}

/* ---- compute ------------------------------------------------------------------ */

typedef struct projection {
    ccs_result r;
    ccs_region_time rg[CCS_RG_N];
    cli_op_sources src; /* filled when the plan is not invalid */
} projection;

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

/* Project j into out. 0, or 2 with the message printed when an output is not
 * finite. */
static int compute_project(const project_args *a, const project_job *j, projection *out)
{
    ccs_cost cost;
    cost_init(&cost, &j->hw, j->om, j->ev, (int)a->gen, &j->p);
    cost_set_stack(&cost, j->has_stack ? &j->stack : NULL);
    timeline_project(&j->m, &j->p, &cost, &out->r, out->rg);
    if (!result_finite(&out->r, out->rg)) {
        /* within the input limits this does not happen; never print inf or nan */
        cli_fail("project", "the projection overflowed (a non-finite output); please report the "
                            "command line");
        return 2;
    }
    if (out->r.status != CCS_ST_INVALID)
        cli_op_sources_of(&j->m, &j->p, &j->hw, j->om, a->calib, &out->src);
    return 0;
}

/* ---- text ---------------------------------------------------------------------- */

static void source_name(const cli_op_source *e, char *buf, size_t n)
{
    if (e->dtype < 0)
        snprintf(buf, n, "%s %s", opkind_name(e->kind), e->level ? "inter" : "intra");
    else
        snprintf(buf, n, "%s %s", opkind_name(e->kind), dtype_name(e->dtype));
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
    if (p->pp > 1 && plan_stage_layers(m, p, &lf, &lm, &ll) == CCS_R_OK && (lf != lm || ll != lm))
        snprintf(stages, sizeof stages, ", stages %d + %d x %d + %d layers", lf, p->pp - 2, lm, ll);
    printf("  %-20s seq %d, gbs %d, mbs %d%s, vpp %d%s, %s%s, recompute %s, "
           "zero %d%s, dp-overlap %s\n",
           "plan", p->seq, p->gbs, p->mbs, mb, p->vpp, stages, dtype_name(p->dtype),
           p->sp ? ", sp" : "", recompute_name(p->recompute), p->zero,
           p->flash_attn ? ", flash-attn" : "", dp_overlap_name(p->dp_overlap));
    printf("  %-20s %.4g (%.1f B)\n", "parameters", r->params, r->params / 1e9);
    if (r->status == CCS_ST_INVALID) {
        char why[256];
        printf("  %-20s invalid: %s\n", "status",
               plan_reason_detail(r->reason, m, p, why, sizeof why));
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
    printf("  %-20s weights %.2f + grads %.2f + optimizer %.2f + activations %.2f + CUDA "
           "context and NCCL %.2f GiB\n",
           "memory/device", gib(r->mem_weights), gib(r->mem_grads), gib(r->mem_optimizer),
           gib(r->mem_activations), gib(memory_reserve(p)));
    if (p->zero >= 2 && !plan_grads_sharded(p))
        printf("  %-20s kept whole until the last of %d micro-batches and reduced once (zero "
               "%d shards them only with --dp-overlap bucketed, reduced every micro-batch)\n",
               "gradients", r->micro_batches, p->zero);
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

/* ---- the command ----------------------------------------------------------------- */

int cli_project(int argc, char **argv)
{
    project_args a;
    int rc = parse_project_args(argc, argv, &a);
    if (rc != CLI_OK)
        return rc == CLI_DONE ? 0 : 1;
    project_job j;
    static projection out; /* large; the CLI is single-threaded */
    memset(&out, 0, sizeof out);
    rc = resolve_project(&a, &j);
    if (rc == 0)
        rc = compute_project(&a, &j, &out);
    if (rc == 0 && a.json) {
        const ccs_result *r = &out.r;
        if (cli_print_json(stdout, &j.m, &j.hw, a.gen ? a.evolution : NULL, &j.stack, &j.p, r,
                           out.rg, r->status != CCS_ST_INVALID ? &out.src : NULL)) {
            cli_fail("project", "out of memory writing JSON");
            rc = 2;
        }
    } else if (rc == 0) {
        print_human(&j.m, &j.hw, a.evolution, &j.p, &out.r, out.rg, &out.src);
    }
    project_job_free(&j);
    return rc;
}
