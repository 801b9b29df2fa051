/* timeline.c - iteration time from region times.
 *
 * Per micro-batch a stage runs its layers' forward, recompute and backward
 * regions with TP collectives on the critical path (with fine-grained overlap,
 * max(compute, comm) per block). The embedding (first stage) or output head (last stage) is added.
 * The slowest stage sets the pace: m micro-batches, a 1F1B bubble of
 * (p-1)/vpp micro-batch times (Narayanan et al. 2021, sec. 2.2), and blocking
 * stage-boundary exchanges, two per micro-batch per model chunk.
 *
 * Links are accounted once: every data-parallel collective (gradient
 * reduction, ZeRO parameter gathers) shares the DP group's links, so they are
 * hidden together under one window of compute, never each under its own; and
 * per link class (intra-node, inter-node) the iteration is never shorter than
 * the time the link is busy. */
#include "ccsweep/cost/timeline.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* One iteration composed (compose_iter), s: its length, the compute on the
 * critical path (optimizer included), each parallelism's traffic and the part
 * of it on the critical path (_exp), the pipeline transfers, bubble and the
 * optimizer step. The EP all-to-alls are always exposed. */
typedef struct compose {
    double t_iter, t_compute, t_tp, t_tp_exp, t_dp, t_dp_exp, t_pp, t_bubble, t_opt;
    double t_cp, t_cp_exp, t_ep;
} compose;

/* A time the timeline composes: a number of seconds, never negative. */
static inline int is_time(double t)
{
    return isfinite(t) && t >= 0;
}

/* The invariants of a composed iteration, for every valid plan. slack: the
 * parts obtained as a difference (TP exposure is the stage's exposure less
 * the CP and EP parts added into it; the DP window's exposure) can miss
 * their bound by a few roundings. Not invariants, so not asserted: TP
 * exposure <= TP traffic (a link's deficit is exposed as TP time, whatever
 * caused it) and so hidden_fraction >= 0. */
static void assert_compose(const compose *o)
{
    double slack = 1e-12 * o->t_iter;
    assert(is_time(o->t_iter) && is_time(o->t_compute) && is_time(o->t_opt));
    assert(is_time(o->t_tp) && is_time(o->t_dp) && is_time(o->t_pp) && is_time(o->t_bubble));
    assert(is_time(o->t_cp) && is_time(o->t_cp_exp) && is_time(o->t_ep));
    assert(is_time(o->t_dp_exp) && o->t_dp_exp <= o->t_dp + slack);
    assert(o->t_cp_exp <= o->t_cp);
    assert(isfinite(o->t_tp_exp) && o->t_tp_exp >= -slack);
    assert(o->t_compute >= o->t_opt && o->t_iter >= o->t_compute - slack);
    (void)o;
    (void)slack;
}

/* Per-region sums of one occurrence: rt all ops, gemm the GEMM-class ops,
 * core the attention core (score and context matmuls, softmax, fused kernel).
 * Link busy time per link class (0 intra, 1 inter): per layer and micro-batch,
 * per micro-batch of the first and of the last stage, and per iteration. */
typedef struct sums {
    double rt[CCS_RG_N], gemm[CCS_RG_N], core[CCS_RG_N];
    double busy_layer[2], busy_first[2], busy_last[2], busy_iter[2];
} sums;

/* Compute part and TP part of a (compute region, tp region) pair. With
 * fine-grained overlap (e.g. Wang et al. 2023, "Overlap communication with
 * dependent computation via decomposition") a block's collectives run under
 * its GEMMs: the block costs max(GEMMs, comm) + the rest. */
static void block(const sums *S, int rc, int rtp, int overlap, double share, double *c, double *tp,
                  double *tp_exp)
{
    double comm = S->rt[rtp];
    /* the stack's overlap method hides `share` of each collective at most
     * (the rest waits, as without overlap) */
    double exp = overlap ? comm * (1 - share) + fmax(0.0, comm * share - S->gemm[rc]) : comm;
    *c += S->rt[rc];
    *tp += comm;
    *tp_exp += exp;
}

