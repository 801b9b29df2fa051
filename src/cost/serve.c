/* serve.c - the serving projection: every formula of prefill, decode, KV cache
 * and in-flight batching in one place, each engine figure with its source.
 *
 * An engine iteration ("step") runs `decode` tokens (one per request in the
 * decode phase) and `prefill` prompt tokens through each layer of a replica.
 * Its operators are the training cost model's (opcost.h): GEMMs through the
 * roofline with wave quantization, attention through the fused-attention
 * operator (prefill: the training forward kernel's efficiency; decode: the same
 * operator, memory-bound on the KV cache it streams), collectives through
 * NCCL's algorithms plus the one-shot all-reduce inference engines use for
 * small messages. Nothing is overlapped: decode's TP all-reduces sit between
 * the GEMMs that produce and consume them.
 *
 * Steady state of continuous batching at concurrency C: every step decodes C
 * tokens (B < C of the C in turn where the token budget binds, see steady),
 * and since each request leaves after osl decodes, isl / osl prompt tokens
 * arrive per decoded token. With chunked prefill they ride in the same step
 * (weights read once for both); without, they run as prefill-only iterations
 * that stall decode. A benchmark's finite run is not at that steady state (its
 * prompts come first, its last requests decode alone): serve_at_rate simulates
 * it one engine iteration at a time (finite_run).
 * Not modelled: speculative decoding, prefix caching,
 * disaggregated prefill/decode, preemption, request-length spread, the host
 * scheduler's own time. */
#include "ccsweep/cost/serve.h"
#include "ccsweep/cost/timeline.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- formats ------------------------------------------------------------------ */

/* NVFP4 stores 4-bit E2M1 values with one FP8 (E4M3) scale per block of 16
 * (NVIDIA technical blog, "Introducing NVFP4 for Efficient and Accurate
 * Low-Precision Inference", 2025): 0.5 + 1/16 bytes per element. Per-tensor
 * fp8 scales are negligible. */
static const double sdtype_size[CCS_S_N] = {2, 2, 1, 0.5 + 1.0 / 16};
static const char *const sdtype_names[CCS_S_N] = {"bf16", "fp16", "fp8", "fp4"};

double serve_dtype_bytes(int s)
{
    return s >= 0 && s < CCS_S_N ? sdtype_size[s] : 0.0;
}

const char *serve_dtype_name(int s)
{
    return s >= 0 && s < CCS_S_N ? sdtype_names[s] : "?";
}

int serve_dtype_parse(const char *s)
{
    for (int i = 0; s && i < CCS_S_N; i++)
        if (!strcmp(s, sdtype_names[i]))
            return i;
    return -1;
}

/* ---- engine figures ------------------------------------------------------------ */

/* Skinny GEMMs (decode: a few to a few hundred rows against a whole weight
 * matrix) stream their weights at less than a STREAM kernel: the best CUTLASS
 * fp8 kernels for 16..64 x 14336 x 4096 on H100 SXM reach ~2.2 TB/s, ~68% of
 * peak by Nsight Compute, "always peaking at ~70%" (NVIDIA/cutlass issue 1139).
 * Against the H100 STREAM triad (2.97 TB/s, the h100-sxm catalog's
 * mem_efficiency) that is 2.2 / 2.97 = 0.74, taken as the same fraction of
 * every device's streaming bandwidth. */
#define SERVE_SKINNY_BW 0.74

/* NVFP4 GEMMs on fp4 matrix units stream their weights at less: the CUTLASS
 * NVFP4 kernel (TensorRT-LLM's, cutlass_kernels/fp4_gemm) at 1 x 8192 x 8192
 * on B200 reaches 1.78 TB/s of its 4-bit values, where 16-bit GEMMs of that
 * shape reach 5-6 TB/s (flashinfer-ai/flashinfer issue 1732, CUTLASS
 * backend). With the block scales (0.5625 bytes an element, sdtype_size) that
 * is 2.00 TB/s: 2.00 / (7.7 TB/s x 0.865, the b200 entry's streaming rate) =
 * 0.30, taken for every device's fp4 units. */
#define SERVE_FP4_SKINNY_BW 0.30

/* One-shot all-reduce (each rank reads every peer's buffer over NVLink and
 * sums; vLLM's custom all-reduce "ca_1stage", TensorRT-LLM's ONESHOT), which
 * inference engines pick for decode-sized messages. vLLM PR 24532 measured it
 * on 4 H100 at 10 us for 0.5 MB and 14 us for 1 MB: with (n-1) x bytes read at
 * the ring's achieved NVLink rate (367 GB/s) that leaves a fixed 5.7 and 5.4
 * us, 5.5 us taken, scaled by the fabric's per-step latency relative to the
 * 1.9 us of the H100 entry (so hardware evolution carries it). */
#define SERVE_ONESHOT_LAT 5.5e-6
#define SERVE_ONESHOT_REF_LAT 1.9e-6

/* trtllm-bench's build heuristic (NVIDIA/TensorRT-LLM
 * tensorrt_llm/bench/build/tuning.py, calc_engine_setting/finetune_setting):
 * the KV requests it expects from kv_cache_gpu_mem_fraction 0.95 of the
 * memory left after the engine's weights, a batch of at most 4096 / pp
 * rounded up, and max_num_tokens = batch x (1 + isl/osl) capped at 32768 and
 * rounded up (at least 2048). */
#define SERVE_BENCH_FRACTION 0.95
#define SERVE_BENCH_MAX_BATCH 4096
#define SERVE_BENCH_MAX_TOKENS 32768

/* ---- plan ---------------------------------------------------------------------- */

void serve_plan_defaults(ccs_serve_plan *p)
{
    memset(p, 0, sizeof *p);
    p->tp = p->pp = p->ep = 1;
    p->wdtype = p->kvdtype = CCS_S_BF16;
    p->chunked = 1;
}

