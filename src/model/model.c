/* model.c - parameter counting for GPT/Llama-style decoder Transformers.
 * Counts follow the layer structure of Megatron-LM (Shoeybi et al. 2019;
 * Narayanan et al. 2021, eq. 2 gives 12*L*h^2 for the non-gated, non-GQA case). */
#include "ccsweep/model/model.h"

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
    if (!model_is_mla(m) && m->head_dim > 0 && (int64_t)m->head_dim * m->heads == m->hidden)
        m->head_dim = 0;
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
            ccs_err_set(err, "model '%s': field '%s' must be a positive integer (got %d)", m->name,
                        pos[i].field, (int)pos[i].v);
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
        ccs_err_set(err,
                    "model '%s': experts, top_k, shared_experts and moe_ffn must not be "
                    "negative",
                    m->name);
        return CCS_EINPUT;
    }
    if (m->experts > CCS_MAX_EXPERTS || m->shared_experts > CCS_MAX_EXPERTS ||
        m->moe_ffn > CCS_MAX_FFN) {
        ccs_err_set(err,
                    "model '%s': experts and shared_experts must be at most %d, moe_ffn at "
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
    if (m->route_nodes < 0 ||
        (m->route_nodes > 0 && (m->experts == 0 || m->route_nodes > m->top_k))) {
        ccs_err_set(err,
                    "model '%s': field 'route_nodes' (%d) must be at least 0 and at most "
                    "top_k (%d), and needs experts",
                    m->name, (int)m->route_nodes, (int)m->top_k);
        return CCS_EINPUT;
    }
    if (m->dense_layers < 0 || m->dense_layers >= m->layers ||
        (m->dense_layers > 0 && m->experts == 0)) {
        ccs_err_set(err,
                    "model '%s': field 'dense_layers' (%d) must be at least 0 and less than "
                    "layers (%d), and needs experts (the dense FFN blocks of a mixture of "
                    "experts)",
                    m->name, (int)m->dense_layers, (int)m->layers);
        return CCS_EINPUT;
    }
    if (m->head_dim < 0 || m->head_dim > CCS_MAX_HIDDEN) {
        ccs_err_set(err, "model '%s': field 'head_dim' must be 0 to %d (got %d)", m->name,
                    CCS_MAX_HIDDEN, (int)m->head_dim);
        return CCS_EINPUT;
    }
    if (m->head_dim > 0 && model_is_mla(m)) {
        ccs_err_set(err,
                    "model '%s': field 'head_dim' is for standard attention: latent attention's "
                    "heads are qk_nope_dim + qk_rope_dim and v_head_dim wide",
                    m->name);
        return CCS_EINPUT;
    }
    const struct {
        const char *field;
        int32_t v;
    } mla[] = {{"kv_lora_rank", m->kv_lora_rank},
               {"q_lora_rank", m->q_lora_rank},
               {"qk_nope_dim", m->qk_nope_dim},
               {"qk_rope_dim", m->qk_rope_dim},
               {"v_head_dim", m->v_head_dim}};
    for (size_t i = 0; i < sizeof mla / sizeof mla[0]; i++) {
        if (mla[i].v < 0 || mla[i].v > CCS_MAX_HIDDEN) {
            ccs_err_set(err, "model '%s': field '%s' must be 0 to %d (got %d)", m->name,
                        mla[i].field, CCS_MAX_HIDDEN, (int)mla[i].v);
            return CCS_EINPUT;
        }
        if (!model_is_mla(m) && mla[i].v > 0) {
            ccs_err_set(err,
                        "model '%s': field '%s' is for latent attention, which needs "
                        "kv_lora_rank",
                        m->name, mla[i].field);
            return CCS_EINPUT;
        }
    }
    if (model_is_mla(m)) {
        if (m->qk_nope_dim == 0 || m->v_head_dim == 0) {
            ccs_err_set(err,
                        "model '%s': field '%s': latent attention needs qk_nope_dim and "
                        "v_head_dim (positive integers)",
                        m->name, m->qk_nope_dim == 0 ? "qk_nope_dim" : "v_head_dim");
            return CCS_EINPUT;
        }
        if (m->kv_heads != m->heads) {
            ccs_err_set(err,
                        "model '%s': field 'kv_heads' (%d) must equal heads (%d): latent "
                        "attention up-projects a key and a value for every head",
                        m->name, (int)m->kv_heads, (int)m->heads);
            return CCS_EINPUT;
        }
        return CCS_OK; /* head widths are its own fields: heads need not divide hidden */
    }
    if (m->head_dim == 0 && m->hidden % m->heads != 0) {
        ccs_err_set(err, "model '%s': field 'heads' (%d) must divide hidden (%d), or give head_dim",
                    m->name, (int)m->heads, (int)m->hidden);
        return CCS_EINPUT;
    }
    if (m->heads % m->kv_heads != 0) {
        ccs_err_set(err, "model '%s': field 'kv_heads' (%d) must divide heads (%d)", m->name,
                    (int)m->kv_heads, (int)m->heads);
        return CCS_EINPUT;
    }
    return CCS_OK;
}

double model_q_dim(const ccs_model *m)
{
    return m->head_dim > 0 ? (double)m->heads * m->head_dim : (double)m->hidden;
}

double model_kv_dim(const ccs_model *m)
{
    /* without head_dim the quotient is exact: heads divide hidden */
    return m->head_dim > 0 ? (double)m->kv_heads * m->head_dim
                           : (double)m->hidden * m->kv_heads / m->heads;
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

double model_qk_head_dim(const ccs_model *m)
{
    return model_is_mla(m)   ? (double)m->qk_nope_dim + m->qk_rope_dim
           : m->head_dim > 0 ? (double)m->head_dim
                             : (double)m->hidden / m->heads;
}

double model_v_head_dim(const ccs_model *m)
{
    return model_is_mla(m)   ? (double)m->v_head_dim
           : m->head_dim > 0 ? (double)m->head_dim
                             : (double)m->hidden / m->heads;
}

double model_attn_params(const ccs_model *m)
{
    double h = m->hidden, a = m->heads;
    double b = m->bias ? 1.0 : 0.0;
    if (!model_is_mla(m)) {
        double q = model_q_dim(m), kv = model_kv_dim(m);
        /* Q, K, V projections and the output projection (q -> h). */
        return h * (q + 2.0 * kv) + b * (q + 2.0 * kv) + q * h + b * h;
    }
    /* Latent attention (DeepSeek-V2, arXiv 2405.04434, eqs. 1-14; the weights
     * of DeepSeek-V3's released checkpoint): queries h -> q_lora_rank (RMSNorm)
     * -> heads x (nope + rope), or h -> heads x (nope + rope) directly; keys
     * and values h -> kv_lora_rank + rope (the rotary key shared by the
     * heads), the latent's RMSNorm, kv_lora_rank -> heads x (nope + v); the
     * output projection heads x v -> h. */
    double qk = model_qk_head_dim(m), v = m->v_head_dim, ql = m->q_lora_rank;
    double kl = m->kv_lora_rank, nope = m->qk_nope_dim, rope = m->qk_rope_dim;
    double nrm = m->bias ? 2.0 : 1.0; /* the latent norms: gains (and biases) */
    double q = ql > 0 ? h * ql + nrm * ql + ql * a * qk : h * a * qk;
    double kvp = h * (kl + rope) + nrm * kl + kl * a * (nope + v);
    /* biases, when the linear layers have them: one per output */
    double bias = b * (ql + a * qk + kl + rope + a * (nope + v) + h);
    return q + kvp + a * v * h + bias;
}

double model_layer_params(const ccs_model *m)
{
    double h = m->hidden;
    /* a mixture of experts: the router (h x experts), the routed and the shared experts */
    double mlp = m->experts > 0 ? h * m->experts + model_expert_params(m) +
                                      m->shared_experts * model_mlp_params(m, m->moe_ffn)
                                : model_mlp_params(m, m->ffn);
    /* Two norms: LayerNorm has gain and bias, RMSNorm a gain only. */
    double norms = 2.0 * h * (m->bias ? 2.0 : 1.0);
    return model_attn_params(m) + mlp + norms;
}

int32_t model_dense_layers(const ccs_model *m)
{
    return m->experts > 0 ? m->dense_layers : 0;
}

void model_dense_variant(const ccs_model *m, ccs_model *out)
{
    *out = *m;
    out->experts = out->top_k = out->shared_experts = out->moe_ffn = out->dense_layers = 0;
    out->route_nodes = 0;
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
    double dense = 0, d = model_dense_layers(m);
    if (d > 0) {
        ccs_model v;
        model_dense_variant(m, &v);
        dense = d * model_layer_params(&v);
    }
    return (m->layers - d) * model_layer_params(m) + dense + model_embedding_params(m) +
           model_head_params(m);
}