/* One layer, one micro-batch: compute, TP traffic and its exposed part (CP
 * and EP exposure included), the CP ring and its exposed part, the EP
 * all-to-alls, the backward compute and the link busy time. */
typedef struct layer_cost {
    double c, tp, tpe, cp, cpe, ep, bwd_c, busy[2];
} layer_cost;

static void layer_of(const ccs_plan *p, const ccs_stack *st, const sums *S, layer_cost *L)
{
    const double *rt = S->rt;
    int ov = p->tp_overlap;
    double sh = st->tp_overlap_share;
    double lc = 0, ltp = 0, ltpe = 0;
    block(S, CCS_RG_FWD_ATTN, CCS_RG_FWD_ATTN_TP, ov, sh, &lc, &ltp, &ltpe);
    block(S, CCS_RG_FWD_MLP, CCS_RG_FWD_MLP_TP, ov, sh, &lc, &ltp, &ltpe);
    block(S, CCS_RG_RECOMP_ATTN, CCS_RG_RECOMP_ATTN_TP, ov, sh, &lc, &ltp, &ltpe);
    block(S, CCS_RG_RECOMP_MLP, CCS_RG_RECOMP_MLP_TP, ov, sh, &lc, &ltp, &ltpe);
    double bwd_c =
        rt[CCS_RG_BWD_MLP] + rt[CCS_RG_BWD_ATTN] + rt[CCS_RG_RECOMP_ATTN] + rt[CCS_RG_RECOMP_MLP];
    block(S, CCS_RG_BWD_MLP, CCS_RG_BWD_MLP_TP, ov, sh, &lc, &ltp, &ltpe);
    block(S, CCS_RG_BWD_ATTN, CCS_RG_BWD_ATTN_TP, ov, sh, &lc, &ltp, &ltpe);
    /* the framework's per-layer time (hooks around each pass), outside the
     * GEMMs: nothing hides under it */
    double passes = 2 + (p->recompute == CCS_RECOMPUTE_FULL);
    lc += passes * st->layer_overhead;
    bwd_c += (passes - 1) * st->layer_overhead;
    /* context parallelism: each ring step's K/V transfer runs under the
     * attention on the block already held, so only what the attention core
     * cannot cover is exposed */
    static const int cpr[3][2] = {{CCS_RG_FWD_ATTN_CP, CCS_RG_FWD_ATTN},
                                  {CCS_RG_RECOMP_ATTN_CP, CCS_RG_RECOMP_ATTN},
                                  {CCS_RG_BWD_ATTN_CP, CCS_RG_BWD_ATTN}};
    double lcp = 0, lcpe = 0;
    int ring = p->cp_comm != CCS_CP_ALLGATHER;
    for (int i = 0; i < 3; i++) {
        lcp += rt[cpr[i][0]];
        lcpe += ring ? fmax(0.0, rt[cpr[i][0]] - S->core[cpr[i][1]]) : rt[cpr[i][0]];
    }
    ltpe += lcpe; /* on the critical path with the block's TP exposure */
    /* expert-parallel all-to-alls: the experts wait for their tokens */
    double lep = rt[CCS_RG_FWD_MLP_EP] + rt[CCS_RG_RECOMP_MLP_EP] + rt[CCS_RG_BWD_MLP_EP];
    ltpe += lep;
    *L = (layer_cost){lc, ltp, ltpe, lcp, lcpe, lep, bwd_c, {S->busy_layer[0], S->busy_layer[1]}};
}

/* A stage's n blocks, d of them dense-FFN ones (cost D, the others M). */
static layer_cost stage_layers(const layer_cost *M, const layer_cost *D, double n, double d)
{
    double e = n - d;
    layer_cost s = {e * M->c + d * D->c,
                    e * M->tp + d * D->tp,
                    e * M->tpe + d * D->tpe,
                    e * M->cp + d * D->cp,
                    e * M->cpe + d * D->cpe,
                    e * M->ep + d * D->ep,
                    e * M->bwd_c + d * D->bwd_c,
                    {e * M->busy[0] + d * D->busy[0], e * M->busy[1] + d * D->busy[1]}};
    return s;
}

