/* test_serve.c - the serving projection (src/cost/serve.c): hand-derived KV
 * capacity and decode steps for a dense and a mixture-of-experts model, the
 * invariants over generated plans, and the error against TensorRT-LLM's
 * published measurements (tests/data/inference_trtllm_perf.csv, a copy of
 * shared/validation/; its header says how each column was read). The error
 * table is printed; `build/tests/test_serve` shows it. */
#include "testutil.h"

#include "ccsweep/cost/serve.h"
#include "ccsweep/sweep/serve_search.h"
#include "ccsweep/sweep/serve_grid.h"

#include <ctype.h>

/* ---- hand-derived cases ----------------------------------------------------------- */

/* The catalog's model and hardware of those names (the test fails without). */
static void lookup(const char *model, const char *hwname, const ccs_model **m, const ccs_hw **hw)
{
    *m = catalog_model(test_cat(), model);
    *hw = catalog_hw(test_cat(), hwname);
    assert_non_null(*m);
    assert_non_null(*hw);
}

static void project_on(const char *model, const char *hwname, ccs_serve_plan *p,
                       ccs_serve_result *r, ccs_cost *c)
{
    const ccs_model *m;
    const ccs_hw *hw;
    lookup(model, hwname, &m, &hw);
    serve_cost_init(c, hw, p);
    serve_project(m, p, c, r);
}

/* isl = osl = 1000, fp8 weights and KV cache, tensor parallel tp, expert
 * parallel ep. */
static void plan_fp8(ccs_serve_plan *p, int tp, int ep)
{
    serve_plan_defaults(p);
    p->tp = tp;
    p->ep = ep;
    p->isl = p->osl = 1000;
    p->wdtype = p->kvdtype = CCS_S_FP8;
}

/* Llama 3 70B, fp8 weights and KV, TP 4 on H100 SXM, isl 1000 / osl 1000.
 * KV per token per device: 80 layers x 2 (K, V) x 8/4 heads x 128 x 1 byte =
 * 40960 B. Weights per device: per layer Q,O 2 x 8192 x 2048 + K,V 2 x 8192 x
 * 256 = 37.75M, FFN 3 x 8192 x 7168 = 176.2M, at 1 byte, + norms 4 x 8192 B:
 * 80 x 213.94 MB = 17.115 GB, + embedding and head 2 x 128256 / 4 x 8192 x 2
 * B = 1.0507 GB: 18.166 GB. Memory 80 GiB = 85.899 GB; the activation
 * workspace of max_num_tokens tokens (trtllm-bench: KV requests expected
 * (4 x 85.899 GB - 70.55 GB) x 0.95 / (2 x 80 x 8 x 128 x 1 x 2000 B) = 787.3
 * -> batch 128 x ceil(787.3 / 128) = 896, tokens 896 x 2 = 1792 -> 2048) is
 * 2048 x (4 x 8192 + 2 x 2048 + 2 x 28672 / 4) x 2 B + 896 x 32064 x 4 B =
 * 0.2097 + 0.1149 = 0.3246 GB. KV gets 0.9 x (85.899 - 18.166 - 0.325) =
 * 60.667 GB = 1.4811M tokens = 740 requests of 2000. */
static void test_kv_capacity_dense(void **state)
{
    (void)state;
    ccs_serve_plan p;
    plan_fp8(&p, 4, 1);
    ccs_serve_result r;
    ccs_cost c;
    project_on("llama3-70b", "h100-sxm", &p, &r, &c);
    assert_int_equal(r.status, CCS_ST_OK);
    assert_rel(r.kv_bytes_token, 40960, 1e-12);
    assert_rel(r.mem_weights, 18.166e9, 1e-3);
    assert_int_equal(r.max_num_tokens, 2048);
    assert_rel(r.mem_activations, 0.3246e9, 2e-3);
    assert_rel(r.kv_tokens, 1.4811e6, 2e-3);
    assert_int_equal(r.max_concurrency, 740);
}

/* Decode step of that plan at concurrency 64, mean context 1500. The weights
 * read (every layer's 213.9 MB + the 16-bit head 0.526 GB = 17.64 GB) stream at
 * 3.35 TB/s x 0.887 (STREAM) x 0.74 (skinny GEMMs) = 2.199 TB/s: 8.02 ms; the
 * KV cache, 80 x 64 x 1500 x 512 B = 3.93 GB at 2.971 TB/s: 1.32 ms; 9 kernels
 * a layer at 3 us: 2.16 ms. Two all-reduces a layer of 64 x 8192 x 2 B = 1 MiB,
 * each the fastest of NCCL's NVLink SHARP (its 25 us latency + 1 MiB / (450
 * GB/s x 0.611) = 28.81 us), NCCL's ring (14 us base + 6 x 1.9 us + 1.5 MiB /
 * 367.7 GB/s = 29.68 us) and one-shot (5.5 us + 3 MiB / 367.7 GB/s = 14.06
 * us): 80 x 2 x 14.06 us = 2.25 ms. So the step is at least 13.75 ms; the
 * activations and element-wise traffic add a few percent. */
static void test_decode_step_dense(void **state)
{
    (void)state;
    ccs_serve_plan p;
    plan_fp8(&p, 4, 1);
    ccs_cost c;
    ccs_serve_result r;
    project_on("llama3-70b", "h100-sxm", &p, &r, &c);
    const ccs_model *m = catalog_model(test_cat(), "llama3-70b");
    ccs_serve_step st;
    serve_step(m, &p, &c, 64, 1500, 0, &st);
    assert_true(st.t > 13.75e-3 && st.t < 14.5e-3);
    assert_rel(st.t_comm, 80 * 2 * (5.5e-6 + 3 * 1048576.0 / (450e9 * 0.817)), 1e-9);
    assert_rel(st.t_overhead, (80 * 9 + 1) * 3e-6, 1e-9); /* and the head GEMM */
    assert_rel(st.bytes_kv_read, 80 * 64 * 1500 * 512.0, 1e-12);
    assert_true(st.t_memory > st.t_compute); /* decode is memory-bound */
}

/* NVFP4 weights on B200's fp4 units, one decode token at context 1 (Llama 3
 * 70B, tp 1): the weights of the GEMMs, 80 x (Q,O 2 x 8192 x 8192 + K,V 2 x
 * 8192 x 1024 + FFN 3 x 8192 x 28672) = 68.45G at 0.5625 B = 38.50 GB, stream
 * at 7.7 TB/s x 0.865 x 0.30 (the CUTLASS NVFP4 rate, serve.c) = 1.998 TB/s:
 * 19.27 ms; the 16-bit head, 128256 x 8192 x 2 B = 2.101 GB at the skinny
 * rate 7.7 x 0.865 x 0.74 = 4.929 TB/s: 0.426 ms; 9 kernels a layer and the
 * head at 3 us: 2.163 ms. At least 21.86 ms: slower than the same step with
 * fp8 weights, 1.78x the bytes at 2.47x the rate. */