int serve_plan_check(const ccs_model *m, const ccs_hw *hw, ccs_serve_plan *p)
{
    if (p->tp < 1 || p->pp < 1 || p->ep < 1 || p->isl < 1 || p->osl < 1 || p->concurrency < 0 ||
        p->max_num_tokens < 0 || p->dp < 0 || p->devices < 0 || !(p->kv_fraction >= 0) ||
        p->kv_fraction > 1)
        return CCS_R_NONPOSITIVE;
    int64_t rep = (int64_t)p->tp * p->pp;
    if (rep > CCS_MAX_DEVICES)
        return CCS_R_DEVICES;
    if (p->dp == 0) {
        if (p->devices == 0)
            p->devices = (int32_t)rep;
        if (p->devices % rep)
            return CCS_R_DEVICES;
        p->dp = (int32_t)(p->devices / rep);
    } else if (p->devices == 0) {
        if (rep * p->dp > CCS_MAX_DEVICES)
            return CCS_R_DEVICES;
        p->devices = (int32_t)(rep * p->dp);
    } else if (rep * p->dp != p->devices)
        return CCS_R_DEVICES;
    if (p->wdtype < 0 || p->wdtype >= CCS_S_N || p->kvdtype < 0 || p->kvdtype >= CCS_S_N)
        return CCS_R_DTYPE;
    if (p->wdtype == CCS_S_FP8 && !(hw->peak_flops[CCS_FP8] > 0))
        return CCS_R_DTYPE; /* fp8 GEMMs need fp8 units (W8A8, as TensorRT-LLM's FP8) */
    if (m->heads % p->tp && !p->attn_dp)
        return CCS_R_TP_HEADS;
    if (!model_is_mla(m) && !p->attn_dp && m->kv_heads % p->tp && p->tp % m->kv_heads)
        return CCS_R_TP_KV;
    if (m->layers % p->pp)
        return CCS_R_PP_LAYERS;
    if (p->tp % p->ep || (p->ep > 1 && (m->experts == 0 || m->experts % p->ep)))
        return CCS_R_EP;
    if (p->attn_dp && (m->experts == 0 || p->ep != p->tp))
        return CCS_R_EP;
    int32_t moe_tp = p->tp / p->ep;
    if ((m->experts == 0 || m->dense_layers > 0) && !p->attn_dp && m->ffn % p->tp)
        return CCS_R_TP_FFN;
    if (m->experts > 0 && m->moe_ffn % moe_tp)
        return CCS_R_TP_FFN;
    return CCS_R_OK;
}

void serve_cost_init(ccs_cost *c, const ccs_hw *hw, const ccs_serve_plan *p)
{
    ccs_plan tp;
    plan_defaults(&tp);
    tp.devices = p->tp * p->pp;
    cost_init(c, hw, NULL, NULL, 0, &tp);
}

/* ---- the shape of one replica -------------------------------------------------- */

/* What the step and the memory need of a model under a plan, per device. */
typedef struct shape {
    double h, qdim, kvh_dev, hd, heads_dev;
    double attn_w;       /* attention weights per device, parameters */
    double kv_tok_layer; /* KV bytes per token per layer held by the device */
    double moe_tp;       /* ways one expert is split */
    double experts_dev;  /* experts held per device */
    double ffn_w_dense;  /* dense FFN weights per device */
    double shared_w;     /* shared experts' weights per device */
    double expert_w;     /* one routed expert's weights per device (its 1/moe_tp) */
    double vocab_dev;    /* head rows per device */
    double tp;
    int32_t layers_stage;
    int dp_attn; /* attention data parallel (tokens per rank 1/tp) */
} shape;

static void shape_of(const ccs_model *m, const ccs_serve_plan *p, shape *s)
{
    double tp = p->tp, kvb = serve_dtype_bytes(p->kvdtype);
    s->dp_attn = p->attn_dp;
    s->tp = tp;
    double atp = p->attn_dp ? 1 : tp; /* ways attention is split */
    s->h = m->hidden;
    s->hd = model_qk_head_dim(m);
    s->heads_dev = m->heads / atp;
    s->qdim = s->heads_dev * s->hd;
    if (model_is_mla(m)) {
        /* the latent (kv_lora_rank) and the shared rotary key per token, the
         * same on every TP rank (DeepSeek-V2, arXiv 2405.04434, section 2.1.2:
         * (d_c + d_h^R) l elements per token) */
        s->kvh_dev = 1;
        s->kv_tok_layer = (m->kv_lora_rank + m->qk_rope_dim) * kvb;
        s->attn_w = model_attn_params(m) / atp;
    } else {
        /* each rank holds at least one KV head: replicated when tp > kv_heads
         * (TensorRT-LLM tuning.py: adjusted_num_kv_heads = max(tp, kv_heads)) */
        s->kvh_dev = m->kv_heads >= atp ? m->kv_heads / atp : 1;
        s->kv_tok_layer = 2.0 * s->kvh_dev * s->hd * kvb;
        s->attn_w = s->h * s->qdim * 2 + s->h * 2 * s->kvh_dev * s->hd;
    }
    s->moe_tp = m->experts > 0 ? (double)p->tp / p->ep : 1;
    s->experts_dev = m->experts > 0 ? (double)m->experts / p->ep : 0;
    double ftp = p->attn_dp ? 1 : tp; /* dense FFN and shared experts: with the attention */
    s->ffn_w_dense = model_mlp_params(m, m->ffn) / ftp;
    s->shared_w = m->experts > 0 ? m->shared_experts * model_mlp_params(m, m->moe_ffn) / ftp : 0;
    s->expert_w = m->experts > 0 ? model_mlp_params(m, m->moe_ffn) / s->moe_tp : 0;
    s->vocab_dev = m->vocab / atp;
    s->layers_stage = m->layers / p->pp;
}

/* Dense-FFN blocks on stage st (the model's first dense_layers blocks). */
static int32_t stage_dense(const ccs_model *m, const shape *s, int32_t st)
{
    int32_t d = model_dense_layers(m) - st * s->layers_stage;
    return d < 0 ? 0 : d > s->layers_stage ? s->layers_stage : d;
}

