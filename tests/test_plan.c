/* test_plan.c - every invalid-plan reason, and dp derivation. */
#include "testutil.h"

static ccs_model model(void)
{
    /* 32 layers, 4096 wide, 32 heads, 8 KV heads, FFN 11000 (not divisible by 16) */
    ccs_model m = {.name = "m",
                   .layers = 32,
                   .hidden = 4096,
                   .heads = 32,
                   .kv_heads = 8,
                   .ffn = 11000,
                   .vocab = 32000,
                   .gated = 1};
    return m;
}

static ccs_plan base(void)
{
    ccs_plan p;
    plan_defaults(&p);
    p.tp = 2;
    p.pp = 2;
    p.dp = 2;
    p.devices = 8;
    p.gbs = 16;
    p.mbs = 2;
    p.seq = 2048;
    return p;
}

static ccs_hw hw(void)
{
    ccs_hw h;
    memset(&h, 0, sizeof h);
    h.peak_flops[CCS_BF16] = 1e15;
    return h;
}

static void test_valid(void **state)
{
    (void)state;
    ccs_model m = model();
    ccs_plan p = base();
    ccs_hw h = hw();
    assert_int_equal(plan_check(&m, &h, &p), CCS_R_OK);
    assert_int_equal(plan_micro_batches(&p), 4);
}

static void test_derive(void **state)
{
    (void)state;
    ccs_plan p = base();
    p.dp = 0;
    p.devices = 64;
    assert_int_equal(plan_derive(&p), CCS_R_OK);
    assert_int_equal(p.dp, 16);
    p.dp = 0;
    p.devices = 10; /* not a multiple of tp*pp = 4 */
    assert_int_equal(plan_derive(&p), CCS_R_DEVICES);
    p = base();
    p.devices = 0;
    assert_int_equal(plan_derive(&p), CCS_R_OK);
    assert_int_equal(p.devices, 8);
}

/* One case per reason: the field changed and the reason expected. */
static void test_invalid_reasons(void **state)
{
    (void)state;
    ccs_model m = model();
    ccs_hw h = hw();
#define CASE(expr, r)                                                                              \
    do {                                                                                           \
        ccs_plan p = base();                                                                       \
        ccs_model mm = m;                                                                          \
        (void)mm;                                                                                  \
        expr;                                                                                      \
        int got = plan_check(&mm, &h, &p);                                                         \
        if (got != (r)) {                                                                          \
            print_error("%s: got %s, expected %s\n", #expr, plan_reason_name(got),                 \
                        plan_reason_name(r));                                                      \
            fail();                                                                                \
        }                                                                                          \
    } while (0)
    CASE(p.tp = 0, CCS_R_NONPOSITIVE);
    CASE(p.mbs = -1, CCS_R_NONPOSITIVE);
    CASE(p.comm_compress = 0, CCS_R_NONPOSITIVE);
    CASE(p.devices = 16, CCS_R_DEVICES);
    CASE((p.tp = 3, p.devices = 12), CCS_R_TP_HEADS);
    CASE((mm.kv_heads = 8, mm.heads = 48, p.tp = 16, p.devices = 64, mm.hidden = 6144,
          mm.ffn = 16384),
         CCS_R_OK); /* tp > kv heads: kv heads replicated, 16 % 8 == 0 */
    CASE((mm.kv_heads = 6, mm.heads = 48, mm.hidden = 6144, p.tp = 4, p.devices = 16), CCS_R_TP_KV);
    CASE((p.tp = 16, p.devices = 64), CCS_R_TP_FFN); /* 11000 % 16 != 0 */
    CASE((p.pp = 3, p.devices = 12), CCS_R_OK);      /* uneven stages: 10 + 11 + 11 */
    CASE((p.pp = 3, p.devices = 12, p.pp_first = 31), CCS_R_PP_LAYERS);          /* 1 layer for 2 */
    CASE((p.pp = 3, p.devices = 12, p.pp_first = 12, p.pp_last = 11), CCS_R_OK); /* 12+9+11 */
    CASE((p.pp = 3, p.devices = 12, p.pp_first = 12, p.pp_last = 21), CCS_R_PP_LAYERS);
    CASE((p.pp = 2, p.pp_first = 20, p.pp_last = 12), CCS_R_OK);
    CASE((p.pp = 2, p.pp_first = 20, p.pp_last = 11), CCS_R_PP_LAYERS);
    CASE((p.pp = 1, p.devices = 4, p.pp_first = 31), CCS_R_PP_LAYERS);
    CASE((p.pp = 3, p.devices = 12, p.vpp = 2), CCS_R_VPP); /* 11-layer middle stage */
    CASE((p.pp = 1, p.vpp = 2, p.devices = 4), CCS_R_VPP);
    CASE(p.vpp = 3, CCS_R_VPP);                     /* 16 layers per stage not divisible by 3 */
    CASE((p.vpp = 2, p.gbs = 12), CCS_R_VPP_MICRO); /* 3 micro-batches, pp 2 */
    CASE(p.gbs = 18, CCS_R_BATCH);
    CASE((p.sp = 1, p.seq = 2047), CCS_R_SEQ_SP);
    CASE(p.dtype = CCS_FP8, CCS_R_DTYPE);
    CASE(p.zero = 4, CCS_R_ZERO);
    CASE(p.recompute = 3, CCS_R_RECOMPUTE);
#undef CASE
}

