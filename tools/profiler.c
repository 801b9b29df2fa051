/* profiler.c - measure this machine's operator timings into a calibration
 * profile (CSV, format in include/ccsweep/cost/opmodel.h) and a matching hardware catalog entry.
 *
 *   mpirun -n 2 build/tools/profiler --budget 100 --out prof.csv --hw-out hw.yaml
 *
 * Every rank is one "device". Compute kernels run on all ranks at once (a
 * node of a training job is fully busy, and ranks sharing a CPU share its
 * cores and memory bandwidth), each rank times its own call and the slowest
 * rank's time is the sample. Each point gets a warm-up call, then repetitions
 * spread over several passes through the whole point list, so slow drift of a
 * shared machine lands in every point alike; the profile keeps the median.
 * Collectives run on ranks 0..g-1 for every group size g the job allows and
 * are marked intra- or inter-node by host name. */
#include <cblas.h>
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ccsweep/util/noise.h"
#include "layer_kernels.h"
#include "probe.h"

/* OpenBLAS extensions (cblas.h of Debian's OpenBLAS declares them too). */
void openblas_set_num_threads(int);
char *openblas_get_config(void);

#define MAX_SAMPLES 96
#define MAX_POINTS 1024
#define BUF_ELEMS ((size_t)1 << 24) /* floats per work buffer (64 MiB) */
#define MIN_TIMED 200e-6            /* s: shorter kernels are timed in a loop */
#define HOST_MAX 256

enum {
    K_GEMM,
    K_BMM,
    K_BDA,    /* bias-dropout-add forward */
    K_DROP_F, /* dropout forward (attention probabilities) */
    K_DROP_B, /* dropout backward (+ bias gradient) */
    K_GELU_F,
    K_GELU_B,
    K_LN_F,
    K_LN_B,
    K_SM_F,
    K_SM_B,
    K_AR,
    K_AG,
    K_RS,
    K_P2P,
    K_N
};

static const struct {
    const char *op; /* profile op */
    double bpe;     /* bytes per element (memory-bound kernels) */
    double fpe;     /* FLOPs per element as ccsweep's regions count them */
} kinfo[K_N] = {
    [K_GEMM] = {"gemm", 0, 0},
    [K_BMM] = {"bmm", 0, 0},
    [K_BDA] = {"elementwise", 13, 1},
    [K_DROP_F] = {"elementwise", 9, 1},
    [K_DROP_B] = {"elementwise", 9, 1},
    [K_GELU_F] = {"elementwise", 8, 8},
    [K_GELU_B] = {"elementwise", 12, 12},
    [K_LN_F] = {"layernorm", 8, 8},
    [K_LN_B] = {"layernorm", 16, 10},
    [K_SM_F] = {"softmax", 8, 5},
    [K_SM_B] = {"softmax", 12, 4},
    [K_AR] = {"allreduce", 0, 0},
    [K_AG] = {"allgather", 0, 0},
    [K_RS] = {"reducescatter", 0, 0},
    [K_P2P] = {"p2p", 0, 0},
};

typedef struct point {
    int kind, phase;
    int m, n, k, batch, ta, tb, group;
    double bytes;
    int layer;       /* a Transformer-layer shape: measured first, never thinned */
    double order;    /* position in the phase's measuring order */
    int inner, reps; /* chosen at the first visit, identical on every rank */
    int ns;
    double s[MAX_SAMPLES];
} point;

enum { PH_GEMM, PH_BMM, PH_MEM, PH_COLL, PH_N };
static const char *const phase_name[PH_N] = {"gemm", "bmm", "memory-bound", "collectives"};

typedef struct prof {
    int rank, size, passes, quiet;
    double budget, t0;
    double limit; /* s: the budget, stretched while a disturbed pass is measured again */
    double max_gemm_flops, max_msg;
    float *A, *B, *C;              /* kernel operands (A, B inputs only) */
    float *D;                      /* collectives' buffers: never a kernel's input */
    float *v1, *vb, *v2, *v3, *v4; /* gamma ~1, bias ~0.01, accumulators, mean, rstd */
    uint8_t *mask;
    MPI_Comm gcomm[65]; /* ranks 0..g-1, MPI_COMM_NULL elsewhere */
    int glevel[65];     /* 1 intra, 2 inter */
    int maxg;
    point *pt;
    int npt;
    probe pr;                        /* the interference probe (probe.h) */
    double probes[NOISE_MAX_PROBES]; /* s, one before the first phase and after each */
    char precheck[192];              /* probe_precheck's verdict (rank 0) */
    int nprobe, remeasured;          /* probes taken; phase passes measured again */
} prof;

/* The time a point reports: the median of its samples, which the passes
 * spread over the whole profiling run (tools/groundtruth reports the median
 * of its rounds likewise, so both see the same mix of quiet and busy moments
 * of a shared machine). */
