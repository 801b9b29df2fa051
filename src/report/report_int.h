/* report_int.h - what the files of 'ccsweep report' share and nothing else
 * sees (the pattern of SQLite's vdbeInt.h): the report context rp, the query
 * results it holds, the figure table and the helpers the files call across.
 * include/ccsweep/report/report.h stays the public API.
 *
 * The files:
 *   report.c       the driver (report_write), the output directory, errors
 *   report_data.c  runs the queries into tables (rtab) and checks the input
 *   report_gp.c    gnuplot: finding it, script heads, running it per format
 *   report_plot.c  the figures: the figure table and one function per figure
 *   report_md.c    report.md from the tables and the figures drawn
 *   report_serve.c the serving section: its queries, figures and report.md text
 *
 * Ownership: rp owns every rtab in it (freed by rp_free_tables); every string
 * an rtab_ function returns is borrowed from its table. The rp_ functions
 * returning int return CCS_OK or a CCS_E* code with r->err set (rp_fail). */
#ifndef CCSWEEP_REPORT_INT_H
#define CCSWEEP_REPORT_INT_H

#include "ccsweep/report/report.h"
#include "ccsweep/store/store_query.h"

#include <limits.h>
#include <stdio.h>

/* ---- query results held in memory (report_data.c) ---------------------------------- */

/* The rows of one query, every value kept both as a number and as text. */
typedef struct rtab {
    int ncols;
    char **cols; /* column names */
    size_t nrows;
    size_t num_cap, txt_cap; /* rows allocated in num and txt (ccs_grow) */
    double *num;             /* nrows x ncols, NAN for NULL */
    char **txt;              /* nrows x ncols, NULL for NULL */
    int oom;
} rtab;

/* Free t's contents; t is empty (and reusable) again. */
void rtab_free(rtab *t);
/* Index of column name, or -1. */
int rtab_col(const rtab *t, const char *name);
/* Row r's value in column col as a number (SQLite's conversion of text): NAN for
 * NULL or no such column. r < t->nrows. */
double rtab_num(const rtab *t, size_t r, const char *col);
/* Row r's value in column col as text: "" for NULL or no such column. */
const char *rtab_str(const rtab *t, size_t r, const char *col);
/* 1 when row r's column col holds text s. */
int rtab_is(const rtab *t, size_t r, const char *col, const char *s);

/* ---- the figures (report_plot.c) ----------------------------------------------------- */

/* The figures, in the order they are drawn and appear in report.md (the
 * section number is the index + 1). */
enum { P_COMM = 0, P_BREAKDOWN, P_CCR, P_DP, P_MIT, P_TP, P_FIXED, P_N };

typedef struct rp rp;
struct lines_fig;

/* The serving figures (report_serve.c), drawn after the training ones. */
enum { SV_TPOT = 0, SV_TOK, SV_COMM, SV_N };

/* The serving section's state: the latest serving run's query results and
 * the job the single-job figures show (report_serve.c). */
typedef struct rp_serve {
    rtab best;       /* serve_best: one row per job, NULL plan columns when none fits */
    rtab comm;       /* serve_comm_tp: the best plan per job and tp */
    rtab tpot;       /* serve_tpot: the best plan per job, tp and concurrency */
    rtab models, hw; /* names in the spec's order (column name) */
    rtab gens;       /* generations ascending (column generation) */
    rtab shapes;     /* request shapes: distinct isl, osl, weight_dtype, kv_dtype */
    char ref[4][32]; /* devices, isl, osl of the single-job figures; [3] unused */
    char ref_w[16], ref_kv[16];
    int gen_first, gen_last;
    int fixed_tp; /* the tp of the per-hardware communication finding */
    int made[SV_N];
    char note[SV_N][640]; /* what a figure's bounded grid of panels leaves to the tables */
} rp_serve;

/* One row per figure. */
typedef struct rp_figure {
    const char *file;  /* PNG in the output directory; its stem names data/STEM.dat, .gp */
    const char *query; /* report_sql name of the figure's query, loaded into rp.q[] */
    const char *title;
    int (*draw)(rp *r, int p);     /* writes data/STEM.{dat,gp}, runs gnuplot */
    const struct lines_fig *lines; /* settings of draw = plot_lines; NULL otherwise */
} rp_figure;

extern const rp_figure rp_figures[P_N];

/* The two plan kinds of the queries (their 'plan' column), as panel rows. */
extern const char *const rp_lens_key[2];
extern const char *const rp_lens_title[2];

/* ---- report context ------------------------------------------------------------------- */

