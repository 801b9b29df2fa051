/* store_int.h - what the files of the store share and nothing else includes
 * (after SQLite's btreeInt.h): the ccs_store struct, the writer's states, the
 * row id layout and the internal helpers, prefixed sti_. The API stays in
 * include/ccsweep/store/store.h.
 *
 * The files, in dependency order:
 *   store.c          open, close and the helpers every file uses (sti_exec ...)
 *   store_schema.c   tables, views and lookup rows of a new file
 *   store_migrate.c  versions 5 to 11 migrated to CCS_STORE_SCHEMA in place
 *   store_lock.c     the writer row (one writer per file), BEGIN IMMEDIATE polling
 *   store_run.c      a run registered or resumed (store_prepare_run), its todo list
 *   store_write.c    rows in batched transactions, chunks, commit and finish
 *   store_keep.c     keep.aggregate groups: stored, read back, merged
 *   store_merge.c    shards of writer groups merged into the file
 */
#ifndef CCSWEEP_STORE_INT_H
#define CCSWEEP_STORE_INT_H

#include "ccsweep/store/store.h"

#include <assert.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdint.h>

/* 'ccsw': marks the file as a ccsweep database. */
#define CCS_APP_ID 0x63637377

/* ---- row ids --------------------------------------------------------------------
 * Rows, cells and plans of all runs share one rowid space: rid = run_id <<
 * RID_BITS | idx, so a run's rows are one rowid range and need no second index.
 * RID_BITS is the one definition; the SQL text (table comments, the views
 * results and regions) takes it, and the mask below, as the decimal strings
 * RID_BITS_SQL and RID_MASK_SQL. The mask is written out because SQL needs
 * its digits; the assertion ties it to RID_BITS. */
#define RID_BITS 40
#define RID_MASK 1099511627775
_Static_assert(RID_MASK == (INT64_C(1) << RID_BITS) - 1, "RID_MASK must be 2^RID_BITS - 1");
#define RID_MAX_RUN ((INT64_C(1) << (63 - RID_BITS)) - 1)
#define STI_STR_(x) #x
#define STI_STR(x) STI_STR_(x)
#define RID_BITS_SQL STI_STR(RID_BITS)
#define RID_MASK_SQL STI_STR(RID_MASK)

static inline int64_t rid_of(int64_t run_id, int64_t idx)
{
    return (int64_t)((uint64_t)run_id << RID_BITS) | idx;
}

/* result_rows columns: rid, key, sr, name, micro_batches and the stored
 * outputs (timeline.h). */
#define N_RESULT_COLS (5 + CCS_N_OUTPUTS - CCS_N_DERIVED)
/* Rows per INSERT statement: one statement's fixed cost (its start, the
 * cursor it opens, the reset) is shared by 16 rows; the statement holds
 * 16 x 40 = 640 parameters, within SQLite's limit of 999 (its oldest default). */
#define ROWS_PER_INSERT 16
/* (clang-format would read the product as a pointer declaration) */
/* clang-format off */
_Static_assert(ROWS_PER_INSERT * N_RESULT_COLS <= 999,
               "an INSERT of ROWS_PER_INSERT rows would exceed 999 parameters");
/* clang-format on */
/* region_rows: four columns per region (store_schema.c, v8). */
#define REGION_FIELDS 4 /* time, count, flops, bytes */
_Static_assert(CCS_RG_N <= 62, "region_rows.present holds a bit per region in an int64");

