/* memory.c - memory footprint per device.
 *
 * Model states (Rajbhandari et al. 2020, ZeRO, section 3.1, with Megatron-LM's
 * fp32 main gradients): 16-bit weights (2 B/param), fp32 gradients (4), Adam
 * fp32 master weights, momentum and variance (12): 18 B/param; fp32 training
 * keeps 4 + 4 + 8. ZeRO-1 shards the optimizer states, ZeRO-2 also the
 * gradients, ZeRO-3 also the weights, over the dp ranks; the gradients stay
 * whole where the plan reduces them once per iteration (plan_grads_sharded).
 *
 * Activations: Korthikanti et al. 2022 (arXiv 2205.05198) eqs. 1-6: per layer
 * sbh(34 + 5as/h) bytes unparallelised; tensor parallelism splits 24sbh + 5as^2b
 * of it; sequence parallelism also the remaining 10sbh; selective recompute
 * drops the 5as^2b attention-core part; full recompute keeps only the 2sbh
 * layer input. 1F1B keeps p micro-batches in flight on the first stage
 * (its layers' worth), interleaving multiplies by 1 + (p-1)/(p*vpp); with
 * uneven stages (plan_stage_layers) a middle stage can be the fullest. */
#include "ccsweep/cost/memory.h"
#include "ccsweep/cost/regions.h"

#include <assert.h>
#include <math.h>

/* memory_act_per_layer with the dropout masks kept (dropout 1) or not, and
 * what autograd keeps when the stack runs the block eagerly (eager 1; the
 * operators of regions.c): each RMSNorm keeps its input's fp32 copy and its
 * normalized output before the weight (+4 bytes an element over a fused
 * norm's input, whatever e), SwiGLU the silu output beside its inputs and
 * the product (+e an inner element), and attention the key-value heads
 * repeated to every query head (+2e (1 - g/a) sbh). */
static double act_per_layer(const ccs_model *m, const ccs_plan *p, int dropout, int eager,
                            int sac_op)
{
    assert(m && p && p->tp >= 1 && p->mbs >= 1 && p->seq >= 1 && m->heads >= 1);
    /* with context parallelism a rank keeps s/cp tokens; its queries' scores
     * span the whole sequence */
    double skv = p->seq, s = skv / plan_cp(p);
    double b = p->mbs, h = m->hidden, t = p->tp, f = m->ffn, a = m->heads;
    double e = dtype_bytes(p->dtype) < 2 ? 2 : dtype_bytes(p->dtype);
    double dr = dropout ? 1.0 : 0.0; /* dropout masks, one byte per element */
    int sp = p->sp && p->tp > 1;
    double sbh = s * b * h;
    double kv = (double)m->kv_heads / m->heads;
    if (p->recompute == CCS_RECOMPUTE_FULL)
        return e * sbh / (sp ? t : 1);
    if (p->recompute == CCS_RECOMPUTE_SELECTIVE && sac_op && regions_sac_op_applies(m)) {
        /* the per-op policy (regions.c) keeps the block's input, the saved
         * matmuls' outputs (queries, values, FC2's, which the row-parallel
         * reduce-scatter leaves s/t-sized with sequence parallelism, and
         * the gate projection's) and the attention's output and fp32
         * log-sum-exp; the whole s x s core where no fused kernel runs */
        double kept = 2 * e * sbh / (sp ? t : 1), qf = model_q_dim(m) / h;
        double core = p->flash_attn ? 4.0 * a * s * b : (e + dr * (1 + e)) * a * s * skv * b;
        return kept + (e * sbh * qf * (2 + kv) + e * s * b * f + core) / t;
    }
    /* kept whole unless sequence parallel: two norm inputs, QKV and FC1 inputs
     * (the norm outputs), and the two residual dropout masks */
    double repl = (4 * e + 2 * dr) * sbh;
    /* split by tp: Q, K, V, the out-projection input, and the MLP inner tensors
     * (GeLU input and FC2 input; SwiGLU: gate, up and FC2 input). Latent
     * attention keeps every head's up-projected query, key (rotary part
     * included) and value, and, whole on every TP rank, the two latents' norm
     * inputs and outputs. */
    double qf = model_q_dim(m) / h; /* query width over h: 1 unless head_dim says */
    double qkvo = e * sbh * qf * (1 + 2 * kv) + e * sbh * qf, lat = 0;
    if (model_is_mla(m)) {
        double qk = model_qk_head_dim(m), vd = m->v_head_dim;
        qkvo = e * s * b * a * (2 * qk + 2 * vd);
        lat = 2 * e * s * b * ((double)m->q_lora_rank + m->kv_lora_rank);
    }
    if (eager && !m->bias && !model_is_mla(m)) {
        repl += 2 * 4.0 * sbh;
        qkvo += 2 * e * sbh * qf * (1 - kv);
    }
    double split = qkvo + e * s * b * f * (m->gated ? 3 + (eager ? 1 : 0) : 2);
    if (m->experts > 0) {
        /* every token's top_k routed copies (padded to capacity) and the shared
         * experts keep their inner tensors, and the permuted FC1 inputs */
        double copies = m->top_k * (p->capacity_factor > 0 ? p->capacity_factor : 1);
        split = qkvo +
                e * s * b * m->moe_ffn * (m->gated ? 3 + (eager ? 1 : 0) : 2) *
                    (copies + m->shared_experts) +
                e * sbh * copies;
    }
    double core = 0;
    if (p->recompute == CCS_RECOMPUTE_NONE && !p->flash_attn)
        core = (e + dr * (1 + e)) * a * s * skv * b; /* softmax out; dropout mask and out */
    if (p->flash_attn)
        core = 4.0 * a * s * b; /* fp32 log-sum-exp per row */
    return repl / (sp ? t : 1) + (split + core) / t + lat;
}

