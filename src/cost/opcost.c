/* opcost.c - synthetic operator curves and dispatch to measured ones.
 *
 * Compute ops: t = max(flops / (peak * eff * clock * wave), bytes / (bw * mem_eff))
 * + kernel latency, i.e. a roofline whose efficiency ramps with size through
 * tile/wave quantization and the fixed launch cost.
 * Collectives: alpha-beta ring model, t = steps * latency + volume / busbw,
 * with bus bandwidth as nccl-tests defines it (doc/PERFORMANCE.md there). */
#include "ccsweep/cost/opcost.h"
#include "ccsweep/cost/attention.h"
#include "ccsweep/cost/opmodel.h"

#include <assert.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* FlashAttention-2 (Dao 2023, arXiv 2307.08691, section 4) reaches up to 73%
 * of A100 peak in the forward pass and 63% in the backward pass, against
 * 85.9% for the best GEMM (the a100-80g catalog entry): 0.85 and 0.73 of the
 * GEMM efficiency. The backward kernel recomputes the scores and runs five
 * matmuls with more synchronization between them. */
#define CCS_ATTN_REL_EFF_FWD 0.85
#define CCS_ATTN_REL_EFF_BWD 0.73

/* Devices of one part number differ in sustained matrix throughput; a job
 * whose every step synchronizes all n devices (TP collectives within a step,
 * pipeline stages within the schedule, DP replicas at the gradient reduction)
 * runs at its slowest one. With per-device throughput normal around the
 * measured mean with relative spread sigma, the slowest of n sits about
 * E[max of n standard normals] sigma below it; Blom's approximation of that
 * order statistic, Phi^-1((n - 0.375) / (n + 0.25)), is within 1% for n >= 2. */
double cost_straggler_derate(double sigma, int32_t n)
{
    if (n < 2 || sigma <= 0)
        return 1.0;
    double z = gsl_cdf_ugaussian_Pinv((n - 0.375) / (n + 0.25));
    double d = 1.0 - sigma * z;
    return d > 0.5 ? d : 0.5; /* sigma is validated < 0.1, so this never binds */
}

/* Every output tile of a GEMM pays a fixed time beside its k loop: the
 * pipeline fill before the first MMA and the epilogue that writes the tile.
 * In units of k that overhead is k0 = TAU * (peak / compute units) /
 * (2 tile_m tile_n), so a GEMM of depth k runs at k / (k + k0) of its
 * large-k rate. TAU is fitted to XLA's published H100 SXM bf16 GEMM
 * measurements (tensorflow/tensorflow, third_party/xla/xla/service/gpu/model/
 * matmul_interpolator_data.h, sm_90 table: 4096 x 4096 at k = 256 (batch 1
 * and 4), 512 (batch 4), 2048 (batch 2), 4096: 392, 504, 620, 763, 783 TFLOP/s),
 * where t = flops (k + k0) / (P k) + L fits all five within 2% with k0 = 130
 * on 132 SMs, 256 x 128 tiles, 989 TFLOP/s: TAU = 130 * 2 * 256 * 128 * 132 /
 * 989e12 = 1.14 us. The same fixed time, from memory latency and the
 * epilogue, is assumed on other devices; on a faster SM it costs more k. */
#define CCS_GEMM_TILE_TAU 1.137e-6

/* Overhead of one output tile in units of k (see CCS_GEMM_TILE_TAU). */
static double tile_k0(const ccs_hw *hw, int dtype, int64_t tm, int64_t tn)
{
    double peak = hw->peak_flops[dtype] > 0 ? hw->peak_flops[dtype] : hw->peak_flops[CCS_FP32];
    return CCS_GEMM_TILE_TAU * peak / hw->compute_units / (2.0 * (double)(tm * tn));
}

double cost_gemm_k_efficiency(const ccs_hw *hw, int dtype, double k)
{
    double k0 = tile_k0(hw, dtype, hw->tile_m, hw->tile_n);
    double kref;
    hw_gemm_eff(hw, dtype, &kref);
    if (k < 1)
        k = 1;
    /* relative to the shape the catalog's gemm_efficiency was measured at;
     * that figure is the best over a search of shapes (deeper ones included),
     * so no depth runs faster than it */
    double r = (k / (k + k0)) / (kref / (kref + k0));
    return r < 1.0 ? r : 1.0;
}