static void test_fp4_decode_step(void **state)
{
    (void)state;
    const ccs_model *m;
    const ccs_hw *hw;
    lookup("llama3-70b", "b200", &m, &hw);
    ccs_serve_step st[2];
    for (int i = 0; i < 2; i++) {
        ccs_serve_plan p;
        serve_plan_defaults(&p);
        p.isl = p.osl = 1000;
        p.wdtype = i ? CCS_S_FP4 : CCS_S_FP8;
        p.kvdtype = CCS_S_FP8;
        ccs_cost c;
        serve_cost_init(&c, hw, &p);
        serve_step(m, &p, &c, 1, 1, 0, &st[i]);
    }
    assert_true(st[1].t > 21.86e-3 && st[1].t < 21.95e-3);
    assert_true(st[1].t > st[0].t);
}

/* NVFP4 GEMMs at the fp4 efficiency the catalog measures (b200:
 * gemm_efficiency_fp4 0.611, pytorch/ao PR 2427, at k = 6144), not the fp8
 * one. Llama 3 70B, tp 1, one iteration of 8192 prompt tokens: every block's
 * four GEMMs are compute-bound (m = 8192 tokens, k >= 8192 > 6144, so the
 * depth term is 1). Their output tiles of 128 x 128 on 148 SMs: QKV 64 x 80 =
 * 5120 tiles in 35 waves (5120 / 5180 = 0.98842), out 64 x 64 = 4096 in 28
 * (4096 / 4144 = 0.98842), FFN up 64 x 448 = 28672 in 194 (28672 / 28712 =
 * 0.99861), down as out. At 9000 TFLOP/s x 0.611 x the sustained-clock
 * ratio 0.804, 2 x 8192 x 8192 x ((10240 + 8192 + 8192 x 3.5) / 0.98842 +
 * 57344 / 0.99861) FLOP a block, x 80 blocks: 255.2 ms. Halving the fp4
 * efficiency adds exactly that (nothing else in the iteration runs on the
 * fp4 units: the head is 16-bit); taking it away (gemm_efficiency_fp4 0)
 * falls back to the fp8 0.763, 0.611 / 0.763 of that time. */
static void test_fp4_prefill_gemms(void **state)
{
    (void)state;
    const ccs_model *m;
    const ccs_hw *hw;
    lookup("llama3-70b", "b200", &m, &hw);
    assert_true(hw->gemm_eff_fp4 == 0.611 && hw->gemm_fp4_ref_k == 6144);
    ccs_serve_plan p;
    serve_plan_defaults(&p);
    p.isl = 8192;
    p.osl = 128;
    p.wdtype = CCS_S_FP4;
    p.kvdtype = CCS_S_FP8;
    double per = 2.0 * 8192 * 8192 *
                 ((10240 + 8192 + 8192 * 3.5) / (5120.0 / 5180) + 57344 / (28672.0 / 28712));
    double gemms = 80 * per / (9000e12 * 0.611 * 0.804);
    ccs_hw v[3] = {*hw, *hw, *hw};
    v[1].gemm_eff_fp4 = 0.611 / 2;
    v[2].gemm_eff_fp4 = 0;
    ccs_serve_step st[3];
    for (int i = 0; i < 3; i++) {
        ccs_cost c;
        serve_cost_init(&c, &v[i], &p);
        assert_rel(c.sync_derate, 1, 1e-12); /* one device: no straggler */
        serve_step(m, &p, &c, 0, 0, 8192, &st[i]);
    }
    assert_rel(st[1].t - st[0].t, gemms, 1e-9);
    assert_rel(st[1].t_compute - st[0].t_compute, gemms, 1e-9);
    assert_rel(st[0].t - st[2].t, gemms * (1 - 0.611 / 0.763), 1e-9);
}

/* Mixtral 8x22B, fp8, TP 8 with EP 8 on H200: each device holds one whole
 * expert per layer. KV per token per device: 56 x 2 x 1 head x 128 x 1 B =
 * 14336 B. A decode step of 4 tokens routed top-2 of 8 touches, per device,
 * 1 - (6/8)^4 = 0.6836 of its expert (expected), whose 3 x 6144 x 16384 =
 * 302.0M weights stream at 4.8 TB/s x 0.865 x 0.74 = 3.072 TB/s: 0.6836 x
 * 98.3 us = 67.2 us per layer; at 256 tokens every expert is touched: 98.3 us. */
static void test_moe_expert_streaming(void **state)
{
    (void)state;
    ccs_serve_plan p;
    plan_fp8(&p, 8, 8);
    ccs_cost c;
    ccs_serve_result r;
    project_on("mixtral-8x22b", "h200", &p, &r, &c);
    assert_int_equal(r.status, CCS_ST_OK);
    assert_rel(r.kv_bytes_token, 14336, 1e-12);
    const ccs_model *m = catalog_model(test_cat(), "mixtral-8x22b");
    ccs_serve_step a, b;
    serve_step(m, &p, &c, 4, 1500, 0, &a);
    serve_step(m, &p, &c, 256, 1500, 0, &b);
    double expert = 3.0 * 6144 * 16384;
    /* weights read: attention (Q,O 6144 x 768 x 2, K,V 6144 x 128 x 2), the
     * router in 16 bits, the expected share of the expert, and the head */
    double attn = 6144.0 * 768 * 2 + 6144.0 * 128 * 2;
    double head = 32000.0 / 8 * 6144 * 2;
    assert_rel(a.bytes_weights, 56 * (attn + 6144 * 8 * 2 + (1 - pow(0.75, 4)) * expert) + head,
               1e-9);
    assert_rel(b.bytes_weights, 56 * (attn + 6144 * 8 * 2 + (1 - pow(0.75, 256)) * expert) + head,
               1e-9);
    assert_true(b.t > a.t);
    /* kernels a layer: input norm, QKV, rotary + KV write, decode attention,
     * output projection, residual + norm, router, the expand pass, the first
     * grouped GEMM, the activation, the second grouped GEMM and the finalize
     * pass (TensorRT-LLM's moe_kernels.cu): 12, and the head GEMM once */
    assert_rel(a.t_overhead, (56 * 12 + 1) * c.hw->kernel_lat, 1e-9);
}

/* DeepSeek-V3 latent attention: the cache holds 512 + 64 latent elements per
 * token per layer, the same on every rank (61 x 576 x 1 B = 35136 B at fp8). */
static void test_mla_kv(void **state)
{
    (void)state;
    ccs_serve_plan p;
    plan_fp8(&p, 8, 8);
    p.attn_dp = 1;
    ccs_cost c;
    ccs_serve_result r;
    project_on("deepseek-v3", "h200", &p, &r, &c);
    assert_int_equal(r.status, CCS_ST_OK);
    assert_rel(r.kv_bytes_token, 61 * 576, 1e-12);
    /* attention data parallel: 8 ranks each cache their own requests */
    assert_rel(r.kv_tokens, 8 * r.mem_kv / (61 * 576), 1e-12);
}

/* ---- bounded work ------------------------------------------------------------------- */

/* An iteration's cost is the pipeline's period, which its slowest stage sets
 * (serve_step); stages of the same dense-block count, first or not and last
 * or not cost the same, so an iteration costs a handful of stages whatever
 * pp is. Deep models (Llama 3 8B's and DeepSeek-V3's blocks, 1024 of them)
 * at pp 1024, 256 and 8: at most 5 stages costed each. */
