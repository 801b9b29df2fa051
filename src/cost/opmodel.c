/* opmodel.c - measured operator models: parse a calibration profile, fit one
 * curve per (op, dtype[, group, level]) with GSL, evaluate it per operator.
 *
 * A curve maps an op's work w (see opmodel.h) to time. Inside the measured
 * range it is a monotone interpolation (gsl_interp_steffen) in log-log space
 * through the medians of the measurements binned by work, made monotone first
 * (pool-adjacent-violators): time never falls as work grows. Below the range
 * the smallest measured time is a latency floor; beyond it the marginal cost
 * of a weighted linear fit t = a + w/theta over the largest points continues
 * the curve. The band is the RMS of the log residuals (degrees of freedom
 * corrected), widened with the distance of an extrapolation. */
#include "ccsweep/cost/opmodel.h"
#include "ccsweep/util/file.h"
#include "ccsweep/util/sha256.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_interp.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OM_FIELDS 10
#define OM_MAX_META 32
#define OM_BIN 0.20       /* width of a work bin, natural log (about 22%) */
#define OM_CLASS_Q 8.0    /* memory-bound classes: intensities within 1/8 octave merge */
#define OM_BAND_NONE 0.10 /* band when a curve has too few points to estimate one */
#define OM_NLAM 5         /* GEMM features: batch, flops, mk, kn, mn (times batch) */

enum { LV_NONE = 0, LV_INTRA, LV_INTER };

typedef struct row {
    int kind, dtype, group, level, line;
    double m, n, k, bytes, t;
} row;

typedef struct curve {
    int kind, dtype, group, level;
    double cls;          /* memory-bound: FLOPs per byte of the kernel class */
    double lam[OM_NLAM]; /* GEMM work coefficients; lam[1] == 1 (the FLOPs) */
    int nk;              /* knots */
    double *lx, *ly;     /* log work, log time */
    gsl_interp *ip;      /* NULL when nk < 2 */
    double w_max;        /* largest measured work */
    double t_floor;      /* s, time at the first knot: the latency floor */
    double lat;          /* s, latency part of the time (intercept at small work) */
    double slope;        /* s per unit of work beyond the last knot */
    double slope_rel_se; /* relative standard error of that slope */
    double rel;          /* band: RMS log residual */
    double rel_flops;    /* GEMMs: the same for a FLOPs-only work measure */
    int npts;
} curve;

struct ccs_opmodel {
    int nrows, n;
    curve *c;
    int nmeta;
    char *meta_key[OM_MAX_META], *meta_val[OM_MAX_META];
    char sha256[65]; /* of the profile's bytes, for run provenance */
};

static int is_gemm(int kind)
{
    return kind == CCS_OP_GEMM || kind == CCS_OP_BMM;
}

static int is_membound(int kind)
{
    return kind == CCS_OP_ELEMENTWISE || kind == CCS_OP_LAYERNORM || kind == CCS_OP_SOFTMAX;
}

/* ---- parsing ---------------------------------------------------------------- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* Bounds of a profile row, checked at parse time so that every quantity the
 * fit derives from a row (products, logs, 1/t^2 weights, intensities) is
 * finite: dimensions up to 2^32, buffers up to 2^50 bytes (1 PiB; 0 or at
 * least 1), times from a picosecond to 10^6 s, reps up to 10^9, and the work of
 * one kernel (FLOPs times batch, or bytes) up to 10^30. */
#define OM_MAX_DIM 4294967296.0 /* m, n, k */
#define OM_MAX_BYTES 1125899906842624.0
#define OM_MIN_TIME 1e-12 /* s */
#define OM_MAX_TIME 1e6   /* s */
#define OM_MAX_REPS 1e9
#define OM_MAX_WORK 1e30

/* A number in [min, max] (strict: above min); a number out of range is named
 * with the range. */
static int num_field(const char *name, int line, const char *field, const char *text, double min,
                     int strict, double max, double *out, ccs_err *err)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || isnan(v) || v < 0 || (strict && v <= 0)) {
        ccs_err_set(err, "%s:%d: field '%s': expected a %s number, got '%s'", name, line, field,
                    strict ? "positive" : "non-negative", text);
        return CCS_EINPUT;
    }
    /* beyond the range, or beyond a double (errno ERANGE: inf or underflow) */
    if (errno || !isfinite(v) || v < min || v > max) {
        ccs_err_set(err, "%s:%d: field '%s': expected a number in [%.10g, %.10g], got '%s'", name,
                    line, field, min, max, text);
        return CCS_EINPUT;
    }
    *out = v;
    return CCS_OK;
}

static const char *const field_names[OM_FIELDS] = {"op",    "dtype", "m",     "n",      "k",
                                                   "bytes", "group", "level", "time_s", "reps"};

