/* test_opcost.c - synthetic operator curves and hardware evolution, against
 * hand calculations from the catalog's a100-80g figures. */
#include "testutil.h"

#include "ccsweep/cost/attention.h"
#include "ccsweep/cost/opcost.h"

/* Wave quantization on 108 SMs with 256x128 tiles: the MAMF best shape
 * 6912 x 16384 fills 27*128 = 3456 tiles = exactly 32 waves; a 2048 x 4608
 * output makes 8*36 = 288 tiles in 3 waves of 108, i.e. 288/324 useful. */
static void test_wave_efficiency(void **state)
{
    (void)state;
    const ccs_hw *a = catalog_hw(test_cat(), "a100-80g");
    assert_rel(cost_wave_efficiency(a, 6912, 16384, 1), 1.0, 1e-12);
    assert_rel(cost_wave_efficiency(a, 2048, 4608, 1), 288.0 / 324, 1e-12);
    /* a ragged edge also wastes tile area: 100 x 100 in one 256x128 tile of 108 slots */
    assert_rel(cost_wave_efficiency(a, 100, 100, 1), 1e4 / (108.0 * 256 * 128), 1e-12);
}

static ccs_op gemm(double m, double n, double k)
{
    ccs_op o;
    memset(&o, 0, sizeof o);
    o.kind = CCS_OP_GEMM;
    o.dtype = CCS_BF16;
    o.m = m;
    o.n = n;
    o.k = k;
    o.batch = 1;
    o.count = 1;
    o.flops = 2 * m * n * k;
    o.bytes = (m * k + k * n + m * n) * 2;
    return o;
}

/* Single device: t = flops / (312e12 * 0.859 * wave) + 3 us launch, at the
 * shape the catalog's efficiency was measured at (6912 x 2048 x 16384, M x N x
 * K: full waves of 256 x 128 tiles on 108 SMs, depth gemm_ref_k). */
static void test_gemm_roofline(void **state)
{
    (void)state;
    const ccs_hw *a = catalog_hw(test_cat(), "a100-80g");
    ccs_plan p;
    plan_defaults(&p);
    p.devices = 1;
    ccs_cost c;
    cost_init(&c, a, NULL, NULL, 0, &p);
    ccs_op o = gemm(6912, 2048, 16384);
    ccs_optime t;
    cost_op(&c, &o, &t);
    assert_rel(t.t, o.flops / (312e12 * a->gemm_eff) + a->kernel_lat, 1e-12);
    assert_true(t.lo == t.t && t.hi == t.t && t.extrap == 0);
    /* a matrix-vector-like GEMM is bandwidth bound: bytes / (2039e9 * mem_eff) */
    o = gemm(8192, 8192, 1);
    cost_op(&c, &o, &t);
    assert_rel(t.t, o.bytes / (2039e9 * a->mem_eff) + a->kernel_lat, 1e-12);
    /* multi-device plans compute at the slowest device: the expected maximum
     * of 8 standard normals is 1.42360 (Harter 1961, "Expected values of
     * normal order statistics", Biometrika 48, table), so the slowest of 8
     * runs 1.4236 sigma below the mean; Blom's approximation is within 1% */
    p.devices = 8;
    cost_init(&c, a, NULL, NULL, 0, &p);
    o = gemm(6912, 2048, 16384);
    cost_op(&c, &o, &t);
    double slow8 = 1 - 1.42360 * a->variability;
    assert_rel(t.t - a->kernel_lat, o.flops / (312e12 * a->gemm_eff * slow8),
               0.01 * 1.42360 * a->variability);
    /* the derate grows with the synchronized devices: 100 -> 2.50759 sigma */
    assert_rel(cost_straggler_derate(0.02, 100), 1 - 2.50759 * 0.02, 0.01 * 2.50759 * 0.02);
    assert_rel(cost_straggler_derate(0.02, 8), 1 - 1.42360 * 0.02, 0.01 * 1.42360 * 0.02);
    assert_true(cost_straggler_derate(0.02, 1) == 1.0);
    assert_true(cost_straggler_derate(0.02, 4096) < cost_straggler_derate(0.02, 512));
}

/* GEMM cost by shape against measurements it was not fitted to: XLA's
 * published H100 bf16 GEMM table (tensorflow/tensorflow, third_party/xla/xla/
 * service/gpu/model/matmul_interpolator_data.h, sm_90 entries; TFLOP/s per
 * batch x m x n x k). The per-tile cost was fitted to the 4096 x 4096 rows
 * (src/cost/opcost.c); these rows have other m, n and batch. The model's domain:
 * outputs that fill the 132 SMs at least once in 256 x 128 tiles, kernels
 * long enough (>= 30 us) that the 3 us launch latency stays under 10%. The
 * table times one GEMM at a time, which runs at the boost clock: the
 * catalog's clock_ratio (the sustained clock under a training step's combined
 * load) is taken out here. */
