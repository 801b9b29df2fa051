/* regions.c - operator lists of a Megatron-style training iteration.
 *
 * Layer structure and collectives follow Megatron-LM tensor parallelism
 * (Shoeybi et al. 2019, arXiv 1909.08053: an all-reduce after the attention
 * and MLP blocks in forward, and at their inputs in backward) and sequence
 * parallelism (Korthikanti et al. 2022, arXiv 2205.05198, section 4.2.2: each
 * all-reduce becomes a reduce-scatter + all-gather pair, and norms/dropouts
 * work on s/t tokens). Memory traffic of element-wise kernels counts the
 * tensors each kernel reads and writes once (fused kernels as in Megatron:
 * scale-mask-softmax, bias-GeLU, bias-dropout-add). */
#include "ccsweep/cost/regions.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

typedef struct builder {
    ccs_oplist *l;
    int dtype;
    double compress; /* plan's communication-compression bytes factor */
    double grad_b;   /* bytes per gradient element (the stack's gradient type) */
    int fused_loss;  /* the stack's loss: 1 fused over 16-bit logits, 0 Megatron's fp32 one */
    int metrics;     /* the stack's training-metric evaluations of the logits per micro-batch */
    int bias_sep;    /* the stack's bias gradients: 1 reduction kernels of their own */
    int eager;       /* the stack's element-wise operators: 1 as eager PyTorch runs them */
    int sac_op;      /* the stack's selective recompute: 1 PyTorch's per-op policy */
} builder;

/* The sizes of one block on one rank. The letters b, s, h, a, t, v are those
 * of Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models" (arXiv 2205.05198), Table 1 (a, the heads, appears here
 * per rank as at); f is the FFN width as in Megatron-LM's ffn_hidden_size.
 * Widths are elements per token; sizes are doubles because every formula
 * multiplies them in floating point. Filled by dims_of. */
typedef struct dims {
    double b;      /* micro-batch size, sequences */
    double s;      /* tokens of a sequence this rank holds: seq / cp */
    double sq;     /* tokens the norms and dropouts see: s / t with sequence parallelism, else s */
    double h;      /* hidden size */
    double f;      /* FFN inner width, whole (all TP ranks) */
    double t;      /* tensor-parallel size, as a divisor (tp: the same as a group size) */
    double e;      /* bytes per activation element (16-bit under fp8: the GEMM inputs' casts
                      are ops of their own, fp8_cast) */
    double at;     /* query heads per TP rank: a / t */
    double gt;     /* key-value heads per TP rank (one, replicated, when t > kv heads) */
    double qkv;    /* width of the attention kernel's Q, K and V on this rank */
    double f1;     /* FC1's output width per TP rank (gate and up matrices when gated) */
    double V;      /* vocabulary padded to a multiple of 128 t (regions_padded_vocab) */
    double tok;    /* tokens of one micro-batch on this rank: b s */
    double dq, dv; /* per-head widths of queries/keys and of values */
    double kvw;    /* per-token width of the K and V one rank holds for attention */
    /* latent attention: query and key-value latents, rotary key width (0: standard) */
    double ql, kl, rope;
    double skv;    /* keys each query attends over: the whole sequence (s is this
                      rank's share of it under context parallelism) */
    double causal; /* fraction of the s x skv score blocks a fused kernel computes */
    /* mixture of experts: experts E, top_k, shared experts, expert inner width
     * per TP rank (fm) and of its first matrix pair (f1m), capacity factor
     * (0: no padding) */
    double E, topk, shared, fm, f1m, cap;
    double rn;   /* node-limited routing: nodes a token's experts may span (0: any) */
    int dropout; /* 1 when the blocks train with dropout (models with biases) */
    int bias;    /* 1 when the linear layers have biases (GPT-style blocks) */
    int rotary;  /* 1 when queries and keys are rotated (Llama-style blocks: no biases, no
                    learned positions; latent attention rotates inside its projections) */
    int sp;      /* sequence parallelism in effect (asked for, and tp > 1) */
    /* group sizes of tensor, context and expert parallelism, and how many of
     * each group's members share a node (the rest of the group is off-node) */
    int tp, tp_node, cp, cp_node, ep, ep_node;
} dims;

static ccs_op *push(builder *b, int kind, int region, double count)
{
    ccs_oplist *l = b->l;
    assert(l->n < CCS_MAX_OPS); /* the list is sized for the worst case */
    if (l->n >= CCS_MAX_OPS)
        return NULL; /* (with NDEBUG=1: drop the op rather than overrun) */
    ccs_op *op = &l->ops[l->n++];
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)kind;
    op->region = (uint8_t)region;
    op->dtype = (uint8_t)b->dtype;
    op->batch = 1;
    op->count = count;
    return op;
}

static void gemm(builder *b, int region, double m, double n, double k, double batch, double e)
{
    ccs_op *op = push(b, batch > 1 ? CCS_OP_BMM : CCS_OP_GEMM, region, 1);
    if (!op)
        return;
    op->m = m;
    op->n = n;
    op->k = k;
    op->batch = batch;
    op->flops = 2.0 * m * n * k * batch;
    op->bytes = (m * k + k * n + m * n) * e * batch;
}

/* Forward GEMM y[m x n] = x[m x k] w[k x n] and, in backward, its input
 * gradient dx[m x k] = dy w^T and weight gradient dw[k x n] = x^T dy. */
static void gemm_bwd(builder *b, int region, double m, double n, double k, double e)
{
    gemm(b, region, m, k, n, 1, e);
    gemm(b, region, k, n, m, 1, e);
}

static void mem(builder *b, int kind, int region, double bytes, double flops)
{
    ccs_op *op = push(b, kind, region, 1);
    if (!op)
        return;
    op->bytes = bytes;
    op->flops = flops;
}

static ccs_op *coll(builder *b, int kind, int comm, int region, double bytes, int group,
                    int per_node, double count)
{
    if (group < 2 && kind != CCS_OP_P2P)
        return NULL;
    ccs_op *op = push(b, kind, region, count);
    if (!op)
        return NULL;
    op->comm = (uint8_t)comm;
    op->bytes = bytes * b->compress;
    op->group = group;
    op->per_node = per_node;
    return op;
}

/* An fp8 linear layer's 16-bit operand quantized before its GEMM: the input
 * in the forward pass, the output gradient in the backward pass. Transformer
 * Engine writes both the row-wise and the column-wise (transposed) fp8 copy,
 * because Hopper's fp8 GEMMs read only the "TN" layout and the wgrad/dgrad
 * GEMMs need the transpose (TransformerEngine docs, features/
 * low_precision_training/performance_considerations): read 2 bytes, write
 * 1 + 1 per element; with delayed scaling the amax comes out of the same pass.
 * LayerNormLinear fuses the cast of a normalized input into its norm, and
 * weights are cast once per iteration (is_first_microbatch caches them), so
 * those casts are not counted. Nothing for other dtypes. */
static void fp8_cast(builder *b, int region, double elems)
{
    if (b->dtype == CCS_FP8)
        mem(b, CCS_OP_ELEMENTWISE, region, 4 * elems, elems);
}

/* Sequence parallelism keeps only the s/t shard of a column-parallel linear's
 * input, so its weight gradient needs the input all-gathered again
 * (megatron/core/tensor_parallel/layers.py,
 * LinearWithGradAccumulationAndAsyncCommunication.backward). Megatron-LM
 * issues it asynchronously under the input-gradient GEMM, but the measured
 * per-layer backward times (Korthikanti et al. 2022, Table 4: 11.8 ms with
 * sequence parallelism vs 11.9 without, tests/data/korthikanti2022_layer.csv)
 * show the extra all-gather paid almost in full on A100: the collective's
 * kernels share the SMs and memory with the GEMM. It stays on the critical
 * path here until that contention is modelled from a measurement. */
