/* store.h - the SQLite results database (schema: results/README.md). One writer (rank 0). Rows are
 * added in batched transactions with prepared statements; a transaction also records the index
 * ranges (chunks) whose every row it completes, so a resumed run recomputes exactly the indices not
 * yet committed, even when a where-filter drops rows. A committed transaction is never undone: runs
 * are only added, never overwritten. The only module that includes sqlite3.h. */
#ifndef CCSWEEP_STORE_H
#define CCSWEEP_STORE_H

#include "ccsweep/sweep/grid.h"
#include "ccsweep/sweep/keep.h"
#include "ccsweep/sweep/serve_grid.h"

#include <stdio.h>

/* Schema version kept in PRAGMA user_version. store_open migrates a file of
 * version 5 to 11 in place (in one transaction); other versions are refused. */
#define CCS_STORE_SCHEMA 12
/* The oldest version store_open migrates (every one from it up). */
#define CCS_STORE_MIGRATE_FROM 5
/* Rows per transaction at most (the sweep also commits at least once a
 * second); about 10k rows per transaction is near SQLite's best insert rate
 * on the machines measured (make bench). */
#define CCS_STORE_BATCH 10000
/* The writer checkpoints the WAL into the file after a commit once the WAL
 * holds at least CCS_STORE_WAL_MIN_PAGES pages (4 MiB of 4 KiB pages) and
 * 1/CCS_STORE_WAL_SHARE of the file's pages: the WAL stays within about a
 * sixteenth of the database (plus one batch), the disk a sweep needs within
 * about 1.06x its final size (results/README.md). */
#define CCS_STORE_WAL_MIN_PAGES 1000
#define CCS_STORE_WAL_SHARE 16

/* File locking: normal (WAL, shared memory index, concurrent readers),
 * exclusive (WAL without shared memory, one process holds the file for the
 * whole run: for filesystems whose locks or mmap do not work across nodes),
 * none (no file locks at all: only when nothing else opens the file). */
enum { STORE_LOCK_NORMAL = 0, STORE_LOCK_EXCLUSIVE, STORE_LOCK_NONE };

/* Final states of a run (runs.status). */
enum { STORE_RUNNING = 0, STORE_COMPLETE, STORE_INTERRUPTED, STORE_FAILED };

/* store_prepare_run outcomes besides errors. */
enum { STORE_NEW = 0, STORE_RESUMED = 1, STORE_NOTHING = 2, STORE_DONE_BEFORE = 3 };

/* store_prepare_run modes: a new run unless this spec's sweep is already
 * complete in the file, resume, or a new run whatever the file holds. */
enum { STORE_MODE_NEW = 0, STORE_MODE_RESUME = 1, STORE_MODE_APPEND = 2 };

typedef struct ccs_store ccs_store;

/* Provenance of this session, recorded in runs and sessions. */
typedef struct store_run_info {
    const char *argv; /* command line as typed, joined with spaces */
    int ranks;        /* MPI ranks */
    int detail;       /* 1: write the regions table */
    /* A shard (a file that holds one writer group's part of a run of
     * another database): that run's id and start time, given to the new run
     * here so that rows merge back unchanged. 0 and NULL otherwise. */
    int64_t shard_of;
    const char *shard_started;
} store_run_info;

/* A half-open index range [lo, hi). */
typedef struct store_range {
    int64_t lo, hi;
} store_range;

/* Row counts of a run. */
typedef struct store_counts {
    int64_t done; /* scenarios evaluated (committed) */
    int64_t rows, ok, invalid, oom;
    int64_t filtered; /* done - rows: dropped by the where-filter */
} store_counts;

/* Open or create the database at path (creating its parent directory if
 * missing), with the schema when new; a file of schema version 5 is migrated
 * to CCS_STORE_SCHEMA first (in one transaction: on failure it is left as it
 * was). Returns NULL with err: CCS_EINPUT in *rc when path exists but is not
 * a regular file (a device, a directory: refused before SQLite opens it), the
 * file is not a ccsweep database, has another schema version, or another
 * process is writing it while it needs a migration; CCS_EIO otherwise. */
ccs_store *store_open(const char *path, int locking, int *rc, ccs_err *err);
/* Migrate the existing ccsweep database at path to CCS_STORE_SCHEMA if it has
 * an older version store_open migrates; store_open's return codes. */
int store_upgrade(const char *path, ccs_err *err);
/* Close; an open transaction is rolled back (its chunks are redone on resume). */
void store_close(ccs_store *st);

/* 1 when another live process holds the writer row of the database at path
 * (read in a read-only connection of its own, a few times), with err naming
 * it as a refused run's error does; 0 otherwise (no row, a stale one, or a
 * file that cannot be read). For a run that failed before it claimed the
 * row: a file another process writes without locks (--db-locking none) can
 * read torn ("malformed", a failing quick_check) while it changes, and the
 * writer is then the reason to give. */
int store_writer_holds(const char *path, ccs_err *err);

