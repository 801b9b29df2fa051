/* timeline.c - iteration time from region times.
 *
 * Per micro-batch a stage runs its layers' forward, recompute and backward
 * regions with TP collectives on the critical path (or, with fine-grained
 * overlap, max(compute, comm) per block), plus the embedding (first stage) or
 * output head (last stage). The slowest stage sets the pace: m micro-batches,
 * a 1F1B bubble of (p-1)/vpp micro-batch times (Narayanan et al. 2021, sec.
 * 2.2), and blocking stage-boundary transfers, two per micro-batch per model
 * chunk. Data-parallel gradient reduction overlaps the last micro-batch's
 * backward of all but the first-reduced layer; what does not fit is exposed.
 * ZeRO-3 parameter gathers are prefetched under each micro-batch's compute. */
#include "ccsweep/timeline.h"

#include <math.h>
#include <string.h>

typedef struct compose {
    double t_iter, t_compute, t_tp, t_tp_exp, t_dp, t_dp_exp, t_pp, t_bubble, t_opt;
    double rc_hidden_budget;
} compose;

/* Compute part and TP part of a (compute region, tp region) pair. With
 * fine-grained overlap (e.g. Wang et al. 2023, "Overlap communication with
 * dependent computation via decomposition") a block's collectives run under
 * its producer/consumer GEMMs: the block costs max(GEMMs, comm) + the rest. */
static void block(const double *rt, const double *gemm, int rc, int rtp, int overlap, double *c,
                  double *tp, double *tp_exp)
{
    *c += rt[rc];
    *tp += rt[rtp];
    *tp_exp += overlap ? fmax(0.0, rt[rtp] - gemm[rc]) : rt[rtp];
}

static void compose_iter(const ccs_plan *p, const ccs_oplist *ops, const double *rt,
                         const double *gemm, compose *o)
{
    int ov = p->tp_overlap;
    double lc = 0, ltp = 0, ltpe = 0; /* one layer, one micro-batch */
    block(rt, gemm, CCS_RG_FWD_ATTN, CCS_RG_FWD_ATTN_TP, ov, &lc, &ltp, &ltpe);
    block(rt, gemm, CCS_RG_FWD_MLP, CCS_RG_FWD_MLP_TP, ov, &lc, &ltp, &ltpe);
    block(rt, gemm, CCS_RG_RECOMP_ATTN, CCS_RG_RECOMP_ATTN_TP, ov, &lc, &ltp, &ltpe);
    block(rt, gemm, CCS_RG_RECOMP_MLP, CCS_RG_RECOMP_MLP_TP, ov, &lc, &ltp, &ltpe);
    double bwd_c = rt[CCS_RG_BWD_MLP] + rt[CCS_RG_BWD_ATTN] + rt[CCS_RG_RECOMP_ATTN] +
                   rt[CCS_RG_RECOMP_MLP];
    block(rt, gemm, CCS_RG_BWD_MLP, CCS_RG_BWD_MLP_TP, ov, &lc, &ltp, &ltpe);
    block(rt, gemm, CCS_RG_BWD_ATTN, CCS_RG_BWD_ATTN_TP, ov, &lc, &ltp, &ltpe);

    double ls = ops->layers_per_stage;
    double fc = 0, ftp = 0, ftpe = 0, hc = 0, htp = 0, htpe = 0;
    fc = rt[CCS_RG_EMBED_FWD] + rt[CCS_RG_EMBED_BWD];
    ftp = ftpe = rt[CCS_RG_EMBED_TP];
    hc = rt[CCS_RG_HEAD_FWD] + rt[CCS_RG_HEAD_BWD];
    htp = htpe = rt[CCS_RG_HEAD_TP];

    double mc, mtp, mtpe; /* slowest stage, one micro-batch */
    double head_bwd = 0;
    if (p->pp == 1) {
        mc = ls * lc + fc + hc;
        mtp = ls * ltp + ftp + htp;
        mtpe = ls * ltpe + ftpe + htpe;
        head_bwd = rt[CCS_RG_HEAD_BWD];
    } else {
        double first = ls * (lc + ltpe) + fc + ftpe;
        double last = ls * (lc + ltpe) + hc + htpe;
        if (first >= last) {
            mc = ls * lc + fc;
            mtp = ls * ltp + ftp;
            mtpe = ls * ltpe + ftpe;
        } else {
            mc = ls * lc + hc;
            mtp = ls * ltp + htp;
            mtpe = ls * ltpe + htpe;
            head_bwd = rt[CCS_RG_HEAD_BWD];
        }
    }
    double m = ops->micro_batches;
    double t_mb = mc + mtpe;

    o->t_bubble = (p->pp - 1.0) / p->vpp * t_mb;
    o->t_pp = p->pp > 1 ? 2.0 * (m * p->vpp + p->pp - 1.0) * rt[CCS_RG_PP_COMM] : 0.0;

    /* ZeRO-3 gathers run ahead of each micro-batch's compute */
    double zg = rt[CCS_RG_ZERO_GATHER];
    double zg_exp = fmax(0.0, zg - mc);
    double budget = p->dp_overlap ? (ls - 1.0) * bwd_c + head_bwd : 0.0;
    o->t_dp = rt[CCS_RG_DP_COMM] + m * zg;
    o->t_dp_exp = fmax(0.0, rt[CCS_RG_DP_COMM] - budget) + m * zg_exp;
    o->t_opt = rt[CCS_RG_OPTIMIZER];

    o->t_tp = m * mtp;
    o->t_tp_exp = m * mtpe;
    o->t_compute = m * mc + o->t_opt;
    o->t_iter = o->t_compute + o->t_tp_exp + o->t_dp_exp + o->t_pp + o->t_bubble;
}

