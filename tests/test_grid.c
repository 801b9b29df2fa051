/* test_grid.c - the lazy grid: counts, mixed-radix decoding order, zip,
 * range and geom generators, where-filters before and after projection,
 * derived dp and model defaults, overflow, and the scenario key.
 * Expected values are worked by hand from the spec text in each test; the
 * projection is checked against a direct timeline_project call (the numbers
 * 'ccsweep project' prints). */
#include "testutil.h"
#include "ccsweep/sweep/grid.h"

static ccs_spec *parse(const char *text)
{
    ccs_err err;
    ccs_spec *s = spec_parse(text, strlen(text), "t.yaml", test_cat(), &err);
    if (!s) {
        print_error("spec did not parse: %s\n", err.msg);
        fail();
    }
    return s;
}

static ccs_grid *grid(ccs_spec *s)
{
    ccs_err err;
    ccs_grid *g = grid_new(s, &err);
    if (!g) {
        print_error("grid_new: %s\n", err.msg);
        fail();
    }
    return g;
}

static void test_count_and_order(void **state)
{
    (void)state;
    ccs_spec *s = parse("models: [gpt3-175b, llama3-70b]\n"
                        "hardware: [a100-80g, h100-sxm, mi210]\n"
                        "generations: {range: [0, 2]}\n"
                        "plan:\n  devices: 1024\n  tp: [1, 2, 4, 8]\n  pp: {range: [1, 16, 5]}\n"
                        "  recompute: [selective, full]\n");
    ccs_grid *g = grid(s);
    /* 2 models x 3 hw x 3 gens x 4 tp x 4 pp (1, 6, 11, 16) x 2 recompute */
    assert_int_equal(grid_count(g), 2 * 3 * 3 * 4 * 4 * 2);
    assert_int_equal(grid_dims(g), 6);
    ccs_scenario sc;
    grid_decode(g, 0, &sc);
    assert_int_equal(sc.model, 0);
    assert_int_equal(sc.hw, 0);
    assert_int_equal(sc.gen, 0);
    assert_int_equal(sc.plan.tp, 1);
    assert_int_equal(sc.plan.pp, 1);
    assert_int_equal(sc.plan.recompute, CCS_RECOMPUTE_SELECTIVE);
    /* the last axis varies fastest */
    grid_decode(g, 1, &sc);
    assert_int_equal(sc.plan.recompute, CCS_RECOMPUTE_FULL);
    assert_int_equal(sc.plan.pp, 1);
    grid_decode(g, 2, &sc);
    assert_int_equal(sc.plan.pp, 6);
    /* idx = ((((m*3 + h)*3 + gen)*4 + tp_i)*4 + pp_i)*2 + rc_i for m=1,h=2,gen=1,tp=4,pp=11,full */
    int64_t idx = ((((1 * 3 + 2) * 3 + 1) * 4 + 2) * 4 + 2) * 2 + 1;
    grid_decode(g, idx, &sc);
    assert_int_equal(sc.idx, idx);
    assert_int_equal(sc.model, 1);
    assert_int_equal(sc.hw, 2);
    assert_int_equal(sc.gen, 1);
    assert_int_equal(sc.gen_i, 1);
    assert_int_equal(sc.plan.tp, 4);
    assert_int_equal(sc.plan.pp, 11);
    assert_int_equal(sc.plan.recompute, CCS_RECOMPUTE_FULL);
    /* dp derived from devices; gbs and seq from the model (llama3-70b: gbs 2048? see catalog) */
    assert_int_equal(sc.derive, CCS_R_DEVICES); /* 1024 % (4*11) != 0 */
    grid_decode(g, grid_count(g) - 1, &sc);
    assert_int_equal(sc.model, 1);
    assert_int_equal(sc.plan.tp, 8);
    assert_int_equal(sc.plan.pp, 16);
    assert_int_equal(sc.plan.dp, 1024 / 128);
    assert_int_equal(sc.derive, CCS_R_OK);
    const ccs_model *m = catalog_model(test_cat(), "llama3-70b");
    assert_int_equal(sc.plan.seq, m->seq);
    assert_int_equal(sc.plan.gbs, m->gbs);
    grid_free(g);
    spec_free(s);
}