/* Stage split (plan_stage_layers): Llama 3 405B's 126 layers on 16 stages
 * ran as 7 + 14 x 8 + 7 (Llama Team 2024, arXiv 2407.21783, section 3.3.2:
 * one layer removed from the first and the last stage); explicit first/last
 * counts leave the rest to the other stages evenly. */
static void test_stage_layers(void **state)
{
    (void)state;
    ccs_model m = model();
    ccs_plan p = base();
    int32_t f, mid, l;
    m.layers = 126;
    p.pp = 16;
    assert_int_equal(plan_stage_layers(&m, &p, &f, &mid, &l), CCS_R_OK);
    assert_int_equal(f, 7);
    assert_int_equal(mid, 8);
    assert_int_equal(l, 7);
    assert_int_equal(f + 14 * mid + l, 126);
    p.pp_first = 6; /* 120 left for 15 stages */
    assert_int_equal(plan_stage_layers(&m, &p, &f, &mid, &l), CCS_R_OK);
    assert_true(f == 6 && mid == 8 && l == 8);
    p.pp_first = 0;
    p.pp_last = 21; /* 105 left for 15 stages */
    assert_int_equal(plan_stage_layers(&m, &p, &f, &mid, &l), CCS_R_OK);
    assert_true(f == 7 && mid == 7 && l == 21);
    p.pp_last = 0;
    m.layers = 96; /* divisible: equal stages */
    assert_int_equal(plan_stage_layers(&m, &p, &f, &mid, &l), CCS_R_OK);
    assert_true(f == 6 && mid == 6 && l == 6);
    m.layers = 7;
    p.pp = 2;
    assert_int_equal(plan_stage_layers(&m, &p, &f, &mid, &l), CCS_R_OK);
    assert_true(f == 3 && l == 4);
    m.layers = 5;
    p.pp = 4; /* 2 + 2 for the middle leaves 1 for first and last */
    assert_int_equal(plan_stage_layers(&m, &p, &f, &mid, &l), CCS_R_PP_LAYERS);
}

/* The slowest stage sets the pace. Llama 3 405B on 16 stages: one layer
 * costs about twice the output head (vocabulary 128256), so with 7 + 14 x 8 +
 * 7 a middle stage (8 layers) binds, while an even 128-layer split binds on
 * the last stage (8 layers + head). Per micro-batch their compute differs by
 * exactly the head's forward and backward time. The plan's memory is its
 * fullest stage's: a middle stage holds 8 layers for 15 micro-batches. */
