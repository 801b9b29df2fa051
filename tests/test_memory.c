/* test_memory.c - per-device memory against Korthikanti et al. 2022
 * (arXiv 2205.05198): their activation equations evaluated by hand here, and
 * their measured per-GPU memory (tests/data/korthikanti2022_memory.csv). */
#include "testutil.h"

#include "ccsweep/cost/memory.h"
#include "ccsweep/cost/regions.h"

/* A GPT-3-style model as in Korthikanti et al. (vocab 51200, learned positions). */
static ccs_model gpt(int layers, int hidden, int heads)
{
    ccs_model m = {.layers = layers,
                   .hidden = hidden,
                   .heads = heads,
                   .vocab = 51200,
                   .max_pos = 2048,
                   .bias = 1,
                   .tied = 1};
    strcpy(m.name, "gpt");
    model_fill_defaults(&m);
    return m;
}

static ccs_plan plan(int tp, int pp, int gbs, int mbs, int vpp, int sp, int rc)
{
    ccs_plan p;
    plan_defaults(&p);
    p.tp = tp;
    p.pp = pp;
    p.dp = 1;
    p.gbs = gbs;
    p.mbs = mbs;
    p.vpp = vpp;
    p.seq = 2048;
    p.sp = (int8_t)sp;
    p.recompute = (int8_t)rc;
    plan_derive(&p);
    return p;
}

/* Korthikanti eqs. 2-6, per layer, bytes, 16-bit activations:
 *   no parallelism:     sbh (34 + 5as/h)
 *   tensor parallel:    sbh (10 + 24/t + 5as/(ht))
 *   tp + sp:            sbh/t (34 + 5as/h)
 *   tp + sp, selective: sbh/t * 34
 *   full recompute:     2sbh (input of each layer), /t with sp */
static void test_activation_equations(void **state)
{
    (void)state;
    ccs_model m = gpt(96, 12288, 96);
    double s = 2048, b = 1, h = 12288, a = 96, t = 8;
    double sbh = s * b * h;
    ccs_plan p = plan(1, 1, 1, 1, 1, 0, CCS_RECOMPUTE_NONE);
    assert_rel(memory_act_per_layer(&m, &p), sbh * (34 + 5 * a * s / h), 1e-12);
    p = plan(8, 1, 1, 1, 1, 0, CCS_RECOMPUTE_NONE);
    assert_rel(memory_act_per_layer(&m, &p), sbh * (10 + 24 / t + 5 * a * s / (h * t)), 1e-12);
    p = plan(8, 1, 1, 1, 1, 1, CCS_RECOMPUTE_NONE);
    assert_rel(memory_act_per_layer(&m, &p), sbh / t * (34 + 5 * a * s / h), 1e-12);
    p = plan(8, 1, 1, 1, 1, 1, CCS_RECOMPUTE_SELECTIVE);
    assert_rel(memory_act_per_layer(&m, &p), sbh / t * 34, 1e-12);
    p = plan(8, 1, 1, 1, 1, 0, CCS_RECOMPUTE_SELECTIVE);
    assert_rel(memory_act_per_layer(&m, &p), sbh * (10 + 24 / t), 1e-12);
    p = plan(8, 1, 1, 1, 1, 0, CCS_RECOMPUTE_FULL);
    assert_rel(memory_act_per_layer(&m, &p), 2 * sbh, 1e-12);
    p = plan(8, 1, 1, 1, 1, 1, CCS_RECOMPUTE_FULL);
    assert_rel(memory_act_per_layer(&m, &p), 2 * sbh / t, 1e-12);
}

/* A stack that trains GPT-style blocks without dropout (llm-foundry's MPT
 * recipes) keeps none of its masks. Korthikanti's per-layer sum, no
 * parallelism, no recomputation, 16-bit, the attention core unfused:
 * sbh (34 + 5as/h) of which the two residual dropout masks are 2 sbh and the
 * attention dropout's mask and output 3as^2b; without them sbh (32 + 2as/h).
 * The first stage also drops the embedding's mask, sbh per micro-batch in
 * flight (one here). */
