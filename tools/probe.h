/* probe.h - the interference probe of tools/profiler and tools/groundtruth:
 * the same small fp32 GEMM on every rank at once, timed between phases and
 * rounds. On a quiet machine it takes the same time whenever it runs; when
 * other work competes for the cores it slows down, and ccsweep validate
 * compares the probes of a profile and a ground truth (include/ccsweep/util/noise.h).
 * Header-only; needs cblas.h and mpi.h before it. */
#ifndef CCSWEEP_PROBE_H
#define CCSWEEP_PROBE_H

#include <stdlib.h>

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

#endif