static void test_gemm_shapes_h100(void **state)
{
    (void)state;
    const ccs_hw *h100 = catalog_hw(test_cat(), "h100-sxm");
    assert_non_null(h100);
    assert_true(h100->clock_ratio < 1.0);
    ccs_hw boost = *h100;
    boost.clock_ratio = 1.0;
    const ccs_hw *h = &boost;
    ccs_cost c;
    cost_init(&c, h, NULL, NULL, 0, NULL); /* one device */
    static const double rows[][5] = {
        {4, 2048, 2048, 2048, 725.7}, {2, 4096, 1024, 4096, 750.6}, {2, 2048, 4096, 1024, 678.7},
        {4, 4096, 1024, 1024, 673.8}, {4, 1024, 2048, 2048, 712.7},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ccs_op o;
        memset(&o, 0, sizeof o);
        o.kind = CCS_OP_BMM;
        o.dtype = CCS_BF16;
        o.batch = rows[i][0];
        o.m = rows[i][1];
        o.n = rows[i][2];
        o.k = rows[i][3];
        o.flops = 2 * o.m * o.n * o.k * o.batch;
        o.bytes = (o.m * o.k + o.k * o.n + o.m * o.n) * 2 * o.batch;
        o.count = 1;
        double tflops = o.flops / cost_synthetic(&c, &o) / 1e12;
        printf("  b%.0f %5.0f x %5.0f x %5.0f: %6.1f TFLOP/s, measured %6.1f (%+.1f%%)\n", o.batch,
               o.m, o.n, o.k, tflops, rows[i][4], 100 * (tflops / rows[i][4] - 1));
        assert_rel(tflops, rows[i][4], 0.10);
    }
    /* a shallow GEMM pays its per-tile cost: k = 128 runs well below k = 4096 */
    assert_true(cost_gemm_k_efficiency(h, CCS_BF16, 128) < 0.6);
    assert_rel(cost_gemm_k_efficiency(h, CCS_BF16, 4096), 1.0, 1e-12);
    /* the catalog figure is the best of a shape search: a GEMM deeper than
     * that best shape does not beat it (b200: best at k = 3072) */
    const ccs_hw *b200 = catalog_hw(test_cat(), "b200");
    assert_int_equal(b200->gemm_ref_k, 3072);
    assert_true(cost_gemm_k_efficiency(b200, CCS_BF16, 1024) < 1.0);
    assert_true(cost_gemm_k_efficiency(b200, CCS_BF16, 16384) == 1.0);
}

/* fp8: linear-layer GEMMs at the fp8 peak and the fp8 efficiency measured
 * for the device (h100-sxm: 0.709 of 1979 at k = 14336, cited in the
 * catalog) at the sustained clock, attention kept in bf16. */
static void test_fp8(void **state)
{
    (void)state;
    const ccs_hw *h = catalog_hw(test_cat(), "h100-sxm");
    ccs_cost c;
    cost_init(&c, h, NULL, NULL, 0, NULL); /* one device */
    assert_int_equal(h->gemm_fp8_ref_k, 14336);
    ccs_op o = gemm(8192, 8192, 14336);
    o.dtype = CCS_FP8;
    o.bytes /= 2;
    double t = cost_synthetic(&c, &o);
    double eff = cost_gemm_shape_efficiency(h, CCS_FP8, 8192, 8192, 14336, 1);
    assert_rel(t - h->kernel_lat, o.flops / (1979e12 * 0.709 * 0.795 * eff), 1e-12);
    /* at its measured depth only wave quantization remains */
    assert_rel(eff, cost_wave_efficiency(h, 8192, 8192, 1), 1e-12);

    const ccs_model *m = catalog_model(test_cat(), "gpt3-175b");
    ccs_plan p;
    plan_defaults(&p);
    p.tp = 8;
    p.devices = 8;
    p.gbs = p.mbs = 1;
    p.seq = 2048;
    p.dtype = CCS_FP8;
    for (int flash = 0; flash <= 1; flash++) {
        p.flash_attn = (int8_t)flash;
        ccs_oplist ops;
        regions_build(m, &p, 8, &ops);
        int fp8_gemms = 0, attn16 = 0;
        for (int i = 0; i < ops.n; i++) {
            const ccs_op *op = &ops.ops[i];
            if (op->kind == CCS_OP_ATTENTION || op->kind == CCS_OP_BMM) {
                assert_int_equal(op->dtype, CCS_BF16);
                attn16++;
            } else if (op->kind == CCS_OP_GEMM) {
                /* the output layer is not a Transformer Engine module */
                int head = op->region == CCS_RG_HEAD_FWD || op->region == CCS_RG_HEAD_BWD;
                assert_int_equal(op->dtype, head ? CCS_BF16 : CCS_FP8);
                fp8_gemms += !head;
            }
        }
        assert_true(fp8_gemms > 0 && attn16 > 0);
    }

    /* the casts to fp8, by hand for gpt3-175b at tp 8, mbs 1, seq 2048
     * (tokens 2048, h 12288, 12 heads of 128 and 6144 FFN columns per rank):
     * forward, the attention output (2048 x 1536) and the FFN activation
     * (2048 x 6144); backward, the output gradients of the projection and
     * FC2 (2048 x 12288 each), QKV (2048 x 4608) and FC1 (2048 x 6144); 4
     * bytes moved per element (read 16-bit, write two 8-bit layouts) */
    double fwd_bytes[2] = {0, 0}, bwd_bytes[2] = {0, 0};
    for (int fp8 = 0; fp8 <= 1; fp8++) {
        p.dtype = fp8 ? CCS_FP8 : CCS_BF16;
        p.flash_attn = 1;
        ccs_oplist ops;
        regions_build(m, &p, 8, &ops);
        for (int i = 0; i < ops.n; i++) {
            const ccs_op *op = &ops.ops[i];
            if (op->kind != CCS_OP_ELEMENTWISE)
                continue;
            if (op->region == CCS_RG_FWD_ATTN || op->region == CCS_RG_FWD_MLP)
                fwd_bytes[fp8] += op->bytes * op->count;
            if (op->region == CCS_RG_BWD_ATTN || op->region == CCS_RG_BWD_MLP)
                bwd_bytes[fp8] += op->bytes * op->count;
        }
    }
    assert_rel(fwd_bytes[1] - fwd_bytes[0], 4.0 * 2048 * (1536 + 6144), 1e-12);
    assert_rel(bwd_bytes[1] - bwd_bytes[0], 4.0 * 2048 * (12288 + 4608 + 12288 + 6144), 1e-12);
}

/* Fused attention: FlashAttention-2's published A100 utilization, 73% of peak
 * forward and 63% backward (Dao 2023, arXiv 2307.08691, section 4), against
 * the 85.9% GEMM figure of the catalog: a compute-bound attention kernel runs
 * at 0.85 (forward, recompute) and 0.73 (backward) of the GEMM rate. */
