/* store_migrate.c - a database of schema version CCS_STORE_MIGRATE_FROM or
 * later migrated to CCS_STORE_SCHEMA in place, in one transaction, from the
 * steps of store_schema.c. */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Version 5, 6, 7, 8, 9, 10 or 11 to 12 in place, in one transaction (all of
 * it or nothing). From 5, first to 6: the new columns with the values version 5
 * computed without storing them (cp and ep 1, so no context- or
 * expert-parallel traffic; hfu from the stored mfu, hw_flops and
 * model_flops, as the version-5 view derived it), its views dropped. Then to
 * 7: the keep.aggregate tables and view, empty (older versions had no
 * aggregates). Then to 8: the regions rows moved to region_rows
 * (sti_v8_regions). Then to 9: the views (re)created (version 9 derives five
 * outputs in the view). Then to 10: plans.stack, NULL (the default stack)
 * for every older plan; the views recreated with it. Then to 11: runs.workload
 * (NULL for the training runs already stored) and the serving tables and
 * views, empty. Then to 12: the views recreated (results names its codes,
 * result_codes is the id-level view results was). No value is removed or
 * changed otherwise. A process writing
 * the file (an older ccsweep) is waited for, not raced; one that holds the
 * writer row is named (CCS_EINPUT). The migration holds the writer row itself,
 * committed before the migration's transaction and dropped in it, so that a
 * process without file locks stays out too. OPEN -> MIGRATING (from the first
 * BEGIN IMMEDIATE to the last COMMIT or ROLLBACK) -> OPEN. */
/* Test hook: CCSWEEP_TEST_MIGRATE_DELAY_US=N holds the migration's
 * transaction open N us (at most 60 s) once it has begun, after a line that
 * tells the test so, so that a concurrency test starts a second writer while
 * it is held. Unset (always, outside the tests): nothing. */
static void test_migrate_delay(void)
{
    const char *v = getenv("CCSWEEP_TEST_MIGRATE_DELAY_US");
    long us = v ? strtol(v, NULL, 10) : 0;
    if (us <= 0 || us > 60000000)
        return;
    fprintf(stderr, "ccsweep: test hook: holding the migration\n");
    struct timespec d = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&d, NULL);
}

int sti_migrate(ccs_store *st, int64_t from, ccs_err *err)
{
    assert(assert_store_state(st));
    assert(!st->g && !st->created && !st->migrating); /* OPEN, an old file */
    static const char *const drop_views =
        "DROP VIEW best_plan; DROP VIEW comm_share; DROP VIEW plan_rank; "
        "DROP VIEW results_view; DROP VIEW results;"; /* the trigger goes with results */
    /* the same, also when a user dropped one of them */
    static const char *const drop_views_if =
        "DROP VIEW IF EXISTS best_plan; DROP VIEW IF EXISTS comm_share; "
        "DROP VIEW IF EXISTS plan_rank; DROP VIEW IF EXISTS results_view; "
        "DROP VIEW IF EXISTS results; DROP VIEW IF EXISTS result_codes;";
    char fill[512] = "UPDATE result_rows SET hfu = CASE WHEN model_flops > 0 THEN mfu * hw_flops "
                     "/ model_flops ELSE 0 END";
    for (int k = CCS_OUTPUTS_V5; k < CCS_N_OUTPUTS; k++)
        if (strcmp(ccs_outputs[k].name, "hfu"))
            snprintf(fill + strlen(fill), sizeof fill - strlen(fill), ", %s = 0",
                     ccs_outputs[k].name);
    strcat(fill, " WHERE sr & 3 != 1"); /* invalid rows keep NULL timings */
    char pragma[64], drop[96];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", CCS_STORE_SCHEMA);
    snprintf(drop, sizeof drop, "DELETE FROM writer WHERE pid = %lld", (long long)getpid());
    /* The writer row first, committed: a process that takes no file locks
     * (--db-locking none) cannot see this one's transaction, only the row;
     * it then stays out, as from a run's file. */
    if (sti_exec(st, "BEGIN IMMEDIATE", err))
        return CCS_EIO;
    st->migrating = 1;
    int rc = sti_check_writer(st, err);
    /* another process may have migrated it while this one waited */
    int todo = rc == CCS_OK && sti_query_int(st, "PRAGMA user_version", -1) == from;
    if (todo)
        rc = sti_claim_writer(st, err);
    if (rc == CCS_OK && sti_exec(st, "COMMIT", err))
        rc = CCS_EIO;
    if (rc != CCS_OK || !todo) {
        if (!sqlite3_get_autocommit(st->db))
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        st->migrating = 0;
        return rc;
    }
    /* then the migration, and the row dropped with it, in one transaction */
    if (sti_exec(st, "BEGIN IMMEDIATE", err))
        rc = CCS_EIO;
    if (rc == CCS_OK)
        test_migrate_delay();
    if (rc == CCS_OK && from == 5 &&
        (sti_exec(st, drop_views, err) || sti_v6_columns(st, err) || sti_exec(st, fill, err)))
        rc = CCS_EIO;
    if (rc == CCS_OK && from <= 6 && sti_v7_tables(st, err))
        rc = CCS_EIO;
    if (rc == CCS_OK && from <= 7 && sti_v8_regions(st, err))
        rc = CCS_EIO;
    /* to 10: the plans' stack (NULL: the default, every older plan's) */
    if (rc == CCS_OK && from <= 9 && sti_v10_columns(st, err))
        rc = CCS_EIO;
    /* to 9: the views that derive five outputs and the band's ends when
     * a row leaves them NULL (stored rows keep their values); to 12: the
     * views of names over result_codes */
    if (rc == CCS_OK && (sti_exec(st, drop_views_if, err) || sti_create_views(st, err)))
        rc = CCS_EIO;
    /* to 11: runs.workload and the serving tables, empty */
    if (rc == CCS_OK && from <= 10 && sti_serve_tables(st, err))
        rc = CCS_EIO;
    if (rc == CCS_OK && (sti_exec(st, pragma, err) || sti_exec(st, drop, err)))
        rc = CCS_EIO;
    if (rc == CCS_OK && sti_exec(st, "COMMIT", err))
        rc = CCS_EIO;
    if (rc != CCS_OK) {
        if (!sqlite3_get_autocommit(st->db))
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_exec(st->db, drop, NULL, NULL, NULL); /* else the next writer finds it stale */
    }
    st->migrating = 0;
    return rc;
}