static void test_zip_range_geom(void **state)
{
    (void)state;
    ccs_spec *s = parse("models: gpt3-175b\nhardware: h100-sxm\n"
                        "generations: {range: [0, 10, 5]}\n"
                        "plan:\n  tp: {geom: [1, 64, 2]}\n  pp: [64, 32, 16, 8, 4, 2, 1]\n"
                        "  dp: 2\n  net_bw_factor: {geom: [0.5, 4, 2]}\n"
                        "  comm_compress: {range: [0.25, 1, 0.25]}\n"
                        "zip: [[tp, pp]]\n");
    ccs_grid *g = grid(s);
    /* gens 0,5,10 x zip(tp, pp) 7 x net_bw 0.5,1,2,4 x compress 0.25..1 (4) */
    assert_int_equal(grid_count(g), 3 * 7 * 4 * 4);
    const double *nb = spec_axis_values(s, SPEC_AX_NET_BW_FACTOR);
    assert_true(nb[0] == 0.5 && nb[3] == 4.0);
    for (int64_t i = 0; i < grid_count(g); i++) {
        ccs_scenario sc;
        grid_decode(g, i, &sc);
        assert_int_equal(sc.plan.tp * sc.plan.pp, 64); /* zipped pairs */
        assert_int_equal(sc.plan.dp, 2);
        assert_int_equal(sc.plan.devices, 128); /* devices derived from dp */
    }
    ccs_scenario sc;
    /* comm_compress comes before net_bw_factor in axis order */
    grid_decode(g, ((2 * 7 + 3) * 4 + 2) * 4 + 1, &sc);
    assert_int_equal(sc.gen, 10);
    assert_int_equal(sc.plan.tp, 8);
    assert_true(sc.plan.net_bw_factor == 1.0);
    assert_true(sc.plan.comm_compress == 0.75);
    grid_free(g);
    spec_free(s);
}

static void test_filters(void **state)
{
    (void)state;
    const char *base = "models: gpt3-175b\nhardware: a100-80g\n"
                       "plan:\n  devices: 1024\n  tp: [1, 2, 4, 8, 16]\n  pp: [1, 8, 16]\n";
    char text[512];
    ccs_spec *all = parse(base);
    ccs_grid *ga = grid(all);
    snprintf(text, sizeof text, "%swhere: \"tp <= 4\"\n", base);
    ccs_spec *pre = parse(text);
    ccs_grid *gp = grid(pre);
    snprintf(text, sizeof text, "%swhere: fits\n", base);
    ccs_spec *post = parse(text);
    ccs_grid *go = grid(post);
    int kept_pre = 0, kept_post = 0, fits = 0;
    for (int64_t i = 0; i < grid_count(ga); i++) {
        ccs_record a, b, c;
        assert_true(grid_eval(ga, i, &a, NULL));
        int kp = grid_eval(gp, i, &b, NULL), ko = grid_eval(go, i, &c, NULL);
        assert_int_equal(kp, a.s.plan.tp <= 4);
        assert_int_equal(ko, a.r.status == CCS_ST_OK);
        if (ko)
            assert_memory_equal(&a.r, &c.r, sizeof a.r);
        kept_pre += kp;
        kept_post += ko;
        fits += a.r.status == CCS_ST_OK;
    }
    assert_int_equal(kept_pre, 3 * 3);
    assert_int_equal(kept_post, fits);
    assert_true(fits > 0 && fits < 15);
    grid_free(ga);
    grid_free(gp);
    grid_free(go);
    spec_free(all);
    spec_free(pre);
    spec_free(post);
}

