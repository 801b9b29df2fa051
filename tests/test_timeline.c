/* test_timeline.c - whole-iteration projections: the eight measured iteration
 * times of Korthikanti et al. 2022 (tests/data/korthikanti2022.csv) on the
 * catalog's a100-80g with one set of constants, and the timeline's invariants. */
#include "testutil.h"

/* Korthikanti et al. Table 5: GPT models, vocab 51200, seq 2048, TP 8, no DP;
 * full recompute vs sequence parallelism + selective recompute. Mean absolute
 * error <= 5% and every row <= 10%. */
static void test_korthikanti_iteration_times(void **state)
{
    (void)state;
    const ccs_hw *a100 = catalog_hw(test_cat(), "a100-80g");
    assert_non_null(a100);
    FILE *f = fopen("tests/data/korthikanti2022.csv", "r");
    assert_non_null(f);
    char line[512];
    double sum = 0, worst = 0, bias = 0;
    int n = 0;
    printf("  %-5s %-22s %10s %10s %8s\n", "model", "mode", "proj (s)", "meas (s)", "error");
    while (fgets(line, sizeof line, f)) {
        char name[32];
        int heads, hidden, layers, tp, pp, gpus, gbs, mbs, vpp;
        double full, spsel;
        if (line[0] == '#' ||
            sscanf(line, "%31[^,],%d,%d,%d,%d,%d,%d,%d,%d,%d,%lf,%lf", name, &heads, &hidden,
                   &layers, &tp, &pp, &gpus, &gbs, &mbs, &vpp, &full, &spsel) != 12)
            continue;
        ccs_model m = {.layers = layers,
                       .hidden = hidden,
                       .heads = heads,
                       .vocab = 51200,
                       .max_pos = 2048,
                       .bias = 1,
                       .tied = 1};
        strcpy(m.name, name);
        model_fill_defaults(&m);
        for (int mode = 0; mode < 2; mode++) {
            ccs_plan p;
            plan_defaults(&p);
            p.tp = tp;
            p.pp = pp;
            p.devices = gpus;
            p.gbs = gbs;
            p.mbs = mbs;
            p.vpp = vpp;
            p.seq = 2048;
            p.recompute = mode ? CCS_RECOMPUTE_SELECTIVE : CCS_RECOMPUTE_FULL;
            p.sp = (int8_t)mode;
            ccs_result r;
            test_project(&m, &p, a100, &r, NULL);
            assert_int_equal(r.status, CCS_ST_OK);
            double meas = mode ? spsel : full;
            double err = (r.t_iter - meas) / meas;
            printf("  %-5s %-22s %10.3f %10.2f %+7.1f%%\n", name,
                   mode ? "sp + selective" : "full recompute", r.t_iter, meas, 100 * err);
            sum += fabs(err);
            bias += err;
            worst = fmax(worst, fabs(err));
            n++;
        }
    }
    fclose(f);
    assert_int_equal(n, 8);
    printf("  mean absolute error %.1f%%, max %.1f%%, mean signed error %+.1f%%\n", 100 * sum / n,
           100 * worst, 100 * bias / n);
    assert_true(sum / n <= 0.05);
    assert_true(worst <= 0.10);
    char text[160];
    snprintf(text, sizeof text, "a100-80g projects a mean absolute error of %.1f%% (max %.1f%%)",
             100 * sum / n, 100 * worst);
    assert_readme_says(text);
}

/* Korthikanti et al. 2022, Table 4 (tests/data/korthikanti2022_layer.csv): one
 * layer of the 22B model (hidden 6144, 64 heads) at tp 8, micro-batch 4,
 * sequence 2048 on A100, forward and backward in five modes. The projected
 * layer time is the sum of its compute and TP regions (the backward includes
 * the recomputation). Every time within 8%, and sequence parallelism with
 * selective recomputation not slower than selective alone, as measured. */
static void test_korthikanti_layer_times(void **state)
{
    (void)state;
    const ccs_hw *a100 = catalog_hw(test_cat(), "a100-80g");
    FILE *f = fopen("tests/data/korthikanti2022_layer.csv", "r");
    assert_non_null(f);
    char line[256];
    int n = 0;
    double sel = 0, sel_sp = 0;
    printf("  %-28s %9s %9s %9s %9s\n", "mode", "fwd (ms)", "meas", "bwd (ms)", "meas");
    while (fgets(line, sizeof line, f)) {
        char mode[64], rc[32];
        int sp;
        double fwd_ms, bwd_ms;
        if (line[0] == '#' ||
            sscanf(line, "%63[^,],%d,%31[^,],%lf,%lf", mode, &sp, rc, &fwd_ms, &bwd_ms) != 5)
            continue;
        ccs_model m = {.layers = 48,
                       .hidden = 6144,
                       .heads = 64,
                       .vocab = 51200,
                       .max_pos = 2048,
                       .bias = 1,
                       .tied = 1};
        strcpy(m.name, "22B");
        model_fill_defaults(&m);
        ccs_plan p;
        plan_defaults(&p);
        p.tp = 8;
        p.devices = 8;
        p.mbs = p.gbs = 4;
        p.seq = 2048;
        p.sp = (int8_t)sp;
        p.recompute = (int8_t)recompute_parse(rc);
        assert_true(p.recompute >= 0);
        ccs_result r;
        ccs_region_time rg[CCS_RG_N];
        test_project(&m, &p, a100, &r, rg);
        /* the whole 48-layer model need not fit without recomputation: the
         * measurement is of one layer, and oom plans are timed all the same */
        assert_int_not_equal(r.status, CCS_ST_INVALID);
        double fwd = 0, bwd = 0;
        for (int i = CCS_RG_FWD_ATTN; i <= CCS_RG_FWD_MLP_TP; i++)
            fwd += rg[i].time;
        for (int i = CCS_RG_RECOMP_ATTN; i <= CCS_RG_BWD_ATTN_TP; i++)
            bwd += rg[i].time;
        fwd *= 1e3;
        bwd *= 1e3;
        printf("  %-28s %9.2f %9.1f %9.2f %9.1f  (%+.1f%%, %+.1f%%)\n", mode, fwd, fwd_ms, bwd,
               bwd_ms, 100 * (fwd / fwd_ms - 1), 100 * (bwd / bwd_ms - 1));
        assert_rel(fwd, fwd_ms, 0.08);
        assert_rel(bwd, bwd_ms, 0.08);
        if (p.recompute == CCS_RECOMPUTE_SELECTIVE)
            *(sp ? &sel_sp : &sel) = fwd + bwd;
        n++;
    }
    fclose(f);
    assert_int_equal(n, 5);
    assert_true(sel_sp > 0 && sel > 0);
    assert_true(sel_sp <= sel);
}