static void test_attention_efficiency(void **state)
{
    (void)state;
    const ccs_hw *a = catalog_hw(test_cat(), "a100-80g");
    ccs_cost c;
    cost_init(&c, a, NULL, NULL, 0, NULL); /* one device */
    ccs_op o;
    memset(&o, 0, sizeof o);
    o.kind = CCS_OP_ATTENTION;
    o.dtype = CCS_BF16;
    o.flops = 1e13; /* compute-bound: 1e13 FLOPs over 1 MB */
    o.bytes = 1e6;
    o.count = 1;
    int regions[] = {CCS_RG_FWD_ATTN, CCS_RG_RECOMP_ATTN, CCS_RG_BWD_ATTN};
    double want[] = {0.73 / 0.859, 0.73 / 0.859, 0.63 / 0.859};
    for (int i = 0; i < 3; i++) {
        o.region = (uint8_t)regions[i];
        double t = cost_synthetic(&c, &o) - a->kernel_lat;
        double rel = o.flops / t / (312e12 * a->gemm_eff);
        assert_rel(rel, want[i], 0.01);
    }
}

/* Collectives: alpha-beta ring plus NCCL's base latency (14.0 us, Ring LL128
 * in NCCL's src/graph/tuning.cc). Intra-node all-reduce of 64 MiB over 8
 * V100 (no measured curve in the catalog): 14 us + 14 steps x the per-step
 * latency + 2*7/8 * 64 MiB / (the NVLink rate x its efficiency). On 8 A100,
 * whose entry carries nccl-tests' measured curve ([AR-A100]), the same
 * all-reduce takes the measured 581.9 us. */
/* The ring all-reduce of `bytes` over 8 ranks inside a node of h, as the
 * comment above writes it out. */
static double ring8(const ccs_hw *h, double bytes)
{
    return 14e-6 + 14 * h->intra_lat + 1.75 * bytes / (h->intra_bw * h->intra_eff);
}

static void test_collective(void **state)
{
    (void)state;
    const ccs_hw *v = catalog_hw(test_cat(), "v100");
    const ccs_hw *a = catalog_hw(test_cat(), "a100-80g");
    ccs_cost c;
    cost_init(&c, v, NULL, NULL, 0, NULL);
    ccs_op o;
    memset(&o, 0, sizeof o);
    o.kind = CCS_OP_ALLREDUCE;
    o.bytes = 64.0 * 1048576;
    o.group = 8;
    o.per_node = 8;
    o.count = 1;
    ccs_optime t;
    cost_op(&c, &o, &t);
    assert_rel(t.t, ring8(v, o.bytes), 1e-12);
    cost_init(&c, a, NULL, NULL, 0, NULL);
    cost_op(&c, &o, &t);
    assert_rel(t.t, 581.9e-6, 1e-12);
    /* below the curve's smallest size (256 KiB, 47.94 us) the ring model
     * keeps the measured / model ratio there: 128 KiB takes ring(128 KiB) x
     * 47.94 us / ring(256 KiB) */
    o.bytes = 131072;
    cost_op(&c, &o, &t);
    assert_rel(t.t, ring8(a, 131072) * 47.94e-6 / ring8(a, 262144), 1e-12);
    o.bytes = 64.0 * 1048576;
    /* across nodes, one member per node: each rank's own NIC */
    o.per_node = 1;
    cost_op(&c, &o, &t);
    double expect = 14e-6 + 14 * a->inter_lat + 1.75 * o.bytes / (a->inter_bw * a->inter_eff);
    assert_rel(t.t, expect, 1e-12);
    /* 8 members per node share the node's 8 NICs: limited by min(NVLink, 8 NICs).
     * Over 8 nodes the double binary tree's 2 log2(8) network steps beat the
     * ring's 126 at 64 MiB: the tree runs, moving the buffer twice */
    o.group = 64;
    o.per_node = 8;
    cost_op(&c, &o, &t);
    double bw = fmin(a->intra_bw * a->intra_eff, 8 * a->inter_bw * a->inter_eff);
    double ring = 14e-6 + 126 * a->inter_lat + 2 * 63.0 / 64 * o.bytes / bw;
    double tree = 14e-6 + 2 * 3 * a->inter_lat + 2 * 7 * a->intra_lat + 2 * o.bytes / bw;
    assert_true(tree < ring);
    assert_rel(t.t, tree, 1e-12);
    /* 8 GiB: bandwidth dominates, the ring's 2 (n-1)/n beats the tree's 2 */
    o.bytes = 8 * 1073741824.0;
    cost_op(&c, &o, &t);
    assert_rel(t.t, 14e-6 + 126 * a->inter_lat + 2 * 63.0 / 64 * o.bytes / bw, 1e-12);
}

/* In-switch all-reduce (NVLink SHARP) where the catalog has its measured
 * bandwidth: on 8 h100-sxm 1 GiB takes NCCL's NVLS latency, 25 us
 * (src/graph/tuning.cc, hwLatencies NVLink NVLS Simple), + S / (450 GB/s x
 * 0.611) (nccl-tests issue 212: algbw ~275 GB/s), faster than the ring's
 * 1.75 S / (450 x 0.817). At 1 MiB: NVLS 25 + 3.81 = 28.8 us against the
 * ring's 14 + 14 x 1.9 + 4.99 = 45.6 us. a100 has none and keeps the ring. */