/* The grid's projection is exactly the per-scenario projection. */
static void test_eval_matches_project(void **state)
{
    (void)state;
    ccs_spec *s = parse("models: gpt3-175b\nhardware: a100-80g\ngenerations: [0, 2]\n"
                        "evolution: memory-wall\n"
                        "plan:\n  devices: 512\n  tp: 8\n  pp: 8\n  recompute: selective\n"
                        "  seq: 2048\n  gbs: model\n");
    ccs_grid *g = grid(s);
    ccs_record rec;
    assert_true(grid_eval(g, 1, &rec, NULL));
    const ccs_evolution *ev = catalog_evolution(test_cat(), "memory-wall");
    ccs_plan p;
    plan_defaults(&p);
    p.devices = 512;
    p.tp = 8;
    p.pp = 8;
    p.recompute = CCS_RECOMPUTE_SELECTIVE;
    p.seq = 2048;
    p.gbs = 1536; /* gpt3-175b's published batch (Brown et al. 2020, Table 2.1) */
    plan_derive(&p);
    ccs_hw hw;
    hw_evolve(catalog_hw(test_cat(), "a100-80g"), ev, 2, &hw);
    ccs_cost c;
    cost_init(&c, &hw, NULL, ev, 2, &p);
    ccs_result r;
    timeline_project(catalog_model(test_cat(), "gpt3-175b"), &p, &c, &r, NULL);
    assert_int_equal(rec.s.gen, 2);
    assert_memory_equal(&rec.s.plan, &p, sizeof p);
    assert_memory_equal(&rec.r, &r, sizeof r);
    grid_free(g);
    spec_free(s);
}

/* grid_eval's cost memo (shape efficiencies, collective times, the sums over
 * a block's ops) changes no result: every scenario of a grid that revisits
 * blocks (pipeline, data parallelism, ZeRO, devices vary around them), dense
 * and mixture-of-experts models, two devices and generations, projected
 * again without the memo, is equal bit for bit. */
static void test_eval_memo_identical(void **state)
{
    (void)state;
    ccs_spec *s = parse("models: [llama3-8b, gpt3-175b, mixtral-8x7b]\n"
                        "hardware: [a100-80g, h100-sxm]\nevolution: memory-wall\n"
                        "generations: [0, 2]\n"
                        "plan:\n  devices: [256, 512]\n  tp: [2, 8]\n  pp: [1, 2, 4, 8]\n"
                        "  ep: [1, 8]\n  recompute: [none, selective, full]\n"
                        "  sp: [false, true]\n  zero: [0, 1, 3]\n  mbs: [1, 2]\n"
                        "  seq: 2048\n  gbs: 512\n");
    ccs_grid *g = grid(s);
    int64_t n = grid_count(g), ok = 0;
    for (int64_t i = 0; i < n; i++) {
        ccs_record rec, ref;
        assert_int_equal(grid_eval(g, i, &rec, NULL), 1);
        ref.s = rec.s;
        if (rec.s.derive != CCS_R_OK)
            continue;
        const ccs_model *m = spec_model(s, (size_t)rec.s.model);
        ccs_cost c;
        cost_init(&c, grid_hw(g, rec.s.hw, rec.s.gen_i), spec_opmodel(s, (size_t)rec.s.hw),
                  spec_evolution(s), rec.s.gen, &rec.s.plan);
        timeline_project(m, &rec.s.plan, &c, &ref.r, NULL);
        assert_memory_equal(&rec.r, &ref.r, sizeof ref.r);
        ok += rec.r.status != CCS_ST_INVALID;
    }
    assert_true(ok > n / 4); /* most plans are projected, not refused */
    grid_free(g);
    spec_free(s);
}

