/* groundtruth.c - execute real tensor-parallel Transformer layers (fp32,
 * CBLAS + MPI) forward and backward, and time every region and the whole
 * iteration: the measurement `ccsweep validate` compares projections with.
 *
 *   mpirun -n 2 build/tools/groundtruth --config configs.txt --out measured.csv
 *
 * The layer is written here from the Megatron-LM structure (GPT block:
 * LayerNorm, column-parallel QKV, causal softmax attention with dropout,
 * row-parallel projection, all-reduce, bias-dropout-add; LayerNorm, column-
 * parallel FC1 + bias-GeLU, row-parallel FC2, all-reduce, bias-dropout-add;
 * backward with input and weight gradients, bias gradients and the all-reduces
 * at the blocks' inputs), not from src/cost/regions.c, so a wrong operator list
 * there shows up as projection error. Each configuration's TP group is tp
 * consecutive ranks; with fewer than all ranks per group, the other groups run
 * the same configuration at the same time (every device busy, as profiled).
 * Configurations are measured round-robin, one iteration each per round, so
 * slow drift of a shared machine spreads over all of them; per round the
 * iteration counts at its slowest rank, and the CSV keeps the median over
 * rounds (tools/profiler reports the median of its samples likewise). */
#include <cblas.h>
#include <getopt.h>
#include <math.h>
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

void openblas_set_num_threads(int);
char *openblas_get_config(void);

#define MAX_CFG 64
#define MAX_ROUNDS 32
#define MAX_TRACE 64
#define DROP_P 0.1f

enum { R_FA, R_FA_TP, R_FM, R_FM_TP, R_BM, R_BM_TP, R_BA, R_BA_TP, R_TOTAL, R_N };
static const char *const rname[R_N] = {"fwd.attn",   "fwd.attn.tp", "fwd.mlp",
                                       "fwd.mlp.tp", "bwd.mlp",     "bwd.mlp.tp",
                                       "bwd.attn",   "bwd.attn.tp", "total_s"};

typedef struct layer {
    /* weights (this rank's shards) and their gradients */
    float *wqkv, *bqkv, *wo, *bo, *w1, *b1, *w2, *b2, *g1, *e1, *g2, *e2;
    float *dwqkv, *dbqkv, *dwo, *dbo, *dw1, *db1, *dw2, *db2, *dg1, *de1, *dg2, *de2;
    /* activations kept for the backward pass */
    float *ln1, *mu1, *rs1, *qkv, *P, *Pd, *ctx, *o, *x2, *ln2, *mu2, *rs2, *h1, *g, *o2;
    uint8_t *mP, *mA, *mM;
} layer;

typedef struct cfg {
    char name[64];
    int h, a, f, s, b, t, L;
    int d, at, hl, fl, tok;
    MPI_Comm tp;
    float *arena;
    uint8_t *barena;
    layer *ly;
    float **x; /* L+1 layer inputs/outputs */
    float *gout, *gA, *gB, *dout, *dg, *dln, *dctx, *dqkv, *dP, *dx2;
    double samp[MAX_ROUNDS][R_N];
    int nsamp;
    int nops; /* --trace: operators, fastest time each (rank 0) */
    const char *opname[MAX_TRACE];
    double opbest[MAX_TRACE];
    uint32_t seed;
} cfg;

typedef struct arena {
    float *f;
    uint8_t *b;
    size_t nf, nb;
    int count; /* 1: only count sizes */
} arena;

static float *takef(arena *A, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    float *p = A->count ? NULL : A->f + A->nf;
    A->nf += n;
    return p;
}

static uint8_t *takeb(arena *A, size_t n)
{
    n = (n + 63) & ~(size_t)63;
    uint8_t *p = A->count ? NULL : A->b + A->nb;
    A->nb += n;
    return p;
}