static void sp_regather(builder *b, const dims *x, int rt)
{
    double full = x->b * x->s * x->h * x->e;
    coll(b, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, full, x->tp, x->tp_node, 1);
}

/* ---- element-wise operators, fused or as eager PyTorch runs them -----------
 * A fused stack (Megatron-Core with Transformer Engine, torch.compile) runs
 * each norm, activation and rotation as one kernel reading its inputs and
 * writing its outputs once. An eager one (builder.eager) runs the model's
 * PyTorch code operator by operator, forward and autograd's backward. Counted
 * from the code of the reference FSDP2 trainer's Llama model
 * (pytorch/torchtitan torchtitan/models/llama/model.py and norms.py, 2024-25,
 * on PyTorch 2.4-2.8, whose torch.nn.RMSNorm was a composite of ATen ops in
 * eager mode: aten/src/ATen/native/layer_norm.cpp rms_norm, until the fused
 * CUDA kernel of pytorch/pytorch pull 153666). Bytes per element, e = 2
 * (bf16), c = e + 4 for a cast between e and fp32 (nothing when e = 4):
 *   RMSNorm forward, _norm(x.float()).type_as(x) * weight: x.float() c,
 *     pow(2) 8, mean 4, (+ eps, rsqrt: per row), x * rsqrt 8, type_as c,
 *     * weight 2e: 36 at e = 2.
 *   RMSNorm backward: * weight: dx 2e and dweight's product 3e and sum e;
 *     type_as c; x * rsqrt: g * rsqrt 8, g * x 12 and its row sum 4; mean's
 *     expand / N 4; pow: x.pow(1) 8, * 2 8, * g 12; the two gradients of the
 *     fp32 x summed 12; x.float() c: 92 at e = 2.
 *   LayerNorm (GPT-style blocks): ATen's native kernels, forward 2e,
 *     backward dx 3e (dy, x in, dx out) and the weight and bias gradients'
 *     second read of dy and x 2e.
 *   Either norm's input gradient is then added to the residual stream's by
 *     autograd, 3e; a fused norm's backward takes the residual in (4e).
 *   SwiGLU, w2(silu(w1 x) * w3 x), per inner element: forward silu 2e, mul
 *     3e; backward the mul's two products 3e each, silu's backward 3e. A
 *     fused kernel: 3e forward, 5e backward. GeLU is one kernel either way.
 *   Rotary embedding of q and k (apply_rotary_emb: view_as_complex of the
 *     fp32 copy, times freqs_cis, view_as_real, type_as): forward c, complex
 *     product 8, c: 20 at e = 2; backward the same three. A fused kernel
 *     (Transformer Engine's fused RoPE): 2e each way.
 *   Grouped-query attention (repeat_kv: expand, then reshape, a copy): K and
 *     V read at the key-value heads' width and written at the query heads',
 *     forward; summed back, backward. Fused kernels take GQA as it is.
 *   The residual adds (x + h): 3e forward either way; their backward passes
 *     the gradient through (no kernel), Megatron's bias-dropout-add kernel
 *     reads and writes it (2e). */

/* the bytes of a cast between e-byte elements and fp32 */
static double cast_bytes(const dims *x)
{
    return x->e < 4 ? x->e + 4 : 0;
}

/* A block's norm forward over elems elements of this rank. */
static void norm_fwd(builder *B, const dims *x, int rc, double elems)
{
    double bytes = 2 * x->e;
    if (B->eager && !x->bias)
        bytes = 2 * cast_bytes(x) + 20 + 2 * x->e;
    mem(B, CCS_OP_LAYERNORM, rc, bytes * elems, 8 * elems);
}

/* Its backward, with the residual stream's gradient added in. */
static void norm_bwd(builder *B, const dims *x, int rc, double elems)
{
    double bytes = 4 * x->e;
    if (B->eager)
        bytes = (x->bias ? 5 * x->e : 2 * cast_bytes(x) + 68 + 6 * x->e) + 3 * x->e;
    mem(B, CCS_OP_LAYERNORM, rc, bytes * elems, 10 * elems);
}

/* The residual add's backward (bias-dropout-add's when fused): act bytes */
static void residual_bwd(builder *B, const dims *x, int rc, double act)
{
    if (B->eager && !x->dropout)
        return; /* autograd passes the gradient through */
    mem(B, CCS_OP_ELEMENTWISE, rc, act * (2 + (x->dropout ? 1 / x->e : 0)), act / x->e);
}

/* The activation's forward (bwd 0) or backward (bwd 1) over this rank's
 * inner tensor of inner bytes: gated (SwiGLU) or GeLU. */
static void act_fn(builder *B, const dims *x, int rc, double inner, int gated, int bwd)
{
    double units = gated ? (bwd ? 5 : 3) : (bwd ? 3 : 2);
    if (B->eager && gated)
        units = bwd ? 9 : 5;
    mem(B, CCS_OP_ELEMENTWISE, rc, inner * units, (bwd ? 12 : 8) * inner / x->e);
}

/* Rotary embedding of this rank's queries and keys and, when eager, the
 * key-value heads repeated for grouped-query attention: the same bytes
 * forward and backward. */
static void rope_ops(builder *B, const dims *x, int rc)
{
    if (!x->rotary)
        return;
    double qk = x->tok * (x->at + x->gt) * x->dq;
    mem(B, CCS_OP_ELEMENTWISE, rc, (B->eager ? 2 * cast_bytes(x) + 8 : 2 * x->e) * qk, 3 * qk);
    if (B->eager && x->gt < x->at)
        mem(B, CCS_OP_ELEMENTWISE, rc, 2 * x->tok * (x->gt + x->at) * x->dq * x->e, 0);
}

double regions_padded_vocab(const ccs_model *m, int tp)
{
    double q = 128.0 * tp;
    return ceil(m->vocab / q) * q;
}

/* Members of a group with the given rank stride that share a node. */
static int members_per_node(int group, int64_t stride, int dpn)
{
    if (stride >= dpn)
        return 1;
    int64_t k = dpn / stride;
    return (int)(k < group ? k : group);
}

/* Context parallelism, Megatron-Core's ring ("p2p") variant: each rank keeps
 * its queries and passes its K/V block around the ring of cp ranks, cp - 1
 * steps, each overlapped with the attention on the block it holds
 * (megatron/core/transformer/dot_product_attention with cp_comm_type p2p;
 * Liu et al. 2023, "Ring Attention", arXiv 2310.01889). As a ring all-gather
 * of cp blocks it moves (cp - 1) blocks per rank; the backward pass sends the
 * K/V blocks again and their gradients back (a ring reduce-scatter). */
static void cp_ring(builder *B, const dims *x, int rcp, int backward)
{
    if (x->cp < 2)
        return;
    double block = x->b * x->s * x->kvw * x->e; /* this rank's K and V */
    /* the same volumes for the all-gather variant; it differs in timing only
     * (the timeline overlaps the ring, not the all-gather) */
    coll(B, CCS_OP_ALLGATHER, CCS_COMM_CP, rcp, block * x->cp, x->cp, x->cp_node, 1);
    if (backward)
        coll(B, CCS_OP_REDUCESCATTER, CCS_COMM_CP, rcp, block * x->cp, x->cp, x->cp_node, 1);
}

/* The attention block's input projections. Standard attention: one fused
 * QKV GEMM. Latent attention (DeepSeek-V2, arXiv 2405.04434, section 2.1):
 * the query down-projection (h -> q_lora_rank) and the joint key-value one
 * (h -> kv_lora_rank + the shared rotary key), each latent RMSNorm'd, then
 * the column-parallel up-projections to this rank's heads (queries: nope +
 * rope per head; keys and values: nope + v per head). The down-projections
 * are not split by tensor parallelism: every rank computes them whole (as
 * Megatron-Core's MLA does), and in backward the ranks' partial latent
 * gradients are all-reduced before them. Every projection's input is a norm
 * output, whose fp8 cast the norm fuses (fp8_cast). */