int serve_stage_reps(const ccs_model *m, int32_t pp, int32_t rep[CCS_SERVE_STAGE_REPS])
{
    assert(m && pp >= 1 && m->layers >= pp);
    int32_t L = m->layers / pp, k = model_dense_layers(m) / L;
    int32_t cand[CCS_SERVE_STAGE_REPS] = {0, 1, k, k + 1, pp - 1};
    int n = 0;
    for (int i = 0; i < CCS_SERVE_STAGE_REPS; i++) {
        int32_t st = cand[i];
        /* cand rises but for pp - 1, which k and k + 1 pass when the dense
         * blocks reach the last stage: those are past the pipeline's end */
        if (st < pp && (n == 0 || st > rep[n - 1]))
            rep[n++] = st;
    }
    return n;
}

/* Weights per device of the fullest stage, bytes. Linear layers in the plan's
 * weight format; embedding, head, norms and router in 16 bits (quantization
 * recipes leave them: TensorRT-LLM ModelOpt FP8/NVFP4 keep lm_head). A stage's
 * weights depend only on what serve_stage_reps groups by, so its stages
 * stand for all. */
static double weight_bytes(const ccs_model *m, const ccs_serve_plan *p, const shape *s)
{
    double wb = serve_dtype_bytes(p->wdtype);
    double moe = s->shared_w * wb + s->experts_dev * s->expert_w * wb + s->h * m->experts * 2;
    double block_moe = s->attn_w * wb + moe + 4 * s->h;
    double block_dense = s->attn_w * wb + s->ffn_w_dense * wb + 4 * s->h;
    if (m->experts == 0)
        block_moe = block_dense;
    double emb = s->vocab_dev * s->h * 2, head = (m->tied ? 0 : s->vocab_dev * s->h * 2);
    double best = 0;
    int32_t rep[CCS_SERVE_STAGE_REPS];
    int nrep = serve_stage_reps(m, p->pp, rep);
    for (int i = 0; i < nrep; i++) {
        int32_t st = rep[i], d = stage_dense(m, s, st);
        double w = d * block_dense + (s->layers_stage - d) * block_moe;
        if (st == 0)
            w += emb;
        if (st == p->pp - 1)
            w += head;
        best = fmax(best, w);
    }
    return best;
}

/* ---- operators ------------------------------------------------------------------ */

/* The step's accumulator: times by kind, and the true bytes and flops. */
typedef struct acc {
    const ccs_cost *c;
    ccs_serve_step *st;
    double scale; /* occurrences (layers of the stage) */
    int fp4;      /* weights in NVFP4 on fp4 matrix units */
} acc;

/* Cost op through the training cost model and add it (true_bytes: the
 * device-memory bytes it moves, 0 for collectives). */
static void add_op(acc *a, const ccs_op *op, double true_bytes)
{
    ccs_optime t;
    cost_op(a->c, op, &t);
    double n = a->scale * op->count;
    ccs_serve_step *st = a->st;
    if (opkind_is_collective(op->kind)) {
        st->t_comm += n * t.t;
        st->comm_bytes += n * op->bytes;
        return;
    }
    const ccs_hw *hw = a->c->hw;
    double t_mem = op->bytes / (hw->mem_bw * hw->mem_eff) + hw->kernel_lat;
    if (t.t > t_mem * (1 + 1e-12))
        st->t_compute += n * t.t;
    else
        st->t_memory += n * t.t;
    st->t_overhead += n * hw->kernel_lat;
    st->flops += n * op->flops;
    st->bytes += n * true_bytes;
}

/* A GEMM of m tokens x (k -> n) with weight bytes wbytes (batch: grouped
 * experts): the training roofline (opcost.c) with two serving changes.
 * Weights stream at the skinny-GEMM rate (SERVE_SKINNY_BW). Outputs of fewer
 * outputs that would not fill the device once in the large kernel's tiles
 * run small-tile (split-K, GEMV-like) kernels, which the big tile's wave
 * quantization would make look compute-bound: the CUTLASS measurement behind
 * SERVE_SKINNY_BW (m = 16..64) is bandwidth-bound, so there only the depth
 * efficiency applies. */
static void gemm(acc *a, int dtype, double m, double n, double k, double batch, double wbytes)
{
    if (!(m > 0) || !(batch > 0))
        return;
    const ccs_hw *hw = a->c->hw;
    double act = batch * m * (k + n) * 2, bytes = wbytes + act;
    double flops = 2 * m * n * k * batch;
    double wave = (double)hw->compute_units * hw->tile_m * hw->tile_n;
    double shape = m * n * batch >= wave
                       ? cost_gemm_shape_efficiency(hw, dtype, ceil(m), n, k, ceil(batch))
                       : cost_gemm_k_efficiency(hw, dtype, k);
    double rate = hw_gemm_flops(hw, dtype) * a->c->sync_derate * shape;
    double t_f = flops / rate;
    /* the plan's fp4 GEMMs run in the fp8 slot of the fp4 copy of the device */
    double skinny = a->fp4 && dtype == CCS_FP8 ? SERVE_FP4_SKINNY_BW : SERVE_SKINNY_BW;
    double t_m = bytes / (hw->mem_bw * hw->mem_eff * skinny);
    double t = fmax(t_f, t_m) + hw->kernel_lat;
    ccs_serve_step *st = a->st;
    double n_ = a->scale;
    if (t_f > t_m)
        st->t_compute += n_ * t;
    else
        st->t_memory += n_ * t;
    st->t_overhead += n_ * hw->kernel_lat;
    st->flops += n_ * flops;
    st->bytes += n_ * bytes;
    st->bytes_weights += n_ * wbytes;
}

static void eltwise(acc *a, double bytes, double count)
{
    if (!(bytes > 0))
        return;
    ccs_op op = {.kind = CCS_OP_ELEMENTWISE,
                 .region = CCS_RG_FWD_MLP,
                 .dtype = CCS_BF16,
                 .bytes = bytes,
                 .count = count};
    add_op(a, &op, bytes);
}

