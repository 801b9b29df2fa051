/* store_serve.c - serving sweeps in the database: the serve_results table and
 * its views (a schema step, like store_schema.c's), and the writer of a
 * serving run: its runs row, its rows in batched transactions of
 * CCS_STORE_BATCH, its end.
 *
 * A simpler path than a training run's (store_run.c, store_write.c): one
 * process writes, in index order, with no chunks table. The file is checked
 * and claimed as for a training run (the writer row, store_lock.c), so that
 * one process writes it at a time whatever the workloads and the locking.
 * States, beside store_int.h's: OPEN -> SERVING (store_serve_begin: the
 * writer row, the runs row (new or resumed), its run_inputs and a sessions
 * row committed, locked and st->serve_run set, base its committed counts,
 * serve_ins prepared) -> SERVING with a batch open (serve_tx > 0 rows, SQLite
 * not in autocommit) -> DONE (store_serve_finish: the writer row dropped,
 * locked 0); or OPEN -> DONE when store_serve_begin finds the same sweep
 * complete (STORE_DONE_BEFORE, or STORE_NOTHING for --resume: serve_run names
 * that run, serve_ins is NULL, nothing was written). A batch commits with the
 * run's counts in its own transaction, only at a point the caller marks
 * (store_serve_mark: every row of the scenarios done so far is put), so that
 * the runs row describes exactly the committed rows however the run ends (a
 * signal stops it at a mark, whose rows commit; a failed write drops the open
 * batch; a full disk sets full, as in store_write.c: store_disk_full), and the
 * committed rows are exactly those of scenarios 0 .. n_done - 1: a resumed
 * run continues at n_done. */
#include "store_int.h"
#include "ccsweep/util/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef CCS_GIT_REV
#define CCS_GIT_REV "unknown"
#endif

/* The serving outputs stored, in column order after the plan. */
#define SERVE_OUT(X)                                                                               \
    X(concurrency, r->concurrency)                                                                 \
    X(max_concurrency, r->max_concurrency)                                                         \
    X(max_num_tokens, r->max_num_tokens)                                                           \
    X(mem_weights, r->mem_weights)                                                                 \
    X(mem_activations, r->mem_activations)                                                         \
    X(mem_kv, r->mem_kv)                                                                           \
    X(kv_tokens, r->kv_tokens)                                                                     \
    X(t_prefill, r->t_prefill)                                                                     \
    X(ttft, r->ttft)                                                                               \
    X(tpot, r->tpot)                                                                               \
    X(tok_s_gpu, r->tok_s_gpu)                                                                     \
    X(tok_s_system, r->tok_s_system)                                                               \
    X(tok_s_gpu_limit_mem, r->tok_s_gpu_limit_mem)                                                 \
    X(tok_s_gpu_limit_compute, r->tok_s_gpu_limit_compute)                                         \
    X(share_compute, r->share_compute)                                                             \
    X(share_memory, r->share_memory)                                                               \
    X(share_comm, r->share_comm)                                                                   \
    X(step_t, r->step.t)                                                                           \
    X(step_flops, r->step.flops)                                                                   \
    X(step_bytes, r->step.bytes)                                                                   \
    X(step_comm_bytes, r->step.comm_bytes)
#define SERVE_N_PLAN 16 /* run_id .. chunked, status, reason: bound before the outputs */
#define SERVE_COL(name, v) ", " #name
#define SERVE_ONE(name, v) +1
enum { SERVE_N_OUT = 0 SERVE_OUT(SERVE_ONE) };

