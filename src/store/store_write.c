/* store_write.c - result rows in batched transactions (WRITER <-> WRITING,
 * store_int.h): plans written once, rows 16 per INSERT, region rows, chunk
 * records (the parts of open chunks at every commit), the commit that adds
 * them to the run's counts, and the run's end. */
#include "store_int.h"
#include "ccsweep/util/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const status_names[] = {"running", "complete", "interrupted", "failed"};

/* The INSERT of result_rows: "INSERT INTO result_rows (rid, key, sr, name,
 * micro_batches, OUTPUTS...) VALUES (?,...,?)", then ",(?,...,?)" up to
 * ROWS_PER_INSERT rows, in sql; *one_row gets the length of its one-row
 * form. The output columns are named as the outputs (timeline.h), the
 * derived ones left out. */
static int insert_sql(ccs_store *st, ccs_buf *sql, size_t *one_row, ccs_err *err)
{
    ccs_buf_printf(sql, "INSERT INTO result_rows (rid, key, sr, name, micro_batches");
    int derived = 0;
    for (int k = 0; k < CCS_N_OUTPUTS; k++) {
        if (ccs_outputs[k].store == CCS_OUT_DERIVED)
            derived++;
        else
            ccs_buf_printf(sql, ", %s", ccs_outputs[k].name);
    }
    if (derived != CCS_N_DERIVED) { /* timeline.c and timeline.h disagree */
        ccs_err_set(err, "%s: internal error: %d derived outputs, CCS_N_DERIVED is %d", st->path,
                    derived, CCS_N_DERIVED);
        return CCS_ERUNTIME;
    }
    ccs_buf_printf(sql, ") VALUES ");
    for (int r = 0; r < ROWS_PER_INSERT; r++) {
        ccs_buf_printf(sql, r ? ",(?" : "(?");
        for (int k = 1; k < N_RESULT_COLS; k++)
            ccs_buf_printf(sql, ",?");
        ccs_buf_printf(sql, ")");
        if (r == 0)
            *one_row = sql->len;
    }
    if (sql->oom) {
        ccs_err_set(err, "%s: out of memory", st->path);
        return CCS_ENOMEM;
    }
    return CCS_OK;
}

