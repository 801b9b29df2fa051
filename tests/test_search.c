/* test_search.c - the best-plan order (best.h) and the plan search
 * (search.h): ties go to memory then to the simpler plan, the top K is kept in
 * that order, a split of the index space merges to the same answer, every
 * projected plan is structurally valid and distinct, and no valid plan of a
 * brute-force enumeration is missed. */
#include "testutil.h"

#include "ccsweep/sweep/search.h"

#include <time.h>
#include <unistd.h>

static search_hit hit(double tokens, double mem, int tp)
{
    search_hit h;
    memset(&h, 0, sizeof h);
    plan_defaults(&h.plan);
    h.plan.tp = tp;
    h.r.status = CCS_ST_OK;
    h.r.tokens_per_s = tokens;
    h.r.mem_total = mem;
    h.r.t_compute = tp; /* distinct outputs: these hits are distinct answers */
    return h;
}

static void test_order(void **state)
{
    (void)state;
    search_hit a = hit(100, 50, 2), b = hit(90, 10, 1), c = hit(100, 40, 4), d = hit(100, 40, 2);
    assert_true(best_cmp(&a.plan, &a.r, &b.plan, &b.r) < 0); /* faster wins */
    assert_true(best_cmp(&c.plan, &c.r, &a.plan, &a.r) < 0); /* equal speed: less memory */
    assert_true(best_cmp(&d.plan, &d.r, &c.plan, &c.r) < 0); /* then the smaller tp */
    assert_int_equal(best_cmp(&d.plan, &d.r, &d.plan, &d.r), 0);
    /* what-ifs and plans that do not fit do not compete */
    search_hit w = a;
    w.plan.net_bw_factor = 2;
    assert_false(best_eligible(&w.plan, &w.r));
    w = a;
    w.r.status = CCS_ST_OOM;
    assert_false(best_eligible(&w.plan, &w.r));
    assert_true(best_eligible(&a.plan, &a.r));

    search_hit top[3];
    int n = 0;
    const search_hit in[] = {b, a, hit(95, 1, 1), c, d, hit(1, 1, 1)};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        search_insert(top, 3, &n, &in[i]);
    assert_int_equal(n, 3);
    assert_int_equal(top[0].plan.tp, 2); /* d */
    assert_true(top[0].r.mem_total == 40);
    assert_int_equal(top[1].plan.tp, 4); /* c */
    assert_int_equal(top[2].plan.tp, 2); /* a */
    assert_true(top[2].r.mem_total == 50);
}

static ccs_search *small_search(ccs_catalog *cat, ccs_hw *hw, int32_t max_cp)
{
    const ccs_model *m = catalog_model(cat, "megatron-8.3b");
    assert_non_null(m);
    *hw = *catalog_hw(cat, "a100-80g");
    ccs_err err;
    ccs_search *s = search_new(m, hw, NULL, NULL, 0, 64, m->gbs, m->seq, CCS_BF16, max_cp, &err);
    assert_non_null(s);
    return s;
}

static void test_split(void **state)
{
    (void)state;
    ccs_catalog *cat = test_catalog();
    ccs_hw hw;
    ccs_search *s = small_search(cat, &hw, 1);
    assert_true(search_count(s) > 0);
    enum { K = 8 };
    search_hit one[K], two[K];
    int n1 = 0, n2 = 0;
    search_stats s1 = {0}, s2 = {0};
    search_range(s, 0, search_count(s), 1, one, K, &n1, &s1);
    /* three interleaved slices, merged as dist_search merges ranks */
    for (int r = 0; r < 3; r++) {
        search_hit part[K];
        int np = 0;
        search_range(s, r, search_count(s), 3, part, K, &np, &s2);
        for (int i = 0; i < np; i++)
            search_insert(two, K, &n2, &part[i]);
    }
    assert_int_equal(n1, K);
    assert_int_equal(n2, K);
    assert_int_equal(s1.plans, s2.plans);
    assert_int_equal(s1.fit, s2.fit);
    assert_true(s1.fit > 0 && s1.fit <= s1.plans);
    for (int i = 0; i < K; i++) {
        assert_int_equal(best_cmp(&one[i].plan, &one[i].r, &two[i].plan, &two[i].r), 0);
        if (i)
            assert_true(best_cmp(&one[i - 1].plan, &one[i - 1].r, &one[i].plan, &one[i].r) <= 0);
        assert_true(best_eligible(&one[i].plan, &one[i].r));
        assert_int_equal(one[i].plan.tp * one[i].plan.pp * one[i].plan.dp, 64);
        assert_int_equal(one[i].plan.gbs, catalog_model(cat, "megatron-8.3b")->gbs);
    }
    search_free(s);
    catalog_free(cat);
}

