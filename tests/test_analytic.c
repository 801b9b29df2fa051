/* test_analytic.c - FLOP and byte counts against hand calculations: Megatron's
 * model-FLOPs formula (Narayanan et al. 2021, eq. 3), the per-layer operator
 * list, and tensor-parallel communication volumes. */
#include "testutil.h"

#include "ccsweep/cost/analytic.h"
#include "ccsweep/cost/opcost.h"
#include "ccsweep/cost/regions.h"

static ccs_model gpt(int layers, int hidden, int heads, int vocab)
{
    ccs_model m = {.layers = layers,
                   .hidden = hidden,
                   .heads = heads,
                   .vocab = vocab,
                   .max_pos = 2048,
                   .bias = 1,
                   .tied = 1};
    strcpy(m.name, "gpt");
    model_fill_defaults(&m);
    return m;
}

static ccs_plan plan(int tp, int pp, int dp, int gbs, int mbs, int sp, int rc)
{
    ccs_plan p;
    plan_defaults(&p);
    p.tp = tp;
    p.pp = pp;
    p.dp = dp;
    p.gbs = gbs;
    p.mbs = mbs;
    p.seq = 2048;
    p.sp = (int8_t)sp;
    p.recompute = (int8_t)rc;
    plan_derive(&p);
    return p;
}

/* Narayanan et al. eq. 3 (without recompute): 72 B s l h^2 (1 + s/(6h) + V/(12 l h)). */
static void test_model_flops(void **state)
{
    (void)state;
    ccs_model m = gpt(96, 12288, 96, 51200);
    ccs_plan p = plan(8, 8, 16, 1536, 1, 0, CCS_RECOMPUTE_NONE);
    double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
    double eq3 = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    assert_rel(analytic_model_flops(&m, &p), eq3, 1e-12);
    /* per layer forward, one sequence: 24 s h^2 + 4 s^2 h */
    assert_rel(analytic_layer_fwd_flops(&m, 1, s), 24 * s * h * h + 4 * s * s * h, 1e-12);
}

/* GQA and SwiGLU: QKV 2 s h (h + 2 h g/a), MLP 3 matrices of 2 s h f. */
static void test_layer_flops_gqa_gated(void **state)
{
    (void)state;
    ccs_model m = {.layers = 80,
                   .hidden = 8192,
                   .heads = 64,
                   .kv_heads = 8,
                   .ffn = 28672,
                   .vocab = 32000,
                   .gated = 1};
    double s = 4096, h = 8192, f = 28672;
    double expect = 2 * s * h * (h + 2 * 1024) + 4 * s * s * h + 2 * s * h * h + 3 * 2 * s * h * f;
    assert_rel(analytic_layer_fwd_flops(&m, 1, s), expect, 1e-12);
}

/* head_dim (Mistral NeMo: hidden 5120, 32 heads of 128, 8 KV heads, ffn
 * 14336): the projections and the attention core are as wide as the heads,
 * q = 4096 and kv = 1024, not h = 5120: QKV 2 s h (q + 2 kv), scores and
 * context 4 s^2 q, output 2 s q h, MLP 3 x 2 s h f. The operator list's
 * forward GEMMs sum to the same. */
static void test_layer_flops_head_dim(void **state)
{
    (void)state;
    ccs_model m = test_mistral_nemo();
    double s = 4096, h = 5120, q = 4096, kv = 1024, f = 14336;
    double expect = 2 * s * h * (q + 2 * kv) + 4 * s * s * q + 2 * s * q * h + 3 * 2 * s * h * f;
    assert_rel(analytic_layer_fwd_flops(&m, 1, s), expect, 1e-12);
    ccs_plan p = plan(4, 1, 1, 2, 2, 0, CCS_RECOMPUTE_NONE);
    p.seq = 4096;
    p.flash_attn = 0;
    plan_derive(&p);
    ccs_oplist ops;
    regions_build(&m, &p, 4, &ops);
    double fwd = 0;
    for (int i = 0; i < ops.n; i++) {
        const ccs_op *o = &ops.ops[i];
        if ((o->kind == CCS_OP_GEMM || o->kind == CCS_OP_BMM) &&
            (o->region == CCS_RG_FWD_ATTN || o->region == CCS_RG_FWD_MLP))
            fwd += o->flops * o->count;
    }
    assert_rel(fwd, 2 * expect / 4, 1e-12);
}

