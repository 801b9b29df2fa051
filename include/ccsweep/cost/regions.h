/* regions.h - the operator list of one training iteration, cut into execution
 * regions: one Transformer layer's forward, recompute and backward passes (per
 * micro-batch, per device), the embedding and output head, the optimizer step,
 * and the data- and pipeline-parallel communication. Pure; no allocation. */
#ifndef CCSWEEP_REGIONS_H
#define CCSWEEP_REGIONS_H

#include "ccsweep/model/plan.h"
#include "ccsweep/model/stack.h"

typedef enum ccs_opkind {
    CCS_OP_GEMM = 0,
    CCS_OP_BMM,
    CCS_OP_ELEMENTWISE,
    CCS_OP_LAYERNORM,
    CCS_OP_SOFTMAX,
    CCS_OP_ATTENTION, /* fused (flash) attention kernel */
    CCS_OP_ALLREDUCE,
    CCS_OP_ALLGATHER,
    CCS_OP_REDUCESCATTER,
    CCS_OP_P2P,
    CCS_OP_ALLTOALL, /* buffer: the tokens one rank sends (its share stays local) */
    CCS_OP_N
} ccs_opkind;

/* Which parallelism a collective belongs to. */
enum { CCS_COMM_NONE = 0, CCS_COMM_TP, CCS_COMM_DP, CCS_COMM_PP, CCS_COMM_CP, CCS_COMM_EP };

typedef enum ccs_region {
    /* per layer, per micro-batch */
    CCS_RG_FWD_ATTN = 0,
    CCS_RG_FWD_ATTN_TP,
    CCS_RG_FWD_MLP,
    CCS_RG_FWD_MLP_TP,
    CCS_RG_RECOMP_ATTN,
    CCS_RG_RECOMP_ATTN_TP,
    CCS_RG_RECOMP_MLP,
    CCS_RG_RECOMP_MLP_TP,
    CCS_RG_BWD_MLP,
    CCS_RG_BWD_MLP_TP,
    CCS_RG_BWD_ATTN,
    CCS_RG_BWD_ATTN_TP,
    /* per micro-batch, first / last pipeline stage */
    CCS_RG_EMBED_FWD,
    CCS_RG_EMBED_BWD,
    CCS_RG_EMBED_TP,
    CCS_RG_HEAD_FWD,
    CCS_RG_HEAD_BWD,
    CCS_RG_HEAD_TP,
    /* per iteration */
    CCS_RG_OPTIMIZER,
    CCS_RG_DP_COMM,     /* gradient reduction (all-reduce, or ZeRO reduce-scatter) */
    CCS_RG_ZERO_GATHER, /* ZeRO-3 parameter all-gathers, per micro-batch */
    CCS_RG_PP_COMM,     /* one stage-boundary transfer (activation or gradient) */
    /* appended, so stored region numbers of older runs keep their meaning */
    CCS_RG_DP_PARAM_GATHER, /* ZeRO-1/2: updated parameters all-gathered after the step */
    CCS_RG_EMBED_GRAD,      /* tied embedding: gradient all-reduce, first <-> last stage */
    CCS_RG_FWD_ATTN_CP,     /* context parallelism: K/V blocks around the ring, per layer */
    CCS_RG_RECOMP_ATTN_CP,
    CCS_RG_BWD_ATTN_CP, /* K/V again and their gradients back around the ring */
    CCS_RG_FWD_MLP_EP,  /* mixture of experts: token dispatch and combine all-to-alls */
    CCS_RG_RECOMP_MLP_EP,
    CCS_RG_BWD_MLP_EP,
    CCS_RG_N
} ccs_region;

/* How often a region's time counts in an iteration. */
enum { CCS_SCOPE_LAYER = 0, CCS_SCOPE_FIRST, CCS_SCOPE_LAST, CCS_SCOPE_ITER, CCS_SCOPE_MICRO };

/* One operator. Collectives describe the whole buffer (nccl-tests "size"):
 * all-reduce input, all-gather output, reduce-scatter input, p2p message. */
