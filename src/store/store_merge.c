/* store_merge.c - shards: one file per writer group (BASE.TAG.runR.wW.shard),
 * merged into the database by rank 0 in one transaction each, then removed.
 * TAG tells databases of one base name apart (a/study.db, b/study.db) when
 * they share a shard directory, so that one run never takes or removes
 * another database's shards. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "store_int.h"
#include "ccsweep/util/buf.h"
#include "ccsweep/util/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directory of database path db ("." for a bare name, "/" for one in
 * the root), into out. */
static void db_dir(const char *db, char *out, size_t n)
{
    const char *slash = strrchr(db, '/');
    snprintf(out, n, "%.*s", slash ? (int)(slash - db) + (slash == db) : 1, slash ? db : ".");
}

/* The database's tag: the first SHARD_TAG_LEN hex digits of the SHA-256 of
 * its absolute path (its directory resolved by realpath, then its base name),
 * the same on every rank and every session that names the same file through
 * the same directories. */
#define SHARD_TAG_LEN 12
static void db_tag(const char *db, char tag[SHARD_TAG_LEN + 1])
{
    char dir[PATH_MAX], abs[PATH_MAX], hex[65];
    const char *slash = strrchr(db, '/');
    const char *base = slash ? slash + 1 : db;
    db_dir(db, dir, sizeof dir);
    int k;
    if (realpath(dir, abs))
        k = snprintf(dir, sizeof dir, "%s/%s", abs, base);
    else
        k = snprintf(dir, sizeof dir, "%s", db); /* unresolvable: the name as given */
    sha256_hex(dir, k < 0 ? 0 : strlen(dir), hex);
    memcpy(tag, hex, SHARD_TAG_LEN);
    tag[SHARD_TAG_LEN] = '\0';
}