static void carve(cfg *c, arena *A)
{
    size_t tok = (size_t)c->tok, h = (size_t)c->h, hl = (size_t)c->hl, fl = (size_t)c->fl;
    size_t sc = (size_t)c->b * c->at * c->s * c->s;
    for (int l = 0; l < c->L; l++) {
        layer *y = &c->ly[l];
        y->wqkv = takef(A, h * 3 * hl), y->dwqkv = takef(A, h * 3 * hl);
        y->bqkv = takef(A, 3 * hl), y->dbqkv = takef(A, 3 * hl);
        y->wo = takef(A, hl * h), y->dwo = takef(A, hl * h);
        y->bo = takef(A, h), y->dbo = takef(A, h);
        y->w1 = takef(A, h * fl), y->dw1 = takef(A, h * fl);
        y->b1 = takef(A, fl), y->db1 = takef(A, fl);
        y->w2 = takef(A, fl * h), y->dw2 = takef(A, fl * h);
        y->b2 = takef(A, h), y->db2 = takef(A, h);
        y->g1 = takef(A, h), y->e1 = takef(A, h), y->g2 = takef(A, h), y->e2 = takef(A, h);
        y->dg1 = takef(A, h), y->de1 = takef(A, h), y->dg2 = takef(A, h), y->de2 = takef(A, h);
        y->ln1 = takef(A, tok * h), y->mu1 = takef(A, tok), y->rs1 = takef(A, tok);
        y->qkv = takef(A, tok * 3 * hl);
        y->P = takef(A, sc), y->Pd = takef(A, sc), y->mP = takeb(A, sc);
        y->ctx = takef(A, tok * hl), y->o = takef(A, tok * h), y->mA = takeb(A, tok * h);
        y->x2 = takef(A, tok * h), y->ln2 = takef(A, tok * h);
        y->mu2 = takef(A, tok), y->rs2 = takef(A, tok);
        y->h1 = takef(A, tok * fl), y->g = takef(A, tok * fl);
        y->o2 = takef(A, tok * h), y->mM = takeb(A, tok * h);
    }
    for (int l = 0; l <= c->L; l++)
        c->x[l] = takef(A, tok * h);
    c->gout = takef(A, tok * h), c->gA = takef(A, tok * h), c->gB = takef(A, tok * h);
    c->dout = takef(A, tok * h), c->dln = takef(A, tok * h), c->dx2 = takef(A, tok * h);
    c->dg = takef(A, tok * fl), c->dctx = takef(A, tok * hl), c->dqkv = takef(A, tok * 3 * hl);
    c->dP = takef(A, sc);
}

static int cfg_alloc(cfg *c, int rank)
{
    c->d = c->h / c->a;
    c->at = c->a / c->t;
    c->hl = c->h / c->t;
    c->fl = c->f / c->t;
    c->tok = c->b * c->s;
    c->ly = calloc((size_t)c->L, sizeof *c->ly);
    c->x = calloc((size_t)c->L + 1, sizeof *c->x);
    if (!c->ly || !c->x)
        return -1;
    arena A = {0};
    A.count = 1;
    carve(c, &A);
    c->arena = malloc(A.nf * sizeof(float));
    c->barena = malloc(A.nb);
    if (!c->arena || !c->barena)
        return -1;
    /* first touch now, not inside a timed iteration; uniform in +-0.02 */
    uint32_t st = 777u + (uint32_t)rank * 31u + (uint32_t)c->h;
    for (size_t i = 0; i < A.nf; i++) {
        st = lk_hash(st + (uint32_t)i);
        c->arena[i] = ((float)(st >> 8) / 16777216.0f - 0.5f) * 0.04f;
    }
    memset(c->barena, 1, A.nb);
    arena B = {c->arena, c->barena, 0, 0, 0};
    carve(c, &B);
    /* Weights uniform with variance 1/fan_in, so activations (the input, the
     * scores, the GeLU pre-activations) are about unit variance: libm's
     * tanhf/expf take data-dependent paths, and tools/profiler feeds its
     * kernels unit-variance inputs too. Layernorm scales near 1. */
    for (int l = 0; l < c->L; l++) {
        layer *y = &c->ly[l];
        struct {
            float *w;
            size_t n;
            double fan;
        } ws[] = {{y->wqkv, (size_t)c->h * 3 * c->hl, c->h},
                  {y->wo, (size_t)c->hl * c->h, c->hl},
                  {y->w1, (size_t)c->h * c->fl, c->h},
                  {y->w2, (size_t)c->fl * c->h, c->fl}};
        for (int k = 0; k < 4; k++) {
            float sc = (float)(sqrt(3.0 / ws[k].fan) / 0.02);
            for (size_t i = 0; i < ws[k].n; i++)
                ws[k].w[i] *= sc;
        }
        for (int j = 0; j < c->h; j++)
            y->g1[j] += 1.0f, y->g2[j] += 1.0f;
    }
    for (size_t i = 0; i < (size_t)c->tok * c->h; i++)
        c->x[0][i] *= (float)(sqrt(3.0) / 0.02), c->gout[i] *= 0.1f;
    return 0;
}

static void cfg_free(cfg *c)
{
    free(c->arena);
    free(c->barena);
    free(c->ly);
    free(c->x);
}

