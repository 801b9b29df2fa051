/* fuzz_store.c - the store on a crafted file: the input is written as a
 * database file, which store_open checks (application id, schema version) and
 * migrates when it is of an older version, and which the read-only side
 * (store_query.h, what 'ccsweep report' uses) then queries through the views.
 * Every outcome is fine but a crash, a sanitizer finding or a leak; the seeds
 * (tests/fuzz/corpus/store) are real databases of schema 5 to 9 with 512-byte
 * pages, so mutations reach the migrations and the views. */
#include "ccsweep/store/store.h"
#include "ccsweep/store/store_query.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_row(void *ctx, const storeq_row *row)
{
    (void)row;
    ++*(long *)ctx;
    return 0;
}

static void remove_db(const char *path)
{
    static const char *const side[] = {"", "-wal", "-shm", "-journal"};
    char p[512];
    for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, side[i]);
        unlink(p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/ccsweep-fuzz-store-%ld.db", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    remove_db(path);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);

    int rc;
    ccs_err err;
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    store_close(st);

    storeq_db *q = storeq_open(path, &rc, &err);
    if (q) {
        static const char *const sql[] = {"SELECT * FROM runs",
                                          "SELECT * FROM results LIMIT 50",
                                          "SELECT * FROM result_codes LIMIT 50",
                                          "SELECT * FROM results_view LIMIT 50",
                                          "SELECT * FROM regions LIMIT 50",
                                          "SELECT * FROM keep_stats LIMIT 50"};
        for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
            long n = 0;
            storeq_exec(q, sql[i], NULL, 0, count_row, &n, &err);
        }
        storeq_close(q);
    }
    remove_db(path);
    return 0;
}