/* Every valid plan of a brute-force loop over the axes (independent of the
 * search's own shape enumeration) is one the search projects, once. */
static void test_complete(void **state)
{
    (void)state;
    ccs_catalog *cat = test_catalog();
    ccs_hw hw;
    ccs_search *s = small_search(cat, &hw, 1);
    const ccs_model *m = catalog_model(cat, "megatron-8.3b");
    int64_t valid = 0;
    for (int tp = 1; tp <= 64; tp++)
        for (int pp = 1; pp <= 64; pp++)
            for (int vpp = 1; vpp <= 72 && 64 % (tp * pp) == 0; vpp++)
                for (int mbs = 1; mbs <= 512; mbs++) {
                    ccs_plan p;
                    plan_defaults(&p);
                    p.devices = 64;
                    p.tp = tp;
                    p.pp = pp;
                    p.dp = 64 / (tp * pp);
                    p.vpp = vpp;
                    p.mbs = mbs;
                    p.gbs = m->gbs;
                    p.seq = m->seq;
                    valid += plan_check(m, &hw, &p) == CCS_R_OK;
                }
    /* the search: shapes x switches, of which the redundant ones are skipped */
    int64_t shapes = 0;
    for (int64_t i = 0; i < search_count(s); i++) {
        ccs_plan p;
        if (search_plan(s, i, &p) && p.sp == 0 && p.zero == 0 && p.dp_overlap == 0 &&
            p.flash_attn == 0 && p.recompute == CCS_RECOMPUTE_NONE) {
            assert_int_equal(plan_check(m, &hw, &p), CCS_R_OK);
            shapes++;
        }
    }
    assert_true(valid > 0);
    assert_int_equal(shapes, valid);
    search_free(s);
    catalog_free(cat);
}

/* Context parallelism widens the space and never makes the best plan worse. */
static void test_cp(void **state)
{
    (void)state;
    ccs_catalog *cat = test_catalog();
    ccs_hw hw;
    ccs_search *s1 = small_search(cat, &hw, 1), *s4 = small_search(cat, &hw, 4);
    search_hit a, b;
    int na = 0, nb = 0, cp_seen = 0;
    search_stats sa = {0}, sb = {0};
    search_range(s1, 0, search_count(s1), 1, &a, 1, &na, &sa);
    search_range(s4, 0, search_count(s4), 1, &b, 1, &nb, &sb);
    assert_true(sb.plans > sa.plans);
    /* skipping shapes whose least-memory plan does not fit loses no plan
     * that fits: count them by projecting every plan */
    int64_t fit = 0, valid = 0;
    for (int64_t i = 0; i < search_count(s4); i++) {
        search_hit h;
        if (!search_plan(s4, i, &h.plan) ||
            plan_check(catalog_model(cat, "megatron-8.3b"), &hw, &h.plan) != CCS_R_OK)
            continue;
        ccs_cost c;
        cost_init(&c, &hw, NULL, NULL, 0, &h.plan);
        timeline_project(catalog_model(cat, "megatron-8.3b"), &h.plan, &c, &h.r, NULL);
        valid++;
        fit += best_eligible(&h.plan, &h.r);
    }
    assert_int_equal(sb.plans, valid);
    assert_int_equal(sb.fit, fit);
    assert_true(fit > 0 && fit < valid);
    assert_int_equal(na, 1);
    assert_int_equal(nb, 1);
    assert_true(b.r.tokens_per_s >= a.r.tokens_per_s);
    for (int64_t i = 0; i < search_count(s4); i++) {
        ccs_plan p;
        if (search_plan(s4, i, &p)) {
            assert_true(plan_cp(&p) <= 4);
            assert_int_equal(p.tp * plan_cp(&p) * p.pp * p.dp, 64);
            cp_seen |= plan_cp(&p) > 1;
        }
    }
    assert_true(cp_seen);
    search_free(s1);
    search_free(s4);
    catalog_free(cat);
}

