/* memory.c - memory footprint per device.
 *
 * Model states (Rajbhandari et al. 2020, ZeRO, section 3.1, with Megatron-LM's
 * fp32 main gradients): 16-bit weights (2 B/param), fp32 gradients (4), Adam
 * fp32 master weights, momentum and variance (12): 18 B/param; fp32 training
 * keeps 4 + 4 + 8. ZeRO-1 shards the optimizer states, ZeRO-2 also the
 * gradients, ZeRO-3 also the weights, over the dp ranks.
 *
 * Activations: Korthikanti et al. 2022 (arXiv 2205.05198) eqs. 1-6: per layer
 * sbh(34 + 5as/h) bytes unparallelised; tensor parallelism splits 24sbh + 5as^2b
 * of it; sequence parallelism also the remaining 10sbh; selective recompute
 * drops the 5as^2b attention-core part; full recompute keeps only the 2sbh
 * layer input. 1F1B keeps p micro-batches in flight on the first stage
 * (its layers' worth), interleaving multiplies by 1 + (p-1)/(p*vpp); with
 * uneven stages (plan_stage_layers) a middle stage can be the fullest. */
#include "ccsweep/memory.h"
#include "ccsweep/regions.h"

double memory_act_per_layer(const ccs_model *m, const ccs_plan *p)
{
    /* with context parallelism a rank keeps s/cp tokens; its queries' scores
     * span the whole sequence */
    double skv = p->seq, s = skv / plan_cp(p);
    double b = p->mbs, h = m->hidden, t = p->tp, f = m->ffn, a = m->heads;
    double e = dtype_bytes(p->dtype) < 2 ? 2 : dtype_bytes(p->dtype);
    double dr = m->bias ? 1.0 : 0.0; /* dropout masks, one byte per element */
    int sp = p->sp && p->tp > 1;
    double sbh = s * b * h;
    double kv = (double)m->kv_heads / m->heads;
    if (p->recompute == CCS_RECOMPUTE_FULL)
        return e * sbh / (sp ? t : 1);
    /* kept whole unless sequence parallel: two norm inputs, QKV and FC1 inputs
     * (the norm outputs), and the two residual dropout masks */
    double repl = (4 * e + 2 * dr) * sbh;
    /* split by tp: Q, K, V, the out-projection input, and the MLP inner tensors
     * (GeLU input and FC2 input; SwiGLU: gate, up and FC2 input) */
    double split = e * sbh * (1 + 2 * kv) + e * sbh + e * s * b * f * (m->gated ? 3 : 2);
    if (m->experts > 0) {
        /* every token's top_k routed copies (padded to capacity) and the shared
         * experts keep their inner tensors, and the permuted FC1 inputs */
        double copies = m->top_k * (p->capacity_factor > 0 ? p->capacity_factor : 1);
        split = e * sbh * (1 + 2 * kv) + e * sbh +
                e * s * b * m->moe_ffn * (m->gated ? 3 : 2) * (copies + m->shared_experts) +
                e * sbh * copies;
    }
    double core = 0;
    if (p->recompute == CCS_RECOMPUTE_NONE && !p->flash_attn)
        core = (e + dr * (1 + e)) * a * s * skv * b; /* softmax out; dropout mask and out */
    if (p->flash_attn)
        core = 4.0 * a * s * b; /* fp32 log-sum-exp per row */
    return repl / (sp ? t : 1) + (split + core) / t;
}

void memory_footprint(const ccs_model *m, const ccs_plan *p, double params_first,
                      double params_last, ccs_memory *out)
{
    int fp32 = dtype_bytes(p->dtype) >= 4;
    double w_b = fp32 ? 4 : 2, g_b = 4, o_b = fp32 ? 8 : 12;
    /* ZeRO shards over the gradient group: dp * cp ranks for dense weights,
     * the dp * cp / ep that hold the same experts for expert weights */
    double dp = (double)p->dp * plan_cp(p), edp = dp / plan_ep(p);
    double ws = p->zero >= 3 ? dp : 1, gs = p->zero >= 2 ? dp : 1, os = p->zero >= 1 ? dp : 1;
    double wse = p->zero >= 3 ? edp : 1, gse = p->zero >= 2 ? edp : 1, ose = p->zero >= 1 ? edp : 1;
    double per_param = w_b / ws + g_b / gs + o_b / os;
    double per_expert = w_b / wse + g_b / gse + o_b / ose;
    double ex = model_expert_params(m) / ((double)plan_ep(p) * p->tp); /* per layer, device */

    int32_t lf, lm, ll;
    plan_stage_layers(m, p, &lf, &lm, &ll);
    double mb = plan_micro_batches(p);
    double layer = memory_act_per_layer(m, p);
    double e = dtype_bytes(p->dtype) < 2 ? 2 : dtype_bytes(p->dtype);
    double sbh_t = (double)p->seq / plan_cp(p) * p->mbs * m->hidden / p->tp;
    int sp = p->sp && p->tp > 1;

    /* first stage: min(p, m) micro-batches of its layers (1F1B warm-up depth) */
    double inflight = p->pp < mb ? p->pp : mb;
    double il = p->vpp > 1 ? 1.0 + (p->pp - 1.0) / (p->pp * (double)p->vpp) : 1.0;
    double act_first = layer * lf * inflight * il;
    /* embedding dropout mask per in-flight micro-batch (Korthikanti eq. 5) */
    if (m->bias)
        act_first += sbh_t * (sp ? 1 : p->tp) * inflight;
    /* last stage: one micro-batch in flight, plus the output head's final norm
     * output and fp32 logits (Korthikanti section 4.3: 4sbh/t (1 + v/h)) */
    double V = regions_padded_vocab(m, p->tp);
    double head = sbh_t * (e + 4.0 * V / m->hidden);
    double act_last = layer * ll * il + head;
    if (p->pp == 1) {
        act_first += head;
        act_last = act_first;
    }
    /* the second stage, the fullest middle one: p - 1 micro-batches in flight */
    double mid = 0, params_mid = 0, act_mid = 0;
    if (p->pp > 2) {
        double inflight_mid = p->pp - 1 < mb ? p->pp - 1 : mb;
        act_mid = layer * lm * inflight_mid * il;
        params_mid = lm * ((model_layer_params(m) - model_expert_params(m)) / p->tp + ex);
        mid = (params_mid - lm * ex) * per_param + lm * ex * per_expert + act_mid;
    }

    double first = (params_first - lf * ex) * per_param + lf * ex * per_expert + act_first;
    double last = (params_last - ll * ex) * per_param + ll * ex * per_expert + act_last;
    double params = params_first, act = act_first, total = first, pe = lf * ex;
    if (last > total) {
        params = params_last;
        act = act_last;
        total = last;
        pe = ll * ex;
    }
    if (mid > total) {
        params = params_mid;
        act = act_mid;
        total = mid;
        pe = lm * ex;
    }
    out->weights = (params - pe) * w_b / ws + pe * w_b / wse;
    out->grads = (params - pe) * g_b / gs + pe * g_b / gse;
    out->optimizer = (params - pe) * o_b / os + pe * o_b / ose;
    out->activations = act;
    out->total = total;
    out->act_layer = layer;
    out->in_flight = inflight * il;
}