int store_shard_path(char *out, size_t n, const char *dir, const char *db, int64_t run_id, int w)
{
    const char *slash = strrchr(db, '/');
    const char *base = slash ? slash + 1 : db;
    char tag[SHARD_TAG_LEN + 1];
    db_tag(db, tag);
    int k;
    if (dir)
        k = snprintf(out, n, "%s/%s.%s.run%lld.w%d.shard", dir, base, tag, (long long)run_id, w);
    else
        k = snprintf(out, n, "%.*s%s.%s.run%lld.w%d.shard", slash ? (int)(slash - db + 1) : 0, db,
                     base, tag, (long long)run_id, w);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

void store_remove_file(const char *path)
{
    char side[PATH_MAX + 8];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* The quoted names of table's columns in schema (main or shard), in order,
 * comma-separated: a new string, or NULL. */
static char *table_cols(ccs_store *st, const char *schema, const char *table)
{
    sqlite3_stmt *s;
    char *cols = NULL;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT group_concat('\"' || name || '\"', ',') FROM "
                           "pragma_table_info(?1, ?2)",
                           -1, &s, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, schema, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        if ((cols = malloc(strlen(v) + 1)))
            strcpy(cols, v);
    }
    sqlite3_finalize(s);
    return cols;
}

enum { COPY_CONFLICT = 1 };

/* Copy the shard's rows of table into this file. fast: when the shard's
 * columns are this file's, in the same order, a plain INSERT ... SELECT *,
 * which SQLite copies record by record without decoding them (its transfer
 * optimisation); it fails with COPY_CONFLICT (statement undone) when a row is
 * there already. Otherwise INSERT OR IGNORE by column name, so that whatever
 * columns the schema has are carried without a change here. */
static int copy_table(ccs_store *st, const char *table, int fast, ccs_err *err)
{
    char *cols = table_cols(st, "main", table), *theirs = table_cols(st, "shard", table);
    int rc = CCS_OK;
    if (!cols || !theirs) {
        rc = sti_fail_db(st, err, "reading the columns to merge");
    } else {
        size_t n = 2 * strlen(cols) + 2 * strlen(table) + 96;
        char *sql = malloc(n);
        if (!sql) {
            ccs_err_set(err, "out of memory");
            rc = CCS_ENOMEM;
        } else {
            if (fast && !strcmp(cols, theirs))
                snprintf(sql, n, "INSERT INTO main.%s SELECT * FROM shard.%s", table, table);
            else
                snprintf(sql, n, "INSERT OR IGNORE INTO main.%s (%s) SELECT %s FROM shard.%s",
                         table, cols, cols, table);
            if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
                rc = sqlite3_errcode(st->db) == SQLITE_CONSTRAINT && fast
                         ? COPY_CONFLICT
                         : sti_fail_db(st, err, "merging a shard");
            free(sql);
        }
    }
    free(cols);
    free(theirs);
    return rc;
}

/* Add what schema holds of the run (the shard's rows) to the run's counts,
 * or with set make them what this file holds. */
static int merge_counts(ccs_store *st, const char *schema, int set, ccs_err *err)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT sr & 3, count(*) FROM %s.result_rows WHERE rid >= %lld AND rid < %lld "
             "GROUP BY 1",
             schema, (long long)rid_of(st->run_id, 0), (long long)rid_of(st->run_id + 1, 0));
    sqlite3_stmt *s;
    int64_t n[3] = {0, 0, 0};
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "counting merged rows");
    while (sqlite3_step(s) == SQLITE_ROW) {
        int k = sqlite3_column_int(s, 0);
        if (k >= 0 && k < 3)
            n[k] = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    snprintf(sql, sizeof sql, "SELECT coalesce(sum(hi - lo), 0) FROM %s.chunks WHERE run_id = %lld",
             schema, (long long)st->run_id);
    int64_t done = sti_query_int(st, sql, 0);
    const char *base = set ? "0" : "";
    const char *had_done = set ? "" : "n_done", *had_rows = set ? "" : "n_rows";
    long long rows = (long long)(n[0] + n[1] + n[2]);
    char now[32], upd[768];
    sti_now_iso(now, sizeof now);
    snprintf(upd, sizeof upd,
             "UPDATE main.runs SET updated = '%s', n_done = %s%s + %lld, n_rows = %s%s + %lld, "
             "n_ok = %s%s + %lld, n_invalid = %s%s + %lld, n_oom = %s%s + %lld, n_filtered = "
             "max(%s%s + %lld - (%s%s + %lld), 0) WHERE run_id = %lld",
             now, base, had_done, (long long)done, base, had_rows, rows, base, set ? "" : "n_ok",
             (long long)n[CCS_ST_OK], base, set ? "" : "n_invalid", (long long)n[CCS_ST_INVALID],
             base, set ? "" : "n_oom", (long long)n[CCS_ST_OOM], base, had_done, (long long)done,
             base, had_rows, rows, (long long)st->run_id);
    return sti_exec(st, upd, err);
}

/* Is the attached shard a part of this run? NULL when it is, else why not. */
static const char *shard_mismatch(ccs_store *st, int *unreadable)
{
    int app = sti_query_int(st, "PRAGMA shard.application_id", -1);
    *unreadable = app != CCS_APP_ID;
    if (app == -1)
        return "it cannot be read as a database";
    if (app != CCS_APP_ID)
        return "not a ccsweep database";
    if (sti_query_int(st, "PRAGMA shard.user_version", -1) != CCS_STORE_SCHEMA)
        return "another schema version";
    sqlite3_stmt *s;
    const char *why = "it holds no row of this run";
    if (sqlite3_prepare_v2(st->db,
                           "SELECT s.spec_sha256 = m.spec_sha256, s.started = m.started FROM "
                           "shard.runs s JOIN main.runs m ON m.run_id = s.run_id WHERE "
                           "s.run_id = ?",
                           -1, &s, NULL) != SQLITE_OK)
        return "it cannot be read";
    sqlite3_bind_int64(s, 1, st->run_id);
    if (sti_query_int(st, "SELECT count(*) FROM shard.runs", -1) != 1)
        why = "it holds no run, or several";
    else if (sqlite3_step(s) == SQLITE_ROW)
        why = !sqlite3_column_int(s, 0)   ? "its run has another spec"
              : !sqlite3_column_int(s, 1) ? "its run has another start time (an earlier file of "
                                            "the same name)"
                                          : NULL;
    sqlite3_finalize(s);
    if (why)
        return why;
    /* the same catalog entries and profiles: then its rows are the ones a
     * recomputation would give, whichever session wrote them */
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM (SELECT kind, name, sha256 FROM shard.run_inputs "
             "WHERE run_id = %lld EXCEPT SELECT kind, name, sha256 FROM main.run_inputs WHERE "
             "run_id = %lld)) + abs((SELECT count(*) FROM main.run_inputs WHERE run_id = %lld) - "
             "(SELECT count(*) FROM shard.run_inputs WHERE run_id = %lld))",
             (long long)st->run_id, (long long)st->run_id, (long long)st->run_id,
             (long long)st->run_id);
    return sti_query_int(st, sql, -1) != 0 ? "its run read other catalog entries or profiles"
                                           : NULL;
}