/* A published MoE training throughput: Megatron-Core v0.9 trains Mixtral 8x7B
 * in bf16 at 468 TFLOP/s per H100 (NVIDIA/Megatron-LM,
 * megatron/core/transformer/moe/README.md; its reference mapping for the model:
 * 64 H100s, TP 1, EP 8, PP 4, VP 8, sequence 4096, MBS 1, GBS 256, dropless,
 * all-to-all dispatcher). The README does not tie the figure to that row, and
 * the projection leaves out router load imbalance and the permutation kernels'
 * real cost. The test holds the error inside 10%, so that a regression
 * shows (the closing line prints it). */
static void test_moe_megatron(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "mixtral-8x7b");
    const ccs_hw *h = catalog_hw(test_cat(), "h100-sxm");
    ccs_plan p;
    plan_defaults(&p);
    p.tp = 1;
    p.ep = 8;
    p.pp = 4;
    p.vpp = 8;
    p.devices = 64;
    p.seq = 4096;
    p.gbs = 256;
    p.mbs = 1;
    p.flash_attn = 1;
    p.recompute = CCS_RECOMPUTE_SELECTIVE;
    p.zero = 1; /* Megatron's distributed optimizer */
    p.dp_overlap = CCS_DPOV_LAST_MICRO;
    ccs_result r;
    test_project(m, &p, h, &r, NULL);
    assert_int_equal(r.status, CCS_ST_OK);
    double tflops = r.model_flops / r.t_iter / p.devices / 1e12;
    printf("  mixtral-8x7b, 64 h100-sxm: %.0f TFLOP/s per GPU, measured 468 (%+.1f%%)\n", tflops,
           100 * (tflops / 468 - 1));
    assert_rel(tflops, 468, 0.10);
    assert_true(r.t_ep_comm > 0);
}

/* Published training throughput (tests/data/nemo_published.csv: NVIDIA's NeMo
 * 24.07 and Megatron-Bridge 25.11/26.02 performance tables; DGX H100, DGX
 * B200 and GB200 NVL72),
 * at the tables' launch settings: Transformer Engine fused attention, sequence
 * parallelism and TP communication overlap with tensor parallelism, the
 * distributed optimizer (ZeRO-1) with gradient reduction overlapped in the
 * last micro-batch (FSDP rows: ZeRO-3), no recomputation. The rows cover an
 * uneven pipeline (llama3-405b: 126 layers on 8 stages) and context
 * parallelism (cp 2). Each row within 20%; on H100 (ten rows) the mean
 * absolute error within 8% and the mean signed error within 5%: no systematic
 * bias there. The four Blackwell rows (one a bf16 DeepSeek-V3 with expert
 * parallelism) come out fast (the test prints by how much): their bias is not
 * asserted. Every row fits under megatron-core-te, the stack these runs
 * use; under the default stack's fp32 main gradients gpt3-175b on 512 GPUs
 * (mbs 2) does not (81.2 GiB with the CUDA context and NCCL's buffers): the
 * rows out of memory are printed, their times still compared. */