static double median(const double *v, int n)
{
    double t[MAX_SAMPLES];
    memcpy(t, v, sizeof(double) * (size_t)n);
    for (int i = 1; i < n; i++) /* insertion sort: n is small */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static point *add(prof *P, int kind, int phase)
{
    if (P->npt >= MAX_POINTS)
        return NULL;
    point *p = &P->pt[P->npt++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->phase = phase;
    p->batch = 1;
    return p;
}

/* ---- the point list ------------------------------------------------------- */

static int gemm_fits(double m, double n, double k, double batch)
{
    return m * k * batch <= BUF_ELEMS && k * n * batch <= BUF_ELEMS && m * n * batch <= BUF_ELEMS;
}

static void add_gemm(prof *P, int m, int n, int k, int ta, int tb, int layer)
{
    double f = 2.0 * m * n * k;
    if (f < (1 << 18) || f > P->max_gemm_flops || !gemm_fits(m, n, k, 1))
        return;
    for (int i = 0; i < P->npt; i++) {
        point *q = &P->pt[i];
        if (q->kind == K_GEMM && q->m == m && q->n == n && q->k == k && q->ta == ta && q->tb == tb)
            return;
    }
    point *p = add(P, K_GEMM, PH_GEMM);
    if (!p)
        return;
    p->m = m, p->n = n, p->k = k, p->ta = ta, p->tb = tb, p->layer = layer;
    p->bytes = 4.0 * ((double)m * k + (double)k * n + (double)m * n);
}

/* Bit-reversed position of i among n (van der Corput order): walking a phase's
 * points in this order covers its whole range coarsely first, so a budget
 * that ends a phase early thins it evenly instead of cutting off its end. */
static double vdc(unsigned i)
{
    double v = 0, f = 0.5;
    for (; i; i >>= 1, f *= 0.5)
        if (i & 1)
            v += f;
    return v;
}

static int cmp_order(const void *a, const void *b)
{
    const point *x = a, *y = b;
    if (x->phase != y->phase)
        return x->phase - y->phase;
    if (x->layer != y->layer)
        return y->layer - x->layer;
    return x->order < y->order ? -1 : x->order > y->order;
}

static void spread_order(prof *P)
{
    unsigned idx[PH_N] = {0};
    for (int i = 0; i < P->npt; i++)
        P->pt[i].order = vdc(idx[P->pt[i].phase]++);
    qsort(P->pt, (size_t)P->npt, sizeof *P->pt, cmp_order);
}

static void build_points(prof *P)
{
    /* GEMMs: the shapes of Transformer layers (forward NN, input gradient NT,
     * weight gradient TN of QKV, projection and MLP for hidden 512..4096,
     * tokens 128..8192, TP 1 and 2, below the FLOPs cap), then a spread of
     * shapes (every power-of-two combination, layouts in turn). */
    for (int h = 512; h <= 4096; h *= 2)
        for (int tok = 128; tok <= 8192; tok *= 2)
            for (int t = 1; t <= 2; t++) {
                int nk[4][2] = {{3 * h / t, h}, {h, h / t}, {4 * h / t, h}, {h, 4 * h / t}};
                for (int j = 0; j < 4; j++) {
                    int n = nk[j][0], k = nk[j][1];
                    add_gemm(P, tok, n, k, 0, 0, 1);
                    add_gemm(P, tok, k, n, 0, 1, 1);
                    add_gemm(P, k, n, tok, 1, 0, 1);
                }
            }
    static const int dims[] = {64, 128, 256, 512, 1024, 2048, 4096};
    int nd = (int)(sizeof dims / sizeof dims[0]), turn = 0;
    for (int a = 0; a < nd; a++)
        for (int b = 0; b < nd; b++)
            for (int c = 0; c < nd; c++, turn++)
                add_gemm(P, dims[a], dims[b], dims[c], turn % 3 == 2, turn % 3 == 1, 0);
    /* Batched attention GEMMs: scores / dP (s, s, d) NT, context / dQ
     * (s, d, s) NN, dV / dK (s, d, s) TN, with Q, K, V strided in a QKV
     * buffer as a layer holds them. */
    for (int s = 128; s <= 2048; s *= 2)
        for (int d = 64; d <= 128; d *= 2)
            for (int batch = 1; batch <= 64; batch *= 4) {
                int sh[3][4] = {{s, s, d, 1}, {s, d, s, 0}, {s, d, s, 2}};
                for (int j = 0; j < 3; j++) {
                    double f = 2.0 * sh[j][0] * sh[j][1] * sh[j][2] * batch;
                    if (f < (1 << 18) || f > P->max_gemm_flops ||
                        (double)s * 3 * d * batch > BUF_ELEMS || (double)s * s * batch > BUF_ELEMS)
                        continue;
                    point *p = add(P, K_BMM, PH_BMM);
                    if (!p)
                        continue;
                    p->m = sh[j][0], p->n = sh[j][1], p->k = sh[j][2], p->batch = batch;
                    p->ta = sh[j][3] == 2, p->tb = sh[j][3] == 1;
                    p->bytes = 4.0 * batch *
                               ((double)p->m * p->k + (double)p->k * p->n + (double)p->m * p->n);
                }
            }
    /* Memory-bound kernels from 4 Ki to 16 Mi elements. */
    static const int lncols[] = {512, 1024, 2048, 4096}, smcols[] = {128, 256, 512, 1024, 2048};
    int i = 0;
    for (size_t e = (size_t)1 << 12; e <= BUF_ELEMS; e *= 2, i++) {
        int ew[] = {K_BDA, K_DROP_F, K_DROP_B, K_GELU_F, K_GELU_B};
        for (int j = 0; j < 5; j++) {
            point *p = add(P, ew[j], PH_MEM);
            if (!p)
                continue;
            p->n = 1024;
            p->m = (int)(e / 1024 ? e / 1024 : 1);
            p->n = (int)(e / (size_t)p->m);
        }
        for (int j = 0; j < 2; j++) {
            point *p = add(P, j ? K_LN_B : K_LN_F, PH_MEM);
            if (!p)
                continue;
            p->n = lncols[i % 4] <= (int)e ? lncols[i % 4] : (int)e;
            p->m = (int)(e / (size_t)p->n);
        }
        int s = smcols[i % 5];
        while ((size_t)s * s > e)
            s /= 2;
        for (int j = 0; j < 2; j++) {
            point *p = add(P, j ? K_SM_B : K_SM_F, PH_MEM);
            if (!p)
                continue;
            p->n = s;
            p->m = (int)(e / (size_t)s / (size_t)s) * s; /* whole s x s blocks */
        }
    }
    for (int q = 0; q < P->npt; q++) {
        point *p = &P->pt[q];
        if (p->phase == PH_MEM)
            p->bytes = (double)p->m * p->n * kinfo[p->kind].bpe;
    }
    spread_order(P);
    /* Collectives: 1 KiB .. max_msg for every group size, p2p between pairs. */
    for (int g = 2; g <= P->maxg; g++)
        for (double b = 1024; b <= P->max_msg; b *= 2) {
            int ks[] = {K_AR, K_AG, K_RS, K_P2P};
            for (int j = 0; j < 4; j++) {
                if (ks[j] == K_P2P && g != 2)
                    continue;
                point *p = add(P, ks[j], PH_COLL);
                if (!p)
                    continue;
                p->group = g;
                p->bytes = b;
            }
        }
}

/* ---- kernels ------------------------------------------------------------------ */

static void run(prof *P, const point *p)
{
    size_t rows = (size_t)p->m, cols = (size_t)p->n, e = rows * cols;
    switch (p->kind) {
    case K_GEMM: {
        /* weight gradients (A transposed) accumulate into their buffer */
        int lda = p->ta ? p->m : p->k, ldb = p->tb ? p->k : p->n;
        cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
                    p->tb ? CblasTrans : CblasNoTrans, p->m, p->n, p->k, 1.0f, P->A, lda, P->B, ldb,
                    p->ta ? 1.0f : 0.0f, P->C, p->n);
        break;
    }
    case K_BMM: {
        /* heads side by side in a QKV-like buffer (ld = 3 d batch), score
         * blocks contiguous, outputs strided like a context tensor */
        int s = p->m, d = p->tb ? p->k : p->n, nb = p->batch;
        int ldq = 3 * d * nb, ldo = d * nb;
        for (int j = 0; j < nb; j++) {
            const float *q = P->A + (size_t)j * d, *kk = P->A + (size_t)(nb + j) * d;
            float *sc = P->B + (size_t)j * s * s;
            if (p->tb) /* S = Q K^T */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, d, 1.0f, q, ldq, kk, ldq,
                            0.0f, P->C + (size_t)j * s * s, s);
            else if (p->ta) /* dV = P^T dO */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s, d, s, 1.0f, sc, s, q, ldq,
                            0.0f, P->C + (size_t)j * d, ldo);
            else /* O = P V */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, d, s, 1.0f, sc, s, kk,
                            ldq, 0.0f, P->C + (size_t)j * d, ldo);
        }
        break;
    }
    case K_BDA:
        lk_bda_fwd(rows, cols, P->A, P->vb, P->B, P->C, P->mask, 0.1f, 1234u);
        break;
    case K_DROP_F:
        lk_dropout_fwd(e, P->A, P->C, P->mask, 0.1f, 99u);
        break;
    case K_DROP_B:
        lk_dropout_bwd(rows, cols, P->A, P->mask, 0.1f, P->C, P->v2);
        break;
    case K_GELU_F:
        lk_gelu_fwd(rows, cols, P->A, P->vb, P->C);
        break;
    case K_GELU_B:
        lk_gelu_bwd(rows, cols, P->A, P->vb, P->C, P->v2);
        break;
    case K_LN_F:
        lk_layernorm_fwd(rows, cols, P->A, P->v1, P->vb, P->C, P->v3, P->v4);
        break;
    case K_LN_B:
        lk_layernorm_bwd(rows, cols, P->A, P->B, P->C, P->v1, P->v3, P->v4, P->C, P->v2, P->v2);
        break;
    case K_SM_F:
        lk_softmax_fwd(rows / cols, cols, P->A, P->C);
        break;
    case K_SM_B:
        lk_softmax_bwd(rows / cols, cols, P->A, P->B, P->C);
        break;
    default: {
        MPI_Comm c = P->gcomm[p->group];
        if (c == MPI_COMM_NULL)
            break;
        int g = p->group, r;
        MPI_Comm_rank(c, &r);
        int cnt = (int)(p->bytes / 4);
        if (p->kind == K_AR)
            MPI_Allreduce(MPI_IN_PLACE, P->D, cnt, MPI_FLOAT, MPI_SUM, c);
        else if (p->kind == K_AG)
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, P->D, cnt / g, MPI_FLOAT, c);
        else if (p->kind == K_RS)
            MPI_Reduce_scatter_block(P->D, P->D + BUF_ELEMS, cnt / g, MPI_FLOAT, MPI_SUM, c);
        else
            MPI_Sendrecv(P->D, cnt, MPI_FLOAT, (r + 1) % g, 7, P->D + BUF_ELEMS, cnt, MPI_FLOAT,
                         (r + g - 1) % g, 7, c, MPI_STATUS_IGNORE);
    }
    }
}