static void attention(acc *a, double flops, double bytes)
{
    if (!(flops > 0))
        return;
    ccs_op op = {.kind = CCS_OP_ATTENTION,
                 .region = CCS_RG_FWD_ATTN,
                 .dtype = CCS_BF16,
                 .flops = flops,
                 .bytes = bytes,
                 .count = 1};
    add_op(a, &op, bytes);
}

/* A TP all-reduce of `bytes`: NCCL's best (opcost) or the one-shot kernel
 * inside the scale-up domain, whichever is faster. */
static void allreduce(acc *a, int32_t group, double bytes)
{
    if (group < 2 || !(bytes > 0))
        return;
    const ccs_hw *hw = a->c->hw;
    int32_t per_node = group <= hw_scaleup(hw) ? group : hw_scaleup(hw);
    ccs_op op = {.kind = CCS_OP_ALLREDUCE,
                 .region = CCS_RG_FWD_MLP_TP,
                 .comm = CCS_COMM_TP,
                 .dtype = CCS_BF16,
                 .group = group,
                 .per_node = per_node,
                 .bytes = bytes,
                 .count = 1};
    ccs_optime t;
    cost_op(a->c, &op, &t);
    if (per_node == group) {
        double f = a->c->scale.net_bw_factor > 0 ? a->c->scale.net_bw_factor : 1;
        double one = SERVE_ONESHOT_LAT * hw->intra_lat / SERVE_ONESHOT_REF_LAT +
                     (group - 1) * bytes / (hw->intra_bw * hw->intra_eff * f);
        t.t = fmin(t.t, one);
    }
    a->st->t_comm += a->scale * t.t;
    a->st->comm_bytes += a->scale * bytes;
}

static void coll(acc *a, int kind, int32_t group, double bytes, double count)
{
    if (group < 2 || !(bytes > 0))
        return;
    const ccs_hw *hw = a->c->hw;
    ccs_op op = {.kind = (uint8_t)kind,
                 .region = CCS_RG_FWD_MLP_EP,
                 .comm = CCS_COMM_EP,
                 .dtype = CCS_BF16,
                 .group = group,
                 .per_node = group <= hw_scaleup(hw) ? group : hw_scaleup(hw),
                 .bytes = bytes,
                 .count = count};
    add_op(a, &op, 0);
}

/* ---- one layer, one stage, one step ---------------------------------------------- */

/* Expected distinct experts among n that t tokens routed top_k each touch,
 * routing uniform and independent: n (1 - (1 - k/E)^t) of the device's n. */
static double experts_touched(const ccs_model *m, double n, double t)
{
    if (t <= 0)
        return 0;
    double miss = 1.0 - (double)m->top_k / m->experts;
    return n * (1.0 - pow(miss, t));
}

/* The plan's weights are NVFP4 and the device has fp4 matrix units. */
static int fp4_units(const ccs_serve_plan *p, const ccs_hw *hw)
{
    return p->wdtype == CCS_S_FP4 && hw->peak_fp4 > 0;
}

/* The GEMM dtype of the plan's weights: fp8 weights run fp8 GEMMs; fp4
 * (NVFP4) runs on fp4 units where the device has them (gemm dtype slot
 * CCS_FP8 of a copy of the hardware carries their peak, see serve_step), else
 * dequantized to 16-bit GEMMs (weight-only). */
static int gemm_dtype(const ccs_serve_plan *p, const ccs_hw *hw)
{
    if (p->wdtype == CCS_S_FP8 || fp4_units(p, hw))
        return CCS_FP8;
    return p->wdtype == CCS_S_FP16 ? CCS_FP16 : CCS_BF16;
}

/* One block (dense FFN or mixture of experts) for T tokens (dec decode tokens
 * at context ctx, pre prompt tokens of prompts of length isl) on one device,
 * added scale times. */