static const char *const serve_sql[] = {
    "ALTER TABLE runs ADD COLUMN workload TEXT;  -- NULL: training; 'serve': serve_results\n",
    "CREATE TABLE serve_results (  -- one row per serving scenario; SI units\n"
    "  run_id INTEGER NOT NULL REFERENCES runs, idx INTEGER NOT NULL,\n"
    "  model TEXT NOT NULL, hardware TEXT NOT NULL, generation INTEGER NOT NULL,\n"
    "  devices INTEGER, tp INTEGER, pp INTEGER, ep INTEGER, attn_dp INTEGER,\n"
    "  dp INTEGER,                     -- replicas on the devices\n"
    "  isl INTEGER, osl INTEGER,\n"
    "  wdtype INTEGER, kvdtype INTEGER,  -- serve_dtypes\n"
    "  chunked INTEGER, status INTEGER NOT NULL, reason INTEGER,\n"
    "  concurrency INTEGER,            -- requests in flight per replica\n"
    "  max_concurrency INTEGER, max_num_tokens INTEGER,\n"
    "  mem_weights REAL, mem_activations REAL, mem_kv REAL, kv_tokens REAL,\n"
    "  t_prefill REAL, ttft REAL, tpot REAL,\n"
    "  tok_s_gpu REAL, tok_s_system REAL, tok_s_gpu_limit_mem REAL,\n"
    "  tok_s_gpu_limit_compute REAL,\n"
    "  share_compute REAL, share_memory REAL, share_comm REAL,  -- of the decode step\n"
    "  step_t REAL, step_flops REAL, step_bytes REAL, step_comm_bytes REAL,\n"
    "  PRIMARY KEY (run_id, idx)\n"
    ") WITHOUT ROWID;\n",
    "CREATE TABLE serve_dtypes (dtype INTEGER PRIMARY KEY, name TEXT NOT NULL);\n",
    "CREATE VIEW serve_results_view AS\n"
    "SELECT r.run_id, r.idx, r.model, r.hardware, r.generation, r.devices, r.tp, r.pp, r.ep,\n"
    "  r.attn_dp, r.dp, r.isl, r.osl, w.name AS weight_dtype, k.name AS kv_dtype, r.chunked,\n"
    "  s.name AS status, rs.name AS reason, r.concurrency, r.max_concurrency,\n"
    "  r.max_num_tokens, r.mem_weights, r.mem_activations, r.mem_kv, r.kv_tokens, r.t_prefill,\n"
    "  r.ttft, r.tpot, r.ttft * 1e3 AS ttft_ms, r.tpot * 1e3 AS tpot_ms, r.tok_s_gpu,\n"
    "  r.tok_s_system, r.tok_s_gpu_limit_mem, r.tok_s_gpu_limit_compute, r.share_compute,\n"
    "  r.share_memory, r.share_comm, r.step_t, r.step_flops, r.step_bytes, r.step_comm_bytes,\n"
    "  r.tp * r.pp AS replica_devices, r.wdtype, r.kvdtype\n"
    "FROM serve_results r JOIN statuses s ON s.status = r.status\n"
    "LEFT JOIN reasons rs ON rs.reason = r.reason\n"
    "LEFT JOIN serve_dtypes w ON w.dtype = r.wdtype LEFT JOIN serve_dtypes k ON k.dtype = "
    "r.kvdtype;\n",
    /* serve_best: search --serve's order (serve_search.h) per serving job */
    "CREATE VIEW serve_best AS\n"
    "SELECT * FROM (SELECT v.*, row_number() OVER (PARTITION BY " CCS_SERVE_BEST_GROUP
    " ORDER BY " CCS_SERVE_BEST_ORDER ") AS rank\n"
    "  FROM serve_results_view v WHERE status = 'ok') WHERE rank = 1;\n",
};

int sti_serve_tables(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof serve_sql / sizeof serve_sql[0]; i++)
        if (sti_exec(st, serve_sql[i], err))
            return CCS_EIO;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "INSERT INTO serve_dtypes VALUES (?, ?)", -1, &s, NULL))
        return sti_fail_db(st, err, "creating the schema");
    int rc = CCS_OK;
    for (int i = 0; rc == CCS_OK && i < CCS_S_N; i++) {
        sqlite3_bind_int(s, 1, i);
        sqlite3_bind_text(s, 2, serve_dtype_name(i), -1, SQLITE_STATIC);
        rc = sti_step_done(st, s, err, "creating the schema");
    }
    sqlite3_finalize(s);
    return rc;
}

/* The inputs of serving grid g, as store_run.c hashes a training grid's: each
 * model entry, and each hardware entry with its evolution, hashed as the bytes
 * of its evolved copies, one per generation (so a changed entry or rule
 * changes the digest; the generations themselves are the spec's). A new
 * array of *n entries, or NULL when out of memory. */
