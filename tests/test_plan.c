/* test_plan.c - every invalid-plan reason, and dp derivation. */
#include "testutil.h"

static ccs_model model(void)
{
    /* 32 layers, 4096 wide, 32 heads, 8 KV heads, FFN 11000 (not divisible by 16) */
    ccs_model m = {.name = "m", .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8,
                   .ffn = 11000, .vocab = 32000, .gated = 1};
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
            print_error("%s: got %s, expected %s\n", #expr, plan_reason_name(got),                \
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
    CASE((mm.kv_heads = 6, mm.heads = 48, mm.hidden = 6144, p.tp = 4, p.devices = 16),
         CCS_R_TP_KV);
    CASE((p.tp = 16, p.devices = 64), CCS_R_TP_FFN); /* 11000 % 16 != 0 */
    CASE((p.pp = 3, p.devices = 12), CCS_R_PP_LAYERS);
    CASE((p.pp = 1, p.vpp = 2, p.devices = 4), CCS_R_VPP);
    CASE(p.vpp = 3, CCS_R_VPP); /* 16 layers per stage not divisible by 3 */
    CASE((p.vpp = 2, p.gbs = 12), CCS_R_VPP_MICRO); /* 3 micro-batches, pp 2 */
    CASE(p.gbs = 18, CCS_R_BATCH);
    CASE((p.sp = 1, p.seq = 2047), CCS_R_SEQ_SP);
    CASE(p.dtype = CCS_FP8, CCS_R_DTYPE);
    CASE(p.zero = 4, CCS_R_ZERO);
    CASE(p.recompute = 3, CCS_R_RECOMPUTE);
#undef CASE
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
        cmocka_unit_test(test_valid),           cmocka_unit_test(test_derive),
        cmocka_unit_test(test_invalid_reasons), cmocka_unit_test(test_reason_text),
        cmocka_unit_test(test_projection_reports_invalid),
    };
    return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