static void test_overflow(void **state)
{
    (void)state;
    /* 2^20 values on four axes: 2^80 scenarios, refused at the axis that overflows */
    const char *big = "models: gpt3-175b\nhardware: a100-80g\nplan:\n"
                      "  devices: {range: [1, 1048576]}\n  tp: {range: [1, 1048576]}\n"
                      "  pp: {range: [1, 1048576]}\n  mbs: {range: [1, 1048576]}\n";
    ccs_err err;
    ccs_spec *s = spec_parse(big, strlen(big), "t.yaml", test_cat(), &err);
    assert_null(s);
    assert_non_null(strstr(err.msg, "t.yaml:7:8: field 'plan.mbs': the grid would hold more "
                                    "than 2^63-1 scenarios"));
    /* zipping two of the axes brings it back to 2^60 */
    char zipped[512];
    snprintf(zipped, sizeof zipped, "%szip: [[tp, mbs]]\n", big);
    s = parse(zipped);
    ccs_grid *g = grid(s);
    assert_true(grid_count(g) == ((int64_t)1 << 60));
    grid_free(g);
    spec_free(s);
    /* the boundary: 2^62 counts, 2^63 is one past INT64_MAX */
    const char *b62 = "models: gpt3-175b\nhardware: a100-80g\nplan:\n"
                      "  devices: {range: [1, 1048576]}\n  tp: {range: [1, 1048576]}\n"
                      "  pp: {range: [1, 1048576]}\n  mbs: {range: [1, 4]}\n";
    s = parse(b62);
    g = grid(s);
    assert_true(grid_count(g) == ((int64_t)1 << 62));
    grid_free(g);
    spec_free(s);
    char b63[512];
    snprintf(b63, sizeof b63, "%s", b62);
    *strstr(b63, "[1, 4]") = 0;
    strcat(b63, "[1, 8]}\n");
    assert_null(spec_parse(b63, strlen(b63), "t.yaml", test_cat(), &err));
    assert_non_null(strstr(err.msg, "more than 2^63-1"));
    /* 2^20 * 2^20 * 2^20 = 2^60 still counts */
    s = parse("models: gpt3-175b\nhardware: a100-80g\nplan:\n"
              "  devices: {range: [1, 1048576]}\n  tp: {range: [1, 1048576]}\n"
              "  pp: {range: [1, 1048576]}\n");
    g = grid(s);
    assert_true(grid_count(g) == ((int64_t)1 << 60));
    ccs_scenario sc;
    grid_decode(g, grid_count(g) - 1, &sc);
    assert_int_equal(sc.plan.devices, 1048576);
    assert_int_equal(sc.plan.pp, 1048576);
    grid_free(g);
    spec_free(s);
}

static void test_keys(void **state)
{
    (void)state;
    ccs_spec *a = parse("models: [gpt3-175b, llama3-8b]\nhardware: [a100-80g, mi210]\n"
                        "generations: [0, 1]\nplan:\n  devices: 64\n  tp: [1, 2, 4, 8]\n"
                        "  pp: [1, 2]\n  sp: [false, true]\n");
    ccs_spec *b = parse("models: [llama3-8b, gpt3-175b]\nhardware: [mi210, a100-80g]\n"
                        "generations: [1, 0]\nplan:\n  devices: 64\n  tp: [8, 4, 2, 1]\n"
                        "  pp: [2, 1]\n  sp: [true, false]\n");
    ccs_grid *ga = grid(a), *gb = grid(b);
    int64_t n = grid_count(ga);
    assert_int_equal(n, grid_count(gb));
    uint64_t *ka = calloc((size_t)n, sizeof *ka), *kb = calloc((size_t)n, sizeof *kb);
    for (int64_t i = 0; i < n; i++) {
        ccs_scenario sa, sb;
        grid_decode(ga, i, &sa);
        grid_decode(gb, i, &sb);
        ka[i] = sa.key;
        kb[i] = sb.key;
    }
    /* every key distinct; the same scenarios give the same keys in any order */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++)
            assert_true(ka[i] != ka[j]);
    for (int64_t i = 0; i < n; i++) {
        int found = 0;
        for (int64_t j = 0; j < n && !found; j++)
            found = ka[i] == kb[j];
        assert_true(found);
    }
    /* Golden key, recorded from this implementation (definition in grid.h) for
     * inline entries, so that catalog edits do not move it. A change here means
     * every stored key changes: that needs a new schema version. */
    ccs_spec *k = parse("models: [{name: m, layers: 2, hidden: 64, heads: 4, vocab: 100}]\n"
                        "hardware: [{name: h, peak_tflops: {bf16: 100}, mem_gib: 16, "
                        "mem_gbps: 1000, devices_per_node: 8, compute_units: 100, "
                        "gemm_tile: [128, 128], intra_gbps: 100, inter_gbps: 10, "
                        "intra_latency_us: 1, inter_latency_us: 5, kernel_latency_us: 3, "
                        "gemm_efficiency: 0.8, mem_efficiency: 0.9, intra_efficiency: 0.8, "
                        "inter_efficiency: 0.8}]\n"
                        "generations: 1\nevolution: memory-wall\n"
                        "plan:\n  devices: 16\n  tp: 2\n  pp: 2\n  seq: 128\n  gbs: 64\n"
                        "  dp_overlap: true\n"); /* the default when the key was recorded */
    ccs_grid *gk = grid(k);
    ccs_scenario s0;
    grid_decode(gk, 0, &s0);
    printf("golden key (source: grid.h definition, recorded from this build): "
           "0x%016llx\n",
           (unsigned long long)s0.key);
    assert_true(s0.key == UINT64_C(0x247048f31ffe1c82));
    grid_free(gk);
    spec_free(k);
    free(ka);
    free(kb);
    grid_free(ga);
    grid_free(gb);
    spec_free(a);
    spec_free(b);
}

