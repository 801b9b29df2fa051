/* plan.h - how one training iteration is parallelised, and whether a plan is
 * valid for a model. A plan is a flat value; plan_check never allocates. */
#ifndef CCSWEEP_PLAN_H
#define CCSWEEP_PLAN_H

#include "ccsweep/model/model.h"
#include "ccsweep/model/hw.h"

enum { CCS_RECOMPUTE_NONE = 0, CCS_RECOMPUTE_SELECTIVE = 1, CCS_RECOMPUTE_FULL = 2 };

/* When data-parallel gradients are reduced (plan field dp_overlap).
 * NONE: after the last micro-batch's backward pass, as Megatron-LM's own DDP
 *   does by default (megatron/core/distributed/distributed_data_parallel_config.py:
 *   overlap_grad_reduce = False).
 * LAST_MICRO: bucket by bucket under the last micro-batch's backward pass
 *   (Megatron-LM --overlap-grad-reduce: earlier micro-batches accumulate locally).
 * BUCKETED: every micro-batch's gradients reduced under its own backward pass
 *   (PyTorch DistributedDataParallel without no_sync): m times the traffic. */
enum { CCS_DPOV_NONE = 0, CCS_DPOV_LAST_MICRO = 1, CCS_DPOV_BUCKETED = 2 };

typedef struct ccs_plan {
    int32_t devices;     /* tp * cp * pp * dp */
    int32_t tp;          /* tensor-parallel degree */
    int32_t cp;          /* context-parallel degree (sequence split across ranks); 0 or 1 = none */
    int8_t cp_comm;      /* CCS_CP_RING (K/V passed around, overlapped) or CCS_CP_ALLGATHER */
    int32_t ep;          /* expert-parallel degree: routed experts spread over ep of the
                            data-parallel ranks; 0 or 1 = none */
    int32_t pp;          /* pipeline stages */
    int32_t dp;          /* data-parallel replicas */
    int32_t vpp;         /* virtual stages per device (interleaved 1F1B); 1 = plain 1F1B */
    int32_t mbs;         /* micro-batch size, sequences */
    int32_t gbs;         /* global batch size, sequences */
    int32_t seq;         /* sequence length, tokens */
    int32_t pp_first;    /* layers on the first pipeline stage; 0 = plan_stage_layers' rule */
    int32_t pp_last;     /* layers on the last pipeline stage; 0 = the rule */
    int8_t dtype;        /* ccs_dtype of weights/activations/GEMMs */
    int8_t sp;           /* 1: Megatron sequence parallelism (needs tp > 1 to matter) */
    int8_t zero;         /* ZeRO stage 0..3 over the data-parallel group */
    int8_t recompute;    /* CCS_RECOMPUTE_* */
    int8_t dp_overlap;   /* CCS_DPOV_*: when DP gradients are reduced */
    int8_t tp_overlap;   /* 1: fine-grained TP collective / GEMM overlap */
    int8_t innet_reduce; /* 1: in-network reduction (switch computes the sum) */
    int8_t flash_attn;   /* 1: fused attention kernel, no s^2 tensors in memory */
    int16_t stack;       /* software stack: 1-based position in the sweep's list of
                            stacks (spec_stack); 0: the default (stack_default) */
    double capacity_factor; /* MoE: tokens an expert takes, x its balanced share; 0 =
                               dropless (every routed token, load assumed balanced) */
    double comm_compress;   /* bytes factor on TP/DP collectives (1 = none) */
    double net_bw_factor;   /* factor on every link bandwidth (1 = as catalogued) */
} ccs_plan;

/* Why a plan is not projected. Stored as integers (result_codes.reason); see plan_reason_name. */
typedef enum ccs_reason {
    CCS_R_OK = 0,
    CCS_R_NONPOSITIVE, /* a size field is zero or negative */
    CCS_R_DEVICES,     /* tp * pp * dp != devices */
    CCS_R_TP_HEADS,    /* tp does not divide heads */
    CCS_R_TP_KV,       /* tp and kv_heads: neither divides the other */
    CCS_R_TP_FFN,      /* tp does not divide ffn */
    CCS_R_PP_LAYERS,   /* the layers cannot be split into pp stages as asked */
    CCS_R_VPP,         /* vpp needs pp > 1 and vpp dividing a middle stage's layers */
    CCS_R_VPP_MICRO,   /* interleaving needs micro-batches divisible by pp */
    CCS_R_BATCH,       /* gbs not divisible by mbs * dp */
    CCS_R_SEQ_SP,      /* sequence parallelism needs tp dividing seq */
    CCS_R_DTYPE,       /* hardware has no matrix units for the dtype */
    CCS_R_ZERO,        /* zero stage outside 0..3 */
    CCS_R_RECOMPUTE,   /* recompute mode unknown */
    CCS_R_OOM,         /* valid, but does not fit device memory */
    CCS_R_CP,          /* cp must split the sequence into 2 cp equal chunks (and tp them) */
    CCS_R_EP,          /* ep must divide the experts and the data-parallel ranks (dp x cp) */
    CCS_R_N
} ccs_reason;

