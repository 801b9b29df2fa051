/* fields.h - the values an expression (expr.h) reads for one projected
 * scenario: its plan, model, hardware generation and, when known, its
 * outputs. 'ccsweep search --where' filters its plans with these. */
#ifndef CCSWEEP_FIELDS_H
#define CCSWEEP_FIELDS_H

#include "ccsweep/cost/timeline.h"
#include "ccsweep/sweep/expr.h"

/* Fill vals[EXPR_F_N] for plan p of model m (params: model_params(m)) on
 * hardware hw (the evolved generation gen). r NULL: the outputs are not known
 * yet and read as 0. Allocates nothing. */
void fields_fill(const ccs_model *m, double params, const ccs_hw *hw, int gen, const ccs_plan *p,
                 const ccs_result *r, double *vals);

#endif