/* What the process holds beside its tensors (memory_reserve):
 * - the CUDA context with the kernels a training step loads: 0.92 GiB on an
 *   A100 80GB with every kernel loaded (torch 2.1.1+cu121 eagerly loading
 *   its modules; 0.47 GiB lazily after one operator, which grows as a step's
 *   kernels load), measured by the same command on one GPU across releases
 *   (stas00/ml-engineering training/performance/README.md, "Preloaded CUDA
 *   kernels memory usage"); no other device's figure published;
 * - per NCCL communicator, 12 MiB a channel (NVIDIA/nccl src/init.cc: a
 *   connection's Simple 4 MiB + LL128 4.6875 MiB + LL 0.5 MiB buffers,
 *   allocated in cuMem's 2 MiB granules as 10 MiB and 2 MiB, as nccl issue
 *   1685 logs them) over NCCL's 32 ring channels at most (MAXCHANNELS / 2,
 *   the [NCCL-CTA] citation of stacks.yaml): 384 MiB, between the 388 MiB
 *   measured per extra group (sgl-project/sglang pull 35538) and the 544-688
 *   MB per group on 4 A100s (nccl issue 964). One communicator per group the
 *   plan has: TP, CP, DP (its dp x cp ranks), PP, EP and the expert-data-
 *   parallel group, as Megatron-Core's parallel_state.py creates them.
 * Not counted: NVLink SHARP buffers (NCCL_NVLS_ENABLE; 256 MiB a GPU from
 * NCCL 2.26), the caching allocator's fragmentation, cuBLAS workspaces (32
 * MiB a stream on Hopper). */
#define MEM_CUDA_CONTEXT (0.92 * 1073741824.0)
#define MEM_NCCL_COMM (32 * 12 * 1048576.0)

double memory_reserve(const ccs_plan *p)
{
    int64_t dpg = (int64_t)p->dp * plan_cp(p), ep = plan_ep(p);
    int comms = (p->tp > 1) + (plan_cp(p) > 1) + (dpg > 1) + (p->pp > 1) + (ep > 1) +
                (ep > 1 && dpg / ep > 1);
    return MEM_CUDA_CONTEXT + comms * MEM_NCCL_COMM;
}

double memory_act_per_layer(const ccs_model *m, const ccs_plan *p)
{
    return act_per_layer(m, p, m->bias, 0, 0);
}

/* Memory of one stage: its parameters (pe of them routed-expert weights)
 * and activations, the fullest kept in out. */
typedef struct stage_mem {
    double per_param, per_expert; /* model-state bytes per dense / expert parameter */
    double total, params, pe, act;
} stage_mem;

static void stage_add(stage_mem *s, double params, double pe, double act)
{
    double total = (params - pe) * s->per_param + pe * s->per_expert + act;
    if (total > s->total) {
        s->total = total;
        s->params = params;
        s->pe = pe;
        s->act = act;
    }
}

