/* test_invariants.c - physical invariants of the projection over a generated
 * set of plans: every catalog model on every catalog device with bf16 (or
 * fp16) matrix units, generation 0 under memory-wall, tp, pp, mbs, ZeRO stage,
 * sequence parallelism and DP overlap mode (and context parallelism 2) crossed, on 64 and 512
 * devices with the model's published batch (512 sequences when it has none). For each valid plan:
 *   - the iteration is no shorter than its compute, its TP, CP, DP or PP traffic;
 *   - the model FLOPs the kernels compute (attention's causal half skipped,
 *     as the fused kernels and their benchmarks count it) per second and
 *     device never exceed the device's best GEMM efficiency (at the sustained
 *     clock) of its peak: no operator runs faster than that. The reported
 *     mfu counts attention unmasked (the Megatron/PaLM convention) and can
 *     pass that bound where attention dominates: the test counts those plans;
 *   - more recomputation (none -> selective -> full) is never faster;
 *   - a fused attention kernel is never slower than the unfused one (under
 *     the default stack: see the comparison);
 *   - twice the link bandwidth is never slower;
 *   - the next hardware generation is never slower;
 *   - a ZeRO stage that keeps less memory moves more DP bytes (free_lunch).
 * Comparisons hold the model, batch, devices and plan fixed, so each compares
 * equal work. Each plan runs under the next of the catalog's software stacks
 * in turn (their attention kernels, gradient types, overheads and the
 * contention of overlapped collectives), every comparison under its plan's.
 * The test counts the plans it checked and needs >= 100,000. */
#include "testutil.h"

#include "ccsweep/cost/analytic.h"

static const ccs_evolution *evo;

static const ccs_stack *stack; /* the plan's software stack (NULL: the default) */

static double project(const ccs_model *m, const ccs_hw *base, int gen, ccs_plan p, ccs_result *r)
{
    ccs_hw h;
    hw_evolve(base, evo, gen, &h);
    ccs_cost c;
    cost_init(&c, &h, NULL, evo, gen, &p);
    cost_set_stack(&c, stack);
    timeline_project(m, &p, &c, r, NULL);
    return r->t_iter;
}

/* Relative slack for "never slower": the same arithmetic in another order. */
#define EPS 1e-9

static void fail_plan(const char *what, const ccs_model *m, const ccs_hw *hw, const ccs_plan *p,
                      double a, double b)
{
    print_error("%s: %s on %s (stack %s), %d devices tp %d pp %d dp %d mbs %d zero %d sp %d "
                "dpov %d recompute %d flash %d: %.9g vs %.9g\n",
                what, m->name, hw->name, stack ? stack->name : "default", p->devices, p->tp, p->pp,
                p->dp, p->mbs, p->zero, p->sp, p->dp_overlap, p->recompute, p->flash_attn, a, b);
}

/* Model FLOPs per second and device with attention's causal half skipped, of
 * the peak of the plan's dtype: the unmasked core per iteration is the s^2
 * term of the layer FLOPs, 2 (F(s) - 2 F(s/2)). */
static double useful_rate(const ccs_model *m, const ccs_hw *hw, const ccs_plan *p,
                          const ccs_result *r)
{
    double fs = analytic_layer_fwd_flops(m, p->gbs, p->seq);
    double fh = analytic_layer_fwd_flops(m, p->gbs, p->seq / 2.0);
    double core = 2 * (fs - 2 * fh) * m->layers;
    return (r->model_flops - 1.5 * core) / (r->t_iter * p->devices * hw->peak_flops[p->dtype]);
}

/* The device's best GEMM efficiency at the sustained clock: no op is faster. */
static double rate_bound(const ccs_hw *hw, int dtype)
{
    return hw_gemm_eff(hw, dtype, NULL) * hw->clock_ratio * (1 + EPS);
}