static void test_stage_work(void **state)
{
    (void)state;
    const ccs_model *base[2];
    const ccs_hw *hw;
    lookup("llama3-8b", "h100-sxm", &base[0], &hw);
    lookup("deepseek-v3", "h100-sxm", &base[1], &hw);
    static const int32_t pps[] = {1024, 256, 8, 1};
    for (int k = 0; k < 2; k++) {
        ccs_model m = *base[k];
        m.layers = 1024;
        for (size_t i = 0; i < sizeof pps / sizeof pps[0]; i++) {
            ccs_serve_plan p;
            serve_plan_defaults(&p);
            p.pp = pps[i];
            p.isl = p.osl = 100;
            p.wdtype = p.kvdtype = CCS_S_FP8;
            ccs_cost c;
            serve_cost_init(&c, hw, &p);
            ccs_serve_step st;
            serve_step(&m, &p, &c, 64, 150, 64, &st);
            if (st.stages > 5 || st.stages < 1)
                fail_msg("%s x 1024 layers, pp %d: %d stages costed", m.name, p.pp, st.stages);
            assert_true(st.t > 0 && isfinite(st.t));
        }
    }
    /* the stages that stand for all: every stage st has the dense-block count
     * d(st) = min(max(D - st L, 0), L), the first-ness and the last-ness of
     * one of them no later than itself (D dense blocks of 1024, L = 1024 / pp) */
    static const int32_t dense[] = {0, 1, 3, 5, 100, 1023, 1024};
    for (size_t di = 0; di < sizeof dense / sizeof dense[0]; di++)
        for (int32_t pp = 1; pp <= 1024; pp *= 2) {
            ccs_model m = *base[1];
            m.layers = 1024;
            m.dense_layers = dense[di];
            int32_t rep[CCS_SERVE_STAGE_REPS], L = 1024 / pp;
            int n = serve_stage_reps(&m, pp, rep);
            assert_true(n >= 1 && n <= CCS_SERVE_STAGE_REPS);
            assert_true(rep[0] == 0 && rep[n - 1] == pp - 1);
            for (int i = 1; i < n; i++)
                assert_true(rep[i] > rep[i - 1]);
            for (int32_t st = 0; st < pp; st++) {
                int32_t d = dense[di] - st * L;
                d = d < 0 ? 0 : d > L ? L : d;
                int found = 0;
                for (int i = 0; i < n && rep[i] <= st; i++) {
                    int32_t dr = dense[di] - rep[i] * L;
                    dr = dr < 0 ? 0 : dr > L ? L : dr;
                    found |= dr == d && (rep[i] == 0) == (st == 0) &&
                             (rep[i] == pp - 1) == (st == pp - 1);
                }
                if (!found)
                    fail_msg("D %d, pp %d: stage %d stands for none", dense[di], pp, st);
            }
        }
}

/* ---- invariants over generated plans --------------------------------------------- */

/* Little's law at the steady state: each of the C requests in flight is in
 * the batch for its osl tokens, one every TPOT, so a replica's output rate
 * is C / TPOT (requests in flight over the time each spends per token). */
static void little(const ccs_serve_plan *p, const ccs_serve_result *r)
{
    double per_replica = r->tok_s_gpu * p->tp * p->pp;
    if (fabs(r->concurrency / r->tpot / per_replica - 1) > 1e-9)
        fail_msg("tp %d pp %d isl %d osl %d chunked %d: concurrency %d / TPOT %.6g s = %.6g "
                 "tokens/s, output %.6g",
                 p->tp, p->pp, p->isl, p->osl, p->chunked, r->concurrency, r->tpot,
                 r->concurrency / r->tpot, per_replica);
}

/* An endless stream at qps requests/s per replica (serve_at_rate without a
 * request count): a rate the replica serves comes out as qps x osl tokens/s
 * with Little's law, the mean in flight tokens/s x TPOT rounded up to the
 * concurrency; a rate past what it serves comes out as saturated, at the
 * most requests that fit and less than the offer. The served rate may pass
 * the offer where TPOT jumps with the concurrency (wave quantization leaves
 * no fixed point there, and the one just past the jump is taken): by 1% at
 * most. */
static void rate_point(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, double qps)
{
    ccs_serve_result r;
    int sat = serve_at_rate(m, p, c, qps, 0, &r);
    assert_true(sat == 0 || sat == 1);
    assert_int_equal(r.status, CCS_ST_OK);
    double served = r.tok_s_gpu * p->tp * p->pp, offered = qps * p->osl;
    double inflight = served * r.tpot;
    if (sat) {
        assert_int_equal(r.concurrency, r.max_concurrency);
        little(p, &r);
        assert_true(served < offered);
        return;
    }
    if (!(served >= offered * (1 - 1e-9) && served <= offered * 1.01))
        fail_msg("tp %d pp %d isl %d osl %d: %.6g requests/s offered, %.6g served", p->tp, p->pp,
                 p->isl, p->osl, qps, served / p->osl);
    if (!(inflight <= r.concurrency * (1 + 1e-9) && inflight > (r.concurrency - 1) * (1 - 1e-9)))
        fail_msg("tp %d pp %d isl %d osl %d chunked %d: %.6g in flight (%.6g tokens/s x TPOT "
                 "%.6g s), concurrency %d",
                 p->tp, p->pp, p->isl, p->osl, p->chunked, inflight, served, r.tpot, r.concurrency);
}

/* A finite run of n requests all at once: either the run's figures, within
 * CCS_SERVE_RUN_MAX_ITER iterations and no fewer than the n osl / C that its
 * refusals rest on (each request holds one of the C slots for osl
 * iterations at least), or a refusal naming the limit, with no figures. */
static void run_point(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, int32_t n)
{
    ccs_serve_result r;
    int rc = serve_at_rate(m, p, c, 0, n, &r);
    assert_int_equal(r.status, CCS_ST_OK);
    assert_true(r.iterations >= 0 && r.iterations <= CCS_SERVE_RUN_MAX_ITER);
    if (rc == CCS_EINPUT) {
        assert_true(r.ttft == 0 && r.tpot == 0 && r.tok_s_gpu == 0 && r.tok_s_system == 0);
        return;
    }
    assert_int_equal(rc, 1); /* all at once: more arrive than the replica serves */
    double C = fmin(n, r.concurrency);
    if (!(r.iterations >= (double)n * p->osl / C * (1 - 1e-12)))
        fail_msg("tp %d pp %d isl %d osl %d: %d requests, %g in flight, %lld iterations", p->tp,
                 p->pp, p->isl, p->osl, n, C, (long long)r.iterations);
    assert_true(r.ttft > 0 && r.tok_s_gpu > 0 && isfinite(r.ttft) && isfinite(r.tok_s_gpu));
    assert_true(p->osl == 1 || r.tpot > 0);
}