static void attn_proj_fwd(builder *B, const dims *x, int rc)
{
    if (x->kl <= 0) {
        gemm(B, rc, x->tok, x->qkv, x->h, 1, x->e);
        return;
    }
    double qk = x->at * x->dq, kv = x->at * (x->dq - x->rope + x->dv);
    if (x->ql > 0) {
        gemm(B, rc, x->tok, x->ql, x->h, 1, x->e);
        mem(B, CCS_OP_LAYERNORM, rc, 2 * x->tok * x->ql * x->e, 8 * x->tok * x->ql);
        gemm(B, rc, x->tok, qk, x->ql, 1, x->e);
    } else {
        gemm(B, rc, x->tok, qk, x->h, 1, x->e);
    }
    gemm(B, rc, x->tok, x->kl + x->rope, x->h, 1, x->e);
    mem(B, CCS_OP_LAYERNORM, rc, 2 * x->tok * x->kl * x->e, 8 * x->tok * x->kl);
    gemm(B, rc, x->tok, kv, x->kl, 1, x->e);
}

/* A biased linear layer's bias gradient under a stack that computes it as a
 * kernel of its own: the output gradient summed over the tokens, read once
 * (Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication.backward:
 * grad_output.sum(dim=0); its bias-GeLU and bias-dropout-add paths leave the
 * same sum to autograd, as eager PyTorch's linear does). Transformer Engine
 * takes it in the weight-gradient GEMM's epilogue: nothing. elems: the
 * gradient's elements on this rank. Nothing without biases. */
static void bias_grad(builder *B, const dims *x, int rc, double elems)
{
    if (x->bias && B->bias_sep)
        mem(B, CCS_OP_ELEMENTWISE, rc, elems * x->e, elems);
}

/* An fp8 linear layer's backward: its output gradient cast, then the input-
 * and weight-gradient GEMMs. */
static void linear_bwd(builder *B, int rc, double m, double n, double k, double e)
{
    fp8_cast(B, rc, m * n);
    gemm_bwd(B, rc, m, n, k, e);
}

static void attn_proj_bwd(builder *B, const dims *x, int rc, int rt)
{
    if (x->kl <= 0) {
        linear_bwd(B, rc, x->tok, x->qkv, x->h, x->e);
        return;
    }
    double qk = x->at * x->dq, kv = x->at * (x->dq - x->rope + x->dv);
    linear_bwd(B, rc, x->tok, kv, x->kl, x->e);
    if (x->ql > 0)
        linear_bwd(B, rc, x->tok, qk, x->ql, x->e);
    /* partial latent gradients of this rank's heads, summed over the TP group */
    double lat = x->tok * (x->kl + (x->ql > 0 ? x->ql : 0)) * x->e;
    coll(B, CCS_OP_ALLREDUCE, CCS_COMM_TP, rt, lat, x->tp, x->tp_node, 1);
    mem(B, CCS_OP_LAYERNORM, rc, 4 * x->tok * x->kl * x->e, 10 * x->tok * x->kl);
    linear_bwd(B, rc, x->tok, x->kl + x->rope, x->h, x->e);
    if (x->ql > 0) {
        mem(B, CCS_OP_LAYERNORM, rc, 4 * x->tok * x->ql * x->e, 10 * x->tok * x->ql);
        linear_bwd(B, rc, x->tok, x->ql, x->h, x->e);
    } else {
        linear_bwd(B, rc, x->tok, qk, x->h, x->e);
    }
}

/* One attention block forward into regions (rc = compute, rt = TP comm, rcp =
 * CP comm). core_only: emit only the attention core (selective recompute). */
static void attn_fwd(builder *B, const dims *x, const ccs_plan *p, int rc, int rt, int rcp,
                     int core_only)
{
    double act = x->b * x->sq * x->h * x->e;  /* norm/dropout tensor, s/t tokens with sp */
    double full = x->b * x->s * x->h * x->e;  /* TP collective buffer */
    double sc = x->b * x->at * x->s * x->skv; /* attention score elements */
    if (!core_only) {
        norm_fwd(B, x, rc, act / x->e);
        if (x->sp)
            coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, full, x->tp, x->tp_node, 1);
        attn_proj_fwd(B, x, rc);
        rope_ops(B, x, rc);
    }
    /* fp8 recipes cast only the linear layers' GEMMs to fp8; dot-product
     * attention stays in 16-bit (Transformer Engine's fp8 attention is opt-in:
     * NVTE_FP8_DPA) */
    int saved = B->dtype;
    if (B->dtype == CCS_FP8)
        B->dtype = CCS_BF16;
    cp_ring(B, x, rcp, 0);
    if (p->flash_attn) {
        ccs_op *op = push(B, CCS_OP_ATTENTION, rc, 1);
        if (op) {
            op->m = x->s;
            op->n = x->skv;
            op->k = x->dq;
            op->batch = x->b * x->at;
            /* causal mask: the kernel skips the blocks above the diagonal
             * (Dao 2023, arXiv 2307.08691, section 3.1.1), half the work;
             * context parallelism's chunking keeps that half on every rank.
             * Scores QK^T over dq, context PV over dv. */
            op->flops = x->causal * 2.0 * x->b * x->s * x->skv * (x->dq + x->dv) * x->at;
            op->bytes = x->tok * (x->qkv + x->at * x->dv) * x->e;
        }
    } else {
        gemm(B, rc, x->s, x->skv, x->dq, x->b * x->at, x->e);
        mem(B, CCS_OP_SOFTMAX, rc, 2 * sc * x->e, 5 * sc);
        if (x->dropout)
            mem(B, CCS_OP_ELEMENTWISE, rc, sc * (2 * x->e + 1), sc);
        gemm(B, rc, x->s, x->dv, x->skv, x->b * x->at, x->e);
    }
    B->dtype = saved;
    if (core_only)
        return;
    fp8_cast(B, rc, x->tok * x->at * x->dv);
    gemm(B, rc, x->tok, x->h, x->at * x->dv, 1, x->e);
    coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, rt, full, x->tp,
         x->tp_node, 1);
    /* bias-dropout-add of the residual: read output and residual, write, mask */
    mem(B, CCS_OP_ELEMENTWISE, rc, act * (3 + (x->dropout ? 1 / x->e : 0)), act / x->e);
}

/* A dense MLP block forward (Megatron's ParallelMLP): norm, FC1
 * column-parallel (no communication in front of it but the sp all-gather),
 * the activation, FC2 row-parallel, whose partial sums the TP group reduces,
 * then bias-dropout-add. The f / t inner tensor is what tensor parallelism
 * splits; the h-wide norm and residual are whole unless sequence parallel. */
static void mlp_fwd(builder *B, const dims *x, int rc, int rt)
{
    double act = x->b * x->sq * x->h * x->e;
    double full = x->b * x->s * x->h * x->e;
    double inner = x->tok * x->f / x->t * x->e;
    norm_fwd(B, x, rc, act / x->e);
    if (x->sp)
        coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, full, x->tp, x->tp_node, 1);
    gemm(B, rc, x->tok, x->f1, x->h, 1, x->e);
    /* bias-GeLU reads and writes the inner tensor; SwiGLU reads two, writes one */
    act_fn(B, x, rc, inner, x->f1 > x->f / x->t, 0);
    fp8_cast(B, rc, x->tok * x->f / x->t);
    gemm(B, rc, x->tok, x->h, x->f / x->t, 1, x->e);
    coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, rt, full, x->tp,
         x->tp_node, 1);
    mem(B, CCS_OP_ELEMENTWISE, rc, act * (3 + (x->dropout ? 1 / x->e : 0)), act / x->e);
}

/* Its backward, in reverse: FC2's gradients, the activation's, FC1's (whose
 * weight gradient needs the gathered input again under sp), and the
 * collective conjugate to the forward's (all-reduce <-> identity, Shoeybi et
 * al. 2019, Fig. 3 "f" and "g"). */