/* The stage that sets the pace, one micro-batch: its compute, TP traffic and
 * exposure (embedding or head included), its layers, the backward compute of
 * its last layer (reduced first) and of the output head when it holds it,
 * and the per-micro-batch link busy time of its embedding or head (NULL: a
 * middle stage). */
typedef struct pace {
    double mc, mtp, mtpe;
    layer_cost st;
    double last_bwd, head_bwd;
    const double *extra_busy;
} pace;

/* The slowest stage: the first (its layers and the embedding), a middle one
 * (layers only: the one with the most and the one with the fewest dense-FFN
 * blocks) or the last (layers and head); the first on ties. One stage is all
 * three when pp == 1. */
static pace slowest_stage(const ccs_plan *p, const ccs_oplist *ops, const sums *S,
                          const layer_cost *LM, const layer_cost *LD)
{
    const double *rt = S->rt;
    double fc = rt[CCS_RG_EMBED_FWD] + rt[CCS_RG_EMBED_BWD];
    double ftp = rt[CCS_RG_EMBED_TP], ftpe = ftp;
    double hc = rt[CCS_RG_HEAD_FWD] + rt[CCS_RG_HEAD_BWD];
    double htp = rt[CCS_RG_HEAD_TP], htpe = htp;

    double mc, mtp, mtpe; /* slowest stage, one micro-batch */
    layer_cost st;        /* its layers */
    double last_bwd;      /* backward compute of its last layer (reduced first) */
    double head_bwd = 0;
    const double *extra_busy = S->busy_first;
    if (p->pp == 1) {
        st = stage_layers(LM, LD, ops->layers_first, ops->dense_first);
        mc = st.c + fc + hc;
        mtp = st.tp + ftp + htp;
        mtpe = st.tpe + ftpe + htpe;
        head_bwd = rt[CCS_RG_HEAD_BWD];
        last_bwd = ops->layers_first > ops->dense_first ? LM->bwd_c : LD->bwd_c;
    } else {
        layer_cost cand[4] = {stage_layers(LM, LD, ops->layers_first, ops->dense_first),
                              stage_layers(LM, LD, ops->layers_mid, ops->dense_mid),
                              stage_layers(LM, LD, ops->layers_mid, ops->dense_mid_least),
                              stage_layers(LM, LD, ops->layers_last, ops->dense_last)};
        double n[4] = {ops->layers_first, ops->layers_mid, ops->layers_mid, ops->layers_last};
        double d[4] = {ops->dense_first, ops->dense_mid, ops->dense_mid_least, ops->dense_last};
        double t[4] = {cand[0].c + cand[0].tpe + fc + ftpe, p->pp > 2 ? cand[1].c + cand[1].tpe : 0,
                       p->pp > 2 ? cand[2].c + cand[2].tpe : 0,
                       cand[3].c + cand[3].tpe + hc + htpe};
        int k = 0;
        for (int i = 1; i < 4; i++)
            if (t[i] > t[k])
                k = i;
        st = cand[k];
        last_bwd = n[k] > d[k] ? LM->bwd_c : LD->bwd_c;
        mc = st.c;
        mtp = st.tp;
        mtpe = st.tpe;
        if (k == 0) {
            mc += fc;
            mtp += ftp;
            mtpe += ftpe;
        } else if (k == 3) {
            mc += hc;
            mtp += htp;
            mtpe += htpe;
            head_bwd = rt[CCS_RG_HEAD_BWD];
            extra_busy = S->busy_last;
        } else {
            extra_busy = NULL;
        }
    }
    return (pace){mc, mtp, mtpe, st, last_bwd, head_bwd, extra_busy};
}

/* Data parallelism, one window for all of it: its traffic into o->t_dp and
 * the exposed part into o->t_dp_exp. g: gradient reduction (per micro-batch
 * when bucketed), zg: ZeRO-3 gathers, prefetched under each micro-batch's
 * compute; G: the backward compute the gradient buckets can run under (all
 * but the first-reduced layer, plus the output head). */
