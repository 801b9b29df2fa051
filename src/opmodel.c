/* opmodel.c - measured operator models (issue: operator models from measured
 * timings). Until profiles are supported, loading reports that clearly. */
#include "ccsweep/opmodel.h"

ccs_opmodel *opmodel_load(const char *path, ccs_err *err)
{
    ccs_err_set(err, "%s: calibration profiles are not supported by this build", path);
    return NULL;
}

void opmodel_free(ccs_opmodel *om)
{
    (void)om;
}

int opmodel_eval(const ccs_opmodel *om, const ccs_cost *c, const ccs_op *op, ccs_optime *out)
{
    (void)om;
    (void)c;
    (void)op;
    (void)out;
    return -1;
}