/* head_dim (Mistral NeMo: hidden 5120, 32 heads of 128, 8 KV heads, SwiGLU
 * 14336, no biases so no dropout masks): Q and the out-projection input are
 * s b q wide with q = 32 x 128 = 4096, K and V s b 1024 each, not s b h and
 * s b h/4. One layer, tp 1, no recompute, unfused attention, s = 4096,
 * b = 1, 2 bytes an element, by hand:
 *   norm and block inputs  4 x 2 s h          =   167,772,160
 *   Q, K, V, context       2 s (2 x 4096 + 2 x 1024) =  83,886,080
 *   SwiGLU inner tensors   3 x 2 s f          =   352,321,536
 *   softmax output         2 a s^2            = 1,073,741,824
 *   total                                       1,677,721,600 */
static void test_head_dim_activations(void **state)
{
    (void)state;
    ccs_model m = test_mistral_nemo();
    ccs_plan p = plan(1, 1, 1, 1, 1, 0, CCS_RECOMPUTE_NONE);
    p.seq = 4096;
    p.flash_attn = 0;
    plan_derive(&p);
    assert_rel(memory_act_per_layer(&m, &p), 1677721600.0, 1e-12);
}

static void test_no_dropout_stack(void **state)
{
    (void)state;
    ccs_model m = gpt(96, 12288, 96);
    double s = 2048, b = 1, h = 12288, a = 96;
    double sbh = s * b * h;
    ccs_plan p = plan(1, 1, 1, 1, 1, 0, CCS_RECOMPUTE_NONE);
    ccs_stack st;
    stack_default(&st);
    st.no_dropout = 1;
    ccs_oplist with, without;
    regions_build(&m, &p, 8, &with);
    regions_build_stack(&m, &p, 8, &st, &without);
    assert_int_equal(with.dropout, 1);
    assert_int_equal(without.dropout, 0);
    ccs_memory mw, mo;
    memory_footprint(&m, &p, &with, &mw);
    memory_footprint(&m, &p, &without, &mo);
    assert_rel(mw.act_layer, sbh * (34 + 5 * a * s / h), 1e-12);
    assert_rel(mo.act_layer, sbh * (32 + 2 * a * s / h), 1e-12);
    assert_rel(mw.activations - mo.activations, 96 * (2 * sbh + 3 * a * s * s * b) + sbh, 1e-9);
    /* a Llama-style block has no dropout under either stack */
    m.bias = 0;
    regions_build(&m, &p, 8, &with);
    assert_int_equal(with.dropout, 0);
}

/* The head under a stack's loss, by hand for a 24-layer GPT (h 2048, vocab
 * 51200) at 65536 tokens with full recompute: the fp32 logits Korthikanti
 * counts (4 bytes a logit) and a fused loss's 16-bit logits with their
 * 16-bit gradient (2 + 2) hold the same; in fp32 arithmetic the fused loss
 * keeps 4 + 4. Two training metrics after the backward pass, the blocks'
 * activations freed, hold the 16-bit logits and one metric's two fp32
 * tensors: (2 + 8) x 51200 / 2048 = 250 bytes a token-hidden element
 * (sbh), above the recomputed blocks' checkpoints plus the head here. */
static void test_loss_memory(void **state)
{
    (void)state;
    ccs_model m = gpt(24, 2048, 16);
    m.max_pos = 65536;
    ccs_plan p = plan(1, 1, 1, 1, 1, 0, CCS_RECOMPUTE_FULL);
    p.seq = 65536;
    double sbh = 65536.0 * 2048;
    ccs_stack st;
    stack_default(&st);
    ccs_oplist ops;
    ccs_memory base, fused, metrics;
    regions_build_stack(&m, &p, 8, &st, &ops);
    memory_footprint(&m, &p, &ops, &base);
    st.fused_loss = 1;
    regions_build_stack(&m, &p, 8, &st, &ops);
    memory_footprint(&m, &p, &ops, &fused);
    assert_rel(fused.activations, base.activations, 1e-12);
    st.logit_metrics = 2;
    regions_build_stack(&m, &p, 8, &st, &ops);
    memory_footprint(&m, &p, &ops, &metrics);
    assert_true(250 * sbh > base.activations);
    assert_rel(metrics.activations, 250 * sbh, 1e-12);
    assert_rel(metrics.total - base.total, 250 * sbh - base.activations, 1e-9);
    /* fp32 arithmetic: a fused loss's logits and gradient are 4 + 4 bytes,
     * Megatron's fp32 logits 4: the head grows by 4 x 51200 / 2048 = 100 sbh */
    p.dtype = CCS_FP32;
    st.logit_metrics = 0;
    regions_build_stack(&m, &p, 8, &st, &ops);
    memory_footprint(&m, &p, &ops, &fused);
    st.fused_loss = 0;
    regions_build_stack(&m, &p, 8, &st, &ops);
    memory_footprint(&m, &p, &ops, &base);
    assert_rel(fused.activations - base.activations, 100 * sbh, 1e-9);
}