static void dp_window(const ccs_plan *p, const sums *S, const pace *P, double m, compose *o)
{
    const double *rt = S->rt;
    double mc = P->mc;
    double g = rt[CCS_RG_DP_COMM], zg = m * rt[CCS_RG_ZERO_GATHER];
    double pg = rt[CCS_RG_DP_PARAM_GATHER]; /* after the step: never hidden */
    double G = P->st.bwd_c - P->last_bwd + P->head_bwd;
    /* Compute already covering the context-parallel ring is not a window for
     * DP traffic too: both cross the same NICs when cp ranks sit on other
     * nodes, and counting it twice would let less compute hide more. */
    double mcw = mc - (P->st.cp - P->st.cpe);
    if (mc > 0)
        G *= mcw / mc;
    double zg_in_G = mcw > 0 ? rt[CCS_RG_ZERO_GATHER] * G / mcw : 0;
    double exposed;
    switch (p->dp_overlap) {
    case CCS_DPOV_LAST_MICRO:
        exposed = fmax(0.0, fmax(zg + g - m * mcw, g + zg_in_G - G));
        o->t_dp = g + zg + pg;
        break;
    case CCS_DPOV_BUCKETED:
        exposed = fmax(0.0, fmax(zg + m * g - m * mcw, m * (g + zg_in_G - G)));
        o->t_dp = m * g + zg + pg;
        break;
    default:
        exposed = g + fmax(0.0, zg - m * mcw);
        o->t_dp = g + zg + pg;
        break;
    }
    o->t_dp_exp = exposed + pg;
}

/* The iteration from the sums S of the model's main block and Sd of its
 * dense-FFN block (its dense first layers), or S itself when it has none:
 * the slowest stage's m micro-batches, the bubble, the pipeline transfers,
 * the DP window, the optimizer step, then no link busier than the iteration
 * is long. */
static void compose_iter(const ccs_plan *p, const ccs_stack *stk, double contention,
                         const ccs_oplist *ops, const sums *S, const sums *Sd, compose *o)
{
    assert(ops->micro_batches >= 1 && p->pp >= 1 && p->vpp >= 1);
    assert(contention >= 0 && contention < 1);
    const double *rt = S->rt;
    layer_cost LM, LD;
    layer_of(p, stk, S, &LM);
    layer_of(p, stk, Sd, &LD);

    double m = ops->micro_batches;
    pace P = slowest_stage(p, ops, S, &LM, &LD);
    double mc = P.mc, mtp = P.mtp, mtpe = P.mtpe;
    const layer_cost st = P.st;
    double busy[2];
    for (int k = 0; k < 2; k++) {
        busy[k] = m * st.busy[k] + S->busy_iter[k];
        if (p->pp == 1)
            busy[k] += m * (S->busy_first[k] + S->busy_last[k]);
        else if (P.extra_busy)
            busy[k] += m * P.extra_busy[k];
    }
    double t_mb = mc + mtpe;

    o->t_bubble = (p->pp - 1.0) / p->vpp * t_mb;
    o->t_pp = p->pp > 1 ? 2.0 * (m * p->vpp + p->pp - 1.0) * rt[CCS_RG_PP_COMM] : 0.0;
    o->t_pp += rt[CCS_RG_EMBED_GRAD]; /* after the backward pass, before the step */
    dp_window(p, S, &P, m, o);
    o->t_opt = rt[CCS_RG_OPTIMIZER] + stk->iter_overhead;

    o->t_cp = m * st.cp;
    o->t_cp_exp = m * st.cpe;
    o->t_ep = m * st.ep;
    o->t_tp = m * mtp;
    o->t_tp_exp = m * mtpe - o->t_cp_exp - o->t_ep;
    o->t_compute = m * mc + o->t_opt;
    o->t_iter =
        o->t_compute + o->t_tp_exp + o->t_cp_exp + o->t_ep + o->t_dp_exp + o->t_pp + o->t_bubble;

    /* A link cannot carry more than the iteration's length: what the windows
     * above would hide beyond that is exposed after all. */
    double deficit = fmax(busy[0], busy[1]) - o->t_iter;
    if (deficit > 0) {
        double dp_hidden = o->t_dp - o->t_dp_exp;
        double to_dp = fmin(deficit, dp_hidden);
        o->t_dp_exp += to_dp;
        o->t_tp_exp += deficit - to_dp;
        o->t_iter += deficit;
    }
    /* Contention: while a collective runs under compute, its kernels hold
     * `contention` of the compute units (NCCL runs one thread block per
     * channel on its own SM), so the compute under it progresses at
     * 1 - contention of its speed: the hidden time h costs contention x h
     * more compute. */
    double hidden = (o->t_tp - o->t_tp_exp) + (o->t_cp - o->t_cp_exp) + (o->t_dp - o->t_dp_exp);
    if (contention > 0 && hidden > 0) {
        double extra = contention * hidden;
        o->t_compute += extra;
        o->t_iter += extra;
    }
    assert_compose(o);
}

