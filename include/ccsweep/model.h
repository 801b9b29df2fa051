/* model.h - a Transformer architecture and its parameter count.
 * A model is a flat value type; catalog.h fills it from YAML. */
#ifndef CCSWEEP_MODEL_H
#define CCSWEEP_MODEL_H

#include "ccsweep/common.h"

typedef struct ccs_model {
    char name[CCS_NAME_MAX];
    int32_t layers;   /* Transformer blocks */
    int32_t hidden;   /* model width h */
    int32_t heads;    /* attention (query) heads a */
    int32_t kv_heads; /* key/value heads g (GQA); == heads for multi-head attention */
    int32_t ffn;      /* MLP inner width f (per matrix for gated FFNs) */
    int32_t vocab;    /* vocabulary V (unpadded) */
    int32_t max_pos;  /* learned position embeddings; 0 for rotary/ALiBi */
    int32_t seq;      /* published training sequence length, 0 if unknown */
    int32_t gbs;      /* published global batch in sequences, 0 if unknown */
    int32_t experts;        /* routed experts of every layer's FFN (mixture of experts); 0 = dense */
    int32_t top_k;          /* routed experts each token goes to */
    int32_t shared_experts; /* experts every token also goes to (DeepSeekMoE) */
    int32_t moe_ffn;        /* inner width of one expert's FFN; 0 = ffn */
    int8_t gated;     /* 1: gated FFN (SwiGLU/GeGLU), three matrices */
    int8_t bias;      /* 1: linear layers have biases and norms are LayerNorm */
    int8_t tied;      /* 1: output head shares the input embedding */
} ccs_model;

/* Fill defaults for optional fields left at 0: kv_heads = heads, ffn = 4*hidden,
 * and for a mixture of experts top_k = 1, moe_ffn = ffn. */
void model_fill_defaults(ccs_model *m);

/* Check shape consistency; returns CCS_OK or CCS_EINPUT with err naming the field. */
int model_validate(const ccs_model *m, ccs_err *err);

/* Parameters of one Transformer block (attention, MLP or router and experts,
 * two norms). */
double model_layer_params(const ccs_model *m);
/* Input embedding (vocab x hidden) plus learned positions. */
double model_embedding_params(const ccs_model *m);
/* Output side: untied head (vocab x hidden, 0 when tied) plus the final norm. */
double model_head_params(const ccs_model *m);
/* Total parameters: layers*layer + embedding + head. */
double model_params(const ccs_model *m);

/* Parameters of one FFN of inner width `width` (gated: three matrices). */
double model_mlp_params(const ccs_model *m, double width);
/* Parameters of one layer's routed experts (0 for a dense model): the part
 * expert parallelism spreads over its ranks. */
double model_expert_params(const ccs_model *m);

/* Width of the K (and V) projection: hidden * kv_heads / heads. */
double model_kv_dim(const ccs_model *m);

#endif
