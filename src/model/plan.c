/* plan.c - plan defaults and validity rules (Megatron-LM constraints:
 * Narayanan et al. 2021 for pipeline/interleaving, Korthikanti et al. 2022
 * for sequence parallelism). */
#include "ccsweep/model/plan.h"

#include <stdio.h>

#include <string.h>

void plan_defaults(ccs_plan *p)
{
    memset(p, 0, sizeof *p);
    p->tp = p->pp = 1;
    p->cp = p->ep = 1;
    p->vpp = 1;
    p->mbs = 1;
    p->dtype = CCS_BF16;
    p->recompute = CCS_RECOMPUTE_NONE;
    p->dp_overlap = CCS_DPOV_NONE;
    p->comm_compress = 1.0;
    p->net_bw_factor = 1.0;
}

/* a * b * c * d, or -1 when it exceeds CCS_MAX_DEVICES. Each factor is an
 * int32, and every partial product is checked before the next step, so
 * nothing overflows int64. */
static int64_t group_product(int32_t a, int32_t b, int32_t c, int32_t d)
{
    int64_t x = (int64_t)a * b;
    if (x > CCS_MAX_DEVICES || (x *= c) > CCS_MAX_DEVICES || (x *= d) > CCS_MAX_DEVICES)
        return -1;
    return x;
}

int plan_derive(ccs_plan *p)
{
    if (p->tp <= 0 || p->pp <= 0)
        return CCS_R_NONPOSITIVE;
    if (p->cp < 0)
        return CCS_R_NONPOSITIVE;
    int64_t tpp = group_product(p->tp, p->pp, plan_cp(p), 1);
    if (tpp < 0)
        return CCS_R_DEVICES;
    if (p->dp == 0 && p->devices > 0) {
        if (p->devices % tpp != 0)
            return CCS_R_DEVICES;
        p->dp = (int32_t)(p->devices / tpp);
    } else if (p->devices == 0 && p->dp > 0) {
        int64_t d = group_product(p->tp, p->pp, plan_cp(p), p->dp);
        if (d < 0)
            return CCS_R_DEVICES;
        p->devices = (int32_t)d;
    }
    return CCS_R_OK;
}

int plan_stage_layers(const ccs_model *m, const ccs_plan *p, int32_t *first, int32_t *mid,
                      int32_t *last)
{
    int32_t L = m->layers, pp = p->pp;
    *first = *mid = *last = L;
    if (pp <= 1)
        return (p->pp_first <= 0 || p->pp_first == L) && (p->pp_last <= 0 || p->pp_last == L)
                   ? CCS_R_OK
                   : CCS_R_PP_LAYERS;
    if (p->pp_first < 0 || p->pp_last < 0)
        return CCS_R_PP_LAYERS;
    int64_t f = p->pp_first, l = p->pp_last, q;
    if (f > 0 || l > 0) {
        int64_t others = pp - (f > 0) - (l > 0);
        int64_t rest = (int64_t)L - f - l;
        if (others == 0) {
            if (rest != 0)
                return CCS_R_PP_LAYERS;
            q = f; /* two stages, both given: no middle stage */
        } else {
            if (rest < others || rest % others != 0)
                return CCS_R_PP_LAYERS;
            q = rest / others;
        }
        if (f == 0)
            f = q;
        if (l == 0)
            l = q;
    } else if (L % pp == 0) {
        f = l = q = L / pp;
    } else if (pp == 2) {
        f = L / 2;
        l = L - f;
        q = l;
    } else {
        q = (L + pp - 1) / pp;
        int64_t rem = (int64_t)L - (int64_t)(pp - 2) * q;
        if (rem < 2)
            return CCS_R_PP_LAYERS;
        f = rem / 2;
        l = rem - f;
    }
    if (f < 1 || l < 1 || q < 1)
        return CCS_R_PP_LAYERS;
    *first = (int32_t)f;
    *mid = (int32_t)q;
    *last = (int32_t)l;
    return CCS_R_OK;
}

static int32_t clamp_layers(int64_t v, int32_t hi)
{
    return v < 0 ? 0 : v > hi ? hi : (int32_t)v;
}

void plan_stage_dense(const ccs_model *m, const ccs_plan *p, int32_t first, int32_t mid,
                      int32_t *d_first, int32_t *d_mid_most, int32_t *d_mid_least, int32_t *d_last)
{
    int32_t d = model_dense_layers(m);
    if (p->pp <= 1) {
        *d_first = *d_mid_most = *d_mid_least = *d_last = d;
        return;
    }
    *d_first = clamp_layers(d, first);
    int64_t rest = (int64_t)d - *d_first, middles = p->pp - 2;
    *d_mid_most = middles > 0 ? clamp_layers(rest, mid) : 0;
    *d_mid_least = middles > 0 ? clamp_layers(rest - (middles - 1) * mid, mid) : 0;
    *d_last = clamp_layers(rest - middles * mid, INT32_MAX);
}

