/* fields.c - the expression fields of one scenario (fields.h). */
#include "ccsweep/sweep/fields.h"

void fields_fill(const ccs_model *m, double params, const ccs_hw *hw, int gen, const ccs_plan *p,
                 const ccs_result *r, double *vals)
{
    vals[EXPR_F_DEVICES] = p->devices;
    vals[EXPR_F_TP] = p->tp;
    vals[EXPR_F_PP] = p->pp;
    vals[EXPR_F_DP] = p->dp;
    vals[EXPR_F_VPP] = p->vpp;
    vals[EXPR_F_MBS] = p->mbs;
    vals[EXPR_F_GBS] = p->gbs;
    vals[EXPR_F_SEQ] = p->seq;
    vals[EXPR_F_DTYPE] = p->dtype;
    vals[EXPR_F_SP] = p->sp;
    vals[EXPR_F_ZERO] = p->zero;
    vals[EXPR_F_RECOMPUTE] = p->recompute;
    vals[EXPR_F_FLASH_ATTN] = p->flash_attn;
    vals[EXPR_F_TP_OVERLAP] = p->tp_overlap;
    vals[EXPR_F_DP_OVERLAP] = p->dp_overlap;
    vals[EXPR_F_INNET_REDUCE] = p->innet_reduce;
    vals[EXPR_F_COMM_COMPRESS] = p->comm_compress;
    vals[EXPR_F_NET_BW_FACTOR] = p->net_bw_factor;
    vals[EXPR_F_CP] = plan_cp(p);
    vals[EXPR_F_CP_COMM] = p->cp_comm;
    vals[EXPR_F_EP] = plan_ep(p);
    vals[EXPR_F_CAPACITY_FACTOR] = p->capacity_factor;
    vals[EXPR_F_PP_FIRST_LAYERS] = p->pp_first;
    vals[EXPR_F_PP_LAST_LAYERS] = p->pp_last;
    vals[EXPR_F_LAYERS] = m->layers;
    vals[EXPR_F_HIDDEN] = m->hidden;
    vals[EXPR_F_HEADS] = m->heads;
    vals[EXPR_F_KV_HEADS] = m->kv_heads;
    vals[EXPR_F_FFN] = m->ffn;
    vals[EXPR_F_VOCAB] = m->vocab;
    vals[EXPR_F_PARAMS] = params;
    vals[EXPR_F_EXPERTS] = m->experts;
    vals[EXPR_F_TOP_K] = m->top_k;
    vals[EXPR_F_GEN] = gen;
    vals[EXPR_F_MEM_CAP] = hw->mem_cap;
    vals[EXPR_F_DEVICES_PER_NODE] = hw->devices_per_node;
    if (!r) {
        for (int f = EXPR_F_RESULT; f < EXPR_F_N; f++)
            vals[f] = 0;
        return;
    }
    vals[EXPR_F_FITS] = r->fits;
    vals[EXPR_F_OK] = r->status == CCS_ST_OK;
    vals[EXPR_F_OOM] = r->status == CCS_ST_OOM;
    vals[EXPR_F_INVALID] = r->status == CCS_ST_INVALID;
    vals[EXPR_F_REASON] = r->reason;
    vals[EXPR_F_MICRO_BATCHES] = r->micro_batches;
    vals[EXPR_F_T_ITER] = r->t_iter;
    vals[EXPR_F_T_COMPUTE] = r->t_compute;
    vals[EXPR_F_T_COMM] = r->t_comm;
    vals[EXPR_F_T_COMM_EXPOSED] = r->t_comm_exposed;
    vals[EXPR_F_T_TP_COMM] = r->t_tp_comm;
    vals[EXPR_F_T_TP_COMM_EXPOSED] = r->t_tp_comm_exposed;
    vals[EXPR_F_T_DP_COMM] = r->t_dp_comm;
    vals[EXPR_F_T_DP_COMM_EXPOSED] = r->t_dp_comm_exposed;
    vals[EXPR_F_T_PP_COMM] = r->t_pp_comm;
    vals[EXPR_F_T_BUBBLE] = r->t_bubble;
    vals[EXPR_F_T_OPTIMIZER] = r->t_optimizer;
    vals[EXPR_F_COMM_FRACTION] = r->comm_fraction;
    vals[EXPR_F_HIDDEN_FRACTION] = r->hidden_fraction;
    vals[EXPR_F_MEM_TOTAL] = r->mem_total;
    vals[EXPR_F_MEM_WEIGHTS] = r->mem_weights;
    vals[EXPR_F_MEM_GRADS] = r->mem_grads;
    vals[EXPR_F_MEM_OPTIMIZER] = r->mem_optimizer;
    vals[EXPR_F_MEM_ACTIVATIONS] = r->mem_activations;
    vals[EXPR_F_MODEL_FLOPS] = r->model_flops;
    vals[EXPR_F_HW_FLOPS] = r->hw_flops;
    vals[EXPR_F_MFU] = r->mfu;
    vals[EXPR_F_TOKENS_PER_S] = r->tokens_per_s;
    vals[EXPR_F_TP_BYTES] = r->tp_bytes;
    vals[EXPR_F_DP_BYTES] = r->dp_bytes;
    vals[EXPR_F_PP_BYTES] = r->pp_bytes;
    vals[EXPR_F_CCR] = r->ccr;
    vals[EXPR_F_HFU] = r->hfu;
    vals[EXPR_F_T_CP_COMM] = r->t_cp_comm;
    vals[EXPR_F_T_CP_COMM_EXPOSED] = r->t_cp_comm_exposed;
    vals[EXPR_F_CP_BYTES] = r->cp_bytes;
    vals[EXPR_F_T_EP_COMM] = r->t_ep_comm;
    vals[EXPR_F_EP_BYTES] = r->ep_bytes;
}
