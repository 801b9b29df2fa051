/* stack.h - the software stack a training run uses: which attention kernel
 * it calls, how many of the element-wise operators it fuses, what the
 * framework costs per kernel, per layer and per step, in which type it
 * keeps and reduces gradients, how many GPU compute units its collectives
 * occupy while they overlap compute, and how much of each TP collective its
 * overlap method hides. Entries come from sweeps/catalog/stacks.yaml (each
 * figure with its source); values are SI. */
#ifndef CCSWEEP_STACK_H
#define CCSWEEP_STACK_H

#include "ccsweep/util/common.h"

/* Attention kernels with a measured throughput model (cost/attention.h).
 * GEMM_REL: the fused kernel at a fixed fraction of the device's GEMM
 * efficiency (FlashAttention-2's A100 figures), the default stack's. */
typedef enum ccs_attn_kernel {
    CCS_ATTN_GEMM_REL = 0,
    CCS_ATTN_FA2,       /* FlashAttention-2 (Dao 2023) */
    CCS_ATTN_FA3,       /* FlashAttention-3 (Shah et al. 2024), Hopper and later */
    CCS_ATTN_CUDNN,     /* cuDNN fused attention (Transformer Engine's default on Hopper) */
    CCS_ATTN_TRITON,    /* OpenAI Triton's flash-attention kernel (triton.ops.flash_attention) */
    CCS_ATTN_UNFUSED,   /* score and context batched GEMMs with a softmax between
                           (the s x s tensors in memory: PyTorch's math path, Megatron-LM 2021) */
    CCS_ATTN_FA1,       /* FlashAttention (Dao et al. 2022), the CUDA kernels of flash-attn 1.x */
    CCS_ATTN_FA_TRITON, /* flash-attn's flash_attn_triton.py (llm-foundry's attn_impl triton) */
    CCS_ATTN_N
} ccs_attn_kernel;

/* the most training-metric evaluations of the logits a stack may give */
#define CCS_STACK_MAX_METRICS 16

typedef struct ccs_stack {
    char name[CCS_NAME_MAX];
    int8_t attn_kernel;      /* ccs_attn_kernel, for plans with a fused kernel (flash_attn) */
    int8_t grad_dtype;       /* ccs_dtype of the gradient buffers and their reduction */
    int8_t no_dropout;       /* 1: the stack's recipes train without dropout (p = 0 launches
                                no kernel): no dropout passes or masks, even in GPT-style
                                blocks (which have them otherwise) */
    int8_t fused_loss;       /* 1: the loss is one fused cross-entropy kernel over the 16-bit
                                logits (flash-attn's); 0: Megatron's fp32 vocab-parallel one */
    int8_t logit_metrics;    /* unfused cross-entropy evaluations of the logits per micro-batch
                                outside autograd (training metrics), each in fp32 under autocast */
    int8_t bias_grad_sep;    /* 1: each bias gradient is a reduction kernel of its own over the
                                output gradient; 0: fused into a GEMM's epilogue */
    int8_t eager;            /* 1: the block's element-wise operators run as eager PyTorch
                                runs the model's code, each its own kernels (RMSNorm's
                                composite, rotary embedding in complex fp32, SwiGLU's two
                                kernels, autograd's residual sums: regions.c); 0: fused */
    int8_t sac_op;           /* what recompute selective means under the stack: 1 PyTorch's
                                per-op policy of the reference FSDP2 trainer (the outputs of
                                attention and of every other matmul saved, the rest recomputed:
                                regions.c); 0 Megatron's (only the attention core) */
    double eltwise_factor;   /* memory traffic of the element-wise ops relative to
                                Megatron's fused kernels (>= 1; eager frameworks run one
                                kernel per operator) */
    double op_overhead;      /* s of host time per kernel: a kernel shorter than it waits */
    double layer_overhead;   /* s per layer per pass (framework hooks: FSDP unit pre/post) */
    double iter_overhead;    /* s per iteration outside the GPU work (step, zero_grad, logging) */
    double comm_units;       /* compute units the collectives occupy while they overlap
                                compute (NCCL channels); compute slows by their share */
    double tp_overlap_share; /* share of each TP collective hidden when tp_overlap is on */
    double zero3_units;      /* ZeRO-3/FSDP: blocks held unsharded at once (the one computing
                                and those prefetched), beside one block's unsharded
                                gradients; 0: the working set not counted */
} ccs_stack;

/* The default stack: Megatron-Core with Transformer Engine as ccsweep has
 * always modelled it (GEMM-relative fused attention, fused element-wise
 * kernels, no framework overhead, fp32 gradients, free overlap, whole TP
 * overlap). A NULL stack pointer means this. */
void stack_default(ccs_stack *out);
/* The same entry, shared (for a NULL stack pointer without a copy). */
const ccs_stack *stack_default_entry(void);

/* 1 when s is the default stack: stack_default's name and figures. */
int stack_is_default(const ccs_stack *s);

/* Check an entry: fractions in [0, 1], factors >= 1, overheads >= 0 and
 * finite. Returns CCS_OK or CCS_EINPUT with err naming the field. */
int stack_validate(const ccs_stack *s, ccs_err *err);

/* "gemm-rel" | "fa2" | "fa3" | "cudnn" | "triton" | "unfused" | "fa1" |
 * "fa-triton"; parse returns -1
 * for unknown text. */
const char *attn_kernel_name(int k);
extern const char *const ccs_attn_kernel_names[CCS_ATTN_N]; /* attn_kernel_name's names */

/* The catalog's words for a stack's loss_kernel (indexed by fused_loss) and
 * bias_grad (indexed by bias_grad_sep). */
extern const char *const ccs_loss_kernel_names[2];
extern const char *const ccs_bias_grad_names[2];
/* and its elementwise (indexed by eager) */
extern const char *const ccs_elementwise_names[2];
/* and its selective (indexed by sac_op) */
extern const char *const ccs_selective_names[2];
int attn_kernel_parse(const char *s);

#endif
