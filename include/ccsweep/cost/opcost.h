/* opcost.h - the time of one operator on one hardware generation: from a
 * measured operator model when one is attached, otherwise from a synthetic
 * operator curve built from the catalog (roofline with wave quantization,
 * achieved efficiencies and fixed latencies). Pure; no allocation (but for
 * the optional cache, ccs_costmemo). */
#ifndef CCSWEEP_OPCOST_H
#define CCSWEEP_OPCOST_H

#include "ccsweep/cost/opscale.h"
#include "ccsweep/cost/regions.h"

struct ccs_opmodel; /* opmodel.h: curves fitted to a calibration profile */

typedef struct ccs_cost {
    const ccs_hw *hw;             /* hardware at the scenario's generation; borrowed */
    const struct ccs_opmodel *om; /* measured curves for the base hardware, or NULL */
    int generation;               /* generations beyond the measured base (scales om) */
    ccs_opscale scale;            /* factors for om's curves, the plan's link what-ifs */
    double sync_derate;           /* matrix throughput of the slowest of the plan's devices,
                                     relative to the measured mean (cost_straggler_derate) */
    struct ccs_costmemo *memo;    /* cost_init_memo's cache, or NULL */
    const ccs_stack *stack;       /* software stack (borrowed), NULL: stack_default's */
} ccs_cost;

/* A cache of the parts of operator costs that depend on the hardware and an
 * operator's shape only (GEMM shape efficiency), and of cost_init's
 * per-generation factors and straggler derate, and of collective times (which
 * depend on the hardware, the op and the link what-ifs only), for a caller that costs many
 * scenarios over the same hardware (grid_eval): the same values come back
 * bit for bit, computed once. Entries are keyed by the hw and evolution
 * pointers, so a memo must not outlive them (the grid owns both), and it is
 * not shared between threads. */
typedef struct ccs_costmemo ccs_costmemo;
ccs_costmemo *cost_memo_new(void);
void cost_memo_free(ccs_costmemo *m);
/* A caller's value computed from the synthetic costs of ops[0..n) under c
 * (e.g. their sums), kept by cost_memo_keep: a pointer to size bytes, or NULL
 * when none is kept for exactly these ops (compared whole) and this context. */
const void *cost_memo_find(ccs_costmemo *m, const ccs_cost *c, const ccs_op *ops, int n,
                           size_t size);
/* Keep val (size bytes, at most CCS_MEMO_VAL_MAX) for ops[0..n) under c. */
void cost_memo_keep(ccs_costmemo *m, const ccs_cost *c, const ccs_op *ops, int n, const void *val,
                    size_t size);
#define CCS_MEMO_VAL_MAX 1024

/* Prepare a cost context. hw (borrowed, must outlive c) is the evolved
 * hardware; ev/gen give the factors applied to om's curves (ev may be NULL when
 * om is NULL or gen == 0); p supplies the plan's what-if switches. */
void cost_init(ccs_cost *c, const ccs_hw *hw, const struct ccs_opmodel *om, const ccs_evolution *ev,
               int gen, const ccs_plan *p);
/* cost_init through memo m (not NULL): the same context, m attached. */
void cost_init_memo(ccs_cost *c, ccs_costmemo *m, const ccs_hw *hw, const struct ccs_opmodel *om,
                    const ccs_evolution *ev, int gen, const ccs_plan *p);

/* Cost under software stack st (borrowed, must outlive c; NULL: the
 * default): its attention kernel, per-kernel host time, overheads and
 * contention (timeline_project). cost_init leaves the default. */
void cost_set_stack(ccs_cost *c, const ccs_stack *st);

/* Time of one occurrence of op (multiply by op->count yourself). */
void cost_op(const ccs_cost *c, const ccs_op *op, ccs_optime *out);
/* cost_op of each of ops[0..n) into out[0..n). */
void cost_ops(const ccs_cost *c, const ccs_op *ops, int n, ccs_optime *out);

/* Synthetic curve alone (used by cost_op when no measured model applies, and to
 * build synthetic calibration profiles). */
double cost_synthetic(const ccs_cost *c, const ccs_op *op);

/* Efficiency of a depth-k GEMM relative to the depth hw->gemm_ref_k at which
 * the catalog's gemm_efficiency was measured: the per-tile fixed cost (pipeline
 * fill, epilogue) amortised over the k loop. Close to 1 for large k, below it
 * for shallow GEMMs such as attention scores (k = head dimension). */
double cost_gemm_k_efficiency(const ccs_hw *hw, int dtype, double k);

/* Efficiency of an m x n x k GEMM (batch problems) relative to the catalog's
 * gemm_efficiency: the best of a few tile sizes, each with its wave
 * quantization and its per-tile fixed cost over the k loop. */
double cost_gemm_shape_efficiency(const ccs_hw *hw, int dtype, double m, double n, double k,
                                  double batch);

/* Fraction of a GEMM's launched tile slots doing useful work (tile and wave
 * quantization, NVIDIA "Matrix Multiplication Background" guide), in (0, 1]. */
double cost_wave_efficiency(const ccs_hw *hw, double m, double n, double batch);

/* Throughput of the slowest of n devices relative to their mean, for a
 * per-device relative standard deviation sigma (hw->variability). 1 for n < 2. */
double cost_straggler_derate(double sigma, int32_t n);

#endif