/* Start a new run of grid g (borrowed; must outlive the store), or with
 * mode STORE_MODE_RESUME continue the latest unfinished run of the same spec
 * (same sha256). STORE_MODE_NEW starts one only when no complete run of the
 * same spec read the same inputs (else STORE_DONE_BEFORE, store_run_id that
 * run, nothing written); STORE_MODE_APPEND always starts one.
 * First checks the file (PRAGMA quick_check) and claims it: one process
 * writes runs into a file at a time (table writer: host, pid, start time);
 * the claim of a process that no longer runs on this host is taken over.
 * A new run records the content hash of every catalog entry and calibration
 * profile it uses (table run_inputs); a resumed run must match them.
 * Returns STORE_NEW, STORE_RESUMED, STORE_NOTHING (resume found that this
 * spec's latest run is complete), STORE_DONE_BEFORE or a negative status
 * with err (CCS_EINPUT: the file is damaged, another process is writing to
 * it, the latest unfinished run is of a different spec, or its inputs
 * changed). */
int store_prepare_run(ccs_store *st, const ccs_grid *g, const store_run_info *info, int mode,
                      ccs_err *err);
int64_t store_run_id(const ccs_store *st);
/* The run's start time (runs.started, UTC ISO 8601): with the id and the spec's
 * sha256 it tells a shard of this run from a stale file of the same name. */
const char *store_run_started(const ccs_store *st);
/* Index ranges still to compute (the whole grid for a new run). Borrowed. */
const store_range *store_todo(const ccs_store *st, size_t *n);
/* Counts committed so far in this run (from earlier sessions when resumed). */
void store_counts_get(const ccs_store *st, store_counts *out);

/* Counts committed so far, this session's batches included: what the file
 * holds even when the run cannot be finished (disk full, lock timeout). */
void store_counts_committed(const ccs_store *st, store_counts *out);
/* 1 when a write failed because the disk (or quota) is full. */
int store_disk_full(const ccs_store *st);

/* Add one result row (and its regions when the run has detail and rg is not
 * NULL) to the current transaction, committing every CCS_STORE_BATCH rows.
 * Rows reach the table 16 per INSERT statement: store_commit and store_drop
 * insert the ones still pending first, so that reads after them see every row.
 * When a write fails (store_put, store_chunk_done, store_commit) the open
 * transaction is rolled back whole: committed batches stay, and the counts
 * stay equal to the rows in the file. */
int store_put(ccs_store *st, const ccs_record *rec, const ccs_region_time *rg, ccs_err *err);
/* Remove the row of idx (status: its status, for the counts) and its
 * regions in the current transaction: a row that a keep: rule no longer keeps. */
int store_drop(ccs_store *st, int64_t idx, int status, ccs_err *err);
/* Call cb(idx, ctx) for every row of the run committed so far, in index
 * order; stops at the first non-zero return of cb and returns it. */
int store_each_row(ccs_store *st, int (*cb)(int64_t idx, void *ctx), void *ctx, ccs_err *err);
/* keep.aggregate: store the aggregates of the group of key (spec_keep.n_per
 * values, as keep.h gives them) in the current transaction, replacing what
 * the file held for it: scenarios, and stats[0 .. n_agg-1] of the rule's
 * fields. Written before the store_chunk_done of the chunks they count,
 * they are committed with them: the file's aggregates count exactly its
 * completed chunks. */
int store_keep_group(ccs_store *st, const double *key, int64_t scenarios, const keep_stat *stats,
                     ccs_err *err);
/* Call cb for every group of the run's committed aggregates (a resumed
 * run's); stops at the first non-zero return of cb and returns it. CCS_EIO
 * when the rows do not match the spec's keep.aggregate. */
int store_each_keep_group(ccs_store *st,
                          int (*cb)(const double *key, int64_t scenarios, const keep_stat *stats,
                                    void *ctx),
                          void *ctx, ccs_err *err);
/* Announce chunk [lo, hi), whose rows will be put in index order (one rank
 * computes it front to back): until its store_chunk_done, every commit also
 * records the part of it up to its last row put as a chunks range (in n_done),
 * so that no committed row lies outside chunks, wherever a commit, a crash or
 * a full disk falls. A chunk not announced (keep: rules, whose rows do not
 * come in index order) is recorded by store_chunk_done alone, and its rows
 * committed before it stay outside chunks until the run finishes or resumes
 * (which removes them). CCS_ENOMEM with err. */
int store_chunk_open(ccs_store *st, int64_t lo, int64_t hi, ccs_err *err);
/* Mark [lo, hi) complete (what the commits since its store_chunk_open have not
 * recorded of it): recorded in the transaction that holds its last rows. */
int store_chunk_done(ccs_store *st, int64_t lo, int64_t hi, ccs_err *err);
/* Commit the current transaction, if any, with the parts of the open chunks
 * and the run's counts. */
int store_commit(ccs_store *st, ccs_err *err);
/* Commit, then record the final status, end time and counts of the run. */
int store_finish(ccs_store *st, int status, store_counts *out, ccs_err *err);

/* ---- shards: one file per writer group, merged at the end ---------------------- */

/* The shard file of writer w of run run_id of database db in directory dir
 * (NULL: db's directory): DIR/BASENAME.TAG.runR.wW.shard, TAG 12 hex digits of
 * the SHA-256 of db's absolute path, so that databases of one base name in
 * different directories never share a shard name. Returns 0, or -1 when it
 * does not fit in n bytes. */
