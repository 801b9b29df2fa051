/* probe.h - the interference probe of tools/profiler and tools/groundtruth:
 * the same small fp32 GEMM on every rank at once, timed between phases and
 * rounds. On a quiet machine it takes the same time whenever it runs; when
 * other work competes for the cores it slows down, and ccsweep validate
 * compares the probes of a profile and a ground truth (include/ccsweep/util/noise.h).
 * Header-only; needs cblas.h and mpi.h before it. */
#ifndef CCSWEEP_PROBE_H
#define CCSWEEP_PROBE_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define PROBE_N 384 /* 2 * 384^3 = 113 MFLOP, about 5 ms on one core */

typedef struct probe {
    float *a, *b, *c;
} probe;

static inline int probe_init(probe *p)
{
    size_t n = (size_t)PROBE_N * PROBE_N;
    p->a = malloc(n * sizeof(float));
    p->b = malloc(n * sizeof(float));
    p->c = malloc(n * sizeof(float));
    if (!p->a || !p->b || !p->c)
        return -1;
    for (size_t i = 0; i < n; i++) {
        p->a[i] = 1.0f + 1e-3f * (float)(i % 101);
        p->b[i] = 1.0f - 1e-3f * (float)(i % 103);
        p->c[i] = 0;
    }
    return 0;
}

static inline void probe_free(probe *p)
{
    free(p->a);
    free(p->b);
    free(p->c);
}

/* One probe (collective over comm): the fastest of 5 calls on each rank, the
 * slowest rank's value, in seconds. */
static inline double probe_time(probe *p, MPI_Comm comm)
{
    double best = 1e30, worst;
    MPI_Barrier(comm);
    for (int r = 0; r < 5; r++) {
        double t0 = MPI_Wtime();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, PROBE_N, PROBE_N, PROBE_N, 1.0f,
                    p->a, PROBE_N, p->b, PROBE_N, 0.0f, p->c, PROBE_N);
        double t = MPI_Wtime() - t0;
        if (t < best)
            best = t;
    }
    MPI_Allreduce(&best, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    return worst;
}

/* /proc/stat's busy and total jiffies of all CPUs; -1 when unreadable. */
static inline int probe_cpu_ticks(double *busy, double *total)
{
    FILE *f = fopen("/proc/stat", "r");
    double v[8] = {0};
    int n = f ? fscanf(f, "cpu %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4],
                       &v[5], &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    if (n < 8)
        return -1;
    *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]; /* user nice system irq softirq steal */
    *total = *busy + v[3] + v[4];                    /* + idle iowait */
    return 0;
}

static inline void probe_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* The pre-check (collective over comm): while every rank sleeps, rank 0
 * measures how much of the machine's CPUs other processes use. Busy when
 * fewer idle cores are left than comm has ranks on this host (the rule of
 * tools/validate.sh). Rank 0 writes "busy: ..." or "quiet: ..." into out
 * (the '# precheck:' header of the tools' files) and returns 1 when busy;
 * "unknown" and 0 when /proc/stat cannot be read. */
static inline int probe_precheck(MPI_Comm comm, char *out, size_t n)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm node;
    int local = size;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    MPI_Barrier(comm);
    int busy = 0;
    if (rank != 0) {
        probe_sleep(0.6); /* asleep, not spinning in the barrier, while rank 0 looks */
    } else {
        double b0, t0, b1, t1;
        int ok = probe_cpu_ticks(&b0, &t0) == 0;
        probe_sleep(0.5);
        ok = ok && probe_cpu_ticks(&b1, &t1) == 0 && t1 > t0;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (!ok || ncpu < 1) {
            snprintf(out, n, "unknown (/proc/stat unreadable)");
        } else {
            double pct = 100 * (b1 - b0) / (t1 - t0);
            double idle = (double)ncpu * (100 - pct) / 100;
            busy = idle < local;
            snprintf(out, n,
                     "%s: other processes used %.0f%% of the %ld CPUs, %.1f idle for %d ranks",
                     busy ? "busy" : "quiet", pct, ncpu, idle, local);
        }
    }
    MPI_Barrier(comm);
    MPI_Bcast(&busy, 1, MPI_INT, 0, comm);
    return busy;
}

#endif
