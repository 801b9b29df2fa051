/* store_query.c - read-only queries on a ccsweep database: open with the
 * schema checks, prepare/bind/step with a row callback, every failure message
 * naming the database and carrying sqlite3_errmsg. */
#include "ccsweep/store/store_query.h"
#include "ccsweep/store/store.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 'ccsw': the application id store.c gives every database it creates. */
#define STOREQ_APP_ID 0x63637377

struct storeq_db {
    sqlite3 *db;
    char *path;
    char *copy; /* a migrated copy read in place of a read-only path, or NULL */
};

struct storeq_row {
    sqlite3_stmt *st;
};

static int64_t pragma_int(sqlite3 *db, const char *sql, int64_t def, int *ok)
{
    sqlite3_stmt *s;
    int64_t v = def;
    *ok = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return def;
    if (sqlite3_step(s) == SQLITE_ROW) {
        v = sqlite3_column_int64(s, 0);
        *ok = 1;
    }
    sqlite3_finalize(s);
    return v;
}

/* Open q->path (its migrated copy, once made) read-only into q->db; *rc and
 * err on failure. */
static int open_ro(storeq_db *q, int *rc, ccs_err *err)
{
    if (sqlite3_open_v2(q->copy ? q->copy : q->path, &q->db,
                        SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        ccs_err_set(err, "%s: cannot open: %s", q->path,
                    q->db ? sqlite3_errmsg(q->db) : "out of memory");
        *rc = q->db ? CCS_EINPUT : CCS_ENOMEM;
        return -1;
    }
    /* a sweep may be writing (WAL): wait for its checkpoints rather than fail */
    sqlite3_busy_timeout(q->db, 10000);
    return 0;
}

/* q->path, of schema version ver, cannot be written: copy it (SQLite's backup
 * API, which reads a consistent snapshot) to a new file in $TMPDIR (q->copy,
 * removed by storeq_close) and migrate the copy, so that the file itself is
 * never written. CCS_OK, or a status with err saying what to do. */
static int migrate_copy(storeq_db *q, int64_t ver, ccs_err *err)
{
    const char *tmp = getenv("TMPDIR");
    size_t n = strlen(tmp && *tmp ? tmp : "/tmp") + 32;
    if (!(q->copy = malloc(n))) {
        ccs_err_set(err, "%s: out of memory", q->path);
        return CCS_ENOMEM;
    }
    snprintf(q->copy, n, "%s/ccsweep-migrate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(q->copy);
    sqlite3 *dst = NULL;
    int rc = fd < 0 ? SQLITE_CANTOPEN : SQLITE_OK;
    if (fd >= 0)
        close(fd);
    if (rc == SQLITE_OK)
        rc = sqlite3_open_v2(q->copy, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    sqlite3_backup *b = rc == SQLITE_OK ? sqlite3_backup_init(dst, "main", q->db, "main") : NULL;
    if (b) {
        rc = sqlite3_backup_step(b, -1);
        rc = sqlite3_backup_finish(b) == SQLITE_OK && rc == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    } else if (rc == SQLITE_OK) {
        rc = SQLITE_ERROR;
    }
    char why[256];
    ccs_strlcpy(why,
                fd < 0 ? strerror(errno)
                : dst  ? sqlite3_errmsg(dst)
                       : "out of memory",
                sizeof why);
    sqlite3_close(dst);
    sqlite3_close(q->db);
    q->db = NULL;
    if (rc != SQLITE_OK) {
        ccs_err_set(err,
                    "%s: read-only, and of schema version %lld, which this ccsweep reads once "
                    "migrated to version %d; copying it to migrate the copy failed (%s: %s): "
                    "make the file and its directory writable (it is then migrated in place), "
                    "or set TMPDIR to a directory with room for a copy",
                    q->path, (long long)ver, CCS_STORE_SCHEMA, q->copy, why);
        return CCS_EIO;
    }
    return store_upgrade(q->copy, err);
}

storeq_db *storeq_open(const char *path, int *rc, ccs_err *err)
{
    struct stat sb;
    *rc = CCS_EINPUT;
    if (stat(path, &sb) != 0) {
        ccs_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        ccs_err_set(err, "%s: not a ccsweep database (not a regular file)", path);
        return NULL;
    }
    storeq_db *q = calloc(1, sizeof *q);
    size_t n = strlen(path) + 1;
    if (!q || !(q->path = malloc(n))) {
        free(q);
        ccs_err_set(err, "%s: out of memory", path);
        *rc = CCS_ENOMEM;
        return NULL;
    }
    memcpy(q->path, path, n);
    if (open_ro(q, rc, err)) {
        storeq_close(q);
        return NULL;
    }
    int ok_app, ok_ver;
    int64_t app = pragma_int(q->db, "PRAGMA application_id", -1, &ok_app);
    int64_t ver = pragma_int(q->db, "PRAGMA user_version", -1, &ok_ver);
    if (!ok_app || !ok_ver) {
        /* "file is not a database" shows up here */
        ccs_err_set(err, "%s: not a ccsweep database: %s", path, sqlite3_errmsg(q->db));
        storeq_close(q);
        return NULL;
    }
    if (app != STOREQ_APP_ID) {
        ccs_err_set(err,
                    "%s: not a ccsweep database (an SQLite file without ccsweep's "
                    "application id; 'ccsweep run SPEC --db %s' creates one)",
                    path, path);
        storeq_close(q);
        return NULL;
    }
    if (ver >= CCS_STORE_MIGRATE_FROM && ver < CCS_STORE_SCHEMA) {
        /* an older schema store_open migrates: once, in place, then read as
         * this version (the migration only adds columns and views); a file
         * that cannot be written is read through a migrated copy */
        int ro = !store_writable(path);
        if (!ro) {
            sqlite3_close(q->db);
            q->db = NULL;
        }
        int urc = ro ? migrate_copy(q, ver, err) : store_upgrade(path, err);
        if (ro && urc == CCS_OK)
            fprintf(stderr,
                    "ccsweep: %s is read-only, of schema version %lld: reading a migrated copy "
                    "(schema version %d), the file is left as it is\n",
                    path, (long long)ver, CCS_STORE_SCHEMA);
        if (urc != CCS_OK || open_ro(q, rc, err)) {
            if (urc != CCS_OK)
                *rc = urc;
            storeq_close(q);
            return NULL;
        }
        ver = pragma_int(q->db, "PRAGMA user_version", -1, &ok_ver);
    }
    if (ver != CCS_STORE_SCHEMA) {
        ccs_err_set(err,
                    "%s: database schema version %lld, but this ccsweep %s reads version "
                    "%d (and migrates versions %d to %d)",
                    path, (long long)ver, CCS_VERSION, CCS_STORE_SCHEMA, CCS_STORE_MIGRATE_FROM,
                    CCS_STORE_SCHEMA - 1);
        storeq_close(q);
        return NULL;
    }
    *rc = CCS_OK;
    return q;
}

void storeq_close(storeq_db *q)
{
    if (!q)
        return;
    sqlite3_close(q->db);
    if (q->copy)
        store_remove_file(q->copy);
    free(q->copy);
    free(q->path);
    free(q);
}

const char *storeq_path(const storeq_db *q)
{
    return q->path;
}

static int bind_params(storeq_db *q, sqlite3_stmt *st, const storeq_param *p, size_t n,
                       ccs_err *err)
{
    for (size_t k = 0; k < n; k++) {
        int i = p[k].name ? sqlite3_bind_parameter_index(st, p[k].name) : (int)k + 1;
        if (i <= 0 || i > sqlite3_bind_parameter_count(st))
            continue; /* not used by this statement */
        int r;
        switch (p[k].type) {
        case STOREQ_INT:
            r = sqlite3_bind_int64(st, i, p[k].i);
            break;
        case STOREQ_REAL:
            r = sqlite3_bind_double(st, i, p[k].d);
            break;
        case STOREQ_TEXT:
            r = sqlite3_bind_text(st, i, p[k].s, -1, SQLITE_TRANSIENT);
            break;
        default:
            r = sqlite3_bind_null(st, i);
            break;
        }
        if (r != SQLITE_OK) {
            ccs_err_set(err, "%s: binding parameter %s: %s", q->path, p[k].name ? p[k].name : "?",
                        sqlite3_errmsg(q->db));
            return CCS_EIO;
        }
    }
    return CCS_OK;
}

int storeq_exec(storeq_db *q, const char *sql, const storeq_param *params, size_t n_params,
                storeq_row_fn fn, void *ctx, ccs_err *err)
{
    const char *rest = sql;
    while (rest && *rest) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        if (sqlite3_prepare_v2(q->db, rest, -1, &st, &tail) != SQLITE_OK) {
            ccs_err_set(err, "%s: %s", q->path, sqlite3_errmsg(q->db));
            return CCS_EIO;
        }
        rest = tail;
        if (!st)
            continue; /* only comments or white space left */
        if (bind_params(q, st, params, n_params, err)) {
            sqlite3_finalize(st);
            return CCS_EIO;
        }
        storeq_row row = {st};
        int r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
            int stop = fn ? fn(ctx, &row) : 0;
            if (stop) {
                sqlite3_finalize(st);
                return stop;
            }
        }
        if (r != SQLITE_DONE) {
            ccs_err_set(err, "%s: %s", q->path, sqlite3_errmsg(q->db));
            sqlite3_finalize(st);
            return CCS_EIO;
        }
        sqlite3_finalize(st);
    }
    return CCS_OK;
}

int storeq_ncols(const storeq_row *row)
{
    return sqlite3_column_count(row->st);
}

const char *storeq_colname(const storeq_row *row, int i)
{
    return sqlite3_column_name(row->st, i);
}

int storeq_type(const storeq_row *row, int i)
{
    switch (sqlite3_column_type(row->st, i)) {
    case SQLITE_INTEGER:
        return STOREQ_INT;
    case SQLITE_FLOAT:
        return STOREQ_REAL;
    case SQLITE_NULL:
        return STOREQ_NULL;
    default:
        return STOREQ_TEXT;
    }
}

double storeq_double(const storeq_row *row, int i)
{
    if (sqlite3_column_type(row->st, i) == SQLITE_NULL)
        return NAN;
    return sqlite3_column_double(row->st, i);
}

int64_t storeq_int(const storeq_row *row, int i)
{
    return sqlite3_column_int64(row->st, i);
}

const char *storeq_text(const storeq_row *row, int i)
{
    if (sqlite3_column_type(row->st, i) == SQLITE_NULL)
        return NULL;
    return (const char *)sqlite3_column_text(row->st, i);
}