static void mlp_bwd(builder *B, const dims *x, int rc, int rt)
{
    double act = x->b * x->sq * x->h * x->e;
    double full = x->b * x->s * x->h * x->e;
    double inner = x->tok * x->f / x->t * x->e;
    residual_bwd(B, x, rc, act);
    bias_grad(B, x, rc, act / x->e); /* FC2's (row-parallel: whole, on the sq tokens) */
    if (x->sp)                       /* backward of the reduce-scatter */
        coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, full, x->tp, x->tp_node, 1);
    fp8_cast(B, rc, x->tok * x->h);
    gemm_bwd(B, rc, x->tok, x->h, x->f / x->t, x->e);
    /* GeLU backward reads x and dy, writes dx; SwiGLU reads gate, up, dy, writes two */
    act_fn(B, x, rc, inner, x->f1 > x->f / x->t, 1);
    bias_grad(B, x, rc, x->tok * x->f1); /* FC1's */
    if (x->sp)
        sp_regather(B, x, rt);
    fp8_cast(B, rc, x->tok * x->f1);
    gemm_bwd(B, rc, x->tok, x->f1, x->h, x->e);
    /* backward of the identity/all-gather at the block input */
    coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, rt, full, x->tp,
         x->tp_node, 1);
    /* norm backward reads x, dy and the residual gradient, writes dx */
    norm_bwd(B, x, rc, act / x->e);
}

/* A mixture-of-experts FFN forward (Megatron-Core's alltoall token
 * dispatcher, experts keeping the tensor-parallel split): the router scores
 * each token (a GEMM onto the experts), tokens are permuted and sent to the
 * ranks holding their top_k experts (all-to-all over ep), gathered across the
 * TP group when sequence parallel, run through the local experts as one
 * grouped GEMM per matrix (each expert gets its balanced share of the routed
 * tokens, padded to capacity when a capacity factor is set), reduced across
 * TP and sent back (all-to-all). Shared experts run as a dense FFN on every
 * token. Load is assumed balanced (the auxiliary loss's aim). */
/* Sizes of one MoE block on one rank. */
typedef struct moe_sizes {
    double act, full; /* norm/residual tensor, TP collective buffer (bytes) */
    double tr;        /* tokens this rank routes */
    double el;        /* local experts */
    double per;       /* tokens per local expert (padded to capacity) */
    double sent;      /* bytes of routed token copies this rank sends */
} moe_sizes;

static moe_sizes moe_size(const dims *x)
{
    moe_sizes z;
    z.act = x->b * x->sq * x->h * x->e;
    z.full = x->b * x->s * x->h * x->e;
    z.tr = x->sp ? x->tok / x->t : x->tok;
    z.el = x->E / x->ep;
    z.per = x->tok * x->topk / z.el * (x->cap > 0 ? x->cap : 1);
    z.sent = z.tr * x->topk * x->h * x->e;
    return z;
}

/* One expert-parallel all-to-all of a rank's routed token copies (tr tokens,
 * top_k copies each), elements of eb bytes. The pairwise exchange sends each
 * copy to its expert's rank. Node-limited routing (DeepSeek-V3, arXiv
 * 2412.19437, Secs. 2.1.2 and 3.2.2: each token to at most M nodes, sent over
 * InfiniBand once per target node to the device of the same local index,
 * which forwards the copies over NVLink) sends a token to the other nodes it
 * routes to: M of the group's N nodes, the own one among them M/N of the
 * time, so M (N - 1) / N remote nodes; when N <= M the limit does not bind
 * and a remote node is hit unless all top_k experts miss it, (N - 1) (1 -
 * (1 - 1/N)^top_k) (experts uniformly spread, the balanced load assumed
 * throughout). */
static void ep_alltoall(builder *B, const dims *x, int rep, double tr, double eb)
{
    if (x->ep < 2)
        return;
    ccs_op *op =
        coll(B, CCS_OP_ALLTOALL, CCS_COMM_EP, rep, tr * x->topk * x->h * eb, x->ep, x->ep_node, 1);
    if (op && x->rn > 0 && x->ep_node < x->ep) {
        double N = ceil((double)x->ep / x->ep_node), M = x->rn;
        double R = N > M ? M * (N - 1) / N : (N - 1) * (1 - pow(1 - 1 / N, x->topk));
        op->remote = tr * x->h * eb * R * B->compress;
    }
}

/* Bytes per element of the tokens sent to the experts (the dispatch, and in
 * backward the output gradients sent to them): fp8 plans quantize them to
 * fp8 with one fp32 scale per 128 elements, the combine and its gradient
 * stay 16-bit (DeepSeek-V3, arXiv 2412.19437, Sec. 3.3, "Low-Precision
 * Storage and Communication"; its 1 x 128 activation tiles, "Fine-Grained
 * Quantization"). */
static double dispatch_bytes(const builder *B, const dims *x)
{
    return B->dtype == CCS_FP8 ? 1.0 + 4.0 / 128 : x->e;
}

/* The mixture-of-experts FFN forward described above moe_sizes. */
static void moe_fwd(builder *B, const dims *x, int rc, int rt, int rep)
{
    moe_sizes z = moe_size(x);
    double act = z.act, full = z.full, tr = z.tr, el = z.el, per = z.per, sent = z.sent;
    norm_fwd(B, x, rc, act / x->e);
    gemm(B, rc, tr, x->E, x->h, 1, x->e); /* router */
    mem(B, CCS_OP_ELEMENTWISE, rc, tr * x->E * 4 * 2 + 2 * sent,
        tr * x->E * 8); /* top-k, permute */
    ep_alltoall(B, x, rep, tr, dispatch_bytes(B, x));
    if (x->sp)
        coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, sent * x->t, x->tp, x->tp_node, 1);
    gemm(B, rc, per, x->f1m, x->h, el, x->e);
    double inner = el * per * x->fm * x->e;
    act_fn(B, x, rc, inner, x->f1m > x->fm, 0);
    fp8_cast(B, rc, el * per * x->fm);
    gemm(B, rc, per, x->h, x->fm, el, x->e);
    coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, rt,
         x->sp ? sent * x->t : sent, x->tp, x->tp_node, 1);
    ep_alltoall(B, x, rep, tr, x->e);
    if (x->shared > 0) { /* a dense FFN of shared x fm, TP-split like any MLP */
        if (x->sp)
            coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, full, x->tp, x->tp_node, 1);
        gemm(B, rc, x->tok, x->shared * x->f1m, x->h, 1, x->e);
        fp8_cast(B, rc, x->tok * x->shared * x->fm);
        gemm(B, rc, x->tok, x->h, x->shared * x->fm, 1, x->e);
        coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, rt, full, x->tp,
             x->tp_node, 1);
    }
    /* unpermute with the routing weights, then bias-dropout-add */
    mem(B, CCS_OP_ELEMENTWISE, rc, 2 * sent + act, tr * x->topk * x->h);
    mem(B, CCS_OP_ELEMENTWISE, rc, act * (3 + (x->dropout ? 1 / x->e : 0)), act / x->e);
}

/* Its backward: the same transfers in reverse (the combine's gradient goes
 * out, the dispatch's comes back), input- and weight-gradient grouped GEMMs,
 * the router's backward and the shared experts'. */
