/* store_run.c - a run registered (runs, sessions, models, hardware, cells,
 * inputs) or found and checked for --resume, and the index ranges still to
 * compute: store_prepare_run, OPEN -> WRITER (store_int.h). */
#include "store_int.h"
#include "ccsweep/cost/opmodel.h"
#include "ccsweep/util/buf.h"
#include "ccsweep/util/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CCS_GIT_REV
#define CCS_GIT_REV "unknown"
#endif

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
    if (v && *v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

void sti_bind_env(sqlite3_stmt *s, int i, const char *name, int as_int)
{
    const char *v = getenv(name);
    if (v && *v && as_int)
        sqlite3_bind_int64(s, i, strtoll(v, NULL, 10));
    else
        bind_text_or_null(s, i, v);
}

static int insert_run(ccs_store *st, const store_run_info *info, ccs_err *err)
{
    const ccs_spec *sp = grid_spec(st->g);
    char host[256] = "", now[32];
    gethostname(host, sizeof host - 1);
    sti_now_iso(now, sizeof now);
    sqlite3_stmt *s;
    const char *sql =
        "INSERT INTO runs (name, spec_path, spec_text, spec_sha256, version, git_rev, host, "
        "ranks, slurm_job_id, slurm_nodelist, slurm_restart_count, argv, evolution, where_expr, "
        "name_template, detail, started, updated, status, total, plan_n, run_id, n_filtered) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,'running',?,?,?,0)";
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "recording the run");
    size_t tlen;
    const char *text = spec_text(sp, &tlen);
    const ccs_evolution *ev = spec_evolution(sp);
    sqlite3_bind_text(s, 1, spec_name(sp), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, spec_path(sp), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, text, (int)tlen, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, spec_sha256(sp), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, CCS_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, CCS_GIT_REV, -1, SQLITE_STATIC);
    bind_text_or_null(s, 7, host);
    sqlite3_bind_int(s, 8, info->ranks);
    sti_bind_env(s, 9, "SLURM_JOB_ID", 0);
    sti_bind_env(s, 10, "SLURM_JOB_NODELIST", 0);
    sti_bind_env(s, 11, "SLURM_RESTART_COUNT", 1);
    bind_text_or_null(s, 12, info->argv);
    bind_text_or_null(s, 13, ev ? ev->name : NULL);
    bind_text_or_null(s, 14, spec_where_text(sp));
    bind_text_or_null(s, 15, spec_name_template(sp));
    sqlite3_bind_int(s, 16, info->detail);
    /* a shard takes its run's id and start time; a new run gets the next id */
    sqlite3_bind_text(s, 17, info->shard_of > 0 ? info->shard_started : now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 18, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 19, grid_count(st->g));
    sqlite3_bind_int64(s, 20, st->plan_n);
    if (info->shard_of > 0)
        sqlite3_bind_int64(s, 21, info->shard_of);
    else
        sqlite3_bind_null(s, 21);
    int rc = sti_step_done(st, s, err, "recording the run");
    sqlite3_finalize(s);
    st->run_id = sqlite3_last_insert_rowid(st->db);
    return rc;
}

int sti_insert_session(ccs_store *st, int64_t run_id, int ranks, const char *argv, ccs_err *err)
{
    char host[256] = "", now[32];
    gethostname(host, sizeof host - 1);
    sti_now_iso(now, sizeof now);
    sqlite3_stmt *s;
    const char *sql =
        "INSERT INTO sessions (run_id, session, host, ranks, slurm_job_id, slurm_nodelist, "
        "slurm_restart_count, argv, started, status) VALUES (?1, (SELECT coalesce(max(session), "
        "0) + 1 FROM sessions WHERE run_id = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running')";
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "recording the session");
    sqlite3_bind_int64(s, 1, run_id);
    bind_text_or_null(s, 2, host);
    sqlite3_bind_int(s, 3, ranks);
    sti_bind_env(s, 4, "SLURM_JOB_ID", 0);
    sti_bind_env(s, 5, "SLURM_JOB_NODELIST", 0);
    sti_bind_env(s, 6, "SLURM_RESTART_COUNT", 1);
    bind_text_or_null(s, 7, argv);
    sqlite3_bind_text(s, 8, now, -1, SQLITE_TRANSIENT);
    int rc = sti_step_done(st, s, err, "recording the session");
    sqlite3_finalize(s);
    if (rc)
        return rc;
    char sql2[160];
    snprintf(sql2, sizeof sql2, "SELECT max(session) FROM sessions WHERE run_id = %lld",
             (long long)run_id);
    st->session = sti_query_int(st, sql2, 1);
    return CCS_OK;
}

