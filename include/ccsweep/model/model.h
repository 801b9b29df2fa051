/* model.h - a Transformer architecture and its parameter count.
 * A model is a flat value type; catalog.h fills it from YAML. */
#ifndef CCSWEEP_MODEL_H
#define CCSWEEP_MODEL_H

#include "ccsweep/util/common.h"

typedef struct ccs_model {
    char name[CCS_NAME_MAX];
    int32_t layers;   /* Transformer blocks */
    int32_t hidden;   /* model width h */
    int32_t heads;    /* attention (query) heads a */
    int32_t kv_heads; /* key/value heads g (GQA); == heads for multi-head attention */
    int32_t head_dim; /* width d of one query, key and value head (standard attention):
                         0 = hidden / heads; else the query projection is
                         hidden x heads*d, not hidden x hidden (Mistral NeMo:
                         hidden 5120, 32 heads of 128) */
    int32_t ffn;      /* MLP inner width f (per matrix for gated FFNs) */
    int32_t vocab;    /* vocabulary V (unpadded) */
    int32_t max_pos;  /* learned position embeddings; 0 for rotary/ALiBi */
    int32_t seq;      /* published training sequence length, 0 if unknown */
    int32_t gbs;      /* published global batch in sequences, 0 if unknown */
    int32_t experts;  /* routed experts of every layer's FFN (mixture of experts); 0 = dense */
    int32_t top_k;    /* routed experts each token goes to */
    int32_t shared_experts; /* experts every token also goes to (DeepSeekMoE) */
    int32_t moe_ffn;        /* inner width of one expert's FFN; 0 = ffn */
    int32_t route_nodes;    /* node-limited routing: a token's routed experts lie on at
                               most this many nodes of the expert-parallel group
                               (DeepSeek-V3: 4); 0 = no limit */
    int32_t dense_layers;   /* mixture of experts: the first dense_layers blocks have a
                               dense FFN of width ffn instead (DeepSeek-V3: 3) */
    /* Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, section 2.1)
     * when kv_lora_rank > 0: queries through a rank-q_lora_rank bottleneck (0 =
     * a direct projection), keys and values up-projected from a shared latent
     * of kv_lora_rank, each head's query/key holding qk_nope_dim plus a
     * decoupled rotary part qk_rope_dim (its key part shared by all heads),
     * values v_head_dim per head. 0 everywhere: standard attention. */
    int32_t q_lora_rank;
    int32_t kv_lora_rank;
    int32_t qk_nope_dim;
    int32_t qk_rope_dim;
    int32_t v_head_dim;
    int8_t gated; /* 1: gated FFN (SwiGLU/GeGLU), three matrices */
    int8_t bias;  /* 1: linear layers have biases and norms are LayerNorm */
    int8_t tied;  /* 1: output head shares the input embedding */
} ccs_model;

/* Fill defaults for optional fields left at 0: kv_heads = heads, ffn = 4*hidden,
 * and for a mixture of experts top_k = 1, moe_ffn = ffn. A head_dim equal to
 * hidden / heads becomes 0, so that one shape has one form. */
void model_fill_defaults(ccs_model *m);

/* Check shape consistency; returns CCS_OK or CCS_EINPUT with err naming the field. */
int model_validate(const ccs_model *m, ccs_err *err);

/* 1 when m uses multi-head latent attention. */
static inline int model_is_mla(const ccs_model *m)
{
    return m->kv_lora_rank > 0;
}

/* Per-head widths of queries/keys and of values: head_dim (else hidden /
 * heads) for standard attention, qk_nope_dim + qk_rope_dim and v_head_dim for
 * latent attention. */
double model_qk_head_dim(const ccs_model *m);
double model_v_head_dim(const ccs_model *m);

/* Parameters of one attention block: its projections (and for latent
 * attention the two latent norms), without the block's input norm. */
double model_attn_params(const ccs_model *m);

/* Parameters of one Transformer block of the model's main kind (attention, MLP
 * or router and experts, two norms); for a mixture of experts with dense
 * first layers, one of the expert layers. */
double model_layer_params(const ccs_model *m);
/* Blocks with a dense FFN of width ffn among a mixture of experts' (0 for a
 * dense model, whose every block is model_layer_params'). */
int32_t model_dense_layers(const ccs_model *m);
/* The model's dense-FFN block as a model of its own: m without experts (its
 * dense first layers' shape). */
void model_dense_variant(const ccs_model *m, ccs_model *out);
/* Input embedding (vocab x hidden) plus learned positions. */
double model_embedding_params(const ccs_model *m);
/* Output side: untied head (vocab x hidden, 0 when tied) plus the final norm. */
double model_head_params(const ccs_model *m);
/* Total parameters: the blocks (dense first ones and the rest) + embedding + head. */
double model_params(const ccs_model *m);

/* Parameters of one FFN of inner width `width` (gated: three matrices). */
double model_mlp_params(const ccs_model *m, double width);
/* Parameters of one layer's routed experts (0 for a dense model): the part
 * expert parallelism spreads over its ranks. */
double model_expert_params(const ccs_model *m);

/* Width of the Q projection (and of the attention output the O projection
 * takes), standard attention: heads * head_dim, hidden without head_dim. */
double model_q_dim(const ccs_model *m);

/* Width of the K (and V) projection: kv_heads * head_dim (hidden * kv_heads /
 * heads without head_dim). */
double model_kv_dim(const ccs_model *m);

#endif