static void moe_bwd(builder *B, const dims *x, int rc, int rt, int rep)
{
    moe_sizes z = moe_size(x);
    double act = z.act, full = z.full, tr = z.tr, el = z.el, per = z.per, sent = z.sent;
    mem(B, CCS_OP_ELEMENTWISE, rc, act * (2 + (x->dropout ? 1 / x->e : 0)) + 2 * sent, act / x->e);
    ep_alltoall(B, x, rep, tr, dispatch_bytes(B, x));
    if (x->sp)
        coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, sent * x->t, x->tp, x->tp_node, 1);
    fp8_cast(B, rc, el * per * x->h);
    gemm(B, rc, per, x->fm, x->h, el, x->e); /* FC2 input gradient */
    gemm(B, rc, x->fm, x->h, per, el, x->e); /* FC2 weight gradient */
    double inner = el * per * x->fm * x->e;
    act_fn(B, x, rc, inner, x->f1m > x->fm, 1);
    fp8_cast(B, rc, el * per * x->f1m);
    gemm(B, rc, per, x->h, x->f1m, el, x->e); /* FC1 input gradient */
    gemm(B, rc, x->h, x->f1m, per, el, x->e); /* FC1 weight gradient */
    coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, rt,
         x->sp ? sent * x->t : sent, x->tp, x->tp_node, 1);
    ep_alltoall(B, x, rep, tr, x->e);
    if (x->shared > 0) {
        if (x->sp)
            coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, full, x->tp, x->tp_node, 1);
        fp8_cast(B, rc, x->tok * x->h);
        gemm_bwd(B, rc, x->tok, x->h, x->shared * x->fm, x->e);
        fp8_cast(B, rc, x->tok * x->shared * x->f1m);
        gemm_bwd(B, rc, x->tok, x->shared * x->f1m, x->h, x->e);
        coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, rt, full, x->tp,
             x->tp_node, 1);
    }
    gemm_bwd(B, rc, tr, x->E, x->h, x->e); /* router */
    norm_bwd(B, x, rc, act / x->e);
}

/* One attention block backward (regions as attn_fwd): the residual and
 * out-projection gradients, the core's backward (16-bit, as forward), the
 * input projections', and the TP collective conjugate to the forward's. */
static void attn_bwd(builder *B, const dims *x, const ccs_plan *p, int rc, int rt, int rcp)
{
    double act = x->b * x->sq * x->h * x->e;
    double full = x->b * x->s * x->h * x->e;
    double sc = x->b * x->at * x->s * x->skv;
    residual_bwd(B, x, rc, act);
    bias_grad(B, x, rc, act / x->e); /* the output projection's (row-parallel) */
    if (x->sp)
        coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, rt, full, x->tp, x->tp_node, 1);
    fp8_cast(B, rc, x->tok * x->h);
    gemm_bwd(B, rc, x->tok, x->h, x->at * x->dv, x->e);
    int saved = B->dtype; /* attention in 16-bit, as in the forward pass */
    if (B->dtype == CCS_FP8)
        B->dtype = CCS_BF16;
    cp_ring(B, x, rcp, 1);
    if (p->flash_attn) {
        /* FlashAttention-2 backward: five s x s matmuls (S recomputed) vs two
         * forward: S = QK^T, dQ = dS K and dK = dS^T Q over dq, dP = dO V^T
         * and dV = P^T dO over dv */
        ccs_op *op = push(B, CCS_OP_ATTENTION, rc, 1);
        if (op) {
            op->m = x->s;
            op->n = x->skv;
            op->k = x->dq;
            op->batch = x->b * x->at;
            op->flops = x->causal * 2.0 * x->b * x->s * x->skv * (3 * x->dq + 2 * x->dv) * x->at;
            op->bytes = x->tok * (2 * x->qkv + 2 * x->at * x->dv) * x->e;
        }
    } else {
        /* context: dP = dO V^T (queries x keys) and dV = P^T dO (keys x dv) */
        gemm(B, rc, x->s, x->skv, x->dv, x->b * x->at, x->e);
        gemm(B, rc, x->skv, x->dv, x->s, x->b * x->at, x->e);
        if (x->dropout)
            mem(B, CCS_OP_ELEMENTWISE, rc, sc * (2 * x->e + 1), sc);
        /* softmax backward reads y and dy, writes dx */
        mem(B, CCS_OP_SOFTMAX, rc, 3 * sc * x->e, 4 * sc);
        /* scores: dQ = dS K (queries x dq) and dK = dS^T Q (keys x dq) */
        gemm(B, rc, x->s, x->dq, x->skv, x->b * x->at, x->e);
        gemm(B, rc, x->skv, x->dq, x->s, x->b * x->at, x->e);
    }
    B->dtype = saved;
    rope_ops(B, x, rc);
    bias_grad(B, x, rc, x->tok * x->qkv); /* QKV's */
    if (x->sp) /* re-gather the QKV input for its weight gradient, as for FC1 */
        sp_regather(B, x, rt);
    attn_proj_bwd(B, x, rc, rt);
    coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, rt, full, x->tp,
         x->tp_node, 1);
    norm_bwd(B, x, rc, act / x->e);
}

/* ---- regions_build in phases -----------------------------------------------
 * dims_of fills the sizes; layer_ops, embed_head_ops emit the compute and TP
 * ops of one block and of the first/last stage; stage_params counts the
 * parameters each stage holds; optimizer_ops, grad_sync and pipeline_ops emit
 * the per-iteration ops over them. The phases run in this order because the
 * op list's order is part of its meaning: ops[0..n_layer) must be the block's,
 * and the memo (opcost.c) keys on that prefix. */

/* The sizes of one block on one rank of plan p (see struct dims). */
static void dims_of(const ccs_model *m, const ccs_plan *p, int devices_per_node, dims *x)
{
    x->tp = p->tp;
    x->t = p->tp;
    x->b = p->mbs;
    x->cp = plan_cp(p);
    x->skv = p->seq;
    x->s = (double)p->seq / x->cp; /* this rank's tokens */
    x->sp = p->sp && p->tp > 1;
    x->sq = x->sp ? x->s / x->t : x->s;
    x->h = m->hidden;
    x->f = m->ffn;
    /* fp8 GEMMs still keep activations in 16-bit outside the matmuls */
    x->e = dtype_bytes(p->dtype) < 2 ? 2 : dtype_bytes(p->dtype);
    x->dq = model_qk_head_dim(m);
    x->dv = model_v_head_dim(m);
    x->at = (double)m->heads / p->tp;
    /* with tp > kv_heads, each device keeps one (replicated) kv head */
    x->gt = m->kv_heads >= p->tp ? (double)m->kv_heads / p->tp : 1.0;
    x->ql = model_is_mla(m) ? m->q_lora_rank : 0;
    x->kl = model_is_mla(m) ? m->kv_lora_rank : 0;
    x->rope = model_is_mla(m) ? m->qk_rope_dim : 0;
    /* the attention kernel's Q, K and V widths: latent attention up-projects a
     * key (its rotary part broadcast) and a value for every head */
    x->qkv = model_is_mla(m) ? x->at * (2 * x->dq + x->dv) : (x->at + 2 * x->gt) * x->dq;
    x->kvw = model_is_mla(m) ? x->at * (x->dq + x->dv) : 2 * x->gt * x->dq;
    x->f1 = (m->gated ? 2.0 : 1.0) * x->f / x->t;
    x->V = regions_padded_vocab(m, p->tp);
    x->tok = x->b * x->s;
    x->dropout = m->bias; /* GPT-style blocks train with dropout, Llama-style without */
    x->bias = m->bias;
    x->rotary = !m->bias && !m->max_pos && !model_is_mla(m);
    x->tp_node = members_per_node(p->tp, 1, devices_per_node);
    /* Megatron-Core rank order tp, cp, dp, pp: cp ranks are tp apart */
    x->cp_node = members_per_node(x->cp, p->tp, devices_per_node);
    /* expert-parallel ranks are data-parallel ranks, tp * cp apart */
    x->ep = plan_ep(p);
    x->ep_node = members_per_node(x->ep, (int64_t)p->tp * x->cp, devices_per_node);
    x->E = m->experts;
    x->topk = m->top_k;
    x->shared = m->shared_experts;
    x->fm = (double)m->moe_ffn / x->t;
    x->f1m = (m->gated ? 2.0 : 1.0) * x->fm;
    x->cap = p->capacity_factor;
    x->rn = m->route_nodes;
    /* every catalog model is a decoder-only language model with a causal mask;
     * only a fused kernel skips the masked half (unfused attention computes
     * the full s x s scores and masks them) */
    x->causal = 0.5;
}