/* The one scenario of a spec whose plan is given by the text after "plan: ". */
static void eval_plan(const char *model, const char *plan, ccs_record *rec)
{
    char text[512];
    snprintf(text, sizeof text, "models: %s\nhardware: h100-sxm\nplan: %s\n", model, plan);
    ccs_spec *s = parse(text);
    ccs_grid *g = grid(s);
    assert_int_equal(grid_count(g), 1);
    assert_int_equal(grid_eval(g, 0, rec, NULL), 1);
    grid_free(g);
    spec_free(s);
}

/* The plan axes of context and expert parallelism and uneven pipelines reach
 * the plan, the projection and the key; the bad combinations are invalid
 * plans with their reason (llama3-8b: 32 layers, dense; mixtral-8x7b: 8
 * experts). */
static void test_cp_ep_axes(void **state)
{
    (void)state;
    ccs_record r;
    eval_plan("llama3-8b", "{devices: 64, tp: 2, cp: 2, seq: 8192, gbs: 64}", &r);
    assert_int_equal(r.s.plan.cp, 2);
    assert_int_equal(r.s.plan.dp, 16); /* 64 / (tp 2 x cp 2) */
    assert_int_not_equal(r.r.status, CCS_ST_INVALID);
    assert_true(r.r.t_cp_comm > 0 && r.r.cp_bytes > 0);
    uint64_t k_cp2 = r.s.key;
    eval_plan("llama3-8b", "{devices: 64, tp: 2, cp: 1, seq: 8192, gbs: 64}", &r);
    uint64_t k_cp1 = r.s.key;
    assert_true(r.r.t_cp_comm == 0);
    eval_plan("llama3-8b", "{devices: 64, tp: 2, seq: 8192, gbs: 64}", &r);
    assert_true(r.s.key == k_cp1); /* the defaults leave keys as they were */
    assert_true(k_cp2 != k_cp1);
    eval_plan("llama3-8b", "{devices: 64, tp: 2, cp: 2, cp_comm: allgather, seq: 8192, gbs: 64}",
              &r);
    assert_int_equal(r.s.plan.cp_comm, CCS_CP_ALLGATHER);
    assert_true(r.s.key != k_cp2);
    assert_true(r.r.t_cp_comm_exposed == r.r.t_cp_comm); /* all-gather: not overlapped */
    /* 8190 tokens do not split into 2 x cp = 4 equal chunks */
    eval_plan("llama3-8b", "{devices: 64, tp: 2, cp: 2, seq: 8190, gbs: 64}", &r);
    assert_int_equal(r.r.status, CCS_ST_INVALID);
    assert_int_equal(r.r.reason, CCS_R_CP);
    /* cp that does not divide devices / tp leaves dp underived */
    eval_plan("llama3-8b", "{devices: 64, tp: 2, cp: 3, seq: 8190, gbs: 64}", &r);
    assert_int_equal(r.r.reason, CCS_R_DEVICES);
    /* expert parallelism: a dense model has no experts to spread */
    eval_plan("llama3-8b", "{devices: 64, tp: 2, ep: 8, seq: 4096, gbs: 64}", &r);
    assert_int_equal(r.r.status, CCS_ST_INVALID);
    assert_int_equal(r.r.reason, CCS_R_EP);
    eval_plan("mixtral-8x7b",
              "{devices: 64, tp: 2, ep: 8, capacity_factor: 1.25, seq: 4096, "
              "gbs: 64}",
              &r);
    assert_int_equal(r.s.plan.ep, 8);
    assert_true(r.s.plan.capacity_factor == 1.25);
    assert_int_not_equal(r.r.status, CCS_ST_INVALID);
    assert_true(r.r.t_ep_comm > 0 && r.r.ep_bytes > 0);
    /* 3 divides neither the 8 experts nor dp x cp = 32 */
    eval_plan("mixtral-8x7b", "{devices: 64, tp: 2, ep: 3, seq: 4096, gbs: 64}", &r);
    assert_int_equal(r.r.reason, CCS_R_EP);
    /* ep 16 divides dp x cp = 32 but not the 8 experts */
    eval_plan("mixtral-8x7b", "{devices: 64, tp: 2, ep: 16, seq: 4096, gbs: 64}", &r);
    assert_int_equal(r.r.reason, CCS_R_EP);
    /* 32 layers on 4 stages: 5 on the first leaves 27 = 3 x 9; 6 leaves 26 */
    eval_plan("llama3-8b", "{devices: 64, pp: 4, pp_first_layers: 5, seq: 4096, gbs: 64}", &r);
    assert_int_equal(r.s.plan.pp_first, 5);
    assert_int_not_equal(r.r.status, CCS_ST_INVALID);
    eval_plan("llama3-8b", "{devices: 64, pp: 4, pp_first_layers: 6, seq: 4096, gbs: 64}", &r);
    assert_int_equal(r.r.reason, CCS_R_PP_LAYERS);
    eval_plan("llama3-8b", "{devices: 64, pp: 4, pp_last_layers: 30, seq: 4096, gbs: 64}", &r);
    assert_int_equal(r.s.plan.pp_last, 30);
    assert_int_equal(r.r.reason, CCS_R_PP_LAYERS); /* 2 left for 3 stages */
}

