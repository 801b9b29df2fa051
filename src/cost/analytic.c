/* analytic.c - FLOP and byte counts: model FLOPs from closed forms (the
 * MFU convention, independent of the plan), hardware FLOPs adding the
 * recomputation, and the bytes each device sends, summed from the operator
 * list's collectives with the ring volumes the timeline costs them with. */
#include "ccsweep/cost/analytic.h"
#include "ccsweep/cost/opcost.h"

#include <assert.h>

double analytic_layer_fwd_flops(const ccs_model *m, double b, double s)
{
    assert(m && b >= 0 && s >= 0);
    /* q: the query and attention-output width, h unless head_dim says */
    double h = m->hidden, f = m->ffn, kv = model_kv_dim(m), q = model_q_dim(m);
    double qkv = 2 * b * s * h * (q + 2 * kv);
    double core = 4 * b * s * s * q;
    double out = 2 * b * s * h * q;
    if (model_is_mla(m)) {
        /* latent attention: every projection weight once per token (the
         * latent norms are not GEMMs), scores over qk_nope + qk_rope per
         * head, context over v_head_dim */
        double a = m->heads, vd = m->v_head_dim;
        double nrm = (m->bias ? 2.0 : 1.0) * ((double)m->q_lora_rank + m->kv_lora_rank);
        out = 2 * b * s * a * vd * h;
        qkv = 2 * b * s * (model_attn_params(m) - nrm) - out;
        core = 2 * b * s * s * a * (model_qk_head_dim(m) + vd);
    }
    double mlp = 2 * b * s * h * f * (m->gated ? 3 : 2);
    if (m->experts > 0) /* router, then top_k routed and the shared experts per token */
        mlp = 2 * b * s * h * m->experts +
              (m->top_k + m->shared_experts) * 2 * b * s * h * m->moe_ffn * (m->gated ? 3 : 2);
    return qkv + core + out + mlp;
}

/* Forward FLOPs of all the blocks for b sequences: the dense first ones of
 * a mixture of experts and the rest. */
static double blocks_fwd_flops(const ccs_model *m, double b, double s)
{
    double d = model_dense_layers(m), dense = 0;
    if (d > 0) {
        ccs_model v;
        model_dense_variant(m, &v);
        dense = d * analytic_layer_fwd_flops(&v, b, s);
    }
    return (m->layers - d) * analytic_layer_fwd_flops(m, b, s) + dense;
}

double analytic_model_flops(const ccs_model *m, const ccs_plan *p)
{
    assert(m && p);
    double logits = 2.0 * p->seq * m->hidden * (double)m->vocab;
    return 3.0 * p->gbs * (blocks_fwd_flops(m, 1, p->seq) + logits);
}

void analytic_compute(const ccs_model *m, const ccs_plan *p, const ccs_oplist *ops,
                      const ccs_oplist *dense_ops, ccs_analytic *out)
{
    assert(m && p && ops && out);
    assert(ops->n >= 0 && ops->n <= CCS_MAX_OPS && p->tp >= 1 && p->vpp >= 1);
    assert(!dense_ops || (dense_ops->n >= 0 && dense_ops->n <= CCS_MAX_OPS));
    double mb = ops->micro_batches, ls = ops->layers_per_stage;
    out->layer_fwd_flops = analytic_layer_fwd_flops(m, p->mbs, p->seq);
    out->model_flops = analytic_model_flops(m, p);
    double extra = 0; /* recomputed FLOPs of all the blocks, one micro-batch */
    if (p->recompute == CCS_RECOMPUTE_FULL)
        extra = blocks_fwd_flops(m, p->mbs, p->seq);
    else if (p->recompute == CCS_RECOMPUTE_SELECTIVE && ops->sac_op)
        /* the per-op policy's key, output and up projections (regions.c) */
        extra = m->layers * 2.0 * p->mbs * (double)p->seq * m->hidden *
                ((double)m->kv_heads * model_qk_head_dim(m) +
                 (double)m->heads * model_v_head_dim(m) + m->ffn);
    else if (p->recompute == CCS_RECOMPUTE_SELECTIVE && !p->flash_attn)
        extra = m->layers * 2.0 * p->mbs * (double)p->seq * p->seq * m->heads *
                (model_qk_head_dim(m) + model_v_head_dim(m));
    out->hw_flops = out->model_flops + extra * mb * p->dp;

    out->tp_bytes = out->dp_bytes = out->pp_bytes = out->cp_bytes = out->ep_bytes = 0;
    double fwd_tp = 0;
    /* the most loaded stage's blocks: ls - ds of ops' kind, ds dense-FFN ones */
    double ds = dense_ops ? ops->dense_per_stage : 0;
    int n_main = ops->n, n_all = ops->n + (dense_ops ? dense_ops->n : 0);
    for (int i = 0; i < n_all; i++) {
        const ccs_op *op = i < n_main ? &ops->ops[i] : &dense_ops->ops[i - n_main];
        if (!op->comm)
            continue;
        int dense = i >= n_main;
        if (dense && region_scope(op->region) != CCS_SCOPE_LAYER)
            continue; /* the rest of the dense build repeats ops' */
        double steps;
        double v =
            cost_coll_volume(op->kind, op->bytes, op->group, p->innet_reduce, &steps) * op->count;
        switch (region_scope(op->region)) {
        case CCS_SCOPE_LAYER:
            v *= (dense ? ds : ls - ds) * mb;
            break;
        case CCS_SCOPE_FIRST:
        case CCS_SCOPE_LAST:
        case CCS_SCOPE_MICRO:
            v *= mb;
            break;
        default:
            break;
        }
        if (op->region == CCS_RG_DP_COMM && p->dp_overlap == CCS_DPOV_BUCKETED)
            v *= mb; /* reduced after every micro-batch */
        if (op->comm == CCS_COMM_TP)
            out->tp_bytes += v;
        else if (op->comm == CCS_COMM_DP)
            out->dp_bytes += v;
        else if (op->comm == CCS_COMM_CP)
            out->cp_bytes += v;
        else if (op->comm == CCS_COMM_EP)
            out->ep_bytes += v;
        else if (op->region == CCS_RG_PP_COMM) /* an activation forward and a gradient
                                                  backward per model chunk */
            out->pp_bytes += v * 2.0 * p->vpp * mb;
        else
            out->pp_bytes += v;
        if (!dense && (op->region == CCS_RG_FWD_ATTN_TP || op->region == CCS_RG_FWD_MLP_TP))
            fwd_tp += cost_coll_volume(op->kind, op->bytes, op->group, p->innet_reduce, &steps) *
                      op->count;
    }
    /* a device computes a 1 / (tp cp) share of the layer's forward FLOPs */
    out->ccr = fwd_tp > 0 ? out->layer_fwd_flops / p->tp / plan_cp(p) / fwd_tp : 0;
}