/* A mixture of experts: expert parallelism over the data-parallel ranks. */
static void test_ep(void **state)
{
    (void)state;
    ccs_catalog *cat = test_catalog();
    const ccs_model *m = catalog_model(cat, "mixtral-8x7b");
    assert_non_null(m);
    ccs_hw hw = *catalog_hw(cat, "h100-sxm");
    ccs_err err;
    ccs_search *s = search_new(m, &hw, NULL, NULL, 0, 16, m->gbs, m->seq, CCS_BF16, 1, &err);
    assert_non_null(s);
    int ep_seen = 0;
    for (int64_t i = 0; i < search_count(s); i++) {
        ccs_plan p;
        if (!search_plan(s, i, &p))
            continue;
        assert_int_equal(plan_check(m, &hw, &p), CCS_R_OK);
        assert_int_equal(m->experts % plan_ep(&p), 0);
        assert_int_equal(p.dp % plan_ep(&p), 0);
        ep_seen |= plan_ep(&p) == 8;
    }
    assert_true(ep_seen);
    search_free(s);
    catalog_free(cat);
}

/* The shapes of the search in its order, by the trial-division loops it
 * once ran (the reference the divisor enumeration must reproduce). */
static int64_t reference_shapes(const ccs_model *m, const ccs_hw *hw, int32_t devices, int32_t gbs,
                                int32_t seq, int32_t max_cp, ccs_plan *out, int64_t cap)
{
    int64_t n = 0;
    ccs_plan base;
    plan_defaults(&base);
    base.devices = devices;
    base.gbs = gbs;
    base.seq = seq;
    base.dtype = CCS_BF16;
    for (int32_t tp = 1; tp <= devices; tp++) {
        if (devices % tp)
            continue;
        for (int32_t cp = 1; cp <= devices / tp && cp <= max_cp; cp++) {
            if ((devices / tp) % cp || (cp > 1 && seq % (2 * cp) != 0))
                continue;
            int32_t rest = devices / tp / cp;
            for (int32_t pp = 1; pp <= rest && pp <= m->layers; pp++) {
                if (rest % pp)
                    continue;
                ccs_plan sp = base;
                sp.pp = pp;
                int32_t lf, lm, ll;
                if (plan_stage_layers(m, &sp, &lf, &lm, &ll) != CCS_R_OK)
                    continue;
                int32_t dp = rest / pp;
                if (gbs % dp)
                    continue;
                int32_t per = gbs / dp;
                for (int32_t mbs = 1; mbs <= per; mbs++) {
                    if (per % mbs)
                        continue;
                    for (int32_t vpp = 1; vpp <= (pp > 1 ? lm : 1); vpp++) {
                        if (lm % vpp)
                            continue;
                        for (int32_t ep = 1; ep <= (m->experts > 0 ? m->experts : 1); ep++) {
                            if ((m->experts > 0 && m->experts % ep) || ((int64_t)dp * cp) % ep)
                                continue;
                            ccs_plan p = base;
                            p.tp = tp;
                            p.cp = cp;
                            p.ep = ep;
                            p.pp = pp;
                            p.dp = dp;
                            p.vpp = vpp;
                            p.mbs = mbs;
                            if (plan_check(m, hw, &p) != CCS_R_OK)
                                continue;
                            assert_true(n < cap);
                            out[n++] = p;
                        }
                    }
                }
            }
        }
    }
    return n;
}

