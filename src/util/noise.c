/* noise.c - interference verdicts from probe timings (noise.h). */
#include "ccsweep/util/noise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double noise_slowdown(double t, double f)
{
    return f > 0 ? t / f - 1 : 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void noise_judge(const double *t, int n, double tol, noise_verdict *out)
{
    memset(out, 0, sizeof *out);
    double v[NOISE_MAX_PROBES];
    int k = 0;
    for (int i = 0; i < n && k < NOISE_MAX_PROBES; i++)
        if (t[i] > 0)
            v[k++] = t[i];
    out->n = k;
    if (k == 0)
        return;
    qsort(v, (size_t)k, sizeof v[0], cmp_dbl);
    out->fastest = v[0];
    out->median = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
    out->slowdown = noise_slowdown(v[k - 1], v[0]);
    for (int i = 0; i < k; i++)
        out->slow += noise_slowdown(v[i], v[0]) > tol;
    out->busy = noise_slowdown(out->median, out->fastest) > tol || 4 * out->slow > k;
}

int noise_format(const double *t, int n, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        int w = snprintf(buf + used, len > used ? len - used : 0, "%s%.4g", i ? " " : "", t[i]);
        if (w < 0 || used + (size_t)w >= len)
            return -1;
        used += (size_t)w;
    }
    return 0;
}

int noise_parse(const char *text, double *t, int max)
{
    int n = 0;
    const char *p = text;
    while (p && *p && n < max) {
        char *end;
        double x = strtod(p, &end);
        if (end == p)
            break;
        t[n++] = x;
        p = end;
    }
    return n ? n : -1;
}

double noise_mismatch(double a, double b)
{
    if (!(a > 0) || !(b > 0))
        return 0;
    return a > b ? a / b - 1 : b / a - 1;
}
