/* opscale.h - what the two ways of costing an operator share: the time they
 * return (ccs_optime), the factors that carry a measured operator time to
 * another hardware generation or link what-if (ccs_opscale), and the ring
 * volume of a collective. Below both opcost.h (which owns the cost context and
 * the synthetic curves) and opmodel.h (measured curves), so that neither
 * includes the other. Pure. */
#ifndef CCSWEEP_OPSCALE_H
#define CCSWEEP_OPSCALE_H

/* The time of one occurrence of an operator. */
typedef struct ccs_optime {
    double t;      /* s, best estimate */
    double lo, hi; /* s, uncertainty band (== t for synthetic curves) */
    double extrap; /* work / largest measured work when extrapolated beyond the
                      profile (> 1), 0 when inside it or synthetic */
} ccs_optime;

/* Factors from the measured base hardware to a scenario's: the evolution
 * rule's factor^generation per resource, and the plan's link what-ifs. */
typedef struct ccs_opscale {
    double f_flops, f_mem, f_intra, f_inter, f_lat; /* factor^generation per resource */
    double net_bw_factor;                           /* plan's bandwidth what-if */
    int innet_reduce;                               /* plan's in-network reduction what-if */
} ccs_opscale;

/* Bytes each rank sends for a collective of buffer size `bytes` over `group`
 * ranks with a ring algorithm (2(n-1)/n for all-reduce, (n-1)/n for
 * all-gather/reduce-scatter/all-to-all, 1 for p2p), and the number of latency
 * steps. innet (in-network reduction and multicast, e.g. NVLink SHARP):
 * all-reduce (n-1)/n, all-gather 1/n (the switch replicates each shard). */
double cost_coll_volume(int kind, double bytes, int group, int innet, double *steps);

#endif