/* The run's op_sources rows: every operator kind (per dtype, or per level for
 * collectives) on every hardware of the spec, measured when its calibration
 * profile has a curve for it (opmodel_measured), else synthetic. */
static int record_op_sources(ccs_store *st, ccs_err *err)
{
    const ccs_spec *sp = grid_spec(st->g);
    sqlite3_stmt *del = NULL, *ins = NULL;
    int rc = sti_create_op_sources(st, err);
    if (rc != CCS_OK)
        return rc;
    if (sqlite3_prepare_v2(st->db, "DELETE FROM op_sources WHERE run_id = ?", -1, &del, NULL) ||
        sqlite3_prepare_v2(st->db, "INSERT INTO op_sources VALUES (?,?,?,?,?,?,?)", -1, &ins,
                           NULL)) {
        sqlite3_finalize(del);
        return sti_fail_db(st, err, "recording operator sources");
    }
    sqlite3_bind_int64(del, 1, st->run_id);
    rc = sti_step_done(st, del, err, "recording operator sources");
    for (size_t h = 0; rc == CCS_OK && h < spec_n_hw(sp); h++) {
        const struct ccs_opmodel *om = spec_opmodel(sp, h);
        for (int k = 0; rc == CCS_OK && k < CCS_OP_N; k++) {
            int coll = opkind_is_collective(k), n = coll ? 2 : CCS_DTYPE_N;
            for (int v = 0; rc == CCS_OK && v < n; v++) {
                int measured = opmodel_measured(om, k, coll ? CCS_FP32 : v, coll ? v : 0);
                sqlite3_bind_int64(ins, 1, st->run_id);
                sqlite3_bind_text(ins, 2, spec_hw(sp, h)->name, -1, SQLITE_STATIC);
                sqlite3_bind_text(ins, 3, opkind_name(k), -1, SQLITE_STATIC);
                bind_text_or_null(ins, 4, coll ? NULL : dtype_name(v));
                bind_text_or_null(ins, 5, coll ? (v ? "inter" : "intra") : NULL);
                sqlite3_bind_text(ins, 6, measured ? "measured" : "synthetic", -1, SQLITE_STATIC);
                bind_text_or_null(ins, 7, measured ? spec_calibration(sp, h) : NULL);
                rc = sti_step_done(st, ins, err, "recording operator sources");
            }
        }
    }
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    return rc;
}

/* The cells of the grid (idx / plan_n): their model and hardware rows and
 * the plan table they read. */
static int map_cells(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    size_t ng = spec_axis_len(grid_spec(st->g), SPEC_AX_GEN);
    int64_t n = grid_count(st->g) / st->plan_n;
    if (sqlite3_prepare_v2(st->db, "INSERT OR IGNORE INTO cells VALUES (?,?,?,?)", -1, &s, NULL) !=
        SQLITE_OK)
        return sti_fail_db(st, err, "recording the grid cells");
    int rc = CCS_OK;
    for (int64_t c = 0; rc == CCS_OK && c < n; c++) {
        ccs_scenario sc;
        grid_decode(st->g, c * st->plan_n, &sc);
        sqlite3_bind_int64(s, 1, rid_of(st->run_id, c));
        sqlite3_bind_int64(s, 2, st->model_id[sc.model]);
        sqlite3_bind_int64(s, 3, st->hw_id[(size_t)sc.hw * ng + (size_t)sc.gen_i]);
        sqlite3_bind_int64(s, 4, grid_cell_z(st->g, c));
        rc = sti_step_done(st, s, err, "recording the grid cells");
    }
    sqlite3_finalize(s);
    return rc;
}

/* Which plan rows exist already (a resumed run): one bit per (z, plan_i). */
static int load_seen(ccs_store *st, ccs_err *err)
{
    int64_t nz = grid_plan_tables(st->g);
    st->n_seen = (size_t)((nz * st->plan_n + 7) / 8);
    st->seen = calloc(st->n_seen ? st->n_seen : 1, 1);
    if (!st->seen) {
        ccs_err_set(err, "%s: out of memory for the plan table of %lld plans", st->path,
                    (long long)(nz * st->plan_n));
        return CCS_ENOMEM;
    }
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "SELECT pid FROM plans WHERE pid >= ? AND pid < ?", -1, &s,
                           NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "reading the plan table");
    sqlite3_bind_int64(s, 1, rid_of(st->run_id, 0));
    sqlite3_bind_int64(s, 2, rid_of(st->run_id + 1, 0));
    while (sqlite3_step(s) == SQLITE_ROW) {
        int64_t bit = sqlite3_column_int64(s, 0) & RID_MASK;
        if (bit >= 0 && (size_t)(bit / 8) < st->n_seen)
            st->seen[bit / 8] |= (unsigned char)(1u << (bit % 8));
    }
    sqlite3_finalize(s);
    return CCS_OK;
}