static void test_invariants(void **state)
{
    (void)state;
    static const char *const models[] = {"llama3-8b",    "llama3-70b",    "llama3-405b",
                                         "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3"};
    static const char *const hws[] = {"h100-sxm", "h200", "b200", "gb200-nvl72", "mi300x"};
    static const int tps[] = {1, 2, 4, 8};
    static const int isls[] = {128, 1000, 8192};
    static const int osls[] = {128, 1000, 4096};
    static const int concs[] = {1, 4, 16, 64, 256, 1024};
    const int wds[] = {CCS_S_BF16, CCS_S_FP8, CCS_S_FP4};
    long plans = 0, oom = 0, rates = 0, runs = 0;
    for (size_t mi = 0; mi < 6; mi++)
        for (size_t hi = 0; hi < 5; hi++)
            for (int gen = 0; gen < 4; gen++)
                for (size_t ti = 0; ti < 4; ti++)
                    for (int pp = 1; pp <= 2; pp++)
                        for (size_t ii = 0; ii < 3; ii++)
                            for (size_t oi = 0; oi < 3; oi++)
                                for (int w = 0; w < 3; w++)
                                    for (int ch = 0; ch < 2; ch++) {
                                        const ccs_model *m = catalog_model(test_cat(), models[mi]);
                                        ccs_hw hw;
                                        hw_evolve(catalog_hw(test_cat(), hws[hi]),
                                                  catalog_evolution(test_cat(), "memory-wall"), gen,
                                                  &hw);
                                        ccs_serve_plan p;
                                        serve_plan_defaults(&p);
                                        p.tp = tps[ti];
                                        p.pp = m->layers % pp ? 1 : pp;
                                        if (m->experts > 0)
                                            p.ep = p.tp;
                                        p.attn_dp = model_is_mla(m) && p.tp > 1;
                                        p.isl = isls[ii];
                                        p.osl = osls[oi];
                                        p.wdtype = (int8_t)wds[w];
                                        p.kvdtype = w == 0 ? CCS_S_BF16 : CCS_S_FP8;
                                        p.chunked = (int8_t)ch;
                                        ccs_cost c;
                                        serve_cost_init(&c, &hw, &p);
                                        double last = 0;
                                        for (size_t ci = 0; ci < 6; ci++) {
                                            p.concurrency = concs[ci];
                                            ccs_serve_result r;
                                            serve_project(m, &p, &c, &r);
                                            plans++;
                                            if (r.status == CCS_ST_INVALID)
                                                continue;
                                            if (r.status == CCS_ST_OOM) {
                                                /* does not fit: weights, or more
                                                 * requests than the KV cache holds */
                                                oom++;
                                                assert_true(r.max_concurrency < concs[ci] ||
                                                            r.mem_weights + r.mem_activations >
                                                                hw.mem_cap * 0.999);
                                                continue;
                                            }
                                            const ccs_serve_step *s = &r.step;
                                            assert_true(s->stages >= 1 &&
                                                        s->stages <= CCS_SERVE_STAGE_REPS);
                                            assert_true(isfinite(r.tpot) && r.tpot > 0);
                                            assert_true(s->t >= s->t_hbm_floor * (1 - 1e-12));
                                            assert_true(s->t >= s->t_flops_floor * (1 - 1e-12));
                                            assert_true(r.tpot >= s->t * (1 - 1e-12));
                                            assert_true(r.tpot >= last * (1 - 1e-9));
                                            last = r.tpot;
                                            assert_true(r.tok_s_gpu <=
                                                        r.tok_s_gpu_limit_mem * (1 + 1e-12));
                                            assert_true(r.tok_s_gpu <=
                                                        r.tok_s_gpu_limit_compute * (1 + 1e-12));
                                            assert_true(r.ttft > 0 && isfinite(r.ttft));
                                            little(&p, &r);
                                        }
                                        /* the offline point: as many as fit */
                                        p.concurrency = 0;
                                        ccs_serve_result r;
                                        serve_project(m, &p, &c, &r);
                                        plans++;
                                        if (r.status != CCS_ST_OK)
                                            continue;
                                        little(&p, &r);
                                        /* rates at half and twice what the full
                                         * replica serves (one format, gen 0) */
                                        if (gen == 0 && w == 1) {
                                            double top = r.concurrency / r.tpot / p.osl;
                                            rate_point(m, &p, &c, 0.5 * top);
                                            rate_point(m, &p, &c, 2 * top);
                                            rates += 2;
                                        }
                                        if (gen == 0 && w == 1 && hi == 0 && oi == 0) {
                                            run_point(m, &p, &c, r.max_concurrency + 1);
                                            run_point(m, &p, &c, 1 << 30);
                                            runs += 2;
                                        }
                                    }
    printf("serving invariants: %ld plans, %ld oom, %ld request rates, %ld finite runs\n", plans,
           oom, rates, runs);
    assert_true(plans >= 50000);
    /* pipelines of one block a stage (pp = layers: 32 to 126 stages), as many
     * requests as fit: still a few stages costed an iteration, Little's law,
     * and a finite run that ends within the limit or is refused */
    long deep = 0;
    for (size_t mi = 0; mi < 6; mi++)
        for (size_t hi = 0; hi < 5; hi++)
            for (size_t ti = 0; ti < 4; ti++) {
                const ccs_model *m = catalog_model(test_cat(), models[mi]);
                ccs_serve_plan p;
                plan_fp8(&p, tps[ti], m->experts > 0 ? tps[ti] : 1);
                p.pp = m->layers;
                p.attn_dp = model_is_mla(m) && p.tp > 1;
                ccs_cost c;
                serve_cost_init(&c, catalog_hw(test_cat(), hws[hi]), &p);
                ccs_serve_result r;
                serve_project(m, &p, &c, &r);
                if (r.status != CCS_ST_OK)
                    continue;
                deep++;
                assert_true(r.step.stages >= 1 && r.step.stages <= CCS_SERVE_STAGE_REPS);
                little(&p, &r);
                run_point(m, &p, &c, 2 * r.max_concurrency);
            }
    printf("serving invariants, pp = layers: %ld plans\n", deep);
    assert_true(deep >= 50);
}

/* ---- validation against TensorRT-LLM's published figures ------------------------- */

#define NF 32

/* Split one CSV line (quotes, "" escapes) into at most NF fields in place. */
static int csv_split(char *line, char **f)
{
    int n = 0;
    char *r = line, *w = line;
    while (n < NF) {
        f[n++] = w;
        if (*r == '"') {
            r++;
            for (;;) {
                if (*r == '"' && r[1] == '"') {
                    *w++ = '"';
                    r += 2;
                } else if (*r == '"') {
                    r++;
                    break;
                } else if (!*r)
                    break;
                else
                    *w++ = *r++;
            }
        }
        while (*r && *r != ',' && *r != '\n' && *r != '\r')
            *w++ = *r++;
        if (*r != ',') {
            *w = 0;
            break;
        }
        *w++ = 0;
        r++;
    }
    return n;
}

/* The catalog names for the table's (the architectures are the same:
 * Llama 3.1 and 3.3 keep Llama 3's shapes, DeepSeek-R1 is DeepSeek-V3's). */
static const char *cat_model(const char *s)
{
    static const char *const map[][2] = {
        {"llama3.1-8b", "llama3-8b"},       {"llama3.1-70b", "llama3-70b"},
        {"llama3.3-70b", "llama3-70b"},     {"llama3.1-405b", "llama3-405b"},
        {"mistral-7b", "mistral-7b"},       {"mixtral-8x7b", "mixtral-8x7b"},
        {"mixtral-8x22b", "mixtral-8x22b"}, {"deepseek-r1", "deepseek-v3"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i][0]))
            return map[i][1];
    return NULL;
}

