/* model.c - parameter counting for GPT/Llama-style decoder Transformers.
 * Counts follow the layer structure of Megatron-LM (Shoeybi et al. 2019;
 * Narayanan et al. 2021, eq. 2 gives 12*L*h^2 for the non-gated, non-GQA case). */
#include "ccsweep/model.h"

void model_fill_defaults(ccs_model *m)
{
    if (m->kv_heads == 0)
        m->kv_heads = m->heads;
    if (m->ffn == 0 && m->hidden > 0 && m->hidden <= CCS_MAX_FFN / 4)
        m->ffn = 4 * m->hidden; /* a larger hidden is refused by model_validate */
    if (m->experts > 0 && m->moe_ffn == 0)
        m->moe_ffn = m->ffn;
    if (m->experts > 0 && m->top_k == 0)
        m->top_k = 1;
}

int model_validate(const ccs_model *m, ccs_err *err)
{
    const struct {
        const char *field;
        int32_t v, max;
    } pos[] = {{"layers", m->layers, CCS_MAX_LAYERS}, {"hidden", m->hidden, CCS_MAX_HIDDEN},
               {"heads", m->heads, CCS_MAX_HIDDEN},   {"kv_heads", m->kv_heads, CCS_MAX_HIDDEN},
               {"ffn", m->ffn, CCS_MAX_FFN},          {"vocab", m->vocab, CCS_MAX_VOCAB}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        if (pos[i].v > pos[i].max) {
            ccs_err_set(err, "model '%s': field '%s' must be at most %d (got %d)", m->name,
                        pos[i].field, (int)pos[i].max, (int)pos[i].v);
            return CCS_EINPUT;
        }
        if (pos[i].v <= 0) {
            ccs_err_set(err, "model '%s': field '%s' must be a positive integer (got %d)",
                        m->name, pos[i].field, (int)pos[i].v);
            return CCS_EINPUT;
        }
    }
    if (m->max_pos > CCS_MAX_VOCAB || m->seq > CCS_MAX_SEQ || m->gbs > CCS_MAX_GBS) {
        ccs_err_set(err, "model '%s': max_pos, seq and gbs must be at most %d, %d and %d", m->name,
                    CCS_MAX_VOCAB, CCS_MAX_SEQ, CCS_MAX_GBS);
        return CCS_EINPUT;
    }
    if (m->max_pos < 0 || m->seq < 0 || m->gbs < 0) {
        ccs_err_set(err, "model '%s': max_pos, seq and gbs must not be negative", m->name);
        return CCS_EINPUT;
    }
    if (m->experts < 0 || m->top_k < 0 || m->shared_experts < 0 || m->moe_ffn < 0) {
        ccs_err_set(err, "model '%s': experts, top_k, shared_experts and moe_ffn must not be "
                         "negative",
                    m->name);
        return CCS_EINPUT;
    }
    if (m->experts > CCS_MAX_EXPERTS || m->shared_experts > CCS_MAX_EXPERTS ||
        m->moe_ffn > CCS_MAX_FFN) {
        ccs_err_set(err, "model '%s': experts and shared_experts must be at most %d, moe_ffn at "
                         "most %d",
                    m->name, CCS_MAX_EXPERTS, CCS_MAX_FFN);
        return CCS_EINPUT;
    }
    if (m->experts > 0 && m->top_k > m->experts) {
        ccs_err_set(err, "model '%s': field 'top_k' (%d) must not exceed experts (%d)", m->name,
                    (int)m->top_k, (int)m->experts);
        return CCS_EINPUT;
    }
    if (m->experts == 0 && (m->top_k > 0 || m->shared_experts > 0)) {
        ccs_err_set(err, "model '%s': top_k and shared_experts need experts", m->name);
        return CCS_EINPUT;
    }
    if (m->hidden % m->heads != 0) {
        ccs_err_set(err, "model '%s': field 'heads' (%d) must divide hidden (%d)", m->name,
                    (int)m->heads, (int)m->hidden);
        return CCS_EINPUT;
    }
    if (m->heads % m->kv_heads != 0) {
        ccs_err_set(err, "model '%s': field 'kv_heads' (%d) must divide heads (%d)", m->name,
                    (int)m->kv_heads, (int)m->heads);
        return CCS_EINPUT;
    }
    return CCS_OK;
}

double model_kv_dim(const ccs_model *m)
{
    return (double)m->hidden * m->kv_heads / m->heads;
}

double model_mlp_params(const ccs_model *m, double f)
{
    double h = m->hidden, b = m->bias ? 1.0 : 0.0;
    /* Gated FFN: gate and up (h x f each) plus down (f x h); otherwise up and down. */
    return m->gated ? 3.0 * h * f + b * (2.0 * f + h) : 2.0 * h * f + b * (f + h);
}

double model_expert_params(const ccs_model *m)
{
    return m->experts > 0 ? m->experts * model_mlp_params(m, m->moe_ffn) : 0.0;
}

double model_layer_params(const ccs_model *m)
{
    double h = m->hidden, kv = model_kv_dim(m);
    double b = m->bias ? 1.0 : 0.0;
    /* Q, K, V projections and the output projection. */
    double attn = h * (h + 2.0 * kv) + b * (h + 2.0 * kv) + h * h + b * h;
    /* a mixture of experts: the router (h x experts), the routed and the shared experts */
    double mlp = m->experts > 0 ? h * m->experts + model_expert_params(m) +
                                      m->shared_experts * model_mlp_params(m, m->moe_ffn)
                                : model_mlp_params(m, m->ffn);
    /* Two norms: LayerNorm has gain and bias, RMSNorm a gain only. */
    double norms = 2.0 * h * (m->bias ? 2.0 : 1.0);
    return attn + mlp + norms;
}

double model_embedding_params(const ccs_model *m)
{
    return (double)m->vocab * m->hidden + (double)m->max_pos * m->hidden;
}

double model_head_params(const ccs_model *m)
{
    double final_norm = (double)m->hidden * (m->bias ? 2.0 : 1.0);
    return (m->tied ? 0.0 : (double)m->vocab * m->hidden) + final_norm;
}

double model_params(const ccs_model *m)
{
    return m->layers * model_layer_params(m) + model_embedding_params(m) + model_head_params(m);
}