/* WRITER: a transaction of its own, from BEGIN IMMEDIATE to COMMIT. */
int store_merge_shard(ccs_store *st, const char *path, ccs_err *err)
{
    assert(assert_store_state(st));
    assert(st->g && !st->in_tx);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "ATTACH ? AS shard", -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "attaching a shard");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    if (r != SQLITE_DONE) {
        int code = sqlite3_errcode(st->db);
        ccs_err_set(err, "%s: not a shard of run %lld of %s: it cannot be read as a database (%s)",
                    path, (long long)st->run_id, st->path, sqlite3_errmsg(st->db));
        /* damaged or foreign: reported and left, never deleted */
        return code == SQLITE_NOMEM ? CCS_ENOMEM : STORE_UNREADABLE_SHARD;
    }
    int unreadable;
    const char *why = shard_mismatch(st, &unreadable);
    int rc = CCS_OK;
    if (why) {
        ccs_err_set(err, "%s: not a shard of run %lld of %s: %s", path, (long long)st->run_id,
                    st->path, why);
        rc = unreadable ? STORE_UNREADABLE_SHARD : STORE_STALE_SHARD;
    }
    /* Rows, regions and chunk records are the shard's own (one per index, its
     * writer had the only copy) unless an earlier merge of this shard
     * committed but the shard outlived it: then everything is copied again
     * with OR IGNORE and the counts are recounted. Plans are shared by the
     * writers: always OR IGNORE. */
    static const char *const own[] = {"result_rows", "region_rows", "chunks"};
    int again = 0;
    if (rc == CCS_OK)
        rc = sti_exec(st, "BEGIN IMMEDIATE", err);
    if (rc == CCS_OK)
        rc = sti_exec(st, "SAVEPOINT fast", err);
    for (int i = 0; rc == CCS_OK && i < 3; i++)
        rc = copy_table(st, own[i], 1, err);
    if (rc == COPY_CONFLICT) {
        again = 1;
        rc = sti_exec(st, "ROLLBACK TO fast", err);
        for (int i = 0; rc == CCS_OK && i < 3; i++)
            rc = copy_table(st, own[i], 0, err);
    }
    if (rc == CCS_OK)
        rc = copy_table(st, "plans", 0, err);
    if (rc == CCS_OK)
        rc = copy_table(st, "keep_axes", 0, err);
    /* aggregates add up: merged again, they would count twice */
    if (rc == CCS_OK && !again)
        rc = sti_merge_keep_groups(st, err);
    if (rc == CCS_OK)
        rc = again ? merge_counts(st, "main", 1, err) : merge_counts(st, "shard", 0, err);
    if (rc == CCS_OK)
        rc = sti_exec(st, "RELEASE fast", err);
    if (rc == CCS_OK)
        rc = sti_exec(st, "COMMIT", err);
    if (rc != CCS_OK && rc != STORE_STALE_SHARD && rc != STORE_UNREADABLE_SHARD) {
        int sys = sqlite3_system_errno(st->db);
        if (sqlite3_errcode(st->db) == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT)
            st->full = 1; /* the caller says so, and how to resume */
        if (!sqlite3_get_autocommit(st->db))
            sti_exec(st, "ROLLBACK", NULL);
    }
    sti_exec(st, "DETACH shard", NULL);
    return rc;
}