/* Pipeline: the first stage holds p micro-batches of L/p layers (L layers'
 * worth); interleaving multiplies by 1 + (p-1)/(p*vpp) (Korthikanti eq. 7/8). */
static void test_in_flight(void **state)
{
    (void)state;
    ccs_model m = gpt(96, 12288, 96);
    ccs_plan p = plan(8, 8, 64, 1, 3, 1, CCS_RECOMPUTE_SELECTIVE);
    ccs_oplist ops;
    regions_build(&m, &p, 8, &ops);
    ccs_memory mem;
    memory_footprint(&m, &p, &ops, &mem);
    double layer = 2048.0 * 12288 / 8 * 34;
    double expect = layer * 96 * (1 + 7.0 / 24) + 2048.0 * 12288 / 8 * 8; /* + embedding masks */
    assert_rel(mem.activations, expect, 1e-9);
    /* fewer micro-batches than stages: only m are in flight */
    p = plan(8, 8, 4, 1, 1, 1, CCS_RECOMPUTE_SELECTIVE);
    memory_footprint(&m, &p, &ops, &mem);
    assert_rel(mem.activations, layer * 12 * 4 + 2048.0 * 12288 / 8 * 4, 1e-9);
}

/* Model states: 2 (bf16 weights) + 4 (fp32 grads) + 12 (Adam) bytes/param;
 * ZeRO-1 shards the 12, ZeRO-2 also the 4, ZeRO-3 also the 2 over dp. */
static void test_zero_sharding(void **state)
{
    (void)state;
    ccs_model m = gpt(24, 2048, 16);
    ccs_memory mem;
    for (int z = 0; z <= 3; z++) {
        ccs_plan p = plan(1, 1, 8, 1, 1, 0, CCS_RECOMPUTE_NONE);
        p.dp = 8;
        p.devices = 8;
        p.zero = (int8_t)z;
        ccs_oplist ops;
        regions_build(&m, &p, 8, &ops);
        memory_footprint(&m, &p, &ops, &mem);
        double P = ops.params_stage_first;
        assert_rel(mem.weights, P * 2 / (z >= 3 ? 8 : 1), 1e-12);
        assert_rel(mem.grads, P * 4 / (z >= 2 ? 8 : 1), 1e-12);
        assert_rel(mem.optimizer, P * 12 / (z >= 1 ? 8 : 1), 1e-12);
    }
    /* Eight micro-batches (gbs 64 over 8 replicas): a ZeRO-2/3 shard of the
     * gradients is kept only when every micro-batch's gradients are
     * reduce-scattered under its backward (bucketed, as DeepSpeed ZeRO-2 and
     * FSDP outside no_sync run); reduced once, after the last (none,
     * last-microbatch), they accumulate whole: 4 B/param, ZeRO-1's. */
    for (int z = 2; z <= 3; z++)
        for (int ov = CCS_DPOV_NONE; ov <= CCS_DPOV_BUCKETED; ov++) {
            ccs_plan p = plan(1, 1, 64, 1, 1, 0, CCS_RECOMPUTE_NONE);
            p.dp = 8;
            p.devices = 8;
            p.zero = (int8_t)z;
            p.dp_overlap = (int8_t)ov;
            assert_int_equal(plan_micro_batches(&p), 8);
            ccs_oplist ops;
            regions_build(&m, &p, 8, &ops);
            memory_footprint(&m, &p, &ops, &mem);
            double P = ops.params_stage_first;
            assert_rel(mem.grads, P * 4 / (ov == CCS_DPOV_BUCKETED ? 8 : 1), 1e-12);
            assert_rel(mem.optimizer, P * 12 / 8, 1e-12);
        }
}

/* Activations one Llama 3 8B layer keeps at seq 8192 (mbs 1, tp 1, flash
 * attention, bf16) for recompute mode rc under a stack with the default's
 * figures but eager and sac_op. */
static double llama8b_act_layer(int rc, int eager, int sac_op)
{
    const ccs_model *m = catalog_model(test_cat(), "llama3-8b");
    assert_non_null(m);
    ccs_plan p = plan(1, 1, 1, 1, 1, 0, rc);
    p.seq = 8192;
    p.flash_attn = 1;
    ccs_stack st;
    stack_default(&st);
    st.eager = (int8_t)eager;
    st.sac_op = (int8_t)sac_op;
    ccs_oplist ops;
    ccs_memory mem;
    regions_build_stack(m, &p, 8, &st, &ops);
    memory_footprint(m, &p, &ops, &mem);
    return mem.act_layer;
}