static void block(acc *a, const ccs_model *m, const ccs_serve_plan *p, const shape *s, int dense,
                  double dec, double ctx, double pre, double isl)
{
    const ccs_hw *hw = a->c->hw;
    int dt = gemm_dtype(p, hw);
    double wb = serve_dtype_bytes(p->wdtype);
    double tp = p->tp, h = s->h;
    double T = dec + pre;
    /* tokens through this device's attention: all of them under TP, its own
     * share under attention data parallelism */
    double ra = s->dp_attn ? 1.0 / tp : 1.0;
    double Ta = T * ra, deca = dec * ra, prea = pre * ra;
    /* input norm, then Q/K/V (for latent attention its down and up projections) */
    eltwise(a, Ta * h * 2 * 2, 1);
    double w_out = s->heads_dev * model_v_head_dim(m) * h;
    double w_in = s->attn_w - w_out;
    gemm(a, dt, Ta, w_in / h, h, 1, w_in * wb);
    /* rotary embedding and the KV-cache write */
    double kvw = Ta * s->kv_tok_layer;
    eltwise(a, Ta * s->qdim * 2 * 2 + kvw, 1);
    a->st->bytes_kv_write += a->scale * kvw;
    /* decode attention: every request streams its whole KV cache (paged /
     * flash-decoding kernels: memory-bound). Scores and values per head:
     * 2 x 2 x ctx x head_dim; latent attention with absorbed projections works
     * in the latent: 2 ctx (d_c + d_rope) + 2 ctx d_c per head. */
    double per_head =
        model_is_mla(m) ? 2 * ctx * (2.0 * m->kv_lora_rank + m->qk_rope_dim) : 4 * ctx * s->hd;
    double kvr = deca * ctx * s->kv_tok_layer;
    attention(a, deca * s->heads_dev * per_head, kvr + deca * s->qdim * 4);
    a->st->bytes_kv_read += a->scale * kvr;
    /* prefill attention (the training forward kernel): causal, isl/2 keys per
     * query on average */
    double per_head_p =
        model_is_mla(m) ? 2 * (isl / 2) * (s->hd + model_v_head_dim(m)) : 4 * (isl / 2) * s->hd;
    attention(a, prea * s->heads_dev * per_head_p, prea * (s->qdim * 4 + s->kv_tok_layer));
    gemm(a, dt, Ta, h, w_out / h, 1, w_out * wb);
    if (!s->dp_attn)
        allreduce(a, p->tp, T * h * 2);
    eltwise(a, Ta * h * 2 * 3, 1); /* residual add and the second norm */
    if (dense || m->experts == 0) {
        double f = (s->dp_attn ? m->ffn : m->ffn / tp);
        double g = m->gated ? 2 : 1;
        gemm(a, dt, Ta, g * f, h, 1, h * g * f * wb);
        eltwise(a, Ta * f * (g + 1) * 2, 1);
        gemm(a, dt, Ta, h, f, 1, h * f * wb);
        if (!s->dp_attn)
            allreduce(a, p->tp, T * h * 2);
        return;
    }
    /* mixture of experts: router, routed experts (grouped GEMMs over the
     * experts the tokens touch), shared experts */
    gemm(a, CCS_BF16, Ta, m->experts, h, 1, h * m->experts * 2);
    double ef = m->moe_ffn / s->moe_tp, g = m->gated ? 2 : 1;
    /* DEP: every rank's tokens (quantized to the GEMM input format) gathered
     * to all ranks before the experts and the outputs reduce-scattered after
     * (TensorRT-LLM's fused MoE with attention data parallelism,
     * tensorrt_llm/_torch/modules/fused_moe: allgather when use_dp) */
    double qin = dt == CCS_FP8 ? serve_dtype_bytes(p->wdtype) : 2; /* GEMM input bytes */
    if (s->dp_attn) {
        coll(a, CCS_OP_ALLGATHER, p->tp, T * h * qin, 1);
        coll(a, CCS_OP_REDUCESCATTER, p->tp, T * h * 2, 1);
    }
    double touched = experts_touched(m, s->experts_dev, T);
    double tok_local = T * m->top_k / p->ep; /* tokens this device's experts take */
    if (touched > 0) {
        /* TensorRT-LLM's MoE runs two passes around the grouped GEMMs
         * (cpp/tensorrt_llm/kernels/mixtureOfExperts/moe_kernels.cu):
         * expandInputRowsKernel copies each token's hidden state once per
         * expert it is routed to, in the GEMM's input format, and
         * finalizeMoeRoutingKernel reads the second GEMM's rows back, scales
         * and sums a token's top_k of them (the k-way reduction). Every TP
         * rank does both for all T tokens: under TP they are not divided. */
        eltwise(a, T * h * 2 + tok_local * h * qin, 1);
        double mt = tok_local / touched;
        gemm(a, dt, mt, g * ef, h, touched, touched * h * g * ef * wb);
        eltwise(a, tok_local * ef * (g + 1) * 2, 1);
        gemm(a, dt, mt, h, ef, touched, touched * h * ef * wb);
        eltwise(a, tok_local * h * 2 + T * h * 2, 1);
    }
    if (m->shared_experts > 0) {
        double sf = m->shared_experts * (double)m->moe_ffn / (s->dp_attn ? 1 : tp);
        gemm(a, dt, Ta, g * sf, h, 1, h * g * sf * wb);
        gemm(a, dt, Ta, h, sf, 1, h * sf * wb);
    }
    if (!s->dp_attn)
        allreduce(a, p->tp, T * h * 2);
}

void serve_step(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, double decode,
                double ctx, double prefill, ccs_serve_step *out)
{
    assert(m && p && c && out && p->pp >= 1 && p->tp >= 1);
    memset(out, 0, sizeof *out);
    out->decode = decode;
    out->prefill = prefill;
    /* fp4 GEMMs on fp4 units: a copy of the hardware whose fp8 slot holds the
     * fp4 peak and the measured fp4 GEMM efficiency (the fp8 one where the
     * catalog has no fp4 measurement) */
    ccs_hw h4;
    ccs_cost c4 = *c;
    int fp4 = fp4_units(p, c->hw);
    if (fp4) {
        h4 = *c->hw;
        h4.peak_flops[CCS_FP8] = h4.peak_fp4;
        if (h4.gemm_eff_fp4 > 0) {
            h4.gemm_eff_fp8 = h4.gemm_eff_fp4;
            h4.gemm_fp8_ref_k = h4.gemm_fp4_ref_k;
        }
        c4.hw = &h4;
        c4.memo = NULL;
    }
    shape s;
    shape_of(m, p, &s);
    /* The pipeline holds pp micro-batches of decode / pp and prefill / pp
     * tokens; a token crosses every stage. In steady state a stage passes one
     * micro-batch per period T and no stage starts the next before finishing
     * the last, so T is the slowest stage's pass, max_st t_st: a faster stage
     * waits on its slower neighbour's output or input. A micro-batch's next
     * token needs its previous one through all pp stages, and the pp
     * micro-batches take their turns at stage 0 one period apart, so each is
     * back after pp periods: the iteration (one token of every request) is
     * pp T. Only the slowest stage counts, and serve_stage_reps gives the few
     * stages among which it is, so the iteration costs at most
     * CCS_SERVE_STAGE_REPS stages whatever pp. */
    double pp = p->pp, dec = decode / pp, pre = prefill / pp;
    double isl = p->isl;
    double worst = 0;
    ccs_serve_step best;
    memset(&best, 0, sizeof best);
    int32_t rep[CCS_SERVE_STAGE_REPS];
    int nrep = serve_stage_reps(m, p->pp, rep);
    for (int i = 0; i < nrep; i++) {
        int32_t st = rep[i];
        ccs_serve_step one;
        memset(&one, 0, sizeof one);
        out->stages++;
        acc a = {.c = &c4, .st = &one, .scale = 0, .fp4 = fp4};
        int32_t d = stage_dense(m, &s, st);
        a.scale = d;
        if (d > 0)
            block(&a, m, p, &s, 1, dec, ctx, pre, isl);
        a.scale = s.layers_stage - d;
        if (a.scale > 0)
            block(&a, m, p, &s, 0, dec, ctx, pre, isl);
        a.scale = 1;
        if (st == p->pp - 1) {
            /* output head for the tokens that sample: decode tokens, and one per
             * prompt that completes */
            double rows = dec + (isl > 0 ? pre / isl : 0);
            double ra = s.dp_attn ? 1.0 / p->tp : 1.0;
            gemm(&a, CCS_BF16, rows * ra, s.vocab_dev, s.h, 1, s.vocab_dev * s.h * 2);
        }
        if (p->pp > 1) {
            const ccs_hw *hw = c->hw;
            int intra = (int64_t)p->tp * p->pp <= hw_scaleup(hw);
            ccs_op op = {.kind = CCS_OP_P2P,
                         .region = CCS_RG_PP_COMM,
                         .comm = CCS_COMM_PP,
                         .dtype = CCS_BF16,
                         .group = 2,
                         .per_node = intra ? 2 : 1,
                         .bytes = (dec + pre) * s.h * 2,
                         .count = 1};
            add_op(&a, &op, 0);
        }
        double t = one.t_compute + one.t_memory + one.t_comm;
        if (st == 0 || t > worst) {
            worst = t;
            best = one;
        }
    }
    /* pp stage-steps per token, each a micro-batch's pass of the slowest stage */
    out->t_compute = pp * best.t_compute;
    out->t_memory = pp * best.t_memory;
    out->t_comm = pp * best.t_comm;
    out->t_overhead = pp * best.t_overhead;
    out->flops = pp * best.flops;
    out->bytes = pp * best.bytes;
    out->bytes_weights = pp * best.bytes_weights;
    out->bytes_kv_read = pp * best.bytes_kv_read;
    out->bytes_kv_write = pp * best.bytes_kv_write;
    out->comm_bytes = pp * best.comm_bytes;
    out->t = out->t_compute + out->t_memory + out->t_comm;
    const ccs_hw *hw = c4.hw;
    double peak = 0;
    for (int d = 0; d < CCS_DTYPE_N; d++)
        peak = fmax(peak, hw->peak_flops[d]);
    out->t_hbm_floor = out->bytes / hw->mem_bw;
    out->t_flops_floor = out->flops / peak;
}

