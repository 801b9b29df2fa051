/* cli_run_serve.c - 'ccsweep run' of a serving spec (workload: serve): the
 * grid of sweep/serve_grid.h evaluated on rank 0 and written to the
 * serve_results table (store_serve.c), keeping only the best plans of each
 * serving job when the spec says keep. A simpler path than a training sweep:
 * one process evaluates and writes (a projection takes microseconds and the
 * grids are small), nothing is resumed; the other ranks of a launcher exit.
 * As for a training spec, a spec already swept with the same inputs adds
 * nothing unless --new-run asks for another run. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/store/store.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Evaluate every scenario of g and store what keep lets through. */
static int sweep(serve_grid *g, ccs_store *st, int64_t *done, int64_t *rows, ccs_err *err)
{
    const serve_keep *k = serve_grid_keep(g);
    int64_t plan_n = serve_grid_plan_n(g), count = serve_grid_count(g);
    serve_record rec, *top = NULL;
    if (k->best && !(top = calloc((size_t)k->best, sizeof *top))) {
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    int rc = CCS_OK, n = 0;
    for (int64_t i = 0; rc == CCS_OK && i < count; i++) {
        serve_grid_eval(g, i, &rec);
        ++*done;
        if (!k->best) {
            rc = store_serve_put(st, &rec, serve_grid_model(g, (size_t)rec.model)->name,
                                 serve_grid_hw(g, (size_t)rec.hw, 0)->name, err);
            ++*rows;
            if (rc == CCS_OK)
                rc = store_serve_mark(st, *done, err);
            continue;
        }
        if (serve_meets(&rec.r, &k->lim))
            serve_top_insert(top, k->best, &n, &rec);
        if ((i + 1) % plan_n) /* the job's last plan: store its best */
            continue;
        for (int j = 0; rc == CCS_OK && j < n; j++, ++*rows)
            rc = store_serve_put(st, &top[j], serve_grid_model(g, (size_t)top[j].model)->name,
                                 serve_grid_hw(g, (size_t)top[j].hw, 0)->name, err);
        if (rc == CCS_OK) /* a job's rows commit together */
            rc = store_serve_mark(st, *done, err);
        n = 0;
    }
    free(top);
    return rc;
}

int cli_run_serve(const cli_serve_run *a)
{
    if (cli_launch_rank() != 0)
        return 0;
    if (a->resume || a->detail)
        return cli_fail("run",
                        "%s: a serving spec (workload: serve) takes neither --resume nor "
                        "--detail: its runs take seconds, run it again",
                        a->spec);
    ccs_err err = {{0}};
    serve_grid *g = serve_grid_parse(a->text, a->len, a->spec, a->cat, &err);
    if (!g) {
        cli_fail("run", "%s", err.msg);
        return 1;
    }
    int orc;
    ccs_store *st = store_open(a->db, a->locking, &orc, &err);
    if (!st) {
        cli_fail("run", "%s", err.msg);
        serve_grid_free(g);
        return orc == CCS_EINPUT ? 1 : 2;
    }
    store_serve_info in = {.name = serve_grid_name(g),
                           .path = a->spec,
                           .text = a->text,
                           .len = a->len,
                           .argv = a->argv,
                           .evolution = serve_grid_evolution(g),
                           .ranks = a->ranks,
                           .total = serve_grid_count(g),
                           .g = g,
                           .mode = a->new_run ? STORE_MODE_APPEND : STORE_MODE_NEW};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t done = 0, rows = 0;
    int rc = store_serve_begin(st, &in, &err);
    if (rc == STORE_DONE_BEFORE) { /* as a training spec's (cli_run.c) */
        rc = cli_run_done_before(a->db_shown, store_serve_run_id(st));
        store_close(st);
        serve_grid_free(g);
        return rc;
    }
    if (rc == CCS_OK)
        rc = sweep(g, st, &done, &rows, &err);
    int frc = store_serve_finish(st, rc == CCS_OK ? STORE_COMPLETE : STORE_FAILED, done,
                                 rc == CCS_OK ? &err : &(ccs_err){{0}});
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc == CCS_OK)
        rc = frc;
    if (rc != CCS_OK)
        cli_fail("run", "%s: %s", a->db_shown, err.msg);
    if (rc != CCS_OK && store_disk_full(st))
        cli_fail("run",
                 "the disk holding %s is full: its committed batches are kept (the runs row "
                 "counts them); free space and run the spec again",
                 a->db_shown);
    else if (!a->quiet)
        fprintf(stderr,
                "ccsweep run: serving run %lld of '%s': %lld scenarios, %lld rows in "
                "serve_results of %s (%.2f s)\n",
                (long long)store_serve_run_id(st), serve_grid_name(g), (long long)done,
                (long long)rows, a->db_shown, secs);
    store_close(st);
    serve_grid_free(g);
    return rc == CCS_OK ? 0 : 2;
}