static void published_throughput(const ccs_stack *st)
{
    printf("  stack %s:\n", st ? st->name : "megatron-core (the default)");
    FILE *f = fopen("tests/data/nemo_published.csv", "r");
    assert_non_null(f);
    char line[256];
    int n = 0, uneven = 0, cp = 0, oom = 0;
    double sum_abs = 0, sum = 0;
    while (fgets(line, sizeof line, f)) {
        char src[32], hw[32], name[64], dt[16];
        int gpus, gbs, mbs, seq, tp, pp, cpn, vpp, ep, zero;
        double pub;
        if (line[0] == '#' ||
            sscanf(line, "%31[^,],%31[^,],%63[^,],%15[^,],%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%lf", src,
                   hw, name, dt, &gpus, &gbs, &mbs, &seq, &tp, &pp, &cpn, &vpp, &ep, &zero,
                   &pub) != 15)
            continue;
        const ccs_model *m = catalog_model(test_cat(), name);
        const ccs_hw *h = catalog_hw(test_cat(), hw);
        assert_non_null(m);
        assert_non_null(h);
        ccs_plan p;
        plan_defaults(&p);
        p.devices = gpus;
        p.gbs = gbs;
        p.mbs = mbs;
        p.seq = seq;
        p.tp = tp;
        p.pp = pp;
        p.cp = cpn;
        p.vpp = vpp;
        p.ep = ep;
        p.zero = (int8_t)zero;
        p.dtype = (int8_t)dtype_parse(dt);
        assert_true(p.dtype >= 0);
        p.flash_attn = 1;
        p.sp = tp > 1;
        p.tp_overlap = tp > 1;
        /* FSDP (zero 3) keeps only a shard of the gradients, so it
         * reduce-scatters every micro-batch's (plan_grads_sharded); the
         * distributed optimizer reduces once, overlapped with the last */
        p.dp_overlap = zero >= 2 ? CCS_DPOV_BUCKETED : CCS_DPOV_LAST_MICRO;
        ccs_result r;
        ccs_cost c;
        plan_derive(&p);
        cost_init(&c, h, NULL, NULL, 0, &p);
        cost_set_stack(&c, st);
        timeline_project(m, &p, &c, &r, NULL);
        /* a run that ran fits under the stack it ran (the default stack's
         * fp32 main gradients are another software setting) */
        assert_true(r.status == CCS_ST_OK || (!st && r.status == CCS_ST_OOM));
        oom += r.status == CCS_ST_OOM;
        double tok = r.tokens_per_s / gpus, err = tok / pub - 1;
        printf("  %-8s %-11s %-12s %-4s %4d GPUs tp %d pp %2d cp %d vpp %2d ep %2d: %6.0f "
               "tokens/s/GPU, measured %6.0f (%+.1f%%), %.1f GiB%s\n",
               src, hw, name, dt, gpus, tp, pp, cpn, vpp, ep, tok, pub, 100 * err,
               r.mem_total / 1073741824.0, r.status == CCS_ST_OOM ? ", out of memory" : "");
        assert_true(fabs(err) <= 0.20);
        if (strcmp(hw, "h100-sxm") == 0) {
            sum_abs += fabs(err);
            sum += err;
            n++;
        }
        uneven += m->layers % pp != 0;
        cp += cpn > 1;
    }
    fclose(f);
    assert_int_equal(n, 10);
    assert_true(uneven >= 2 && cp >= 4);
    printf("  h100-sxm: mean absolute error %.1f%%, mean signed error %+.1f%%; %d rows out of "
           "memory\n",
           100 * sum_abs / n, 100 * sum / n, oom);
    assert_true(sum_abs / n <= 0.08);
    assert_true(fabs(sum / n) <= 0.05);
    if (st) {
        char text[160];
        snprintf(text, sizeof text, "`%s` is within %.1f%% (mean signed %+.1f%%)", st->name,
                 100 * sum_abs / n, 100 * sum / n);
        assert_readme_says(text);
    }
}

/* The same rows under the default stack and under megatron-core-te (the
 * stack NeMo runs: cuDNN fused attention, bf16 gradient reduction,
 * collectives holding NCCL's compute units under overlap; measured: mean
 * absolute error 5.3% on H100, mean signed -1.0%; README.md states it). */
static void test_published_throughput(void **state)
{
    (void)state;
    published_throughput(NULL);
    const ccs_stack *te = catalog_stack(test_cat(), "megatron-core-te");
    assert_non_null(te);
    published_throughput(te);
}

/* One field after another of a CSV line (double quotes around fields that
 * hold commas): the next field into buf (n bytes), the rest returned; NULL
 * at the end of the line. */
static const char *csv_field(const char *s, char *buf, size_t n)
{
    if (!s || !*s || *s == '\n')
        return NULL;
    size_t k = 0;
    int q = *s == '"';
    if (q)
        s++;
    for (; *s && (q ? *s != '"' : *s != ',' && *s != '\n'); s++)
        if (k + 1 < n)
            buf[k++] = *s;
    buf[k] = 0;
    if (q && *s == '"')
        s++;
    return *s == ',' ? s + 1 : s;
}

/* The errors of the 216 runs under stack st, by GPU type and sequence
 * bucket (CCS_LLMF_ROWS=1: each row's projection, to stderr). */
typedef struct llmf_tally {
    double gsum[3], gabs[3], bsum[3], babs[3], sum, sum_abs, worst;
    int gn[3], bn[3], n, oom;
} llmf_tally;

static void llmf_project(const ccs_stack *st, llmf_tally *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen("tests/data/llm_foundry_mpt.csv", "r");
    assert_non_null(f);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || strncmp(line, "model,", 6) == 0)
            continue;
        char v[26][128];
        const char *s = line;
        int k = 0;
        while (k < 26 && (s = csv_field(s, v[k], sizeof v[k])))
            k++;
        assert_true(k >= 25);
        /* model,layers,hidden,heads,kv_heads,ffn,vocab,seq,gpu,gpus,tp,pp,vpp,cp,ep,dp,
         * zero_or_fsdp,mbs,gbs,recompute,dtype,dp_overlap,published_metric,
         * published_value,derived_t_iter_s */
        ccs_model m;
        memset(&m, 0, sizeof m);
        ccs_strlcpy(m.name, v[0], sizeof m.name);
        m.layers = atoi(v[1]);
        m.hidden = atoi(v[2]);
        m.heads = atoi(v[3]);
        m.kv_heads = atoi(v[4]);
        m.ffn = atoi(v[5]);
        m.vocab = atoi(v[6]);
        m.bias = m.tied = 1;
        model_fill_defaults(&m);
        const ccs_hw *h = catalog_hw(test_cat(), v[8]);
        assert_non_null(h);
        ccs_plan p;
        plan_defaults(&p);
        p.seq = atoi(v[7]);
        p.devices = atoi(v[9]);
        p.tp = atoi(v[10]);
        p.pp = atoi(v[11]);
        p.dp = atoi(v[15]);
        p.zero = (int8_t)atoi(v[16]);
        p.mbs = atoi(v[17]);
        p.gbs = atoi(v[18]);
        p.recompute = (int8_t)recompute_parse(v[19]);
        p.dtype = (int8_t)dtype_parse(v[20]);
        p.dp_overlap = (int8_t)dp_overlap_parse(v[21]);
        p.flash_attn = 1;
        assert_true(p.recompute >= 0 && p.dtype >= 0 && p.dp_overlap >= 0);
        ccs_cost c;
        cost_init(&c, h, NULL, NULL, 0, &p);
        cost_set_stack(&c, st);
        ccs_result r;
        timeline_project(&m, &p, &c, &r, NULL);
        assert_int_not_equal(r.status, CCS_ST_INVALID);
        t->oom += r.status == CCS_ST_OOM;
        double ti = atof(v[24]), err = r.t_iter / ti - 1;
        if (getenv("CCS_LLMF_ROWS"))
            fprintf(stderr,
                    "%s %s seq %d gpus %d zero %d mbs %d gbs %d %s %s: %.3f vs %.3f s (%+.1f%%), "
                    "compute %.3f, exposed comm %.3f s, MFU %.1f%%, memory %.1f GiB\n",
                    v[0], v[8], p.seq, p.devices, p.zero, p.mbs, p.gbs, v[19], v[20], r.t_iter, ti,
                    100 * err, r.t_compute, r.t_comm_exposed, 100 * r.mfu,
                    r.mem_total / 1073741824.0);
        int g = strcmp(v[8], "a100-40g") == 0 ? 0 : strcmp(v[8], "a100-80g") == 0 ? 1 : 2;
        int b = p.seq <= 2048 ? 0 : p.seq <= 8192 ? 1 : 2;
        t->gsum[g] += err;
        t->gabs[g] += fabs(err);
        t->gn[g]++;
        t->bsum[b] += err;
        t->babs[b] += fabs(err);
        t->bn[b]++;
        t->sum += err;
        t->sum_abs += fabs(err);
        t->worst = fmax(t->worst, fabs(err));
        t->n++;
    }
    fclose(f);
}