/* Tile slots doing useful work for an m x n output in tm x tn tiles over cu
 * compute units, batch independent problems. Integer arithmetic: GEMM
 * dimensions are whole numbers, and libm's ceil is a call on baseline x86-64
 * (this runs a few hundred times per projection). */
static double wave_eff(int64_t tm, int64_t tn, int64_t cu, double m, double n, double batch)
{
    /* From 2^53 output elements on, the last wave's waste is below 1e-8 (tiles
     * up to 256 x 256 on up to 1024 compute units) and the tile count could
     * overflow int64. */
    if (!(m * n * batch < 9007199254740992.0))
        return 1.0;
    int64_t mi = (int64_t)m, ni = (int64_t)n, bi = (int64_t)batch;
    if (mi < 1 || ni < 1 || bi < 1)
        return 1.0;
    int64_t tiles = ((mi + tm - 1) / tm) * ((ni + tn - 1) / tn) * bi;
    int64_t waves = (tiles + cu - 1) / cu;
    double eff = (m * n * batch) / ((double)waves * cu * tm * tn);
    return eff > 1.0 ? 1.0 : eff;
}

double cost_wave_efficiency(const ccs_hw *hw, double m, double n, double batch)
{
    return wave_eff(hw->tile_m, hw->tile_n, hw->compute_units, m, n, batch);
}

/* Efficiency of one GEMM relative to the catalog's gemm_efficiency (the
 * catalog tile at full waves and depth gemm_ref_k): wave quantization of the
 * output in the catalog tile or its transpose, whichever wastes less (GEMM
 * libraries ship both orientations), times the per-tile fixed cost over the
 * k loop. Only the catalog tile's size is modelled: a library's smaller
 * tiles, which it picks for outputs too small to fill the device once, run
 * at an efficiency no published figure gives here, so such GEMMs come out
 * slow (tests/test_opcost.c checks the shapes that fill the device against
 * XLA's published H100 table, on shapes not used to fit the tile cost). */
double cost_gemm_shape_efficiency(const ccs_hw *hw, int dtype, double m, double n, double k,
                                  double batch)
{
    int64_t tm = hw->tile_m, tn = hw->tile_n, cu = hw->compute_units;
    double w = wave_eff(tm, tn, cu, m, n, batch);
    if (tm != tn) {
        double wt = wave_eff(tn, tm, cu, m, n, batch);
        if (wt > w)
            w = wt;
    }
    return w * cost_gemm_k_efficiency(hw, dtype, k);
}

/* ---- the cost memo: direct-mapped tables, a miss overwrites its slot ---- */

#define MEMO_GEMM 2048 /* a grid's distinct GEMM shapes per hardware number in the hundreds */
#define MEMO_GEN 64
#define MEMO_DERATE 256

/* Keys are compared and copied whole: their members leave no padding, and an
 * empty slot's NULL hw matches no key. */
typedef struct gemm_key {
    const ccs_hw *hw;
    int64_t dtype;
    double m, n, k, batch;
} gemm_key;

typedef struct memo_gemm {
    gemm_key key;
    double eff, shape; /* hw_gemm_eff and cost_gemm_shape_efficiency */
} memo_gemm;

#define MEMO_COLL 1024

typedef struct coll_key {
    const ccs_hw *hw;
    int32_t kind, group, per_node, innet;
    double bytes, remote, f; /* f: the plan's net_bw_factor */
} coll_key;

_Static_assert(sizeof(gemm_key) == 48 && sizeof(coll_key) == 48, "memo keys without padding");

typedef struct memo_coll {
    coll_key key;
    double t;
} memo_coll;

/* ev may be NULL: used (1 in every key) tells a filled slot from an empty one */
typedef struct gen_key {
    const ccs_evolution *ev;
    int32_t gen, used;
} gen_key;