static const char *cat_hw(const char *s)
{
    static const char *const map[][2] = {{"H200-SXM", "h200"},         {"H100-SXM", "h100-sxm"},
                                         {"GH200", "gh200"},           {"L40S", "l40s"},
                                         {"A100-SXM-80G", "a100-80g"}, {"B200", "b200"},
                                         {"GB200", "gb200-nvl72"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i][0]))
            return map[i][1];
    return NULL;
}

typedef struct tally {
    char name[32];
    int n;
    double abs, sgn;
} tally;

static void tally_add(tally *t, int *nt, const char *name, double e)
{
    int i = 0;
    while (i < *nt && strcmp(t[i].name, name))
        i++;
    if (i == *nt) {
        ccs_strlcpy(t[i].name, name, sizeof t[i].name);
        t[i].n = 0;
        t[i].abs = t[i].sgn = 0;
        (*nt)++;
    }
    t[i].n++;
    t[i].abs += fabs(e);
    t[i].sgn += e;
}

typedef struct worst {
    double e;
    char what[160];
} worst;

static void test_validation(void **state)
{
    (void)state;
    FILE *f = fopen("tests/data/inference_trtllm_perf.csv", "r");
    assert_non_null(f);
    static char line[8192];
    char *h[NF], hdr[8192];
    int nh = 0;
    while (fgets(line, sizeof line, f))
        if (line[0] != '#') {
            strcpy(hdr, line);
            nh = csv_split(hdr, h);
            break;
        }
    int col[NF];
    static const char *const want[] = {"model",    "gpu",          "tp",
                                       "ep",       "weight_dtype", "kv_dtype",
                                       "isl",      "osl",          "batch_or_concurrency",
                                       "scenario", "metric",       "value",
                                       "ttft_ms",  "tpot_ms",      "notes"};
    enum {
        MODEL,
        GPU,
        TP,
        EP,
        WD,
        KD,
        ISL,
        OSL,
        BATCH,
        SCEN,
        METRIC,
        VALUE,
        TTFT,
        TPOT,
        NOTES,
        NW
    };
    for (int k = 0; k < NW; k++) {
        col[k] = -1;
        for (int i = 0; i < nh; i++)
            if (!strcmp(h[i], want[k]))
                col[k] = i;
        assert_true(col[k] >= 0);
    }
    tally gpu[16], mod[16];
    int ngpu = 0, nmod = 0, n = 0, n_off = 0, skipped = 0, n_on = 0;
    double abs = 0, sgn = 0, on_ttft = 0, on_itl = 0, on_tput = 0;
    worst top[8];
    memset(top, 0, sizeof top);
    while (fgets(line, sizeof line, f)) {
        char *v[NF];
        if (line[0] == '#' || csv_split(line, v) < nh)
            continue;
        const char *mn = cat_model(v[col[MODEL]]), *hn = cat_hw(v[col[GPU]]);
        const ccs_model *m = mn ? catalog_model(test_cat(), mn) : NULL;
        const ccs_hw *hw = hn ? catalog_hw(test_cat(), hn) : NULL;
        if (!m || !hw) {
            skipped++;
            continue;
        }
        ccs_serve_plan p;
        serve_plan_defaults(&p);
        p.tp = atoi(v[col[TP]]);
        p.ep = *v[col[EP]] ? atoi(v[col[EP]]) : 1;
        /* the expert-parallel rows are DeepSeek's DEP (attention data parallel) */
        p.attn_dp = p.ep > 1 && model_is_mla(m);
        p.isl = atoi(v[col[ISL]]);
        p.osl = atoi(v[col[OSL]]);
        p.wdtype = (int8_t)serve_dtype_parse(v[col[WD]]);
        /* KV dtype not stated: the rows of a ModelOpt checkpoint ("checkpoint
         * nvidia/..." or "ModelOpt checkpoint", TensorRT-LLM's PyTorch backend)
         * get fp8, every other row the model's 16-bit type. Why: ModelOpt's
         * export writes an fp8 KV format into hf_quant_config.json unless told
         * otherwise (NVIDIA/TensorRT-Model-Optimizer examples/llm_ptq/hf_ptq.py,
         * --kv_cache_qformat default fp8), and TensorRT-LLM's loader adopts
         * it (tensorrt_llm/llmapi/llm_utils.py, _update_from_hf_quant_config).
         * The rows agree: the header finds these runs within 0.82-1.15x
         * (median 0.98) of the TensorRT-engine runs of the same model, GPU,
         * TP and lengths, whose KV is stated fp8; with a 16-bit cache they
         * would hold half the requests. The checkpoints' model cards say
         * only that the linear layers' weights and activations are
         * quantized, which says nothing of the cache either way. */
        if (*v[col[KD]])
            p.kvdtype = (int8_t)serve_dtype_parse(v[col[KD]]);
        else if (strstr(v[col[NOTES]], "checkpoint nvidia/") ||
                 strstr(v[col[NOTES]], "ModelOpt checkpoint"))
            p.kvdtype = CCS_S_FP8;
        else
            p.kvdtype = p.wdtype == CCS_S_FP16 ? CCS_S_FP16 : CCS_S_BF16;
        /* trtllm-bench's stated setting (the header: 0.95 "in majority of cases") */
        p.kv_fraction = 0.95;
        assert_true(p.wdtype >= 0 && p.kvdtype >= 0);
        int server = !strcmp(v[col[SCEN]], "server");
        if (server) {
            /* Triton's tensorrtllm_backend with its defaults (docs/model_config.md:
             * enable_chunked_context false, kv_cache_free_gpu_mem_fraction 0.9) on an
             * engine of trtllm-build's defaults (tensorrt_llm/builder.py BuildConfig:
             * max_num_tokens 8192), not trtllm-bench's tuned build */
            p.chunked = 0;
            p.max_num_tokens = 8192;
            p.kv_fraction = 0.9;
        }
        ccs_cost c;
        serve_cost_init(&c, hw, &p);
        ccs_serve_result r;
        if (server) {
            const char *q = strchr(v[col[BATCH]], '=');
            double qps = q && strcmp(q + 1, "INF") ? atof(q + 1) : 0;
            assert_true(serve_at_rate(m, &p, &c, qps, 500, &r) >= 0);
        } else {
            /* trtllm-bench's run: its num_requests (the notes) queued at once,
             * projected as that finite run; "not listed": the steady state */
            const char *nr = strstr(v[col[NOTES]], "num_requests ");
            int nreq = nr ? atoi(nr + 13) : 0;
            if (nreq > 0)
                assert_true(serve_at_rate(m, &p, &c, 0, nreq, &r) >= 0);
            else
                serve_project(m, &p, &c, &r);
        }
        if (r.status != CCS_ST_OK) {
            skipped++;
            continue;
        }
        double meas = atof(v[col[VALUE]]);
        int per_gpu = strstr(v[col[METRIC]], "PER GPU") != NULL;
        double pred = per_gpu ? r.tok_s_gpu : r.tok_s_gpu * p.tp * p.pp;
        double e = pred / meas - 1;
        /* CCS_SERVE_ROWS=1: every row's projection, to stderr */
        if (getenv("CCS_SERVE_ROWS"))
            fprintf(stderr,
                    "%s %s tp%d ep%d %s/%s %d/%d %s %s: %.0f vs %.0f (%+.1f%%), concurrency %d, "
                    "TPOT %.2f ms, step compute %.1f memory %.1f comm %.1f ms\n",
                    v[col[MODEL]], v[col[GPU]], p.tp, p.ep, v[col[WD]], serve_dtype_name(p.kvdtype),
                    p.isl, p.osl, v[col[SCEN]], v[col[BATCH]], pred, meas, 100 * e, r.concurrency,
                    r.tpot * 1e3, r.step.t_compute * 1e3, r.step.t_memory * 1e3,
                    r.step.t_comm * 1e3);
        if (getenv("CCS_SERVE_ROWS") && server)
            fprintf(stderr, "    online: TTFT %.1f vs %s ms, ITL %.2f vs %s ms\n", r.ttft * 1e3,
                    v[col[TTFT]], r.tpot * 1e3, v[col[TPOT]]);
        n++;
        abs += fabs(e);
        sgn += e;
        tally_add(gpu, &ngpu, v[col[GPU]], e);
        tally_add(mod, &nmod, v[col[MODEL]], e);
        if (server) {
            n_on++;
            on_tput += fabs(e);
            on_ttft += fabs(r.ttft * 1e3 / atof(v[col[TTFT]]) - 1);
            on_itl += fabs(r.tpot * 1e3 / atof(v[col[TPOT]]) - 1);
        } else
            n_off++;
        for (int i = 0; i < 8; i++)
            if (fabs(e) > fabs(top[i].e)) {
                memmove(&top[i + 1], &top[i], (7 - i) * sizeof top[0]);
                top[i].e = e;
                snprintf(top[i].what, sizeof top[i].what,
                         "%s %s tp%d ep%d %s/%s %d/%d %s %s: %.4g vs %.4g", v[col[MODEL]],
                         v[col[GPU]], p.tp, p.ep, v[col[WD]], serve_dtype_name(p.kvdtype), p.isl,
                         p.osl, v[col[SCEN]], v[col[BATCH]], pred, meas);
                break;
            }
    }
    fclose(f);
    printf("serving validation (output tokens/s, predicted / measured - 1):\n");
    printf("  all: %d rows (%d offline, %d online), %d not expressible; mean |err| %.1f%%, "
           "mean signed %+.1f%%\n",
           n, n_off, n_on, skipped, 100 * abs / n, 100 * sgn / n);
    for (int i = 0; i < ngpu; i++)
        printf("  gpu %-14s %4d rows  mean |err| %5.1f%%  signed %+6.1f%%\n", gpu[i].name, gpu[i].n,
               100 * gpu[i].abs / gpu[i].n, 100 * gpu[i].sgn / gpu[i].n);
    for (int i = 0; i < nmod; i++)
        printf("  model %-14s %4d rows  mean |err| %5.1f%%  signed %+6.1f%%\n", mod[i].name,
               mod[i].n, 100 * mod[i].abs / mod[i].n, 100 * mod[i].sgn / mod[i].n);
    if (n_on)
        printf("  online rows: %d, mean |err| tokens/s %.1f%%, TTFT %.1f%%, ITL %.1f%%\n", n_on,
               100 * on_tput / n_on, 100 * on_ttft / n_on, 100 * on_itl / n_on);
    printf("  largest errors:\n");
    for (int i = 0; i < 8 && top[i].what[0]; i++)
        printf("    %+6.1f%%  %s\n", 100 * top[i].e, top[i].what);
    /* The targets, asserted as such: mean |err| <= 15% and |mean signed
     * err| <= 8% over all rows, the online rows' TTFT and ITL within 25%,
     * and mean |err| <= 20% on every GPU type. */
    assert_int_equal(n, 760);
    assert_true(abs / n <= 0.15);
    assert_true(fabs(sgn / n) <= 0.08);
    assert_int_equal(n_on, 72);
    assert_true(on_ttft / n_on <= 0.25);
    assert_true(on_itl / n_on <= 0.25);
    assert_int_equal(ngpu, 7);
    for (int i = 0; i < ngpu; i++)
        assert_true(gpu[i].abs / gpu[i].n <= 0.20);
    /* README.md states the headline figures; they must be the ones printed here */
    char text[2][200];
    snprintf(text[0], sizeof text[0],
             "the output tokens/s error is %.1f%% mean absolute, %+.1f%% mean signed",
             100 * abs / n, 100 * sgn / n);
    snprintf(text[1], sizeof text[1],
             "Their mean inter-token latency is within %.1f%%, their TTFT within %.1f%%",
             100 * on_itl / n_on, 100 * on_ttft / n_on);
    for (int i = 0; i < 2; i++)
        assert_readme_says(text[i]);
}

