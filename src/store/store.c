/* store.c - open and close a ccsweep database, and the helpers every store
 * file uses. Write pattern after sqlite's test/speedtest1.c: BEGIN, prepared
 * statement, bind/step/reset per row, COMMIT; every failure message carries
 * sqlite3_errmsg. The files of the store and its states: store_int.h. */
#include "store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sti_fail_db(ccs_store *st, ccs_err *err, const char *what)
{
    ccs_err_set(err, "%s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
    return CCS_EIO;
}

int sti_exec(ccs_store *st, const char *sql, ccs_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        ccs_err_set(err, "%s: %s", st->path, msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        return CCS_EIO;
    }
    return CCS_OK;
}

int64_t sti_query_int(ccs_store *st, const char *sql, int64_t def)
{
    sqlite3_stmt *s;
    int64_t v = def;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return def;
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

void sti_now_iso(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int sti_step_done(ccs_store *st, sqlite3_stmt *s, ccs_err *err, const char *what)
{
    int r = sqlite3_step(s);
    sqlite3_reset(s);
    if (r != SQLITE_DONE && r != SQLITE_ROW)
        return sti_fail_db(st, err, what);
    return CCS_OK;
}

static int make_parent(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    struct stat sb;
    if (stat(dir, &sb) == 0)
        return 0;
    return mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/* What the existing path is when it is not a regular file, or NULL (also when
 * it does not exist yet: SQLite creates it). SQLite would open a device and
 * fail later, after creating PATH-journal beside it. */
static const char *not_regular(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode))
        return NULL;
    return S_ISDIR(sb.st_mode)    ? "a directory"
           : S_ISCHR(sb.st_mode)  ? "a character device"
           : S_ISBLK(sb.st_mode)  ? "a block device"
           : S_ISFIFO(sb.st_mode) ? "a FIFO"
           : S_ISSOCK(sb.st_mode) ? "a socket"
                                  : "not a regular file";
}

int store_writable(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return access(path, W_OK) == 0 && access(dir, W_OK) == 0;
}

/* 1 when the file has tables already (a between() test of sti_begin_polling). */
static int schema_exists(ccs_store *st, ccs_err *err)
{
    (void)err;
    return sti_query_int(st, "SELECT count(*) FROM sqlite_schema", -1) > 0;
}

/* PRAGMA journal_mode = WAL, again after short waits while it answers
 * SQLITE_BUSY: another process's checkpoint can make it fail at once, without
 * the busy handler (seen when a second sweep opens a file the first one is
 * writing, which must then be refused by the writer lock, not by this). */
static int wal_mode(ccs_store *st, ccs_err *err)
{
    for (int tries = 0;; tries++) {
        int r = sqlite3_exec(st->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
        if (r == SQLITE_OK)
            return CCS_OK;
        if ((r & 0xff) != SQLITE_BUSY || tries >= 100)
            return sti_exec(st, "PRAGMA journal_mode = WAL", err);
        struct timespec d = {0, 50 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
}

/* After each commit in WAL mode (sqlite3_wal_hook): a passive checkpoint
 * once the WAL holds at least CCS_STORE_WAL_MIN_PAGES pages and
 * 1/CCS_STORE_WAL_SHARE of the database file's pages (see store_open). */
static int wal_hook(void *ctx, sqlite3 *db, const char *name, int pages)
{
    const ccs_store *st = ctx;
    if (pages < CCS_STORE_WAL_MIN_PAGES)
        return SQLITE_OK;
    struct stat sb;
    sqlite3_int64 file_pages = 0;
    if (stat(st->path, &sb) == 0)
        file_pages = (sqlite3_int64)sb.st_size / st->page_size;
    if (CCS_STORE_WAL_SHARE * (sqlite3_int64)pages >= file_pages)
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

ccs_store *store_open(const char *path, int locking, int *rc, ccs_err *err)
{
    const char *what = not_regular(path);
    if (what) {
        ccs_err_set(err,
                    "%s: is %s, not a database file: give a --db path of a regular file, "
                    "or of one to create",
                    path, what);
        *rc = CCS_EINPUT;
        return NULL;
    }
    ccs_store *st = calloc(1, sizeof *st);
    *rc = CCS_EIO;
    if (!st) {
        ccs_err_set(err, "%s: out of memory", path);
        *rc = CCS_ENOMEM;
        return NULL;
    }
    ccs_strlcpy(st->path, path, sizeof st->path);
    if (make_parent(path)) {
        ccs_err_set(err, "%s: cannot create its directory: %s", path, strerror(errno));
        free(st);
        return NULL;
    }
    const char *vfs = locking == STORE_LOCK_NONE ? "unix-none" : NULL;
    if (sqlite3_open_v2(path, &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        vfs) != SQLITE_OK) {
        ccs_err_set(err, "%s: cannot open: %s", path,
                    st->db ? sqlite3_errmsg(st->db) : "out of memory");
        store_close(st);
        return NULL;
    }
    /* SQLite opens a file it may not write read-only, and fails at the first
     * write ("attempt to write a readonly database"); a directory it may not
     * write fails at the journal ("unable to open database file") */
    if (sqlite3_db_readonly(st->db, "main") == 1 || !store_writable(path)) {
        ccs_err_set(err,
                    "%s: read-only (its permissions, its directory's or its filesystem's): a "
                    "run writes into its --db file, and SQLite creates its -wal and -shm "
                    "files beside it: give a writable file (or copy this one somewhere "
                    "writable)",
                    path);
        *rc = CCS_EINPUT;
        store_close(st);
        return NULL;
    }
    sqlite3_busy_timeout(st->db, 10000);
    /* Closing the last connection of a WAL file checkpoints it and deletes
     * the WAL: not while another process holds the writer row, which may
     * take no locks (--db-locking none) and keep appending to that WAL (a
     * process it refused would delete it under it). store_close allows it
     * once no writer row is left. */
    sqlite3_db_config(st->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    /* A small fixed page cache (2 MiB, about SQLite's default) keeps the
     * writer's memory independent of the database size: inserts append to the
     * table and to the (run_id, idx) index, so a larger cache measured no
     * faster, while it would fill (and grow RSS) only on large sweeps. */
    /* Checkpoints copy the WAL into the file and sync both: SQLite's default
     * of one per 1000 pages (4 MiB) of WAL made them a sixth of the writer's
     * time, while a fixed large threshold let the WAL grow as large as the
     * file itself (a sweep needed twice its final size on disk). wal_hook
     * checkpoints once the WAL reaches a sixteenth of the file (and 4 MiB):
     * the WAL file, which SQLite reuses from its start after a checkpoint
     * rather than shrinks, stays within about a sixteenth of the database
     * plus one batch, so a sweep needs about 1.06x its final size on disk
     * (1.2x with a quarter); each checkpoint copies what was written since
     * the last, so their cost stays proportional to the writes (default.yaml
     * on 2 ranks: the writer thread's CPU time as with a quarter, within the
     * noise). A run's remainder is checkpointed when the file closes.
     * Commits stay as durable as before (synchronous = NORMAL: a commit in
     * the WAL survives a crash of the process; a power loss can lose the
     * latest ones, never corrupt the file). */
    /* The locking mode first: any statement that reads the schema (cache_size
     * does) opens the WAL, which without locks (unix-none) needs the
     * exclusive mode already set (its index then lives in this process). */
    if ((locking != STORE_LOCK_NORMAL && sti_exec(st, "PRAGMA locking_mode = EXCLUSIVE", err)) ||
        sti_exec(st, "PRAGMA cache_size = -2048", err) || wal_mode(st, err) ||
        sti_exec(st, "PRAGMA synchronous = NORMAL", err)) {
        /* "file is not a database" shows up here */
        *rc = CCS_EINPUT;
        store_close(st);
        return NULL;
    }
    st->page_size = sti_query_int(st, "PRAGMA page_size", 4096);
    if (st->page_size <= 0)
        st->page_size = 4096;
    sqlite3_wal_hook(st->db, wal_hook, st);
    /* Look and create in one write transaction: of two processes creating
     * the same new file, the second sees the first one's schema. A file that
     * already has tables is only read here: a write transaction would wait
     * behind a running sweep, which commits back to back. */
    int write_tx = !schema_exists(st, err);
    if (write_tx) {
        /* short waits: when another process created the schema meanwhile,
         * only read, as above (it may be sweeping already) */
        int r = sti_begin_polling(st, "creating the schema", schema_exists, err);
        if (r < 0)
            goto fail;
        write_tx = r == CCS_OK;
    }
    int64_t ver = sti_query_int(st, "PRAGMA user_version", -1);
    int64_t app = sti_query_int(st, "PRAGMA application_id", -1);
    int64_t tables = sti_query_int(st, "SELECT count(*) FROM sqlite_schema", -1);
    if (ver == 0 && tables == 0) {
        char pragma[96];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d; PRAGMA application_id = %d;",
                 CCS_STORE_SCHEMA, CCS_APP_ID);
        if (sti_create_schema(st, err) || sti_fill_lookups(st, err) || sti_exec(st, pragma, err))
            goto fail;
        st->created = 1;
    } else if (app != CCS_APP_ID) {
        ccs_err_set(err, "%s: not a ccsweep database (it has other tables); give another --db",
                    path);
        *rc = CCS_EINPUT;
        goto fail;
    } else if (ver >= CCS_STORE_MIGRATE_FROM && ver < CCS_STORE_SCHEMA && !write_tx) {
        int mrc = sti_migrate(st, ver, err);
        if (mrc != CCS_OK) {
            char why[sizeof err->msg];
            ccs_strlcpy(why, err->msg, sizeof why);
            ccs_err_set(err,
                        "%s: cannot migrate the database from schema version %lld to %d "
                        "(nothing was changed): %s",
                        path, (long long)ver, CCS_STORE_SCHEMA, why);
            *rc = mrc == CCS_EINPUT ? CCS_EINPUT : CCS_EIO;
            goto fail;
        }
    } else if (ver != CCS_STORE_SCHEMA) {
        ccs_err_set(err,
                    "%s: database schema version %lld, but this ccsweep %s reads version "
                    "%d (and migrates versions %d to %d); use a new --db file",
                    path, (long long)ver, CCS_VERSION, CCS_STORE_SCHEMA, CCS_STORE_MIGRATE_FROM,
                    CCS_STORE_SCHEMA - 1);
        *rc = CCS_EINPUT;
        goto fail;
    }
    if (write_tx && sti_exec(st, "COMMIT", err))
        goto fail;
    assert(assert_store_state(st)); /* OPEN */
    *rc = CCS_OK;
    return st;
fail:
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    store_close(st);
    return NULL;
}

int store_upgrade(const char *path, ccs_err *err)
{
    int rc;
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, err);
    store_close(st);
    return rc;
}

int store_writer_holds(const char *path, ccs_err *err)
{
    ccs_store st;
    memset(&st, 0, sizeof st);
    ccs_strlcpy(st.path, path, sizeof st.path);
    if (sqlite3_open_v2(path, &st.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        sqlite3_close(st.db);
        return 0;
    }
    sqlite3_busy_timeout(st.db, 1000);
    int held = 0;
    /* a few reads: a lock-free writer's pages can read torn for a moment */
    for (int tries = 0; tries < 10 && !held; tries++) {
        ccs_err e;
        int rc = sti_check_writer(&st, &e);
        if (rc == CCS_OK)
            break;
        if (rc == CCS_EINPUT) {
            held = 1;
            *err = e;
        } else {
            struct timespec d = {0, 50 * 1000 * 1000};
            nanosleep(&d, NULL);
        }
    }
    sqlite3_close(st.db);
    return held;
}

void store_close(ccs_store *st)
{
    if (!st)
        return;
    assert(!st->db || assert_store_state(st));
    if (st->db && !sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    sti_release_writer(st);
    /* the checkpoint on close (see store_open), unless a writer is there */
    if (st->db && sti_query_int(st, "SELECT count(*) FROM writer", 1) == 0)
        sqlite3_db_config(st->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, NULL);
    sqlite3_finalize(st->ins);
    sqlite3_finalize(st->ins_many);
    sqlite3_finalize(st->put_group);
    free(st->pend);
    sqlite3_finalize(st->ins_rg);
    sqlite3_finalize(st->ins_chunk);
    sqlite3_finalize(st->upd_run);
    sqlite3_finalize(st->ins_plan);
    sqlite3_finalize(st->del_row);
    sqlite3_finalize(st->del_rg);
    sqlite3_finalize(st->serve_ins);
    free(st->seen);
    sqlite3_close(st->db);
    free(st->model_id);
    free(st->hw_id);
    free(st->todo);
    free(st->open);
    free(st);
}