typedef struct memo_gen {
    gen_key key;
    double f[5]; /* f_flops, f_mem, f_intra, f_inter, f_lat */
} memo_gen;

typedef struct derate_key {
    double sigma;
    int32_t n, used;
} derate_key;

typedef struct memo_derate {
    derate_key key;
    double derate;
} memo_derate;

#define MEMO_PREFIX 64

/* the cost context a prefix of ops was costed under */
typedef struct prefix_key {
    const ccs_hw *hw;
    const struct ccs_opmodel *om;
    const ccs_stack *stack;
    int32_t gen, innet;
    int64_t n;
    double derate, f;
} prefix_key;

_Static_assert(sizeof(gen_key) == 16 && sizeof(derate_key) == 16 && sizeof(prefix_key) == 56,
               "memo keys without padding");

/* ops[0..n) under a cost context, and the caller's value for them */
typedef struct memo_prefix {
    prefix_key key;
    size_t size;
    ccs_op ops[CCS_MAX_OPS];
    _Alignas(double) unsigned char val[CCS_MEMO_VAL_MAX];
} memo_prefix;

struct ccs_costmemo {
    memo_gemm gemm[MEMO_GEMM];
    memo_coll coll[MEMO_COLL];
    memo_prefix *prefix[MEMO_PREFIX]; /* allocated when first used */
    memo_gen gen[MEMO_GEN];
    memo_derate derate[MEMO_DERATE];
};

ccs_costmemo *cost_memo_new(void)
{
    return calloc(1, sizeof(ccs_costmemo));
}

void cost_memo_free(ccs_costmemo *m)
{
    if (!m)
        return;
    for (int i = 0; i < MEMO_PREFIX; i++)
        free(m->prefix[i]);
    free(m);
}

static uint64_t memo_mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

static uint64_t memo_bits(double x)
{
    uint64_t w;
    memcpy(&w, &x, sizeof w);
    return w;
}

/* The hash of a key of size bytes (a multiple of 8). */
static uint64_t key_hash(const void *key, size_t size)
{
    uint64_t h = 0, w;
    for (size_t i = 0; i < size; i += sizeof w) {
        memcpy(&w, (const char *)key + i, sizeof w);
        h = memo_mix(h, w);
    }
    return h;
}

/* Its slot in a table of n. */
static size_t key_slot(const void *key, size_t size, size_t n)
{
    return (size_t)(key_hash(key, size) % n);
}

static const memo_gemm *memo_gemm_get(ccs_costmemo *mm, const ccs_hw *hw, int dtype, double m,
                                      double n, double k, double batch)
{
    gemm_key key = {hw, dtype, m, n, k, batch};
    memo_gemm *e = &mm->gemm[key_slot(&key, sizeof key, MEMO_GEMM)];
    if (memcmp(&e->key, &key, sizeof key)) {
        e->key = key;
        e->eff = hw_gemm_eff(hw, dtype, NULL);
        e->shape = cost_gemm_shape_efficiency(hw, dtype, m, n, k, batch);
    }
    return e;
}

/* A collective as NCCL would run it: the fastest of the algorithms the
 * fabric offers (NCCL's tuner picks per size the same way,
 * src/graph/tuning.cc). Ring: alpha-beta over the group, crossing domains
 * through per-domain NICs. NVLS (NVLink SHARP, in-switch reduction, when the
 * catalog gives its measured bandwidth): an all-reduce inside the scale-up
 * domain sends and receives the buffer once (NVIDIA/nccl-tests issue 212:
 * ~480 GB/s bus bandwidth, ~275 GB/s algorithm bandwidth on 8 H100 vs ~370
 * for the ring). Tree, for an all-reduce spanning domains. Hierarchical, for an all-reduce spanning
 * domains: reduce-scatter inside each domain, all-reduce of the 1/k shards across domains (every
 * rank over its own NIC), all-gather inside.
 * Where the catalog gives the fabric's measured all-reduce times
 * (allreduce_us: the operator model fitted to measurements, the paper's
 * empirical method), an all-reduce inside the domain takes the measured time
 * at its size, carried to other group sizes and to evolved links by the
 * ratio of this analytic model there to the model on the measured setup: the
 * alpha-beta model misses the pipeline fill of medium messages (8 H100,
 * 8-32 MiB: 25-40% slower than latency + size / bandwidth). Below the
 * smallest size measured, the analytic model keeps the measured / analytic
 * ratio of that size (a curve measured from 8 MiB up says nothing of the
 * latency floor below it). */