static void test_nvls(void **state)
{
    (void)state;
    /* the analytic model alone: the entry without its measured curves */
    ccs_hw hh = *catalog_hw(test_cat(), "h100-sxm");
    memset(hh.ar, 0, sizeof hh.ar);
    const ccs_hw *h = &hh;
    ccs_cost c;
    cost_init(&c, h, NULL, NULL, 0, NULL);
    ccs_op o;
    memset(&o, 0, sizeof o);
    o.kind = CCS_OP_ALLREDUCE;
    o.bytes = 1073741824.0;
    o.group = o.per_node = 8;
    o.count = 1;
    double t = cost_synthetic(&c, &o);
    assert_rel(t, 25e-6 + o.bytes / (450e9 * 0.611), 1e-12);
    assert_true(t < 14e-6 + 14 * h->intra_lat + 1.75 * o.bytes / (450e9 * h->intra_eff));
    o.bytes = 1048576.0;
    assert_rel(cost_synthetic(&c, &o), 28.81e-6, 1e-3);
    /* a scale-up domain of 72: tp 8 and dp 9 stay on NVLink in gb200-nvl72 */
    const ccs_hw *g = catalog_hw(test_cat(), "gb200-nvl72");
    assert_non_null(g);
    assert_int_equal(hw_scaleup(g), 72);
    assert_int_equal(hw_scaleup(h), 8);
}

/* A measured all-reduce curve (catalog allreduce_us) replaces the analytic
 * time inside the domain. h100-sxm carries vllm-project/vllm PR 42324's
 * SM 9.0 world-size-8 pynccl times: 16 MiB 0.121 ms, 32 MiB 0.195 ms, 64 MiB
 * 0.316 ms, 128 MiB 0.561 ms. Between points the time is linear: 24 MiB
 * (121 + 195) / 2 = 158 us; above the last the last segment's slope: 256 MiB
 * 561 + 2 x (561 - 316) = 1051 us. Another group size takes the curve times
 * the analytic model's ratio (4 vs 8 ranks), and faster links the ratio of
 * the model on them to the model on the measured links. */
static void test_allreduce_measured(void **state)
{
    (void)state;
    const ccs_hw *h = catalog_hw(test_cat(), "h100-sxm");
    ccs_hw bare = *h;
    memset(bare.ar, 0, sizeof bare.ar);
    ccs_cost c, cb;
    cost_init(&c, h, NULL, NULL, 0, NULL);
    cost_init(&cb, &bare, NULL, NULL, 0, NULL);
    ccs_op o;
    memset(&o, 0, sizeof o);
    o.kind = CCS_OP_ALLREDUCE;
    o.group = o.per_node = 8;
    o.count = 1;
    const double mib = 1048576.0;
    const double pts[][2] = {{16, 121e-6},  {32, 195e-6}, {64, 316e-6},
                             {128, 561e-6}, {24, 158e-6}, {256, 1051e-6}};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        o.bytes = pts[i][0] * mib;
        assert_rel(cost_synthetic(&c, &o), pts[i][1], 1e-9);
    }
    /* the measured curve is slower than latency + size / bandwidth at medium sizes */
    o.bytes = 32 * mib;
    assert_true(cost_synthetic(&cb, &o) < 0.8 * 195e-6);
    /* 4 ranks: the 8-rank curve times the model's 4 / 8 ratio */
    double m8 = cost_synthetic(&cb, &o);
    o.group = o.per_node = 4;
    double m4 = cost_synthetic(&cb, &o);
    assert_rel(cost_synthetic(&c, &o), 195e-6 * m4 / m8, 1e-9);
    /* links 1.4x faster: the ratio of the model on them, and faster */
    o.group = o.per_node = 8;
    ccs_hw fast = *h, fast_bare = bare;
    fast.intra_bw *= 1.4;
    fast_bare.intra_bw *= 1.4;
    ccs_cost cf, cfb;
    cost_init(&cf, &fast, NULL, NULL, 0, NULL);
    cost_init(&cfb, &fast_bare, NULL, NULL, 0, NULL);
    double tf = cost_synthetic(&cf, &o);
    assert_rel(tf, 195e-6 * cost_synthetic(&cfb, &o) / m8, 1e-9);
    assert_true(tf < 195e-6);
}

/* Generation g multiplies each figure by its factor^g (memory-wall: FLOP/s 3x,
 * memory bandwidth 1.6x, networks 1.4x per generation). */
static void test_evolve(void **state)
{
    (void)state;
    const ccs_hw *a = catalog_hw(test_cat(), "a100-80g");
    const ccs_evolution *ev = catalog_evolution(test_cat(), "memory-wall");
    ccs_hw g;
    hw_evolve(a, ev, 2, &g);
    assert_int_equal(g.generation, 2);
    assert_rel(g.peak_flops[CCS_BF16], 312e12 * 9, 1e-12);
    assert_rel(g.mem_bw, 2039e9 * 1.6 * 1.6, 1e-12);
    assert_rel(g.mem_cap, a->mem_cap * ev->mem_cap * ev->mem_cap, 1e-12);
    assert_rel(g.intra_bw, 300e9 * 1.96, 1e-12);
    assert_rel(g.inter_bw, 25e9 * 1.96, 1e-12);
    assert_rel(g.gemm_eff, a->gemm_eff, 1e-12); /* efficiencies carry over */
    hw_evolve(a, NULL, 0, &g);
    assert_rel(g.mem_bw, a->mem_bw, 0);
}

/* The cost memo returns what the direct computation does, bit for bit: over
 * more GEMM shapes than it has slots (so entries are evicted and refilled),
 * two devices whose shapes share slots, several device counts (straggler
 * derate) and generations (evolution factors). */