int regions_sac_op_applies(const ccs_model *m)
{
    return m->experts == 0 && !model_is_mla(m) && !m->bias;
}

/* Selective recompute as PyTorch's per-op policy runs it, one block, in the
 * backward pass (the reference FSDP2 trainer's _custom_policy in pytorch/
 * torchtitan torchtitan/models/llama/parallelize_llama.py: the outputs of
 * aten.mm, the flash / efficient SDPA kernels and reduce_scatter are saved
 * (MUST_SAVE) "except every second mm", the rest recomputed). A block's mm
 * calls in order are wq, wk, wv, wo, w1, w3, w2: the 2nd, 4th and 6th, the
 * key projection, the output projection and the up projection, run again,
 * as does every element-wise operator of the forward (norms, rotary
 * embedding, the activation, the residual adds); the attention core does not
 * (saved). Here the key part of the QKV GEMM and the up half of FC1. The
 * sequence-parallel all-gathers it would also redo are left out. */
static void sac_op_recompute(builder *B, const dims *x, int ra, int rm)
{
    double act = x->b * x->sq * x->h * x->e;
    norm_fwd(B, x, ra, act / x->e);
    gemm(B, ra, x->tok, x->gt * x->dq, x->h, 1, x->e);
    rope_ops(B, x, ra);
    gemm(B, ra, x->tok, x->h, x->at * x->dv, 1, x->e);
    mem(B, CCS_OP_ELEMENTWISE, ra, act * 3, act / x->e);
    norm_fwd(B, x, rm, act / x->e);
    gemm(B, rm, x->tok, x->f / x->t, x->h, 1, x->e);
    act_fn(B, x, rm, x->tok * x->f / x->t * x->e, x->f1 > x->f / x->t, 0);
    mem(B, CCS_OP_ELEMENTWISE, rm, act * 3, act / x->e);
}

/* One block, one micro-batch: forward, the recomputation the plan asks for
 * (full: the whole block again; selective: only the unfused attention core,
 * which a fused kernel never stores), backward. Ends the block's prefix. */
static void layer_ops(builder *B, const dims *x, const ccs_model *m, const ccs_plan *p)
{
    attn_fwd(B, x, p, CCS_RG_FWD_ATTN, CCS_RG_FWD_ATTN_TP, CCS_RG_FWD_ATTN_CP, 0);
    if (m->experts > 0)
        moe_fwd(B, x, CCS_RG_FWD_MLP, CCS_RG_FWD_MLP_TP, CCS_RG_FWD_MLP_EP);
    else
        mlp_fwd(B, x, CCS_RG_FWD_MLP, CCS_RG_FWD_MLP_TP);
    if (p->recompute == CCS_RECOMPUTE_FULL) {
        attn_fwd(B, x, p, CCS_RG_RECOMP_ATTN, CCS_RG_RECOMP_ATTN_TP, CCS_RG_RECOMP_ATTN_CP, 0);
        if (m->experts > 0)
            moe_fwd(B, x, CCS_RG_RECOMP_MLP, CCS_RG_RECOMP_MLP_TP, CCS_RG_RECOMP_MLP_EP);
        else
            mlp_fwd(B, x, CCS_RG_RECOMP_MLP, CCS_RG_RECOMP_MLP_TP);
    } else if (p->recompute == CCS_RECOMPUTE_SELECTIVE && B->sac_op && regions_sac_op_applies(m)) {
        sac_op_recompute(B, x, CCS_RG_RECOMP_ATTN, CCS_RG_RECOMP_MLP);
    } else if (p->recompute == CCS_RECOMPUTE_SELECTIVE && !p->flash_attn) {
        attn_fwd(B, x, p, CCS_RG_RECOMP_ATTN, CCS_RG_RECOMP_ATTN_TP, CCS_RG_RECOMP_ATTN_CP, 1);
    }
    if (m->experts > 0)
        moe_bwd(B, x, CCS_RG_BWD_MLP, CCS_RG_BWD_MLP_TP, CCS_RG_BWD_MLP_EP);
    else
        mlp_bwd(B, x, CCS_RG_BWD_MLP, CCS_RG_BWD_MLP_TP);
    attn_bwd(B, x, p, CCS_RG_BWD_ATTN, CCS_RG_BWD_ATTN_TP, CCS_RG_BWD_ATTN_CP);
    B->l->n_layer = B->l->n;
}

/* The embedding (first stage) and the output head (last stage), per
 * micro-batch. */
static void embed_head_ops(builder *B, const dims *x, const ccs_model *m)
{
    /* Embedding (first stage): a vocabulary-parallel lookup, then the partial
     * sums are all-reduced (reduce-scattered with sp); backward scatters the
     * gradient into the fp32 table shard. */
    double full = x->tok * x->h * x->e;
    double act = x->b * x->sq * x->h * x->e;
    mem(B, CCS_OP_ELEMENTWISE, CCS_RG_EMBED_FWD, 2 * full + (m->max_pos ? 2 * full : 0),
        x->tok * x->h);
    coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, CCS_RG_EMBED_TP, full,
         x->tp, x->tp_node, 1);
    mem(B, CCS_OP_ELEMENTWISE, CCS_RG_EMBED_BWD, 2 * full + x->V / x->t * x->h * 4, x->tok * x->h);

    /* Output head (last stage): final norm, logits GEMM against the vocabulary
     * shard, the cross-entropy with two small all-reduces (max and sum) across
     * the vocabulary shards, and its backward. */
    double elems = x->tok * x->V / x->t;
    /* the output layer is not a Transformer Engine module: 16-bit under fp8 */
    int layer_dtype = B->dtype;
    if (B->dtype == CCS_FP8)
        B->dtype = CCS_BF16;
    norm_fwd(B, x, CCS_RG_HEAD_FWD, act / x->e);
    if (x->sp)
        coll(B, CCS_OP_ALLGATHER, CCS_COMM_TP, CCS_RG_HEAD_TP, full, x->tp, x->tp_node, 1);
    gemm(B, CCS_RG_HEAD_FWD, x->tok, x->V / x->t, x->h, 1, x->e);
    /* bytes per logit forward and backward, FLOPs per logit backward (4
     * forward either way):
     * Megatron's vocab_parallel_cross_entropy on the logits cast to fp32
     * (three passes forward, two backward); a fused loss is one kernel over
     * the 16-bit logits the GEMM wrote (flash-attn's cross_entropy, fp32
     * inside the kernel only): forward reads them once (a loss and a
     * log-sum-exp per row out), backward reads them again and writes their
     * gradient */
    double fwd_b = B->fused_loss ? x->e : 12.0, bwd_b = B->fused_loss ? 2 * x->e : 8.0;
    double bwd_f = B->fused_loss ? 2.0 : 1.0;
    mem(B, CCS_OP_ELEMENTWISE, CCS_RG_HEAD_FWD, fwd_b * elems, 4 * elems);
    coll(B, CCS_OP_ALLREDUCE, CCS_COMM_TP, CCS_RG_HEAD_TP, x->tok * 4.0, x->tp, x->tp_node, 2);
    mem(B, CCS_OP_ELEMENTWISE, CCS_RG_HEAD_BWD, bwd_b * elems, bwd_f * elems);
    /* Training metrics on the micro-batch's logits, after its backward pass
     * and outside autograd (Composer's trainer evaluates the model's train
     * metrics on every micro-batch): each an unfused torch cross-entropy,
     * which autocast runs in fp32: the 16-bit logits cast to an fp32 copy
     * (read e, write 4 bytes), log_softmax over it (read 4, write 4; the
     * row's max and sum passes hit the cache), nll_loss gathering one element
     * a row. */
    if (B->metrics > 0)
        mem(B, CCS_OP_ELEMENTWISE, CCS_RG_HEAD_FWD, B->metrics * elems * (x->e + 12),
            B->metrics * 5 * elems);
    gemm_bwd(B, CCS_RG_HEAD_BWD, x->tok, x->V / x->t, x->h, x->e);
    coll(B, x->sp ? CCS_OP_REDUCESCATTER : CCS_OP_ALLREDUCE, CCS_COMM_TP, CCS_RG_HEAD_TP, full,
         x->tp, x->tp_node, 1);
    norm_bwd(B, x, CCS_RG_HEAD_BWD, act / x->e);
    B->dtype = layer_dtype;
}

