/* sweepbench.c - engine figures for 'make bench' (tools/bench.sh): the
 * projection rate of a spec's grid on one core, the writer's cost for the
 * same rows with no projection and no MPI in the loop, and rank 0's cost of
 * merging under a keep: rule.
 *   sweepbench project SPEC [MAX]   decode + project + filter, no output
 *   sweepbench insert SPEC DB [MAX] project into memory first, then time
 *                                   store_put of those rows (batched commits)
 *   sweepbench keep SPEC DB CHUNK   the spec's keep: rule as a sweep applies
 *                                   it: each chunk of CHUNK indices reduced
 *                                   as a worker does, then rank 0's part
 *                                   (merge + store) timed on its own
 * Prints one line "name value (details)"; CPU times are this process's
 * (CLOCK_PROCESS_CPUTIME_ID). Never asserts a timing. */
#include "ccsweep/sweep/keep.h"
#include "ccsweep/store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double file_bytes(const char *path)
{
    struct stat sb;
    char wal[4200];
    double n = stat(path, &sb) == 0 ? (double)sb.st_size : 0;
    snprintf(wal, sizeof wal, "%s-wal", path);
    return n + (stat(wal, &sb) == 0 ? (double)sb.st_size : 0);
}

static ccs_store *open_run(const char *path, const ccs_grid *g, ccs_err *err)
{
    int orc;
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &orc, err);
    store_run_info info = {.argv = "sweepbench", .ranks = 1};
    if (st && store_prepare_run(st, g, &info, 0, err) < 0) {
        store_close(st);
        return NULL;
    }
    return st;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int insert = !strcmp(mode, "insert"), keep = !strcmp(mode, "keep");
    if (argc < 3 || (strcmp(mode, "project") && !insert && !keep) ||
        ((insert || keep) && argc < 4) || (keep && argc < 5)) {
        fprintf(stderr, "usage: sweepbench project SPEC [MAX] | sweepbench insert SPEC DB [MAX] | "
                        "sweepbench keep SPEC DB CHUNK\n");
        return 1;
    }
    const char *maxarg = !keep && argc > (insert ? 4 : 3) ? argv[insert ? 4 : 3] : NULL;
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
    if (!insert && !keep) {
        ccs_record rec;
        int64_t kept = 0;
        double t0 = now_s(), c0 = cpu_s();
        for (int64_t i = 0; i < n; i++)
            kept += grid_eval(g, i, &rec, NULL) == 1;
        double dt = now_s() - t0, dc = cpu_s() - c0;
        printf("projections_per_s %.0f (%lld scenarios, %lld kept, %.3f s, %.3f us CPU each)\n",
               n / dt, (long long)n, (long long)kept, dt, 1e6 * dc / n);
    } else if (insert) {
        ccs_record *rows = malloc((size_t)n * sizeof *rows);
        int64_t kept = 0;
        if (!rows) {
            fprintf(stderr, "sweepbench: out of memory for %lld rows\n", (long long)n);
            return 1;
        }
        for (int64_t i = 0; i < n; i++)
            kept += grid_eval(g, i, &rows[kept], NULL) == 1;
        ccs_store *st = open_run(argv[3], g, &err);
        if (!st) {
            fprintf(stderr, "sweepbench: %s\n", err.msg);
            return 1;
        }
        double t0 = now_s(), c0 = cpu_s();
        for (int64_t i = 0; i < kept && rc == 0; i++)
            rc = store_put(st, &rows[i], NULL, &err);
        if (rc == 0)
            rc = store_chunk_done(st, 0, n, &err) || store_commit(st, &err);
        double dt = now_s() - t0, dc = cpu_s() - c0;
        store_close(st); /* checkpoints the WAL into the file */
        if (rc)
            fprintf(stderr, "sweepbench: %s\n", err.msg);
        else
            printf("insert_rows_per_s %.0f (%lld rows, %.3f s, %.2f us CPU per row, %.0f bytes "
                   "per row on disk, batches of %d)\n",
                   kept / dt, (long long)kept, dt, 1e6 * dc / (double)kept,
                   file_bytes(argv[3]) / (double)kept, CCS_STORE_BATCH);
        free(rows);
    } else {
        /* the workers' part, untimed: chunks reduced in a fixed-size table */
        int64_t chunk = atoll(argv[4]) > 0 ? atoll(argv[4]) : 65536;
        ccs_keep *part = keep_new(g, 4096), *all = keep_new(g, 0);
        ccs_record *sent = NULL;
        size_t n_sent = 0, cap = 0;
        int64_t passed = 0;
        int disp;
        if (!part || !all) {
            fprintf(stderr, "sweepbench: the spec has no keep: rule (or out of memory)\n");
            return 1;
        }
        for (int64_t lo = 0; lo < n; lo += chunk) {
            for (int64_t i = lo; i < lo + chunk && i < n; i++) {
                ccs_record rec;
                if (grid_eval(g, i, &rec, NULL) != 1)
                    continue;
                passed++;
                int full = keep_offer(part, &rec, &disp, NULL, NULL) == KEEP_FULL;
                if (!full && i + 1 < lo + chunk && i + 1 < n)
                    continue;
                for (size_t s = 0; s < keep_slots(part); s++) {
                    const ccs_record *r = keep_at(part, s);
                    if (!r)
                        continue;
                    if (n_sent == cap) {
                        cap = cap ? 2 * cap : 4096;
                        sent = realloc(sent, cap * sizeof *sent);
                        if (!sent)
                            return 1;
                    }
                    sent[n_sent++] = *r;
                }
                keep_clear(part);
                if (full)
                    keep_offer(part, &rec, &disp, NULL, NULL);
            }
        }
        ccs_store *st = open_run(argv[3], g, &err);
        if (!st) {
            fprintf(stderr, "sweepbench: %s\n", err.msg);
            return 1;
        }
        /* the merge alone (a row that does not enter costs only this) */
        ccs_keep *dry = keep_new(g, 0);
        double m0 = cpu_s();
        for (size_t i = 0; dry && i < n_sent; i++)
            keep_offer(dry, &sent[i], &disp, NULL, NULL);
        double dm = cpu_s() - m0;
        keep_free(dry);
        /* rank 0's part: merge what the workers sent, store what enters */
        int64_t stored = 0;
        double t0 = now_s(), c0 = cpu_s();
        for (size_t i = 0; i < n_sent && rc == 0; i++)
            if (keep_offer(all, &sent[i], &disp, NULL, NULL) == KEEP_KEPT) {
                stored++;
                rc = store_put(st, &sent[i], NULL, &err);
            }
        if (rc == 0)
            rc = store_chunk_done(st, 0, n, &err) || store_commit(st, &err);
        double dt = now_s() - t0, dc = cpu_s() - c0;
        if (rc)
            fprintf(stderr, "sweepbench: %s\n", err.msg);
        else
            printf(
                "keep_merge_rows_per_s %.0f (%lld scenarios, %lld pass where, %zu sent to "
                "rank 0 in chunks of %lld, %lld stored, %zu kept at the end; rank 0: %.3f s, "
                "%.2f us CPU per row received (merge alone %.3f us), %.2f us CPU per kept row)\n",
                n_sent / dt, (long long)n, (long long)passed, n_sent, (long long)chunk,
                (long long)stored, keep_count(all), dt, 1e6 * dc / (double)n_sent,
                1e6 * dm / (double)n_sent, 1e6 * dc / (double)keep_count(all));
        store_close(st);
        free(sent);
        keep_free(part);
        keep_free(all);
    }
    grid_free(g);
    spec_free(spec);
    catalog_free(cat);
    return rc ? 2 : 0;
}
