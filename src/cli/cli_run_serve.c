/* cli_run_serve.c - 'ccsweep run' of a serving spec (workload: serve): the
 * grid of sweep/serve_grid.h evaluated on rank 0 and written to the
 * serve_results table (store_serve.c), keeping only the best plans of each
 * serving job when the spec says keep. A simpler path than a training sweep:
 * one process evaluates and writes (a projection takes microseconds and the
 * grids are small), in index order, so that --resume goes on from the
 * scenarios committed; the other ranks of a launcher exit. As for a training
 * spec, a spec already swept with the same inputs adds nothing unless
 * --new-run asks for another run. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/dist/dist.h"
#include "ccsweep/store/store.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The best plans of one serving job under keep: a job is a group of
 * serve_best (serve_search.h): the plan axes' scenarios of one index range of
 * serve_grid_plan_n, split by the replica size they derive when the spec
 * gives no plan: devices (devices = tp x pp then; each size is a job). */
typedef struct keep_job {
    int32_t devices; /* of the job's plans */
    int n;           /* plans in top */
    serve_record *top;
} keep_job;

/* The jobs a range of plans can hold: one, or one per tp x pp. */
static size_t serve_jobs_per_range(const serve_grid *g)
{
    size_t nd = serve_grid_axis_len(g, SERVE_AX_DEVICES);
    for (size_t i = 0; i < nd; i++)
        if (serve_grid_axis_value(g, SERVE_AX_DEVICES, i) == 0)
            return serve_grid_axis_len(g, SERVE_AX_TP) * serve_grid_axis_len(g, SERVE_AX_PP);
    return 1;
}

/* The job of rec's replica size among jobs[0..*used), added when new. */
static keep_job *keep_job_of(keep_job *jobs, size_t *used, const serve_record *rec)
{
    for (size_t j = 0; j < *used; j++)
        if (jobs[j].devices == rec->plan.devices)
            return &jobs[j];
    keep_job *k = &jobs[(*used)++];
    k->devices = rec->plan.devices;
    k->n = 0;
    return k;
}

/* Evaluate the scenarios of g from *done on (those before are committed: a
 * resumed run's) and store what keep lets through. A signal (dist_signal)
 * stops the sweep at the next mark, *sig set: every row of the *done
 * scenarios is put. */
