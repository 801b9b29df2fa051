/* store_lock.c - one writer per file: the writer row (host, pid, start time),
 * claimed in a write transaction, taken over from a process that no longer
 * runs, released at the end; BEGIN IMMEDIATE in short polls. */
#include "store_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* BEGIN IMMEDIATE in short waits (100 ms, up to 100 of them) instead of one
 * long one; between two waits between(st, err) may end the wait: its non-zero
 * result is returned (positive: the transaction is no longer wanted, none is
 * open; negative: an error it has set). CCS_OK once the transaction is open;
 * the busy timeout is back at 10 s on every return. */
int sti_begin_polling(ccs_store *st, const char *what, int (*between)(ccs_store *, ccs_err *),
                      ccs_err *err)
{
    int rc = CCS_OK;
    sqlite3_busy_timeout(st->db, 100);
    for (int tries = 0;; tries++) {
        int r = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (r == SQLITE_OK)
            break;
        if (r != SQLITE_BUSY || tries >= 100) {
            rc = sti_fail_db(st, err, what);
            break;
        }
        if ((rc = between(st, err)))
            break;
    }
    sqlite3_busy_timeout(st->db, 10000);
    return rc;
}

/* Start time of process pid in clock ticks after boot (field 22 of
 * /proc/PID/stat), or 0 when unknown: with the pid it names one process even
 * after the pid is reused. *state gets field 3 ('Z': exited, not yet reaped). */
static int64_t proc_start(long pid, char *state)
{
    *state = '?';
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p)
        return 0;
    p++;
    while (*p == ' ')
        p++;
    *state = *p;
    /* after ')' come field 3 (state) ... field 22 (starttime) */
    for (int field = 3; field < 22 && *p; field++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
    }
    return strtoll(p, NULL, 10);
}

/* 1 when the process that took a lock on this host is still running. */
static int holder_alive(long pid, int64_t start)
{
    if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
        return 0;
    char state;
    int64_t now = proc_start(pid, &state);
    if (state == 'Z' || state == 'X')
        return 0;
    return !(start > 0 && now > 0 && now != start);
}

/* Look at the writer row. A row of a process that no longer runs on this
 * host is stale (it is taken over); a live holder, or one on another host
 * (whose liveness cannot be checked from here), is an input error naming it. */
int sti_check_writer(ccs_store *st, ccs_err *err)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "SELECT host, pid, pid_start, started, run_id FROM writer", -1,
                           &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "checking for another writer");
    int rc = CCS_OK;
    if (sqlite3_step(s) == SQLITE_ROW) {
        char h[256], started[64];
        const char *hv = (const char *)sqlite3_column_text(s, 0);
        const char *sv = (const char *)sqlite3_column_text(s, 3);
        ccs_strlcpy(h, hv ? hv : "?", sizeof h);
        ccs_strlcpy(started, sv ? sv : "?", sizeof started);
        long pid = (long)sqlite3_column_int64(s, 1);
        int64_t pstart = sqlite3_column_int64(s, 2), run = sqlite3_column_int64(s, 4);
        int here = !strcmp(h, host);
        if (here && !holder_alive(pid, pstart)) {
            fprintf(stderr,
                    "ccsweep: %s: taking over the writer lock of pid %ld on %s (since %s), "
                    "which is no longer running\n",
                    st->path, pid, h, started);
        } else {
            char what[48];
            if (sqlite3_column_type(s, 4) == SQLITE_NULL) /* a migration's (sti_migrate) */
                snprintf(what, sizeof what, "migrating its schema");
            else
                snprintf(what, sizeof what, "run %lld", (long long)run);
            ccs_err_set(err,
                        "%s: another ccsweep is writing to this database: pid %ld on host %s, "
                        "since %s (%s); wait for it to end%s",
                        st->path, pid, h, started, what,
                        here ? ""
                             : ", or if that process is gone, remove its lock with "
                               "sqlite3 DB 'DELETE FROM writer'");
            rc = CCS_EINPUT;
        }
    }
    sqlite3_finalize(s);
    return rc;
}

/* BEGIN IMMEDIATE for the claim, in short waits: between them the writer row
 * is read again, so a writer that took the file meanwhile is named instead of
 * waited for (its batches would keep the write lock busy until it ends). */
int sti_begin_claim(ccs_store *st, ccs_err *err)
{
    return sti_begin_polling(st, "starting the run", sti_check_writer, err);
}

/* Claim the writer row inside the open write transaction (see sti_check_writer)
 * of a training run (store_prepare_run), a serving run (store_serve_begin) or
 * a migration (sti_migrate): CLAIMING, the row is this process's once the
 * caller commits (a run: sti_writer_claimed). */
int sti_claim_writer(ccs_store *st, ccs_err *err)
{
    assert(assert_store_state(st));
    assert(!st->locked && !st->serve_run && !sqlite3_get_autocommit(st->db));
    char host[256] = "", now[32];
    gethostname(host, sizeof host - 1);
    sti_now_iso(now, sizeof now);
    sqlite3_stmt *s;
    int rc = sti_check_writer(st, err);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(st->db,
                           "INSERT OR REPLACE INTO writer (id, host, pid, pid_start, started) "
                           "VALUES (1, ?, ?, ?, ?)",
                           -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "taking the writer lock");
    sqlite3_bind_text(s, 1, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (int64_t)getpid());
    char state;
    sqlite3_bind_int64(s, 3, proc_start((long)getpid(), &state));
    sqlite3_bind_text(s, 4, now, -1, SQLITE_TRANSIENT);
    rc = sti_step_done(st, s, err, "taking the writer lock");
    sqlite3_finalize(s);
    return rc;
}

void sti_writer_claimed(ccs_store *st)
{
    assert(!st->locked && sqlite3_get_autocommit(st->db));
    st->locked = 1;
}

/* Drop this process's writer row (in the caller's transaction, or alone). */
int sti_release_writer(ccs_store *st)
{
    if (!st->locked)
        return CCS_OK;
    char sql[96];
    snprintf(sql, sizeof sql, "DELETE FROM writer WHERE pid = %lld", (long long)getpid());
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return CCS_EIO; /* left behind: the next writer finds it stale */
    st->locked = 0;
    return CCS_OK;
}