void memory_footprint(const ccs_model *m, const ccs_plan *p, const ccs_oplist *ops, ccs_memory *out)
{
    assert(m && p && ops && out);
    assert(p->tp >= 1 && p->pp >= 1 && p->vpp >= 1 && p->zero >= 0 && p->zero <= 3);
    assert(ops->layers_first >= ops->dense_first && ops->layers_last >= ops->dense_last);
    int fp32 = dtype_bytes(p->dtype) >= 4;
    /* gradients in the stack's type (regions_build_stack: fp32 main grads by default) */
    double w_b = fp32 ? 4 : 2, g_b = ops->grad_bytes > 0 ? ops->grad_bytes : 4, o_b = fp32 ? 8 : 12;
    /* ZeRO shards over the gradient group: dp * cp ranks for dense weights,
     * the dp * cp / ep that hold the same experts for expert weights */
    double dp = (double)p->dp * plan_cp(p), edp = dp / plan_ep(p);
    int gsh = plan_grads_sharded(p);
    double ws = p->zero >= 3 ? dp : 1, gs = gsh ? dp : 1, os = p->zero >= 1 ? dp : 1;
    double wse = p->zero >= 3 ? edp : 1, gse = gsh ? edp : 1, ose = p->zero >= 1 ? edp : 1;
    /* total starts below any stage's, so that the first stage offered is kept */
    stage_mem S = {w_b / ws + g_b / gs + o_b / os, w_b / wse + g_b / gse + o_b / ose, -1, 0, 0, 0};
    double ex = ops->params_block_expert; /* per expert block, device */

    double lf = ops->layers_first, lm = ops->layers_mid, ll = ops->layers_last;
    double df = ops->dense_first, dl = ops->dense_last;
    double mb = plan_micro_batches(p);
    double layer = act_per_layer(m, p, ops->dropout, ops->eager, ops->sac_op), dlayer = layer;
    if (model_dense_layers(m) > 0) {
        ccs_model dv;
        model_dense_variant(m, &dv);
        dlayer = act_per_layer(&dv, p, ops->dropout, ops->eager, ops->sac_op);
    }
    double e = dtype_bytes(p->dtype) < 2 ? 2 : dtype_bytes(p->dtype);
    double sbh_t = (double)p->seq / plan_cp(p) * p->mbs * m->hidden / p->tp;
    int sp = p->sp && p->tp > 1;

    /* first stage: min(p, m) micro-batches of its layers (1F1B warm-up depth) */
    double inflight = p->pp < mb ? p->pp : mb;
    double il = p->vpp > 1 ? 1.0 + (p->pp - 1.0) / (p->pp * (double)p->vpp) : 1.0;
    double act_first = ((lf - df) * layer + df * dlayer) * inflight * il;
    /* embedding dropout mask per in-flight micro-batch (Korthikanti eq. 5) */
    if (ops->dropout)
        act_first += sbh_t * (sp ? 1 : p->tp) * inflight;
    /* last stage: one micro-batch in flight, plus the output head's final norm
     * output and fp32 logits (Korthikanti section 4.3: 4sbh/t (1 + v/h)); a
     * fused loss keeps the 16-bit logits and, in its backward, their 16-bit
     * gradient beside them (flash-attn's cross_entropy writes a new tensor) */
    double V = regions_padded_vocab(m, p->tp), vh = V / m->hidden;
    double logit_b = ops->fused_loss ? e : 4.0;
    double head = sbh_t * (e + (ops->fused_loss ? 2 * e : 4.0) * vh);
    /* training metrics run after the backward pass, the blocks' activations
     * freed: the kept logits, each metric's fp32 copy of them and its
     * log_softmax output (one metric at a time); the stage holds the larger */
    double metrics = ops->logit_metrics > 0 ? sbh_t * (logit_b + 8.0) * vh : 0;
    if (p->pp == 1) {
        stage_add(&S, ops->params_stage_first, (lf - df) * ex, fmax(act_first + head, metrics));
    } else {
        stage_add(&S, ops->params_stage_first, (lf - df) * ex, act_first);
        stage_add(&S, ops->params_stage_last, (ll - dl) * ex,
                  fmax(((ll - dl) * layer + dl * dlayer) * il + head, metrics));
        /* middle stage k (1 = the second) keeps min(p - k, m) micro-batches in
         * flight: the second is the fullest of those without dense-FFN blocks
         * in front of it; the ones before the last holding dense blocks are
         * tried too (dense blocks can weigh more or less than expert blocks) */
        double rest = ops->dense_first < model_dense_layers(m)
                          ? (double)model_dense_layers(m) - ops->dense_first
                          : 0;
        for (int32_t k = 1; k <= p->pp - 2; k++) {
            double dk = fmin(fmax(rest - (k - 1) * lm, 0), lm);
            double fl = p->pp - k < mb ? p->pp - k : mb;
            double params = (lm - dk) * ops->params_block + dk * ops->params_dense_block;
            stage_add(&S, params, (lm - dk) * ex, ((lm - dk) * layer + dk * dlayer) * fl * il);
            if (dk == 0)
                break;
        }
    }
    double params = S.params, pe = S.pe;
    /* ZeRO-3 / FSDP working set: the stack's unsharded blocks (the one
     * computing and the ones prefetched) and, where only shards are kept, one
     * block's unsharded gradients before their reduce-scatter (PyTorch FSDP1
     * keeps at most two all-gathered units in flight,
     * torch/distributed/fsdp/_limiter_utils.py); whole gradients are counted
     * in grads already */
    double unsharded = 0;
    if (p->zero >= 3 && ops->zero3_units > 0)
        unsharded = ops->params_block * (ops->zero3_units * w_b + (gsh ? g_b : 0));
    S.total += unsharded;
    out->weights = (params - pe) * w_b / ws + pe * w_b / wse + unsharded;
    out->grads = (params - pe) * g_b / gs + pe * g_b / gse;
    out->optimizer = (params - pe) * o_b / os + pe * o_b / ose;
    out->activations = S.act;
    out->total = S.total;
    out->act_layer = layer;
    out->in_flight = inflight * il;
}