static void test_uneven_pipeline(void **state)
{
    (void)state;
    const ccs_hw *h = catalog_hw(test_cat(), "h100-sxm");
    const ccs_model *llama = catalog_model(test_cat(), "llama3-405b");
    assert_non_null(llama);
    assert_int_equal(llama->layers, 126);
    ccs_model m128 = *llama;
    m128.layers = 128;
    ccs_plan p;
    plan_defaults(&p);
    p.tp = 8;
    p.pp = 16;
    p.devices = 8192;
    p.seq = 8192;
    p.gbs = 2048;
    p.zero = 1;
    ccs_plan q = p;
    ccs_result r126, r128;
    ccs_region_time rg[CCS_RG_N];
    test_project(llama, &p, h, &r126, rg);
    test_project(&m128, &q, h, &r128, NULL);
    assert_int_not_equal(r126.status, CCS_ST_INVALID);
    assert_int_not_equal(r128.status, CCS_ST_INVALID);
    double layer = rg[CCS_RG_FWD_ATTN].time + rg[CCS_RG_FWD_MLP].time + rg[CCS_RG_BWD_MLP].time +
                   rg[CCS_RG_BWD_ATTN].time;
    double head = rg[CCS_RG_HEAD_FWD].time + rg[CCS_RG_HEAD_BWD].time;
    assert_true(head < layer); /* the premise */
    double m = r126.micro_batches;
    assert_rel((r128.t_compute - r128.t_optimizer) - (r126.t_compute - r126.t_optimizer), m * head,
               1e-9);
    assert_rel(r126.t_compute - r126.t_optimizer, m * 8 * layer, 1e-9);
    double act = memory_act_per_layer(llama, &p);
    assert_true(r126.mem_activations >= 8 * 15 * act * (1 - 1e-12));
}

/* Context parallelism (ring, Megatron-Core p2p): by hand for one layer of
 * llama3-405b (hidden 16384, 128 heads, 8 KV heads of 128) at tp 8, cp 16,
 * sequence 131072, micro-batch 1: a rank holds 131072 / 16 = 8192 tokens and
 * K/V of one KV head (8 / 8): a block of 8192 x 2 x 128 x 2 bytes = 4 MiB,
 * sent 15 times forward (15 blocks) and K/V plus their gradients backward
 * (30 blocks). The gradient group is dp x cp = 8 x 16 = 128 ranks. The
 * fused attention on the rank's 8192 queries against all 131072 keys is 1/16
 * of the unsplit sequence's attention work. */
static void test_context_parallel(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "llama3-405b");
    const ccs_hw *h = catalog_hw(test_cat(), "h100-sxm");
    ccs_plan p;
    plan_defaults(&p);
    p.tp = 8;
    p.cp = 16;
    p.pp = 16;
    p.devices = 16384;
    p.seq = 131072;
    p.gbs = 128;
    p.sp = 1;
    p.zero = 1;
    p.flash_attn = 1;
    assert_int_equal(plan_derive(&p), CCS_R_OK);
    assert_int_equal(p.dp, 8);
    assert_int_equal(plan_check(m, h, &p), CCS_R_OK);
    ccs_oplist ops;
    regions_build(m, &p, h->devices_per_node, &ops);
    double block = 8192.0 * 2 * 128 * 2, fwd = 0, bwd = 0, attn = 0;
    int dp_group = 0;
    for (int i = 0; i < ops.n; i++) {
        const ccs_op *o = &ops.ops[i];
        double steps;
        double v = cost_coll_volume(o->kind, o->bytes, o->group, 0, &steps);
        if (o->region == CCS_RG_FWD_ATTN_CP)
            fwd += v;
        if (o->region == CCS_RG_BWD_ATTN_CP)
            bwd += v;
        if (o->region == CCS_RG_DP_COMM)
            dp_group = o->group;
        if (o->region == CCS_RG_FWD_ATTN && o->kind == CCS_OP_ATTENTION)
            attn = o->flops;
    }
    assert_rel(fwd, 15 * block, 1e-12);
    assert_rel(bwd, 30 * block, 1e-12);
    assert_int_equal(dp_group, 128);
    /* causal half of 4 b s s d per head, 16 heads per TP rank, a sixteenth of s */
    assert_rel(attn, 0.5 * 4 * 8192.0 * 131072 * 128 * 16, 1e-12);
    /* the ring hides under the attention core here; the iteration holds it all */
    ccs_result r;
    test_project(m, &p, h, &r, NULL);
    assert_int_not_equal(r.status, CCS_ST_INVALID);
    assert_true(r.t_cp_comm > 0);
    assert_true(r.t_cp_comm_exposed >= 0 && r.t_cp_comm_exposed <= r.t_cp_comm);
    assert_true(r.t_iter >= r.t_cp_comm);
    /* the all-gather variant moves the same bytes but does not overlap them */
    ccs_plan g = p;
    g.cp_comm = CCS_CP_ALLGATHER;
    ccs_result ra;
    test_project(m, &g, h, &ra, NULL);
    assert_rel(ra.cp_bytes, r.cp_bytes, 1e-12);
    assert_rel(ra.t_cp_comm_exposed, ra.t_cp_comm, 1e-12);
    assert_true(ra.t_iter >= r.t_iter);
    /* cp must cut the sequence into 2 cp equal chunks */
    p.seq = 131072 + 16;
    assert_int_equal(plan_check(m, h, &p), CCS_R_CP);
}