struct rp {
    const report_opts *o;
    FILE *log;
    ccs_err *err;
    storeq_db *db;
    int64_t run;
    storeq_param par[2]; /* :run, :tp */
    rtab runinfo, hwrows, models, hwnames, gens;
    /* The groups of the run: one row per model x devices x gbs x seq with a
     * stored row (columns model, params, layers, hidden, devices, gbs, seq), by
     * size. A group is the unit of equal work: plans compare only within one,
     * and every count of the report counts groups. */
    rtab grp;
    int vary[3];       /* devices, gbs, seq take more than one value within a model */
    int multi;         /* some model has more than one group */
    char gword[96];    /* "model x hardware pairs", "model x hardware x seq groups" */
    const char *gnoun; /* "pairs" or "groups" */
    size_t ref;        /* index into hwnames of the single-hardware plots */
    int fixed_tp;
    int gen_first, gen_last;
    char dir[PATH_MAX - 64], data[PATH_MAX];
    char gnuplot[PATH_MAX];
    rtab q[P_N]; /* the plots' query results */
    rtab summary;
    rtab cls;            /* comm_class: MoE and long-context best plans */
    int made[P_N];       /* 1 when the PNG was drawn */
    char note[P_N][640]; /* why a plot was left out, or a remark under it */
    int mit_gen;         /* generation of the mitigation plot, -1 when none */
    /* The serving run reported (0: none), its runs row and section. The
     * training part (everything above) is reported only when run > 0. */
    int64_t srun;
    rtab srunfo;
    rp_serve sv;
};

/* report.c */

/* Set r->err to the formatted message; returns rc. */
int rp_fail(rp *r, int rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Open dir/name for writing; NULL with *rc set (rp_fail) when it cannot. */
FILE *rp_open_out(rp *r, const char *dir, const char *name, int *rc);
/* Close f (opened as dir/name); CCS_EIO when a write or the close failed. */
int rp_close_out(rp *r, FILE *f, const char *dir, const char *name);

/* report_data.c */

/* Name of hardware line i of the run (r->hwnames); borrowed. */
const char *rp_hw_name(const rp *r, size_t i);
/* Generation i of the run, ascending (r->gens). */
int rp_gen_at(const rp *r, size_t i);
/* The run to report (r->run, r->runinfo, :run), checked to have fitting rows. */
int rp_resolve_run(rp *r);
/* The dimensions of a group besides the model (grp columns), rp.vary's order. */
extern const char *const rp_grp_dims[3];
/* Group g's label into buf: the model, then each dimension that varies within a
 * model ("llama3-8b, 64 devices, seq 8192"). */
void rp_grp_label(const rp *r, size_t g, char *buf, size_t n);
/* Row i of t's work, for the varying dimensions only (", 64 devices, seq 8192";
 * "" when none varies); dimensions t lacks are left out. */
void rp_work_label(const rp *r, const rtab *t, size_t i, char *buf, size_t n);
/* 1 when row i of t is of group g: same model and, for each dimension t has,
 * the same value. */
int rp_grp_match(const rp *r, size_t g, const rtab *t, size_t i);
/* 1 when rows i of t and j of u do the same work in the varying dimensions. */
int rp_same_work(const rp *r, const rtab *t, size_t i, const rtab *u, size_t j);
/* The run's hardware and models, the reference hardware (--hw) and the fixed
 * TP (:tp); fails on names that did not come from a catalog. */
int rp_load_layout(rp *r);
/* Run sql with :run = run into t (emptied first). */
int rp_load_run(rp *r, const char *sql, int64_t run, rtab *t);
/* Run report query name with :run = run into t. */
int rp_load_query_run(rp *r, const char *name, int64_t run, rtab *t);
/* The figures' queries into r->q, then summary and comm_class. */
int rp_load_queries(rp *r);
/* Free every table r holds. */
void rp_free_tables(rp *r);

/* report_gp.c */

/* Find the gnuplot program (options, $CCSWEEP_GNUPLOT, PATH) into r->gnuplot. */
int rp_find_gnuplot(rp *r);
/* Run gnuplot on data/NAME.gp once per format of the options. */
int rp_gnuplot(rp *r, const char *name);
/* Write the head of a figure's script: terminal, output, a rows x cols multiplot. */
void rp_gp_head(FILE *g, const char *png, int w, int h, const char *title, int rows, int cols);
/* An empty panel saying why; restore: the settings to put back afterwards. */
void rp_gp_empty(FILE *g, const char *why, const char *restore);

/* report_plot.c */

/* Draw every figure of rp_figures in order (r->made, r->note, r->mit_gen). */
int rp_plot_all(rp *r);

/* Write data/NAME.dat and data/NAME.gp: open both (CCS_OK, or the error with
 * neither open), close both and run gnuplot on the script (oom: building it ran
 * out of memory, nothing is drawn). */
int rp_fig_open(rp *r, const char *name, FILE **dat, FILE **g);
int rp_fig_finish(rp *r, const char *name, FILE *dat, FILE *g, int oom);
/* Line colour i (colour-blind-safe, cycling). */
const char *rp_color(size_t i);

/* report_serve.c */

/* The serving run's queries and names into r->sv; fails on names that did not
 * come from a catalog. */
int rp_serve_load(rp *r);
/* Draw the serving figures (r->sv.made). */
int rp_serve_plot(rp *r);
/* The serving section of report.md. */
void rp_serve_md(const rp *r, FILE *f);
/* Free r->sv's tables. */
void rp_serve_free(rp *r);

/* report_md.c */

/* The table of run ri (a runs row): spec, status and counts, when, build. */
void rp_md_run(const rp *r, FILE *f, const rtab *ri);
/* One figure's part of report.md: heading (head, then title and the file),
 * the image when made, note, caption and the query behind it. */
void rp_md_figure(const rp *r, FILE *f, const char *head, const char *title, const char *stem,
                  int made, const char *note, const char *caption, const char *query);
/* Write DIR/report.md from the tables and the figures drawn. */
int rp_write_md(rp *r);

#endif
