/* expr.h - the `where` filter language of sweep specs: comparisons, and/or/not,
 * arithmetic and parentheses over scenario fields (plan, model, hardware) and
 * projection outputs (fits, t_iter, comm_fraction, ...). An expression is
 * compiled once into a small stack bytecode; evaluation allocates nothing and
 * is safe to share between threads. */
#ifndef CCSWEEP_EXPR_H
#define CCSWEEP_EXPR_H

#include "ccsweep/util/common.h"

/* Fields an expression may name. Values are passed to expr_eval as doubles
 * indexed by these ids: booleans as 0/1, recompute as CCS_RECOMPUTE_*, dtype as
 * ccs_dtype, cp_comm as CCS_CP_*, dp_overlap as CCS_DPOV_* (a mode, compared
 * with its names, not a boolean), sizes in SI units (bytes, seconds, FLOP). Fields from
 * EXPR_F_RESULT on are known only after projection. */
typedef enum expr_field {
    /* plan */
    EXPR_F_DEVICES = 0,
    EXPR_F_TP,
    EXPR_F_PP,
    EXPR_F_DP,
    EXPR_F_VPP,
    EXPR_F_MBS,
    EXPR_F_GBS,
    EXPR_F_SEQ,
    EXPR_F_DTYPE,
    EXPR_F_SP,
    EXPR_F_ZERO,
    EXPR_F_RECOMPUTE,
    EXPR_F_FLASH_ATTN,
    EXPR_F_TP_OVERLAP,
    EXPR_F_DP_OVERLAP,
    EXPR_F_INNET_REDUCE,
    EXPR_F_COMM_COMPRESS,
    EXPR_F_NET_BW_FACTOR,
    EXPR_F_CP,
    EXPR_F_CP_COMM,
    EXPR_F_EP,
    EXPR_F_CAPACITY_FACTOR,
    EXPR_F_PP_FIRST_LAYERS,
    EXPR_F_PP_LAST_LAYERS,
    /* model */
    EXPR_F_LAYERS,
    EXPR_F_HIDDEN,
    EXPR_F_HEADS,
    EXPR_F_KV_HEADS,
    EXPR_F_FFN,
    EXPR_F_VOCAB,
    EXPR_F_PARAMS,
    EXPR_F_EXPERTS,
    EXPR_F_TOP_K,
    /* hardware */
    EXPR_F_GEN,
    EXPR_F_MEM_CAP,
    EXPR_F_DEVICES_PER_NODE,
    /* projection outputs */
    EXPR_F_RESULT,
    EXPR_F_FITS = EXPR_F_RESULT,
    EXPR_F_OK,
    EXPR_F_OOM,
    EXPR_F_INVALID,
    EXPR_F_REASON,
    EXPR_F_MICRO_BATCHES,
    EXPR_F_T_ITER,
    EXPR_F_T_COMPUTE,
    EXPR_F_T_COMM,
    EXPR_F_T_COMM_EXPOSED,
    EXPR_F_T_TP_COMM,
    EXPR_F_T_TP_COMM_EXPOSED,
    EXPR_F_T_DP_COMM,
    EXPR_F_T_DP_COMM_EXPOSED,
    EXPR_F_T_PP_COMM,
    EXPR_F_T_BUBBLE,
    EXPR_F_T_OPTIMIZER,
    EXPR_F_COMM_FRACTION,
    EXPR_F_HIDDEN_FRACTION,
    EXPR_F_MEM_TOTAL,
    EXPR_F_MEM_WEIGHTS,
    EXPR_F_MEM_GRADS,
    EXPR_F_MEM_OPTIMIZER,
    EXPR_F_MEM_ACTIVATIONS,
    EXPR_F_MODEL_FLOPS,
    EXPR_F_HW_FLOPS,
    EXPR_F_MFU,
    EXPR_F_TOKENS_PER_S,
    EXPR_F_TP_BYTES,
    EXPR_F_DP_BYTES,
    EXPR_F_PP_BYTES,
    EXPR_F_CCR,
    EXPR_F_HFU,
    EXPR_F_T_CP_COMM,
    EXPR_F_T_CP_COMM_EXPOSED,
    EXPR_F_CP_BYTES,
    EXPR_F_T_EP_COMM,
    EXPR_F_EP_BYTES,
    EXPR_F_N
} expr_field;

typedef struct ccs_expr ccs_expr;

/* Compile text. On error returns NULL, sets err to "column C: message" and
 * *err_col (may be NULL) to the 1-based column in text where the problem is,
 * in UTF-8 characters (a message quotes a character whole). Numbers are
 * decimal and finite.
 * Types are checked here: and/or/not need booleans, arithmetic and ordering
 * need numbers (or enum values of the same kind; a mode name several enums
 * have, 'none', takes the kind of the side it is compared with), the whole
 * expression must be boolean. A divisor that is a constant 0 is an error, and so is nesting
 * (parentheses, 'not', signs) deeper than 64 levels or code longer than 256
 * operations. */
ccs_expr *expr_compile(const char *text, ccs_err *err, int *err_col);
void expr_free(ccs_expr *e);

/* 1 when the expression names a projection output (EXPR_F_RESULT and up), so
 * it can only be evaluated after projection. */
int expr_uses_results(const ccs_expr *e);

/* expr_eval's result when the filter is undefined for these values. */
#define EXPR_UNDEFINED (-1)

/* Evaluate with vals[EXPR_F_N]; returns 1 (keep), 0 (drop), or
 * EXPR_UNDEFINED when the outcome depends on a division or modulo by zero
 * (a side of 'and'/'or' that does not decide the result may be undefined).
 * No allocation. */
int expr_eval(const ccs_expr *e, const double *vals);

/* Field id for a name, or -1; and the name of an id. */
int expr_field_lookup(const char *name);
const char *expr_field_name(int field);

#endif