static void test_memo_identical(void **state)
{
    (void)state;
    const ccs_hw *hw[2] = {catalog_hw(test_cat(), "a100-80g"), catalog_hw(test_cat(), "h100-sxm")};
    ccs_evolution ev = {
        .flops = 3, .mem_bw = 1.6, .mem_cap = 2, .intra_bw = 1.4, .inter_bw = 1.4, .latency = 1};
    ccs_costmemo *mm = cost_memo_new();
    assert_non_null(mm);
    int checked = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int h = 0; h < 2; h++)
            for (int m = 64; m <= 8192; m += 32)
                for (int k = 64; k <= 16384; k *= 4)
                    for (int d = 1; d <= 1024; d *= 32) {
                        ccs_plan p;
                        plan_defaults(&p);
                        p.devices = d;
                        int gen = (m / 32) % 3;
                        ccs_cost a, b;
                        cost_init(&a, hw[h], NULL, &ev, gen, &p);
                        cost_init_memo(&b, mm, hw[h], NULL, &ev, gen, &p);
                        assert_memory_equal(&a.scale.f_flops, &b.scale.f_flops, 5 * sizeof(double));
                        assert_memory_equal(&a.sync_derate, &b.sync_derate, sizeof(double));
                        ccs_op o = gemm(m, 3 * m / 2 + 8, k);
                        ccs_optime ta, tb;
                        cost_op(&a, &o, &ta);
                        cost_op(&b, &o, &tb);
                        assert_memory_equal(&ta, &tb, sizeof ta);
                        checked++;
                    }
    /* 255 x 5 shapes on each of two devices: more than the memo's 2048 GEMM slots */
    assert_int_equal(checked, 2 * 2 * 255 * 5 * 3);
    cost_memo_free(mm);
}

/* A kept prefix value comes back only for the same ops (every field) under
 * the same context. */
static void test_memo_prefix(void **state)
{
    (void)state;
    const ccs_hw *a = catalog_hw(test_cat(), "a100-80g"), *h = catalog_hw(test_cat(), "h100-sxm");
    ccs_costmemo *mm = cost_memo_new();
    assert_non_null(mm);
    ccs_plan p;
    plan_defaults(&p);
    p.devices = 64;
    ccs_cost c;
    cost_init_memo(&c, mm, a, NULL, NULL, 0, &p);
    ccs_op ops[3] = {gemm(4096, 4096, 4096), gemm(1024, 8192, 512), gemm(64, 64, 64)};
    double val[4] = {1.5, -2, 3e-9, 42};
    assert_null(cost_memo_find(mm, &c, ops, 3, sizeof val));
    cost_memo_keep(mm, &c, ops, 3, val, sizeof val);
    const double *got = cost_memo_find(mm, &c, ops, 3, sizeof val);
    assert_non_null(got);
    assert_memory_equal(got, val, sizeof val);
    assert_null(cost_memo_find(mm, &c, ops, 2, sizeof val)); /* a shorter prefix */
    ops[1].k += 1;                                           /* one field of one op */
    assert_null(cost_memo_find(mm, &c, ops, 3, sizeof val));
    ops[1].k -= 1;
    ops[2].count = 7; /* the count is part of the ops too */
    assert_null(cost_memo_find(mm, &c, ops, 3, sizeof val));
    ops[2].count = 1;
    assert_non_null(cost_memo_find(mm, &c, ops, 3, sizeof val));
    ccs_cost d;
    p.devices = 128; /* another straggler derate */
    cost_init_memo(&d, mm, a, NULL, NULL, 0, &p);
    assert_null(cost_memo_find(mm, &d, ops, 3, sizeof val));
    p.devices = 64;
    cost_init_memo(&d, mm, h, NULL, NULL, 0, &p); /* another device */
    assert_null(cost_memo_find(mm, &d, ops, 3, sizeof val));
    cost_memo_free(mm);
}

/* The measured attention-kernel tables (src/cost/attention.c), by hand:
 * FlashAttention-2 on A100, causal, d = 128, forward + backward at 2k
 * tokens: 155 TFLOP/s of the A100's 312 peak (the table is kept against the
 * A100's best GEMM, 267.9, and scaled back by a100-80g's gemm_efficiency
 * 267.9 / 312). Measured only forward + backward, it is split into its passes
 * at FlashAttention-2's forward / backward ratio rho = 73 / 63 (its paper's
 * peak shares): F = 155 (1 + 2.5 rho) / 3.5 = 172.57, B = F / rho = 148.93,
 * and 3.5 / (1 / F + 2.5 / B) gives back 155. Between 2k and 4k (173) the
 * rate is linear in log2(seq): at 2^11.5 = 2896 tokens, 164 (forward: times
 * (1 + 2.5 rho) / 3.5 = 1.11338). Below 512 the first value holds. Above 16k
 * a causal curve keeps its last doubling's growth, never above the unmasked
 * curve: FlashAttention-2 causal d = 128 at 8k, 16k: 182, 189, so 203 at 64k,
 * the unmasked 203 there; causal d = 64: 165, 171, so 183 at 64k, held to
 * the unmasked 176. d = 96 lies halfway between the d = 64 (140) and d = 128
 * (155) curves at 2k: 147.5. The Triton kernel, measured on the A100 only,
 * reaches FlashAttention-2's H100 rate times its own ratio to
 * FlashAttention-2 on the A100, pass by pass: its forward / backward ratio is
 * FlashAttention-2's times 2 / 1.4 = 1.65533, so at 2k causal d = 128 its
 * forward is 68 (1 + 2.5 x 1.65533) / 3.5 = 68 x 1.46809 against
 * FlashAttention-2's 155 x 1.11338, times FlashAttention-2's H100 forward
 * 265 x 1.11338: 265 x 68 / 155 x 1.46809 of the H100's 989. A device without
 * tables (b200) keeps the H100's share of the best GEMM: FA2 at 2k causal
 * d = 128 on the H100 is 265 x 1.11338 / 792.1 of its best GEMM (forward),
 * times b200's 0.776 of 2250. flash-attn's flash_attn_triton.py (fa-triton)
 * takes the first FlashAttention's bars averaged over d = 64 and 128, shaped
 * over the head dimension as the Triton kernel's: causal at 2k, FA1 77 and
 * 69 (mean 73), Triton 79 and 68 (mean 73.5), so d = 128: 73 x 68 / 73.5 =
 * 67.537 and d = 64: 73 x 79 / 73.5 = 78.463; at 16k FA1 97 and 83 (90),
 * Triton 80 and 80, so 90 at both; split at the Triton kernel's ratio:
 * forward 67.537 x 1.46809, backward that / 1.65533. On the H100 it is
 * carried through FlashAttention-2 like the Triton kernel: 265 x 67.537 / 155
 * x 1.46809 of 989 (forward, 2k causal d = 128). The first FlashAttention
 * itself (fa1) splits at FlashAttention-2's ratio: 69 x 1.11338. */