/* ---- one iteration ------------------------------------------------------------ */

typedef struct timer {
    double last, t[R_N];
    int trace, nop, nfwd; /* --trace: time every operator too */
    double mark, op[MAX_TRACE];
    const char *name[MAX_TRACE];
} timer;

static void tick(timer *T, int r)
{
    double now = MPI_Wtime();
    T->t[r] += now - T->last;
    T->last = now;
}

/* --trace: the time since the previous operator ends this one (per layer in
 * program order; layers of one iteration add up). */
static void op(timer *T, const char *name)
{
    if (!T->trace)
        return;
    double now = MPI_Wtime();
    if (T->nop < MAX_TRACE) {
        T->name[T->nop] = name;
        T->op[T->nop] += now - T->mark;
    }
    T->nop++;
    T->mark = now;
}

static void allreduce(cfg *c, float *buf, size_t n)
{
    if (c->t > 1)
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, c->tp);
}

static void forward(cfg *c, int l, timer *T)
{
    layer *y = &c->ly[l];
    int tok = c->tok, h = c->h, hl = c->hl, fl = c->fl, s = c->s, d = c->d, q3 = 3 * hl;
    float alpha = 1.0f / sqrtf((float)d);
    const float *X = c->x[l];
    float *Y = c->x[l + 1];
    size_t ss = (size_t)s * s;
    T->nop = 0; /* every layer adds into the same operator slots */

    lk_layernorm_fwd((size_t)tok, (size_t)h, X, y->g1, y->e1, y->ln1, y->mu1, y->rs1);
    op(T, "fwd ln1");
    lk_bias_rows((size_t)tok, (size_t)q3, y->bqkv, y->qkv);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tok, q3, h, 1.0f, y->ln1, h, y->wqkv, q3,
                1.0f, y->qkv, q3);
    op(T, "fwd qkv (bias + gemm)");
    for (int bi = 0; bi < c->b; bi++)
        for (int j = 0; j < c->at; j++) {
            const float *Q = y->qkv + (size_t)bi * s * q3 + (size_t)j * d, *K = Q + hl;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, d, alpha, Q, q3, K, q3, 0.0f,
                        y->P + ((size_t)bi * c->at + j) * ss, s);
        }
    op(T, "fwd scores bmm");
    lk_softmax_fwd((size_t)c->b * c->at, (size_t)s, y->P, y->P);
    op(T, "fwd softmax");
    lk_dropout_fwd((size_t)c->b * c->at * ss, y->P, y->Pd, y->mP, DROP_P, c->seed++);
    op(T, "fwd attn dropout");
    for (int bi = 0; bi < c->b; bi++)
        for (int j = 0; j < c->at; j++) {
            const float *V = y->qkv + (size_t)bi * s * q3 + 2 * (size_t)hl + (size_t)j * d;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, d, s, 1.0f,
                        y->Pd + ((size_t)bi * c->at + j) * ss, s, V, q3, 0.0f,
                        y->ctx + (size_t)bi * s * hl + (size_t)j * d, hl);
        }
    op(T, "fwd context bmm");
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tok, h, hl, 1.0f, y->ctx, hl, y->wo, h,
                0.0f, y->o, h);
    op(T, "fwd proj gemm");
    tick(T, R_FA);
    allreduce(c, y->o, (size_t)tok * h);
    op(T, "fwd attn allreduce");
    tick(T, R_FA_TP);
    lk_bda_fwd((size_t)tok, (size_t)h, y->o, y->bo, X, y->x2, y->mA, DROP_P, c->seed++);
    op(T, "fwd attn bias-dropout-add");
    tick(T, R_FA);

    lk_layernorm_fwd((size_t)tok, (size_t)h, y->x2, y->g2, y->e2, y->ln2, y->mu2, y->rs2);
    op(T, "fwd ln2");
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tok, fl, h, 1.0f, y->ln2, h, y->w1, fl,
                0.0f, y->h1, fl);
    op(T, "fwd fc1 gemm");
    lk_gelu_fwd((size_t)tok, (size_t)fl, y->h1, y->b1, y->g);
    op(T, "fwd bias-gelu");
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tok, h, fl, 1.0f, y->g, fl, y->w2, h,
                0.0f, y->o2, h);
    op(T, "fwd fc2 gemm");
    tick(T, R_FM);
    allreduce(c, y->o2, (size_t)tok * h);
    op(T, "fwd mlp allreduce");
    tick(T, R_FM_TP);
    lk_bda_fwd((size_t)tok, (size_t)h, y->o2, y->b2, y->x2, Y, y->mM, DROP_P, c->seed++);
    op(T, "fwd mlp bias-dropout-add");
    T->nfwd = T->nop;
    tick(T, R_FM);
}