/* Three engine iterations of a hand-built schedule, each {decode tokens,
 * their mean context, prompt tokens}: their times into t, their sum returned. */
static double iterations(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c,
                         const double it[3][3], double t[3])
{
    double sum = 0;
    for (int i = 0; i < 3; i++) {
        ccs_serve_step st;
        serve_step(m, p, c, it[i][0], it[i][1], it[i][2], &st);
        t[i] = st.t;
        sum += st.t;
    }
    return sum;
}

/* The finite run (serve_at_rate with a request count), iteration by
 * iteration as the scheduler goes, each iteration costed by serve_step:
 *   a. 4 prompts of 100 tokens at once, osl 3, a budget that holds them all:
 *      iteration 1 prefills 400 tokens (every request's first token),
 *      iterations 2 and 3 decode 4 requests at contexts 101 and 102;
 *   b. chunked, a budget of 150, 2 prompts of 100, osl 2: iteration 1 takes
 *      prompt 0 and 50 tokens of prompt 1, iteration 2 decodes request 0 (its
 *      last token, context 101) beside the 50 left of prompt 1, iteration 3
 *      decodes request 1;
 *   c. case a's plan, 2 requests 1000 s apart: each runs alone (prefill, then
 *      2 decode steps of 1), the output rate is 6 tokens over 1000 s + one
 *      request's run. */
static void test_finite_run(void **state)
{
    (void)state;
    const ccs_model *m;
    const ccs_hw *hw;
    lookup("llama3-8b", "h100-sxm", &m, &hw);
    ccs_serve_plan p;
    serve_plan_defaults(&p);
    p.isl = 100;
    p.osl = 3;
    p.max_num_tokens = 1024;
    ccs_cost c;
    serve_cost_init(&c, hw, &p);
    ccs_serve_result r;
    double t[3];
    /* a */
    serve_at_rate(m, &p, &c, 0, 4, &r);
    assert_int_equal(r.status, CCS_ST_OK);
    double sum =
        iterations(m, &p, &c, (const double[3][3]){{0, 0, 400}, {4, 101, 0}, {4, 102, 0}}, t);
    assert_rel(r.ttft, t[0], 1e-12);
    assert_rel(r.tpot, (t[1] + t[2]) / 2, 1e-12);
    assert_rel(r.tok_s_system, 12 / sum, 1e-12);
    /* b */
    p.osl = 2;
    p.max_num_tokens = 150;
    serve_at_rate(m, &p, &c, 0, 2, &r);
    assert_int_equal(r.status, CCS_ST_OK);
    sum = iterations(m, &p, &c, (const double[3][3]){{0, 0, 150}, {1, 101, 50}, {1, 101, 0}}, t);
    assert_rel(r.ttft, (t[0] + (t[0] + t[1])) / 2, 1e-12);
    assert_rel(r.tpot, (t[1] + t[2]) / 2, 1e-12);
    assert_rel(r.tok_s_system, 4 / sum, 1e-12);
    /* c (times measured from 1000 s keep ~13 digits) */
    p.osl = 3;
    p.max_num_tokens = 1024;
    serve_at_rate(m, &p, &c, 1e-3, 2, &r);
    assert_int_equal(r.status, CCS_ST_OK);
    sum = iterations(m, &p, &c, (const double[3][3]){{0, 0, 100}, {1, 101, 0}, {1, 102, 0}}, t);
    assert_rel(r.ttft, t[0], 1e-9);
    assert_rel(r.tpot, (t[1] + t[2]) / 2, 1e-9);
    assert_rel(r.tok_s_system, 6 / (1000 + sum), 1e-12);
}