/* Long sequences, where attention dominates: every model on every device at
 * 32k and 128k tokens, tp 1 or 8, cp 1 or 8, each stack; the useful FLOP rate
 * within the bound. Returns the plans checked; counts violations and plans
 * whose reported (unmasked) mfu passes the bound. */
static long long_sequences(ccs_catalog *cat, long *failures, long *mfu_over)
{
    long n = 0;
    for (size_t mi = 0; mi < catalog_n_models(cat); mi++)
        for (size_t hi = 0; hi < catalog_n_hw(cat); hi++)
            for (int k = 0; k < 16; k++) {
                const ccs_model *m = catalog_model_at(cat, mi);
                const ccs_hw *hw = catalog_hw_at(cat, hi);
                ccs_plan p;
                plan_defaults(&p);
                p.devices = 64;
                p.gbs = 64;
                p.seq = k & 1 ? 131072 : 32768;
                p.tp = k & 2 ? 8 : 1;
                p.cp = k & 4 ? 8 : 1;
                p.recompute = k & 8 ? CCS_RECOMPUTE_FULL : CCS_RECOMPUTE_NONE;
                p.zero = 3;
                p.flash_attn = 1;
                p.dtype = hw->peak_flops[CCS_BF16] > 0 ? CCS_BF16 : CCS_FP16;
                if (plan_derive(&p) != CCS_R_OK || plan_check(m, hw, &p) != CCS_R_OK)
                    continue;
                stack = catalog_stack_at(cat, (size_t)n % catalog_n_stacks(cat));
                ccs_result r;
                project(m, hw, 0, p, &r);
                n++;
                double u = useful_rate(m, hw, &p, &r), b = rate_bound(hw, p.dtype);
                if (u > b && (*failures)++ < 5)
                    fail_plan("useful FLOP rate above the best GEMM's (long sequence)", m, hw, &p,
                              u, b);
                *mfu_over += r.mfu > b;
            }
    return n;
}

/* One schedule decides gradient memory and DP traffic. Every model on every
 * device, 64 and 512 devices, tp 1 or 8, pp 1 or 4, mbs 1 or 2, each stack in
 * turn, more than one micro-batch: a ZeRO-2/3 plan A against the same plan B
 * at ZeRO-1 reducing its gradients once (A's dp_overlap, or last-microbatch
 * where A's is bucketed). If A keeps less memory it must move more DP bytes:
 * a shard of the gradients is kept only by reducing every micro-batch (ZeRO-2)
 * and sharded weights are gathered again (ZeRO-3). And ZeRO-1 against ZeRO-0
 * in the same mode: sharding the optimizer is free in bytes, a reduce-scatter
 * and an all-gather being the ring all-reduce's two halves (Rajbhandari et al.
 * 2020, section 7.2.1), lighter only where the gather moves 16-bit weights
 * (w bytes) in place of gradients (g bytes) and runs once, after the step,
 * where r reductions run (r = m bucketed, else 1): at least
 * (r g + w) / (2 r g) of ZeRO-0's bytes. Returns the pairs checked; counts violations. */
