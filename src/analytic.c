/* analytic.c - FLOP and byte counts. */
#include "ccsweep/analytic.h"
#include "ccsweep/opcost.h"

double analytic_layer_fwd_flops(const ccs_model *m, double b, double s)
{
    double h = m->hidden, f = m->ffn, kv = model_kv_dim(m);
    double qkv = 2 * b * s * h * (h + 2 * kv);
    double core = 4 * b * s * s * h;
    double out = 2 * b * s * h * h;
    double mlp = 2 * b * s * h * f * (m->gated ? 3 : 2);
    if (m->experts > 0) /* router, then top_k routed and the shared experts per token */
        mlp = 2 * b * s * h * m->experts +
              (m->top_k + m->shared_experts) * 2 * b * s * h * m->moe_ffn * (m->gated ? 3 : 2);
    return qkv + core + out + mlp;
}

double analytic_model_flops(const ccs_model *m, const ccs_plan *p)
{
    double logits = 2.0 * p->seq * m->hidden * (double)m->vocab;
    return 3.0 * p->gbs * (m->layers * analytic_layer_fwd_flops(m, 1, p->seq) + logits);
}

void analytic_compute(const ccs_model *m, const ccs_plan *p, const ccs_oplist *ops,
                      ccs_analytic *out)
{
    double mb = ops->micro_batches, ls = ops->layers_per_stage;
    out->layer_fwd_flops = analytic_layer_fwd_flops(m, p->mbs, p->seq);
    out->model_flops = analytic_model_flops(m, p);
    double extra = 0;
    if (p->recompute == CCS_RECOMPUTE_FULL)
        extra = out->layer_fwd_flops;
    else if (p->recompute == CCS_RECOMPUTE_SELECTIVE && !p->flash_attn)
        extra = 4.0 * p->mbs * (double)p->seq * p->seq * m->hidden;
    out->hw_flops = out->model_flops + extra * m->layers * mb * p->dp;

    out->tp_bytes = out->dp_bytes = out->pp_bytes = out->cp_bytes = out->ep_bytes = 0;
    double fwd_tp = 0;
    for (int i = 0; i < ops->n; i++) {
        const ccs_op *op = &ops->ops[i];
        if (!op->comm)
            continue;
        double steps;
        double v = cost_coll_volume(op->kind, op->bytes, op->group, p->innet_reduce, &steps) *
                   op->count;
        switch (region_scope(op->region)) {
        case CCS_SCOPE_LAYER:
            v *= ls * mb;
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
        if (op->region == CCS_RG_FWD_ATTN_TP || op->region == CCS_RG_FWD_MLP_TP)
            fwd_tp += cost_coll_volume(op->kind, op->bytes, op->group, p->innet_reduce, &steps) *
                      op->count;
    }
    out->ccr = fwd_tp > 0 ? out->layer_fwd_flops / p->tp / plan_cp(p) / fwd_tp : 0;
}