/* The fullest stage's parameters per device: all of them, and the routed-
 * expert weights among them (those sync over the expert-data-parallel group). */
typedef struct stage_load {
    double params, expert;
} stage_load;

/* Parameters per device of the first, a middle and the last stage, and of
 * one block of each kind, into out; returns the fullest stage's. */
static stage_load stage_params(const ccs_model *m, const ccs_plan *p, const dims *x,
                               ccs_oplist *out)
{
    int32_t lf, lm, ll, df, dmx, dmn, dl;
    plan_stage_layers(m, p, &lf, &lm, &ll);
    plan_stage_dense(m, p, lf, lm, &df, &dmx, &dmn, &dl);
    /* a device holds every dense weight's TP share and its ep-th of the
     * experts; latent attention's down-projections and latent norms whole */
    double rep = x->kl > 0 ? x->h * (x->ql + x->kl + x->rope) + x->ql + x->kl : 0;
    double ex = model_expert_params(m) / (x->ep * x->t);
    double lp =
        model_layer_params(m) / x->t - model_expert_params(m) / x->t + ex + rep * (1 - 1 / x->t);
    double dlp = lp; /* a dense-FFN block of a mixture of experts */
    if (df + dmx + dl > 0) {
        ccs_model dv;
        model_dense_variant(m, &dv);
        dlp = model_layer_params(&dv) / x->t + rep * (1 - 1 / x->t);
    }
    double emb = (x->V + m->max_pos) * x->h / x->t;
    double head = (x->V * x->h) / x->t + x->h; /* a tied head keeps a copy on the last stage */
    out->layers_first = lf;
    out->layers_mid = lm;
    out->layers_last = ll;
    out->dense_first = df;
    out->dense_mid = dmx;
    out->dense_mid_least = dmn;
    out->dense_last = dl;
    out->layers_per_stage = lf > lm ? (lf > ll ? lf : ll) : (lm > ll ? lm : ll);
    out->dense_per_stage = out->layers_per_stage == lf                ? df
                           : out->layers_per_stage == lm && p->pp > 2 ? dmx
                                                                      : dl;
    out->micro_batches = plan_micro_batches(p);
    out->params_block = lp;
    out->params_block_expert = ex;
    out->params_dense_block = dlp;
    /* the middle stage holding more: the most or the fewest dense blocks */
    int32_t dm = (lm - dmx) * lp + dmx * dlp >= (lm - dmn) * lp + dmn * dlp ? dmx : dmn;
    if (p->pp == 1) {
        out->params_stage_first = (lf - df) * lp + df * dlp + emb + (m->tied ? x->h : head);
        out->params_stage_last = out->params_stage_mid = out->params_stage_first;
    } else {
        out->params_stage_first = (lf - df) * lp + df * dlp + emb;
        out->params_stage_mid = p->pp > 2 ? (lm - dm) * lp + dm * dlp : 0;
        out->params_stage_last = (ll - dl) * lp + dl * dlp + head;
    }
    /* the fullest stage (first, last, then middle on ties) and its expert
     * blocks' weights */
    double pmax = out->params_stage_first, lmax = lf - df;
    if (out->params_stage_last > pmax) {
        pmax = out->params_stage_last;
        lmax = ll - dl;
    }
    if (out->params_stage_mid > pmax) {
        pmax = out->params_stage_mid;
        lmax = lm - dm;
    }
    double pexp = lmax * ex;
    out->params_expert = pexp;
    return (stage_load){pmax, pexp};
}

/* Optimizer step over the fullest stage's local parameters (mixed-precision
 * Adam with fp32 main gradients, as Megatron-LM): grad-norm and inf check
 * read the fp32 grads (8 B/param), Adam reads param, grad, m, v and writes
 * param, m, v (28), the 16-bit copy reads fp32 and writes 16-bit (6), the grad
 * buffer is zeroed (4): 46 bytes per parameter; 36 when training in fp32.
 * ZeRO shards over the gradient group: dense weights over dp * cp ranks,
 * experts over the dp * cp / ep ranks that hold the same experts. */
static void optimizer_ops(builder *B, const dims *x, const ccs_plan *p, stage_load ld)
{
    double pmax = ld.params, pexp = ld.expert;
    double dpg_dense = (double)p->dp * x->cp, dpg_exp = dpg_dense / x->ep;
    double local = p->zero >= 1 ? (pmax - pexp) / dpg_dense + pexp / dpg_exp : pmax;
    double per_param = dtype_bytes(p->dtype) >= 4 ? 36.0 : 46.0;
    mem(B, CCS_OP_ELEMENTWISE, CCS_RG_OPTIMIZER, local * per_param, 12 * local);
}

/* Data parallelism over one gradient group (group ranks, per_node of them on
 * a node) for params weights: gradients reduced in fp32 (Megatron main
 * grads). ZeRO-1/2 reduce-scatter the gradients and all-gather the updated
 * 16-bit parameters after the step; ZeRO-3 instead all-gathers the parameters
 * in every micro-batch's forward and backward (count 2). The same for dense
 * weights (the dp * cp group) and for expert weights (the dp * cp / ep
 * expert-data-parallel group): Megatron-Core keeps one gradient buffer for
 * each (megatron/core/distributed/distributed_data_parallel.py,
 * expert_parallel_buffers). */
static void grad_sync(builder *B, const dims *x, int zero, double params, int group, int per_node)
{
    double gbytes = params * B->grad_b;
    double wbytes = params * x->e;
    if (zero == 0) {
        coll(B, CCS_OP_ALLREDUCE, CCS_COMM_DP, CCS_RG_DP_COMM, gbytes, group, per_node, 1);
    } else {
        coll(B, CCS_OP_REDUCESCATTER, CCS_COMM_DP, CCS_RG_DP_COMM, gbytes, group, per_node, 1);
        if (zero < 3) /* ZeRO-3 gathers parameters where they are used instead */
            coll(B, CCS_OP_ALLGATHER, CCS_COMM_DP, CCS_RG_DP_PARAM_GATHER, wbytes, group, per_node,
                 1);
    }
    if (zero == 3)
        coll(B, CCS_OP_ALLGATHER, CCS_COMM_DP, CCS_RG_ZERO_GATHER, wbytes, group, per_node, 2);
}

/* The per-iteration pipeline transfers: the tied embedding's gradient
 * all-reduce and one stage-boundary message. */