/* What autograd keeps when a stack runs a Llama 3 8B block eagerly (h 4096,
 * 8 of 32 heads for keys and values, SwiGLU f 14336), seq 8192, mbs 1, tp 1,
 * bf16, no recompute, flash attention: each of the two RMSNorms keeps its
 * input's fp32 copy and its normalized bf16 output where a fused norm keeps
 * the bf16 input (+4 B an element: 2 x 4 h), SDPA the keys and values
 * repeated to 32 heads (2 x 2 h (1 - 8/32)), SwiGLU the silu output (2 f):
 * s (8 x 4096 + 4 x 4096 x 0.75 + 2 x 14336) = 8192 x 73,728 bytes more. */
static void test_eager_memory(void **state)
{
    (void)state;
    assert_rel(llama8b_act_layer(CCS_RECOMPUTE_NONE, 1, 0) -
                   llama8b_act_layer(CCS_RECOMPUTE_NONE, 0, 0),
               8192.0 * 73728, 1e-12);
}

/* The per-op selective policy's activations (selective: op; regions.c), by
 * hand for the same Llama 3 8B block: the block's input (2 h), the saved
 * matmuls' outputs, queries (2 h), values (2 h / 4) and FC2's (2 h), the gate
 * projection's (2 x 14336), and the attention's output (2 h) and fp32
 * log-sum-exp (4 x 32): s (8 h + h / 2 + 28672 + 128) = 8192 x 63,616 bytes,
 * eager or not (what the policy saves is the same). */
static void test_sac_op_memory(void **state)
{
    (void)state;
    for (int eager = 0; eager <= 1; eager++)
        assert_rel(llama8b_act_layer(CCS_RECOMPUTE_SELECTIVE, eager, 1), 8192.0 * 63616, 1e-12);
}

/* DeepSeek-V3 on 2048 H800 as it was trained (arXiv 2412.19437, Sec. 3.2: PP
 * 16, EP 64, ZeRO-1 over the 128 data-parallel ranks, no TP; fp8, sequence
 * 4096, 15360 sequences; micro-batch 1 and stages of 3 + 14 x 4 + 2 blocks
 * assumed). Parameters per device, by hand (block counts as test_model.c):
 *   expert block: attention 187,107,328 + norms 14,336 + router 1,835,008 +
 *     shared expert 44,040,192 = 232,996,864 replicated, and 256/64 = 4 routed
 *     experts of 44,040,192 = 176,160,768 -> 409,157,632
 *   first stage: 3 dense blocks of 583,483,392 + embedding 129280 x 7168 =
 *     926,679,040 -> 2,677,129,216
 *   a middle stage: 4 expert blocks -> 1,636,630,528 (704,643,072 experts')
 *   last stage: 2 expert blocks + head 926,679,040 + final norm 7,168
 *     -> 1,745,001,472
 * Model states (16-bit weights 2 B, fp32 gradients 4 B, Adam 12 B sharded
 * over the gradient group: 128 ranks for dense weights, 128 / 64 = 2 for the
 * experts): a middle stage 1,636,630,528 x 6 + 931,987,456 x 12 / 128 +
 * 704,643,072 x 12 / 2 = 14,135,015,424 B (13.16 GiB); first 15.19 GiB
 * (all replicated weights: x 6.09375), last 11.84 GiB.
 * Activations of an expert block, one micro-batch (s = 4096, b = 1, 2 B): the
 * two norm inputs and outputs 4 x 2 s h = 234,881,024; the up-projected
 * queries, keys, values and the out-projection input 2 s 128 (2 x 192 + 2 x
 * 128) = 671,088,640; the inner tensors of 8 routed copies and the shared
 * expert 2 s 2048 x 3 x 9 = 452,984,832; the 8 permuted copies of the input 2
 * s h 8 = 469,762,048; the attention's fp32 log-sum-exp 4 x 128 s = 2,097,152;
 * the latents' norm inputs and outputs 2 x 2 s (1536 + 512) = 33,554,432:
 * 1,864,368,128 B. The second stage keeps 15 micro-batches of its 4 blocks
 * in flight (1F1B), the first 16 of 3 dense blocks (1,394,606,080 B each):
 * the second stage is the fullest, 13.16 + 104.18 = 117.3 GiB, more than an
 * H800's 80: DeepSeek-V3 fits by recomputing the norms and up-projections
 * and caching activations in fp8 (Sec. 3.2.3 and Sec. 3.3, "Low-Precision
 * Storage and Communication"), not modelled. */