static sti_input *serve_inputs(const serve_grid *g, size_t *n)
{
    size_t nm = serve_grid_axis_len(g, SERVE_AX_MODEL), nh = serve_grid_axis_len(g, SERVE_AX_HW),
           ng = serve_grid_axis_len(g, SERVE_AX_GEN), k = 0;
    sti_input *v = calloc(nm + nh, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < nm; i++, k++) {
        const ccs_model *m = serve_grid_model(g, i);
        v[k].kind = "model";
        ccs_strlcpy(v[k].name, m->name, sizeof v[k].name);
        sha256_hex(m, sizeof *m, v[k].sha);
    }
    for (size_t i = 0; i < nh; i++, k++) {
        ccs_sha256 h;
        uint8_t d[32];
        sha256_init(&h);
        for (size_t j = 0; j < ng; j++)
            sha256_update(&h, serve_grid_hw(g, i, j), sizeof(ccs_hw));
        sha256_final(&h, d);
        v[k].kind = "hardware";
        ccs_strlcpy(v[k].name, serve_grid_hw(g, i, 0)->name, sizeof v[k].name);
        for (int b = 0; b < 32; b++)
            snprintf(v[k].sha + 2 * b, 3, "%02x", d[b]);
    }
    *n = k;
    return v;
}

/* Seconds on a monotonic clock. */
static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The runs row of a new serving run; st->serve_run its id. */
static int insert_serve_run(ccs_store *st, const store_serve_info *in, const char *host,
                            const char *now, const char *sha, ccs_err *err)
{
    sqlite3_stmt *s;
    const char *sql =
        "INSERT INTO runs (name, spec_path, spec_text, spec_sha256, version, git_rev, host, "
        "ranks, argv, evolution, detail, started, updated, status, total, workload, "
        "slurm_job_id, slurm_nodelist, slurm_restart_count) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,0,?,?,'running',?,'serve',?,?,?)";
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "recording the run");
    const char *txt[] = {in->name, in->path, NULL, sha, CCS_VERSION, CCS_GIT_REV, host};
    for (int i = 0; i < 7; i++)
        if (i != 2)
            sqlite3_bind_text(s, i + 1, txt[i], -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, in->text, (int)in->len, SQLITE_STATIC);
    sqlite3_bind_int(s, 8, in->ranks);
    sqlite3_bind_text(s, 9, in->argv, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 10, in->evolution, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 11, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 12, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 13, in->total);
    sti_bind_env(s, 14, "SLURM_JOB_ID", 0);
    sti_bind_env(s, 15, "SLURM_JOB_NODELIST", 0);
    sti_bind_env(s, 16, "SLURM_RESTART_COUNT", 1);
    int rc = sti_step_done(st, s, err, "recording the run");
    sqlite3_finalize(s);
    if (rc == CCS_OK)
        st->serve_run = sqlite3_last_insert_rowid(st->db);
    return rc;
}