/* dY: gradient of the layer's output; dX receives the input's. */
static void backward(cfg *c, int l, const float *dY, float *dX, timer *T)
{
    layer *y = &c->ly[l];
    int tok = c->tok, h = c->h, hl = c->hl, fl = c->fl, s = c->s, d = c->d, q3 = 3 * hl;
    float alpha = 1.0f / sqrtf((float)d);
    size_t ss = (size_t)s * s;
    T->nop = T->nfwd;

    lk_dropout_bwd((size_t)tok, (size_t)h, dY, y->mM, DROP_P, c->dout, y->db2);
    op(T, "bwd mlp dropout (+ bias grad)");
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, fl, h, tok, 1.0f, y->g, fl, c->dout, h,
                1.0f, y->dw2, h);
    op(T, "bwd fc2 wgrad gemm");
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tok, fl, h, 1.0f, c->dout, h, y->w2, h,
                0.0f, c->dg, fl);
    op(T, "bwd fc2 dgrad gemm");
    lk_gelu_bwd((size_t)tok, (size_t)fl, y->h1, y->b1, c->dg, y->db1);
    op(T, "bwd gelu (+ bias grad)");
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h, fl, tok, 1.0f, y->ln2, h, c->dg, fl,
                1.0f, y->dw1, fl);
    op(T, "bwd fc1 wgrad gemm");
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tok, h, fl, 1.0f, c->dg, fl, y->w1, fl,
                0.0f, c->dln, h);
    op(T, "bwd fc1 dgrad gemm");
    tick(T, R_BM);
    allreduce(c, c->dln, (size_t)tok * h);
    op(T, "bwd mlp allreduce");
    tick(T, R_BM_TP);
    lk_layernorm_bwd((size_t)tok, (size_t)h, y->x2, c->dln, dY, y->g2, y->mu2, y->rs2, c->dx2,
                     y->dg2, y->de2);
    op(T, "bwd ln2");
    tick(T, R_BM);

    lk_dropout_bwd((size_t)tok, (size_t)h, c->dx2, y->mA, DROP_P, c->dout, y->dbo);
    op(T, "bwd attn dropout (+ bias grad)");
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, hl, h, tok, 1.0f, y->ctx, hl, c->dout, h,
                1.0f, y->dwo, h);
    op(T, "bwd proj wgrad gemm");
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tok, hl, h, 1.0f, c->dout, h, y->wo, h,
                0.0f, c->dctx, hl);
    op(T, "bwd proj dgrad gemm");
    for (int bi = 0; bi < c->b; bi++)
        for (int j = 0; j < c->at; j++) {
            size_t blk = ((size_t)bi * c->at + j) * ss, row = (size_t)bi * s;
            const float *dO = c->dctx + row * hl + (size_t)j * d;
            const float *V = y->qkv + row * q3 + 2 * (size_t)hl + (size_t)j * d;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, d, 1.0f, dO, hl, V, q3, 0.0f,
                        c->dP + blk, s);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s, d, s, 1.0f, y->Pd + blk, s, dO,
                        hl, 0.0f, c->dqkv + row * q3 + 2 * (size_t)hl + (size_t)j * d, q3);
        }
    op(T, "bwd dP + dV bmm");
    lk_dropout_bwd((size_t)c->b * c->at * s, (size_t)s, c->dP, y->mP, DROP_P, c->dP, NULL);
    op(T, "bwd attn dropout");
    lk_softmax_bwd((size_t)c->b * c->at, (size_t)s, y->P, c->dP, c->dP);
    op(T, "bwd softmax");
    for (int bi = 0; bi < c->b; bi++)
        for (int j = 0; j < c->at; j++) {
            size_t blk = ((size_t)bi * c->at + j) * ss, row = (size_t)bi * s;
            const float *Q = y->qkv + row * q3 + (size_t)j * d, *K = Q + hl;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, d, s, alpha, c->dP + blk, s,
                        K, q3, 0.0f, c->dqkv + row * q3 + (size_t)j * d, q3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s, d, s, alpha, c->dP + blk, s, Q,
                        q3, 0.0f, c->dqkv + row * q3 + (size_t)hl + (size_t)j * d, q3);
        }
    op(T, "bwd dQ + dK bmm");
    lk_colsum((size_t)tok, (size_t)q3, c->dqkv, y->dbqkv);
    op(T, "bwd qkv bias grad");
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h, q3, tok, 1.0f, y->ln1, h, c->dqkv, q3,
                1.0f, y->dwqkv, q3);
    op(T, "bwd qkv wgrad gemm");
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, tok, h, q3, 1.0f, c->dqkv, q3, y->wqkv, q3,
                0.0f, c->dln, h);
    op(T, "bwd qkv dgrad gemm");
    tick(T, R_BA);
    allreduce(c, c->dln, (size_t)tok * h);
    op(T, "bwd attn allreduce");
    tick(T, R_BA_TP);
    lk_layernorm_bwd((size_t)tok, (size_t)h, c->x[l], c->dln, c->dx2, y->g1, y->mu1, y->rs1, dX,
                     y->dg1, y->de1);
    op(T, "bwd ln1");
    tick(T, R_BA);
}

