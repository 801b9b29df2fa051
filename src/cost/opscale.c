/* opscale.c - the ring volume of a collective (opscale.h). */
#include "ccsweep/cost/opscale.h"
#include "ccsweep/cost/regions.h"

double cost_coll_volume(int kind, double bytes, int group, int innet, double *steps)
{
    double n = group < 2 ? 2 : group;
    switch (kind) {
    case CCS_OP_ALLREDUCE:
        if (innet) { /* the switch reduces: each rank sends and receives the buffer once */
            *steps = 2;
            return (n - 1) / n * bytes;
        }
        *steps = 2 * (n - 1);
        return 2 * (n - 1) / n * bytes;
    case CCS_OP_ALLGATHER:
        if (innet) { /* the switch multicasts: each rank sends its shard once */
            *steps = 1;
            return bytes / n;
        }
        *steps = n - 1;
        return (n - 1) / n * bytes;
    case CCS_OP_REDUCESCATTER:
        /* in-switch reduction does not shrink it: every rank still sends each
         * other rank's shard of its buffer once (the switch sums on the way) */
        *steps = n - 1;
        return (n - 1) / n * bytes;
    case CCS_OP_ALLTOALL:
        /* pairwise exchange, n - 1 steps (Thakur et al. 2005, "Optimization of
         * collective communication operations in MPICH", section 3.6); a rank's
         * own share of the buffer stays local */
        *steps = n - 1;
        return (n - 1) / n * bytes;
    default:
        *steps = 1;
        return bytes;
    }
}