/* The INSERT of a serving row, prepared once for the run. */
static int prepare_serve_insert(ccs_store *st, ccs_err *err)
{
    char ins[1024];
    int n = snprintf(ins, sizeof ins,
                     "INSERT INTO serve_results (run_id, idx, model, hardware, generation, "
                     "devices, tp, pp, ep, attn_dp, dp, isl, osl, wdtype, kvdtype, chunked, "
                     "status, reason" SERVE_OUT(SERVE_COL) ") VALUES (?");
    for (int i = 1; i < SERVE_N_PLAN + 2 + SERVE_N_OUT; i++)
        n += snprintf(ins + n, sizeof ins - (size_t)n, ",?");
    snprintf(ins + n, sizeof ins - (size_t)n, ")");
    if (sqlite3_prepare_v2(st->db, ins, -1, &st->serve_ins, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "preparing the serving rows");
    return CCS_OK;
}

int store_serve_begin(ccs_store *st, const store_serve_info *in, ccs_err *err)
{
    assert(assert_store_state(st));
    assert(!st->g && !st->serve_run && !st->locked && in && in->text && in->g);
    assert(in->mode >= STORE_MODE_NEW && in->mode <= STORE_MODE_APPEND);
    char host[256] = "", now[32], sha[65];
    gethostname(host, sizeof host - 1);
    sti_now_iso(now, sizeof now);
    sha256_hex(in->text, in->len, sha);
    /* as a training run (store_prepare_run): one writer, an intact file; a
     * live writer is named first (a file it writes without locks can read
     * torn meanwhile: store_writer_holds) */
    int rc = sti_check_writer(st, err);
    if (rc == CCS_OK && !st->created)
        rc = sti_check_integrity(st, err);
    if (rc == CCS_OK)
        rc = sti_begin_claim(st, err);
    if (rc != CCS_OK)
        return rc;
    size_t n_in = 0;
    sti_input *inputs = serve_inputs(in->g, &n_in);
    if (!inputs) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    /* the claim, the run found or recorded, its session, in one transaction */
    rc = sti_claim_writer(st, err);
    int kind = STORE_NEW;
    if (rc == CCS_OK && in->mode == STORE_MODE_RESUME)
        kind = sti_find_resume(st, sha, &st->serve_run, err);
    else if (rc == CCS_OK && in->mode == STORE_MODE_NEW)
        kind = sti_find_complete(st, sha, inputs, n_in, &st->serve_run, err);
    if (rc == CCS_OK && kind < 0)
        rc = kind;
    if (rc == CCS_OK && (kind == STORE_NOTHING || kind == STORE_DONE_BEFORE)) {
        free(inputs);
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return kind;
    }
    if (rc == CCS_OK && kind == STORE_RESUMED)
        rc = sti_check_inputs(st, st->serve_run, inputs, n_in, err);
    if (rc == CCS_OK && kind == STORE_RESUMED) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "UPDATE runs SET status = 'running', ended = NULL, updated = '%s', sessions = "
                 "sessions + 1 WHERE run_id = %lld",
                 now, (long long)st->serve_run);
        rc = sti_exec(st, sql, err);
    }
    if (rc == CCS_OK && kind == STORE_NEW)
        rc = insert_serve_run(st, in, host, now, sha, err);
    if (rc == CCS_OK && kind == STORE_NEW)
        rc = sti_record_inputs(st, st->serve_run, inputs, n_in, err);
    if (rc == CCS_OK) {
        char sql[96];
        snprintf(sql, sizeof sql, "UPDATE writer SET run_id = %lld", (long long)st->serve_run);
        rc = sti_exec(st, sql, err);
    }
    if (rc == CCS_OK)
        rc = sti_insert_session(st, st->serve_run, in->ranks, in->argv, err);
    free(inputs);
    if (rc != CCS_OK) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    if (sti_exec(st, "COMMIT", err))
        return CCS_EIO;
    sti_writer_claimed(st);
    st->serve_at = mono_s();
    rc = sti_count_rows(st, st->serve_run, &st->base, err);
    if (rc == CCS_OK)
        rc = prepare_serve_insert(st, err);
    return rc == CCS_OK ? kind : rc;
}

int64_t store_serve_run_id(const ccs_store *st)
{
    return st->serve_run;
}

/* A write of the open batch failed: it is rolled back whole (the counts of
 * the runs row are the committed batches'); a full disk is remembered. */
static int serve_failed(ccs_store *st)
{
    int sys = sqlite3_system_errno(st->db);
    if (sqlite3_errcode(st->db) == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT)
        st->full = 1;
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->serve_tx = 0;
    memset(&st->serve_batch, 0, sizeof st->serve_batch);
    return CCS_EIO;
}

/* Commit the open batch, and in its transaction the run's counts: done
 * scenarios, the batch's rows added (with no batch open, the count of done
 * scenarios alone, whose rows are all committed). */
static int serve_commit(ccs_store *st, int64_t done, ccs_err *err)
{
    const store_counts *b = &st->serve_batch;
    char now[32], sql[512];
    sti_now_iso(now, sizeof now);
    snprintf(sql, sizeof sql,
             "UPDATE runs SET updated = '%s', n_done = %lld, n_rows = n_rows + %lld, n_ok = n_ok "
             "+ %lld, n_invalid = n_invalid + %lld, n_oom = n_oom + %lld, n_filtered = %lld - "
             "n_rows - %lld WHERE run_id = %lld",
             now, (long long)done, (long long)b->rows, (long long)b->ok, (long long)b->invalid,
             (long long)b->oom, (long long)done, (long long)b->rows, (long long)st->serve_run);
    if (sti_exec(st, sql, err) || (st->serve_tx && sti_exec(st, "COMMIT", err)))
        return serve_failed(st);
    st->serve_tx = 0;
    memset(&st->serve_batch, 0, sizeof st->serve_batch);
    st->serve_at = mono_s();
    return CCS_OK;
}