/* llm-foundry's MPT training benchmarks (tests/data/llm_foundry_mpt.csv,
 * a copy of the validation set: mosaicml/llm-foundry scripts/train/
 * benchmarking/README.md @495218376, 216 runs of MPT 125M-70B at sequences
 * 512-65536 on 8-512 A100 40GB, A100 80GB and H100 with PyTorch FSDP; each
 * row's seconds per optimizer step derived from the published tokens/s, the
 * launch settings as its header gives them), projected under the stack the
 * runs used (llm-foundry: FSDP1, flash-attn's flash_attn_triton.py, fp32
 * gradient reduction, no dropout, flash-attn's fused cross-entropy, Composer's
 * two training metrics on every micro-batch's logits, bias gradients summed by
 * their own kernels) with the per-block FSDP
 * units overlapped (bucketed). MPT is a GPT-style model: biases, tied
 * embedding, GeLU MLP, learned positions (an ad-hoc model here). Every run
 * ran, so every projection must fit its device. The test prints the error
 * table by GPU and by sequence bucket. Asserted, the accuracy aimed at: mean
 * absolute error <= 8% overall and <= 10% within each GPU type and each
 * sequence bucket (<= 2k, 4k-8k, >= 16k), mean signed error within 4%, no row
 * out of memory (measured: 5.6% and -2.1%; by GPU 6.6 / 4.6 / 5.5%; by
 * bucket 6.3 / 6.0 / 3.4%). The README's figures, and those of the default
 * stack it compares them with, are this test's output. */
static void test_llm_foundry(void **state)
{
    (void)state;
    const ccs_stack *st = catalog_stack(test_cat(), "llm-foundry");
    assert_non_null(st);
    static const char *const gpus[] = {"a100-40g", "a100-80g", "h100-sxm"};
    static const char *const buckets[] = {"<= 2k", "4k-8k", ">= 16k"};
    llmf_tally t;
    llmf_project(st, &t);
    int n = t.n;
    assert_int_equal(n, 216);
    for (int g = 0; g < 3; g++)
        printf("  llm-foundry %-9s %3d runs: mean |error| %5.1f%%, mean signed %+5.1f%%\n", gpus[g],
               t.gn[g], 100 * t.gabs[g] / t.gn[g], 100 * t.gsum[g] / t.gn[g]);
    for (int b = 0; b < 3; b++)
        printf("  llm-foundry seq %-6s %3d runs: mean |error| %5.1f%%, mean signed %+5.1f%%\n",
               buckets[b], t.bn[b], 100 * t.babs[b] / t.bn[b], 100 * t.bsum[b] / t.bn[b]);
    printf("  llm-foundry all      %3d runs: mean |error| %5.1f%%, mean signed %+5.1f%%, max "
           "%.1f%%, %d out of memory\n",
           n, 100 * t.sum_abs / n, 100 * t.sum / n, 100 * t.worst, t.oom);
    char text[160];
    snprintf(text, sizeof text,
             "projects a mean absolute error of %.1f%% and a mean signed error of %+.1f%%",
             100 * t.sum_abs / n, 100 * t.sum / n);
    assert_readme_says(text);
    assert_int_equal(t.oom, 0);
    assert_true(fabs(t.sum / n) <= 0.04);
    assert_true(t.sum_abs / n <= 0.08);
    for (int b = 0; b < 3; b++)
        assert_true(t.babs[b] / t.bn[b] <= 0.10);
    for (int g = 0; g < 3; g++)
        assert_true(t.gabs[g] / t.gn[g] <= 0.10);
    /* the same runs under the default stack, as the README compares them */
    llmf_tally d;
    llmf_project(NULL, &d);
    printf("  default stack        %3d runs: mean |error| %5.1f%%, mean signed %+5.1f%%\n", d.n,
           100 * d.sum_abs / d.n, 100 * d.sum / d.n);
    snprintf(text, sizeof text, "(the default stack: %.1f%%, %+.1f%%)", 100 * d.sum_abs / d.n,
             100 * d.sum / d.n);
    assert_readme_says(text);
}

/* Mean errors of one group of torchtitan rows. */
typedef struct titan_group {
    double sum, sum_abs;
    int n, oom;
} titan_group;