static void test_deepseek_v3_memory(void **state)
{
    (void)state;
    ccs_plan p;
    ccs_oplist ops;
    const ccs_model *m = test_deepseek_v3(&p, &ops);
    assert_int_equal(ops.dense_first, 3);
    assert_int_equal(ops.dense_mid, 0);
    assert_rel(ops.params_stage_first, 2677129216.0, 1e-15);
    assert_rel(ops.params_stage_mid, 1636630528.0, 1e-15);
    assert_rel(ops.params_stage_last, 1745001472.0, 1e-15);
    ccs_memory mem;
    memory_footprint(m, &p, &ops, &mem);
    assert_rel(mem.weights + mem.grads + mem.optimizer, 14135015424.0, 1e-12);
    assert_rel(mem.act_layer, 1864368128.0, 1e-12);
    assert_rel(mem.activations, 60 * 1864368128.0, 1e-12);
    /* the default split (2 + 14 x 4 + 3) puts the third dense block on the
     * second stage: a middle stage of 1 dense and 3 expert blocks */
    p.pp_first = p.pp_last = 0;
    regions_build(m, &p, 8, &ops);
    assert_int_equal(ops.dense_first, 2);
    assert_int_equal(ops.dense_mid, 1);
    assert_int_equal(ops.dense_mid_least, 0);
    assert_rel(ops.params_stage_first, 2 * 583483392.0 + 926679040.0, 1e-15);
    /* the fuller middle stage by weights: the one with a dense block */
    assert_rel(ops.params_stage_mid, 583483392.0 + 3 * 409157632.0, 1e-15);
}

/* Measured per-GPU memory (Korthikanti et al. Figure 1, first pipeline stage):
 * model states and activations each within 10%. */
static void test_measured_memory(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int layers, hidden, heads, pp, gbs, vpp;
    } runs[] = {{"22B", 48, 6144, 64, 1, 4, 1},
                {"175B", 96, 12288, 96, 8, 64, 3},
                {"530B", 105, 20480, 128, 35, 280, 3},
                {"1T", 128, 25600, 160, 64, 512, 1}};
    FILE *f = fopen("tests/data/korthikanti2022_memory.csv", "r");
    assert_non_null(f);
    char line[512];
    int rows = 0;
    printf("  %-5s %-11s %9s %9s %7s\n", "model", "quantity", "proj GiB", "meas GiB", "error");
    while (fgets(line, sizeof line, f)) {
        char name[32];
        double wo, an, asel;
        if (line[0] == '#' || sscanf(line, "%31[^,],%lf,%lf,%lf", name, &wo, &an, &asel) != 4)
            continue;
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            if (strcmp(runs[i].name, name))
                continue;
            ccs_model m = gpt(runs[i].layers, runs[i].hidden, runs[i].heads);
            int mbs = runs[i].pp == 1 ? 4 : 1;
            ccs_plan none =
                plan(8, runs[i].pp, runs[i].gbs, mbs, runs[i].vpp, 0, CCS_RECOMPUTE_NONE);
            ccs_plan sel =
                plan(8, runs[i].pp, runs[i].gbs, mbs, runs[i].vpp, 1, CCS_RECOMPUTE_SELECTIVE);
            ccs_oplist ops;
            ccs_memory mn, ms;
            regions_build(&m, &none, 8, &ops);
            ops.params_stage_last = ops.params_stage_first; /* the first stage's weights */
            memory_footprint(&m, &none, &ops, &mn);
            memory_footprint(&m, &sel, &ops, &ms);
            double g = 1073741824.0;
            const struct {
                const char *q;
                double proj, meas;
            } cmp[] = {{"weights_opt", (mn.weights + mn.grads + mn.optimizer) / g, wo},
                       {"act_none", mn.activations / g, an},
                       {"act_sp_sel", ms.activations / g, asel}};
            for (int k = 0; k < 3; k++) {
                printf("  %-5s %-11s %9.2f %9.2f %+6.1f%%\n", name, cmp[k].q, cmp[k].proj,
                       cmp[k].meas, 100 * (cmp[k].proj - cmp[k].meas) / cmp[k].meas);
                assert_rel(cmp[k].proj, cmp[k].meas, 0.10);
            }
            rows++;
        }
    }
    fclose(f);
    assert_int_equal(rows, 4);
}