static void test_attention_tables(void **state)
{
    (void)state;
    const ccs_hw *a = catalog_hw(test_cat(), "a100-80g");
    const ccs_hw *h = catalog_hw(test_cat(), "h100-sxm");
    const ccs_hw *b = catalog_hw(test_cat(), "b200");
    assert_non_null(a);
    assert_non_null(h);
    assert_non_null(b);
    assert_int_equal(a->attn_ref, CCS_ATTN_REF_A100);
    assert_int_equal(b->attn_ref, CCS_ATTN_REF_NONE);
    const double k2 = 1.113379, kt = 1.468092; /* (1 + 2.5 rho) / 3.5 */
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 128, 2048, 1, 0), 172.574 / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 128, 2048, 1, 1), 148.934 / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 128, 2896.309, 1, 0), 164.0 * k2 / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 128, 65536, 1, 0), 203.0 * k2 / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 64, 65536, 1, 0), 176.0 * k2 / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 128, 128, 1, 0), 99.0 * k2 / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 96, 2048, 1, 0), 147.5 * k2 / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 128, 2048, 0, 0), 187.0 * k2 / 312, 1e-3);
    /* Triton causal d = 128 at 8k, 16k: 78, 80, so 84 at 64k (unmasked: 95) */
    assert_rel(attn_kernel_eff(a, CCS_ATTN_TRITON, 128, 65536, 1, 0), 84.0 * kt / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA_TRITON, 128, 2048, 1, 0), 67.537 * kt / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA_TRITON, 128, 2048, 1, 1),
               67.537 * kt / 1.655329 / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA_TRITON, 64, 2048, 1, 0), 78.463 * kt / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA_TRITON, 128, 16384, 1, 0), 90.0 * kt / 312, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA_TRITON, 64, 16384, 1, 0), 90.0 * kt / 312, 1e-3);
    assert_rel(attn_kernel_eff(h, CCS_ATTN_FA_TRITON, 128, 2048, 1, 0),
               265.0 * 67.537 / 155 * kt / 989, 1e-3);
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA1, 128, 2048, 1, 0), 69.0 * k2 / 312, 1e-3);
    /* unmasked curves hold their last value beyond 16k */
    assert_rel(attn_kernel_eff(a, CCS_ATTN_FA2, 128, 65536, 0, 0), 203.0 * k2 / 312, 1e-3);
    assert_rel(attn_kernel_eff(h, CCS_ATTN_TRITON, 128, 2048, 1, 0), 265.0 * 68 / 155 * kt / 989,
               1e-3);
    assert_rel(attn_kernel_eff(h, CCS_ATTN_TRITON, 128, 2048, 1, 1),
               265.0 * 68 / 155 * kt / 1.655329 / 989, 1e-3);
    assert_rel(attn_kernel_eff(b, CCS_ATTN_FA2, 128, 2048, 1, 0), 265.0 * k2 / 792.1 * 0.776, 1e-3);
    /* cuDNN on the H100, forward measured, backward only without the mask:
     * causal backward = non-causal backward x causal / non-causal forward,
     * at 2k d = 128: 465 x 484 / 617 */
    assert_rel(attn_kernel_eff(h, CCS_ATTN_CUDNN, 128, 2048, 1, 0), 484.0 / 792.1 * 0.801, 1e-3);
    assert_rel(attn_kernel_eff(h, CCS_ATTN_CUDNN, 128, 2048, 1, 1),
               465.0 * 484 / 617 / 792.1 * 0.801, 1e-3);
}

/* MPT-125M (llm-foundry's: 12 layers, d 768, 12 heads, FFN 3072, vocabulary
 * 50368, biased, tied) at micro-batch 26 x 2048 tokens on one device, fused
 * attention: the shape the loss and bias-gradient counts below use. */
static void mpt125m(ccs_model *m, ccs_plan *p)
{
    memset(m, 0, sizeof *m);
    ccs_strlcpy(m->name, "mpt-125m", sizeof m->name);
    m->layers = 12;
    m->hidden = 768;
    m->heads = m->kv_heads = 12;
    m->ffn = 3072;
    m->vocab = 50368;
    m->bias = m->tied = 1;
    model_fill_defaults(m);
    plan_defaults(p);
    p->devices = p->dp = 1;
    p->mbs = p->gbs = 26;
    p->seq = 2048;
    p->flash_attn = 1;
}

/* The loss as a stack computes it, by hand for MPT-125M's head (d 768,
 * vocabulary 50368, padded to 394 x 128 = 50432) at micro-batch 26 x 2048
 * tokens: E = 26 x 2048 x 50432 logits. Megatron's vocab-parallel
 * cross-entropy on fp32 logits moves 3 x 4 bytes per logit forward and 2 x 4
 * backward; a fused kernel over the bf16 logits reads them (2 bytes)
 * forward, reads them and writes their gradient (2 + 2) backward; each
 * training metric evaluation adds, forward, the cast to an fp32 copy (read
 * 2, write 4) and log_softmax over it (read 4, write 4): 14 bytes. The
 * element-wise bytes of the head regions, apart from the final norm (its
 * own kind). */
static void head_bytes(const ccs_model *m, const ccs_plan *p, const ccs_stack *st, double *fwd,
                       double *bwd)
{
    ccs_oplist ops;
    regions_build_stack(m, p, 8, st, &ops);
    *fwd = *bwd = 0;
    for (int i = 0; i < ops.n; i++) {
        const ccs_op *op = &ops.ops[i];
        if (op->kind != CCS_OP_ELEMENTWISE)
            continue;
        if (op->region == CCS_RG_HEAD_FWD)
            *fwd += op->bytes * op->count;
        if (op->region == CCS_RG_HEAD_BWD)
            *bwd += op->bytes * op->count;
    }
}