/* One training iteration of c's layers on every rank; out gets the ranks'
 * mean time per region (so regions add up) and the slowest rank's total. */
static void iterate(cfg *c, double out[R_N], int trace)
{
    timer T;
    memset(&T, 0, sizeof T);
    T.trace = trace;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    T.last = T.mark = t0;
    for (int l = 0; l < c->L; l++)
        forward(c, l, &T);
    const float *dY = c->gout;
    for (int l = c->L - 1; l >= 0; l--) {
        float *dX = dY == c->gA ? c->gB : c->gA;
        backward(c, l, dY, dX, &T);
        dY = dX;
    }
    T.t[R_TOTAL] = MPI_Wtime() - t0;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(T.t, out, R_N - 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int r = 0; r < R_N - 1; r++)
        out[r] /= size;
    MPI_Allreduce(&T.t[R_TOTAL], &out[R_TOTAL], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; trace && i < T.nop && i < MAX_TRACE; i++) { /* fastest per operator */
        if (!c->opname[i] || T.op[i] < c->opbest[i])
            c->opbest[i] = T.op[i];
        c->opname[i] = T.name[i];
    }
    if (trace && T.nop > c->nops)
        c->nops = T.nop < MAX_TRACE ? T.nop : MAX_TRACE;
}

/* ---- configurations ------------------------------------------------------------- */

static int parse_cfg_line(char *line, cfg *c, const char *file, int lineno)
{
    memset(c, 0, sizeof *c);
    c->L = 1;
    int n =
        sscanf(line, "%63s %d %d %d %d %d %d", c->name, &c->h, &c->a, &c->s, &c->b, &c->t, &c->L);
    if (n < 6) {
        fprintf(stderr, "groundtruth: %s:%d: expected 'name hidden heads seq mbs tp [layers]'\n",
                file, lineno);
        return -1;
    }
    return 0;
}

static int check_cfg(const cfg *c, int size, const char *where)
{
    const char *why = NULL;
    if (c->h < 1 || c->a < 1 || c->s < 1 || c->b < 1 || c->t < 1 || c->L < 1)
        why = "sizes must be positive";
    else if (c->t > 64)
        why = "tp at most 64";
    else if (c->h % c->a)
        why = "heads must divide hidden";
    else if (c->a % c->t || c->h % c->t)
        why = "tp must divide heads and hidden";
    else if (size % c->t)
        why = "tp must divide the number of ranks";
    if (why)
        fprintf(stderr, "groundtruth: %s: configuration '%s': %s\n", where, c->name, why);
    return why ? -1 : 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -n N groundtruth (--config FILE | --hidden H --heads A --seq S\n"
               "                   --mbs B [--tp T] [--layers L] [--name NAME])\n"
               "                   [--rounds R] [--budget S] [--out FILE] [--trace FILE]\n"
               "                   [--threads T] [--quiet]\n\n"
               "Runs real Transformer layers (fp32, ffn 4h, dropout 0.1) forward and backward\n"
               "with tensor parallelism over tp consecutive ranks and times every region.\n"
               "Config file lines: 'name hidden heads seq mbs tp [layers]' ('#' comments).\n"
               "One warm-up round, then --rounds (3) measured rounds over all configurations.\n"
               "--budget S stops adding rounds when the next would end after S seconds.\n"
               "--trace FILE also times every operator (rank 0, fastest of the rounds, all\n"
               "layers) and writes config,operator,seconds: a diagnosis aid.\n"
               "Writes CSV (--out, default stdout): the configuration, then the median over\n"
               "rounds of each region's time (mean over ranks) and of the iteration (total_s,\n"
               "slowest rank).\n");
}