/* The same shapes in the same order as the reference loops, for dense and
 * mixture-of-experts models, with and without context parallelism. */
static void test_same_shapes(void **state)
{
    (void)state;
    ccs_catalog *cat = test_catalog();
    static const struct {
        const char *model, *hw;
        int32_t devices, gbs, seq, max_cp;
    } cases[] = {{"megatron-8.3b", "a100-80g", 64, 512, 1024, 1},
                 {"megatron-8.3b", "a100-80g", 96, 720, 1024, 8},
                 {"mixtral-8x7b", "h100-sxm", 16, 256, 4096, 4},
                 {"gpt3-175b", "h100-sxm", 256, 1536, 2048, 16},
                 {"deepseek-v3", "h100-sxm", 128, 960, 4096, 2}};
    const int64_t cap = 1 << 20;
    ccs_plan *ref = malloc(sizeof *ref * (size_t)cap);
    assert_non_null(ref);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const ccs_model *m = catalog_model(cat, cases[c].model);
        assert_non_null(m);
        ccs_hw hw = *catalog_hw(cat, cases[c].hw);
        ccs_err err;
        ccs_search *s = search_new(m, &hw, NULL, NULL, 0, cases[c].devices, cases[c].gbs,
                                   cases[c].seq, CCS_BF16, cases[c].max_cp, &err);
        assert_non_null(s);
        int64_t n = reference_shapes(m, &hw, cases[c].devices, cases[c].gbs, cases[c].seq,
                                     cases[c].max_cp, ref, cap);
        assert_true(n > 0);
        int64_t per_shape = search_count(s) / n;
        assert_int_equal(search_count(s), n * per_shape);
        for (int64_t i = 0; i < n; i++) {
            ccs_plan p;
            search_plan(s, i * per_shape, &p);
            if (p.tp != ref[i].tp || p.cp != ref[i].cp || p.ep != ref[i].ep || p.pp != ref[i].pp ||
                p.dp != ref[i].dp || p.vpp != ref[i].vpp || p.mbs != ref[i].mbs) {
                print_error("%s: shape %lld differs\n", cases[c].model, (long long)i);
                fail();
            }
        }
        search_free(s);
    }
    free(ref);
    catalog_free(cat);
}

/* The plan space of 4096 devices with context parallelism up to 4096 and a
 * global batch of 2^30: shapes found by enumerating divisors, in well under
 * a second (trial division up to gbs / dp per shape ran past 300 s); 2 s of
 * CPU is the bound. */
static void test_large_space(void **state)
{
    (void)state;
    alarm(60); /* the slow enumeration fails the test rather than stall it */
    ccs_catalog *cat = test_catalog();
    const ccs_model *m = catalog_model(cat, "gpt3-175b");
    ccs_hw hw = *catalog_hw(cat, "h100-sxm");
    ccs_err err;
    clock_t t0 = clock();
    ccs_search *s = search_new(m, &hw, NULL, NULL, 0, 4096, 1 << 30, 1 << 24, CCS_BF16, 4096, &err);
    double dt = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_non_null(s);
    assert_true(search_count(s) > 0);
    if (dt > 2.0 * CCS_TEST_CPU_SCALE) {
        print_error("search_new: %.2f s of CPU\n", dt);
        fail();
    }
    search_free(s);
    catalog_free(cat);
    alarm(0);
}

/* Plans with the same outputs are one answer: the top holds k distinct
 * ones, the best plan of each kept with a count and list of the others that
 * does not depend on the order they arrive in. */