static int sweep(serve_grid *g, ccs_store *st, int64_t *done, int64_t *rows, int *sig, ccs_err *err)
{
    const serve_keep *k = serve_grid_keep(g);
    int64_t plan_n = serve_grid_plan_n(g), count = serve_grid_count(g);
    serve_record rec, *top = NULL;
    size_t slots = k->best ? serve_jobs_per_range(g) : 0, used = 0;
    keep_job *jobs = NULL;
    if (k->best && (!(top = calloc(slots * (size_t)k->best, sizeof *top)) ||
                    !(jobs = calloc(slots, sizeof *jobs)))) {
        free(top);
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    for (size_t j = 0; j < slots; j++)
        jobs[j].top = top + j * (size_t)k->best;
    int rc = CCS_OK;
    assert(!k->best || *done % plan_n == 0); /* commits fall at a range's end */
    for (int64_t i = *done; rc == CCS_OK && i < count; i++) {
        if (i % plan_n == 0)
            dist_test_chunk_delay();
        serve_grid_eval(g, i, &rec);
        ++*done;
        if (!k->best) {
            rc = store_serve_put(st, &rec, serve_grid_model(g, (size_t)rec.model)->name,
                                 serve_grid_hw(g, (size_t)rec.hw, 0)->name, err);
            ++*rows;
            if (rc == CCS_OK)
                rc = store_serve_mark(st, *done, err);
        } else {
            if (serve_meets(&rec.r, &k->lim)) {
                keep_job *j = keep_job_of(jobs, &used, &rec);
                assert(used <= slots);
                serve_top_insert(j->top, k->best, &j->n, &rec);
            }
            if ((i + 1) % plan_n) /* the range's last plan: store its jobs' best */
                continue;
            for (size_t j = 0; j < used; j++)
                for (int r = 0; rc == CCS_OK && r < jobs[j].n; r++, ++*rows)
                    rc = store_serve_put(st, &jobs[j].top[r],
                                         serve_grid_model(g, (size_t)jobs[j].top[r].model)->name,
                                         serve_grid_hw(g, (size_t)jobs[j].top[r].hw, 0)->name, err);
            if (rc == CCS_OK) /* a range's rows commit together */
                rc = store_serve_mark(st, *done, err);
            used = 0;
        }
        if (rc == CCS_OK && (*sig = dist_signal()) != 0)
            break;
    }
    free(jobs);
    free(top);
    return rc;
}

int cli_run_serve(const cli_serve_run *a)
{
    if (cli_launch_rank() != 0)
        return 0;
    if (a->detail)
        return cli_fail("run",
                        "%s: a serving spec (workload: serve) takes no --detail: its rows hold "
                        "every output",
                        a->spec);
    if (a->shards)
        return cli_fail("run",
                        "%s: a serving spec (workload: serve) takes no %s: rank 0 alone writes "
                        "its run, into --db, with no shards",
                        a->spec, a->shards);
    ccs_err err = {{0}};
    serve_grid *g = serve_grid_parse(a->text, a->len, a->spec, a->cat, &err);
    if (!g) {
        cli_fail("run", "%s", err.msg);
        return 1;
    }
    int sig = dist_signal(); /* while the spec loaded: the file is not touched */
    if (sig) {
        cli_fail("run", "interrupted by signal %d while loading %s; nothing was written", sig,
                 a->spec);
        serve_grid_free(g);
        return 128 + sig;
    }
    int orc;
    ccs_store *st = store_open(a->db, a->locking, &orc, &err);
    if (!st) {
        if (store_writer_holds(a->db, &err))
            orc = CCS_EINPUT;
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
                           .mode = a->resume    ? STORE_MODE_RESUME
                                   : a->new_run ? STORE_MODE_APPEND
                                                : STORE_MODE_NEW};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = store_serve_begin(st, &in, &err);
    if (rc == STORE_DONE_BEFORE || rc == STORE_NOTHING) { /* as a training spec's (cli_run.c) */
        if (rc == STORE_DONE_BEFORE)
            rc = cli_run_done_before(a->db_shown, store_serve_run_id(st));
        else
            rc = printf("ccsweep run: run %lld of this spec is already complete in %s; nothing "
                        "to resume\n",
                        (long long)store_serve_run_id(st), a->db_shown) < 0;
        store_close(st);
        serve_grid_free(g);
        return rc;
    }
    if (rc < 0) { /* another writer, a damaged file: nothing was written */
        if (store_writer_holds(a->db, &err))
            rc = CCS_EINPUT;
        cli_fail("run", "%s", err.msg);
        store_close(st);
        serve_grid_free(g);
        return rc == CCS_EINPUT ? 1 : 2;
    }
    store_counts base;
    store_counts_get(st, &base);
    if (rc == STORE_RESUMED && !a->quiet)
        fprintf(stderr, "ccsweep: resuming serving run %lld: %lld of %lld scenarios already done\n",
                (long long)store_serve_run_id(st), (long long)base.done,
                (long long)serve_grid_count(g));
    int64_t done = base.done, rows = 0;
    rc = sweep(g, st, &done, &rows, &sig, &err);
    int status = rc != CCS_OK ? STORE_FAILED : sig ? STORE_INTERRUPTED : STORE_COMPLETE;
    int frc = store_serve_finish(st, status, done, rc == CCS_OK ? &err : &(ccs_err){{0}});
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc == CCS_OK && frc != CCS_OK) {
        rc = frc;
        status = STORE_FAILED;
    }
    char cmd[CLI_RESUME_CMD_MAX];
    cli_run_resume_command(cmd, sizeof cmd, a->spec, a->db_shown, NULL);
    if (rc != CCS_OK)
        cli_fail("run", "%s: %s", a->db_shown, err.msg);
    static const char *const words[] = {"running", "complete", "interrupted", "failed"};
    if (rc != CCS_OK && store_disk_full(st))
        cli_fail("run",
                 "the disk holding %s is full: its committed batches are kept (the runs row "
                 "counts them); free space, then finish the run with: %s",
                 a->db_shown, cmd);
    else if (!a->quiet)
        fprintf(stderr,
                "ccsweep run: serving run %lld of '%s' %s: %lld scenarios, %lld rows in "
                "serve_results of %s (%.2f s)\n",
                (long long)store_serve_run_id(st), serve_grid_name(g), words[status],
                (long long)(done - base.done), (long long)rows, a->db_shown, secs);
    if (status == STORE_INTERRUPTED) { /* as a training run's (cli_run.c) */
        printf("ccsweep run: interrupted by signal %d; committed rows are kept, finish with: %s\n",
               sig, cmd);
        fflush(stdout);
    }
    store_close(st);
    serve_grid_free(g);
    return status == STORE_COMPLETE ? 0 : status == STORE_INTERRUPTED ? 128 + sig : 2;
}