/* The statements of WRITER and WRITING, and pend. */
int sti_prepare_writer(ccs_store *st, ccs_err *err)
{
    assert(st->locked && !st->in_tx && !st->ins);
    ccs_buf rows = CCS_BUF_INIT, rg = CCS_BUF_INIT;
    size_t one_row = 0;
    int rc = insert_sql(st, &rows, &one_row, err);
    /* one region_rows row: rid, present and the region columns, in table order */
    ccs_buf_printf(&rg, "INSERT INTO region_rows VALUES (?,?");
    for (int k = 0; k < REGION_FIELDS * CCS_RG_N; k++)
        ccs_buf_printf(&rg, ",?");
    ccs_buf_printf(&rg, ")");
    free(st->pend);
    st->n_pend = 0;
    st->pend = malloc(ROWS_PER_INSERT * sizeof *st->pend);
    if (rc == CCS_OK && (!st->pend || rg.oom)) {
        ccs_err_set(err, "%s: out of memory", st->path);
        rc = CCS_ENOMEM;
    }
    if (rc == CCS_OK &&
        (sqlite3_prepare_v2(st->db, rows.s, (int)one_row, &st->ins, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(st->db, rows.s, -1, &st->ins_many, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(st->db, rg.s, -1, &st->ins_rg, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(st->db, "INSERT INTO chunks VALUES (?,?,?)", -1, &st->ins_chunk,
                            NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(st->db,
                            "INSERT OR IGNORE INTO plans VALUES "
                            "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                            -1, &st->ins_plan, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(st->db,
                            "UPDATE runs SET n_done = n_done + ?1, updated = ?2, n_rows = "
                            "n_rows + ?3, n_ok = n_ok + ?4, n_invalid = n_invalid + ?5, n_oom = "
                            "n_oom + ?6, n_filtered = max(n_done + ?1 - n_rows - ?3, 0) WHERE "
                            "run_id = ?7",
                            -1, &st->upd_run, NULL) != SQLITE_OK))
        rc = sti_fail_db(st, err, "preparing the writer");
    ccs_buf_free(&rows);
    ccs_buf_free(&rg);
    return rc;
}

/* A write of the open transaction failed: say why, and end the transaction.
 * SQLite may have rolled it back already (it does on SQLITE_FULL) or only the
 * statement; either way nothing of it is committed now, so the in-memory
 * counters drop it too and stay equal to what the file holds. The open chunks
 * are forgotten: what the file records of them is their committed parts. */
static int write_failed(ccs_store *st, ccs_err *err, const char *what)
{
    assert(st->locked); /* WRITING, or WRITER when its BEGIN failed */
    int code = sqlite3_errcode(st->db), sys = sqlite3_system_errno(st->db);
    if (code == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT)
        st->full = 1;
    if (st->full)
        ccs_err_set(err,
                    "%s: the disk is full (%s) while %s: the batch being written was rolled back, "
                    "every batch committed before it is kept",
                    st->path, sqlite3_errmsg(st->db), what);
    else
        sti_fail_db(st, err, what);
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->in_tx = 0;
    st->tx_rows = st->tx_done = 0;
    st->n_pend = 0;
    st->n_open = 0;
    memset(&st->tx, 0, sizeof st->tx);
    return CCS_EIO;
}

int sti_write_step(ccs_store *st, sqlite3_stmt *s, ccs_err *err, const char *what)
{
    int r = sqlite3_step(s);
    sqlite3_reset(s);
    return r == SQLITE_DONE || r == SQLITE_ROW ? CCS_OK : write_failed(st, err, what);
}

int sti_begin(ccs_store *st, ccs_err *err)
{
    assert(assert_store_state(st));
    assert(st->locked); /* WRITER or WRITING */
    if (st->in_tx)
        return CCS_OK;
    if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return write_failed(st, err, "starting a transaction");
    st->in_tx = 1;
    st->tx_rows = st->tx_done = 0;
    memset(&st->tx, 0, sizeof st->tx);
    return CCS_OK;
}

/* The plans row of s, written the first time one of its scenarios is stored. */
static int put_plan(ccs_store *st, const ccs_scenario *s, ccs_err *err)
{
    int64_t plan_i = s->idx % st->plan_n;
    int64_t z = grid_cell_z(st->g, s->idx / st->plan_n);
    int64_t bit = z * st->plan_n + plan_i;
    unsigned char m = (unsigned char)(1u << (bit % 8));
    if (st->seen[bit / 8] & m)
        return CCS_OK;
    const ccs_plan *p = &s->plan;
    sqlite3_stmt *q = st->ins_plan;
    sqlite3_bind_int64(q, 1, rid_of(st->run_id, bit));
    const int ints[] = {p->devices,    p->tp,         p->pp,         p->dp,
                        p->vpp,        p->mbs,        p->gbs,        p->seq,
                        p->dtype,      p->sp,         p->zero,       p->recompute,
                        p->flash_attn, p->tp_overlap, p->dp_overlap, p->innet_reduce};
    int i = 2;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        sqlite3_bind_int(q, i++, ints[k]);
    sqlite3_bind_double(q, i++, p->comm_compress);
    sqlite3_bind_double(q, i++, p->net_bw_factor);
    const int v6[] = {plan_cp(p), p->cp_comm, plan_ep(p)};
    for (size_t k = 0; k < sizeof v6 / sizeof v6[0]; k++)
        sqlite3_bind_int(q, i++, v6[k]);
    sqlite3_bind_double(q, i++, p->capacity_factor);
    sqlite3_bind_int(q, i++, p->pp_first);
    sqlite3_bind_int(q, i++, p->pp_last);
    /* version 10: the stack's name, NULL for the default (the view names it) */
    const ccs_stack *sk = p->stack > 0 ? spec_stack(grid_spec(st->g), (size_t)p->stack - 1) : NULL;
    if (sk && !stack_is_default(sk))
        sqlite3_bind_text(q, i++, sk->name, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i++);
    if (sti_write_step(st, q, err, "inserting a plan"))
        return CCS_EIO;
    st->seen[bit / 8] |= m;
    return CCS_OK;
}

void store_counts_committed(const ccs_store *st, store_counts *out)
{
    const store_counts *b = &st->base, *c = &st->committed;
    out->done = b->done + c->done;
    out->rows = b->rows + c->rows;
    out->ok = b->ok + c->ok;
    out->invalid = b->invalid + c->invalid;
    out->oom = b->oom + c->oom;
    out->filtered = out->done > out->rows ? out->done - out->rows : 0;
}

int store_disk_full(const ccs_store *st)
{
    return st->full;
}

/* Bind the result_rows columns of rec to q's parameters from i on. */
static void bind_row(ccs_store *st, sqlite3_stmt *q, int i, const ccs_record *rec)
{
    const ccs_scenario *s = &rec->s;
    const ccs_result *r = &rec->r;
    sqlite3_bind_int64(q, i++, rid_of(st->run_id, s->idx));
    sqlite3_bind_int64(q, i++, (int64_t)s->key);
    sqlite3_bind_int64(q, i++, (int64_t)r->reason << 2 | r->status);

    char name[256];
    if (grid_format_name(st->g, rec, name, sizeof name))
        sqlite3_bind_text(q, i++, name, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(q, i++);
    if (r->status == CCS_ST_INVALID) {
        /* no timeline for invalid plans: NULLs keep aggregates honest */
        for (int k = 0; k <= CCS_N_OUTPUTS - CCS_N_DERIVED; k++)
            sqlite3_bind_null(q, i++);
        return;
    }
    sqlite3_bind_int(q, i++, r->micro_batches);
    for (int k = 0; k < CCS_N_OUTPUTS; k++) {
        int how = ccs_outputs[k].store;
        if (how == CCS_OUT_DERIVED)
            continue; /* the view computes it */
        double v = ccs_output_of(r, k);
        if (how == CCS_OUT_UNLESS_T_ITER && !memcmp(&v, &r->t_iter, sizeof v))
            sqlite3_bind_null(q, i++); /* no band: the view gives t_iter */
        else
            sqlite3_bind_double(q, i++, v);
    }
}

/* Row idx is put: its open chunk (if it has one) has its rows up to idx. */
static void note_row(ccs_store *st, int64_t idx)
{
    size_t i = st->open_hit;
    if (i >= st->n_open || idx < st->open[i].lo || idx >= st->open[i].hi)
        for (i = 0; i < st->n_open && (idx < st->open[i].lo || idx >= st->open[i].hi); i++)
            ;
    /* none: a chunk not announced (keep: rules), recorded when it is done */
    if (i == st->n_open)
        return;
    assert(idx >= st->open[i].seen); /* in index order */
    st->open[i].seen = idx + 1;
    st->open_hit = i;
}

/* Insert the rows put since the last flush: ROWS_PER_INSERT of them in one
 * statement, fewer one by one (at a commit or a drop). */
static int flush_rows(ccs_store *st, ccs_err *err)
{
    int n = st->n_pend;
    st->n_pend = 0;
    if (n == ROWS_PER_INSERT) {
        for (int k = 0; k < n; k++)
            bind_row(st, st->ins_many, 1 + k * N_RESULT_COLS, &st->pend[k]);
        return sti_write_step(st, st->ins_many, err, "inserting results");
    }
    for (int k = 0; k < n; k++) {
        bind_row(st, st->ins, 1, &st->pend[k]);
        if (sti_write_step(st, st->ins, err, "inserting a result"))
            return CCS_EIO;
    }
    return CCS_OK;
}

int store_put(ccs_store *st, const ccs_record *rec, const ccs_region_time *rg, ccs_err *err)
{
    if (sti_begin(st, err))
        return CCS_EIO;
    const ccs_scenario *s = &rec->s;
    const ccs_result *r = &rec->r;
    if (put_plan(st, s, err))
        return CCS_EIO;
    st->pend[st->n_pend++] = *rec;
    if (st->n_pend == ROWS_PER_INSERT && flush_rows(st, err))
        return CCS_EIO;
    st->tx.rows++;
    st->tx.ok += r->status == CCS_ST_OK;
    st->tx.invalid += r->status == CCS_ST_INVALID;
    st->tx.oom += r->status != CCS_ST_OK && r->status != CCS_ST_INVALID;
    if (st->detail && rg && r->status != CCS_ST_INVALID) {
        sqlite3_stmt *q = st->ins_rg;
        int64_t present = 0;
        sqlite3_bind_int64(q, 1, rid_of(st->run_id, s->idx));
        for (int k = 0; k < CCS_RG_N; k++) {
            const double v[REGION_FIELDS] = {rg[k].time, rg[k].count, rg[k].flops, rg[k].bytes};
            int stored = rg[k].time > 0; /* an empty region has no row in the view */
            present |= (int64_t)stored << k;
            for (int f = 0; f < REGION_FIELDS; f++) {
                int i = 3 + REGION_FIELDS * k + f;
                if (stored)
                    sqlite3_bind_double(q, i, v[f]);
                else
                    sqlite3_bind_null(q, i);
            }
        }
        sqlite3_bind_int64(q, 2, present);
        if (sti_write_step(st, q, err, "inserting regions"))
            return CCS_EIO;
    }
    note_row(st, s->idx);
    if (++st->tx_rows >= CCS_STORE_BATCH)
        return store_commit(st, err);
    return CCS_OK;
}

int store_drop(ccs_store *st, int64_t idx, int status, ccs_err *err)
{
    if (sti_begin(st, err) || flush_rows(st, err)) /* the row may be among the pending ones */
        return CCS_EIO;
    if (!st->del_row && (sqlite3_prepare_v2(st->db, "DELETE FROM result_rows WHERE rid = ?", -1,
                                            &st->del_row, NULL) != SQLITE_OK ||
                         sqlite3_prepare_v2(st->db, "DELETE FROM region_rows WHERE rid = ?", -1,
                                            &st->del_rg, NULL) != SQLITE_OK))
        return sti_fail_db(st, err, "preparing to drop rows");
    sqlite3_bind_int64(st->del_row, 1, rid_of(st->run_id, idx));
    if (sti_write_step(st, st->del_row, err, "dropping a row"))
        return CCS_EIO;
    sqlite3_bind_int64(st->del_rg, 1, rid_of(st->run_id, idx));
    if (sti_write_step(st, st->del_rg, err, "dropping a row"))
        return CCS_EIO;
    st->tx.rows--;
    st->tx.ok -= status == CCS_ST_OK;
    st->tx.invalid -= status == CCS_ST_INVALID;
    st->tx.oom -= status != CCS_ST_OK && status != CCS_ST_INVALID;
    return CCS_OK;
}

int store_each_row(ccs_store *st, int (*cb)(int64_t idx, void *ctx), void *ctx, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "SELECT rid FROM result_rows WHERE rid >= ? AND rid < ?", -1, &s,
                           NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "reading the run's rows");
    sqlite3_bind_int64(s, 1, rid_of(st->run_id, 0));
    sqlite3_bind_int64(s, 2, rid_of(st->run_id + 1, 0));
    int rc = 0;
    while (!rc && sqlite3_step(s) == SQLITE_ROW)
        rc = cb(sqlite3_column_int64(s, 0) & RID_MASK, ctx);
    sqlite3_finalize(s);
    return rc;
}

/* [lo, hi) as a chunks row of the open transaction, counted in n_done at
 * the commit. */
static int insert_chunk(ccs_store *st, int64_t lo, int64_t hi, ccs_err *err)
{
    sqlite3_bind_int64(st->ins_chunk, 1, st->run_id);
    sqlite3_bind_int64(st->ins_chunk, 2, lo);
    sqlite3_bind_int64(st->ins_chunk, 3, hi);
    if (sti_write_step(st, st->ins_chunk, err, "recording a chunk"))
        return CCS_EIO;
    st->tx_done += hi - lo;
    return CCS_OK;
}

int store_chunk_open(ccs_store *st, int64_t lo, int64_t hi, ccs_err *err)
{
    assert(assert_store_state(st));
    assert(st->locked && lo < hi); /* WRITER or WRITING */
    if (ccs_grow((void **)&st->open, &st->cap_open, st->n_open + 1, sizeof *st->open)) {
        ccs_err_set(err, "%s: out of memory", st->path);
        return CCS_ENOMEM;
    }
    st->open[st->n_open++] = (sti_chunk){.lo = lo, .hi = hi, .cov = lo, .seen = lo};
    return CCS_OK;
}

int store_chunk_done(ccs_store *st, int64_t lo, int64_t hi, ccs_err *err)
{
    if (sti_begin(st, err))
        return CCS_EIO;
    /* an open chunk: what the commits since it opened have not recorded */
    for (size_t i = 0; i < st->n_open; i++) {
        if (st->open[i].lo != lo || st->open[i].hi != hi)
            continue;
        lo = st->open[i].cov;
        st->open[i] = st->open[--st->n_open];
        st->open_hit = 0;
        break;
    }
    return lo < hi ? insert_chunk(st, lo, hi, err) : CCS_OK;
}

/* The parts of the open chunks put since the last commit, as chunks rows of
 * this transaction: no row it commits lies outside chunks. */
static int record_parts(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < st->n_open; i++) {
        sti_chunk *c = &st->open[i];
        if (c->seen > c->cov) {
            if (insert_chunk(st, c->cov, c->seen, err))
                return CCS_EIO;
            c->cov = c->seen;
        }
    }
    return CCS_OK;
}

/* WRITING -> WRITER; nothing to do in another state. */
int store_commit(ccs_store *st, ccs_err *err)
{
    assert(assert_store_state(st));
    if (!st->in_tx)
        return CCS_OK;
    if (flush_rows(st, err) || record_parts(st, err))
        return CCS_EIO;
    char now[32];
    sti_now_iso(now, sizeof now);
    sqlite3_bind_int64(st->upd_run, 1, st->tx_done);
    sqlite3_bind_text(st->upd_run, 2, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st->upd_run, 3, st->tx.rows);
    sqlite3_bind_int64(st->upd_run, 4, st->tx.ok);
    sqlite3_bind_int64(st->upd_run, 5, st->tx.invalid);
    sqlite3_bind_int64(st->upd_run, 6, st->tx.oom);
    sqlite3_bind_int64(st->upd_run, 7, st->run_id);
    if (sti_write_step(st, st->upd_run, err, "updating the run"))
        return CCS_EIO;
    if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return write_failed(st, err, "committing a batch");
    st->committed.done += st->tx_done;
    st->committed.rows += st->tx.rows;
    st->committed.ok += st->tx.ok;
    st->committed.invalid += st->tx.invalid;
    st->committed.oom += st->tx.oom;
    st->in_tx = 0;
    st->tx_rows = st->tx_done = 0;
    memset(&st->tx, 0, sizeof st->tx);
    return CCS_OK;
}

/* WRITER or WRITING -> DONE. */
int store_finish(ccs_store *st, int status, store_counts *out, ccs_err *err)
{
    assert(assert_store_state(st));
    assert(st->g);
    if (store_commit(st, err))
        return CCS_EIO;
    st->n_open = 0; /* chunks left unfinished (a stop): their parts are recorded */
    char now[32], sql[512];
    sti_now_iso(now, sizeof now);
    if (sti_exec(st, "BEGIN IMMEDIATE", err))
        return CCS_EIO;
    /* Rows of chunks cut short are dropped now rather than at resume, so the
     * counts of an interrupted run describe exactly its completed chunks. */
    st->n_todo = 0;
    store_counts c;
    if ((status != STORE_COMPLETE && sti_compute_todo(st, err)) ||
        sti_count_rows(st, st->run_id, &c, err))
        goto fail;
    /* A complete run needs one chunk row: collapse the list. */
    if (status == STORE_COMPLETE && c.done == grid_count(st->g)) {
        snprintf(sql, sizeof sql,
                 "DELETE FROM chunks WHERE run_id = %lld; INSERT INTO chunks "
                 "VALUES (%lld, 0, %lld);",
                 (long long)st->run_id, (long long)st->run_id, (long long)grid_count(st->g));
        if (sti_exec(st, sql, err))
            goto fail;
    } else if (status == STORE_COMPLETE) {
        status = STORE_FAILED; /* should not happen: not every index was stored */
    }
    snprintf(sql, sizeof sql,
             "UPDATE runs SET status = '%s', ended = '%s', updated = '%s', n_rows = %lld, "
             "n_ok = %lld, n_invalid = %lld, n_oom = %lld, n_filtered = %lld WHERE run_id = "
             "%lld; UPDATE sessions SET ended = '%s', status = '%s' WHERE run_id = %lld AND "
             "session = %lld; DELETE FROM writer WHERE pid = %lld;",
             status_names[status], now, now, (long long)c.rows, (long long)c.ok,
             (long long)c.invalid, (long long)c.oom, (long long)c.filtered, (long long)st->run_id,
             now, status_names[status], (long long)st->run_id, (long long)st->session,
             (long long)getpid());
    if (sti_exec(st, sql, err))
        goto fail;
    if (sti_exec(st, "COMMIT", err))
        goto fail;
    st->locked = 0;
    if (out)
        *out = c;
    return CCS_OK;
fail:
    sti_exec(st, "ROLLBACK", NULL);
    return CCS_EIO;
}

int store_seal(ccs_store *st, ccs_err *err)
{
    if (store_commit(st, err))
        return CCS_EIO;
    return sti_exec(st, "PRAGMA journal_mode = DELETE", err);
}
