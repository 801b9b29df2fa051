/* stack.c - software stack entries (stack.h): the default and the checks. */
#include "ccsweep/model/stack.h"

#include <math.h>
#include <string.h>

const char *const ccs_attn_kernel_names[CCS_ATTN_N] = {"gemm-rel", "fa2",     "fa3", "cudnn",
                                                       "triton",   "unfused", "fa1", "fa-triton"};

const char *const ccs_loss_kernel_names[2] = {"vocab-parallel", "fused"};
const char *const ccs_bias_grad_names[2] = {"fused", "separate"};
const char *const ccs_elementwise_names[2] = {"fused", "eager"};
const char *const ccs_selective_names[2] = {"core", "op"};

const char *attn_kernel_name(int k)
{
    return k >= 0 && k < CCS_ATTN_N ? ccs_attn_kernel_names[k] : "?";
}

int attn_kernel_parse(const char *s)
{
    for (int k = 0; s && k < CCS_ATTN_N; k++)
        if (strcmp(s, ccs_attn_kernel_names[k]) == 0)
            return k;
    return -1;
}

/* every other field 0, the name's tail too (entries are hashed whole) */
static const ccs_stack default_stack = {.name = "megatron-core",
                                        .attn_kernel = CCS_ATTN_GEMM_REL,
                                        .grad_dtype = CCS_FP32,
                                        .eltwise_factor = 1.0,
                                        .tp_overlap_share = 1.0};

const ccs_stack *stack_default_entry(void)
{
    return &default_stack;
}

void stack_default(ccs_stack *out)
{
    memcpy(out, &default_stack, sizeof *out); /* padding too: entries are hashed whole */
}

int stack_is_default(const ccs_stack *s)
{
    const ccs_stack *d = &default_stack;
    return !strcmp(s->name, d->name) && s->attn_kernel == d->attn_kernel &&
           s->grad_dtype == d->grad_dtype && s->no_dropout == d->no_dropout &&
           s->fused_loss == d->fused_loss && s->logit_metrics == d->logit_metrics &&
           s->bias_grad_sep == d->bias_grad_sep && s->eager == d->eager && s->sac_op == d->sac_op &&
           s->eltwise_factor == d->eltwise_factor && s->op_overhead == d->op_overhead &&
           s->layer_overhead == d->layer_overhead && s->iter_overhead == d->iter_overhead &&
           s->comm_units == d->comm_units && s->tp_overlap_share == d->tp_overlap_share &&
           s->zero3_units == d->zero3_units;
}

/* The largest overhead an entry may give, s: one second per kernel already
 * dwarfs any device; the bound keeps every sum finite. */
#define STACK_MAX_OVERHEAD 1.0

int stack_validate(const ccs_stack *s, ccs_err *err)
{
    if (!ccs_name_ok(s->name)) {
        ccs_err_set(err, "stack: invalid name");
        return CCS_EINPUT;
    }
    if (s->attn_kernel < 0 || s->attn_kernel >= CCS_ATTN_N) {
        ccs_err_set(err, "stack '%s': attention kernel out of range", s->name);
        return CCS_EINPUT;
    }
    if (s->grad_dtype != CCS_FP32 && s->grad_dtype != CCS_BF16 && s->grad_dtype != CCS_FP16) {
        ccs_err_set(err, "stack '%s': field 'grad_dtype': expected fp32, bf16 or fp16", s->name);
        return CCS_EINPUT;
    }
    if (!(s->eltwise_factor >= 1 && s->eltwise_factor <= 100)) {
        ccs_err_set(err, "stack '%s': field 'eltwise_factor': expected a number in [1, 100]",
                    s->name);
        return CCS_EINPUT;
    }
    const struct {
        const char *what;
        double v;
    } t[] = {{"op_overhead_us", s->op_overhead},
             {"layer_overhead_us", s->layer_overhead},
             {"iter_overhead_ms", s->iter_overhead}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!(t[i].v >= 0 && t[i].v <= STACK_MAX_OVERHEAD)) {
            ccs_err_set(err, "stack '%s': field '%s': expected a time in [0, 1 s]", s->name,
                        t[i].what);
            return CCS_EINPUT;
        }
    if (!(s->comm_units >= 0 && s->comm_units <= 4096)) {
        ccs_err_set(err, "stack '%s': field 'comm_units': expected a count in [0, 4096]", s->name);
        return CCS_EINPUT;
    }
    if (!(s->zero3_units >= 0 && s->zero3_units <= 1024 &&
          s->zero3_units == floor(s->zero3_units))) {
        ccs_err_set(err, "stack '%s': field 'zero3_units': expected a whole count in [0, 1024]",
                    s->name);
        return CCS_EINPUT;
    }
    if (s->no_dropout != 0 && s->no_dropout != 1) {
        ccs_err_set(err, "stack '%s': field 'dropout': expected true or false", s->name);
        return CCS_EINPUT;
    }
    if (s->fused_loss != 0 && s->fused_loss != 1) {
        ccs_err_set(err, "stack '%s': field 'loss_kernel': expected vocab-parallel or fused",
                    s->name);
        return CCS_EINPUT;
    }
    if (s->bias_grad_sep != 0 && s->bias_grad_sep != 1) {
        ccs_err_set(err, "stack '%s': field 'bias_grad': expected fused or separate", s->name);
        return CCS_EINPUT;
    }
    if (s->logit_metrics < 0 || s->logit_metrics > CCS_STACK_MAX_METRICS) {
        ccs_err_set(err, "stack '%s': field 'logit_metrics': expected a count in [0, %d]", s->name,
                    CCS_STACK_MAX_METRICS);
        return CCS_EINPUT;
    }
    if (!(s->tp_overlap_share >= 0 && s->tp_overlap_share <= 1)) {
        ccs_err_set(err, "stack '%s': field 'tp_overlap_share': expected a fraction in [0, 1]",
                    s->name);
        return CCS_EINPUT;
    }
    return CCS_OK;
}