static void test_same_outputs(void **state)
{
    (void)state;
    search_hit a = hit(100, 40, 2), b = hit(100, 40, 2), c = hit(90, 40, 1), d = hit(100, 40, 2);
    a.idx = 7;
    b.idx = 3;
    b.plan.zero = 1; /* a simpler plan (zero 0) wins the tie */
    d.idx = 5;
    d.plan.recompute = CCS_RECOMPUTE_SELECTIVE;
    assert_true(search_same(&a.r, &b.r));
    assert_false(search_same(&a.r, &c.r));
    const search_hit *orders[2][4] = {{&a, &b, &c, &d}, {&d, &c, &b, &a}};
    for (int o = 0; o < 2; o++) {
        search_hit top[2];
        int n = 0;
        for (int i = 0; i < 4; i++)
            search_insert(top, 2, &n, orders[o][i]);
        assert_int_equal(n, 2);
        assert_int_equal(top[0].idx, 7); /* a: zero 0, recompute none */
        assert_int_equal(top[0].n_same, 2);
        assert_int_equal(top[0].n_listed, 2);
        assert_int_equal(top[0].same[0], 3);
        assert_int_equal(top[0].same[1], 5);
        assert_int_equal(top[1].plan.tp, 1); /* c, the second distinct answer */
        assert_int_equal(top[1].n_same, 0);
    }
}

/* Listed axis values, the memory limit and the filter narrow the space;
 * the narrowed answer is the best of the full space's plans that satisfy
 * them, and the text of equal plans names the settings they differ in. */
static void test_narrow(void **state)
{
    (void)state;
    ccs_catalog *cat = test_catalog();
    const ccs_model *m = catalog_model(cat, "megatron-8.3b");
    ccs_hw hw = *catalog_hw(cat, "a100-80g");
    ccs_err err;
    enum { K = 400 };
    search_hit *all = calloc(K, sizeof *all), one;
    int n_all = 0, n1 = 0;
    search_stats st = {0}, s1 = {0};
    ccs_search *full = search_new(m, &hw, NULL, NULL, 0, 64, m->gbs, m->seq, CCS_BF16, 1, &err);
    search_range(full, 0, search_count(full), 1, all, K, &n_all, &st);
    assert_int_equal(n_all, K);

    search_opts o;
    search_opts_init(&o);
    o.ax[SEARCH_AX_TP] = (search_axis){2, {2, 4}};
    o.ax[SEARCH_AX_PP] = (search_axis){1, {2}};
    o.max_mem_frac = 0.5;
    ccs_expr *e = expr_compile("mbs >= 2 and comm_fraction < 0.5", &err, NULL);
    assert_non_null(e);
    o.where = e;
    ccs_search *s = search_new_opts(m, &hw, NULL, NULL, 0, 64, m->gbs, m->seq, CCS_BF16, &o, &err);
    assert_non_null(s);
    search_range(s, 0, search_count(s), 1, &one, 1, &n1, &s1);
    assert_int_equal(n1, 1);
    assert_true(s1.plans < st.plans && s1.filtered > 0);
    /* the first plan of the full ranking that satisfies every limit */
    int i = 0;
    while (i < n_all && !((all[i].plan.tp == 2 || all[i].plan.tp == 4) && all[i].plan.pp == 2 &&
                          all[i].plan.mbs >= 2 && all[i].r.comm_fraction < 0.5 &&
                          all[i].r.mem_total <= 0.5 * hw.mem_cap))
        i++;
    assert_true(i < n_all);
    assert_int_equal(best_cmp(&all[i].plan, &all[i].r, &one.plan, &one.r), 0);
    assert_true(one.r.mem_total <= 0.5 * hw.mem_cap);

    /* the equal plans of the best answer, by text */
    char buf[512];
    search_same_text(full, &all[0], buf, sizeof buf);
    if (all[0].n_same > 0) {
        assert_true(buf[0] != '\0');
        for (int j = 0; j < all[0].n_listed; j++) {
            search_hit h;
            search_plan(full, all[0].same[j], &h.plan);
            ccs_cost c;
            cost_init(&c, &hw, NULL, NULL, 0, &h.plan);
            timeline_project(m, &h.plan, &c, &h.r, NULL);
            assert_true(search_same(&h.r, &all[0].r));
        }
    } else {
        assert_string_equal(buf, "");
    }
    search_free(s);
    search_free(full);
    expr_free(e);
    free(all);
    catalog_free(cat);
}