/* ---- the writer's states ----------------------------------------------------------
 * (after SQLite's pager.c). A ccs_store moves through these states; the flags
 * of the struct encode them (no field holds the state itself) and
 * assert_store_state() checks each one's invariants at the entry of every
 * function that moves between them.
 *
 *   OPEN ----------------> MIGRATING ------> OPEN          sti_migrate (in store_open)
 *   OPEN --(CLAIMING)----> WRITER                          store_prepare_run
 *   OPEN --(CLAIMING)----> DONE                            store_prepare_run: STORE_NOTHING,
 * STORE_DONE_BEFORE WRITER <-------------> WRITING                         sti_begin /
 * store_commit, write_failed WRITER, WRITING -----> DONE                            store_finish
 *   any -----------------> closed                          store_close
 *
 * OPEN: store_open returned; the file has the current schema. No run yet:
 *   g == NULL, !locked, !in_tx, !migrating. created is 1 when this store_open
 *   made the schema (store_prepare_run then skips the quick_check); a created
 *   file is never migrated.
 * MIGRATING: inside sti_migrate (store_open, a file of an older version): a
 *   BEGIN IMMEDIATE transaction is open (the claim of the writer row, then
 *   the migration, which drops the row) and migrating is 1. g == NULL,
 *   !locked, !in_tx, !created. Back to OPEN when the last commits or rolls
 *   back.
 * CLAIMING: inside store_prepare_run, from sti_begin_claim to its COMMIT: g is
 *   set, a write transaction holds the file while sti_claim_writer writes the
 *   writer row and the run is registered or found; locked is still 0 (the row
 *   is not this process's until the commit). No flag marks it: it never
 *   outlives the call. A failure rolls the transaction back; g stays set, so
 *   the store reads as DONE and is only closed.
 * WRITER: store_prepare_run returned STORE_NEW or STORE_RESUMED. locked == 1
 *   (the writer row names this process), g set, !in_tx; nothing pending:
 *   n_pend == 0, tx_rows == tx_done == 0, tx all zero. Shards are merged in
 *   this state (store_absorb_shards, store_merge_shard: transactions of their
 *   own, begun and ended inside the call).
 * WRITING: sti_begin opened a batch transaction (BEGIN IMMEDIATE): locked,
 *   in_tx, SQLite is not in autocommit; the writer statements are prepared;
 *   0 <= n_pend < ROWS_PER_INSERT rows wait in pend for one multi-row INSERT;
 *   tx_rows <= CCS_STORE_BATCH (store_put commits when it gets there).
 *   store_commit returns to WRITER with tx added to committed; write_failed
 *   (a failed write) rolls back and returns to WRITER with tx dropped.
 * DONE: store_finish recorded the run's end and dropped the writer row, or
 *   store_prepare_run found nothing to resume: g set, !locked, !in_tx.
 *
 * full is not a state of its own: write_failed sets it when SQLite or the
 * system reports a full disk (or quota), and it stays set, in WRITER and DONE
 * (the caller reports the disk and stops writing). The file holds exactly the
 * committed batches, which base + committed count.
 *
 * Open chunks (store_chunk_open .. store_chunk_done) keep every committed row
 * inside a chunks range, whenever the commit falls: each open chunk's rows
 * arrive in index order, and a commit first records the part of every open
 * chunk up to its last row put ([cov, seen)) as a chunks row of its own.
 * WRITER, WRITING: lo <= cov <= seen <= hi for each; WRITER: cov == seen (the
 * last commit recorded them). write_failed forgets them (the parts already
 * committed stay recorded; the run stops writing); OPEN and DONE have none. */
/* A chunk announced by store_chunk_open and not yet done. */
typedef struct sti_chunk {
    int64_t lo, hi; /* the chunk, as store_chunk_done will name it */
    int64_t cov;    /* [lo, cov) is in chunks (committed, or in the open transaction) */
    int64_t seen;   /* its rows put so far lie below seen */
} sti_chunk;

struct ccs_store {
    sqlite3 *db;
    char path[PATH_MAX];
    int page_size;     /* bytes, PRAGMA page_size (the WAL checkpoint rule, wal_hook) */
    const ccs_grid *g; /* set by store_prepare_run (borrowed) */
    int64_t run_id;
    int64_t session;
    char started[32]; /* runs.started of the run */
    int detail;
    int in_tx;              /* a batch transaction is open (sti_begin .. store_commit) */
    int locked;             /* this process holds the writer row */
    int full;               /* a write failed because the disk (or quota) is full */
    int created;            /* store_open created the schema: nothing to check */
    int migrating;          /* store_open is migrating the file (MIGRATING) */
    int64_t tx_rows;        /* rows in the open transaction */
    int64_t tx_done;        /* scenarios of chunks completed in the open transaction */
    store_counts tx;        /* rows by status in the open transaction */
    store_counts committed; /* committed by this session */
    sqlite3_stmt *ins, *ins_rg, *ins_chunk, *upd_run, *ins_plan, *del_row, *del_rg;
    sqlite3_stmt *ins_many;  /* ROWS_PER_INSERT rows in one statement */
    sqlite3_stmt *put_group; /* keep.aggregate: one field of a group */
    ccs_record *pend;        /* ROWS_PER_INSERT rows put but not yet inserted */
    int n_pend;
    int64_t plan_n;      /* idx = cell * plan_n + plan_i */
    unsigned char *seen; /* bit per (z, plan_i): its plans row exists */
    size_t n_seen;       /* bytes of seen */
    int64_t *model_id;   /* per spec model */
    int64_t *hw_id;      /* per (spec hardware, generation index) */
    store_range *todo;
    size_t n_todo, cap_todo;
    store_counts base; /* committed before this session */
    sti_chunk *open;   /* open chunks (the state note above) */
    size_t n_open, cap_open;
    size_t open_hit; /* the open chunk of the last row put (rows come in runs) */
    /* a serving run (store_serve.c): its id once begun, its INSERT, the rows
     * of its open batch */
    int64_t serve_run;
    sqlite3_stmt *serve_ins;
    int64_t serve_tx;
    store_counts serve_batch; /* rows of the open batch by status */
    double serve_at;          /* s, monotonic: the last commit (or the run's start) */
};