static void pipeline_ops(builder *B, const dims *x, const ccs_model *m, const ccs_plan *p,
                         int devices_per_node)
{
    /* A tied output head is a copy of the embedding on the last stage: Megatron-LM
     * all-reduces the two copies' gradients between the first and the last
     * stage every iteration (megatron/core/distributed/finalize_model_grads.py,
     * _allreduce_word_embedding_grads), fp32 main gradients. */
    if (p->pp > 1 && m->tied) {
        int64_t apart = (int64_t)(p->pp - 1) * p->tp * x->cp * p->dp;
        coll(B, CCS_OP_ALLREDUCE, CCS_COMM_PP, CCS_RG_EMBED_GRAD, x->V / x->t * x->h * 4.0, 2,
             apart < devices_per_node ? 2 : 1, 1);
    }

    /* Pipeline: one activation (or gradient) per stage boundary per micro-batch.
     * Each TP rank sends its 1/t share (sequence-parallel activations are already
     * split; otherwise Megatron's scatter/gather optimisation, Narayanan et al.
     * 2021 section 4.1). Stages are tp*cp*dp ranks apart. */
    if (p->pp > 1) {
        double full = x->tok * x->h * x->e;
        int64_t stride = (int64_t)p->tp * x->cp * p->dp;
        int intra = stride * p->pp <= devices_per_node;
        coll(B, CCS_OP_P2P, CCS_COMM_PP, CCS_RG_PP_COMM, full / x->t, 2, intra ? 2 : 1, 1);
    }
}

void regions_build(const ccs_model *m, const ccs_plan *p, int devices_per_node, ccs_oplist *out)
{
    regions_build_stack(m, p, devices_per_node, NULL, out);
}

void regions_build_stack(const ccs_model *m, const ccs_plan *p, int devices_per_node,
                         const ccs_stack *st, ccs_oplist *out)
{
    assert(m && p && out);
    assert(devices_per_node >= 1);
    /* dp may still be 0 (to be derived): then no data-parallel ops */
    assert(p->tp >= 1 && p->pp >= 1 && p->dp >= 0 && p->vpp >= 1);
    assert(p->mbs >= 1 && p->seq >= 1 && plan_cp(p) >= 1 && plan_ep(p) >= 1);
    /* the ops are cleared as they are pushed: clear the count and the fields
     * after the array, not the whole array (15 KB) */
    out->n = 0;
    memset(&out->n_layer, 0, sizeof *out - offsetof(ccs_oplist, n_layer));
    if (!st)
        st = stack_default_entry();
    double grad_b = dtype_bytes(st->grad_dtype);
    builder B = {out,
                 p->dtype,
                 p->comm_compress,
                 grad_b,
                 st->fused_loss,
                 st->logit_metrics,
                 st->bias_grad_sep,
                 st->eager,
                 st->sac_op};
    out->grad_bytes = grad_b;
    out->zero3_units = st->zero3_units;
    dims x;
    dims_of(m, p, devices_per_node, &x);
    if (st->no_dropout)
        x.dropout = 0;
    out->dropout = x.dropout > 0;
    out->fused_loss = st->fused_loss;
    out->eager = st->eager;
    out->sac_op = st->sac_op && regions_sac_op_applies(m);
    out->logit_metrics = st->logit_metrics;
    layer_ops(&B, &x, m, p);
    embed_head_ops(&B, &x, m);
    stage_load ld = stage_params(m, p, &x, out);
    optimizer_ops(&B, &x, p, ld);
    /* The gradient group spans the data- and the context-parallel ranks (every
     * cp rank holds the same weights): dp * cp ranks, tp apart. */
    int dpg = p->dp * x.cp;
    if (dpg > 1)
        grad_sync(&B, &x, p->zero, ld.params - ld.expert, dpg,
                  members_per_node(dpg, p->tp, devices_per_node));
    /* Expert weights reduce over the expert-data-parallel group: the dp * cp / ep
     * ranks holding the same experts, tp * cp * ep apart. */
    int edp = dpg / x.ep;
    if (ld.expert > 0 && edp > 1)
        grad_sync(&B, &x, p->zero, ld.expert, edp,
                  members_per_node(edp, (int64_t)p->tp * x.cp * x.ep, devices_per_node));
    pipeline_ops(&B, &x, m, p, devices_per_node);
    assert(out->n_layer > 0 && out->n_layer <= out->n && out->n <= CCS_MAX_OPS);
}

static const struct {
    const char *name;
    int scope;
    int comm;
} region_info[CCS_RG_N] = {
    [CCS_RG_FWD_ATTN] = {"fwd.attn", CCS_SCOPE_LAYER, 0},
    [CCS_RG_FWD_ATTN_TP] = {"fwd.attn.tp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_FWD_MLP] = {"fwd.mlp", CCS_SCOPE_LAYER, 0},
    [CCS_RG_FWD_MLP_TP] = {"fwd.mlp.tp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_RECOMP_ATTN] = {"recompute.attn", CCS_SCOPE_LAYER, 0},
    [CCS_RG_RECOMP_ATTN_TP] = {"recompute.attn.tp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_RECOMP_MLP] = {"recompute.mlp", CCS_SCOPE_LAYER, 0},
    [CCS_RG_RECOMP_MLP_TP] = {"recompute.mlp.tp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_BWD_MLP] = {"bwd.mlp", CCS_SCOPE_LAYER, 0},
    [CCS_RG_BWD_MLP_TP] = {"bwd.mlp.tp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_BWD_ATTN] = {"bwd.attn", CCS_SCOPE_LAYER, 0},
    [CCS_RG_BWD_ATTN_TP] = {"bwd.attn.tp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_EMBED_FWD] = {"embed.fwd", CCS_SCOPE_FIRST, 0},
    [CCS_RG_EMBED_BWD] = {"embed.bwd", CCS_SCOPE_FIRST, 0},
    [CCS_RG_EMBED_TP] = {"embed.tp", CCS_SCOPE_FIRST, 1},
    [CCS_RG_HEAD_FWD] = {"head.fwd", CCS_SCOPE_LAST, 0},
    [CCS_RG_HEAD_BWD] = {"head.bwd", CCS_SCOPE_LAST, 0},
    [CCS_RG_HEAD_TP] = {"head.tp", CCS_SCOPE_LAST, 1},
    [CCS_RG_OPTIMIZER] = {"optimizer", CCS_SCOPE_ITER, 0},
    [CCS_RG_DP_COMM] = {"dp.grad", CCS_SCOPE_ITER, 1},
    [CCS_RG_ZERO_GATHER] = {"dp.zero3_gather", CCS_SCOPE_MICRO, 1},
    [CCS_RG_PP_COMM] = {"pp.p2p", CCS_SCOPE_ITER, 1},
    [CCS_RG_DP_PARAM_GATHER] = {"dp.param_gather", CCS_SCOPE_ITER, 1},
    [CCS_RG_EMBED_GRAD] = {"pp.embed_grad", CCS_SCOPE_ITER, 1},
    [CCS_RG_FWD_ATTN_CP] = {"fwd.attn.cp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_RECOMP_ATTN_CP] = {"recompute.attn.cp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_BWD_ATTN_CP] = {"bwd.attn.cp", CCS_SCOPE_LAYER, 1},
    [CCS_RG_FWD_MLP_EP] = {"fwd.mlp.ep", CCS_SCOPE_LAYER, 1},
    [CCS_RG_RECOMP_MLP_EP] = {"recompute.mlp.ep", CCS_SCOPE_LAYER, 1},
    [CCS_RG_BWD_MLP_EP] = {"bwd.mlp.ep", CCS_SCOPE_LAYER, 1},
};

const char *region_name(int region)
{
    return (region >= 0 && region < CCS_RG_N) ? region_info[region].name : "?";
}

int region_scope(int region)
{
    return (region >= 0 && region < CCS_RG_N) ? region_info[region].scope : -1;
}

int region_is_comm(int region)
{
    return (region >= 0 && region < CCS_RG_N) ? region_info[region].comm : 0;
}

static const char *const opkind_names[CCS_OP_N] = {
    "gemm",      "bmm",       "elementwise",   "layernorm", "softmax", "attention",
    "allreduce", "allgather", "reducescatter", "p2p",       "alltoall"};

const char *opkind_name(int kind)
{
    return (kind >= 0 && kind < CCS_OP_N) ? opkind_names[kind] : "?";
}

int opkind_parse(const char *s)
{
    for (int i = 0; i < CCS_OP_N; i++)
        if (s && strcmp(s, opkind_names[i]) == 0)
            return i;
    return -1;
}
