/* memory.h - per-device memory footprint of a plan: weights, gradients,
 * optimizer states (by ZeRO stage) and activations (by recompute mode and
 * sequence parallelism, times the micro-batches the schedule keeps in flight). */
#ifndef CCSWEEP_MEMORY_H
#define CCSWEEP_MEMORY_H

#include "ccsweep/cost/regions.h"

typedef struct ccs_memory {
    double weights;     /* bytes */
    double grads;       /* bytes */
    double optimizer;   /* bytes */
    double activations; /* bytes */
    double total;       /* bytes, the fullest of the first, a middle and the last stage */
    double act_layer;   /* bytes of activations one layer keeps for one micro-batch */
    double in_flight; /* micro-batch-layers of activations held by a first-stage device / layers per
                         stage */
} ccs_memory;

/* Activation bytes one Transformer layer stores for the backward pass, per
 * device, for one micro-batch (Korthikanti et al. 2022, section 4, generalised
 * to GQA, gated FFNs, dropout-free blocks and 16/32-bit activations), with
 * dropout masks where the model has dropout (GPT-style blocks: m->bias); the
 * footprint takes the oplist's dropout, which a stack may turn off. */
double memory_act_per_layer(const ccs_model *m, const ccs_plan *p);

/* Footprint of plan p (valid per plan_check) for model m, whose operator
 * list ops (regions_build) gives the parameters per device of its stages and
 * blocks. */
void memory_footprint(const ccs_model *m, const ccs_plan *p, const ccs_oplist *ops,
                      ccs_memory *out);

/* Bytes of device memory a training process of plan p holds beside its
 * tensors, which the plan cannot use: the CUDA context and the buffers of
 * one NCCL communicator per parallel group the plan has (memory.c). A plan
 * fits where its footprint plus this is within the device's memory. */
double memory_reserve(const ccs_plan *p);

#endif