/* Insert (if absent) and look up the model and hardware rows of the run. */
static int map_entries(ccs_store *st, ccs_err *err)
{
    const ccs_spec *sp = grid_spec(st->g);
    size_t nm = spec_n_models(sp), nh = spec_n_hw(sp), ng = spec_axis_len(sp, SPEC_AX_GEN);
    const double *gens = spec_axis_values(sp, SPEC_AX_GEN);
    const ccs_evolution *ev = spec_evolution(sp);
    st->model_id = calloc(nm, sizeof *st->model_id);
    st->hw_id = calloc(nh * ng, sizeof *st->hw_id);
    if (!st->model_id || !st->hw_id) {
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    sqlite3_stmt *im, *ih, *qm, *qh;
    int rc = CCS_OK;
    if (sqlite3_prepare_v2(st->db,
                           "INSERT OR IGNORE INTO models (run_id, name, layers, hidden, heads, "
                           "kv_heads, ffn, vocab, max_pos, seq, gbs, gated, bias, tied, params, "
                           "experts, top_k, shared_experts, moe_ffn) "
                           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &im, NULL) ||
        sqlite3_prepare_v2(st->db,
                           "INSERT OR IGNORE INTO hardware (run_id, name, generation, evolution, "
                           "devices_per_node, compute_units, peak_fp32, peak_tf32, peak_bf16, "
                           "peak_fp16, peak_fp8, mem_cap, mem_bw, intra_bw, inter_bw, intra_lat, "
                           "inter_lat, kernel_lat, gemm_eff, mem_eff, intra_eff, inter_eff, "
                           "variability, calibration) VALUES "
                           "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &ih, NULL) ||
        sqlite3_prepare_v2(st->db, "SELECT model_id FROM models WHERE run_id = ? AND name = ?", -1,
                           &qm, NULL) ||
        sqlite3_prepare_v2(st->db,
                           "SELECT hw_id FROM hardware WHERE run_id = ? AND name = ? "
                           "AND generation = ?",
                           -1, &qh, NULL))
        return sti_fail_db(st, err, "recording models and hardware");
    for (size_t i = 0; rc == CCS_OK && i < nm; i++) {
        const ccs_model *m = spec_model(sp, i);
        const int64_t iv[] = {m->layers,  m->hidden, m->heads, m->kv_heads, m->ffn,  m->vocab,
                              m->max_pos, m->seq,    m->gbs,   m->gated,    m->bias, m->tied};
        sqlite3_bind_int64(im, 1, st->run_id);
        sqlite3_bind_text(im, 2, m->name, -1, SQLITE_STATIC);
        for (int k = 0; k < 12; k++)
            sqlite3_bind_int64(im, 3 + k, iv[k]);
        sqlite3_bind_double(im, 15, model_params(m));
        const int64_t moe[] = {m->experts, m->top_k, m->shared_experts, m->moe_ffn};
        for (int k = 0; k < 4; k++)
            sqlite3_bind_int64(im, 16 + k, moe[k]);
        rc = sti_step_done(st, im, err, "recording models");
        sqlite3_bind_int64(qm, 1, st->run_id);
        sqlite3_bind_text(qm, 2, m->name, -1, SQLITE_STATIC);
        if (rc == CCS_OK && sqlite3_step(qm) == SQLITE_ROW)
            st->model_id[i] = sqlite3_column_int64(qm, 0);
        else
            rc = sti_fail_db(st, err, "looking up models");
        sqlite3_reset(qm);
    }
    for (size_t h = 0; rc == CCS_OK && h < nh; h++) {
        for (size_t j = 0; rc == CCS_OK && j < ng; j++) {
            const ccs_hw *w = grid_hw(st->g, (int)h, (int)j);
            sqlite3_bind_int64(ih, 1, st->run_id);
            sqlite3_bind_text(ih, 2, w->name, -1, SQLITE_STATIC);
            sqlite3_bind_int(ih, 3, (int)gens[j]);
            bind_text_or_null(ih, 4, gens[j] > 0 && ev ? ev->name : NULL);
            sqlite3_bind_int(ih, 5, w->devices_per_node);
            sqlite3_bind_int(ih, 6, w->compute_units);
            for (int d = 0; d < CCS_DTYPE_N; d++)
                sqlite3_bind_double(ih, 7 + d, w->peak_flops[d]);
            const double dv[] = {w->mem_cap,   w->mem_bw,    w->intra_bw,   w->inter_bw,
                                 w->intra_lat, w->inter_lat, w->kernel_lat, w->gemm_eff,
                                 w->mem_eff,   w->intra_eff, w->inter_eff,  w->variability};
            for (int k = 0; k < 12; k++)
                sqlite3_bind_double(ih, 12 + k, dv[k]);
            bind_text_or_null(ih, 24, spec_calibration(sp, h));
            rc = sti_step_done(st, ih, err, "recording hardware");
            sqlite3_bind_int64(qh, 1, st->run_id);
            sqlite3_bind_text(qh, 2, w->name, -1, SQLITE_STATIC);
            sqlite3_bind_int(qh, 3, (int)gens[j]);
            if (rc == CCS_OK && sqlite3_step(qh) == SQLITE_ROW)
                st->hw_id[h * ng + j] = sqlite3_column_int64(qh, 0);
            else if (rc == CCS_OK)
                rc = sti_fail_db(st, err, "looking up hardware");
            sqlite3_reset(qh);
        }
    }
    sqlite3_finalize(im);
    sqlite3_finalize(ih);
    sqlite3_finalize(qm);
    sqlite3_finalize(qh);
    if (rc == CCS_OK)
        rc = record_op_sources(st, err);
    return rc ? rc : map_cells(st, err);
}

static int push_range(ccs_store *st, int64_t lo, int64_t hi)
{
    if (ccs_grow((void **)&st->todo, &st->cap_todo, st->n_todo + 1, sizeof *st->todo))
        return CCS_ENOMEM;
    st->todo[st->n_todo].lo = lo;
    st->todo[st->n_todo].hi = hi;
    st->n_todo++;
    return CCS_OK;
}

/* The gaps between committed chunks are still to do; rows committed inside a
 * gap (a chunk cut short by a signal or a crash) are removed so that every
 * index ends with exactly one row. todo is replaced. */
int sti_compute_todo(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    st->n_todo = 0;
    int64_t pos = 0, total = grid_count(st->g);
    if (sqlite3_prepare_v2(st->db, "SELECT lo, hi FROM chunks WHERE run_id = ? ORDER BY lo", -1, &s,
                           NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "reading completed chunks");
    sqlite3_bind_int64(s, 1, st->run_id);
    int r, rc = CCS_OK;
    while (rc == CCS_OK && (r = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t lo = sqlite3_column_int64(s, 0), hi = sqlite3_column_int64(s, 1);
        if (lo > pos)
            rc = push_range(st, pos, lo);
        if (hi > pos)
            pos = hi;
    }
    sqlite3_finalize(s);
    if (rc == CCS_OK && pos < total)
        rc = push_range(st, pos, total);
    if (rc) {
        ccs_err_set(err, "out of memory");
        return rc;
    }
    /* the committed counts of the run drop by what is removed */
    sqlite3_stmt *cnt, *del, *delrg;
    int64_t gone[3] = {0, 0, 0};
    if (sqlite3_prepare_v2(st->db,
                           "SELECT sr & 3, count(*) FROM result_rows WHERE rid >= ? AND rid < ? "
                           "GROUP BY 1",
                           -1, &cnt, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "clearing partial chunks");
    if (sqlite3_prepare_v2(st->db, "DELETE FROM result_rows WHERE rid >= ? AND rid < ?", -1, &del,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, "DELETE FROM region_rows WHERE rid >= ? AND rid < ?", -1, &delrg,
                           NULL) != SQLITE_OK) {
        sqlite3_finalize(cnt);
        sqlite3_finalize(del);
        return sti_fail_db(st, err, "clearing partial chunks");
    }
    for (size_t i = 0; rc == CCS_OK && i < st->n_todo; i++) {
        int64_t lo = rid_of(st->run_id, st->todo[i].lo), hi = rid_of(st->run_id, st->todo[i].hi);
        sqlite3_bind_int64(cnt, 1, lo);
        sqlite3_bind_int64(cnt, 2, hi);
        while (sqlite3_step(cnt) == SQLITE_ROW) {
            int k = sqlite3_column_int(cnt, 0);
            if (k >= 0 && k < 3)
                gone[k] += sqlite3_column_int64(cnt, 1);
        }
        sqlite3_reset(cnt);
        sqlite3_bind_int64(del, 1, lo);
        sqlite3_bind_int64(del, 2, hi);
        rc = sti_step_done(st, del, err, "clearing partial chunks");
        if (rc == CCS_OK) {
            sqlite3_bind_int64(delrg, 1, lo);
            sqlite3_bind_int64(delrg, 2, hi);
            rc = sti_step_done(st, delrg, err, "clearing partial chunks");
        }
    }
    sqlite3_finalize(cnt);
    sqlite3_finalize(del);
    sqlite3_finalize(delrg);
    if (rc == CCS_OK && gone[0] + gone[1] + gone[2] > 0) {
        char sql[384];
        snprintf(sql, sizeof sql,
                 "UPDATE runs SET n_rows = n_rows - %lld, n_ok = n_ok - %lld, n_invalid = "
                 "n_invalid - %lld, n_oom = n_oom - %lld, n_filtered = max(n_done - n_rows + "
                 "%lld, 0) WHERE run_id = %lld",
                 (long long)(gone[0] + gone[1] + gone[2]), (long long)gone[CCS_ST_OK],
                 (long long)gone[CCS_ST_INVALID], (long long)gone[CCS_ST_OOM],
                 (long long)(gone[0] + gone[1] + gone[2]), (long long)st->run_id);
        rc = sti_exec(st, sql, err);
    }
    return rc;
}

/* The committed counts of the run, kept up to date by every commit (no
 * count over the table). */
int sti_count_rows(ccs_store *st, int64_t run_id, store_counts *c, ccs_err *err)
{
    sqlite3_stmt *s;
    memset(c, 0, sizeof *c);
    if (sqlite3_prepare_v2(
            st->db, "SELECT n_done, n_rows, n_ok, n_invalid, n_oom FROM runs WHERE run_id = ?", -1,
            &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "counting rows");
    sqlite3_bind_int64(s, 1, run_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        c->done = sqlite3_column_int64(s, 0);
        c->rows = sqlite3_column_int64(s, 1);
        c->ok = sqlite3_column_int64(s, 2);
        c->invalid = sqlite3_column_int64(s, 3);
        c->oom = sqlite3_column_int64(s, 4);
    }
    sqlite3_finalize(s);
    /* rows of chunks recorded only when done (keep: rules, or a file written
     * by an earlier ccsweep) may be committed before their chunk (they are
     * redone on resume), so rows can exceed the scenarios counted as done */
    c->filtered = c->done > c->rows ? c->done - c->rows : 0;
    return CCS_OK;
}

/* Latest unfinished run: of this spec, or (to refuse) of another. */
int sti_find_resume(ccs_store *st, const char *sha, int64_t *run_id, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT run_id, spec_sha256, status, name, total FROM runs "
                           "ORDER BY run_id DESC",
                           -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "looking for a run to resume");
    int64_t same_open = 0, other_open = 0, same_done = 0;
    char other_sha[65] = "", other_name[128] = "";
    while (sqlite3_step(s) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        const char *h = (const char *)sqlite3_column_text(s, 1);
        const char *status = (const char *)sqlite3_column_text(s, 2);
        int same = h && !strcmp(h, sha), done = status && !strcmp(status, "complete");
        if (same && !done && !same_open)
            same_open = id;
        else if (same && done && !same_done)
            same_done = id;
        else if (!same && !done && !other_open) {
            other_open = id;
            ccs_strlcpy(other_sha, h ? h : "", sizeof other_sha);
            const char *nm = (const char *)sqlite3_column_text(s, 3);
            ccs_strlcpy(other_name, nm ? nm : "", sizeof other_name);
        }
    }
    sqlite3_finalize(s);
    if (same_open) {
        *run_id = same_open;
        return STORE_RESUMED;
    }
    if (other_open) {
        ccs_err_set(err,
                    "%s: --resume: the latest unfinished run (%lld, '%s') was started from "
                    "a different spec (sha256 %.12s..., this spec %.12s...); resume it with its "
                    "own spec, or run without --resume to start a new run",
                    st->path, (long long)other_open, other_name, other_sha, sha);
        return CCS_EINPUT;
    }
    if (same_done) {
        *run_id = same_done;
        return STORE_NOTHING;
    }
    return STORE_NEW;
}

/* PRAGMA quick_check before anything is appended: rows added to a damaged
 * file could not be read back reliably. */
int sti_check_integrity(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "PRAGMA quick_check(1)", -1, &s, NULL) != SQLITE_OK) {
        ccs_err_set(err,
                    "%s: the database is damaged (%s); nothing was appended: give another "
                    "--db (sqlite3's .recover can salvage rows into a new file)",
                    st->path, sqlite3_errmsg(st->db));
        return CCS_EINPUT;
    }
    int r = sqlite3_step(s);
    const char *msg = r == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    int ok = msg && !strcmp(msg, "ok");
    if (!ok)
        ccs_err_set(err,
                    "%s: the database is damaged: PRAGMA quick_check says: %.200s; nothing was "
                    "appended: give another --db (sqlite3's .recover can salvage rows into a new "
                    "file)",
                    st->path, msg ? msg : sqlite3_errmsg(st->db));
    sqlite3_finalize(s);
    return ok ? CCS_OK : CCS_EINPUT;
}

/* ---- inputs of a run ------------------------------------------------------------- */

/* Entries are hashed whole, as the bytes of their struct: every field,
 * including any added later, takes part. catalog_parse_model, _hw and
 * _evolution zero an entry before filling it and entries are only copied
 * whole, so padding and the tail of the name are zero and the bytes of one
 * entry are the same in every process of one build (a resume with another
 * build may see a difference and refuse, which is the safe side). */
static void digest_model(const ccs_model *m, char out[65])
{
    sha256_hex(m, sizeof *m, out);
}

static void digest_hw(const ccs_hw *w, char out[65])
{
    sha256_hex(w, sizeof *w, out);
}

static void digest_evolution(const ccs_evolution *e, char out[65])
{
    sha256_hex(e, sizeof *e, out);
}

static void digest_stack(const ccs_stack *s, char out[65])
{
    sha256_hex(s, sizeof *s, out);
}

/* The inputs of this session's grid; a new array of *n entries. */
static sti_input *collect_inputs(const ccs_store *st, size_t *n)
{
    const ccs_spec *sp = grid_spec(st->g);
    size_t nm = spec_n_models(sp), nh = spec_n_hw(sp), ns = spec_n_stacks(sp), k = 0;
    sti_input *v = calloc(nm + 2 * nh + 1 + ns, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < nm; i++, k++) {
        v[k].kind = "model";
        ccs_strlcpy(v[k].name, spec_model(sp, i)->name, sizeof v[k].name);
        digest_model(spec_model(sp, i), v[k].sha);
    }
    for (size_t i = 0; i < nh; i++, k++) {
        v[k].kind = "hardware";
        ccs_strlcpy(v[k].name, spec_hw(sp, i)->name, sizeof v[k].name);
        digest_hw(spec_hw(sp, i), v[k].sha);
        const struct ccs_opmodel *om = spec_opmodel(sp, i);
        if (om) {
            k++;
            v[k].kind = "calibration";
            ccs_strlcpy(v[k].name, spec_hw(sp, i)->name, sizeof v[k].name);
            ccs_strlcpy(v[k].sha, opmodel_sha256(om), sizeof v[k].sha);
        }
    }
    if (spec_evolution(sp)) {
        v[k].kind = "evolution";
        ccs_strlcpy(v[k].name, spec_evolution(sp)->name, sizeof v[k].name);
        digest_evolution(spec_evolution(sp), v[k].sha);
        k++;
    }
    for (size_t i = 0; i < ns; i++, k++) {
        v[k].kind = "stack";
        ccs_strlcpy(v[k].name, spec_stack(sp, i)->name, sizeof v[k].name);
        digest_stack(spec_stack(sp, i), v[k].sha);
    }
    *n = k;
    return v;
}

int sti_record_inputs(ccs_store *st, int64_t run_id, const sti_input *v, size_t n, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO run_inputs VALUES (?, ?, ?, ?)", -1, &s,
                           NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "recording the run's inputs");
    int rc = CCS_OK;
    for (size_t i = 0; rc == CCS_OK && i < n; i++) {
        sqlite3_bind_int64(s, 1, run_id);
        sqlite3_bind_text(s, 2, v[i].kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, v[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, v[i].sha, -1, SQLITE_STATIC);
        rc = sti_step_done(st, s, err, "recording the run's inputs");
    }
    sqlite3_finalize(s);
    return rc;
}

/* Whether run run_id read exactly the inputs v[0..n): 0 yes, 1 no (*at the
 * first difference, *why what differs), or a negative status with err. */
static int inputs_differ(ccs_store *st, int64_t run_id, const sti_input *v, size_t n, size_t *at,
                         const char **why, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT sha256 FROM run_inputs WHERE run_id = ? AND kind = ? AND "
                           "name = ?",
                           -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "reading the run's inputs");
    *why = NULL;
    size_t i;
    for (i = 0; i < n && !*why; i++) {
        sqlite3_bind_int64(s, 1, run_id);
        sqlite3_bind_text(s, 2, v[i].kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, v[i].name, -1, SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_ROW)
            *why = "was not used when the run started";
        else if (strcmp((const char *)sqlite3_column_text(s, 0), v[i].sha))
            *why = "has changed since the run started";
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    *at = i ? i - 1 : 0;
    return *why != NULL;
}

/* A resumed run must read exactly what it read before: the same entries with
 * the same content. Names the first difference. */
int sti_check_inputs(ccs_store *st, int64_t run_id, const sti_input *v, size_t n, ccs_err *err)
{
    size_t i;
    const char *why;
    int d = inputs_differ(st, run_id, v, n, &i, &why, err);
    if (d <= 0)
        return d;
    ccs_err_set(err,
                "%s: --resume: run %lld was computed with other inputs: %s '%s' %s (its "
                "content sha256 differs); resuming would mix old and new results: restore the "
                "%s it used, or run without --resume to start a new run",
                st->path, (long long)run_id, v[i].kind, v[i].name, why,
                strcmp(v[i].kind, "calibration") ? "catalog entry" : "calibration profile");
    return CCS_EINPUT;
}

/* A new run (no --resume, no --new-run) of a training or a serving spec:
 * STORE_DONE_BEFORE, with that run's id in *run_id, when a complete run of the
 * same spec (sha256) read the same inputs, so that the same sweep is not
 * stored twice by accident; else STORE_NEW. */
int sti_find_complete(ccs_store *st, const char *sha, const sti_input *in, size_t n_in,
                      int64_t *run_id, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT run_id FROM runs WHERE spec_sha256 = ? AND status = 'complete' "
                           "ORDER BY run_id DESC",
                           -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "looking for a complete run of the spec");
    sqlite3_bind_text(s, 1, sha, -1, SQLITE_STATIC);
    int rc = STORE_NEW;
    while (rc == STORE_NEW && sqlite3_step(s) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        size_t at;
        const char *why;
        int d = inputs_differ(st, id, in, n_in, &at, &why, err);
        if (d < 0)
            rc = d;
        else if (d == 0) {
            *run_id = id;
            rc = STORE_DONE_BEFORE;
        }
    }
    sqlite3_finalize(s);
    return rc;
}

/* The name of keep.per axis i. */
static const char *axis_name(int id)
{
    return id == SPEC_PER_MODEL ? "model"
           : id == SPEC_PER_HW  ? "hardware"
           : id == EXPR_F_GEN   ? "generation"
                                : expr_field_name(id);
}

/* keep_axes of a new run with keep.aggregate. */
static int record_keep_axes(ccs_store *st, ccs_err *err)
{
    const spec_keep *rule = spec_keep_rule(grid_spec(st->g));
    if (!rule || !rule->n_agg)
        return CCS_OK;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "INSERT INTO keep_axes VALUES (?, ?, ?)", -1, &s, NULL) !=
        SQLITE_OK)
        return sti_fail_db(st, err, "recording the keep axes");
    int rc = CCS_OK;
    for (int i = 0; rc == CCS_OK && i < rule->n_per; i++) {
        sqlite3_bind_int64(s, 1, st->run_id);
        sqlite3_bind_int(s, 2, i);
        sqlite3_bind_text(s, 3, axis_name(rule->per[i]), -1, SQLITE_STATIC);
        rc = sti_step_done(st, s, err, "recording the keep axes");
    }
    sqlite3_finalize(s);
    return rc;
}