int store_shard_path(char *out, size_t n, const char *dir, const char *db, int64_t run_id, int w);

/* Merge the shard at path into the store's run, in one transaction: its
 * result rows, plans, regions and chunk records are copied by column name
 * (INSERT OR IGNORE: merging the same shard twice adds nothing), and the
 * run's counts are recounted from the file. A shard of another run (other
 * id, spec or start time), or of another schema, is not merged: returns
 * STORE_STALE_SHARD with err saying why; a file that is not a ccsweep database
 * or cannot be read returns STORE_UNREADABLE_SHARD. The file is left in place;
 * the caller removes a stale one (store_remove_file) after the commit, never
 * an unreadable one. */
enum { STORE_STALE_SHARD = 3, STORE_UNREADABLE_SHARD = 4 };
int store_merge_shard(ccs_store *st, const char *path, ccs_err *err);
/* Merge, then remove, every shard of this run found in dir (NULL: the
 * database's directory) named after db (see store_shard_path), announcing
 * each on log (NULL: silent); a stale one is removed with a warning. Then
 * the todo ranges and counts are read again. *n gets how many were merged. */
int store_absorb_shards(ccs_store *st, const char *dir, const char *db, FILE *log, int *n,
                        ccs_err *err);
/* A shard's last step: commit, and switch the file from WAL to a rollback
 * journal, so that it is one self-contained file that rank 0 can attach
 * without shared memory (network filesystems). */
int store_seal(ccs_store *st, ccs_err *err);
/* 1 when this process may write the file at path and create files beside
 * it (SQLite's journal, -wal and -shm): by its permissions and its
 * filesystem's (a read-only mount), else 0. */
int store_writable(const char *path);
/* Remove a database file with its -wal and -shm companions. */
void store_remove_file(const char *path);

/* ---- serving runs (store_serve.c) ---------------------------------------------- */

/* A serving sweep's provenance (runs row, workload 'serve'). Borrowed. */
typedef struct store_serve_info {
    const char *name, *path, *text; /* the spec's name, path and bytes */
    size_t len;                     /* of text */
    const char *argv, *evolution;   /* NULL: none */
    int ranks;
    int64_t total;       /* scenarios in the grid */
    const serve_grid *g; /* its models and hardware: the run's inputs */
    int mode;            /* STORE_MODE_NEW, _RESUME or _APPEND */
} store_serve_info;

/* Record a serving run in st (a store_open'ed file with no training run
 * prepared), with the content hash of every model and hardware entry it
 * reads (table run_inputs) and a sessions row, and prepare its row INSERT.
 * As store_prepare_run, first checks the file (PRAGMA quick_check) and claims
 * it (the writer row: one process writes runs into a file at a time, training
 * or serving); store_serve_finish (or store_close) drops the row. As for a
 * training run, mode STORE_MODE_NEW starts a run only when no complete run of
 * the same spec (sha256) read the same inputs: else it returns
 * STORE_DONE_BEFORE, store_serve_run_id that run, and writes nothing.
 * STORE_MODE_RESUME continues the latest unfinished run of the same spec (its
 * inputs must match), whose committed rows are exactly those of its first
 * n_done scenarios (store_counts_get: where to go on); it returns
 * STORE_NOTHING when this spec's latest run is complete, and starts a new run
 * when there is none. Returns STORE_NEW, STORE_RESUMED, STORE_NOTHING,
 * STORE_DONE_BEFORE, or a negative status with err (CCS_EINPUT: the file is
 * damaged, another process is writing to it, the latest unfinished run is of
 * another spec or its inputs changed; nothing was written). */
int store_serve_begin(ccs_store *st, const store_serve_info *in, ccs_err *err);
int64_t store_serve_run_id(const ccs_store *st);
/* Add one serve_results row (model and hw: the names, borrowed) to the open
 * batch. Invalid rows keep NULL outputs. A failed write rolls the batch back
 * (CCS_EIO with err): the file keeps the committed batches and their counts. */
int store_serve_put(ccs_store *st, const serve_record *rec, const char *model, const char *hw,
                    ccs_err *err);
/* The first done scenarios are evaluated and every row of theirs is put:
 * once the open batch holds CCS_STORE_BATCH rows, or a second has passed
 * since the last commit, it commits here, with the run's counts (n_done =
 * done, n_rows, n_ok, n_invalid, n_oom of its rows added, n_filtered = n_done
 * - n_rows) in its transaction. Batches commit only at these marks, so the
 * runs row always describes the committed rows. */
int store_serve_mark(ccs_store *st, int64_t done, ccs_err *err);
/* STORE_COMPLETE (done: all of the grid's scenarios) or STORE_INTERRUPTED
 * (a signal, at a mark: done scenarios have every row put): commit the open
 * batch with the counts and record the status; --resume goes on from done.
 * STORE_FAILED: roll the open batch back and record the status: the counts
 * stay the committed batches'. The writer row is dropped. */
int store_serve_finish(ccs_store *st, int status, int64_t done, ccs_err *err);

#endif