/* The checks of the state note; returns 1 so that it is called as
 * assert(assert_store_state(st)) and vanishes with NDEBUG. */
static inline int assert_store_state(const ccs_store *st)
{
    (void)st; /* with NDEBUG */
    assert(st && st->db);
    assert(!(st->created && st->migrating)); /* a new file needs no migration */
    if (st->migrating) {                     /* MIGRATING */
        assert(!st->g && !st->locked && !st->in_tx);
        assert(!sqlite3_get_autocommit(st->db));
    }
    if (!st->g || !st->locked) /* OPEN, DONE */
        assert(!st->in_tx && st->n_open == 0);
    else
        assert(st->plan_n >= 1);
    if (st->in_tx) { /* WRITING */
        assert(st->locked);
        assert(!sqlite3_get_autocommit(st->db));
        assert(st->pend && st->ins && st->ins_many && st->ins_chunk && st->ins_plan &&
               st->upd_run && st->seen);
        assert(st->n_pend >= 0 && st->n_pend < ROWS_PER_INSERT);
        assert(st->tx_rows >= 0 && st->tx_rows <= CCS_STORE_BATCH);
    } else { /* OPEN, WRITER, DONE: nothing pending */
        assert(st->n_pend == 0 && st->tx_rows == 0 && st->tx_done == 0);
        assert(st->tx.rows == 0 && st->tx.ok == 0 && st->tx.invalid == 0 && st->tx.oom == 0);
    }
    for (size_t i = 0; i < st->n_open; i++) {
        const sti_chunk *c = &st->open[i];
        (void)c; /* with NDEBUG */
        assert(c->lo <= c->cov && c->cov <= c->seen && c->seen <= c->hi);
        assert(st->in_tx || c->cov == c->seen);
    }
    assert(st->n_open <= st->cap_open);
    assert(st->n_todo <= st->cap_todo);
    return 1;
}

/* ---- store.c: helpers of every file ------------------------------------------- */

/* Set err to "PATH: what: sqlite3_errmsg"; returns CCS_EIO. */
int sti_fail_db(ccs_store *st, ccs_err *err, const char *what);
/* sqlite3_exec of sql; CCS_EIO with err (may be NULL) naming the file. */
int sti_exec(ccs_store *st, const char *sql, ccs_err *err);
/* The first column of sql's first row, or def. */
int64_t sti_query_int(ccs_store *st, const char *sql, int64_t def);
/* The time now, UTC, ISO 8601 (YYYY-MM-DDTHH:MM:SSZ). */
void sti_now_iso(char *buf, size_t n);
/* Step s once and reset it; CCS_EIO via sti_fail_db unless it gave DONE or ROW. */
int sti_step_done(ccs_store *st, sqlite3_stmt *s, ccs_err *err, const char *what);

/* ---- store_schema.c ----------------------------------------------------------- */

/* The tables and views of CCS_STORE_SCHEMA in an empty file (inside the
 * caller's transaction). */
int sti_create_schema(ccs_store *st, ccs_err *err);
/* The lookup rows (statuses, reasons, ...) from the C tables. */
int sti_fill_lookups(ccs_store *st, ccs_err *err);
/* The steps of one version each, for sti_create_schema and sti_migrate. */
int sti_v6_columns(ccs_store *st, ccs_err *err);
int sti_v7_tables(ccs_store *st, ccs_err *err);
int sti_v8_regions(ccs_store *st, ccs_err *err);
int sti_v10_columns(ccs_store *st, ccs_err *err);
int sti_create_views(ccs_store *st, ccs_err *err);
/* Version 11 (store_serve.c): runs.workload, the serve_results table, its
 * dtype names and views. */
int sti_serve_tables(ccs_store *st, ccs_err *err);
/* op_sources, if the file lacks it (files made before it existed). */
int sti_create_op_sources(ccs_store *st, ccs_err *err);