/* Mixture of experts, by hand for mixtral-8x7b (8 experts, top 2, hidden
 * 4096, expert width 14336) at tp 1, ep 8, pp 4, 64 devices, sequence 4096,
 * micro-batch 1: a rank dispatches its 4096 tokens' 2 copies, 4096 x 2 x 4096
 * x 2 bytes, of which 7/8 leave it, out and back in the forward pass and again
 * in the backward; it holds one expert per layer (8 / 8) plus every dense
 * weight; expert gradients reduce over dp / ep = 16 / 8 = 2 ranks, dense ones
 * over 16. */
static void test_moe_plan(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "mixtral-8x7b");
    const ccs_hw *h = catalog_hw(test_cat(), "h100-sxm");
    assert_non_null(m);
    ccs_plan p;
    plan_defaults(&p);
    p.tp = 1;
    p.ep = 8;
    p.pp = 4;
    p.devices = 64;
    p.seq = 4096;
    p.gbs = 256;
    assert_int_equal(plan_derive(&p), CCS_R_OK);
    assert_int_equal(plan_check(m, h, &p), CCS_R_OK);
    ccs_oplist ops;
    regions_build(m, &p, h->devices_per_node, &ops);
    double sent = 4096.0 * 2 * 4096 * 2, fwd = 0, bwd = 0;
    int groups[2] = {0, 0}, ng = 0;
    for (int i = 0; i < ops.n; i++) {
        const ccs_op *o = &ops.ops[i];
        double steps, v = cost_coll_volume(o->kind, o->bytes, o->group, 0, &steps);
        if (o->region == CCS_RG_FWD_MLP_EP)
            fwd += v;
        if (o->region == CCS_RG_BWD_MLP_EP)
            bwd += v;
        if (o->region == CCS_RG_DP_COMM && ng < 2)
            groups[ng++] = o->group;
    }
    assert_rel(fwd, 2 * sent * 7 / 8, 1e-12);
    assert_rel(bwd, 2 * sent * 7 / 8, 1e-12);
    assert_int_equal(ng, 2);
    assert_int_equal(groups[0], 16);
    assert_int_equal(groups[1], 2);
    double expert = 3.0 * 4096 * 14336, dense_layer = model_layer_params(m) - 8 * expert;
    assert_rel(ops.params_expert, 8 * expert, 1e-9); /* 8 layers per stage, 1 expert each */
    assert_rel(ops.params_stage_mid, 8 * (dense_layer + expert), 1e-9);
    /* ep must divide the experts and the data-parallel ranks, and needs experts */
    p.ep = 3;
    assert_int_equal(plan_check(m, h, &p), CCS_R_EP);
    p.ep = 32; /* 32 does not divide 8 experts */
    assert_int_equal(plan_check(m, h, &p), CCS_R_EP);
    const ccs_model *dense = catalog_model(test_cat(), "llama3-8b");
    p.ep = 2;
    assert_int_equal(plan_check(dense, h, &p), CCS_R_EP);
}

/* Node-limited routing (DeepSeek-V3: a token's experts on at most 4 nodes,
 * sent once per node): with EP 64 over 8 nodes of 8, a rank's tokens leave
 * its node 4 x 7/8 = 3.5 times each, against 8 x 56/64 = 7 copies without
 * the limit; fp8 plans dispatch 1-byte elements (+ an fp32 scale per 128)
 * and combine 16-bit ones. The longest operator list (latent attention,
 * experts, full recompute of everything, sp, cp, ZeRO-3) fits the list with
 * room to spare: ops beyond CCS_MAX_OPS would be dropped. */