/* NCCL's fixed latencies (its tuning model, src/graph/tuning.cc,
 * ncclTunerConstantsDefaults, NVIDIA/nccl at 5067397c): every ring or tree
 * collective pays a base latency on top of its per-step hardware latency
 * (baseLatencies, Ring/Tree LL128: 14.0 us; the per-step LL128 NVLink figure,
 * 1.9 us, is the catalog's intra_latency_us), and an NVLS all-reduce pays the
 * in-switch reduction's own latency instead of steps (hwLatencies[NVLINK][NVLS]
 * Simple: 25 us), carried with the fabric's per-step latency so that hardware
 * evolution scales it. */
#define NCCL_BASE_LAT 14.0e-6
#define NCCL_NVLS_LAT 25.0e-6
#define NCCL_NVLS_REF_STEP_LAT 1.9e-6

/* An all-reduce of `bytes` over `group` ranks inside the scale-up domain on
 * links of bw bytes/s per direction and per-step latency lat: the faster of
 * the ring and NVLS. */
static double domain_allreduce(const ccs_hw *hw, int32_t group, double bytes, double bw, double lat)
{
    double steps, vol = cost_coll_volume(CCS_OP_ALLREDUCE, bytes, group, 0, &steps);
    double t = NCCL_BASE_LAT + steps * lat + vol / (bw * hw->intra_eff);
    if (hw->nvls_eff > 0)
        t = fmin(t, NCCL_NVLS_LAT * lat / NCCL_NVLS_REF_STEP_LAT + bytes / (bw * hw->nvls_eff));
    return t;
}

/* The measured curve (catalog allreduce_us) for a group: its own size's, else
 * the nearest measured size's (the analytic ratio carries it over). */
static const ccs_ar_table *ar_table_for(const ccs_hw *hw, int32_t group)
{
    const ccs_ar_table *best = NULL;
    double dist = 0;
    for (int i = 0; i < CCS_AR_TABLES && hw->ar[i].ranks; i++) {
        double x = fabs(log((double)hw->ar[i].ranks / group));
        if (!best || x < dist) {
            best = &hw->ar[i];
            dist = x;
        }
    }
    return best;
}

/* The measured time at `bytes` (at least the first point's size): linear
 * between points, the last segment's slope above them (bandwidth-bound). */
static double ar_table_time(const ccs_ar_table *tab, double bytes)
{
    assert(tab->n >= 2 && bytes >= tab->bytes[0]);
    int n = tab->n, i = 1;
    while (i < n - 1 && bytes > tab->bytes[i])
        i++;
    double x0 = tab->bytes[i - 1], x1 = tab->bytes[i];
    return tab->t[i - 1] + (bytes - x0) * (tab->t[i] - tab->t[i - 1]) / (x1 - x0);
}