static int read_started(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "SELECT started FROM runs WHERE run_id = ?", -1, &s, NULL) !=
        SQLITE_OK)
        return sti_fail_db(st, err, "reading the run");
    sqlite3_bind_int64(s, 1, st->run_id);
    const char *v = sqlite3_step(s) == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    ccs_strlcpy(st->started, v ? v : "", sizeof st->started);
    sqlite3_finalize(s);
    return CCS_OK;
}

/* Before the file is claimed: the grid fits the row ids, the file is intact. */
static int check_run(ccs_store *st, ccs_err *err)
{
    const ccs_grid *g = st->g;
    if (grid_count(g) > (INT64_C(1) << RID_BITS) ||
        grid_plan_tables(g) > (INT64_C(1) << RID_BITS) / st->plan_n) {
        ccs_err_set(err,
                    "%s: the grid has %lld scenarios; a run holds at most 2^%d: split the sweep",
                    spec_path(grid_spec(g)), (long long)grid_count(g), RID_BITS);
        return CCS_EINPUT;
    }
    if (!st->created && sti_check_integrity(st, err))
        return CCS_EINPUT;
    return CCS_OK;
}

/* A resumed run's row running again, its detail the larger of the two. */
static int reopen_run(ccs_store *st, const store_run_info *info, ccs_err *err)
{
    char sql[256];
    char now[32];
    sti_now_iso(now, sizeof now);
    snprintf(sql, sizeof sql,
             "UPDATE runs SET status = 'running', ended = NULL, updated = "
             "'%s', sessions = sessions + 1, detail = max(detail, %d) WHERE run_id = %lld",
             now, info->detail, (long long)st->run_id);
    int rc = sti_exec(st, sql, err);
    if (rc == CCS_OK) {
        snprintf(sql, sizeof sql, "SELECT detail FROM runs WHERE run_id = %lld",
                 (long long)st->run_id);
        st->detail = (int)sti_query_int(st, sql, info->detail);
    }
    return rc;
}