/* The search of megatron-8.3b on 64 a100-80g under the filter text, into st;
 * returns the number of answers found (at most 4). */
static int filtered_search(ccs_catalog *cat, const char *text, search_stats *st)
{
    const ccs_model *m = catalog_model(cat, "megatron-8.3b");
    ccs_hw hw = *catalog_hw(cat, "a100-80g");
    ccs_err err;
    search_opts o;
    search_opts_init(&o);
    ccs_expr *e = text ? expr_compile(text, &err, NULL) : NULL;
    assert_true(!text || e);
    o.where = e;
    ccs_search *s = search_new_opts(m, &hw, NULL, NULL, 0, 64, m->gbs, m->seq, CCS_BF16, &o, &err);
    assert_non_null(s);
    search_hit top[4];
    int n = 0;
    memset(st, 0, sizeof *st);
    search_range(s, 0, search_count(s), 1, top, 4, &n, st);
    if (st->undefined) { /* the first plan the filter divides by zero for */
        ccs_plan p;
        assert_true(search_plan(s, st->undefined_idx, &p));
        assert_int_equal(p.dp, 1);
        for (int64_t i = 0; i < st->undefined_idx; i++)
            assert_false(search_plan(s, i, &p) && plan_check(m, &hw, &p) == CCS_R_OK && p.dp == 1);
    }
    search_free(s);
    expr_free(e);
    return n;
}

/* What the filter drops does not change what fits: 'fit' counts the plans
 * that fit memory whatever the filter (of those projected: a filter naming
 * no output drops plans before projection), 'kept' the ones that also pass
 * it, the ones ranked. A filter undefined for a plan (a division by zero) is
 * counted, with the first such plan, not dropped as if false. */
static void test_filter_counts(void **state)
{
    (void)state;
    ccs_catalog *cat = test_catalog();
    search_stats open, post, pre, undef;
    assert_int_equal(filtered_search(cat, NULL, &open), 4);
    assert_true(open.fit > 0 && open.kept == open.fit && open.filtered == 0);
    /* after projection: every plan that fits is dropped, and still fits */
    assert_int_equal(filtered_search(cat, "t_iter < 0", &post), 0);
    assert_int_equal(post.plans, open.plans);
    assert_int_equal(post.fit, open.fit);
    assert_int_equal(post.filtered, open.fit);
    assert_int_equal(post.kept, 0);
    /* before projection: every plan dropped, none projected */
    assert_int_equal(filtered_search(cat, "tp > 1000", &pre), 0);
    assert_int_equal(pre.filtered, pre.plans);
    assert_int_equal(pre.fit, 0);
    assert_int_equal(pre.kept, 0);
    /* gbs / (dp - 1) is undefined for every plan with dp 1 (a filter of
     * plan fields: evaluated before projection, so for every such plan) */
    filtered_search(cat, "gbs / (dp - 1) > 1", &undef);
    int64_t dp1 = 0;
    {
        const ccs_model *m = catalog_model(cat, "megatron-8.3b");
        ccs_hw hw = *catalog_hw(cat, "a100-80g");
        ccs_err err;
        ccs_search *s = search_new(m, &hw, NULL, NULL, 0, 64, m->gbs, m->seq, CCS_BF16, 1, &err);
        ccs_plan p;
        for (int64_t i = 0; i < search_count(s); i++)
            dp1 += search_plan(s, i, &p) && plan_check(m, &hw, &p) == CCS_R_OK && p.dp == 1;
        search_free(s);
    }
    assert_true(dp1 > 0);
    assert_int_equal(undef.undefined, dp1);
    catalog_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),       cmocka_unit_test(test_split),
        cmocka_unit_test(test_complete),    cmocka_unit_test(test_cp),
        cmocka_unit_test(test_ep),          cmocka_unit_test(test_same_shapes),
        cmocka_unit_test(test_large_space), cmocka_unit_test(test_same_outputs),
        cmocka_unit_test(test_narrow),      cmocka_unit_test(test_filter_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