#define OUT(f)                                                                                     \
    {                                                                                              \
#f, offsetof(ccs_result, f), CCS_OUT_STORED                                                \
    }
/* derived: timeline_project sums or divides stored outputs for them, and the
 * view result_codes (store_schema.c) does the same in the same order, bit for bit */
#define DER(f)                                                                                     \
    {                                                                                              \
#f, offsetof(ccs_result, f), CCS_OUT_DERIVED                                               \
    }
#define BAND(f)                                                                                    \
    {                                                                                              \
#f, offsetof(ccs_result, f), CCS_OUT_UNLESS_T_ITER                                         \
    }
const ccs_output ccs_outputs[CCS_N_OUTPUTS] = {
    OUT(t_iter),
    BAND(t_iter_lo),
    BAND(t_iter_hi),
    OUT(extrap),
    OUT(t_compute),
    DER(t_comm),
    DER(t_comm_exposed),
    OUT(t_tp_comm),
    OUT(t_tp_comm_exposed),
    OUT(t_dp_comm),
    OUT(t_dp_comm_exposed),
    OUT(t_pp_comm),
    OUT(t_bubble),
    OUT(t_optimizer),
    DER(comm_fraction),
    DER(hidden_fraction),
    OUT(mem_weights),
    OUT(mem_grads),
    OUT(mem_optimizer),
    OUT(mem_activations),
    OUT(mem_total),
    OUT(model_flops),
    OUT(hw_flops),
    OUT(mfu),
    DER(tokens_per_s),
    OUT(tp_bytes),
    OUT(dp_bytes),
    OUT(pp_bytes),
    OUT(ccr),
    /* schema version 6 */
    OUT(hfu),
    OUT(t_cp_comm),
    OUT(t_cp_comm_exposed),
    OUT(cp_bytes),
    OUT(t_ep_comm),
    OUT(ep_bytes),
};
#undef DER
#undef BAND
#undef OUT

/* One op's time t (one occurrence) into the sums s. */
static inline void add_op(sums *s, const ccs_op *op, double t1, int is_gemm, int is_core,
                          size_t busy_off, double per_iter)
{
    double t = t1 * op->count;
    s->rt[op->region] += t;
    if (is_gemm)
        s->gemm[op->region] += t;
    if (is_core)
        s->core[op->region] += t;
    if (busy_off)
        *(double *)(void *)((char *)s + busy_off) += t * per_iter;
}

#define KIND_BIT(k) (1u << (k))
static const unsigned gemm_kinds =
    KIND_BIT(CCS_OP_GEMM) | KIND_BIT(CCS_OP_BMM) | KIND_BIT(CCS_OP_ATTENTION);
static const unsigned core_kinds =
    KIND_BIT(CCS_OP_ATTENTION) | KIND_BIT(CCS_OP_BMM) | KIND_BIT(CCS_OP_SOFTMAX);