/* The operator list carries the same FLOPs: forward GEMMs of one layer, split
 * over t devices; backward twice that; recompute adds a forward (full) or the
 * attention core 4 b s^2 h / t (selective). */
static void test_oplist_flops(void **state)
{
    (void)state;
    ccs_model m = gpt(48, 6144, 64, 51200);
    for (int rc = 0; rc <= 2; rc++) {
        ccs_plan p = plan(8, 1, 1, 4, 4, rc == 1, rc);
        ccs_oplist ops;
        regions_build(&m, &p, 8, &ops);
        double fwd = 0, bwd = 0, rec = 0;
        for (int i = 0; i < ops.n; i++) {
            const ccs_op *o = &ops.ops[i];
            if (o->kind != CCS_OP_GEMM && o->kind != CCS_OP_BMM)
                continue;
            if (o->region == CCS_RG_FWD_ATTN || o->region == CCS_RG_FWD_MLP)
                fwd += o->flops * o->count;
            if (o->region == CCS_RG_BWD_ATTN || o->region == CCS_RG_BWD_MLP)
                bwd += o->flops * o->count;
            if (o->region == CCS_RG_RECOMP_ATTN || o->region == CCS_RG_RECOMP_MLP)
                rec += o->flops * o->count;
        }
        double layer = analytic_layer_fwd_flops(&m, 4, 2048) / 8;
        assert_rel(fwd, layer, 1e-12);
        assert_rel(bwd, 2 * layer, 1e-12);
        double core = 4.0 * 4 * 2048 * 2048 * 6144 / 8;
        assert_rel(rec + 1, (rc == 2 ? layer : rc == 1 ? core : 0) + 1, 1e-12);
        assert_int_equal(ops.micro_batches, 1);
    }
}

/* Megatron TP collectives per layer: 2 all-reduces forward and 2 backward of
 * b s h e bytes; with sequence parallelism 2 all-gathers + 2 reduce-scatters
 * forward, and backward 2 reduce-scatters + 4 all-gathers (2 re-gathers of
 * the sharded block inputs for the weight gradients). */
static void test_tp_collectives(void **state)
{
    (void)state;
    ccs_model m = gpt(48, 6144, 64, 51200);
    for (int sp = 0; sp <= 1; sp++) {
        ccs_plan p = plan(8, 1, 1, 4, 4, sp, CCS_RECOMPUTE_NONE);
        ccs_oplist ops;
        regions_build(&m, &p, 8, &ops);
        int cnt[2][CCS_OP_N] = {{0}};
        double buf = 4.0 * 2048 * 6144 * 2;
        for (int i = 0; i < ops.n; i++) {
            const ccs_op *o = &ops.ops[i];
            int r = o->region;
            int fwd = r == CCS_RG_FWD_ATTN_TP || r == CCS_RG_FWD_MLP_TP;
            int bwd = r == CCS_RG_BWD_ATTN_TP || r == CCS_RG_BWD_MLP_TP;
            if (!fwd && !bwd)
                continue;
            assert_rel(o->bytes, buf, 1e-12);
            assert_int_equal(o->group, 8);
            assert_int_equal(o->per_node, 8);
            cnt[bwd][o->kind]++;
        }
        if (!sp) {
            assert_int_equal(cnt[0][CCS_OP_ALLREDUCE], 2);
            assert_int_equal(cnt[1][CCS_OP_ALLREDUCE], 2);
        } else {
            assert_int_equal(cnt[0][CCS_OP_ALLGATHER], 2);
            assert_int_equal(cnt[0][CCS_OP_REDUCESCATTER], 2);
            assert_int_equal(cnt[1][CCS_OP_ALLGATHER], 4);
            assert_int_equal(cnt[1][CCS_OP_REDUCESCATTER], 2);
            assert_int_equal(cnt[0][CCS_OP_ALLREDUCE] + cnt[1][CCS_OP_ALLREDUCE], 0);
        }
    }
}