static void titan_add(titan_group *g, double err, int oom)
{
    g->sum += err;
    g->sum_abs += fabs(err);
    g->n++;
    g->oom += oom;
}

static void titan_print(const char *what, const titan_group *g)
{
    if (g->n)
        printf("  torchtitan %-22s %2d runs: mean |error| %5.1f%%, mean signed %+6.1f%%, %d out of "
               "memory\n",
               what, g->n, 100 * g->sum_abs / g->n, 100 * g->sum / g->n, g->oom);
}

/* torchtitan's published runs (tests/data/torchtitan_published.csv, its header
 * names the sources: pytorch/torchtitan docs/performance.md at four commits,
 * the benchmarks/ folder and docs/mxfp8.md; 47 measured runs of Llama 2
 * 13B/70B and Llama 3 8B/70B/405B on 8-512 A100 80GB, H100, H200 and B200:
 * FSDP2, 2D with TP, 3D with PP, CP up to 262144 tokens, eager and compiled,
 * bf16 and float8), each projected under the stack a user would pick:
 * pytorch-fsdp2 for an eager run, pytorch-fsdp2-compile for a compiled one;
 * float8 rows (tensorwise, rowwise and the MX recipes alike) as dtype fp8.
 * FSDP is ZeRO-3 over the dp ranks; without pipelining each rank runs its
 * local batch as one micro-batch, reduce-scattered under its own backward pass
 * (bucketed); with pipelining torch.distributed.pipelining (stage.py
 * backward_maybe_with_nosync: set_requires_gradient_sync only for the last
 * backward) accumulates the gradients unsharded and reduce-scatters them under
 * the last micro-batch (last_micro). TP runs with sequence parallelism
 * (torchtitan's SequenceParallel norms), AsyncTP as TP overlap, CP with the
 * all-gather of K/V (torchtitan's default rotate method), SDPA as the fused
 * attention kernel. Activation checkpointing: none and full map to themselves;
 * torchtitan's selective modes map to SELECTIVE, which both stacks run as the
 * per-op policy (selective: op, regions.c): every second matmul of a block and
 * its element-wise operators recomputed. Layer SAC (the whole of every second
 * block) has no equivalent yet and runs as the per-op policy too. The
 * catalog's h100-sxm (80 GB HBM3 at 700 W) stands in for the 96 GB HBM2e H100
 * at 500 W of Meta's Grand Teton hosts (runs measured above 80 GiB would not
 * fit it). Rows projected out of memory are still compared and counted.
 * The test prints each row and the mean errors by stack, by GPU and overall
 * (CCS_TITAN_ROWS=1: each row's time split, to stderr).
 * Asserted: every plan valid; the Llama 2 13B shape the catalog lacks holds
 * the parameter count worked out below; the overall mean absolute error below
 * a guard. The aim is 10% mean absolute and +-5% mean signed error; it is not
 * met yet (measured: 44.5% and +44.5%, every row fast; by stack 16.4% eager,
 * 52.1% compiled (float8, AsyncTP and the B200 rows); by GPU 13.8% A100,
 * 41.3% H100, 9.8% H200, 149.8% on the 750 W B200; none out of memory). The
 * guard, the measured level plus 5 points rounded up (50%), only catches
 * drift. */