/* ---- memory, concurrency, steady state ------------------------------------------ */

/* trtllm-bench's max batch and max_num_tokens (finetune_setting). */
static void bench_setting(double kv_requests, double isl, double osl, int32_t pp, int32_t *bs,
                          int32_t *tokens)
{
    double raw_bs = fmin(kv_requests, SERVE_BENCH_MAX_BATCH) / pp;
    double raw_tok = fmin(raw_bs * (1 + isl / osl), SERVE_BENCH_MAX_TOKENS);
    double b = raw_bs < 256    ? fmax(64, 32 * ceil(raw_bs / 32))
               : raw_bs < 1024 ? 128 * ceil(raw_bs / 128)
                               : 256 * ceil(raw_bs / 256);
    double t = raw_tok < 4096   ? fmax(2048, 256 * ceil(raw_tok / 256))
               : raw_tok < 8192 ? 512 * ceil(raw_tok / 512)
                                : 1024 * ceil(raw_tok / 1024);
    *bs = (int32_t)b;
    *tokens = (int32_t)t;
}

/* The engine's activation workspace per device: the largest live tensors of
 * one iteration of max_num_tokens (reused from layer to layer: hidden states,
 * Q/K/V, the FFN's intermediate) and fp32 logits of max_batch rows. */
static double activation_bytes(const ccs_model *m, const shape *s, double tokens, double batch)
{
    double f = m->experts > 0 ? fmax(m->ffn, (double)m->moe_ffn * m->top_k) : m->ffn;
    double ways = s->dp_attn ? 1 : m->experts > 0 ? s->moe_tp : s->tp;
    double per_tok = 4 * s->h + 2 * s->qdim + 2 * f / ways;
    return tokens * per_tok * 2 + batch * s->vocab_dev * 4;
}

/* Project at a real-valued concurrency C (<= the maximum) into out, whose
 * memory fields are filled. */
static void steady(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, double C,
                   ccs_serve_result *out)
{
    double isl = p->isl, osl = p->osl;
    double ctx = isl + osl / 2; /* mean context of a decoding request */
    double cap = out->max_num_tokens;
    double B = C;
    if (p->chunked && B * (1 + isl / osl) > cap) /* the iteration's token budget */
        B = cap * osl / (isl + osl);
    double P = B * isl / osl;
    ccs_serve_step st, chunk;
    double per_replica;
    if (p->chunked) {
        serve_step(m, p, c, B, ctx, P, &st);
        /* Where the budget binds (B < C), an iteration decodes B of the C
         * requests in flight and takes the B isl / osl prompt tokens of the
         * B / osl requests that replace those leaving. The scheduler takes
         * them in turn, so a request decodes in B / C of the iterations: its
         * tokens are C / B iterations apart, TPOT = (C / B) t. Then
         * C / TPOT = B / t, the replica's output rate, as Little's law has it
         * for C requests each in the batch for osl tokens, one every TPOT;
         * without the budget binding B = C and TPOT = t. */
        out->tpot = st.t * C / B;
        per_replica = B / st.t;
        /* a new prompt rides the steps in chunks of the budget left by decode */
        double room = fmax(cap - B, 1), n = ceil(isl / room);
        serve_step(m, p, c, B, ctx, fmin(isl, room), &chunk);
        out->ttft = st.t / 2 + n * chunk.t;
    } else {
        serve_step(m, p, c, B, ctx, 0, &st);
        /* prefill-only iterations of as many prompts as the budget holds */
        double k = fmax(1, floor(cap / isl));
        serve_step(m, p, c, 0, 0, k * isl, &chunk);
        double t = st.t + B / osl / k * chunk.t;
        out->tpot = t;
        per_replica = B / t;
        ccs_serve_step one;
        serve_step(m, p, c, 0, 0, isl, &one);
        out->ttft = t / 2 + one.t;
    }
    double gpus = (double)p->tp * p->pp;
    out->step = st;
    out->tok_s_gpu = per_replica / gpus;
    out->tok_s_system = per_replica * p->dp;
    out->tok_s_gpu_limit_mem = B / st.t_hbm_floor / gpus;
    out->tok_s_gpu_limit_compute = B / st.t_flops_floor / gpus;
    out->share_compute = st.t_compute / st.t;
    out->share_memory = st.t_memory / st.t;
    out->share_comm = st.t_comm / st.t;
    out->comm_exposed_share = out->share_comm;
}

