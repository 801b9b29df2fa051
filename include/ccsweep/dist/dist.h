/* dist.h - the MPI sweep: rank 0 coordinates and writes, the other ranks
 * compute. Rank 0 hands out chunks [lo, hi) of grid indices on request
 * (guided self-scheduling: chunks shrink as the work runs out, or a fixed
 * size), receives fixed-size records in batches and is the only writer (on a
 * thread of its own, writeq.h); when no message is waiting it computes small
 * chunks itself, so one rank runs the same code serially. The communicator is a parameter
 * (dist_world() or dist_self()), so tests can run on MPI_COMM_SELF. The only module that includes
 * mpi.h, and with main the only one that may abort. */
#ifndef CCSWEEP_DIST_H
#define CCSWEEP_DIST_H

#include "ccsweep/sweep/search.h"
#include "ccsweep/store/store.h"

#include <stdio.h>

typedef struct dist_comm dist_comm; /* wraps an MPI communicator */

/* MPI_Init unless MPI is already initialised. Returns CCS_OK or CCS_ERUNTIME. */
int dist_init(int *argc, char ***argv);
/* MPI_Finalize unless already finalised. */
void dist_finalize(void);
dist_comm *dist_world(void);
dist_comm *dist_self(void);
int dist_rank(const dist_comm *c);
int dist_size(const dist_comm *c);
/* The lowest (worst) status over all ranks: every rank gets the same answer. */
int dist_agree(const dist_comm *c, int rc);
/* Broadcast rank 0's buffer: on other ranks *text becomes a new NUL-terminated
 * copy the caller frees. A negative *len on rank 0 is broadcast as a failure
 * (then the function returns CCS_EINPUT everywhere). */
int dist_bcast_text(const dist_comm *c, char **text, long *len);
/* End the whole job with exit status code (all ranks). */
void dist_abort(const dist_comm *c, int code)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

/* Seconds on a monotonic clock. */
double dist_clock(void);

/* Catch SIGINT, SIGTERM and SIGUSR1 (mpirun forwards SIGUSR1 to every rank):
 * the handler only records the signal; the sweep loops look at it. */
void dist_catch_signals(void);
/* The signal caught, or 0. */
int dist_signal(void);
/* Test hook (CCSWEEP_TEST_LOAD_DELAY_US): wait while a run loads; no-op when unset. */
void dist_test_load_delay(void);
/* Test hook: CCSWEEP_TEST_CHUNK_DELAY_US=N sleeps N microseconds (at most 1 s)
 * per chunk of a training sweep and per serving job of a serving run, so that
 * signal and concurrency tests find a sweep still running; no-op when unset. */
void dist_test_chunk_delay(void);

typedef struct dist_opts {
    int64_t chunk;   /* fixed chunk size, 0 = adaptive */
    double progress; /* seconds between progress lines on rank 0 */
    int quiet;       /* no progress lines */
    int detail;      /* ship per-region times and store them */
    FILE *log;       /* progress stream (stderr) */
    /* The ranges to sweep (from dist_partition), or NULL: the store's todo. */
    const store_range *todo;
    size_t n_todo;
    int writer, writers; /* with several writers: this group's index and their number */
} dist_opts;

typedef struct dist_stats {
    int64_t done; /* scenarios completed in this session */
    int64_t rows; /* rows written in this session */
    int64_t ok, invalid, oom;
    double seconds;    /* wall time of the sweep loop */
    double writer_cpu; /* rank 0: CPU time of its writer thread (writeq.h), s */
    int signal;        /* signal that interrupted the sweep, or 0 */
} dist_stats;

enum { DIST_INTERRUPTED = 1 };

/* Sweep the store's todo ranges of grid g over communicator c. Rank 0 passes
 * the store (prepared with store_prepare_run), the others NULL. Returns
 * CCS_OK when every range is done (rank 0 has committed all rows but not yet
 * finished the run), DIST_INTERRUPTED when a signal stopped it (rank 0: what
 * arrived is committed), or a negative status with err (store failure). */
int dist_sweep(dist_comm *c, const ccs_grid *g, ccs_store *st, const dist_opts *o, dist_stats *out,
               ccs_err *err);

/* ---- several writers ---------------------------------------------------------
 * The ranks form writer groups; each group's lowest rank is its writer and
 * runs dist_sweep over the group's communicator into its own store (a shard),
 * on the group's part of the todo ranges. Rank 0 merges the shards at the end. */

/* Split c into writer groups. color >= 0: the ranks of one color form a
 * group; color < 0: one group per shared-memory node (MPI_Comm_split_type).
 * *index gets the group's place among the groups ordered by their lowest
 * rank (the group of rank 0 is 0), *n their number. Collective. Returns
 * the group's communicator (free with dist_comm_free), or NULL when out of
 * memory (on every rank). */
dist_comm *dist_split_writers(const dist_comm *c, int color, int *index, int *n);
void dist_comm_free(dist_comm *c);
/* Broadcast n int64 values from rank 0. */
void dist_bcast_i64(const dist_comm *c, int64_t *v, int n);
/* Broadcast rank 0's ranges: on other ranks *r becomes a new array the caller
 * frees. Returns CCS_OK, or CCS_ENOMEM on every rank. */
int dist_bcast_ranges(const dist_comm *c, store_range **r, size_t *n);
/* Writer w's part of the ranges todo[0..n) among nw writers: the w-th of nw
 * equal shares of their scenarios, in index order. Contiguous parts make the
 * final merge an append (each shard's rows follow the previous part's, and
 * SQLite copies them without decoding); the ranks of a group balance their
 * part among themselves. *out is a new array. Returns CCS_OK or CCS_ENOMEM. */
int dist_partition(const store_range *todo, size_t n, int w, int nw, store_range **out,
                   size_t *nout);
/* Sum the scenario and row counts of s over c (the seconds and the signal:
 * the largest); every rank gets the result. Collective. */
void dist_sum_stats(const dist_comm *c, dist_stats *s);
/* Under a keep: rule, reduce the rows of the store's run to the rule's best:
 * the rows merged from several writers are each writer's best, so the best of
 * their union is the best of the whole run. Commits. */
int dist_keep_reduce(const ccs_grid *g, ccs_store *st, ccs_err *err);

/* 'ccsweep search' over communicator c: every rank holds the same search s
 * and projects the indices congruent to its rank (a cyclic split evens out
 * the cost of the plan shapes); rank 0 merges every rank's best k into
 * top[0..*n) and sums the statistics into *st (other ranks: *n = 0).
 * Collective. Returns CCS_OK, or CCS_ENOMEM on every rank when a rank could
 * not allocate its buffers. */
int dist_search(dist_comm *c, const ccs_search *s, int k, search_hit *top, int *n,
                search_stats *st);

#endif