static void test_torchtitan(void **state)
{
    (void)state;
    const ccs_stack *stacks[2] = {catalog_stack(test_cat(), "pytorch-fsdp2"),
                                  catalog_stack(test_cat(), "pytorch-fsdp2-compile")};
    assert_non_null(stacks[0]);
    assert_non_null(stacks[1]);
    static const char *const gpus[] = {"a100-80g", "h100-sxm", "h200", "b200"};
    titan_group by_stack[2], by_gpu[4], all;
    memset(by_stack, 0, sizeof by_stack);
    memset(by_gpu, 0, sizeof by_gpu);
    memset(&all, 0, sizeof all);
    /* Llama 2 13B as torchtitan builds it (models/llama/__init__.py "13B"
     * at 157a12c56): 40 layers, h 5120, 40 heads, no GQA, SwiGLU width
     * 256 * ceil(int(2 * 4 * 5120 / 3) / 256) = 256 * ceil(13653 / 256) =
     * 13824, vocab 32000; the rest as Llama 2 70B. Parameters: 40 x (4 h^2 +
     * 3 h ffn + 2 h) + 2 x 32000 h + h (the final norm) = 40 x 317204480 +
     * 327680000 + 5120 = 13015864320, Llama 2's "13B" (Touvron et al. 2023,
     * Table 1). */
    const ccs_model *l70 = catalog_model(test_cat(), "llama2-70b");
    assert_non_null(l70);
    ccs_model l13 = *l70;
    ccs_strlcpy(l13.name, "llama2-13b", sizeof l13.name);
    l13.layers = 40;
    l13.hidden = 5120;
    l13.heads = l13.kv_heads = 40;
    l13.ffn = 13824;
    l13.gbs = 0;
    FILE *f = fopen("tests/data/torchtitan_published.csv", "r");
    assert_non_null(f);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || strncmp(line, "source,", 7) == 0)
            continue;
        /* source,table,hw,model,gpus,dp,tp,pp,vpp,cp,mbs,gbs,seq,ac,compile,
         * dtype,fp8_recipe,async_tp,tokens_s_gpu,mfu_pct,mem_gib,notes */
        char v[22][256];
        const char *s = line;
        int k = 0;
        while (k < 22 && (s = csv_field(s, v[k], sizeof v[k])))
            k++;
        assert_int_equal(k, 22);
        const ccs_model *m =
            strcmp(v[3], "llama2-13b") == 0 ? &l13 : catalog_model(test_cat(), v[3]);
        const ccs_hw *h = catalog_hw(test_cat(), v[2]);
        assert_non_null(m);
        assert_non_null(h);
        ccs_plan p;
        plan_defaults(&p);
        p.devices = atoi(v[4]);
        p.dp = atoi(v[5]);
        p.tp = atoi(v[6]);
        p.pp = atoi(v[7]);
        p.vpp = atoi(v[8]);
        p.cp = atoi(v[9]);
        p.mbs = atoi(v[10]);
        p.gbs = atoi(v[11]);
        p.seq = atoi(v[12]);
        p.zero = 3;
        p.recompute = (int8_t)(strcmp(v[13], "none") == 0   ? CCS_RECOMPUTE_NONE
                               : strcmp(v[13], "full") == 0 ? CCS_RECOMPUTE_FULL
                                                            : CCS_RECOMPUTE_SELECTIVE);
        assert_true(strcmp(v[13], "none") == 0 || strcmp(v[13], "full") == 0 ||
                    strncmp(v[13], "selective-", 10) == 0);
        int compiled = atoi(v[14]);
        p.dtype = (int8_t)dtype_parse(v[15]);
        assert_true(p.dtype >= 0);
        p.tp_overlap = (int8_t)atoi(v[17]);
        p.sp = p.tp > 1;
        p.cp_comm = CCS_CP_ALLGATHER;
        p.flash_attn = 1;
        p.dp_overlap = p.pp > 1 ? CCS_DPOV_LAST_MICRO : CCS_DPOV_BUCKETED;
        ccs_cost c;
        cost_init(&c, h, NULL, NULL, 0, &p);
        cost_set_stack(&c, stacks[compiled]);
        ccs_result r;
        timeline_project(m, &p, &c, &r, NULL);
        if (r.status == CCS_ST_INVALID)
            print_error("%s %s %s: %s\n", v[0], v[1], v[3], plan_reason_name(r.reason));
        assert_int_not_equal(r.status, CCS_ST_INVALID);
        if (m == &l13)
            assert_rel(r.params, 13015864320.0, 1e-9);
        int oom = r.status == CCS_ST_OOM;
        double pub = atof(v[18]), tok = r.tokens_per_s / p.devices, err = tok / pub - 1;
        char mem[32] = "";
        if (v[20][0])
            snprintf(mem, sizeof mem, " (measured %.2f)", atof(v[20]));
        printf("  %-7s %-9s %-11s %3d GPUs dp %3d tp %d pp %d vpp %d cp %d mbs %2d seq %6d "
               "%-15s %-7s %-4s %-18s atp %d: %6.0f vs %7.1f tokens/s/GPU %+6.1f%%, %5.1f "
               "GiB%s%s\n",
               v[0], v[2], v[3], p.devices, p.dp, p.tp, p.pp, p.vpp, p.cp, p.mbs, p.seq, v[13],
               compiled ? "compile" : "eager", v[15], v[16], p.tp_overlap, tok, pub, 100 * err,
               r.mem_total / 1073741824.0, mem, oom ? " OOM" : "");
        if (getenv("CCS_TITAN_ROWS"))
            fprintf(stderr,
                    "%s %s %s: t_iter %.3f s, compute %.3f s, exposed comm %.3f s (dp %.3f, tp "
                    "%.3f, cp %.3f), bubble %.3f s, MFU %.1f%%\n",
                    v[0], v[1], v[3], r.t_iter, r.t_compute, r.t_comm_exposed, r.t_dp_comm_exposed,
                    r.t_tp_comm_exposed, r.t_cp_comm_exposed, r.t_bubble, 100 * r.mfu);
        titan_add(&by_stack[compiled], err, oom);
        int g = 0;
        while (g < 4 && strcmp(v[2], gpus[g]) != 0)
            g++;
        assert_true(g < 4);
        titan_add(&by_gpu[g], err, oom);
        titan_add(&all, err, oom);
    }
    fclose(f);
    assert_int_equal(all.n, 47);
    for (int i = 0; i < 2; i++)
        titan_print(stacks[i]->name, &by_stack[i]);
    for (int g = 0; g < 4; g++)
        titan_print(gpus[g], &by_gpu[g]);
    titan_print("all", &all);
    assert_true(all.sum_abs / all.n <= 0.50);
    char said[200];
    snprintf(said, sizeof said,
             "torchtitan's %d published runs (`tests/data/torchtitan_published.csv`) are "
             "projected %.1f%% too fast on average (`pytorch-fsdp2`, eager: %.1f%%; "
             "`pytorch-fsdp2-compile`: %.1f%%)",
             all.n, 100 * all.sum / all.n, 100 * by_stack[0].sum / by_stack[0].n,
             100 * by_stack[1].sum / by_stack[1].n);
    assert_readme_says(said);
}

/* A published MoE training cost: DeepSeek-V3 takes 180K H800 GPU hours per
 * trillion tokens (arXiv 2412.19437, Sec. 1 and Table 1: 2664K GPU hours for
 * 14.8T pre-training tokens; "3.7 days on our cluster with 2048 H800 GPUs").
 * Projected: devices x t_iter / (gbs x seq) x 1e12 / 3600. What the
 * projection leaves out, and which way each goes: DualPipe's overlap of the
 * expert all-to-alls (and pipeline transfers) with the computation of the
 * other micro-batch (Sec. 3.2.1) is not modelled, the all-to-alls are
 * exposed (too slow); the multi-token-prediction module (an extra block and
 * output-head pass, Sec. 2.2), the 20 of 132 SMs given to communication
 * (Secs. 3.2.2 and 3.5.1), the recomputed RMSNorms and MLA up-projections (Sec. 3.2.3)
 * and router load imbalance are not modelled (too fast). The two partly
 * cancel: the closing line prints the net error and what it would be with
 * the all-to-alls hidden as DualPipe hides them (then the projection is well
 * below the figure, as it must be with the other omissions all fast); the
 * test holds the error inside 30% so that a regression shows. */