/* A finite run longer than the simulation runs is refused, not replaced by
 * the steady state of an endless queue. Llama 3 8B on one H100, isl 100, osl
 * 100,000 (bf16): 100,100 tokens x 131,072 B of KV (32 layers x 2 x 8 heads x
 * 128 x 2 B) = 13.1 GB a request, so a few fit at once (max_concurrency);
 * each holds its slot for its osl iterations at least, so n requests take at
 * least n x osl / C iterations: 400 take more than 4M. A run that passes the
 * bound is simulated, its iterations counted and within the limit. */
static void test_finite_run_cap(void **state)
{
    (void)state;
    const ccs_model *m;
    const ccs_hw *hw;
    lookup("llama3-8b", "h100-sxm", &m, &hw);
    ccs_serve_plan p;
    serve_plan_defaults(&p);
    p.isl = 100;
    p.osl = 100000;
    ccs_cost c;
    serve_cost_init(&c, hw, &p);
    ccs_serve_result r;
    serve_project(m, &p, &c, &r);
    assert_int_equal(r.status, CCS_ST_OK);
    int32_t C = r.max_concurrency;
    assert_true(C >= 1 && C < 10);
    int32_t n = (int32_t)(2.0 * CCS_SERVE_RUN_MAX_ITER * C / p.osl); /* twice the bound */
    assert_int_equal(serve_at_rate(m, &p, &c, 0, n, &r), CCS_EINPUT);
    assert_true(r.iterations <= CCS_SERVE_RUN_MAX_ITER);
    assert_true(r.ttft == 0 && r.tpot == 0 && r.tok_s_gpu == 0);
    /* the bound is no estimate: past it, the run would have taken longer */
    n = C * 4; /* 4 waves of osl iterations: about 400,000 */
    assert_true(serve_at_rate(m, &p, &c, 0, n, &r) >= 0);
    assert_true(r.iterations >= (int64_t)n * p.osl / C && r.iterations <= CCS_SERVE_RUN_MAX_ITER);
    assert_true(r.ttft > 0 && r.tpot > 0 && r.tok_s_gpu > 0);
    /* a budget of 1 token an iteration makes each 100,000-token prompt take
     * 100,000 iterations, which the bound does not see: the cap is reached
     * while simulating, and the run refused all the same */
    p.isl = 100000;
    p.osl = 10;
    p.max_num_tokens = 1;
    serve_project(m, &p, &c, &r);
    assert_int_equal(r.status, CCS_ST_OK);
    n = 100;
    assert_true((double)n * p.osl / r.max_concurrency < CCS_SERVE_RUN_MAX_ITER);
    assert_int_equal(serve_at_rate(m, &p, &c, 0, n, &r), CCS_EINPUT);
    assert_int_equal(r.iterations, CCS_SERVE_RUN_MAX_ITER);
}

/* ---- the serving search ------------------------------------------------------------ */

/* search --serve against brute force: for every shape it reports, every
 * concurrency from 1 to the maximum projected and the best within the limits
 * kept (attention data parallelism over one rank is no plan of its own); the
 * search must find the same
 * tokens/s per GPU, and no shape it leaves out may have one within them. */
static void test_serve_search_brute(void **state)
{
    (void)state;
    static const struct {
        const char *model, *hw;
        int devices;
        double ttft, tpot;
    } jobs[] = {{"llama3-70b", "h100-sxm", 8, 1.0, 0.020},
                {"mixtral-8x22b", "h200", 8, 0.5, 0.015},
                {"llama3-8b", "b200", 4, 0.2, 0.005}};
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
        const ccs_model *m = catalog_model(test_cat(), jobs[j].model);
        const ccs_hw *hw = catalog_hw(test_cat(), jobs[j].hw);
        assert_non_null(m);
        assert_non_null(hw);
        ccs_serve_plan job;
        plan_fp8(&job, 1, 1);
        job.devices = jobs[j].devices;
        serve_limits lim = {jobs[j].ttft, jobs[j].tpot};
        serve_hit top[64];
        int n = 0;
        serve_search_stats st = {0};
        serve_search(m, hw, &job, &lim, top, 64, &n, &st);
        assert_true(n > 0 && n == st.meet && st.meet <= st.fit && st.fit <= st.plans);
        int found = 0;
        for (int tp = 1; tp <= job.devices; tp++)
            for (int pp = 1; pp <= job.devices / tp; pp++)
                for (int ep = 1; ep <= tp; ep++)
                    for (int adp = 0; adp < (tp > 1 ? 2 : 1); adp++) { /* tp 1: no DP */
                        ccs_serve_plan p = job;
                        p.tp = tp, p.pp = pp, p.ep = ep, p.attn_dp = (int8_t)adp;
                        if (job.devices % (tp * pp) || serve_plan_check(m, hw, &p) != CCS_R_OK)
                            continue;
                        ccs_cost c;
                        serve_cost_init(&c, hw, &p);
                        ccs_serve_result r;
                        serve_project(m, &p, &c, &r);
                        double best = 0;
                        for (int32_t k = 1; r.status == CCS_ST_OK && k <= r.max_concurrency; k++) {
                            ccs_serve_result rk;
                            p.concurrency = k;
                            serve_project(m, &p, &c, &rk);
                            if (rk.status == CCS_ST_OK && rk.ttft <= lim.ttft_max &&
                                rk.tpot <= lim.tpot_max)
                                best = fmax(best, rk.tok_s_gpu);
                        }
                        int at = -1;
                        for (int i = 0; i < n; i++)
                            if (top[i].plan.tp == tp && top[i].plan.pp == pp &&
                                top[i].plan.ep == ep && top[i].plan.attn_dp == adp)
                                at = i;
                        if (best == 0) {
                            assert_int_equal(at, -1);
                            continue;
                        }
                        assert_true(at >= 0);
                        assert_rel(top[at].r.tok_s_gpu, best, 1e-12);
                        found++;
                    }
        assert_int_equal(found, n);
        for (int i = 1; i < n; i++)
            assert_true(serve_best_cmp(&top[i - 1].plan, &top[i - 1].r, &top[i].plan, &top[i].r) <
                        0);
    }
}