/* One visit of a point: warm-up and rep choice on the first, then reps. */
static void measure(prof *P, point *p, double budget)
{
    if (p->inner == 0) {
        double t0 = MPI_Wtime(), t, tm;
        run(P, p);
        t = MPI_Wtime() - t0;
        MPI_Allreduce(&t, &tm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (tm < 10 * MIN_TIMED) { /* small kernels: a second warm-up, timed alone */
            t0 = MPI_Wtime();
            run(P, p);
            t = MPI_Wtime() - t0;
            MPI_Allreduce(&t, &tm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        if (tm < 1e-7)
            tm = 1e-7;
        p->inner = tm < MIN_TIMED ? (int)(MIN_TIMED / tm) + 1 : 1;
        /* collectives wait on every member: on a loaded machine one call can
         * take a scheduler slice, so their loops stay short */
        int cap = p->phase == PH_COLL ? 16 : 20000;
        if (p->inner > cap)
            p->inner = cap;
        int reps = (int)(budget / (tm * p->inner));
        p->reps = reps < 2 ? 2 : reps > 12 ? 12 : reps;
    }
    /* rank 0 cuts the visit short when a loaded machine stretches it well past
     * its share or the whole budget is spent (carried in the same reduction) */
    double start = MPI_Wtime();
    for (int r = 0; r < p->reps && p->ns < MAX_SAMPLES; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < p->inner; i++)
            run(P, p);
        double now = MPI_Wtime(), v[2], vm[2];
        v[0] = (now - t0) / p->inner;
        v[1] = P->rank == 0 && (now - start > 4 * budget || now - P->t0 > P->limit);
        MPI_Allreduce(v, vm, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        p->s[p->ns++] = vm[0];
        if (vm[1] > 0)
            break;
    }
}

/* ---- output ------------------------------------------------------------------ */

static void now_iso(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void cpu_info(char *model, size_t n, double *mhz, int *flops_per_cycle)
{
    snprintf(model, n, "unknown");
    *mhz = 0;
    *flops_per_cycle = 8;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[4096];
    int got_model = 0, got_flags = 0;
    while (fgets(line, sizeof line, f)) {
        char *v = strchr(line, ':');
        if (!v)
            continue;
        v++;
        while (*v == ' ')
            v++;
        v[strcspn(v, "\n")] = '\0';
        if (!got_model && !strncmp(line, "model name", 10)) {
            snprintf(model, n, "%s", v);
            got_model = 1;
        } else if (*mhz == 0 && !strncmp(line, "cpu MHz", 7)) {
            *mhz = atof(v);
        } else if (!got_flags && !strncmp(line, "flags", 5)) {
            /* fp32 FLOPs per cycle per core: two FMA pipes of the widest vectors */
            char pad[4200];
            snprintf(pad, sizeof pad, " %s ", v);
            if (strstr(pad, " avx512f "))
                *flops_per_cycle = 64;
            else if (strstr(pad, " avx2 ") && strstr(pad, " fma "))
                *flops_per_cycle = 32;
            else if (strstr(pad, " avx "))
                *flops_per_cycle = 16;
            got_flags = 1;
        }
    }
    fclose(f);
}

static double mem_total_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    double kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

static const char *level_name(int lv)
{
    return lv == 2 ? "inter" : "intra";
}

typedef struct summary {
    double gemm_best;   /* FLOP/s, best measured GEMM */
    double mem_best;    /* bytes/s, best streaming kernel (>= 4 Mi elements) */
    double p2p_bw[3];   /* bytes/s at the largest message, by level */
    double ar_busbw[3]; /* all-reduce bus bandwidth at the largest message, by level */
    double ar_lat[3];   /* s per ring step of the smallest all-reduce, by level */
    double k_lat;       /* s, fixed cost of a small kernel */
} summary;

static void summarize(const prof *P, summary *S)
{
    memset(S, 0, sizeof *S);
    double small_t = 0, small_b = 0;
    for (int i = 0; i < P->npt; i++) {
        const point *p = &P->pt[i];
        if (!p->ns)
            continue;
        double t = median(p->s, p->ns);
        if (p->kind == K_GEMM || p->kind == K_BMM) {
            double f = 2.0 * p->m * p->n * p->k * p->batch / t;
            S->gemm_best = f > S->gemm_best ? f : S->gemm_best;
        } else if (p->phase == PH_MEM) {
            if ((double)p->m * p->n >= (1 << 22) && p->bytes / t > S->mem_best)
                S->mem_best = p->bytes / t;
            if (p->kind == K_DROP_F && (small_b == 0 || p->bytes < small_b)) {
                small_b = p->bytes;
                small_t = t;
            }
        } else if (p->phase == PH_COLL) {
            int lv = P->glevel[p->group];
            double g = p->group;
            if (p->kind == K_P2P && p->bytes >= P->max_msg)
                S->p2p_bw[lv] = p->bytes / t;
            if (p->kind == K_AR && p->bytes >= P->max_msg) {
                double bb = p->bytes / t * 2 * (g - 1) / g;
                S->ar_busbw[lv] = bb > S->ar_busbw[lv] ? bb : S->ar_busbw[lv];
            }
            if (p->kind == K_AR && p->bytes <= 1024) {
                double l = t / (2 * (g - 1));
                S->ar_lat[lv] = S->ar_lat[lv] == 0 || l < S->ar_lat[lv] ? l : S->ar_lat[lv];
            }
        }
    }
    S->k_lat = small_t - (S->mem_best > 0 ? small_b / S->mem_best : 0);
    if (S->k_lat < 5e-8)
        S->k_lat = 5e-8;
}

static double clamp01(double x)
{
    return x > 1 ? 1 : x <= 0 ? 1 : x;
}

static int write_hw(const prof *P, const char *path, const char *name, const char *host,
                    const char *cpu, double mhz, int fpc, int per_host, const char *date)
{
    summary S;
    summarize(P, &S);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    double peak = fpc * mhz * 1e6;
    const char *peak_src = "CPU flags and clock from /proc/cpuinfo: two FMA pipes of the widest "
                           "vector unit per core";
    if (!(peak > 0) || S.gemm_best > peak) {
        peak = S.gemm_best;
        peak_src = "no clock in /proc/cpuinfo: best measured GEMM taken as peak";
    }
    int lv = S.p2p_bw[1] > 0 ? 1 : 2;
    double bw = S.p2p_bw[lv] > 0 ? S.p2p_bw[lv] : S.ar_busbw[lv];
    double ibw = S.p2p_bw[2] > 0 ? S.p2p_bw[2] : bw;
    double ieff = S.p2p_bw[2] > 0 && S.ar_busbw[2] > 0 ? S.ar_busbw[2] / S.p2p_bw[2] : 0;
    double lat = S.ar_lat[lv], ilat = S.ar_lat[2] > 0 ? S.ar_lat[2] : lat;
    if (!(bw > 0))
        bw = ibw = S.mem_best; /* a one-rank job: ranks would talk through memory */
    double mem = mem_total_bytes() / per_host;
    const char *by = "measured by tools/profiler";
    fprintf(f,
            "# Hardware catalog entry written by tools/profiler for the machine it measured\n"
            "# (format of sweeps/catalog/hardware.yaml). One device = one MPI rank.\n"
            "hardware:\n"
            "  - name: %s\n"
            "    description: \"%s, one core per rank, %d ranks per host (%s)\"\n"
            "    peak_tflops: {fp32: %.6g}\n"
            "    mem_gib: %.4g\n"
            "    mem_gbps: %.4g\n"
            "    devices_per_node: %d\n"
            "    compute_units: 1\n"
            "    gemm_tile: [1, 1]\n"
            "    intra_gbps: %.4g\n"
            "    inter_gbps: %.4g\n"
            "    intra_latency_us: %.4g\n"
            "    inter_latency_us: %.4g\n"
            "    kernel_latency_us: %.4g\n"
            "    gemm_efficiency: %.4g\n"
            "    clock_ratio: 1.0\n"
            "    mem_efficiency: 1.0\n"
            "    intra_efficiency: %.4g\n"
            "    inter_efficiency: %.4g\n"
            "    variability: 0.0\n"
            "    sources:\n",
            name, cpu, per_host, host, peak / 1e12, mem / 1073741824.0, S.mem_best / 1e9, per_host,
            bw / 1e9, ibw / 1e9, lat * 1e6, ilat * 1e6, S.k_lat * 1e6, clamp01(S.gemm_best / peak),
            clamp01(S.ar_busbw[lv] / bw), clamp01(ieff));
    fprintf(f,
            "      peak_tflops: \"%s (%d FLOP/cycle x %.0f MHz).\"\n"
            "      mem_gib: \"MemTotal of /proc/meminfo divided by the ranks on the host.\"\n"
            "      mem_gbps: \"%s on %s, %s: best streaming kernel (>= 4 Mi elements) with every "
            "rank busy; the achieved figure, so mem_efficiency is 1.\"\n"
            "      devices_per_node: \"MPI ranks on the profiled host.\"\n"
            "      compute_units: \"one core per rank.\"\n"
            "      gemm_tile: \"OpenBLAS handles ragged edges itself: no tile quantization.\"\n"
            "      intra_gbps: \"%s: send/recv bandwidth at the largest message%s.\"\n"
            "      inter_gbps: \"%s\"\n"
            "      intra_latency_us: \"%s: smallest all-reduce time per ring step.\"\n"
            "      inter_latency_us: \"%s\"\n"
            "      kernel_latency_us: \"%s: time of the smallest dropout kernel less its "
            "traffic at mem_gbps.\"\n"
            "      gemm_efficiency: \"%s: best GEMM %.4g GFLOP/s with every rank busy / "
            "peak.\"\n"
            "      clock_ratio: \"Project convention: 1.0.\"\n"
            "      mem_efficiency: \"Achieved bandwidth is recorded as mem_gbps.\"\n"
            "      intra_efficiency: \"%s: all-reduce bus bandwidth at the largest message / "
            "intra_gbps.\"\n"
            "      inter_efficiency: \"%s\"\n"
            "      variability: \"Profiled with every rank busy on one host: no spread "
            "beyond what the profile holds.\"\n",
            peak_src, fpc, mhz, by, host, date, by,
            S.p2p_bw[lv] > 0 ? ""
                             : " (all-reduce bus "
                               "bandwidth: no send/recv measured)",
            S.p2p_bw[2] > 0 ? "measured by tools/profiler across hosts."
                            : "single-host profile: no inter-node measurement, intra value "
                              "repeated.",
            by,
            S.ar_lat[2] > 0 ? "measured by tools/profiler across hosts."
                            : "single-host profile: intra value repeated.",
            by, by, S.gemm_best / 1e9, by,
            S.p2p_bw[2] > 0 ? "measured by tools/profiler across hosts."
                            : "single-host profile: none measured; 1 by convention.");
    int rc = fclose(f);
    if (rc)
        perror(path);
    return rc ? -1 : 0;
}

static int write_csv(const prof *P, const char *path, const char *host, const char *cpu,
                     int per_host, const char *date, double wall, int threads)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n,")] = '\0';
    int skipped = 0;
    for (int i = 0; i < P->npt; i++)
        skipped += P->pt[i].ns == 0;
    fprintf(f,
            "# ccsweep calibration profile written by tools/profiler\n"
            "# host: %s\n"
            "# cpu: %s\n"
            "# blas: %s\n"
            "# blas_threads: %d\n"
            "# mpi: %s\n"
            "# ranks: %d (%d per host); compute timed on every rank at once, slowest rank\n"
            "# date: %s\n"
            "# profiling_wall_s: %.1f\n"
            "# budget_s: %.0f\n"
            "# passes: %d\n"
            "# max_gemm_flops: %.4g\n"
            "# points: %d measured, %d skipped for the budget\n"
            "# time_s: median of reps samples (each the slowest rank's time of one call)\n",
            host, cpu, openblas_get_config(), threads, lib, P->size, per_host, date, wall,
            P->budget, P->passes, P->max_gemm_flops, P->npt - skipped, skipped);
    char pbuf[NOISE_MAX_PROBES * 16];
    noise_verdict v;
    noise_judge(P->probes, P->nprobe, NOISE_TOL, &v);
    if (noise_format(P->probes, P->nprobe, pbuf, sizeof pbuf) == 0)
        fprintf(f, "# probe_s: %s\n", pbuf);
    fprintf(f, "# precheck: %s\n", P->precheck);
    fprintf(f,
            "# interference: %s (probe %dx%dx%d fp32 GEMM: fastest %.4g s, median +%.1f%%, "
            "slowest +%.1f%%; %d phase passes measured again)\n",
            v.busy ? "busy" : "none", PROBE_N, PROBE_N, PROBE_N, v.fastest,
            100 * noise_slowdown(v.median, v.fastest), 100 * v.slowdown, P->remeasured);
    fprintf(f, "op,dtype,m,n,k,bytes,group,level,time_s,reps\n");
    for (int i = 0; i < P->npt; i++) {
        const point *p = &P->pt[i];
        if (!p->ns)
            continue;
        double t = median(p->s, p->ns);
        if (p->phase == PH_COLL)
            fprintf(f, "%s,fp32,0,0,0,%.0f,%d,%s,%.6e,%d\n", kinfo[p->kind].op, p->bytes, p->group,
                    level_name(P->glevel[p->group]), t, p->ns);
        else
            fprintf(f, "%s,fp32,%d,%d,%g,%.0f,%d,,%.6e,%d\n", kinfo[p->kind].op, p->m, p->n,
                    p->phase == PH_MEM ? kinfo[p->kind].fpe : (double)p->k, p->bytes,
                    p->phase == PH_MEM ? 1 : p->batch, t, p->ns);
    }
    int rc = fclose(f);
    if (rc)
        perror(path);
    return rc ? -1 : 0;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -n N profiler [--budget SECONDS] [--out FILE] [--hw-out FILE]\n"
               "                   [--hw-name NAME] [--max-gemm-flops F] [--max-msg BYTES]\n"
               "                   [--passes P] [--threads T] [--quiet]\n\n"
               "Measures GEMMs (a spread of shapes and Transformer-layer shapes up to\n"
               "--max-gemm-flops, default 1.07e9), batched attention GEMMs, the layer's\n"
               "memory-bound kernels, and MPI all-reduce / all-gather / reduce-scatter /\n"
               "send-recv from 1 KiB to --max-msg (default 64 MiB) for every group size,\n"
               "and writes a calibration profile (--out, default profile.csv) and a\n"
               "hardware catalog entry (--hw-out) named --hw-name (default: the host).\n"
               "--budget (default 100 s) bounds the time: repetitions shrink to fit, and\n"
               "points not reached are left out. BLAS threads per rank: --threads (1).\n");
}

/* The command line, beside what it sets in prof. */
typedef struct prof_args {
    const char *out, *hw_out, *hw_name;
    int threads;
} prof_args;

/* Parse argv into *P and *a: 0, 1 on a bad command line (the message and
 * usage printed by rank 0), or -1 after --help. */
static int parse_prof_args(int argc, char **argv, prof *P, prof_args *a)
{
    P->budget = 100;
    P->passes = 3;
    P->max_gemm_flops = 1 << 30;
    P->max_msg = 64.0 * 1048576;
    a->out = "profile.csv";
    a->hw_out = a->hw_name = NULL;
    a->threads = 1;
    static const struct option opts[] = {{"budget", required_argument, 0, 'b'},
                                         {"out", required_argument, 0, 'o'},
                                         {"hw-out", required_argument, 0, 'w'},
                                         {"hw-name", required_argument, 0, 'n'},
                                         {"max-gemm-flops", required_argument, 0, 'f'},
                                         {"max-msg", required_argument, 0, 'm'},
                                         {"passes", required_argument, 0, 'p'},
                                         {"threads", required_argument, 0, 't'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c, bad = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            P->budget = atof(optarg);
            bad |= !(P->budget > 0);
            break;
        case 'o':
            a->out = optarg;
            break;
        case 'w':
            a->hw_out = optarg;
            break;
        case 'n':
            a->hw_name = optarg;
            break;
        case 'f':
            P->max_gemm_flops = atof(optarg);
            bad |= !(P->max_gemm_flops >= 1e6);
            break;
        case 'm':
            P->max_msg = atof(optarg);
            bad |= !(P->max_msg >= 1024);
            break;
        case 'p':
            P->passes = atoi(optarg);
            bad |= P->passes < 1 || P->passes > 8;
            break;
        case 't':
            a->threads = atoi(optarg);
            bad |= a->threads < 1;
            break;
        case 'q':
            P->quiet = 1;
            break;
        case 'h':
            if (P->rank == 0)
                usage(stdout);
            return -1;
        default:
            bad = 1;
        }
    }
    if (bad || optind < argc || P->max_msg > 4.0 * BUF_ELEMS) {
        if (P->rank == 0) {
            fprintf(stderr, "profiler: bad option or value (--max-msg at most %.0f)\n",
                    4.0 * BUF_ELEMS);
            usage(stderr);
        }
        return 1;
    }
    return 0;
}

/* The groups of ranks 0..g-1 (g = 2..64) and whether each stays on rank 0's
 * host (host: this rank's name); the number of ranks on rank 0's host. */
static int setup_groups(prof *P, const char *host)
{
    char *hosts = malloc((size_t)P->size * HOST_MAX);
    if (!hosts)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Allgather(host, HOST_MAX, MPI_CHAR, hosts, HOST_MAX, MPI_CHAR, MPI_COMM_WORLD);
    int per_host = 0, same = 1;
    for (int r = 0; r < P->size; r++)
        per_host += !strcmp(hosts + (size_t)r * HOST_MAX, hosts);
    P->maxg = P->size < 64 ? P->size : 64;
    for (int g = 2; g <= P->maxg; g++) {
        same &= !strcmp(hosts + (size_t)(g - 1) * HOST_MAX, hosts);
        P->glevel[g] = same ? 1 : 2;
        MPI_Comm_split(MPI_COMM_WORLD, P->rank < g ? 0 : MPI_UNDEFINED, P->rank, &P->gcomm[g]);
    }
    free(hosts);
    return per_host;
}

/* The points table and the kernels' buffers, filled with their inputs. */
static void setup_buffers(prof *P)
{
    P->pt = calloc(MAX_POINTS, sizeof *P->pt);
    P->A = malloc(BUF_ELEMS * sizeof(float));
    P->B = malloc(BUF_ELEMS * sizeof(float));
    P->C = malloc(BUF_ELEMS * sizeof(float));
    P->D = malloc(2 * BUF_ELEMS * sizeof(float));
    P->v1 = malloc(5 * (BUF_ELEMS / 16) * sizeof(float));
    P->mask = malloc(BUF_ELEMS);
    if (!P->pt || !P->A || !P->B || !P->C || !P->D || !P->v1 || !P->mask) {
        fprintf(stderr, "profiler: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    P->vb = P->v1 + BUF_ELEMS / 16;
    P->v2 = P->vb + BUF_ELEMS / 16;
    P->v3 = P->v2 + BUF_ELEMS / 16;
    P->v4 = P->v3 + BUF_ELEMS / 16;
    /* Inputs about standard normal (a sum of four uniforms): what a layer's
     * activations look like, and libm's tanhf/expf take data-dependent paths,
     * so the value range matters (tools/groundtruth initialises likewise). */
    uint32_t st = 12345u + (uint32_t)P->rank;
    for (size_t i = 0; i < BUF_ELEMS; i++) {
        float u[2];
        for (int q = 0; q < 2; q++) {
            float sum = 0;
            for (int k = 0; k < 4; k++) {
                st = lk_hash(st + (uint32_t)i + 0x9e3779b9U * (uint32_t)k);
                sum += (float)(st >> 8) / 16777216.0f;
            }
            u[q] = (sum - 2.0f) * 1.7320508f;
        }
        P->A[i] = u[0];
        P->B[i] = u[1];
        P->C[i] = 0;
        P->mask[i] = (uint8_t)(st & 1);
    }
    memset(P->D, 0, 2 * BUF_ELEMS * sizeof(float));
    for (size_t i = 0; i < BUF_ELEMS / 16; i++) {
        P->v1[i] = 1.0f + 1e-3f * (float)(i % 97);
        P->vb[i] = 0.01f + 1e-4f * (float)(i % 89);
        P->v2[i] = 0;
        P->v3[i] = 0.01f * (float)(i % 7);
        P->v4[i] = 1.0f;
    }
}

static void free_buffers(prof *P)
{
    free(P->pt);
    free(P->A);
    free(P->B);
    free(P->C);
    free(P->D);
    free(P->v1);
    free(P->mask);
}

/* One pass over phase ph's points (cap: the phase's share of the budget,
 * per: each point's, ph0: when the phase began); 1 when the budget ran out. */
static int phase_points(prof *P, int pass, int ph, double cap, double per, double ph0)
{
    int stop = 0;
    for (int i = 0; i < P->npt && !stop; i++) {
        point *p = &P->pt[i];
        if (p->phase != ph || (pass > 0 && p->ns == 0))
            continue;
        int go = 1;
        if (P->rank == 0) {
            double now = MPI_Wtime();
            stop = now - P->t0 > P->limit;
            go = !stop && (pass > 0 || now - ph0 <= cap || p->layer);
        }
        int flags[2] = {stop, go};
        MPI_Bcast(flags, 2, MPI_INT, 0, MPI_COMM_WORLD);
        stop = flags[0];
        if (flags[1])
            measure(P, p, per);
    }
    return stop;
}

/* Interference: the probe after the phase pass is compared with the fastest
 * so far; 1 (on every rank) when it is slower by more than NOISE_TOL and the
 * pass may be measured again (at most twice, within 1.5x the budget). */
static int probe_redo(prof *P, int ph, int can_redo, int retry)
{
    if (P->nprobe >= NOISE_MAX_PROBES)
        return 0;
    double pt = probe_time(&P->pr, MPI_COMM_WORLD), fast = pt;
    for (int k = 0; k < P->nprobe; k++)
        fast = P->probes[k] < fast ? P->probes[k] : fast;
    P->probes[P->nprobe++] = pt;
    int redo = can_redo && retry < 2 && noise_slowdown(pt, fast) > NOISE_TOL;
    if (P->rank == 0)
        redo = redo && MPI_Wtime() - P->t0 < 1.5 * P->budget;
    MPI_Bcast(&redo, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (redo && P->rank == 0 && !P->quiet)
        fprintf(stderr,
                "profiler: the probe ran %.0f%% slow after %s (other load?): "
                "measuring that pass again\n",
                100 * noise_slowdown(pt, fast), phase_name[ph]);
    return redo;
}

/* Phase ph's part of a pass, measured again while the probe says it was
 * disturbed (its samples dropped first); 1 when the budget ran out. */
static int phase_pass(prof *P, int pass, int ph, int nph, double cap)
{
    double per = cap / P->passes / nph, ph0 = MPI_Wtime();
    int retry = 0, stop;
    int *ns0 = malloc(sizeof(int) * (size_t)P->npt);
    for (int i = 0; ns0 && i < P->npt; i++)
        ns0[i] = P->pt[i].ns;
    for (;;) {
        stop = phase_points(P, pass, ph, cap, per, ph0);
        if (!probe_redo(P, ph, ns0 != NULL, retry))
            break;
        for (int i = 0; i < P->npt; i++)
            if (P->pt[i].phase == ph)
                P->pt[i].ns = ns0[i];
        retry++;
        P->remeasured++;
        P->limit = 1.5 * P->budget;
        ph0 = MPI_Wtime();
    }
    free(ns0);
    P->limit = P->budget;
    if (P->rank == 0 && !P->quiet)
        fprintf(stderr, "profiler: pass %d/%d: %s done (%d points), %.1f s\n", pass + 1, P->passes,
                phase_name[ph], nph, MPI_Wtime() - P->t0);
    return stop;
}

/* Every pass over every phase, after the pre-check and the first probe; the
 * wall time from the first probe. The first pass gives each phase at most its
 * share of the budget (points it does not reach are left out, evenly thanks
 * to the order); later passes add repetitions to the points measured while
 * the budget lasts. */
static double run_passes(prof *P)
{
    /* budget shares: GEMMs dominate layers, collectives need several sizes */
    double share[PH_N] = {0.40, 0.15, 0.20, P->size > 1 ? 0.25 : 0};
    int nph[PH_N] = {0};
    for (int i = 0; i < P->npt; i++)
        nph[P->pt[i].phase]++;
    double tot = 0;
    for (int q = 0; q < PH_N; q++)
        tot += nph[q] ? share[q] : 0;
    if (probe_init(&P->pr)) {
        fprintf(stderr, "profiler: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (probe_precheck(MPI_COMM_WORLD, P->precheck, sizeof P->precheck) && P->rank == 0)
        fprintf(stderr,
                "profiler: the pre-check found the machine busy (%s): the timings will include "
                "that load\n",
                P->precheck + 6);
    probe_time(&P->pr, MPI_COMM_WORLD); /* warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    P->t0 = MPI_Wtime();
    P->limit = P->budget;
    P->probes[P->nprobe++] = probe_time(&P->pr, MPI_COMM_WORLD);
    int stop = 0;
    for (int pass = 0; pass < P->passes && !stop; pass++)
        for (int ph = 0; ph < PH_N && !stop; ph++)
            if (nph[ph])
                stop = phase_pass(P, pass, ph, nph[ph], P->budget * share[ph] / tot);
    return MPI_Wtime() - P->t0;
}

/* Rank 0: the profile, the hardware entry and the verdict. 0, or nonzero
 * when a file could not be written. */
static int write_outputs(const prof *P, const prof_args *a, const char *host, int per_host,
                         double wall)
{
    char cpu[256], date[32];
    double mhz;
    int fpc, rc = 0;
    cpu_info(cpu, sizeof cpu, &mhz, &fpc);
    now_iso(date, sizeof date);
    rc |= write_csv(P, a->out, host, cpu, per_host, date, wall, a->threads);
    if (a->hw_out)
        rc |= write_hw(P, a->hw_out, a->hw_name ? a->hw_name : host, host, cpu, mhz, fpc, per_host,
                       date);
    if (!P->quiet)
        fprintf(stderr, "profiler: %d points in %.1f s -> %s%s%s\n", P->npt, wall, a->out,
                a->hw_out ? ", " : "", a->hw_out ? a->hw_out : "");
    noise_verdict v;
    noise_judge(P->probes, P->nprobe, NOISE_TOL, &v);
    if (v.busy)
        fprintf(stderr,
                "profiler: warning: the machine was busy (the probe ran a median %.0f%% "
                "slower than its fastest): these timings are disturbed by other load; "
                "'ccsweep validate' will refuse them\n",
                100 * noise_slowdown(v.median, v.fastest));
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    prof P;
    memset(&P, 0, sizeof P);
    MPI_Comm_rank(MPI_COMM_WORLD, &P.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P.size);
    prof_args a;
    int parsed = parse_prof_args(argc, argv, &P, &a);
    if (parsed) {
        MPI_Finalize();
        return parsed < 0 ? 0 : 1;
    }
    openblas_set_num_threads(a.threads);
    char host[HOST_MAX] = {0};
    gethostname(host, sizeof host - 1);
    int per_host = setup_groups(&P, host);
    setup_buffers(&P);
    build_points(&P);
    double wall = run_passes(&P);
    int rc = P.rank == 0 ? write_outputs(&P, &a, host, per_host, wall) : 0;
    for (int g = 2; g <= P.maxg; g++)
        if (P.gcomm[g] != MPI_COMM_NULL)
            MPI_Comm_free(&P.gcomm[g]);
    probe_free(&P.pr);
    free_buffers(&P);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc ? 2 : 0;
}
