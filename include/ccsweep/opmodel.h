/* opmodel.h - operator models fitted (GSL) to a calibration profile: measured
 * operator timings of one hardware, one curve per (op, dtype[, group, level]).
 * The object is immutable after opmodel_load and may be shared by threads. */
#ifndef CCSWEEP_OPMODEL_H
#define CCSWEEP_OPMODEL_H

#include "ccsweep/opcost.h"

typedef struct ccs_opmodel ccs_opmodel;

/* Parse the profile CSV at path (DESIGN section 6 format) and fit its curves.
 * Returns a new model the caller frees with opmodel_free, or NULL with err
 * naming the file, line and field. */
ccs_opmodel *opmodel_load(const char *path, ccs_err *err);

/* Free a model; NULL is a no-op. */
void opmodel_free(ccs_opmodel *om);

/* Time of one occurrence of op from the measured curves, scaled to c's
 * generation. Returns 0 and fills out, or -1 when the profile has no curve for
 * op's kind/dtype (the caller then uses the synthetic curve). */
int opmodel_eval(const ccs_opmodel *om, const ccs_cost *c, const ccs_op *op, ccs_optime *out);

#endif