static void test_name_template(void **state)
{
    (void)state;
    ccs_spec *s = parse("models: gpt3-175b\nhardware: h100-sxm\ngenerations: 1\n"
                        "plan:\n  devices: 4096\n  tp: 8\n  pp: 16\n  recompute: full\n"
                        "  net_bw_factor: 1.5\n"
                        "scenario_name: \"{model}@{hardware}.g{gen}-{evolution}/tp{tp}xpp{pp}"
                        "xdp{dp}-{recompute}-{dtype}-bw{net_bw_factor}\"\n");
    ccs_grid *g = grid(s);
    ccs_record rec;
    grid_eval(g, 0, &rec, NULL);
    char buf[256];
    size_t n = grid_format_name(g, &rec, buf, sizeof buf);
    assert_string_equal(buf, "gpt3-175b@h100-sxm.g1-memory-wall/tp8xpp16xdp32-full-bf16-bw1.5");
    assert_int_equal(n, strlen(buf));
    char small[8];
    grid_format_name(g, &rec, small, sizeof small);
    assert_string_equal(small, "gpt3-17");
    grid_free(g);
    spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_and_order),
        cmocka_unit_test(test_zip_range_geom),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_eval_matches_project),
        cmocka_unit_test(test_eval_memo_identical),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_name_template),
        cmocka_unit_test(test_cp_ep_axes),
    };
    return cmocka_run_group_tests_name("grid", tests, test_catalog_setup, test_catalog_teardown);
}