static long free_lunch(ccs_catalog *cat, long *failures)
{
    long n = 0;
    for (size_t mi = 0; mi < catalog_n_models(cat); mi++)
        for (size_t hi = 0; hi < catalog_n_hw(cat); hi++)
            for (int k = 0; k < 16 * 3; k++) {
                const ccs_model *m = catalog_model_at(cat, mi);
                const ccs_hw *hw = catalog_hw_at(cat, hi);
                ccs_plan a;
                plan_defaults(&a);
                a.devices = k & 1 ? 512 : 64;
                a.tp = k & 2 ? 8 : 1;
                a.pp = k & 4 ? 4 : 1;
                a.mbs = k & 8 ? 2 : 1;
                a.dp_overlap = (int8_t)(k / 16);
                a.seq = m->seq > 0 ? m->seq : 2048;
                a.gbs = m->gbs > 0 ? m->gbs : 512;
                a.dtype = hw->peak_flops[CCS_BF16] > 0 ? CCS_BF16 : CCS_FP16;
                if (plan_derive(&a) != CCS_R_OK || plan_check(m, hw, &a) != CCS_R_OK || a.dp < 2 ||
                    plan_micro_batches(&a) < 2)
                    continue;
                stack = catalog_stack_at(cat, (size_t)n % catalog_n_stacks(cat));
                ccs_plan b = a;
                b.zero = 1;
                if (b.dp_overlap == CCS_DPOV_BUCKETED)
                    b.dp_overlap = CCS_DPOV_LAST_MICRO;
                ccs_result rb, ra;
                project(m, hw, 0, b, &rb);
                for (int z = 2; z <= 3; z++) {
                    a.zero = (int8_t)z;
                    project(m, hw, 0, a, &ra);
                    n++;
                    if (ra.mem_total < rb.mem_total * (1 - EPS) &&
                        ra.dp_bytes <= rb.dp_bytes * (1 + EPS) && (*failures)++ < 5)
                        fail_plan("less memory than ZeRO-1 reducing once, no more DP bytes", m, hw,
                                  &a, ra.dp_bytes, rb.dp_bytes);
                }
                ccs_plan c = b;
                c.dp_overlap = a.dp_overlap;
                c.zero = 1;
                project(m, hw, 0, c, &rb);
                c.zero = 0;
                ccs_result r0;
                project(m, hw, 0, c, &r0);
                n++;
                /* reductions per iteration: every micro-batch's when bucketed; the
                 * gather runs once, after the step */
                double g = dtype_bytes(stack->grad_dtype), w = dtype_bytes(a.dtype);
                double red = c.dp_overlap == CCS_DPOV_BUCKETED ? plan_micro_batches(&c) : 1;
                if (rb.dp_bytes < r0.dp_bytes * (red * g + w) / (2 * red * g) * (1 - EPS) &&
                    (*failures)++ < 5)
                    fail_plan("ZeRO-1 lighter than its gather explains", m, hw, &c, rb.dp_bytes,
                              r0.dp_bytes);
            }
    return n;
}