static void fail(ccs_result *out, int status, int reason)
{
    out->status = status;
    out->reason = reason;
}

void timeline_project(const ccs_model *m, const ccs_plan *p, const ccs_cost *c, ccs_result *out,
                      ccs_region_time *regions)
{
    memset(out, 0, sizeof *out);
    out->params = model_params(m);
    if (regions)
        memset(regions, 0, sizeof(*regions) * CCS_RG_N);
    int reason = plan_check(m, c->hw, p);
    if (reason != CCS_R_OK) {
        fail(out, CCS_ST_INVALID, reason);
        return;
    }

    ccs_oplist ops;
    regions_build(m, p, c->hw->devices_per_node, &ops);
    out->micro_batches = ops.micro_batches;

    ccs_memory mem;
    memory_footprint(m, p, ops.params_stage_first, ops.params_stage_last, &mem);
    out->mem_weights = mem.weights;
    out->mem_grads = mem.grads;
    out->mem_optimizer = mem.optimizer;
    out->mem_activations = mem.activations;
    out->mem_total = mem.total;
    out->fits = mem.total <= c->hw->mem_cap;

    ccs_analytic an;
    analytic_compute(m, p, &ops, &an);
    out->model_flops = an.model_flops;
    out->hw_flops = an.hw_flops;
    out->tp_bytes = an.tp_bytes;
    out->dp_bytes = an.dp_bytes;
    out->pp_bytes = an.pp_bytes;
    out->ccr = an.ccr;

    double rt[CCS_RG_N] = {0}, rlo[CCS_RG_N] = {0}, rhi[CCS_RG_N] = {0};
    double gemm[CCS_RG_N] = {0}, glo[CCS_RG_N] = {0}, ghi[CCS_RG_N] = {0};
    double extrap = 0;
    for (int i = 0; i < ops.n; i++) {
        const ccs_op *op = &ops.ops[i];
        ccs_optime ot;
        cost_op(c, op, &ot);
        rt[op->region] += ot.t * op->count;
        rlo[op->region] += ot.lo * op->count;
        rhi[op->region] += ot.hi * op->count;
        if (op->kind == CCS_OP_GEMM || op->kind == CCS_OP_BMM || op->kind == CCS_OP_ATTENTION) {
            gemm[op->region] += ot.t * op->count;
            glo[op->region] += ot.lo * op->count;
            ghi[op->region] += ot.hi * op->count;
        }
        if (ot.extrap > extrap)
            extrap = ot.extrap;
        if (regions) {
            regions[op->region].flops += op->flops * op->count;
            regions[op->region].bytes += op->bytes * op->count;
        }
    }
    compose co, lo, hi;
    compose_iter(p, &ops, rt, gemm, &co);
    compose_iter(p, &ops, rlo, glo, &lo);
    compose_iter(p, &ops, rhi, ghi, &hi);

    out->t_iter = co.t_iter;
    out->t_iter_lo = lo.t_iter;
    out->t_iter_hi = hi.t_iter;
    out->extrap = extrap;
    out->t_compute = co.t_compute;
    out->t_tp_comm = co.t_tp;
    out->t_tp_comm_exposed = co.t_tp_exp;
    out->t_dp_comm = co.t_dp;
    out->t_dp_comm_exposed = co.t_dp_exp;
    out->t_pp_comm = co.t_pp;
    out->t_bubble = co.t_bubble;
    out->t_optimizer = co.t_opt;
    out->t_comm = co.t_tp + co.t_dp + co.t_pp;
    out->t_comm_exposed = co.t_tp_exp + co.t_dp_exp + co.t_pp;
    out->comm_fraction = co.t_iter > 0 ? out->t_comm_exposed / co.t_iter : 0;
    double ovl = co.t_dp + (p->tp_overlap ? co.t_tp : 0);
    double ovl_exp = co.t_dp_exp + (p->tp_overlap ? co.t_tp_exp : 0);
    out->hidden_fraction = ovl > 0 ? 1.0 - ovl_exp / ovl : 0;
    double peak = c->hw->peak_flops[p->dtype];
    out->mfu = co.t_iter > 0 ? an.model_flops / (co.t_iter * p->devices * peak) : 0;
    out->tokens_per_s = co.t_iter > 0 ? (double)p->gbs * p->seq / co.t_iter : 0;

    if (regions) {
        double m_b = ops.micro_batches, ls = ops.layers_per_stage;
        for (int r = 0; r < CCS_RG_N; r++) {
            regions[r].time = rt[r];
            switch (region_scope(r)) {
            case CCS_SCOPE_LAYER:
                regions[r].count = m_b * ls;
                break;
            case CCS_SCOPE_FIRST:
            case CCS_SCOPE_LAST:
            case CCS_SCOPE_MICRO:
                regions[r].count = m_b;
                break;
            default:
                regions[r].count = 1;
            }
        }
        if (p->pp > 1)
            regions[CCS_RG_PP_COMM].count = 2.0 * (m_b * p->vpp + p->pp - 1.0);
    }

    if (out->fits) {
        out->status = CCS_ST_OK;
        out->reason = CCS_R_OK;
    } else {
        fail(out, CCS_ST_OOM, CCS_R_OOM);
    }
}
