/* writeq.h - rank 0's writes on a thread of their own.
 *
 * The coordinator's store calls (store_put, store_chunk_open, store_chunk_done,
 * store_commit)
 * go into a bounded queue and a writer thread applies them to the store in
 * the order they were queued, so that SQLite's work runs beside the
 * projection and the message handling instead of between them. The file sees
 * exactly the calls, in exactly the order, that it would see without the
 * queue: the same transactions, the same rows, the same commits; a crash or a
 * signal loses at most what is not yet committed, as before.
 *
 * The thread calls nothing but the store (never MPI) and blocks every signal,
 * so they reach the main thread as before. After the first failed write the
 * thread applies nothing more (the store has rolled the transaction back, and
 * a later chunk must not be recorded without its rows); every later call, and
 * writeq_close, returns that error with its message. While the queue is open
 * only it may use the store. */
#ifndef CCSWEEP_WRITEQ_H
#define CCSWEEP_WRITEQ_H

#include "ccsweep/store/store.h"

typedef struct ccs_writeq ccs_writeq;

/* Start the writer thread for st. detail: records carry CCS_RG_N regions.
 * Returns NULL (and sets err) when the thread cannot be started: the caller
 * then writes directly. */
ccs_writeq *writeq_open(ccs_store *st, int detail, ccs_err *err);
/* Queue store_put(st, rec, rg) (rg: NULL, or CCS_RG_N regions when detail). */
int writeq_put(ccs_writeq *q, const ccs_record *rec, const ccs_region_time *rg, ccs_err *err);
/* Queue store_chunk_open(st, lo, hi). */
int writeq_chunk_open(ccs_writeq *q, int64_t lo, int64_t hi, ccs_err *err);
/* Queue store_chunk_done(st, lo, hi). */
int writeq_chunk_done(ccs_writeq *q, int64_t lo, int64_t hi, ccs_err *err);
/* Queue store_commit(st). */
int writeq_commit(ccs_writeq *q, ccs_err *err);
/* Wait until everything queued is applied, stop the thread, free q; *cpu (if
 * not NULL) gets the thread's CPU time in seconds. Returns CCS_OK or the first
 * write's error (message in err). NULL q: CCS_OK, *cpu 0. */
int writeq_close(ccs_writeq *q, double *cpu, ccs_err *err);

/* Calls queued and not yet applied. */
size_t writeq_pending(ccs_writeq *q);
/* Pending calls from which the writer counts as behind (of a ring of 4096). */
#define WRITEQ_BEHIND 1024

/* CPUs this process may run on (its affinity mask), 0 when unknown: with one
 * (mpirun binds each rank to a core by default) the writer thread shares the
 * projection's core and overlaps nothing. */
int writeq_cpus(void);

#endif