/* ---- store_migrate.c ---------------------------------------------------------- */

/* OPEN -> MIGRATING -> OPEN: version from to CCS_STORE_SCHEMA in one transaction. */
int sti_migrate(ccs_store *st, int64_t from, ccs_err *err);

/* ---- store_lock.c ------------------------------------------------------------- */

/* BEGIN IMMEDIATE in short waits; between(st, err) may end the wait (see there). */
int sti_begin_polling(ccs_store *st, const char *what, int (*between)(ccs_store *, ccs_err *),
                      ccs_err *err);
/* CCS_EINPUT with err when a live process holds the writer row. */
int sti_check_writer(ccs_store *st, ccs_err *err);
/* BEGIN IMMEDIATE for the claim, naming a writer that appears meanwhile. */
int sti_begin_claim(ccs_store *st, ccs_err *err);
/* Write this process's writer row in the open transaction. */
int sti_claim_writer(ccs_store *st, ccs_err *err);
/* Drop this process's writer row when it holds it (locked -> 0). */
int sti_release_writer(ccs_store *st);
/* The claim's transaction has committed: the writer row is this process's
 * (locked -> 1; store_close drops it). */
void sti_writer_claimed(ccs_store *st);

/* ---- store_run.c -------------------------------------------------------------- */

/* Content hash of one thing a run reads besides its spec (table run_inputs):
 * a catalog entry (as parsed, so inline and catalog entries alike) or a
 * calibration profile. The spec's own sha256 covers inline text; these cover
 * the files it names. kind is a static string ("model", "hardware", ...). */
typedef struct sti_input {
    const char *kind;
    char name[CCS_NAME_MAX + 16];
    char sha[65];
} sti_input;
/* Record v[0..n) as the inputs of run run_id (in the caller's transaction). */
int sti_record_inputs(ccs_store *st, int64_t run_id, const sti_input *v, size_t n, ccs_err *err);
/* STORE_DONE_BEFORE with *run_id when a complete run of spec sha read exactly
 * the inputs in[0..n_in), else STORE_NEW; a negative status with err. */
int sti_find_complete(ccs_store *st, const char *sha, const sti_input *in, size_t n_in,
                      int64_t *run_id, ccs_err *err);
/* CCS_EINPUT with err unless PRAGMA quick_check finds the file intact. */
int sti_check_integrity(ccs_store *st, ccs_err *err);
/* --resume: the latest unfinished run of spec sha (STORE_RESUMED, *run_id),
 * else this spec's latest complete one (STORE_NOTHING, *run_id), else
 * STORE_NEW; CCS_EINPUT with err when the latest unfinished run is of another
 * spec (resuming this one would leave that one behind). */
int sti_find_resume(ccs_store *st, const char *sha, int64_t *run_id, ccs_err *err);
/* CCS_EINPUT with err naming the first difference unless run run_id read
 * exactly the inputs v[0..n) (a resumed run must read what it read before). */
int sti_check_inputs(ccs_store *st, int64_t run_id, const sti_input *v, size_t n, ccs_err *err);
/* Bind environment variable name (NULL when unset or empty; an integer when
 * as_int) to parameter i of s: the SLURM_* provenance of runs and sessions. */
void sti_bind_env(sqlite3_stmt *s, int i, const char *name, int as_int);
/* A sessions row for this process's part of run run_id (st->session its
 * number), in the caller's transaction. */
int sti_insert_session(ccs_store *st, int64_t run_id, int ranks, const char *argv, ccs_err *err);
/* Rebuild todo from the chunks table, removing rows of chunks cut short. */
int sti_compute_todo(ccs_store *st, ccs_err *err);
/* Run run_id's committed counts from its runs row. */
int sti_count_rows(ccs_store *st, int64_t run_id, store_counts *c, ccs_err *err);

/* ---- store_write.c ------------------------------------------------------------ */

/* Prepare the writer's statements and pend (end of store_prepare_run). */
int sti_prepare_writer(ccs_store *st, ccs_err *err);
/* WRITER -> WRITING; nothing to do in WRITING. */
int sti_begin(ccs_store *st, ccs_err *err);
/* Step and reset a write of the batch; a failure ends it (write_failed). */
int sti_write_step(ccs_store *st, sqlite3_stmt *s, ccs_err *err, const char *what);

/* ---- store_keep.c ------------------------------------------------------------- */

/* Add the attached shard's keep aggregates to the file's. */
int sti_merge_keep_groups(ccs_store *st, ccs_err *err);

#endif