static double coll_time_direct(const ccs_cost *c, const ccs_op *op)
{
    const ccs_hw *hw = c->hw;
    double f = c->scale.net_bw_factor;
    int innet = c->scale.innet_reduce;
    double steps, vol = cost_coll_volume(op->kind, op->bytes, op->group, innet, &steps);
    double intra = hw->intra_bw * hw->intra_eff * f;
    double oversub = hw->oversub >= 1 ? hw->oversub : 1;
    double nic = hw->inter_bw * hw->inter_eff * f / oversub;
    if (op->kind == CCS_OP_ALLTOALL && op->per_node < op->group) {
        /* every rank's own NIC carries what goes to other domains, NVLink the
         * rest, concurrently: the slower of the two sets the time. With
         * node-limited routing (op->remote) a token crosses the network once
         * per target node and NVLink forwards every copy not bound for the
         * receiving device (DeepSeek-V3, arXiv 2412.19437, Sec. 3.2.2). */
        double out = op->bytes * (op->group - op->per_node) / op->group;
        double in = op->bytes * (op->per_node - 1) / op->group;
        if (op->remote > 0) {
            out = op->remote;
            in = op->bytes * (op->per_node - 1) / op->per_node;
        }
        return steps * hw->inter_lat + fmax(out / nic, in / intra);
    }
    if (op->kind == CCS_OP_P2P) {
        int inter = op->per_node < 2;
        return steps * (inter ? hw->inter_lat : hw->intra_lat) + vol / (inter ? nic : intra);
    }
    if (op->per_node >= op->group) { /* inside the scale-up domain */
        if (op->kind == CCS_OP_ALLREDUCE && !innet) {
            double t = domain_allreduce(hw, op->group, op->bytes, hw->intra_bw * f, hw->intra_lat);
            const ccs_ar_table *tab = ar_table_for(hw, op->group);
            if (tab) {
                /* the measured / analytic ratio at the size, below the
                 * smallest measured size the ratio there */
                double b = fmax(op->bytes, tab->bytes[0]);
                t *= ar_table_time(tab, b) /
                     domain_allreduce(hw, tab->ranks, b, hw->ar_ref_intra_bw, hw->ar_ref_intra_lat);
            }
            return t;
        }
        return NCCL_BASE_LAT + steps * hw->intra_lat + vol / intra;
    }
    /* a ring crossing domains: each domain's members share their own NICs, so
     * the cross-domain share is per_node NICs for per_node ranks */
    double ring_bw = fmin(op->per_node * nic, intra);
    double t = NCCL_BASE_LAT + steps * hw->inter_lat + vol / ring_bw;
    if (op->kind == CCS_OP_ALLREDUCE && !innet) {
        /* double binary tree across domains, chains inside them (NCCL >= 2.4,
         * Jeaugey 2019, "Massively scale your deep learning training with
         * NCCL 2.4"): about the ring's bandwidth (each rank moves the buffer
         * twice), latency logarithmic in the domains */
        int k = op->per_node > 0 ? op->per_node : 1;
        double g = (double)op->group / k;
        double t_tree = NCCL_BASE_LAT + 2 * ceil(log2(g > 1 ? g : 2)) * hw->inter_lat +
                        2 * (k - 1) * hw->intra_lat + 2 * op->bytes / ring_bw;
        t = fmin(t, t_tree);
    }
    return t;
}

static prefix_key prefix_key_of(const ccs_cost *c, int n)
{
    prefix_key k = {c->hw,
                    c->om,
                    c->stack,
                    c->generation,
                    c->scale.innet_reduce,
                    n,
                    c->sync_derate,
                    c->scale.net_bw_factor};
    return k;
}

/* The slot of ops[0..n) under context key k: k and three ops hashed (the list
 * is compared whole on a find). */
static memo_prefix **prefix_slot(ccs_costmemo *m, const prefix_key *k, const ccs_op *ops, int n)
{
    uint64_t h = key_hash(k, sizeof *k);
    const int pick[3] = {0, n / 2, n - 1};
    for (int i = 0; i < 3; i++) {
        const ccs_op *o = &ops[pick[i]];
        h = memo_mix(h, (uint64_t)o->kind << 8 | o->region);
        h = memo_mix(h, memo_bits(o->m) ^ memo_bits(o->n) * 3 ^ memo_bits(o->k) * 5);
        h = memo_mix(h, memo_bits(o->bytes) ^ memo_bits(o->flops) * 3 ^ (uint64_t)o->group);
    }
    return &m->prefix[h % MEMO_PREFIX];
}

const void *cost_memo_find(ccs_costmemo *m, const ccs_cost *c, const ccs_op *ops, int n,
                           size_t size)
{
    if (n < 1 || n > CCS_MAX_OPS)
        return NULL;
    prefix_key k = prefix_key_of(c, n);
    const memo_prefix *e = *prefix_slot(m, &k, ops, n);
    if (!e || e->size != size || memcmp(&e->key, &k, sizeof k) ||
        memcmp(e->ops, ops, (size_t)n * sizeof *ops))
        return NULL;
    return e->val;
}