int store_serve_put(ccs_store *st, const serve_record *rec, const char *model, const char *hw,
                    ccs_err *err)
{
    assert(st->serve_run > 0 && st->serve_ins);
    if (!st->serve_tx && sti_exec(st, "BEGIN IMMEDIATE", err))
        return serve_failed(st);
    sqlite3_stmt *s = st->serve_ins;
    const ccs_serve_plan *p = &rec->plan;
    const ccs_serve_result *r = &rec->r;
    sqlite3_bind_int64(s, 1, st->serve_run);
    sqlite3_bind_int64(s, 2, rec->idx);
    sqlite3_bind_text(s, 3, model, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, hw, -1, SQLITE_STATIC);
    const int64_t iv[] = {rec->gen,   p->devices, p->tp,     p->pp,    p->ep,
                          p->attn_dp, p->dp,      p->isl,    p->osl,   p->wdtype,
                          p->kvdtype, p->chunked, r->status, r->reason};
    for (int i = 0; i < 14; i++)
        sqlite3_bind_int64(s, 5 + i, iv[i]);
#define SERVE_VAL(name, v) v,
    const double ov[] = {SERVE_OUT(SERVE_VAL)};
    for (int i = 0; i < SERVE_N_OUT; i++) {
        if (r->status == CCS_ST_INVALID)
            sqlite3_bind_null(s, 19 + i);
        else
            sqlite3_bind_double(s, 19 + i, ov[i]);
    }
    st->serve_tx++;
    if (sti_step_done(st, s, err, "writing serving rows"))
        return serve_failed(st);
    store_counts *b = &st->serve_batch;
    b->rows++;
    b->ok += r->status == CCS_ST_OK;
    b->invalid += r->status == CCS_ST_INVALID;
    b->oom += r->status == CCS_ST_OOM;
    return CCS_OK;
}

int store_serve_mark(ccs_store *st, int64_t done, ccs_err *err)
{
    assert(st->serve_run > 0);
    /* as a training sweep's writer: a batch, or a second's rows */
    if (st->serve_tx >= CCS_STORE_BATCH || mono_s() - st->serve_at >= 1.0)
        return serve_commit(st, done, err);
    return CCS_OK;
}

int store_serve_finish(ccs_store *st, int status, int64_t done, ccs_err *err)
{
    assert(st->serve_run > 0 && status >= STORE_COMPLETE && status <= STORE_FAILED);
    static const char *const names[] = {"running", "complete", "interrupted", "failed"};
    /* complete, or stopped by a signal at a mark: every row of the done
     * scenarios is put, and committed with them; a failure drops the batch */
    int kept = status == STORE_COMPLETE || status == STORE_INTERRUPTED;
    if (kept && serve_commit(st, done, err))
        return CCS_EIO;
    if (!kept && st->serve_tx) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        st->serve_tx = 0;
        memset(&st->serve_batch, 0, sizeof st->serve_batch);
    }
    char now[32], sql[768];
    sti_now_iso(now, sizeof now);
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE; UPDATE runs SET status = '%s', ended = '%s', updated = '%s' "
             "WHERE run_id = %lld; UPDATE sessions SET ended = '%s', status = '%s' WHERE run_id "
             "= %lld AND session = %lld; DELETE FROM writer WHERE pid = %lld; COMMIT",
             names[status], now, now, (long long)st->serve_run, now, names[status],
             (long long)st->serve_run, (long long)st->session, (long long)getpid());
    if (sti_exec(st, sql, err)) {
        if (!sqlite3_get_autocommit(st->db))
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return CCS_EIO; /* store_close drops the writer row */
    }
    st->locked = 0;
    return CCS_OK;
}