/* Memory, KV capacity, the engine's limits; returns 0 when the weights and
 * activations fit, else sets OOM. */
static int fit(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c,
               ccs_serve_result *out)
{
    const ccs_hw *hw = c->hw;
    shape s;
    shape_of(m, p, &s);
    double isl = p->isl, osl = p->osl, seq = isl + osl;
    out->mem_weights = weight_bytes(m, p, &s);
    out->kv_bytes_token = s.layers_stage * s.kv_tok_layer;
    /* trtllm-bench's expectation: all weights over all devices' memory */
    double kvb = serve_dtype_bytes(p->kvdtype), wb = serve_dtype_bytes(p->wdtype);
    double kvh = model_is_mla(m) ? 0 : fmax(p->tp, m->kv_heads);
    double bench_tok = model_is_mla(m) ? m->layers * (m->kv_lora_rank + m->qk_rope_dim) * kvb
                                       : 2.0 * m->layers * kvh * s.hd * kvb;
    double n = (double)p->tp * p->pp;
    double bench_req =
        (hw->mem_cap * n - model_params(m) * wb) * SERVE_BENCH_FRACTION / (bench_tok * seq);
    int32_t bs, tokens;
    bench_setting(fmax(bench_req, 1), isl, osl, p->pp, &bs, &tokens);
    out->max_num_tokens = p->max_num_tokens ? p->max_num_tokens : tokens;
    out->mem_activations = activation_bytes(m, &s, out->max_num_tokens, (double)bs * p->pp);
    double frac = p->kv_fraction > 0 ? p->kv_fraction : CCS_SERVE_KV_FRACTION;
    double free = hw->mem_cap - out->mem_weights - out->mem_activations;
    out->mem_kv = free > 0 ? free * frac : 0;
    /* each rank caches its own requests under attention data parallelism */
    double holders = s.dp_attn ? p->tp : 1;
    out->kv_tokens = out->kv_bytes_token > 0 ? holders * out->mem_kv / out->kv_bytes_token : 0;
    /* the engine reserves a request's whole sequence (TensorRT-LLM's default
     * GUARANTEED_NO_EVICT capacity scheduler; trtllm-bench sizes by isl + osl) */
    double req = floor(out->kv_tokens / seq);
    double lim = (double)bs * p->pp;
    out->max_concurrency = (int32_t)fmin(fmin(req, lim), 1e9);
    if (free <= 0 || out->max_concurrency < 1) {
        out->status = CCS_ST_OOM;
        out->reason = CCS_R_OOM;
        return 1;
    }
    return 0;
}

void serve_project(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c,
                   ccs_serve_result *out)
{
    assert(m && p && c && out);
    memset(out, 0, sizeof *out);
    ccs_serve_plan q = *p;
    int r = serve_plan_check(m, c->hw, &q);
    if (r != CCS_R_OK) {
        out->status = CCS_ST_INVALID;
        out->reason = r;
        return;
    }
    if (fit(m, &q, c, out))
        return;
    ccs_serve_step one;
    serve_step(m, &q, c, 0, 0, q.isl, &one);
    out->t_prefill = one.t;
    out->concurrency = q.concurrency ? q.concurrency : out->max_concurrency;
    if (out->concurrency > out->max_concurrency) {
        out->status = CCS_ST_OOM;
        out->reason = CCS_R_OOM;
        return;
    }
    steady(m, &q, c, out->concurrency, out);
}

/* A finite run of n requests (a benchmark client: request i arrives at i / qps,
 * qps <= 0: all at once), simulated one engine iteration at a time as
 * TensorRT-LLM's in-flight batching schedules them (batch_manager
 * capacity and micro-batch schedulers, GUARANTEED_NO_EVICT):
 *   - an arrived request takes a free slot of the C the KV cache and the
 *     batch limit allow, first come first served;
 *   - each iteration spends its token budget (max_num_tokens) on one token
 *     for every decoding request, then on prompt tokens, oldest first: with
 *     chunked prefill in chunks of what is left, without only whole prompts
 *     that fit (an iteration with no decode still takes one). Without
 *     chunking the prompts still share the iteration with decode (in-flight
 *     batching packs context and generation requests together); steady()'s
 *     prefill-only iterations are the stricter schedule some engines run;
 *   - the iteration that completes a prompt yields its first token; the
 *     request then decodes osl - 1 more and frees its slot.
 * Every iteration is costed by serve_step at its own mix of tokens and the
 * decoding requests' mean context, so the run's ramp (prompts before decode)
 * and tail (the last requests decoding alone) count. Requests are identical,
 * so those whose prompts complete in the same iteration form one cohort.
 * Sets the output rate (n x osl over the run, what a benchmark client
 * divides by), the mean TTFT and the mean inter-token latency and returns 1;
 * returns 0, with those unset, when the run reaches CCS_SERVE_RUN_MAX_ITER
 * iterations before its end, CCS_ENOMEM when its cohorts find no memory.
 * *iters: the iterations simulated. */

typedef struct cohort {
    double n;     /* requests */
    int64_t born; /* the iteration that produced their first token */
} cohort;