/* 1 when name is BASE.TAG.runR.wW.shard for this database (tag) and run. */
static int is_shard_name(const char *name, const char *base, const char *tag, int64_t run_id)
{
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s.%s.run%lld.w", base, tag, (long long)run_id);
    size_t np = strlen(prefix), n = strlen(name);
    if (n <= np + 6 || strncmp(name, prefix, np) || strcmp(name + n - 6, ".shard"))
        return 0;
    for (size_t i = np; i < n - 6; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

/* Shard paths of one directory, database and run, in writer order: the
 * names differ only in the writer number, so a shorter one is a smaller one. */
static int by_writer(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t nx = strlen(x), ny = strlen(y);
    return nx != ny ? (nx < ny ? -1 : 1) : strcmp(x, y);
}

/* Test hook: CCSWEEP_TEST_KILL_AFTER_MERGE=N kills this process with SIGKILL
 * right after the N-th shard's merge has committed, before the shard is
 * removed: the half-merged state that a resume must finish. */
static void kill_after_merge(int merged)
{
    const char *v = getenv("CCSWEEP_TEST_KILL_AFTER_MERGE");
    if (v && *v && atoi(v) == merged)
        raise(SIGKILL);
}

int store_absorb_shards(ccs_store *st, const char *dir, const char *db, FILE *log, int *n,
                        ccs_err *err)
{
    assert(assert_store_state(st));
    assert(st->g);
    char d[PATH_MAX];
    const char *slash = strrchr(db, '/');
    const char *base = slash ? slash + 1 : db;
    if (dir)
        ccs_strlcpy(d, dir, sizeof d);
    else
        db_dir(db, d, sizeof d);
    char tag[SHARD_TAG_LEN + 1];
    db_tag(db, tag);
    *n = 0;
    DIR *dp = opendir(d);
    if (!dp) {
        if (errno == ENOENT)
            return CCS_OK;
        ccs_err_set(err, "%s: cannot read the shard directory: %s", d, strerror(errno));
        return CCS_EIO;
    }
    /* names first: the directory changes while shards are removed */
    char **names = NULL;
    size_t k = 0, cap = 0;
    struct dirent *e;
    int rc = CCS_OK;
    while (rc == CCS_OK && (e = readdir(dp))) {
        if (!is_shard_name(e->d_name, base, tag, st->run_id))
            continue;
        if (ccs_grow((void **)&names, &cap, k + 1, sizeof *names)) {
            rc = CCS_ENOMEM;
            break;
        }
        if (!(names[k] = malloc(strlen(d) + strlen(e->d_name) + 2)))
            rc = CCS_ENOMEM;
        else
            sprintf(names[k++], "%s/%s", d, e->d_name);
    }
    closedir(dp);
    if (rc == CCS_ENOMEM)
        ccs_err_set(err, "out of memory");
    else if (k > 1)
        qsort(names, k, sizeof *names, by_writer); /* each merge appends to the previous */
    for (size_t i = 0; rc == CCS_OK && i < k; i++) {
        if (log)
            fprintf(log, "ccsweep: merging shard %s into %s\n", names[i], st->path);
        ccs_err why;
        int r = store_merge_shard(st, names[i], &why);
        if (r == STORE_UNREADABLE_SHARD) {
            /* not ours to judge: a damaged file, or someone else's */
            fprintf(stderr, "ccsweep: %s; left in place, its rows are recomputed\n", why.msg);
            continue;
        } else if (r == STORE_STALE_SHARD) {
            fprintf(stderr, "ccsweep: %s; removed\n", why.msg);
        } else if (r != CCS_OK) {
            *err = why;
            rc = r;
            break;
        } else {
            kill_after_merge(++*n);
        }
        store_remove_file(names[i]);
    }
    for (size_t i = 0; i < k; i++)
        free(names[i]);
    free(names);
    if (rc != CCS_OK || k == 0)
        return rc;
    /* rows of chunks cut short in a shard are removed as they are in the file */
    if (sti_exec(st, "BEGIN IMMEDIATE", err))
        return CCS_EIO;
    st->n_todo = 0;
    if (sti_compute_todo(st, err) || sti_count_rows(st, st->run_id, &st->base, err)) {
        sti_exec(st, "ROLLBACK", NULL);
        return CCS_EIO;
    }
    memset(&st->committed, 0, sizeof st->committed);
    return sti_exec(st, "COMMIT", err);
}