static void test_node_limited_routing(void **state)
{
    (void)state;
    ccs_plan p;
    ccs_oplist ops;
    const ccs_model *m = test_deepseek_v3(&p, &ops);
    double tok = 4096, h = 7168, remote[2] = {0, 0}, bytes[2] = {0, 0};
    int n = 0;
    for (int i = 0; i < ops.n; i++) {
        const ccs_op *o = &ops.ops[i];
        if (o->region == CCS_RG_FWD_MLP_EP && n < 2) {
            remote[n] = o->remote;
            bytes[n++] = o->bytes;
        }
    }
    assert_int_equal(n, 2);
    double fp8 = 1 + 4.0 / 128;
    assert_rel(bytes[0], tok * 8 * h * fp8, 1e-12); /* dispatch */
    assert_rel(remote[0], tok * 3.5 * h * fp8, 1e-12);
    assert_rel(bytes[1], tok * 8 * h * 2, 1e-12); /* combine */
    assert_rel(remote[1], tok * 3.5 * h * 2, 1e-12);
    /* without the limit the pairwise exchange's share is used */
    ccs_model free = *m;
    free.route_nodes = 0;
    regions_build(&free, &p, 8, &ops);
    for (int i = 0; i < ops.n; i++)
        if (ops.ops[i].region == CCS_RG_FWD_MLP_EP)
            assert_true(ops.ops[i].remote == 0);
    /* the longest list */
    ccs_model tied = *m;
    tied.tied = 1;
    p.tp = 2;
    p.cp = 2;
    p.ep = 8;
    p.pp = 4;
    p.devices = 0;
    p.dp = 8;
    p.gbs = 64;
    p.sp = 1;
    p.zero = 3;
    p.capacity_factor = 1.25;
    p.recompute = CCS_RECOMPUTE_FULL;
    assert_int_equal(plan_derive(&p), CCS_R_OK);
    assert_int_equal(plan_check(&tied, NULL, &p), CCS_R_OK);
    regions_build(&tied, &p, 8, &ops);
    assert_true(ops.n > 100);
    assert_true(ops.n < CCS_MAX_OPS);
}

static void test_reason_text(void **state)
{
    (void)state;
    for (int r = 0; r < CCS_R_N; r++) {
        assert_string_not_equal(plan_reason_name(r), "?");
        assert_string_not_equal(plan_reason_text(r), "?");
    }
    assert_string_equal(plan_reason_name(CCS_R_N), "?");
    assert_int_equal(recompute_parse("selective"), CCS_RECOMPUTE_SELECTIVE);
    assert_int_equal(recompute_parse("partial"), -1);
}

/* An invalid plan is reported as invalid by the projection, with its reason. */
static void test_projection_reports_invalid(void **state)
{
    (void)state;
    ccs_catalog *cat = test_catalog();
    const ccs_model *m = catalog_model(cat, "gpt3-175b");
    const ccs_hw *h = catalog_hw(cat, "a100-80g");
    ccs_plan p;
    plan_defaults(&p);
    p.tp = 5; /* 96 heads */
    p.pp = 8;
    p.devices = 40;
    p.gbs = 8;
    p.seq = 2048;
    ccs_result r;
    test_project(m, &p, h, &r, NULL);
    assert_int_equal(r.status, CCS_ST_INVALID);
    assert_int_equal(r.reason, CCS_R_TP_HEADS);
    catalog_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_derive),
        cmocka_unit_test(test_invalid_reasons),
        cmocka_unit_test(test_reason_text),
        cmocka_unit_test(test_projection_reports_invalid),
        cmocka_unit_test(test_stage_layers),
        cmocka_unit_test(test_uneven_pipeline),
        cmocka_unit_test(test_context_parallel),
        cmocka_unit_test(test_moe_plan),
        cmocka_unit_test(test_node_limited_routing),
    };
    return cmocka_run_group_tests_name("plan", tests, test_catalog_setup, test_catalog_teardown);
}