static int finite_run(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, int32_t n,
                      double qps, double C, double cap, double *ttft, double *itl, double *tok_s,
                      int64_t *iters)
{
    double isl = p->isl, osl = p->osl;
    int64_t steps = p->osl - 1; /* decode iterations after the first token */
    assert(n >= 1 && C >= 1 && cap >= 1);
    *iters = 0;
    C = floor(C);
    size_t ring = (size_t)fmin(C, (double)steps) + 1;
    cohort *q = malloc(ring * sizeof *q);
    if (!q)
        return CCS_ENOMEM;
    size_t head = 0, len = 0;
    double t = 0, n_dec = 0, born_sum = 0; /* decoding requests, sum of n x born */
    double n_ctx = 0, h = 0;               /* admitted prompts, the oldest one's progress */
    double admitted = 0, first = 0, done = 0, wait = 0, gap = 0;
    int64_t it = 0;
    int ok = 1;
    while (done < n) {
        if (it >= CCS_SERVE_RUN_MAX_ITER) {
            ok = 0;
            break;
        }
        double arrived = qps > 0 ? fmin(n, floor(t * qps + 1e-9) + 1) : n;
        double take = fmin(C - n_dec - n_ctx, arrived - admitted);
        if (take > 0) {
            n_ctx += take;
            admitted += take;
        }
        if (n_dec == 0 && n_ctx == 0) { /* idle until the next arrival */
            t = fmax(t, admitted / qps);
            continue;
        }
        double D = fmin(n_dec, cap), room = cap - D, P = 0, k = 0;
        if (p->chunked) {
            P = fmin(room, n_ctx * isl - h);
            k = floor((h + P) / isl + 1e-9);
        } else {
            k = fmin(n_ctx, floor(room / isl));
            if (k < 1 && D == 0)
                k = 1;
            P = k * isl;
        }
        double ctx = n_dec > 0 ? isl + (n_dec * (double)it - born_sum) / n_dec : 0;
        ccs_serve_step st;
        serve_step(m, p, c, D, ctx, P, &st);
        t += st.t;
        gap += D * st.t;
        if (p->chunked)
            h = fmod(h + P, isl) * (k < n_ctx);
        if (k > 0) { /* first tokens: prompts first .. first + k - 1 (arrival i / qps) */
            double arr = qps > 0 ? (k * first + k * (k - 1) / 2) / qps : 0;
            wait += k * t - arr;
            first += k;
            n_ctx -= k;
            if (steps == 0)
                done += k;
            else {
                q[(head + len) % ring] = (cohort){k, it};
                len++;
                n_dec += k;
                born_sum += k * (double)it;
            }
        }
        /* the oldest cohort frees its slots after its last decode step */
        while (len > 0 && it - q[head].born >= steps) {
            n_dec -= q[head].n;
            born_sum -= q[head].n * (double)q[head].born;
            done += q[head].n;
            head = (head + 1) % ring;
            len--;
        }
        it++;
    }
    free(q);
    *iters = it;
    if (!ok)
        return 0;
    *ttft = wait / n;
    *itl = steps > 0 ? gap / ((double)n * (double)steps) : 0;
    *tok_s = n * osl / t;
    return 1;
}

int serve_at_rate(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, double qps,
                  int32_t n_requests, ccs_serve_result *out)
{
    ccs_serve_plan q = *p;
    q.concurrency = 0;
    serve_project(m, &q, c, out);
    if (out->status != CCS_ST_OK)
        return 0;
    serve_plan_check(m, c->hw, &q);
    double cmax = out->max_concurrency, osl = q.osl;
    if (n_requests > 0) {
        /* the run itself, iteration by iteration; the steady state at its
         * largest concurrency fills the step figures */
        double cap = out->max_num_tokens, C = floor(fmin(fmin(cmax, n_requests), cap));
        double ttft, itl, tok;
        int64_t iters = 0;
        /* A request holds its slot for osl iterations at least (its prompt's
         * last, then osl - 1 decodes), C slots in all: n osl / C iterations at
         * least. A run past the limit by that bound is not started; one that
         * reaches it while simulating stops there. Either is refused: the
         * steady state is not the run. */
        int rc = (double)n_requests * osl / C > CCS_SERVE_RUN_MAX_ITER
                     ? 0
                     : finite_run(m, &q, c, n_requests, qps, C, cap, &ttft, &itl, &tok, &iters);
        out->iterations = iters;
        if (rc <= 0) {
            out->ttft = out->tpot = out->tok_s_gpu = out->tok_s_system = 0;
            out->concurrency = (int32_t)C;
            return rc < 0 ? rc : CCS_EINPUT;
        }
        steady(m, &q, c, C, out);
        out->concurrency = (int32_t)C;
        out->ttft = ttft;
        out->tpot = itl;
        double gpus = (double)q.tp * q.pp;
        out->tok_s_gpu = tok / gpus;
        out->tok_s_system = tok * q.dp;
        return qps <= 0 || qps * (ttft + (osl - 1) * itl) > C;
    }
    steady(m, &q, c, cmax, out);
    if (qps <= 0)
        return 1;
    /* Little's law for the steady state's C requests, each in the batch for
     * its osl tokens one TPOT apart: C = qps osl TPOT(C), and the output rate
     * C / TPOT is then the offered qps osl. TPOT grows with C; where even the
     * most that fit leave qps osl TPOT(cmax) > cmax, the rate saturates the
     * replica: it serves cmax / (osl TPOT(cmax)) requests/s, the rest queue
     * without end, and the figures are those of the full replica. */
    if (qps * osl * out->tpot > cmax)
        return 1;
    double lo = 1e-3, hi = cmax;
    for (int i = 0; i < 60; i++) {
        double mid = 0.5 * (lo + hi);
        steady(m, &q, c, mid, out);
        if (qps * osl * out->tpot > mid)
            lo = mid;
        else
            hi = mid;
    }
    steady(m, &q, c, hi, out);
    /* the mean in flight rounded up, not past a whole number it sits on */
    out->concurrency = (int32_t)ceil(hi * (1 - 1e-12));
    return 0;
}