/* The command line: one configuration from the flags or a --config file. */
typedef struct gt_args {
    int rounds, threads, quiet;
    double budget;
    const char *cfile, *out, *trace;
    cfg one; /* the configuration given by --hidden, --heads, ... */
} gt_args;

/* Parse argv into *a: 0, 1 on a bad command line (usage printed by rank 0),
 * or -1 after --help. */
static int parse_gt_args(int argc, char **argv, int rank, gt_args *a)
{
    memset(a, 0, sizeof *a);
    a->rounds = 3;
    a->threads = 1;
    a->one.L = 1;
    snprintf(a->one.name, sizeof a->one.name, "cli");
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'},  {"hidden", required_argument, 0, 'H'},
        {"heads", required_argument, 0, 'A'},   {"seq", required_argument, 0, 'S'},
        {"mbs", required_argument, 0, 'B'},     {"tp", required_argument, 0, 'T'},
        {"layers", required_argument, 0, 'L'},  {"name", required_argument, 0, 'N'},
        {"rounds", required_argument, 0, 'r'},  {"out", required_argument, 0, 'o'},
        {"budget", required_argument, 0, 'b'},  {"trace", required_argument, 0, 'x'},
        {"threads", required_argument, 0, 't'}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    int o, bad = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'c':
            a->cfile = optarg;
            break;
        case 'H':
            a->one.h = atoi(optarg);
            break;
        case 'A':
            a->one.a = atoi(optarg);
            break;
        case 'S':
            a->one.s = atoi(optarg);
            break;
        case 'B':
            a->one.b = atoi(optarg);
            break;
        case 'T':
            a->one.t = atoi(optarg);
            break;
        case 'L':
            a->one.L = atoi(optarg);
            break;
        case 'N':
            snprintf(a->one.name, sizeof a->one.name, "%s", optarg);
            break;
        case 'r':
            a->rounds = atoi(optarg);
            bad |= a->rounds < 1 || a->rounds > MAX_ROUNDS;
            break;
        case 'o':
            a->out = optarg;
            break;
        case 'b':
            a->budget = atof(optarg);
            bad |= !(a->budget > 0);
            break;
        case 'x':
            a->trace = optarg;
            break;
        case 't':
            a->threads = atoi(optarg);
            bad |= a->threads < 1;
            break;
        case 'q':
            a->quiet = 1;
            break;
        case 'h':
            if (rank == 0)
                usage(stdout);
            return -1;
        default:
            bad = 1;
        }
    }
    if (bad || optind < argc || (!a->cfile && !a->one.h)) {
        if (rank == 0)
            usage(stderr);
        return 1;
    }
    return 0;
}

/* The configurations to measure, into cfgs (MAX_CFG of them), each checked
 * against the number of ranks: their count, or -1 after an error. */
static int read_cfgs(const gt_args *a, int rank, int size, cfg *cfgs)
{
    int ncfg = 0, bad = 0;
    if (a->cfile) {
        FILE *f = fopen(a->cfile, "r");
        if (!f) {
            if (rank == 0)
                perror(a->cfile);
            return -1;
        }
        char line[512];
        int ln = 0;
        while (fgets(line, sizeof line, f) && !bad) {
            ln++;
            char *p = line + strspn(line, " \t");
            if (*p == '#' || *p == '\n' || !*p)
                continue;
            if (ncfg == MAX_CFG || parse_cfg_line(p, &cfgs[ncfg], a->cfile, ln))
                bad = 1;
            else
                ncfg++;
        }
        fclose(f);
    } else {
        cfgs[ncfg] = a->one;
        if (!cfgs[ncfg].t)
            cfgs[ncfg].t = size;
        ncfg++;
    }
    const char *where = a->cfile ? a->cfile : "command line";
    for (int i = 0; i < ncfg && !bad; i++) {
        cfgs[i].f = 4 * cfgs[i].h;
        bad |= check_cfg(&cfgs[i], size, where) != 0;
    }
    return bad || ncfg == 0 ? -1 : ncfg;
}

/* TP groups: tp consecutive ranks, one communicator per distinct tp (comm_of
 * indexed by tp); each configuration's buffers allocated and seeded. */
