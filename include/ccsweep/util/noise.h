/* noise.h - was a measurement disturbed by other work on the machine? Other
 * load only ever adds time, so the same reference kernel (the probe) timed
 * now and then during a measurement agrees with itself on a quiet machine,
 * and runs slower while something else competes for the cores. The profiler
 * and the ground-truth runner time a probe between their phases and rounds,
 * re-measure what ran while it was slow, and record the probe times; validate
 * compares both tools' probes, so a profile and a ground truth measured under
 * different load are not mistaken for a model error. Pure functions. */
#ifndef CCSWEEP_NOISE_H
#define CCSWEEP_NOISE_H

#include <stddef.h>

/* Probe times within this fraction of the fastest count as quiet. */
#define NOISE_TOL 0.15
/* Most probes the header of a profile or ground truth records. */
#define NOISE_MAX_PROBES 64

typedef struct noise_verdict {
    int n;           /* probes */
    double fastest;  /* s, the quietest probe */
    double median;   /* s */
    double slowdown; /* slowest probe / fastest - 1 */
    int slow;        /* probes slower than fastest * (1 + tol) */
    int busy;        /* the machine was too busy to trust the timings */
} noise_verdict;

/* Slowdown of one probe t against the fastest f: t / f - 1 (0 when f <= 0). */
double noise_slowdown(double t, double f);

/* Judge n probe times (s) with tolerance tol (NOISE_TOL): busy when the
 * median probe is more than tol slower than the fastest (sustained load), or
 * when more than a quarter of the probes are (frequent bursts). A single slow
 * probe among quiet ones is a burst the caller re-measures, not busy. */
void noise_judge(const double *t, int n, double tol, noise_verdict *out);

/* Write "probe_s: t1 t2 ..." values into buf (size len) and parse them back
 * (returns the count, at most max; -1 when text holds no number). */
int noise_format(const double *t, int n, char *buf, size_t len);
int noise_parse(const char *text, double *t, int max);

/* Two tools' probe medians a and b (s): the relative difference of the
 * slower over the faster, e.g. 0.4 when one ran 40% slower. */
double noise_mismatch(double a, double b);

#endif