/* Ring volumes per rank: all-reduce 2(n-1)/n, all-gather/reduce-scatter (n-1)/n. */
static void test_ring_volumes(void **state)
{
    (void)state;
    double steps;
    assert_rel(cost_coll_volume(CCS_OP_ALLREDUCE, 800, 8, 0, &steps), 1400, 1e-12);
    assert_rel(steps, 14, 1e-12);
    assert_rel(cost_coll_volume(CCS_OP_ALLGATHER, 800, 8, 0, &steps), 700, 1e-12);
    assert_rel(steps, 7, 1e-12);
    assert_rel(cost_coll_volume(CCS_OP_REDUCESCATTER, 800, 4, 0, &steps), 600, 1e-12);
    assert_rel(cost_coll_volume(CCS_OP_P2P, 800, 2, 0, &steps), 800, 1e-12);
    /* in-network reduction: each rank sends the buffer once, (n-1)/n of it */
    assert_rel(cost_coll_volume(CCS_OP_ALLREDUCE, 800, 8, 1, &steps), 700, 1e-12);
}

/* Analytic per-device bytes and the compute/communication ratio. Without sp,
 * one layer's forward sends 2 x 2(t-1)/t x b s h e bytes and computes
 * (24 b s h^2 + 4 b s^2 h)/t FLOPs: ratio (6h + s) / ((t-1) e), growing with h
 * and shrinking with t (Pati et al. 2023, section 3). */
static void test_ratio_and_bytes(void **state)
{
    (void)state;
    ccs_model m = gpt(96, 12288, 96, 51200);
    ccs_plan p = plan(8, 8, 16, 1536, 1, 0, CCS_RECOMPUTE_NONE);
    ccs_oplist ops;
    regions_build(&m, &p, 8, &ops);
    ccs_analytic an;
    analytic_compute(&m, &p, &ops, NULL, &an);
    double h = 12288, s = 2048, t = 8, e = 2;
    assert_rel(an.ccr, (6 * h + s) / ((t - 1) * e), 1e-12);
    /* layer TP traffic: 4 all-reduces per layer per micro-batch, 12 layers, 96 micro-batches */
    double layer_tp = 4 * 2 * (t - 1) / t * s * h * e;
    assert_true(an.tp_bytes > layer_tp * 12 * 96);
    assert_true(an.tp_bytes < layer_tp * 12 * 96 * 1.1); /* plus embedding and head */
    /* DP: fp32 gradients of the largest stage, ring all-reduce over 16 replicas */
    double pmax = fmax(ops.params_stage_first, ops.params_stage_last);
    assert_rel(an.dp_bytes, 2.0 * 15 / 16 * pmax * 4, 1e-12);
    /* PP: b s h e / t per transfer, forward and backward, per micro-batch, and
     * the tied embedding's fp32 gradient all-reduced between the first and the
     * last stage (2 ranks: each sends its whole buffer once) */
    double vpad = ceil(51200 / (128 * t)) * 128 * t;
    assert_rel(an.pp_bytes, 2.0 * 96 * s * h * e / t + vpad / t * h * 4, 1e-12);
    ccs_plan p1 = plan(1, 8, 16, 1536, 1, 0, CCS_RECOMPUTE_NONE);
    regions_build(&m, &p1, 8, &ops);
    analytic_compute(&m, &p1, &ops, NULL, &an);
    assert_true(an.ccr == 0 && an.tp_bytes == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_flops),          cmocka_unit_test(test_layer_flops_gqa_gated),
        cmocka_unit_test(test_layer_flops_head_dim), cmocka_unit_test(test_oplist_flops),
        cmocka_unit_test(test_tp_collectives),       cmocka_unit_test(test_ring_volumes),
        cmocka_unit_test(test_ratio_and_bytes),
    };
    return cmocka_run_group_tests_name("analytic", tests, NULL, NULL);
}