static void test_invariants_sweep(void **state)
{
    (void)state;
    ccs_catalog *cat = test_cat();
    evo = catalog_evolution(cat, "memory-wall");
    assert_non_null(evo);
    static const int tps[] = {1, 2, 4, 8, 16}, pps[] = {1, 2, 4, 8}, mbss[] = {1, 2, 4};
    static const int devs[] = {64, 512};
    long checked = 0, failures = 0, mfu_over = 0;
    for (size_t mi = 0; mi < catalog_n_models(cat); mi++) {
        const ccs_model *m = catalog_model_at(cat, mi);
        for (size_t hi = 0; hi < catalog_n_hw(cat); hi++) {
            const ccs_hw *hw = catalog_hw_at(cat, hi);
            int dtype = hw->peak_flops[CCS_BF16] > 0 ? CCS_BF16 : CCS_FP16;
            for (size_t di = 0; di < 2; di++)
                for (size_t ti = 0; ti < 5; ti++)
                    for (size_t pi = 0; pi < 4; pi++)
                        for (size_t bi = 0; bi < 3; bi++)
                            for (int zero = 0; zero <= 3; zero++)
                                for (int sp = 0; sp <= 1; sp++)
                                    for (int dpov = 0; dpov <= 3; dpov++) {
                                        /* dpov 3: no DP overlap, context parallel 2 */
                                        ccs_plan p;
                                        plan_defaults(&p);
                                        p.cp = dpov == 3 ? 2 : 1;
                                        p.devices = devs[di];
                                        p.tp = tps[ti];
                                        p.pp = pps[pi];
                                        p.mbs = mbss[bi];
                                        p.seq = m->seq > 0 ? m->seq : 2048;
                                        p.gbs = m->gbs > 0 ? m->gbs : 512;
                                        p.dtype = (int8_t)dtype;
                                        p.zero = (int8_t)zero;
                                        p.sp = (int8_t)sp;
                                        p.dp_overlap = (int8_t)(dpov == 3 ? 0 : dpov);
                                        if (sp && p.tp == 1)
                                            continue;
                                        if (plan_derive(&p) != CCS_R_OK ||
                                            plan_check(m, hw, &p) != CCS_R_OK)
                                            continue;
                                        ccs_result r, q;
                                        stack = catalog_stack_at(cat, (size_t)checked %
                                                                          catalog_n_stacks(cat));
                                        double t = project(m, hw, 0, p, &r);
                                        checked++;
                                        double lim[] = {r.t_compute, r.t_tp_comm, r.t_dp_comm,
                                                        r.t_pp_comm, r.t_cp_comm};
                                        for (int k = 0; k < 5; k++)
                                            if (t < lim[k] * (1 - EPS)) {
                                                if (failures++ < 5)
                                                    fail_plan("iteration shorter than a part", m,
                                                              hw, &p, t, lim[k]);
                                            }
                                        double useful = useful_rate(m, hw, &p, &r);
                                        double bound = rate_bound(hw, dtype);
                                        if (useful > bound && failures++ < 5)
                                            fail_plan("useful FLOP rate above the best GEMM's", m,
                                                      hw, &p, useful, bound);
                                        mfu_over += r.mfu > bound;
                                        ccs_plan v = p;
                                        double prev = t;
                                        for (int rc = 1; rc <= 2; rc++) {
                                            v.recompute = (int8_t)rc;
                                            double tr = project(m, hw, 0, v, &q);
                                            if (tr < prev * (1 - EPS) && failures++ < 5)
                                                fail_plan("more recomputation faster", m, hw, &v,
                                                          tr, prev);
                                            prev = tr;
                                        }
                                        /* the stack's fused kernel against the unfused core
                                         * as Megatron runs it (fused softmax): one software
                                         * choice against another except under the default
                                         * stack, whose kernel is rated against the same GEMMs
                                         * (a measured Triton kernel is slower at short
                                         * sequences than that core is modelled) */
                                        v = p;
                                        v.flash_attn = 1;
                                        double tf = project(m, hw, 0, v, &q);
                                        if (stack->attn_kernel == CCS_ATTN_GEMM_REL &&
                                            tf > t * (1 + EPS) && failures++ < 5)
                                            fail_plan("flash attention slower", m, hw, &v, tf, t);
                                        v = p;
                                        v.net_bw_factor = 2;
                                        double tb = project(m, hw, 0, v, &q);
                                        if (tb > t * (1 + EPS) && failures++ < 5)
                                            fail_plan("faster links slower", m, hw, &v, tb, t);
                                        double tg = project(m, hw, 1, p, &q);
                                        if (tg > t * (1 + EPS) && failures++ < 5)
                                            fail_plan("next generation slower", m, hw, &p, tg, t);
                                    }
        }
    }
    long lunches = free_lunch(cat, &failures);
    printf("  %ld ZeRO pairs checked: less memory costs DP bytes (no free lunch)\n", lunches);
    assert_true(lunches >= 5000);
    long longs = long_sequences(cat, &failures, &mfu_over);
    printf("  %ld long-sequence plans (32k and 128k tokens) checked for the useful FLOP rate\n",
           longs);
    assert_true(longs >= 1000);
    printf("  %ld valid plans, each checked against all six invariants (iteration bounds, "
           "useful FLOP rate, recomputation, fused attention, 2x links, next generation): %ld "
           "violations; %ld plans report an mfu (attention unmasked) above the bound\n",
           checked, failures, mfu_over);
    assert_true(checked >= 100000);
    assert_true(catalog_n_stacks(cat) >= 4);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invariants_sweep),
    };
    return cmocka_run_group_tests_name("invariants", tests, test_catalog_setup,
                                       test_catalog_teardown);
}
