/* dist_int.h - what the coordinator (dist.c) and the workers (dist_worker.c)
 * share: the communicator, the message tags and flags of the protocol noted at
 * the top of dist.c, and the worker's entry. Private to src/dist. */
#ifndef CCSWEEP_DIST_INT_H
#define CCSWEEP_DIST_INT_H

#include "ccsweep/dist/dist.h"

#include <mpi.h>
#include <stdint.h>

struct dist_comm {
    MPI_Comm comm;
};

enum { TAG_UP = 7301, TAG_DOWN = 7302 };
enum {
    UP_DATA = 1,
    UP_DONE = 2,
    UP_WANT = 4,
    UP_INTR = 8,
    UP_BYE = 16,
    UP_EFILTER = 32,
    UP_AGG = 64
};
#define RECS_PER_MSG 512
#define SELF_SLICE 128  /* scenarios rank 0 computes between polls */
#define SELF_CHUNK 2048 /* largest chunk rank 0 takes for itself */
#define COMMIT_SECS 1.0 /* commit at least this often */

typedef struct up_hdr {
    int32_t flags, n;
    int64_t lo, hi;
} up_hdr;

/* A worker's sweep (dist_worker.c): chunks from rank 0 until it answers stop.
 * Returns CCS_OK, DIST_INTERRUPTED or CCS_EINPUT (the where-filter undefined;
 * rank 0 was told). */
int dist_work(const dist_comm *dc, const ccs_grid *g, const dist_opts *o, size_t rec_size,
              dist_stats *stats);

#endif