/* Cost every op of ops into three sums (best estimate, low and high end of
 * the band); per-region flops and bytes into rg when not NULL. While every
 * operator's band is its estimate (synthetic curves), the three sums see the
 * same additions and stay bit-equal: only S[0] is summed, and copied to the
 * others when the first band appears. Returns 1 once S[1] and S[2] are
 * filled, 0 when they equal S[0] (and are left unset). */
static int sum_ops(const ccs_cost *c, const ccs_plan *p, const ccs_oplist *ops, sums S[3],
                   double *extrap, ccs_region_time *rg)
{
    memset(&S[0], 0, sizeof S[0]);
    int banded = 0, start = 0, keep_at = -1;
    double m_b = ops->micro_batches;
    /* Synthetic costs only (no band, no extrapolation), no regions wanted:
     * the sums over the block's ops (the list's first n_layer, the same for
     * every plan that differs only in pipeline, data parallelism, ZeRO or
     * batch) may be in the memo; else they are kept there on the way. */
    if (c->memo && !c->om && !rg && ops->n_layer > 0) {
        const void *v = cost_memo_find(c->memo, c, ops->ops, ops->n_layer, sizeof S[0]);
        if (v) {
            memcpy(&S[0], v, sizeof S[0]);
            start = ops->n_layer;
        } else {
            keep_at = ops->n_layer;
        }
    }
    ccs_optime times[CCS_MAX_OPS];
    cost_ops(c, ops->ops + start, ops->n - start, times + start);
    for (int i = start; i < ops->n; i++) {
        const ccs_op *op = &ops->ops[i];
        ccs_optime ot = times[i];
        assert(is_time(ot.t) && is_time(op->count));
        if (!banded && (memcmp(&ot.lo, &ot.t, sizeof ot.t) || memcmp(&ot.hi, &ot.t, sizeof ot.t))) {
            S[1] = S[2] = S[0];
            banded = 1;
        }
        unsigned kb = KIND_BIT(op->kind);
        int is_gemm = (kb & gemm_kinds) != 0, is_core = (kb & core_kinds) != 0;
        /* a collective's link time: the busy sum of its scope and link class
         * (busy_off into sums), times its occurrences per iteration for the
         * iteration-scoped ops (layer, first- and last-stage ops are scaled
         * per stage: x 1, exact) */
        size_t busy_off = 0;
        double per_iter = 1;
        if (op->comm) {
            int sc = region_scope(op->region);
            int link = op->kind == CCS_OP_P2P ? op->per_node < 2 : op->per_node < op->group;
            if (sc == CCS_SCOPE_LAYER) {
                busy_off = offsetof(sums, busy_layer) + (size_t)link * sizeof(double);
            } else if (sc == CCS_SCOPE_FIRST) {
                busy_off = offsetof(sums, busy_first) + (size_t)link * sizeof(double);
            } else if (sc == CCS_SCOPE_LAST) {
                busy_off = offsetof(sums, busy_last) + (size_t)link * sizeof(double);
            } else {
                busy_off = offsetof(sums, busy_iter) + (size_t)link * sizeof(double);
                if (sc == CCS_SCOPE_MICRO)
                    per_iter = m_b;
                if (op->region == CCS_RG_PP_COMM)
                    per_iter = 2.0 * m_b * p->vpp; /* sent per direction; links are full duplex */
                if (op->region == CCS_RG_DP_COMM && p->dp_overlap == CCS_DPOV_BUCKETED)
                    per_iter = m_b;
            }
        }
        add_op(&S[0], op, ot.t, is_gemm, is_core, busy_off, per_iter);
        if (banded) {
            assert(is_time(ot.lo) && is_time(ot.hi));
            add_op(&S[1], op, ot.lo, is_gemm, is_core, busy_off, per_iter);
            add_op(&S[2], op, ot.hi, is_gemm, is_core, busy_off, per_iter);
        }
        if (ot.extrap > *extrap)
            *extrap = ot.extrap;
        if (rg) {
            rg[op->region].flops += op->flops * op->count;
            rg[op->region].bytes += op->bytes * op->count;
        }
        if (i + 1 == keep_at) /* the block's sums, before the rest is added */
            cost_memo_keep(c->memo, c, ops->ops, keep_at, &S[0], sizeof S[0]);
    }
    return banded;
}