int32_t plan_micro_batches(const ccs_plan *p)
{
    int64_t per = (int64_t)p->mbs * p->dp;
    return per > 0 ? (int32_t)(p->gbs / per) : 0;
}

/* The frameworks' two schedules for ZeRO-2/3 gradients under accumulation:
 * - reduced after every micro-batch, only the shard kept: DeepSpeed ZeRO-2
 *   (deepspeed/runtime/zero/stage_1_and_2.py, reduce_ready_partitions_and_
 *   remove_grads: "if self.partition_gradients or
 *   self.is_gradient_accumulation_boundary", so stage 2 reduces on every
 *   backward and stage 1 only at the boundary), and PyTorch FSDP's
 *   post-backward reduce-scatter outside no_sync;
 * - kept whole until the last micro-batch: FSDP's no_sync (FSDP1) and
 *   set_requires_gradient_sync(False) (FSDP2), whose documentation says the
 *   gradients then accumulate unsharded, and Megatron-Core's distributed
 *   optimizer, whose gradient buffer holds every local parameter's main
 *   gradient and is reduce-scattered in finish_grad_sync after the last
 *   micro-batch (megatron/core/distributed/param_and_grad_buffer.py). */
int plan_grads_sharded(const ccs_plan *p)
{
    return p->zero >= 2 && (p->dp_overlap == CCS_DPOV_BUCKETED || plan_micro_batches(p) <= 1);
}

int plan_check(const ccs_model *m, const ccs_hw *hw, const ccs_plan *p)
{
    if (p->tp <= 0 || p->pp <= 0 || p->dp <= 0 || p->vpp <= 0 || p->mbs <= 0 || p->gbs <= 0 ||
        p->seq <= 0 || p->devices <= 0 || !(p->comm_compress > 0) || !(p->net_bw_factor > 0))
        return CCS_R_NONPOSITIVE;
    if (p->cp < 0)
        return CCS_R_NONPOSITIVE;
    if (group_product(p->tp, plan_cp(p), p->pp, p->dp) != p->devices)
        return CCS_R_DEVICES;
    if (m->heads % p->tp != 0)
        return CCS_R_TP_HEADS;
    if (m->kv_heads % p->tp != 0 && p->tp % m->kv_heads != 0)
        return CCS_R_TP_KV;
    if (m->ffn % p->tp != 0 || (m->experts > 0 && m->moe_ffn % p->tp != 0))
        return CCS_R_TP_FFN;
    /* Experts are spread over ep of the data-parallel ranks (Megatron-Core
     * carves the expert-parallel group out of dp x cp when experts keep the
     * tensor-parallel split) */
    if (p->ep < 0 || p->capacity_factor < 0)
        return CCS_R_NONPOSITIVE;
    if (plan_ep(p) > 1 && (m->experts == 0 || m->experts % plan_ep(p) != 0 ||
                           ((int64_t)p->dp * plan_cp(p)) % plan_ep(p) != 0))
        return CCS_R_EP;
    int32_t lf, lm, ll;
    if (plan_stage_layers(m, p, &lf, &lm, &ll) != CCS_R_OK)
        return CCS_R_PP_LAYERS;
    /* interleaving splits every stage into vpp chunks: equal on the middle
     * stages, at least a layer each on shorter first and last stages */
    if (p->vpp > 1 &&
        (p->pp == 1 || lm % p->vpp != 0 || lf > lm || ll > lm || lf < p->vpp || ll < p->vpp))
        return CCS_R_VPP;
    if (p->gbs % ((int64_t)p->mbs * p->dp) != 0)
        return CCS_R_BATCH;
    if (p->vpp > 1 && plan_micro_batches(p) % p->pp != 0)
        return CCS_R_VPP_MICRO;
    /* Megatron-Core splits the sequence into 2 cp chunks, rank i keeping
     * chunks i and 2cp-1-i, so causal attention work is balanced */
    if (plan_cp(p) > 1 &&
        (p->seq % (2 * plan_cp(p)) != 0 || (p->sp && (p->seq / plan_cp(p)) % p->tp != 0)))
        return CCS_R_CP;
    if (p->sp && p->seq % p->tp != 0)
        return CCS_R_SEQ_SP;
    if (p->dtype < 0 || p->dtype >= CCS_DTYPE_N || (hw && !(hw->peak_flops[p->dtype] > 0)))
        return CCS_R_DTYPE;
    if (p->zero < 0 || p->zero > 3)
        return CCS_R_ZERO;
    if (p->recompute < CCS_RECOMPUTE_NONE || p->recompute > CCS_RECOMPUTE_FULL)
        return CCS_R_RECOMPUTE;
    return CCS_R_OK;
}

static const char *const reason_names[CCS_R_N] = {
    "ok",        "nonpositive", "devices",   "tp_heads", "tp_kv",  "tp_ffn",
    "pp_layers", "vpp",         "vpp_micro", "batch",    "seq_sp", "dtype",
    "zero",      "recompute",   "oom",       "cp",       "ep"};