/* In the claim's transaction: a new run (kind STORE_NEW) recorded with its
 * inputs, or the resumed one's inputs (in, n_in) checked and its row reopened;
 * then the writer row names the run and a session row is added. */
static int register_run(ccs_store *st, int kind, const store_run_info *info, const sti_input *in,
                        size_t n_in, ccs_err *err)
{
    int rc = CCS_OK;
    if (kind == STORE_NEW) {
        rc = insert_run(st, info, err);
        if (rc == CCS_OK)
            rc = sti_record_inputs(st, st->run_id, in, n_in, err);
        if (rc == CCS_OK)
            rc = record_keep_axes(st, err);
    }
    if (rc == CCS_OK && st->run_id > RID_MAX_RUN) {
        ccs_err_set(err, "%s: more than %lld runs; use a new --db", st->path,
                    (long long)RID_MAX_RUN);
        rc = CCS_EINPUT;
    }
    if (rc == CCS_OK && kind == STORE_RESUMED)
        rc = sti_check_inputs(st, st->run_id, in, n_in, err);
    if (rc == CCS_OK) {
        char sql[96];
        snprintf(sql, sizeof sql, "UPDATE writer SET run_id = %lld", (long long)st->run_id);
        rc = sti_exec(st, sql, err);
    }
    if (rc == CCS_OK && kind == STORE_RESUMED)
        rc = reopen_run(st, info, err);
    if (rc == CCS_OK)
        rc = sti_insert_session(st, st->run_id, info->ranks, info->argv, err);
    return rc;
}