static void test_deepseek_v3_gpu_hours(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "deepseek-v3");
    const ccs_hw *h = catalog_hw(test_cat(), "h800");
    assert_non_null(m);
    assert_non_null(h);
    ccs_plan p = test_deepseek_v3_plan();
    ccs_result r;
    test_project(m, &p, h, &r, NULL);
    assert_int_equal(p.dp, 128);
    assert_int_equal(r.micro_batches, 120);
    assert_true(r.t_ep_comm > 0);
    double hours = p.devices * r.t_iter / ((double)p.gbs * p.seq) * 1e12 / 3600;
    double hidden = p.devices * (r.t_iter - r.t_ep_comm) / ((double)p.gbs * p.seq) * 1e12 / 3600;
    printf("  deepseek-v3, 2048 h800: %.0fK GPU hours per trillion tokens, published 180K "
           "(%+.1f%%); all-to-alls hidden: %.0fK (%+.1f%%)\n",
           hours / 1e3, 100 * (hours / 180e3 - 1), hidden / 1e3, 100 * (hidden / 180e3 - 1));
    assert_rel(hours, 180e3, 0.30);
}

/* Dense first blocks cost a dense FFN: on one stage, the layers' compute and
 * the all-to-alls of DeepSeek-V3 (3 dense blocks of 61) are the 58/61 and
 * 3/61 mix of the same model with expert blocks only and with dense blocks
 * only (embedding and head alike in all three; the optimizer step, which
 * differs with the parameters, left out). The dense model runs without
 * expert parallelism, which its dense blocks do not use. */
static void test_dense_first_blocks(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "deepseek-v3");
    const ccs_hw *h = catalog_hw(test_cat(), "h800");
    assert_non_null(m);
    ccs_model moe = *m, dense;
    moe.dense_layers = 0;
    model_dense_variant(m, &dense);
    ccs_plan p;
    plan_defaults(&p);
    p.devices = 8;
    p.ep = 8;
    p.seq = 4096;
    p.gbs = 16;
    p.mbs = 1;
    p.flash_attn = 1;
    ccs_result r, rm, rd;
    test_project(m, &p, h, &r, NULL);
    test_project(&moe, &p, h, &rm, NULL);
    ccs_plan pd = p;
    pd.ep = 1; /* the dense model has no experts to spread; its blocks are alike */
    test_project(&dense, &pd, h, &rd, NULL);
    assert_int_not_equal(rd.status, CCS_ST_INVALID);
    assert_int_not_equal(r.status, CCS_ST_INVALID);
    double x = r.t_compute - r.t_optimizer, xm = rm.t_compute - rm.t_optimizer;
    double xd = rd.t_compute - rd.t_optimizer;
    assert_rel(x, (58 * xm + 3 * xd) / 61, 1e-12);
    assert_rel(r.t_ep_comm, 58 * rm.t_ep_comm / 61, 1e-12);
    assert_true(rd.t_ep_comm == 0);
    assert_true(fabs(xd - xm) > 0.01 * xm); /* the two blocks do differ */
}

static ccs_plan gpt3_plan(void)
{
    ccs_plan p;
    plan_defaults(&p);
    p.devices = 1024;
    p.tp = 8;
    p.pp = 8;
    p.gbs = 1536;
    p.mbs = 1;
    p.seq = 2048;
    p.recompute = CCS_RECOMPUTE_SELECTIVE;
    p.sp = 1;
    return p;
}

static void project_gen(const char *hw, int gen, ccs_plan *p, ccs_result *r)
{
    const ccs_model *m = catalog_model(test_cat(), "gpt3-175b");
    const ccs_hw *base = catalog_hw(test_cat(), hw);
    const ccs_evolution *ev = catalog_evolution(test_cat(), "memory-wall");
    assert_non_null(m);
    assert_non_null(base);
    ccs_hw h;
    hw_evolve(base, ev, gen, &h);
    ccs_cost c;
    plan_derive(p);
    cost_init(&c, &h, NULL, ev, gen, p);
    timeline_project(m, p, &c, r, NULL);
}

/* The pieces add up: t_iter = compute + exposed comm + bubble; exposed <= total. */
static void test_invariants(void **state)
{
    (void)state;
    ccs_plan p = gpt3_plan();
    ccs_result r;
    project_gen("a100-80g", 0, &p, &r);
    assert_int_equal(r.status, CCS_ST_OK);
    assert_int_equal(p.dp, 16);
    assert_int_equal(r.micro_batches, 96);
    assert_rel(r.t_iter, r.t_compute + r.t_comm_exposed + r.t_bubble, 1e-12);
    assert_rel(r.t_comm_exposed, r.t_tp_comm_exposed + r.t_dp_comm_exposed + r.t_pp_comm, 1e-12);
    assert_rel(r.t_comm, r.t_tp_comm + r.t_dp_comm + r.t_pp_comm, 1e-12);
    assert_true(r.t_dp_comm_exposed <= r.t_dp_comm);
    assert_true(r.t_dp_comm > 0);
    assert_true(r.hidden_fraction >= 0 && r.hidden_fraction <= 1);
    assert_rel(r.comm_fraction, r.t_comm_exposed / r.t_iter, 1e-12);
    /* 1F1B bubble: (p-1)/m of the ideal time, i.e. 7 micro-batch times of 96 */
    assert_rel(r.t_bubble,
               7.0 / 96 *
                   (r.t_iter - r.t_bubble - r.t_pp_comm - r.t_dp_comm_exposed - r.t_optimizer),
               1e-9);
    assert_rel(r.tokens_per_s, 1536.0 * 2048 / r.t_iter, 1e-12);
    assert_true(r.mfu > 0.2 && r.mfu < 0.8);
    assert_true(r.t_iter_lo <= r.t_iter && r.t_iter <= r.t_iter_hi);
}