/* search --serve of a 1024-layer model (Llama 3 8B's blocks) on 1024 devices:
 * every shape up to pp 1024 at every concurrency its KV cache holds, each
 * projection's iteration costing at most CCS_SERVE_STAGE_REPS stages, not pp:
 * the work grows with the concurrencies tried, not with pp^2. */
static void test_serve_search_work(void **state)
{
    (void)state;
    const ccs_model *base;
    const ccs_hw *hw;
    lookup("llama3-8b", "h100-sxm", &base, &hw);
    ccs_model m = *base;
    m.layers = 1024;
    ccs_serve_plan job;
    serve_plan_defaults(&job);
    job.devices = 1024;
    job.isl = job.osl = 100;
    serve_limits lim = {0, 0};
    serve_hit top[4];
    int n = 0;
    serve_search_stats st = {0};
    serve_search(&m, hw, &job, &lim, top, 4, &n, &st);
    assert_true(n > 0 && st.fit > 0);
    /* a shape of pp 1024 fits, so it is among those searched */
    ccs_serve_plan p = job;
    p.pp = 1024;
    ccs_cost c;
    serve_cost_init(&c, hw, &p);
    ccs_serve_result r;
    serve_project(&m, &p, &c, &r);
    assert_int_equal(r.status, CCS_ST_OK);
    printf("search --serve, 1024 layers on 1024 devices: %lld shapes, %lld projections, "
           "%lld stages costed\n",
           (long long)st.plans, (long long)st.projections, (long long)st.stages);
    assert_true(st.stages <= (int64_t)CCS_SERVE_STAGE_REPS * st.projections);
}

/* ---- serving sweeps ------------------------------------------------------------------ */

static serve_grid *grid_of(const char *text, ccs_err *err)
{
    return serve_grid_parse(text, strlen(text), "t.yaml", test_cat(), err);
}

/* A serving spec: the count is the product of the axes, a group is one
 * contiguous range of plan_n, and every index projects as serve_project
 * does for the same plan. */
static void test_serve_grid(void **state)
{
    (void)state;
    const char *text = "name: t\nworkload: serve\nmodels: [llama3-70b, mixtral-8x22b]\n"
                       "hardware: h100-sxm\ngenerations: {range: [0, 1]}\n"
                       "serve: {isl: [1000, 4000], osl: 1000, concurrency: [1, 64, max],\n"
                       "        weight_dtype: fp8, kv_dtype: [fp8, bf16]}\n"
                       "plan: {devices: 8, tp: [1, 2, 4, 8], ep: [1, 2], attn_dp: [false, true]}\n"
                       "keep: {best: 2, tpot_max_ms: 30}\n";
    ccs_err err;
    assert_int_equal(serve_spec_is_serve(text, strlen(text)), 1);
    assert_int_equal(serve_spec_is_serve("name: x\n", 8), 0);
    serve_grid *g = grid_of(text, &err);
    assert_non_null(g);
    assert_int_equal(serve_grid_count(g), 2 * 1 * 2 * 1 * 2 * 1 * 1 * 2 * 4 * 1 * 2 * 2 * 3);
    assert_int_equal(serve_grid_plan_n(g), 4 * 2 * 2 * 3);
    assert_int_equal(serve_grid_keep(g)->best, 2);
    assert_rel(serve_grid_keep(g)->lim.tpot_max, 0.030, 1e-12);
    assert_string_equal(serve_grid_evolution(g), "memory-wall");
    int ok = 0, invalid = 0;
    for (int64_t i = 0; i < serve_grid_count(g); i++) {
        serve_record rec;
        serve_grid_eval(g, i, &rec);
        assert_int_equal(rec.idx, i);
        if (rec.r.status == CCS_ST_INVALID) {
            invalid++;
            continue;
        }
        ok += rec.r.status == CCS_ST_OK;
        ccs_serve_plan p = rec.plan;
        ccs_cost c;
        ccs_serve_result r;
        const ccs_hw *hw = serve_grid_hw(g, (size_t)rec.hw, (size_t)rec.gen_i);
        serve_cost_init(&c, hw, &p);
        serve_project(serve_grid_model(g, (size_t)rec.model), &p, &c, &r);
        assert_int_equal(r.status, rec.r.status);
        assert_true(r.tok_s_gpu == rec.r.tok_s_gpu && r.ttft == rec.r.ttft);
        assert_int_equal(rec.plan.devices, 8);
        if (i / serve_grid_plan_n(g) == 0)
            assert_true(rec.model == 0 && rec.gen == 0 && rec.plan.isl == 1000);
    }
    /* llama: ep 2 and attention DP are invalid for a dense model */
    assert_true(ok > 0 && invalid > 0);
    serve_grid_free(g);

    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"workload: serve\nmodels: llama3-70b\nhardware: h100\nserve: {isl: 1, osl: 1}\n",
         "unknown hardware 'h100'"},
        {"workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {osl: 1}\n",
         "'isl' is required"},
        {"workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {isl: 1, osl: 1,"
         " weight_dtype: fp5}\n",
         "expected bf16, fp16, fp8 or fp4"},
        {"workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {isl: 1, osl: 1,"
         " concurrency: lots}\n",
         "concurrency"},
        {"workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {isl: 1, osl: 1}\n"
         "plan: {gbs: 8}\n",
         "unknown key 'gbs'"},
        {"workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {isl: 1, osl: 1}\n"
         "keep: {best: 0}\n",
         "keep.best"},
        /* a value twice sweeps the same scenarios twice */
        {"workload: serve\nmodels: [llama3-70b, llama3-8b, llama3-70b]\nhardware: h100-sxm\n"
         "serve: {isl: 1, osl: 1}\n",
         "field 'models': 'llama3-70b' is listed twice (first at line 2)"},
        {"workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {isl: [100, 200,\n"
         "  100], osl: 1}\n",
         "t.yaml:5:3: field 'isl': '100' is listed twice (first at line 4)"},
        {"workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {isl: 1, osl: 1,"
         " concurrency: [max, 8, max]}\n",
         "field 'concurrency': 'max' is listed twice"},
        {"workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {isl: 1, osl: 1}\n"
         "plan: {attn_dp: [false, no]}\n",
         "field 'attn_dp': 'no' is listed twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        g = grid_of(bad[i].text, &err);
        assert_null(g);
        if (!strstr(err.msg, bad[i].msg))
            fail_msg("spec %zu: '%s' lacks '%s'", i, err.msg, bad[i].msg);
        assert_non_null(strstr(err.msg, "t.yaml:"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_capacity_dense),    cmocka_unit_test(test_decode_step_dense),
        cmocka_unit_test(test_moe_expert_streaming), cmocka_unit_test(test_mla_kv),
        cmocka_unit_test(test_invariants),           cmocka_unit_test(test_validation),
        cmocka_unit_test(test_finite_run),           cmocka_unit_test(test_finite_run_cap),
        cmocka_unit_test(test_fp4_decode_step),      cmocka_unit_test(test_fp4_prefill_gemms),
        cmocka_unit_test(test_serve_search_brute),   cmocka_unit_test(test_serve_grid),
        cmocka_unit_test(test_stage_work),           cmocka_unit_test(test_serve_search_work),
    };
    return cmocka_run_group_tests_name("serve", tests, test_catalog_setup, test_catalog_teardown);
}