/* Memory of an uneven, interleaved pipeline with context parallelism, derived
 * by hand: llama3-405b (h 16384, 126 layers, 128 heads, 8 KV heads of 128,
 * SwiGLU FFN 53248, vocabulary 128256 padded to 129024 for tp 8) on 1024
 * devices, tp 8, pp 8 (stages 15 + 6 x 16 + 15), cp 2, dp 8, vpp 8, seq 8192,
 * mbs 1, gbs 512 (64 micro-batches), sequence parallel, flash attention,
 * ZeRO-1, bf16 (the Megatron-Bridge H100 row in tests/data/nemo_published.csv).
 *   parameters per layer and device: (h (h + 2 * 1024) + h^2 + 3 h 53248 +
 *     2 h) / 8 = 3187703808 / 8 = 398462976
 *   first stage: 15 layers + the embedding shard 129024 * 16384 / 8 =
 *     264241152: 6241185792 parameters; middle: 16 layers, 6375407616
 *   model states: 2 (weights) + 4 (fp32 grads) + 12 / 16 (Adam, sharded over
 *     dp * cp = 16) = 6.75 B per parameter
 *   activations per layer (Korthikanti eqs. with s = 8192 / cp = 4096 tokens,
 *     no dropout): 4 * 2 sbh / t (norm and GEMM inputs, sequence-parallel) +
 *     (2 sbh (1 + 2/16) + 2 sbh + 2 * 3 s * 53248 + 4 * 128 * s (flash LSE)) / t
 *     = 67108864 + 199491584 = 266600448 B
 *   in flight: first stage 8 micro-batches, middle 7, times 1 + 7 / 64
 *   first: 6241185792 * 6.75 + 266600448 * 15 * 8 * 1.109375 =
 *     42128004096 + 35491184640 = 77619188736 B (72.29 GiB)
 *   middle: 43033001408 + 33125105664 = 76158107072 B: the first is the
 *     fullest. Halving cp doubles each layer's activations.
 *   beside the tensors (memory_reserve): 0.92 GiB of CUDA context and 384 MiB
 *     for each of the TP, CP, DP and PP communicators: 74.71 GiB in all. */
static void test_uneven_cp_memory(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "llama3-405b");
    const ccs_hw *h = catalog_hw(test_cat(), "h100-sxm");
    ccs_plan p;
    plan_defaults(&p);
    p.devices = 1024;
    p.tp = 8;
    p.pp = 8;
    p.cp = 2;
    p.vpp = 8;
    p.seq = 8192;
    p.mbs = 1;
    p.gbs = 512;
    p.sp = 1;
    p.flash_attn = 1;
    p.zero = 1;
    ccs_result r;
    test_project(m, &p, h, &r, NULL);
    assert_int_equal(p.dp, 8);
    assert_rel(memory_act_per_layer(m, &p), 266600448.0, 1e-12);
    assert_rel(r.mem_weights + r.mem_grads + r.mem_optimizer, 42128004096.0, 1e-12);
    assert_rel(r.mem_activations, 35491184640.0, 1e-12);
    /* and what the process holds beside: the CUDA context (0.92 GiB) and
     * 384 MiB for each of the TP, CP, DP and PP communicators */
    assert_rel(r.mem_total, 77619188736.0 + 0.92 * 1073741824.0 + 4 * 384 * 1048576.0, 1e-12);
    ccs_plan q = p;
    q.cp = 1;
    q.dp = 0;
    plan_derive(&q);
    assert_rel(memory_act_per_layer(m, &q), 2 * 266600448.0, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_activation_equations),
        cmocka_unit_test(test_no_dropout_stack),
        cmocka_unit_test(test_head_dim_activations),
        cmocka_unit_test(test_loss_memory),
        cmocka_unit_test(test_in_flight),
        cmocka_unit_test(test_zero_sharding),
        cmocka_unit_test(test_eager_memory),
        cmocka_unit_test(test_sac_op_memory),
        cmocka_unit_test(test_measured_memory),
        cmocka_unit_test(test_uneven_cp_memory),
        cmocka_unit_test(test_deepseek_v3_memory),
    };
    return cmocka_run_group_tests_name("memory", tests, test_catalog_setup, test_catalog_teardown);
}