/* What the writer keeps of the registered run: its start time, the ids of its
 * models, hardware and cells, the ranges to do, the plans stored, the counts. */
static int load_run(ccs_store *st, ccs_err *err)
{
    int rc = read_started(st, err);
    if (rc == CCS_OK)
        rc = map_entries(st, err);
    if (rc == CCS_OK)
        rc = sti_compute_todo(st, err);
    if (rc == CCS_OK)
        rc = load_seen(st, err);
    if (rc == CCS_OK)
        rc = sti_count_rows(st, st->run_id, &st->base, err);
    return rc;
}

/* OPEN -> CLAIMING -> WRITER (or DONE: STORE_NOTHING, STORE_DONE_BEFORE); see
 * store_int.h. */
int store_prepare_run(ccs_store *st, const ccs_grid *g, const store_run_info *info, int mode,
                      ccs_err *err)
{
    assert(assert_store_state(st));
    assert(!st->g && !st->locked); /* OPEN: one run per store */
    st->g = g;
    st->detail = info->detail;
    st->plan_n = grid_plan_n(g);
    int kind = STORE_NEW;
    int rc = check_run(st, err);
    if (rc)
        return rc;
    size_t n_in = 0;
    sti_input *in = collect_inputs(st, &n_in);
    if (!in) {
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    /* A live writer is named at once, from a read: waiting for the write
     * lock first could last until that writer ends (it commits back to back). */
    rc = sti_check_writer(st, err);
    if (rc == CCS_OK)
        rc = sti_begin_claim(st, err);
    if (rc) {
        free(in);
        return rc;
    }
    rc = sti_claim_writer(st, err);
    if (rc == CCS_OK && mode == STORE_MODE_RESUME)
        kind = sti_find_resume(st, spec_sha256(grid_spec(g)), &st->run_id, err);
    else if (rc == CCS_OK && mode == STORE_MODE_NEW)
        kind = sti_find_complete(st, spec_sha256(grid_spec(g)), in, n_in, &st->run_id, err);
    if (rc == CCS_OK && kind < 0)
        rc = kind;
    if (rc == CCS_OK && (kind == STORE_NOTHING || kind == STORE_DONE_BEFORE)) {
        free(in);
        sti_exec(st, "ROLLBACK", NULL);
        return sti_count_rows(st, st->run_id, &st->base, err) ? CCS_EIO : kind;
    }
    if (rc == CCS_OK)
        rc = register_run(st, kind, info, in, n_in, err);
    free(in);
    if (rc == CCS_OK)
        rc = load_run(st, err);
    if (rc != CCS_OK) {
        sti_exec(st, "ROLLBACK", NULL);
        return rc;
    }
    if (sti_exec(st, "COMMIT", err))
        return CCS_EIO;
    sti_writer_claimed(st); /* store_close drops the row */
    rc = sti_prepare_writer(st, err);
    if (rc != CCS_OK)
        return rc;
    assert(assert_store_state(st)); /* WRITER */
    return kind;
}

int64_t store_run_id(const ccs_store *st)
{
    return st->run_id;
}

const char *store_run_started(const ccs_store *st)
{
    return st->started;
}

const store_range *store_todo(const ccs_store *st, size_t *n)
{
    *n = st->n_todo;
    return st->todo;
}

void store_counts_get(const ccs_store *st, store_counts *out)
{
    *out = st->base;
}