/* Newer and future hardware: smaller times, larger communication share
 * (compute grows 3x per generation, networks 1.4x under memory-wall). */
static void test_hardware_trend(void **state)
{
    (void)state;
    ccs_plan p = gpt3_plan();
    ccs_result a, h, g2;
    project_gen("a100-80g", 0, &p, &a);
    p = gpt3_plan();
    project_gen("h100-sxm", 0, &p, &h);
    p = gpt3_plan();
    project_gen("a100-80g", 2, &p, &g2);
    assert_true(h.t_iter < a.t_iter);
    assert_true(h.comm_fraction > a.comm_fraction);
    assert_true(g2.t_iter < a.t_iter);
    assert_true(g2.comm_fraction > a.comm_fraction);
}

/* Overlap switches: DP overlap hides gradient reduction, TP overlap hides part
 * of the tensor-parallel collectives; neither can make things slower. */
static void test_overlap(void **state)
{
    (void)state;
    ccs_plan p = gpt3_plan();
    ccs_result on, off, tpo, bucketed;
    assert_int_equal(p.dp_overlap, CCS_DPOV_NONE); /* Megatron-LM's default */
    project_gen("a100-80g", 0, &p, &off);
    p = gpt3_plan();
    p.dp_overlap = CCS_DPOV_LAST_MICRO;
    project_gen("a100-80g", 0, &p, &on);
    p = gpt3_plan();
    p.dp_overlap = CCS_DPOV_BUCKETED;
    project_gen("a100-80g", 0, &p, &bucketed);
    /* reducing after every micro-batch moves m times the gradient bytes */
    assert_rel(bucketed.dp_bytes, 96.0 * off.dp_bytes, 1e-9);
    assert_true(bucketed.t_dp_comm > on.t_dp_comm);
    assert_true(bucketed.t_iter >= bucketed.t_dp_comm);
    assert_rel(off.t_dp_comm_exposed, off.t_dp_comm, 1e-12);
    assert_true(on.t_dp_comm_exposed < off.t_dp_comm_exposed);
    assert_true(on.t_iter < off.t_iter);
    p = gpt3_plan();
    p.dp_overlap = CCS_DPOV_LAST_MICRO;
    p.tp_overlap = 1;
    project_gen("a100-80g", 0, &p, &tpo);
    assert_true(tpo.t_tp_comm_exposed < on.t_tp_comm_exposed);
    assert_rel(tpo.t_tp_comm, on.t_tp_comm, 1e-12);
}

/* Mitigation what-ifs act through their mechanism: compression scales the
 * bytes of every collective, in-network reduction halves all-reduce traffic,
 * a bandwidth factor divides the bandwidth-bound part of each transfer. */
static void test_mitigations(void **state)
{
    (void)state;
    ccs_plan p = gpt3_plan();
    p.sp = 0; /* all-reduces, so in-network reduction applies to TP */
    ccs_result base, comp, innet, bw;
    project_gen("a100-80g", 0, &p, &base);
    p = gpt3_plan();
    p.sp = 0;
    p.comm_compress = 0.5;
    project_gen("a100-80g", 0, &p, &comp);
    assert_rel(comp.tp_bytes, 0.5 * base.tp_bytes, 1e-12);
    assert_rel(comp.dp_bytes, 0.5 * base.dp_bytes, 1e-12);
    /* half the bytes take the measured all-reduce curve's time at half the
     * size ([AR-A100]: less than the full size's, more than half of it) */
    assert_true(comp.t_tp_comm < base.t_tp_comm && comp.t_tp_comm > 0.5 * base.t_tp_comm);
    p = gpt3_plan();
    p.sp = 0;
    p.innet_reduce = 1;
    project_gen("a100-80g", 0, &p, &innet);
    /* ring all-reduce sends 2(n-1)/n of the buffer, in-network (n-1)/n */
    assert_rel(innet.tp_bytes, 0.5 * base.tp_bytes, 0.02);
    assert_true(innet.t_tp_comm < base.t_tp_comm);
    p = gpt3_plan();
    p.sp = 0;
    p.net_bw_factor = 2;
    project_gen("a100-80g", 0, &p, &bw);
    assert_rel(bw.tp_bytes, base.tp_bytes, 1e-12);
    assert_true(bw.t_tp_comm < 0.55 * base.t_tp_comm && bw.t_tp_comm > 0.45 * base.t_tp_comm);
    assert_rel(bw.t_compute, base.t_compute, 1e-12);
}

/* A plan whose memory exceeds the device is projected but flagged oom. */
static void test_oom(void **state)
{
    (void)state;
    ccs_plan p = gpt3_plan();
    p.tp = 1;
    p.pp = 1;
    p.sp = 0;
    p.devices = 64;
    ccs_result r;
    project_gen("a100-80g", 0, &p, &r);
    assert_int_equal(r.status, CCS_ST_OOM);
    assert_int_equal(r.reason, CCS_R_OOM);
    assert_false(r.fits);
    /* 175B parameters x 18 bytes of model state alone exceed 80 GiB */
    assert_true(r.mem_total > 174e9 * 18);
    assert_true(r.t_iter > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_korthikanti_iteration_times),
        cmocka_unit_test(test_korthikanti_layer_times),
        cmocka_unit_test(test_moe_megatron),
        cmocka_unit_test(test_published_throughput),
        cmocka_unit_test(test_llm_foundry),
        cmocka_unit_test(test_torchtitan),
        cmocka_unit_test(test_deepseek_v3_gpu_hours),
        cmocka_unit_test(test_dense_first_blocks),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_hardware_trend),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_mitigations),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests_name("timeline", tests, test_catalog_setup,
                                       test_catalog_teardown);
}