static const char *const reason_texts[CCS_R_N] = {
    "ok",
    "a size or factor is zero or negative",
    "tp * cp * pp * dp does not equal devices",
    "tp does not divide the attention heads",
    "tp and kv_heads do not divide one another",
    "tp does not divide the FFN width",
    "the layers cannot be split into pp stages (pp must divide them, or the first/last stage "
    "counts must leave an even split)",
    "vpp needs pp > 1 and must divide the layers of a middle stage (first and last no longer, at "
    "least vpp)",
    "interleaving needs the micro-batch count divisible by pp",
    "gbs is not divisible by mbs * dp",
    "sequence parallelism needs tp to divide seq",
    "the hardware has no matrix units for this dtype",
    "zero stage must be 0..3",
    "unknown recompute mode",
    "does not fit device memory",
    "cp must divide the sequence into 2 cp equal chunks (and leave a multiple of tp with sp)",
    "ep must divide the experts and dp x cp (ep needs a mixture-of-experts model)",
};

const char *plan_reason_name(int reason)
{
    return (reason >= 0 && reason < CCS_R_N) ? reason_names[reason] : "?";
}

const char *plan_reason_text(int reason)
{
    return (reason >= 0 && reason < CCS_R_N) ? reason_texts[reason] : "?";
}

const char *plan_reason_detail(int reason, const ccs_model *m, const ccs_plan *p, char *buf,
                               size_t size)
{
    const char *t = plan_reason_text(reason);
    int64_t tcpd = (int64_t)p->tp * plan_cp(p) * p->pp * p->dp;
    switch (reason) {
    case CCS_R_DEVICES:
        snprintf(buf, size, "%s (%d x %d x %d x %d = %lld, devices %d)", t, p->tp, plan_cp(p),
                 p->pp, p->dp, (long long)tcpd, p->devices);
        break;
    case CCS_R_TP_HEADS:
        snprintf(buf, size, "%s (tp %d, heads %d)", t, p->tp, m->heads);
        break;
    case CCS_R_TP_KV:
        snprintf(buf, size, "%s (tp %d, kv_heads %d)", t, p->tp, m->kv_heads);
        break;
    case CCS_R_TP_FFN:
        snprintf(buf, size, "%s (tp %d, ffn %d)", t, p->tp, m->ffn);
        break;
    case CCS_R_PP_LAYERS:
        snprintf(buf, size, "%s (pp %d, layers %d, first %d, last %d)", t, p->pp, m->layers,
                 p->pp_first, p->pp_last);
        break;
    case CCS_R_VPP:
        snprintf(buf, size, "%s (vpp %d, pp %d, layers %d)", t, p->vpp, p->pp, m->layers);
        break;
    case CCS_R_VPP_MICRO:
        snprintf(buf, size, "%s (%d micro-batches, pp %d)", t,
                 p->mbs > 0 && p->dp > 0 ? p->gbs / (p->mbs * p->dp) : 0, p->pp);
        break;
    case CCS_R_BATCH:
        snprintf(buf, size, "%s (gbs %d, mbs %d x dp %d = %lld)", t, p->gbs, p->mbs, p->dp,
                 (long long)p->mbs * p->dp);
        break;
    case CCS_R_SEQ_SP:
        snprintf(buf, size, "%s (tp %d, seq %d)", t, p->tp, p->seq);
        break;
    case CCS_R_CP:
        snprintf(buf, size, "%s (cp %d, seq %d, tp %d)", t, plan_cp(p), p->seq, p->tp);
        break;
    case CCS_R_EP:
        snprintf(buf, size, "%s (ep %d, experts %d, dp x cp %lld)", t, plan_ep(p), m->experts,
                 (long long)p->dp * plan_cp(p));
        break;
    default:
        snprintf(buf, size, "%s", t);
    }
    return buf;
}

/* Index of s in names[0..n), or -1: the text forms of the plan's enums. */
static int name_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static const char *const rc_names[] = {"none", "selective", "full"};
static const char *const dpov_names[] = {"none", "last-microbatch", "bucketed"};
static const char *const cp_comm_names[] = {
    [CCS_CP_RING] = "ring", [CCS_CP_ALLGATHER] = "allgather"};

const char *recompute_name(int mode)
{
    return (mode >= 0 && mode <= 2) ? rc_names[mode] : "?";
}

int recompute_parse(const char *s)
{
    return name_index(rc_names, 3, s);
}

const char *dp_overlap_name(int mode)
{
    return (mode >= 0 && mode <= 2) ? dpov_names[mode] : "?";
}

int dp_overlap_parse(const char *s)
{
    return name_index(dpov_names, 3, s);
}

const char *cp_comm_name(int mode)
{
    return (mode >= 0 && mode <= 1) ? cp_comm_names[mode] : "?";
}

int cp_comm_parse(const char *s)
{
    return name_index(cp_comm_names, 2, s);
}