static void test_loss_traffic(void **state)
{
    (void)state;
    ccs_model m;
    ccs_plan p;
    mpt125m(&m, &p);
    const double E = 26.0 * 2048 * 50432;
    ccs_stack st;
    stack_default(&st);
    double f, b;
    head_bytes(&m, &p, &st, &f, &b);
    assert_rel(f, 12 * E, 1e-12);
    assert_rel(b, 8 * E, 1e-12);
    st.fused_loss = 1;
    head_bytes(&m, &p, &st, &f, &b);
    assert_rel(f, 2 * E, 1e-12);
    assert_rel(b, 4 * E, 1e-12);
    st.logit_metrics = 2;
    head_bytes(&m, &p, &st, &f, &b);
    assert_rel(f, (2 + 2 * 14) * E, 1e-12);
    assert_rel(b, 4 * E, 1e-12);
    /* llm-foundry's entry is that stack's loss */
    const ccs_stack *lf = catalog_stack(test_cat(), "llm-foundry");
    assert_non_null(lf);
    assert_int_equal(lf->fused_loss, 1);
    assert_int_equal(lf->logit_metrics, 2);
}

/* Bias gradients as separate reductions, by hand for MPT-125M (h 768, 12
 * heads, FFN 3072, biased) at micro-batch 26 x 2048 tokens, tp 1: the
 * backward of a block reads each biased linear's output gradient once more,
 * QKV 3 x 768 = 2304, the projection 768, FC1 3072 and FC2 768: 6912
 * elements a token, 2 bytes each: 26 x 2048 x 6912 x 2 bytes a block; nothing when the stack
 * fuses them (the default) or when the model has no biases. */
static double block_bwd_bytes(const ccs_model *m, const ccs_plan *p, const ccs_stack *st)
{
    ccs_oplist ops;
    regions_build_stack(m, p, 8, st, &ops);
    double b = 0;
    for (int i = 0; i < ops.n_layer; i++) {
        const ccs_op *op = &ops.ops[i];
        if (op->kind == CCS_OP_ELEMENTWISE &&
            (op->region == CCS_RG_BWD_ATTN || op->region == CCS_RG_BWD_MLP))
            b += op->bytes * op->count;
    }
    return b;
}

static void test_bias_grad_traffic(void **state)
{
    (void)state;
    ccs_model m;
    ccs_plan p;
    mpt125m(&m, &p);
    ccs_stack st;
    stack_default(&st);
    double fused = block_bwd_bytes(&m, &p, &st);
    st.bias_grad_sep = 1;
    double sep = block_bwd_bytes(&m, &p, &st);
    assert_rel(sep - fused, 26.0 * 2048 * 6912 * 2, 1e-12);
    m.bias = 0;
    stack_default(&st);
    fused = block_bwd_bytes(&m, &p, &st);
    st.bias_grad_sep = 1;
    assert_rel(block_bwd_bytes(&m, &p, &st), fused, 1e-12);
}

/* Element-wise traffic of one block on one rank, forward (bwd 0) or backward
 * (bwd 1): the memory-bound ops but attention's (bytes a token). */
static double block_eltwise_bytes(const ccs_model *m, const ccs_plan *p, const ccs_stack *st,
                                  int bwd)
{
    ccs_oplist ops;
    regions_build_stack(m, p, 8, st, &ops);
    double b = 0;
    for (int i = 0; i < ops.n_layer; i++) {
        const ccs_op *op = &ops.ops[i];
        int r = op->region;
        int in = bwd ? r == CCS_RG_BWD_ATTN || r == CCS_RG_BWD_MLP
                     : r == CCS_RG_FWD_ATTN || r == CCS_RG_FWD_MLP;
        if (in && (op->kind == CCS_OP_ELEMENTWISE || op->kind == CCS_OP_LAYERNORM))
            b += op->bytes * op->count;
    }
    return b / ((double)p->mbs * p->seq);
}

/* Element-wise kernels fused and eager, by hand for a Llama 3 8B block (h =
 * N = 4096, 32 query heads and 8 key-value heads of 128: Nq = 4096, Nk = 1024,
 * SwiGLU F = 14336), bf16 (e = 2), tp 1, flash attention; bytes a token (the
 * per-operator counts are regions.c's):
 *   fused forward:  norms 2 x 4N, rotary 4 (Nq + Nk), residual adds 2 x 6N,
 *                   SwiGLU 6F = 188,416
 *   eager forward:  norms 2 x 36N, rotary 20 (Nq + Nk), repeat_kv 2 x 2 (Nk +
 *                   Nq) x 2, residual adds 2 x 6N, SwiGLU 10F = 610,304
 *   fused backward: residual 2 x 4N, rotary 4 (Nq + Nk), norms 2 x 8N,
 *                   SwiGLU 10F = 262,144
 *   eager backward: residual 0, rotary 20 (Nq + Nk), repeat_kv 20,480, norms
 *                   2 x (92 + 6) N, SwiGLU 18F = 1,183,744 */