static void setup_cfgs(cfg *cfgs, int ncfg, int rank, MPI_Comm comm_of[65])
{
    for (int t = 0; t <= 64; t++)
        comm_of[t] = MPI_COMM_NULL;
    for (int i = 0; i < ncfg; i++) {
        cfg *c = &cfgs[i];
        if (comm_of[c->t] == MPI_COMM_NULL)
            MPI_Comm_split(MPI_COMM_WORLD, rank / c->t, rank, &comm_of[c->t]);
        c->tp = comm_of[c->t];
        c->seed = 1000u * (uint32_t)i + (uint32_t)rank;
        if (cfg_alloc(c, rank)) {
            fprintf(stderr, "groundtruth: rank %d: out of memory for '%s'\n", rank, c->name);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
}

/* What the measurement rounds leave for the CSV header. */
typedef struct gt_run {
    double probes[NOISE_MAX_PROBES];
    int nprobe, redone;
    double wall;
    char precheck[192];
} gt_run;

/* The rounds. The interference probe (probe.h) runs before the first round
 * and after each: a measured round whose probe came out more than NOISE_TOL
 * slower than the fastest is dropped and run again (at most rounds times in
 * all, the budget stretched by half for it). */
static void measure(const gt_args *a, cfg *cfgs, int ncfg, int rank, gt_run *g)
{
    probe pr;
    g->nprobe = g->redone = 0;
    g->precheck[0] = '\0';
    if (probe_init(&pr)) {
        fprintf(stderr, "groundtruth: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (probe_precheck(MPI_COMM_WORLD, g->precheck, sizeof g->precheck) && rank == 0)
        fprintf(stderr,
                "groundtruth: the pre-check found the machine busy (%s): the timings will "
                "include that load\n",
                g->precheck + 6);
    probe_time(&pr, MPI_COMM_WORLD); /* warm-up */
    double w0 = MPI_Wtime();
    g->probes[g->nprobe++] = probe_time(&pr, MPI_COMM_WORLD);
    for (int r = 0; r <= a->rounds; r++) {
        /* rank 0: would one more round (as long as the last) end past the budget? */
        int stop = 0;
        if (r >= 2 && a->budget > 0 && rank == 0) {
            double used = MPI_Wtime() - w0, done = r + g->redone;
            stop = used + used / done > a->budget * (g->redone ? 1.5 : 1.0);
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (stop)
            break;
        for (int i = 0; i < ncfg; i++) {
            cfg *c = &cfgs[i];
            double t[R_N];
            iterate(c, t, a->trace != NULL && r > 0);
            if (r > 0)
                memcpy(c->samp[c->nsamp++], t, sizeof t);
            if (rank == 0 && !a->quiet)
                fprintf(stderr, "groundtruth: round %d/%d %-16s %9.4f s%s\n", r, a->rounds, c->name,
                        t[R_TOTAL], r ? "" : " (warm-up)");
        }
        if (g->nprobe < NOISE_MAX_PROBES) {
            double pt = probe_time(&pr, MPI_COMM_WORLD), fast = pt;
            for (int k = 0; k < g->nprobe; k++)
                fast = g->probes[k] < fast ? g->probes[k] : fast;
            g->probes[g->nprobe++] = pt;
            if (r > 0 && g->redone < a->rounds && noise_slowdown(pt, fast) > NOISE_TOL) {
                if (rank == 0 && !a->quiet)
                    fprintf(stderr,
                            "groundtruth: the probe ran %.0f%% slow after round %d (other "
                            "load?): measuring it again\n",
                            100 * noise_slowdown(pt, fast), r);
                for (int i = 0; i < ncfg; i++)
                    cfgs[i].nsamp--;
                g->redone++;
                r--;
            }
        }
    }
    g->wall = MPI_Wtime() - w0;
    probe_free(&pr);
}

/* Median of the n values, sorted into v by insertion. */
static double median_of(const double *x, int n, double *v)
{
    for (int k = 0; k < n; k++) {
        int j = k;
        for (; j > 0 && v[j - 1] > x[k]; j--)
            v[j] = v[j - 1];
        v[j] = x[k];
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Rank 0: the CSV (header comments with the machine, the probe's verdict,
 * then one row per configuration: medians over rounds). 0 or 2. */
static int write_csv(const gt_args *a, const cfg *cfgs, int ncfg, int size, const gt_run *g,
                     const noise_verdict *nv)
{
    FILE *f = a->out ? fopen(a->out, "w") : stdout;
    if (!f) {
        perror(a->out);
        return 2;
    }
    char host[256] = {0}, date[32], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n,")] = '\0';
    fprintf(f,
            "# ccsweep ground truth written by tools/groundtruth: fp32 GPT layers, ffn 4h, "
            "dropout %.2f, biases\n"
            "# host: %s\n# blas: %s\n# blas_threads: %d\n# mpi: %s\n# ranks: %d\n"
            "# date: %s\n# rounds: %d (+1 warm-up)\n# wall_s: %.1f\n"
            "# times: seconds per iteration (all layers, one micro-batch), median over "
            "rounds: total_s of the slowest rank, regions averaged over ranks\n",
            (double)DROP_P, host, openblas_get_config(), a->threads, lib, size, date, cfgs[0].nsamp,
            g->wall);
    char pbuf[NOISE_MAX_PROBES * 16];
    if (noise_format(g->probes, g->nprobe, pbuf, sizeof pbuf) == 0)
        fprintf(f, "# probe_s: %s\n", pbuf);
    fprintf(f, "# precheck: %s\n", g->precheck);
    fprintf(f,
            "# interference: %s (probe %dx%dx%d fp32 GEMM: fastest %.4g s, median "
            "+%.1f%%, slowest +%.1f%%; %d rounds measured again)\n",
            nv->busy ? "busy" : "none", PROBE_N, PROBE_N, PROBE_N, nv->fastest,
            100 * noise_slowdown(nv->median, nv->fastest), 100 * nv->slowdown, g->redone);
    fprintf(f, "config,hidden,heads,ffn,seq,mbs,tp,layers,ranks,rounds");
    for (int q = 0; q < R_N; q++)
        fprintf(f, ",%s", rname[q]);
    fputc('\n', f);
    for (int i = 0; i < ncfg; i++) {
        const cfg *c = &cfgs[i];
        fprintf(f, "%s,%d,%d,%d,%d,%d,%d,%d,%d,%d", c->name, c->h, c->a, c->f, c->s, c->b, c->t,
                c->L, size, c->nsamp);
        for (int q = 0; q < R_N; q++) { /* median over rounds, per column */
            double x[MAX_ROUNDS], v[MAX_ROUNDS];
            for (int k = 0; k < c->nsamp; k++)
                x[k] = c->samp[k][q];
            fprintf(f, ",%.6e", median_of(x, c->nsamp, v));
        }
        fputc('\n', f);
    }
    if (f != stdout && fclose(f)) {
        perror(a->out);
        return 2;
    }
    return 0;
}

/* Rank 0, --trace: config,operator,seconds (fastest of the rounds). 0 or 2. */
static int write_trace(const char *path, const cfg *cfgs, int ncfg)
{
    FILE *tf = fopen(path, "w");
    if (!tf) {
        perror(path);
        return 2;
    }
    fprintf(tf, "config,operator,seconds\n");
    for (int i = 0; i < ncfg; i++)
        for (int k = 0; k < cfgs[i].nops; k++)
            fprintf(tf, "%s,%s,%.6e\n", cfgs[i].name, cfgs[i].opname[k], cfgs[i].opbest[k]);
    if (fclose(tf)) {
        perror(path);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gt_args a;
    int p = parse_gt_args(argc, argv, rank, &a);
    if (p) {
        MPI_Finalize();
        return p < 0 ? 0 : 1;
    }
    openblas_set_num_threads(a.threads);
    static cfg cfgs[MAX_CFG];
    int ncfg = read_cfgs(&a, rank, size, cfgs);
    if (ncfg < 0) {
        MPI_Finalize();
        return 1;
    }
    MPI_Comm comm_of[65];
    setup_cfgs(cfgs, ncfg, rank, comm_of);
    gt_run g;
    measure(&a, cfgs, ncfg, rank, &g);
    noise_verdict nv;
    noise_judge(g.probes, g.nprobe, NOISE_TOL, &nv);
    if (rank == 0 && nv.busy)
        fprintf(stderr,
                "groundtruth: warning: the machine was busy (the probe ran a median %.0f%% "
                "slower than its fastest): these timings are disturbed by other load; "
                "'ccsweep validate' will refuse them\n",
                100 * noise_slowdown(nv.median, nv.fastest));
    int rc = 0;
    if (rank == 0) {
        rc = write_csv(&a, cfgs, ncfg, size, &g, &nv);
        if (a.trace) {
            int t = write_trace(a.trace, cfgs, ncfg);
            rc = rc ? rc : t;
        }
    }
    for (int i = 0; i < ncfg; i++)
        cfg_free(&cfgs[i]);
    for (int t = 1; t <= 64; t++)
        if (comm_of[t] != MPI_COMM_NULL)
            MPI_Comm_free(&comm_of[t]);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