static int parse_row(char *line, const char *name, int lineno, row *r, ccs_err *err)
{
    char *f[OM_FIELDS];
    int nf = 0;
    for (char *p = line;;) {
        char *c = strchr(p, ',');
        if (nf < OM_FIELDS)
            f[nf] = p;
        nf++;
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    if (nf != OM_FIELDS) {
        ccs_err_set(err,
                    "%s:%d: expected %d comma-separated fields "
                    "(op,dtype,m,n,k,bytes,group,level,time_s,reps), got %d",
                    name, lineno, OM_FIELDS, nf);
        return CCS_EINPUT;
    }
    for (int i = 0; i < OM_FIELDS; i++)
        f[i] = trim(f[i]);
    memset(r, 0, sizeof *r);
    r->line = lineno;
    r->kind = opkind_parse(f[0]);
    if (r->kind < 0) {
        ccs_err_set(err,
                    "%s:%d: field 'op': unknown operator '%s' (expected gemm, bmm, "
                    "elementwise, layernorm, softmax, attention, allreduce, allgather, "
                    "reducescatter or p2p)",
                    name, lineno, f[0]);
        return CCS_EINPUT;
    }
    r->dtype = dtype_parse(f[1]);
    if (r->dtype < 0) {
        ccs_err_set(err,
                    "%s:%d: field 'dtype': unknown dtype '%s' (expected fp32, tf32, bf16, "
                    "fp16 or fp8)",
                    name, lineno, f[1]);
        return CCS_EINPUT;
    }
    double g, reps;
    if (num_field(name, lineno, "m", f[2], 0, 0, OM_MAX_DIM, &r->m, err) ||
        num_field(name, lineno, "n", f[3], 0, 0, OM_MAX_DIM, &r->n, err) ||
        num_field(name, lineno, "k", f[4], 0, 0, OM_MAX_DIM, &r->k, err) ||
        num_field(name, lineno, "bytes", f[5], 0, 0, OM_MAX_BYTES, &r->bytes, err) ||
        num_field(name, lineno, "group", f[6], 0, 0, HUGE_VAL, &g, err) ||
        num_field(name, lineno, "time_s", f[8], OM_MIN_TIME, 1, OM_MAX_TIME, &r->t, err) ||
        num_field(name, lineno, "reps", f[9], 1, 0, OM_MAX_REPS, &reps, err))
        return CCS_EINPUT;
    if (r->bytes > 0 && r->bytes < 1) {
        ccs_err_set(err, "%s:%d: field 'bytes': expected 0 or a number in [1, %.10g], got '%s'",
                    name, lineno, OM_MAX_BYTES, f[5]);
        return CCS_EINPUT;
    }
    if (g != floor(g) || g > 1 << 24 || reps != floor(reps)) {
        ccs_err_set(err, "%s:%d: field '%s': expected an integer, got '%s'", name, lineno,
                    g != floor(g) || g > 1 << 24 ? "group" : "reps",
                    g != floor(g) || g > 1 << 24 ? f[6] : f[9]);
        return CCS_EINPUT;
    }
    r->group = (int)g;
    if (!strcmp(f[7], "intra"))
        r->level = LV_INTRA;
    else if (!strcmp(f[7], "inter"))
        r->level = LV_INTER;
    else if (f[7][0] && strcmp(f[7], "-")) {
        ccs_err_set(err, "%s:%d: field 'level': expected intra, inter or empty, got '%s'", name,
                    lineno, f[7]);
        return CCS_EINPUT;
    }
    int bad = 0;
    const char *why = "";
    if (opkind_is_collective(r->kind)) {
        if (r->group < 2) {
            bad = 6;
            why = "a collective needs a group of at least 2 ranks";
        } else if (r->level == LV_NONE) {
            bad = 7;
            why = "a collective needs level intra or inter";
        } else if (r->bytes <= 0) {
            bad = 5;
            why = "a collective needs a positive buffer size";
        }
    } else if (is_gemm(r->kind) || r->kind == CCS_OP_ATTENTION) {
        if (r->m < 1 || r->n < 1 || r->k < 1) {
            bad = r->m < 1 ? 2 : r->n < 1 ? 3 : 4;
            why = "GEMM dimensions must be at least 1";
        }
    } else if (r->bytes <= 0) {
        bad = 5;
        why = "a memory-bound kernel needs its traffic in bytes";
    }
    if (bad) {
        ccs_err_set(err, "%s:%d: field '%s': %s (got '%s')", name, lineno, field_names[bad], why,
                    f[bad]);
        return CCS_EINPUT;
    }
    return CCS_OK;
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* "# key: value" -> metadata (first occurrence wins). */
static int add_meta(ccs_opmodel *om, const char *line)
{
    const char *p = line + 1;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *colon = strchr(p, ':');
    if (!colon || om->nmeta >= OM_MAX_META)
        return 0;
    for (const char *q = p; q < colon; q++)
        if (!(isalnum((unsigned char)*q) || *q == '_' || *q == '-'))
            return 0;
    if (colon == p)
        return 0;
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t vl = strlen(v);
    while (vl && isspace((unsigned char)v[vl - 1]))
        vl--;
    char *k = dupn(p, (size_t)(colon - p));
    for (int i = 0; k && i < om->nmeta; i++)
        if (!strcmp(om->meta_key[i], k)) {
            free(k);
            return 0;
        }
    char *val = dupn(v, vl);
    if (!k || !val) {
        free(k);
        free(val);
        return -1;
    }
    om->meta_key[om->nmeta] = k;
    om->meta_val[om->nmeta++] = val;
    return 0;
}

/* ---- fitting ------------------------------------------------------------------ */

static double row_batch(const row *r)
{
    return (r->kind == CCS_OP_BMM || r->kind == CCS_OP_ATTENTION) && r->group > 1 ? r->group : 1;
}

static void gemm_features(double m, double n, double k, double b, double x[OM_NLAM])
{
    x[0] = b;
    x[1] = 2.0 * m * n * k * b;
    x[2] = m * k * b;
    x[3] = k * n * b;
    x[4] = m * n * b;
}

static double gemm_work(const double lam[OM_NLAM], double m, double n, double k, double b)
{
    double x[OM_NLAM], w = 0;
    gemm_features(m, n, k, b, x);
    for (int j = 0; j < OM_NLAM; j++)
        w += lam[j] * x[j];
    return w;
}

/* Work of a profile row under the curve's coefficients. */
static double row_work(const row *r, const double lam[OM_NLAM])
{
    if (is_gemm(r->kind))
        return gemm_work(lam, r->m, r->n, r->k, row_batch(r));
    if (r->kind == CCS_OP_ATTENTION)
        return 4.0 * r->m * r->n * r->k * row_batch(r);
    return r->bytes;
}

static double row_intensity(const row *r)
{
    return r->m * r->n * r->k / r->bytes;
}

/* The quantities the fit derives from a row, under the FLOPs-only work
 * measure: the work (and its log) within OM_MAX_WORK, the intensity of a
 * memory-bound kernel finite. The field bounds imply both; this states it
 * where the fit depends on it. */
static int row_derived_check(const row *r, const char *name, ccs_err *err)
{
    static const double flops_only[OM_NLAM] = {0, 1, 0, 0, 0};
    double w = row_work(r, flops_only);
    if (!(w > 0 && w <= OM_MAX_WORK && isfinite(log(w)))) {
        const char *what = is_gemm(r->kind) ? (row_batch(r) > 1 ? "2*m*n*k*group" : "2*m*n*k")
                           : r->kind == CCS_OP_ATTENTION ? "4*m*n*k*group"
                                                         : "bytes";
        ccs_err_set(err, "%s:%d: field '%s': the work %s = %g is beyond (0, %g]", name, r->line,
                    r->kind == CCS_OP_ATTENTION || (is_gemm(r->kind) && row_batch(r) > 1)
                        ? "m*n*k*group"
                    : is_gemm(r->kind) ? "m*n*k"
                                       : "bytes",
                    what, w, OM_MAX_WORK);
        return CCS_EINPUT;
    }
    if (is_membound(r->kind) && !isfinite(row_intensity(r))) {
        ccs_err_set(err, "%s:%d: field 'bytes': the intensity m*n*k/bytes is not finite", name,
                    r->line);
        return CCS_EINPUT;
    }
    return CCS_OK;
}

/* Coefficients of t = sum_j c_j x_j over the rows, weighted by 1/t^2 (relative
 * errors), with non-negative c (columns whose coefficient comes out negative
 * are dropped and the fit repeated). lam = c / c_flops. Returns 0, or -1 when
 * the FLOPs coefficient is not positive or GSL fails (lam then stays FLOPs
 * only). */
static int fit_lambda(const row *r, int n, double lam[OM_NLAM])
{
    memset(lam, 0, sizeof(double) * OM_NLAM);
    lam[1] = 1;
    int on[OM_NLAM] = {1, 1, 1, 1, 1};
    if (n < 2 * OM_NLAM)
        return -1;
    for (int iter = 0; iter < OM_NLAM; iter++) {
        int p = 0, col[OM_NLAM];
        for (int j = 0; j < OM_NLAM; j++)
            if (on[j])
                col[p++] = j;
        gsl_matrix *X = gsl_matrix_alloc((size_t)n, (size_t)p),
                   *cov = gsl_matrix_alloc((size_t)p, (size_t)p);
        gsl_vector *y = gsl_vector_alloc((size_t)n), *w = gsl_vector_alloc((size_t)n),
                   *c = gsl_vector_alloc((size_t)p);
        gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc((size_t)n, (size_t)p);
        int rc = -1;
        if (X && cov && y && w && c && ws) {
            for (int i = 0; i < n; i++) {
                double x[OM_NLAM];
                gemm_features(r[i].m, r[i].n, r[i].k, row_batch(&r[i]), x);
                for (int q = 0; q < p; q++)
                    gsl_matrix_set(X, (size_t)i, (size_t)q, x[col[q]]);
                gsl_vector_set(y, (size_t)i, r[i].t);
                gsl_vector_set(w, (size_t)i, 1.0 / (r[i].t * r[i].t));
            }
            double chisq;
            if (gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws) == GSL_SUCCESS)
                rc = 0;
        }
        int drop = -1;
        double cf = 0;
        if (rc == 0) {
            for (int q = 0; q < p; q++) {
                double v = gsl_vector_get(c, (size_t)q);
                if (col[q] == 1)
                    cf = v;
                else if (v < 0 && (drop < 0 || v < gsl_vector_get(c, (size_t)drop)))
                    drop = q;
            }
            if (cf > 0 && drop < 0)
                for (int q = 0; q < p; q++)
                    lam[col[q]] = gsl_vector_get(c, (size_t)q) / cf;
        }
        if (drop >= 0)
            drop = col[drop];
        gsl_matrix_free(X);
        gsl_matrix_free(cov);
        gsl_vector_free(y);
        gsl_vector_free(w);
        gsl_vector_free(c);
        gsl_multifit_linear_free(ws);
        if (rc != 0 || !(cf > 0)) {
            memset(lam, 0, sizeof(double) * OM_NLAM);
            lam[1] = 1;
            return -1;
        }
        if (drop < 0)
            return 0;
        on[drop] = 0;
    }
    return 0;
}

typedef struct pt {
    double lw, lt;
} pt;

static int cmp_pt(const void *a, const void *b)
{
    const pt *x = a, *y = b;
    return x->lw < y->lw ? -1 : x->lw > y->lw;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void curve_clear(curve *cv)
{
    gsl_interp_free(cv->ip);
    free(cv->lx);
    free(cv->ly);
    cv->ip = NULL;
    cv->lx = cv->ly = NULL;
    cv->nk = 0;
}

/* Log time of the curve at log work lw: the floor below the first knot, the
 * interpolant between knots, the fitted marginal cost beyond the last. */
static double curve_lt(const curve *cv, double lw)
{
    if (lw <= cv->lx[0])
        return cv->ly[0];
    if (lw > cv->lx[cv->nk - 1]) {
        double we = exp(cv->lx[cv->nk - 1]), te = exp(cv->ly[cv->nk - 1]);
        return log(te + cv->slope * (exp(lw) - we));
    }
    double y;
    if (gsl_interp_eval_e(cv->ip, cv->lx, cv->ly, lw, NULL, &y) != GSL_SUCCESS || !isfinite(y))
        return cv->ly[0]; /* unreachable: lw lies inside the knots */
    return y;
}

/* Weighted (1/t^2) linear fit t = a + b w over pts[i0..i1). Returns 0 and a, b
 * and b's relative standard error, or -1. */
static int lin_fit(const pt *p, int i0, int i1, double *a, double *b, double *b_rel_se)
{
    int n = i1 - i0;
    if (n < 2)
        return -1;
    double *x = malloc(sizeof(double) * 3 * (size_t)n);
    if (!x)
        return -1;
    double *y = x + n, *w = y + n;
    for (int i = 0; i < n; i++) {
        x[i] = exp(p[i0 + i].lw);
        y[i] = exp(p[i0 + i].lt);
        w[i] = 1.0 / (y[i] * y[i]);
    }
    double c00, c01, c11, chisq;
    int rc = gsl_fit_wlinear(x, 1, w, 1, y, 1, (size_t)n, a, b, &c00, &c01, &c11, &chisq);
    free(x);
    if (rc != GSL_SUCCESS || !isfinite(*a) || !isfinite(*b))
        return -1;
    /* the weights are relative, so scale the covariance by the residual variance */
    double s2 = n > 2 ? chisq / (n - 2) : 0;
    *b_rel_se = *b > 0 ? sqrt(c11 * s2) / *b : 0;
    return 0;
}

/* 1 when every point's log work and log time is finite. */
static int points_finite(const pt *p, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(p[i].lw) || !isfinite(p[i].lt))
            return 0;
    return 1;
}

/* Build cv's knots, interpolant, extensions and band from n >= 1 points
 * (sorted in place). Returns CCS_OK, CCS_ENOMEM or CCS_ERUNTIME (GSL failure,
 * or a point that is not finite: the binning below needs finite logs to
 * advance, and parsing bounds every row so that they are). */
static int curve_build(curve *cv, pt *p, int n)
{
    assert(n >= 1);
    if (n < 1 || !points_finite(p, n))
        return CCS_ERUNTIME;
    qsort(p, (size_t)n, sizeof *p, cmp_pt);
    curve_clear(cv);
    cv->npts = n;
    cv->w_max = exp(p[n - 1].lw);
    double *bx = malloc(sizeof(double) * (size_t)n), *by = malloc(sizeof(double) * (size_t)n);
    double *kx = malloc(sizeof(double) * (size_t)n), *ky = malloc(sizeof(double) * (size_t)n);
    double *kw = malloc(sizeof(double) * (size_t)n);
    if (!bx || !by || !kx || !ky || !kw) {
        free(bx), free(by), free(kx), free(ky), free(kw);
        return CCS_ENOMEM;
    }
    int nk = 0;
    for (int i = 0; i < n;) {
        int j = i, m = 0;
        while (j < n && p[j].lw - p[i].lw <= OM_BIN) {
            bx[m] = p[j].lw;
            by[m] = p[j].lt;
            m++, j++;
        }
        assert(m >= 1 && nk < n); /* p[i] itself is in its bin */
        kx[nk] = median(bx, m);
        ky[nk] = median(by, m);
        kw[nk] = m;
        nk++;
        i = j;
    }
    /* pool adjacent violators: a weighted isotonic (non-decreasing) fit of ky */
    int *len = malloc(sizeof(int) * (size_t)nk);
    if (!len) {
        free(bx), free(by), free(kx), free(ky), free(kw);
        return CCS_ENOMEM;
    }
    int nb = 0;
    for (int i = 0; i < nk; i++) {
        by[nb] = ky[i];
        bx[nb] = kw[i];
        len[nb] = 1;
        nb++;
        while (nb > 1 && by[nb - 2] > by[nb - 1]) {
            double wsum = bx[nb - 2] + bx[nb - 1];
            by[nb - 2] = (by[nb - 2] * bx[nb - 2] + by[nb - 1] * bx[nb - 1]) / wsum;
            bx[nb - 2] = wsum;
            len[nb - 2] += len[nb - 1];
            nb--;
        }
    }
    for (int b = 0, i = 0; b < nb; b++)
        for (int q = 0; q < len[b]; q++)
            ky[i++] = by[b];
    free(len);
    free(bx);
    free(by);
    free(kw);
    cv->nk = nk;
    cv->lx = kx;
    cv->ly = ky;
    cv->t_floor = exp(ky[0]);
    int rc = CCS_OK;
    if (nk >= 2) {
        cv->ip = gsl_interp_alloc(nk >= 3 ? gsl_interp_steffen : gsl_interp_linear, (size_t)nk);
        if (!cv->ip)
            rc = CCS_ENOMEM;
        else if (gsl_interp_init(cv->ip, kx, ky, (size_t)nk) != GSL_SUCCESS)
            rc = CCS_ERUNTIME;
    }
    if (rc != CCS_OK)
        return rc;

    /* beyond: the marginal cost of the largest points (work within 4x of the
     * largest, at least three points) */
    int i0 = n - 1;
    while (i0 > 0 && (p[n - 1].lw - p[i0 - 1].lw <= log(4.0) || n - i0 < 3))
        i0--;
    double a, b, se;
    double we = exp(kx[nk - 1]), te = exp(ky[nk - 1]);
    if (lin_fit(p, i0, n, &a, &b, &se) == 0 && b > 0) {
        cv->slope = b;
        cv->slope_rel_se = se;
    } else {
        cv->slope = te / we; /* proportional through the last knot */
        cv->slope_rel_se = 0;
    }
    /* below: the latency part is the intercept of the smallest points */
    int i1 = 0;
    while (i1 < n && (p[i1].lw - p[0].lw <= log(4.0) || i1 < 3))
        i1++;
    cv->lat = 0;
    if (lin_fit(p, 0, i1, &a, &b, &se) == 0 && a > 0)
        cv->lat = a < cv->t_floor ? a : cv->t_floor;

    /* band: RMS of log residuals, corrected for the knots' degrees of freedom */
    double ss = 0;
    for (int i = 0; i < n; i++) {
        double r = p[i].lt - curve_lt(cv, p[i].lw);
        ss += r * r;
    }
    if (n > nk + 1) {
        cv->rel = sqrt(ss / (n - nk));
    } else if (nk >= 3) { /* one point per knot: leave-one-knot-out */
        ss = 0;
        for (int i = 1; i < nk - 1; i++) {
            double f = (kx[i] - kx[i - 1]) / (kx[i + 1] - kx[i - 1]);
            double r = ky[i] - (ky[i - 1] + f * (ky[i + 1] - ky[i - 1]));
            ss += r * r;
        }
        cv->rel = sqrt(ss / (nk - 2));
    } else {
        cv->rel = OM_BAND_NONE;
    }
    return CCS_OK;
}

/* Points of rows under lam, into p (n entries). */
static void make_points(const row *r, int n, const double lam[OM_NLAM], pt *p)
{
    for (int i = 0; i < n; i++) {
        p[i].lw = log(row_work(&r[i], lam));
        p[i].lt = log(r[i].t);
    }
}

static int fit_group(curve *cv, const row *r, int n)
{
    pt *p = malloc(sizeof *p * (size_t)n);
    if (!p)
        return CCS_ENOMEM;
    memset(cv->lam, 0, sizeof cv->lam);
    cv->lam[1] = 1;
    int rc;
    if (is_gemm(cv->kind)) {
        /* FLOPs-only first, to report what the shape terms buy */
        make_points(r, n, cv->lam, p);
        if ((rc = curve_build(cv, p, n)) != CCS_OK) {
            free(p);
            return rc;
        }
        cv->rel_flops = cv->rel;
        fit_lambda(r, n, cv->lam);
    }
    make_points(r, n, cv->lam, p);
    if (!points_finite(p, n)) { /* fitted coefficients too large: FLOPs only */
        memset(cv->lam, 0, sizeof cv->lam);
        cv->lam[1] = 1;
        make_points(r, n, cv->lam, p);
    }
    rc = curve_build(cv, p, n);
    free(p);
    return rc;
}

/* ---- grouping ---------------------------------------------------------------- */

typedef struct gkey {
    int kind, dtype, group, level, cls;
} gkey;

static gkey row_key(const row *r)
{
    gkey k = {r->kind, r->dtype, 0, 0, 0};
    if (opkind_is_collective(r->kind)) {
        k.group = r->group;
        k.level = r->level;
    } else if (is_membound(r->kind)) {
        double I = row_intensity(r);
        k.cls = I > 0 ? (int)lround(log2(I) * OM_CLASS_Q) : -100000;
    }
    return k;
}

static int cmp_key(const gkey *a, const gkey *b)
{
    if (a->kind != b->kind)
        return a->kind - b->kind;
    if (a->dtype != b->dtype)
        return a->dtype - b->dtype;
    if (a->group != b->group)
        return a->group - b->group;
    if (a->level != b->level)
        return a->level - b->level;
    return a->cls - b->cls;
}

static int cmp_row(const void *a, const void *b)
{
    gkey x = row_key(a), y = row_key(b);
    int c = cmp_key(&x, &y);
    if (c)
        return c;
    return ((const row *)a)->line - ((const row *)b)->line;
}

void opmodel_free(ccs_opmodel *om)
{
    if (!om)
        return;
    for (int i = 0; i < om->n; i++)
        curve_clear(&om->c[i]);
    free(om->c);
    for (int i = 0; i < om->nmeta; i++) {
        free(om->meta_key[i]);
        free(om->meta_val[i]);
    }
    free(om);
}

ccs_opmodel *opmodel_parse(const char *text, size_t len, const char *name, ccs_err *err)
{
    gsl_set_error_handler_off();
    ccs_opmodel *om = calloc(1, sizeof *om);
    row *rows = NULL;
    size_t nrows = 0, cap = 0;
    char *line = malloc(len + 1);
    if (!om || !line)
        goto nomem;
    sha256_hex(text, len, om->sha256);
    int lineno = 0, header = 0;
    for (size_t pos = 0; pos < len;) {
        size_t e = pos;
        while (e < len && text[e] != '\n')
            e++;
        memcpy(line, text + pos, e - pos);
        line[e - pos] = '\0';
        pos = e + 1;
        lineno++;
        char *s = trim(line);
        if (!*s)
            continue;
        if (*s == '#') {
            if (add_meta(om, s))
                goto nomem;
            continue;
        }
        if (!header && !nrows && !strncmp(s, "op,", 3)) {
            header = 1;
            continue;
        }
        if (nrows == cap) {
            size_t nc = cap ? 2 * cap : 256;
            row *nr = realloc(rows, nc * sizeof *nr);
            if (!nr)
                goto nomem;
            rows = nr;
            cap = nc;
        }
        if (parse_row(s, name, lineno, &rows[nrows], err) != CCS_OK ||
            row_derived_check(&rows[nrows], name, err) != CCS_OK)
            goto fail;
        nrows++;
    }
    free(line);
    line = NULL;
    if (nrows == 0) {
        ccs_err_set(err,
                    "%s: no measurements (expected rows op,dtype,m,n,k,bytes,group,level,"
                    "time_s,reps)",
                    name);
        goto fail;
    }
    qsort(rows, nrows, sizeof *rows, cmp_row);
    om->nrows = (int)nrows;
    om->c = calloc(nrows, sizeof *om->c);
    if (!om->c)
        goto nomem;
    for (size_t i = 0; i < nrows;) {
        gkey k = row_key(&rows[i]);
        size_t j = i;
        double lsum = 0;
        for (; j < nrows; j++) {
            gkey kj = row_key(&rows[j]);
            if (cmp_key(&k, &kj))
                break;
            if (is_membound(rows[j].kind))
                lsum += log(row_intensity(&rows[j]) > 0 ? row_intensity(&rows[j]) : 1e-9);
        }
        curve *cv = &om->c[om->n++];
        cv->kind = k.kind;
        cv->dtype = k.dtype;
        cv->group = k.group;
        cv->level = k.level;
        cv->cls = is_membound(k.kind) ? exp(lsum / (double)(j - i)) : 0;
        int rc = fit_group(cv, &rows[i], (int)(j - i));
        if (rc == CCS_ENOMEM)
            goto nomem;
        if (rc != CCS_OK) {
            ccs_err_set(err, "%s:%d: cannot fit the %s %s curve (GSL failure)", name, rows[i].line,
                        opkind_name(k.kind), dtype_name(k.dtype));
            goto fail;
        }
        i = j;
    }
    free(rows);
    return om;
nomem:
    ccs_err_set(err, "%s: out of memory", name);
fail:
    free(line);
    free(rows);
    opmodel_free(om);
    return NULL;
}

ccs_opmodel *opmodel_load(const char *path, ccs_err *err)
{
    char *buf;
    size_t len;
    if (ccs_read_file(path, CCS_MAX_PROFILE_BYTES, "calibration profiles", &buf, &len, err))
        return NULL;
    ccs_opmodel *om = opmodel_parse(buf, len, path, err);
    free(buf);
    return om;
}

/* ---- evaluation --------------------------------------------------------------- */

static int op_level(const ccs_op *op)
{
    if (op->kind == CCS_OP_P2P)
        return op->per_node >= 2 ? LV_INTRA : LV_INTER;
    return op->per_node >= op->group ? LV_INTRA : LV_INTER;
}

/* The curve serving op, and for collectives the buffer size to read it at. */
static const curve *find_curve(const ccs_opmodel *om, const ccs_op *op, int innet, double *bytes)
{
    const curve *best = NULL;
    if (opkind_is_collective(op->kind)) {
        int lv = op_level(op), g = op->kind == CCS_OP_P2P ? 2 : op->group;
        double bd = HUGE_VAL;
        for (int i = 0; i < om->n; i++) {
            const curve *cv = &om->c[i];
            if (cv->kind != op->kind || cv->level != lv)
                continue;
            /* nearest group in log scale; the op's dtype breaks ties */
            double d = fabs(log((double)cv->group / g)) + (cv->dtype != op->dtype ? 1e-6 : 0);
            if (d < bd) {
                bd = d;
                best = cv;
            }
        }
        if (best) {
            /* equal per-rank traffic: a ring over another group size (or an
             * in-network reduction) moves a different share of the buffer */
            double st, v = cost_coll_volume(op->kind, op->bytes, g, innet, &st);
            double v0 = cost_coll_volume(op->kind, op->bytes, best->group, 0, &st);
            *bytes = op->kind == CCS_OP_P2P || v0 <= 0 ? op->bytes : op->bytes * v / v0;
        }
        return best;
    }
    double I = op->bytes > 0 ? op->flops / op->bytes : 0, bd = HUGE_VAL;
    for (int i = 0; i < om->n; i++) {
        const curve *cv = &om->c[i];
        if (cv->kind != op->kind || cv->dtype != op->dtype)
            continue;
        if (!is_membound(op->kind))
            return cv;
        double d = fabs(log((I > 0 ? I : 1e-9) / (cv->cls > 0 ? cv->cls : 1e-9)));
        if (d < bd) {
            bd = d;
            best = cv;
        }
    }
    *bytes = op->bytes;
    return best;
}

static double op_work(const curve *cv, const ccs_op *op, double bytes)
{
    if (is_gemm(op->kind))
        return gemm_work(cv->lam, op->m, op->n, op->k, op->batch > 1 ? op->batch : 1);
    if (op->kind == CCS_OP_ATTENTION)
        return op->flops;
    return bytes;
}

double opmodel_max_work(const ccs_opmodel *om, const ccs_op *op)
{
    double b;
    const curve *cv = om ? find_curve(om, op, 0, &b) : NULL;
    return cv ? cv->w_max : 0;
}

int opmodel_gemm_terms(const ccs_opmodel *om, int dtype, double *per_call, double *a, double *b,
                       double *c)
{
    for (int i = 0; om && i < om->n; i++) {
        const curve *cv = &om->c[i];
        if (cv->kind != CCS_OP_GEMM || cv->dtype != dtype)
            continue;
        *per_call = cv->lam[0];
        *a = cv->lam[2];
        *b = cv->lam[3];
        *c = cv->lam[4];
        return 0;
    }
    return -1;
}

int opmodel_measured(const ccs_opmodel *om, int kind, int dtype, int level)
{
    ccs_op op;
    memset(&op, 0, sizeof op);
    op.kind = (uint8_t)kind;
    op.dtype = (uint8_t)dtype;
    op.group = 2;
    op.per_node = level ? 1 : 2; /* a pair within a node, or across two */
    op.bytes = 1;
    double b;
    return om && find_curve(om, &op, 0, &b) != NULL;
}

int opmodel_eval(const ccs_opmodel *om, const ccs_opscale *c, const ccs_op *op, ccs_optime *out)
{
    double bytes;
    int innet = c && c->innet_reduce && op->kind == CCS_OP_ALLREDUCE;
    const curve *cv = om ? find_curve(om, op, innet, &bytes) : NULL;
    if (!cv)
        return -1;
    double w = op_work(cv, op, bytes), t, rel = cv->rel, extrap = 0;
    if (!(w > 0) || w <= exp(cv->lx[0])) {
        t = cv->t_floor;
    } else {
        t = exp(curve_lt(cv, log(w)));
        if (w > cv->w_max) {
            extrap = w / cv->w_max;
            /* the band grows with the distance and with the slope's uncertainty */
            double we = exp(cv->lx[cv->nk - 1]);
            double s = cv->slope_rel_se * cv->slope * (w - we) / t;
            rel = sqrt(pow(rel * (1 + log(extrap)), 2) + s * s);
        }
    }
    /* generations: the latency part scales with f_lat, the rest with the resource */
    double f_res = 1, f_lat = 1;
    if (c) {
        f_lat = c->f_lat > 0 ? c->f_lat : 1;
        if (opkind_is_collective(op->kind))
            f_res = (cv->level == LV_INTER ? c->f_inter : c->f_intra) *
                    (c->net_bw_factor > 0 ? c->net_bw_factor : 1);
        else if (is_membound(op->kind))
            f_res = c->f_mem;
        else
            f_res = c->f_flops;
        if (!(f_res > 0))
            f_res = 1;
    }
    double lat = cv->lat < t ? cv->lat : t;
    t = lat / f_lat + (t - lat) / f_res;
    /* A fit far outside its points (a profile of a few wild rows) can give a
     * time that is not one, or a band no double holds: such a curve does not
     * serve op, which then gets the synthetic cost. A band wider than e^50
     * (a factor of 5e21) says as much as e^50 does. */
    if (!(t >= 0 && isfinite(t)))
        return -1;
    if (!(rel >= 0))
        rel = 0;
    if (rel > 50)
        rel = 50;
    out->t = t;
    out->lo = t * exp(-rel);
    out->hi = t * exp(rel);
    if (!isfinite(out->hi))
        return -1;
    out->extrap = extrap;
    return 0;
}

const char *opmodel_sha256(const ccs_opmodel *om)
{
    return om->sha256;
}

const char *opmodel_meta(const ccs_opmodel *om, const char *key)
{
    for (int i = 0; om && i < om->nmeta; i++)
        if (!strcmp(om->meta_key[i], key))
            return om->meta_val[i];
    return NULL;
}

int opmodel_rows(const ccs_opmodel *om)
{
    return om ? om->nrows : 0;
}

int opmodel_curves(const ccs_opmodel *om)
{
    return om ? om->n : 0;
}

void opmodel_describe(const ccs_opmodel *om, FILE *f)
{
    for (int i = 0; om && i < om->n; i++) {
        const curve *cv = &om->c[i];
        fprintf(f, "  %-13s %-4s", opkind_name(cv->kind), dtype_name(cv->dtype));
        if (opkind_is_collective(cv->kind))
            fprintf(f, " group %-3d %-5s", cv->group, cv->level == LV_INTER ? "inter" : "intra");
        else if (is_membound(cv->kind))
            fprintf(f, " %5.3f FLOP/B  ", cv->cls);
        else
            fprintf(f, "                ");
        fprintf(f, " %4d points %3d knots, work %.3g..%.3g, band %.1f%%", cv->npts, cv->nk,
                exp(cv->lx[0]), cv->w_max, 100 * cv->rel);
        if (is_gemm(cv->kind))
            fprintf(f,
                    "; w = F + %.3g*calls + %.3g*mk + %.3g*kn + %.3g*mn (FLOPs-only band "
                    "%.1f%%)",
                    cv->lam[0], cv->lam[2], cv->lam[3], cv->lam[4], 100 * cv->rel_flops);
        fputc('\n', f);
    }
}