static void test_eager_traffic(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "llama3-8b");
    assert_non_null(m);
    assert_int_equal(m->hidden, 4096);
    assert_int_equal(m->heads, 32);
    assert_int_equal(m->kv_heads, 8);
    assert_int_equal(m->ffn, 14336);
    assert_true(m->gated && !m->bias && !m->max_pos);
    ccs_plan p;
    plan_defaults(&p);
    p.tp = p.pp = p.dp = p.devices = 1;
    p.mbs = 1;
    p.gbs = 1;
    p.seq = 8192;
    p.flash_attn = 1;
    ccs_stack st;
    stack_default(&st);
    assert_rel(block_eltwise_bytes(m, &p, &st, 0), 188416, 1e-12);
    assert_rel(block_eltwise_bytes(m, &p, &st, 1), 262144, 1e-12);
    st.eager = 1;
    assert_rel(block_eltwise_bytes(m, &p, &st, 0), 610304, 1e-12);
    assert_rel(block_eltwise_bytes(m, &p, &st, 1), 1183744, 1e-12);
    /* the catalog's eager stacks, and torch.compile's fused one */
    assert_int_equal(catalog_stack(test_cat(), "pytorch-fsdp2")->eager, 1);
    assert_int_equal(catalog_stack(test_cat(), "pytorch-fsdp1")->eager, 1);
    assert_int_equal(catalog_stack(test_cat(), "pytorch-fsdp2-compile")->eager, 0);
    /* the README's comparison: 8 h100-sxm, FSDP (zero 3, bucketed), gbs 16 */
    p.devices = 8;
    p.dp = 0;
    p.gbs = 16;
    p.zero = 3;
    p.dp_overlap = CCS_DPOV_BUCKETED;
    assert_int_equal(plan_derive(&p), CCS_R_OK);
    const ccs_hw *hw = catalog_hw(test_cat(), "h100-sxm");
    assert_non_null(hw);
    double t[2];
    for (int k = 0; k < 2; k++) {
        ccs_cost c;
        cost_init(&c, hw, NULL, NULL, 0, &p);
        cost_set_stack(&c,
                       catalog_stack(test_cat(), k ? "pytorch-fsdp2-compile" : "pytorch-fsdp2"));
        ccs_result r;
        timeline_project(m, &p, &c, &r, NULL);
        assert_int_equal(r.status, CCS_ST_OK);
        t[k] = r.t_iter;
    }
    char said[96];
    snprintf(said, sizeof said, "`pytorch-fsdp2` %.0f%% slower than `pytorch-fsdp2-compile`",
             100 * (t[0] / t[1] - 1));
    printf("  llama3-8b, 8 h100-sxm, seq 8192: %s (%.4f s vs %.4f s)\n", said, t[0], t[1]);
    assert_readme_says(said);
}

/* Recompute selective under PyTorch's per-op policy (selective: op), by hand
 * for the Llama 3 8B block of test_eager_traffic at seq 8192, tp 1: the
 * backward pass first runs again the 2nd, 4th and 6th of the block's seven
 * matmuls (wq, wk, wv, wo, w1, w3, w2): the key projection (h x 8 x 128),
 * the output projection (h x h) and the up projection (h x 14336), 2 x 8192
 * x 4096 x (1024 + 4096 + 14336) FLOPs, and every element-wise operator of
 * the forward: eager, the 610,304 bytes a token of test_eager_traffic. The
 * attention core is saved, not recomputed. */
static void test_sac_op_recompute(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "llama3-8b");
    assert_non_null(m);
    ccs_plan p;
    plan_defaults(&p);
    p.tp = p.pp = p.dp = p.devices = 1;
    p.mbs = p.gbs = 1;
    p.seq = 8192;
    p.flash_attn = 1;
    p.recompute = CCS_RECOMPUTE_SELECTIVE;
    ccs_stack st;
    stack_default(&st);
    st.eager = 1;
    st.sac_op = 1;
    ccs_oplist ops;
    regions_build_stack(m, &p, 8, &st, &ops);
    double gemm_flops = 0, eltwise = 0;
    int attention = 0;
    for (int i = 0; i < ops.n_layer; i++) {
        const ccs_op *op = &ops.ops[i];
        if (op->region != CCS_RG_RECOMP_ATTN && op->region != CCS_RG_RECOMP_MLP)
            continue;
        if (op->kind == CCS_OP_GEMM)
            gemm_flops += op->flops * op->count;
        else if (op->kind == CCS_OP_ELEMENTWISE || op->kind == CCS_OP_LAYERNORM)
            eltwise += op->bytes * op->count;
        attention += op->kind == CCS_OP_ATTENTION;
    }
    assert_rel(gemm_flops, 2.0 * 8192 * 4096 * (1024 + 4096 + 14336), 1e-12);
    assert_rel(eltwise / 8192, 610304, 1e-12);
    assert_int_equal(attention, 0);
    /* Megatron's selective (core) with a fused kernel recomputes nothing */
    st.sac_op = 0;
    regions_build_stack(m, &p, 8, &st, &ops);
    for (int i = 0; i < ops.n_layer; i++)
        assert_true(ops.ops[i].region != CCS_RG_RECOMP_ATTN &&
                    ops.ops[i].region != CCS_RG_RECOMP_MLP);
    assert_int_equal(catalog_stack(test_cat(), "pytorch-fsdp2")->sac_op, 1);
    assert_int_equal(catalog_stack(test_cat(), "pytorch-fsdp2-compile")->sac_op, 1);
    assert_int_equal(catalog_stack(test_cat(), "megatron-core")->sac_op, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wave_efficiency),      cmocka_unit_test(test_gemm_roofline),
        cmocka_unit_test(test_gemm_shapes_h100),     cmocka_unit_test(test_fp8),
        cmocka_unit_test(test_attention_efficiency), cmocka_unit_test(test_attention_tables),
        cmocka_unit_test(test_collective),           cmocka_unit_test(test_nvls),
        cmocka_unit_test(test_allreduce_measured),   cmocka_unit_test(test_evolve),
        cmocka_unit_test(test_memo_identical),       cmocka_unit_test(test_memo_prefix),
        cmocka_unit_test(test_loss_traffic),         cmocka_unit_test(test_bias_grad_traffic),
        cmocka_unit_test(test_eager_traffic),        cmocka_unit_test(test_sac_op_recompute),
    };
    return cmocka_run_group_tests_name("opcost", tests, test_catalog_setup, test_catalog_teardown);
}