void cost_memo_keep(ccs_costmemo *m, const ccs_cost *c, const ccs_op *ops, int n, const void *val,
                    size_t size)
{
    if (n < 1 || n > CCS_MAX_OPS || size > CCS_MEMO_VAL_MAX)
        return;
    prefix_key k = prefix_key_of(c, n);
    memo_prefix **slot = prefix_slot(m, &k, ops, n);
    if (!*slot && !(*slot = malloc(sizeof **slot)))
        return; /* no memory: nothing is kept, nothing changes */
    memo_prefix *e = *slot;
    e->key = k;
    e->size = size;
    memcpy(e->ops, ops, (size_t)n * sizeof *ops);
    memcpy(e->val, val, size);
}

/* A collective's time depends on the hardware, the plan's two link what-ifs
 * and the op's kind, buffer, group and placement only. */
static double coll_time(const ccs_cost *c, const ccs_op *op)
{
    ccs_costmemo *mm = c->memo;
    if (!mm)
        return coll_time_direct(c, op);
    coll_key key = {c->hw,
                    op->kind,
                    op->group,
                    op->per_node,
                    c->scale.innet_reduce,
                    op->bytes,
                    op->remote,
                    c->scale.net_bw_factor};
    memo_coll *e = &mm->coll[key_slot(&key, sizeof key, MEMO_COLL)];
    if (memcmp(&e->key, &key, sizeof key)) {
        e->key = key;
        e->t = coll_time_direct(c, op);
    }
    return e->t;
}

/* cost_synthetic, inlined into cost_ops */
static inline double synthetic(const ccs_cost *c, const ccs_op *op)
{
    const ccs_hw *hw = c->hw;
    if (opkind_is_collective(op->kind))
        return coll_time(c, op);
    double mem_bw = hw->mem_bw * hw->mem_eff;
    double t_mem = op->bytes / mem_bw;
    double t_flops = 0;
    double peak = hw->peak_flops[op->dtype];
    if (peak <= 0)
        peak = hw->peak_flops[CCS_FP32];
    switch (op->kind) {
    case CCS_OP_GEMM:
    case CCS_OP_BMM: {
        double eff, shape;
        if (c->memo) {
            const memo_gemm *e =
                memo_gemm_get(c->memo, hw, op->dtype, op->m, op->n, op->k, op->batch);
            eff = e->eff;
            shape = e->shape;
        } else {
            eff = hw_gemm_eff(hw, op->dtype, NULL);
            shape = cost_gemm_shape_efficiency(hw, op->dtype, op->m, op->n, op->k, op->batch);
        }
        t_flops = op->flops / (peak * eff * hw->clock_ratio * c->sync_derate * shape);
        break;
    }
    case CCS_OP_ATTENTION: {
        int bwd = op->region == CCS_RG_BWD_ATTN;
        int k = c->stack ? c->stack->attn_kernel : CCS_ATTN_GEMM_REL;
        /* op: m queries, n keys, k head dimension; every model is causal */
        if (k == CCS_ATTN_GEMM_REL || k == CCS_ATTN_UNFUSED) {
            double eff = hw_gemm_eff(hw, op->dtype, NULL) *
                         (bwd ? CCS_ATTN_REL_EFF_BWD : CCS_ATTN_REL_EFF_FWD);
            t_flops = op->flops / (peak * eff * hw->clock_ratio * c->sync_derate);
            break;
        }
        /* A measured kernel, at the clock its benchmark ran at. The sustained
         * clock of the catalog (clock_ratio) is the power cap's under dense
         * GEMMs: dynamic power goes with switching activity times clock
         * (P = a C V^2 f), so a kernel keeping the matrix units busy u of the
         * best GEMM's share draws u of the power at the same clock and is held
         * back only to clock_ratio / u of it, never above the clock measured. */
        double eff = attn_kernel_eff(hw, k, op->k, op->n, 1, bwd);
        double u = eff / hw_gemm_eff(hw, CCS_BF16, NULL);
        double clock = u > hw->clock_ratio ? hw->clock_ratio / u : 1.0;
        t_flops = op->flops / (peak * eff * clock * c->sync_derate);
        break;
    }
    default:
        /* element-wise work runs on the vector units: bandwidth-bound here,
         * with the stack's traffic per fused kernel's */
        if (c->stack)
            t_mem *= c->stack->eltwise_factor;
        break;
    }
    double t = (t_flops > t_mem ? t_flops : t_mem) + hw->kernel_lat;
    /* the host issues kernels no faster than the framework's time per kernel */
    if (c->stack && t < c->stack->op_overhead)
        t = c->stack->op_overhead;
    return t;
}

