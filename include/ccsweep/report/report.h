/* report.h - 'ccsweep report': the study's answers from a sweep database as a
 * Markdown report with PNG plots (gnuplot, pngcairo) and the canned queries
 * that produced them (report_sql.h). Reads the database through store_query.h
 * only; writes nothing but the output directory.
 *
 * Plans the report compares (defined once, in the queries):
 *   best   the fitting plan with the highest tokens/s (CCS_BEST_ORDER, best.h) over
 *          all plans of the run with no mitigation switched on, compared only at
 *          equal work (model, hardware, devices, batch, sequence), where it is
 *          also the highest MFU;
 *   tp+dp  the paper's setting: pp = 1 and the smallest tensor-parallel degree
 *          that fits device memory (the memory-forced TP), then CCS_BEST_ORDER.
 * Output (DIR): report.md; in each format of report_opts.formats: comm_share.png, breakdown.png,
 * ccr.png, dp_hidden.png, mitigations.png (when the run has mitigation what-ifs), forced_tp.png,
 * fixed_plan.png; data/ (the plotted numbers and gnuplot scripts, to restyle a plot); queries/ (the
 * SQL of every question). A serving run (runs.workload = 'serve') adds a serving section:
 * serve_tpot.png, serve_tok_gen.png, serve_comm_tp.png and the best plan of every serving job.
 * By default the report covers the latest training run and the latest serving run, each where
 * the database has one; report_opts.run_id names one run alone. */
#ifndef CCSWEEP_REPORT_H
#define CCSWEEP_REPORT_H

#include "ccsweep/util/common.h"

#include <stdio.h>

typedef struct report_opts {
    const char *db;      /* database path */
    const char *out;     /* output directory, created if missing */
    int64_t run_id;      /* run to report; 0: the latest */
    const char *hw;      /* hardware of the single-hardware plots; NULL: the run's first */
    const char *gnuplot; /* gnuplot program; NULL: $CCSWEEP_GNUPLOT, else "gnuplot" on PATH */
    unsigned formats;    /* REPORT_PNG | REPORT_PDF | REPORT_SVG; 0: PNG */
} report_opts;

/* Figure formats: PNG (pngcairo), PDF (pdfcairo, vector, for papers), SVG. */
enum { REPORT_PNG = 1, REPORT_PDF = 2, REPORT_SVG = 4 };

/* Write the report. log (may be NULL) receives one line per file written.
 * Returns CCS_OK; CCS_EINPUT with err for bad input (missing database, not a
 * ccsweep database, unknown run or hardware, a run without fitting rows);
 * CCS_ERUNTIME when gnuplot is missing or fails, CCS_EIO when the output cannot
 * be written. Nothing is written before the input checks pass. A serving run alone must have a
 * fitting row, as a training run must. */
int report_write(const report_opts *o, FILE *log, ccs_err *err);

/* ---- pure helpers (unit-tested) --------------------------------------------- */

/* Summary statistics of the finite values among v[0..n). */
typedef struct report_stats {
    size_t n;                      /* finite values */
    double min, max, mean, median; /* NAN when n == 0 */
} report_stats;
void report_stats_of(const double *v, size_t n, report_stats *out);

/* Generations ascending in gen[0..n) with a value v[i] each (NAN: no value):
 * the first generation from which every later value is below thr, i.e. where
 * the quantity drops below thr and stays there. Returns -1 when the last value
 * is not below thr or there is none. */
int report_first_below(const int *gen, const double *v, size_t n, double thr);

/* The hidden-size ladder among n models: the largest group of models with the
 * same number of layers and at least 3 distinct hidden sizes (ties: the group
 * with the widest hidden range, then the first). Sets mask[i] to 1 for its
 * members, 0 otherwise; returns the group size, or 0 (all masks 0) when there
 * is none. */
size_t report_pick_ladder(const int *layers, const int *hidden, size_t n, unsigned char *mask);

/* The fixed TP degree of the compute/communication plot: preferred when it is
 * among tps[0..n), else the value > 1 with the most rows (count[i]), ties to
 * the smaller. Returns 0 when no tp > 1 is present. */
int report_pick_fixed_tp(const int *tps, const int64_t *count, size_t n, int preferred);

/* Parse a comma-separated format list ("png,pdf,svg") into REPORT_* bits.
 * Returns 0, or -1 for an empty list or an unknown name (*bad points at it). */
int report_parse_formats(const char *s, unsigned *out, const char **bad);

/* Write s into buf (size n) as a gnuplot single-quoted string, quotes
 * included ('it''s'); control characters (a newline would end the command)
 * and backquotes become '?'. Returns 0, or -1 when it does not fit (buf then
 * "''"). */
int report_gp_quote(char *buf, size_t n, const char *s);

/* The key of a line panel: its font size and the rows it takes (gnuplot's
 * "maxrows", which sets the columns: ceil(entries / rows)). */
typedef struct report_key {
    int font; /* points: 8, or 7 when that saves rows */
    int rows;
} report_key;
/* The layout of a key of entries titles, the longest of longest characters,
 * inside a plot area plot_w pixels wide (at 96 pixels per inch, the figures'
 * scale): no more columns than fit side by side in that width, as gnuplot
 * sizes a column in the cairo terminals (per character of the longest title
 * about 0.9 of the font's size in pixels, plus the sample), and at most
 * ceil(entries / 6) of them (six rows, the rest in further columns). With
 * more than six rows at 8 points, 7 points is taken when it needs fewer. A
 * title too long for one column still gets one. */
void report_key_fit(int entries, size_t longest, int plot_w, report_key *out);

#endif
