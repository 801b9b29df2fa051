/* sweepbench.c - engine figures for 'make bench' (tools/bench.sh): the
 * projection rate of a spec's grid on one core, and the writer's insert rate
 * for the same rows with no projection and no MPI in the loop.
 *   sweepbench project SPEC [MAX]   decode + project + filter, no output
 *   sweepbench insert SPEC DB [MAX] project into memory first, then time
 *                                   store_put of those rows (batched commits)
 * Prints one line "name value unit"; never asserts a timing. */
#include "ccsweep/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "project") && strcmp(argv[1], "insert")) ||
        (!strcmp(argv[1], "insert") && argc < 4)) {
        fprintf(stderr, "usage: sweepbench project SPEC [MAX] | sweepbench insert SPEC DB [MAX]\n");
        return 1;
    }
    int insert = !strcmp(argv[1], "insert");
    const char *maxarg = argc > (insert ? 4 : 3) ? argv[insert ? 4 : 3] : NULL;
    char dir[4096];
    ccs_err err;
    ccs_catalog *cat = catalog_new();
    if (!cat || catalog_load_dir(cat, catalog_default_dir(dir, sizeof dir), &err)) {
        fprintf(stderr, "sweepbench: %s\n", cat ? err.msg : "out of memory");
        return 1;
    }
    ccs_spec *spec = spec_load(argv[2], cat, &err);
    ccs_grid *g = spec ? grid_new(spec, &err) : NULL;
    if (!g) {
        fprintf(stderr, "sweepbench: %s\n", err.msg);
        return 1;
    }
    int64_t n = grid_count(g);
    if (maxarg && atoll(maxarg) > 0 && atoll(maxarg) < n)
        n = atoll(maxarg);
    int rc = 0;
    if (!insert) {
        ccs_record rec;
        int64_t kept = 0;
        double t0 = now_s();
        for (int64_t i = 0; i < n; i++)
            kept += grid_eval(g, i, &rec, NULL);
        double dt = now_s() - t0;
        printf("projections_per_s %.0f (%lld scenarios, %lld kept, %.3f s, %.2f us each)\n", n / dt,
               (long long)n, (long long)kept, dt, 1e6 * dt / n);
    } else {
        ccs_record *rows = malloc((size_t)n * sizeof *rows);
        int64_t kept = 0;
        if (!rows) {
            fprintf(stderr, "sweepbench: out of memory for %lld rows\n", (long long)n);
            return 1;
        }
        for (int64_t i = 0; i < n; i++)
            kept += grid_eval(g, i, &rows[kept], NULL);
        int orc;
        ccs_store *st = store_open(argv[3], STORE_LOCK_NORMAL, &orc, &err);
        store_run_info info = {.argv = "sweepbench", .ranks = 1};
        if (!st || store_prepare_run(st, g, &info, 0, &err) < 0) {
            fprintf(stderr, "sweepbench: %s\n", err.msg);
            return 1;
        }
        double t0 = now_s();
        for (int64_t i = 0; i < kept && rc == 0; i++)
            rc = store_put(st, &rows[i], NULL, &err);
        if (rc == 0)
            rc = store_chunk_done(st, 0, n, &err) || store_commit(st, &err);
        double dt = now_s() - t0;
        if (rc)
            fprintf(stderr, "sweepbench: %s\n", err.msg);
        else
            printf("insert_rows_per_s %.0f (%lld rows, %.3f s, batches of %d)\n", kept / dt,
                   (long long)kept, dt, CCS_STORE_BATCH);
        store_close(st);
        free(rows);
    }
    grid_free(g);
    spec_free(spec);
    catalog_free(cat);
    return rc ? 2 : 0;
}