static void gen_factors(const ccs_evolution *ev, int gen, double f[5])
{
    f[0] = f[1] = f[2] = f[3] = f[4] = 1.0;
    if (ev && gen > 0) {
        f[0] = pow(ev->flops, gen);
        f[1] = pow(ev->mem_bw, gen);
        f[2] = pow(ev->intra_bw, gen);
        f[3] = pow(ev->inter_bw, gen);
        f[4] = pow(ev->latency, gen);
    }
}

static void init_with(ccs_cost *c, const ccs_hw *hw, const struct ccs_opmodel *om, int gen,
                      const ccs_plan *p, const double f[5], double derate)
{
    c->hw = hw;
    c->om = om;
    c->generation = gen;
    c->scale.f_flops = f[0];
    c->scale.f_mem = f[1];
    c->scale.f_intra = f[2];
    c->scale.f_inter = f[3];
    c->scale.f_lat = f[4];
    c->scale.net_bw_factor = p ? p->net_bw_factor : 1.0;
    c->scale.innet_reduce = p ? p->innet_reduce : 0;
    c->sync_derate = derate;
    c->memo = NULL;
    c->stack = NULL;
}

void cost_set_stack(ccs_cost *c, const ccs_stack *st)
{
    c->stack = st;
}

double cost_synthetic(const ccs_cost *c, const ccs_op *op)
{
    return synthetic(c, op);
}

void cost_init(ccs_cost *c, const ccs_hw *hw, const struct ccs_opmodel *om, const ccs_evolution *ev,
               int gen, const ccs_plan *p)
{
    double f[5];
    gen_factors(ev, gen, f);
    init_with(c, hw, om, gen, p, f, cost_straggler_derate(hw->variability, p ? p->devices : 1));
}

void cost_init_memo(ccs_cost *c, ccs_costmemo *m, const ccs_hw *hw, const struct ccs_opmodel *om,
                    const ccs_evolution *ev, int gen, const ccs_plan *p)
{
    gen_key gk = {ev, gen, 1};
    memo_gen *g = &m->gen[key_slot(&gk, sizeof gk, MEMO_GEN)];
    if (memcmp(&g->key, &gk, sizeof gk)) {
        g->key = gk;
        gen_factors(ev, gen, g->f);
    }
    derate_key dk = {hw->variability, p ? p->devices : 1, 1};
    memo_derate *d = &m->derate[key_slot(&dk, sizeof dk, MEMO_DERATE)];
    if (memcmp(&d->key, &dk, sizeof dk)) {
        d->key = dk;
        d->derate = cost_straggler_derate(dk.sigma, dk.n);
    }
    init_with(c, hw, om, gen, p, g->f, d->derate);
    c->memo = m;
}

void cost_op(const ccs_cost *c, const ccs_op *op, ccs_optime *out)
{
    cost_ops(c, op, 1, out);
}

void cost_ops(const ccs_cost *c, const ccs_op *ops, int n, ccs_optime *out)
{
    for (int i = 0; i < n; i++) {
        if (c->om && opmodel_eval(c->om, &c->scale, &ops[i], &out[i]) == 0)
            continue;
        out[i].t = out[i].lo = out[i].hi = synthetic(c, &ops[i]);
        out[i].extrap = 0;
    }
}