static void fail(ccs_result *out, int status, int reason)
{
    out->status = status;
    out->reason = reason;
}

/* The composed iteration co (lo, hi: its band's ends) into out's times and
 * the figures derived from them; an: the analytic FLOPs for MFU and HFU. */
static void put_times(const ccs_plan *p, const ccs_cost *c, const compose *cop, const compose *lop,
                      const compose *hip, double extrap, const ccs_analytic *anp, ccs_result *out)
{
    const compose co = *cop, lo = *lop, hi = *hip;
    const ccs_analytic an = *anp;
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
    out->t_cp_comm = co.t_cp;
    out->t_cp_comm_exposed = co.t_cp_exp;
    out->t_ep_comm = co.t_ep;
    /* t_comm, t_comm_exposed, comm_fraction, hidden_fraction and tokens_per_s
     * are not stored: the view result_codes (store_schema.c) computes them from the
     * stored outputs with these expressions, term by term: change both */
    out->t_comm = co.t_tp + co.t_cp + co.t_ep + co.t_dp + co.t_pp;
    out->t_comm_exposed = co.t_tp_exp + co.t_cp_exp + co.t_ep + co.t_dp_exp + co.t_pp;
    out->comm_fraction = co.t_iter > 0 ? out->t_comm_exposed / co.t_iter : 0;
    /* TP, CP and DP communication that ran under compute, of all their traffic */
    double ovl = co.t_dp + co.t_tp + co.t_cp, ovl_exp = co.t_dp_exp + co.t_tp_exp + co.t_cp_exp;
    out->hidden_fraction = ovl > 0 ? 1.0 - ovl_exp / ovl : 0;
    double peak = c->hw->peak_flops[p->dtype];
    /* MFU counts the model's FLOPs (Megatron-LM/PaLM convention: attention as
     * if unmasked, no recomputation); HFU adds the recomputed FLOPs
     * (Korthikanti et al. 2022, section 6.3); both against the dense peak of
     * the plan's dtype. */
    out->mfu = co.t_iter > 0 ? an.model_flops / (co.t_iter * p->devices * peak) : 0;
    out->hfu = co.t_iter > 0 ? an.hw_flops / (co.t_iter * p->devices * peak) : 0;
    out->tokens_per_s = co.t_iter > 0 ? (double)p->gbs * p->seq / co.t_iter : 0;
    /* the exposed communication is part of the iteration (up to the rounding
     * of the two sums' different order) */
    assert(out->comm_fraction >= -1e-12 && out->comm_fraction <= 1 + 1e-12);
}

/* The per-region breakdown: one occurrence's time of each region (rt; layer
 * regions: the mean over the stage's blocks, drt and drg the dense-FFN
 * block's, when has_dense) and its occurrences per iteration. */