typedef struct ccs_op {
    uint8_t kind;     /* ccs_opkind */
    uint8_t region;   /* ccs_region */
    uint8_t comm;     /* CCS_COMM_* for collectives, CCS_COMM_NONE otherwise */
    uint8_t dtype;    /* ccs_dtype of the arithmetic */
    int32_t group;    /* collectives: ranks in the group (>= 2) */
    int32_t per_node; /* collectives: group members per node (== group when intra-node) */
    double m, n, k;   /* GEMM/BMM: C[m x n] += A[m x k] B[k x n], per batch entry */
    double batch;     /* BMM batch count (1 for GEMM) */
    double flops;     /* arithmetic work, FLOPs, all batch entries */
    double bytes;     /* compute: device-memory traffic; collectives: buffer size; bytes */
    double count;     /* occurrences of this op in its region */
    double remote;    /* all-to-all with node-limited routing: bytes this rank sends off
                         its node, once per target node, forwarded there over the
                         scale-up fabric; 0 = the pairwise exchange's share */
} ccs_op;

/* Upper bound on ops regions_build emits. */
#define CCS_MAX_OPS 160

/* The operator list of one scenario. */
typedef struct ccs_oplist {
    int n;
    ccs_op ops[CCS_MAX_OPS];
    int32_t n_layer; /* ops[0..n_layer) are one block's (forward, recomputation, backward) */
    /* iteration structure the timeline needs */
    int32_t layers_per_stage;                      /* layers on the most loaded stage */
    int32_t layers_first, layers_mid, layers_last; /* plan_stage_layers */
    /* dense-FFN blocks among them (plan_stage_dense; 0 unless a mixture of
     * experts has dense first layers): first, the middle stages with the most
     * and the fewest, last, and the most loaded stage's */
    int32_t dense_first, dense_mid, dense_mid_least, dense_last, dense_per_stage;
    int32_t micro_batches;
    double params_stage_first;  /* parameters held by a first-stage device (after TP split) */
    double params_stage_mid;    /* same for a middle stage (pp > 2) */
    double params_stage_last;   /* same for the last stage */
    double params_expert;       /* routed-expert weights among the fullest stage's */
    double params_block;        /* parameters per device of one block of the main kind */
    double params_block_expert; /* routed-expert weights among them */
    double params_dense_block;  /* same for a dense-FFN block (== params_block without) */
    double grad_bytes;          /* bytes per gradient element the stack keeps and reduces */
    double zero3_units;         /* the stack's unsharded blocks under ZeRO-3 (memory.h) */
    int32_t dropout;            /* 1: the blocks run dropout (GPT-style blocks, unless the
                                   stack trains without); memory_footprint keeps its masks */
    int32_t fused_loss;         /* the stack's loss_kernel: 1 fused over 16-bit logits */
    int32_t eager;              /* the stack's elementwise: 1 eager (what autograd saves) */
    int32_t sac_op;             /* 1: selective recompute is the per-op policy (memory.h) */
    int32_t logit_metrics;      /* the stack's metric evaluations of the logits (memory.h) */
} ccs_oplist;

/* Build the operator list of plan p (already valid per plan_check) for model m.
 * devices_per_node is the scale-up domain (hw_scaleup): it decides which
 * collectives leave the NVLink fabric (Megatron rank order: tp fastest, then
 * cp, dp, pp). Overwrites *out whole. Never fails for a valid plan; asserts
 * non-NULL arguments, devices_per_node >= 1 and the plan's sizes >= 1 (dp may
 * still be 0, not yet derived: then no data-parallel ops). */
void regions_build(const ccs_model *m, const ccs_plan *p, int devices_per_node, ccs_oplist *out);
/* regions_build for software stack st (NULL: the default, stack_default):
 * its gradient type sets the gradient buffers' and reductions' bytes. */
void regions_build_stack(const ccs_model *m, const ccs_plan *p, int devices_per_node,
                         const ccs_stack *st, ccs_oplist *out);

/* Region name ("fwd.attn"), scope (CCS_SCOPE_*) and whether it is communication. */
const char *region_name(int region);
int region_scope(int region);
int region_is_comm(int region);
const char *opkind_name(int kind);
int opkind_parse(const char *s);
/* Inline: the cost of every op asks it. */
static inline int opkind_is_collective(int kind)
{
    return kind >= CCS_OP_ALLREDUCE && kind <= CCS_OP_ALLTOALL;
}

/* Megatron pads the vocabulary to a multiple of 128 * tp. */
double regions_padded_vocab(const ccs_model *m, int tp);

/* 1 when a stack's per-op selective recompute (ccs_stack.sac_op) applies to
 * model m's blocks: Llama-style blocks (no biases, standard attention, dense
 * FFN), whose seven matmuls the policy counts; others recompute as
 * Megatron's selective does. */
int regions_sac_op_applies(const ccs_model *m);

#endif