/* Defaults: dp derived, vpp 1, bf16, no sp, zero 0, no recompute, dp_overlap
 * none (Megatron-LM's default), no mitigations. Sizes left 0 for the caller. */
void plan_defaults(ccs_plan *p);

/* How context-parallel ranks exchange K/V (Megatron-Core cp_comm_type):
 * RING ("p2p"): blocks passed around, each step under the attention on the
 * block held; ALLGATHER ("all_gather"): all K/V gathered before the attention,
 * their gradients reduce-scattered after it, not overlapped. */
enum { CCS_CP_RING = 0, CCS_CP_ALLGATHER = 1 };

/* Context-parallel degree of p: 1 when unset. */
static inline int32_t plan_cp(const ccs_plan *p)
{
    return p->cp > 1 ? p->cp : 1;
}

/* Expert-parallel degree of p: 1 when unset. */
static inline int32_t plan_ep(const ccs_plan *p)
{
    return p->ep > 1 ? p->ep : 1;
}

/* If p->dp == 0 and p->devices > 0, set dp = devices / (tp * cp * pp) when
 * exact; if p->devices == 0, set devices = tp*cp*pp*dp. Returns CCS_R_OK or
 * CCS_R_DEVICES. */
int plan_derive(ccs_plan *p);

/* Structural validity of plan p for model m on hardware hw (hw may be NULL to
 * skip the dtype check). Memory fit is not checked here (see memory.h).
 * Returns CCS_R_OK or the first failing reason. */
int plan_check(const ccs_model *m, const ccs_hw *hw, const ccs_plan *p);

/* Layers per pipeline stage: the first, each middle and the last stage.
 * Megatron-Core's decoder_first/last_pipeline_num_layers: pp_first and
 * pp_last, when given, fix those stages and the other stages share the rest
 * evenly. When neither is given and pp divides the layers, all are equal.
 * Otherwise the middle stages take ceil(layers / pp) each and the first and
 * last split what remains, the last taking the odd one (Llama 3 405B, 126
 * layers on 16 stages: 7, 14 x 8, 7, as Llama Team 2024, arXiv 2407.21783,
 * section 3.3.2 did). Returns CCS_R_OK or CCS_R_PP_LAYERS. For pp == 1 all
 * three are the layer count. */
int plan_stage_layers(const ccs_model *m, const ccs_plan *p, int32_t *first, int32_t *mid,
                      int32_t *last);

/* Blocks with a dense FFN (model_dense_layers: the model's first blocks) on
 * the stages of plan_stage_layers (first, mid, last): the first stage takes
 * as many as it holds, the rest fall to the stages after it. mid_most and
 * mid_least: the middle stages holding the most (the second stage) and the
 * fewest of them (0 when pp <= 2). For pp == 1 all are the model's count. */
void plan_stage_dense(const ccs_model *m, const ccs_plan *p, int32_t first, int32_t mid,
                      int32_t *d_first, int32_t *d_mid_most, int32_t *d_mid_least, int32_t *d_last);

/* Micro-batches per iteration per pipeline: gbs / (mbs * dp). */
int32_t plan_micro_batches(const ccs_plan *p);

/* 1 when plan p holds only its shard of the gradients between micro-batches,
 * 0 when it keeps them whole. One schedule decides memory and traffic: a
 * shard can only be kept if every micro-batch's gradients are reduced under
 * its own backward pass (ZeRO-2/3 with dp_overlap bucketed, or one
 * micro-batch); otherwise they accumulate unsharded until the last one and
 * are reduce-scattered once, at ZeRO-1's memory. */
int plan_grads_sharded(const ccs_plan *p);

/* Short identifier ("tp_heads") and sentence ("tp does not divide heads") of a reason. */
const char *plan_reason_name(int reason);
const char *plan_reason_text(int reason);
/* plan_reason_text with the numbers of plan p of model m that fail it
 * ("gbs is not divisible by mbs * dp (gbs 1536, mbs 5 x dp 16 = 80)"), into
 * buf (at most size bytes). Returns buf. */
const char *plan_reason_detail(int reason, const ccs_model *m, const ccs_plan *p, char *buf,
                               size_t size);

/* "none" | "selective" | "full"; parse returns -1 for unknown text. */
const char *recompute_name(int mode);
int recompute_parse(const char *s);

/* "none" | "last-microbatch" | "bucketed"; parse returns -1 for unknown text. */
const char *dp_overlap_name(int mode);
int dp_overlap_parse(const char *s);

/* "ring" | "allgather" (CCS_CP_*); parse returns -1 for unknown text. */
const char *cp_comm_name(int mode);
int cp_comm_parse(const char *s);

#endif