static void put_regions(const ccs_plan *p, const ccs_oplist *ops, const double *rt, int has_dense,
                        const double *drt, const ccs_region_time *drg, ccs_region_time *regions)
{
    double m_b = ops->micro_batches, ls = ops->layers_per_stage;
    for (int r = 0; r < CCS_RG_N; r++) {
        regions[r].time = rt[r];
        switch (region_scope(r)) {
        case CCS_SCOPE_LAYER:
            regions[r].count = m_b * ls;
            if (has_dense && ls > 0) { /* the mean over the stage's blocks */
                double wd = ops->dense_per_stage / ls;
                regions[r].time = (1 - wd) * rt[r] + wd * drt[r];
                regions[r].flops = (1 - wd) * regions[r].flops + wd * drg[r].flops;
                regions[r].bytes = (1 - wd) * regions[r].bytes + wd * drg[r].bytes;
            }
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

void timeline_project(const ccs_model *m, const ccs_plan *p, const ccs_cost *c, ccs_result *out,
                      ccs_region_time *regions)
{
    assert(m && p && c && c->hw && out);
    memset(out, 0, sizeof *out);
    out->params = model_params(m);
    if (regions)
        memset(regions, 0, sizeof(*regions) * CCS_RG_N);
    int reason = plan_check(m, c->hw, p);
    if (reason != CCS_R_OK) {
        fail(out, CCS_ST_INVALID, reason);
        return;
    }

    const ccs_stack *st = c->stack ? c->stack : stack_default_entry();
    /* a stack without a fused attention kernel runs the unfused core whatever
     * the plan asks */
    ccs_plan pu;
    if (p->flash_attn && st->attn_kernel == CCS_ATTN_UNFUSED) {
        pu = *p;
        pu.flash_attn = 0;
        p = &pu;
    }
    /* the compute units the stack's collectives hold while they overlap */
    double contention = fmin(st->comm_units / c->hw->compute_units, 0.5);

    ccs_oplist ops, dops;
    regions_build_stack(m, p, hw_scaleup(c->hw), c->stack, &ops);
    out->micro_batches = ops.micro_batches;
    /* a mixture of experts with dense first layers: its dense-FFN block too */
    int has_dense = model_dense_layers(m) > 0;
    if (has_dense) {
        ccs_model dv;
        model_dense_variant(m, &dv);
        regions_build_stack(&dv, p, hw_scaleup(c->hw), c->stack, &dops);
    }

    ccs_memory mem;
    memory_footprint(m, p, &ops, &mem);
    out->mem_weights = mem.weights;
    out->mem_grads = mem.grads;
    out->mem_optimizer = mem.optimizer;
    out->mem_activations = mem.activations;
    out->mem_total = mem.total + memory_reserve(p);
    out->fits = out->mem_total <= c->hw->mem_cap;

    ccs_analytic an;
    analytic_compute(m, p, &ops, has_dense ? &dops : NULL, &an);
    out->model_flops = an.model_flops;
    out->hw_flops = an.hw_flops;
    out->tp_bytes = an.tp_bytes;
    out->cp_bytes = an.cp_bytes;
    out->ep_bytes = an.ep_bytes;
    out->dp_bytes = an.dp_bytes;
    out->pp_bytes = an.pp_bytes;
    out->ccr = an.ccr;

    /* three sums: best estimate, low and high end of the band; a mixture of
     * experts with dense first layers also costs its dense-FFN block (Sd),
     * whose layer regions replace the expert block's on those layers */
    sums S[3], Sd[3];
    double extrap = 0;
    int banded = sum_ops(c, p, &ops, S, &extrap, regions);
    ccs_region_time drg[CCS_RG_N];
    if (has_dense) {
        memset(drg, 0, sizeof drg);
        int dbanded = sum_ops(c, p, &dops, Sd, &extrap, regions ? drg : NULL);
        if (dbanded != banded) { /* one of the two has its bands: both need them */
            sums *one = banded ? Sd : S;
            one[1] = one[2] = one[0];
            banded = 1;
        }
    }
    double *rt = S[0].rt;
    compose co, lo, hi;
    compose_iter(p, st, contention, &ops, &S[0], has_dense ? &Sd[0] : &S[0], &co);
    if (banded) {
        compose_iter(p, st, contention, &ops, &S[1], has_dense ? &Sd[1] : &S[1], &lo);
        compose_iter(p, st, contention, &ops, &S[2], has_dense ? &Sd[2] : &S[2], &hi);
    } else {
        lo = hi = co;
    }

    put_times(p, c, &co, &lo, &hi, extrap, &an, out);
    if (regions)
        put_regions(p, &ops, rt, has_dense, Sd[0].rt, drg, regions);

    if (out->fits) {
        out->status = CCS_ST_OK;
        out->reason = CCS_R_OK;
    } else {
        fail(out, CCS_ST_OOM, CCS_R_OOM);
    }
}
