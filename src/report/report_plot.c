/* report_plot.c - the report's figures: the figure table (rp_figures, one row
 * per figure) and the function that draws each from its query's rows. Every
 * figure writes data/STEM.dat (the plotted numbers) and data/STEM.gp (the
 * gnuplot script), then runs gnuplot on the script (report_gp.c). */
#include "report_int.h"

#include "ccsweep/util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Line colours by generation index (Okabe & Ito's colour-blind-safe set). */
static const char *const gen_color[8] = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                         "#cc79a7", "#56b4e9", "#000000", "#999933"};

/* ---- files of a figure ------------------------------------------------------------ */

/* Figure p's file name without its extension, into stem (64 bytes). */
static void fig_stem(int p, char *stem)
{
    snprintf(stem, 64, "%.*s", (int)strcspn(rp_figures[p].file, "."), rp_figures[p].file);
}

const char *rp_color(size_t i)
{
    return gen_color[i % 8];
}

int rp_fig_open(rp *r, const char *stem, FILE **dat, FILE **g)
{
    char name[80];
    int rc = CCS_OK;
    snprintf(name, sizeof name, "%s.dat", stem);
    *dat = rp_open_out(r, r->data, name, &rc);
    snprintf(name, sizeof name, "%s.gp", stem);
    *g = *dat ? rp_open_out(r, r->data, name, &rc) : NULL;
    if (!*g) {
        if (*dat)
            fclose(*dat);
        *dat = NULL;
        return rc;
    }
    return CCS_OK;
}

int rp_fig_finish(rp *r, const char *stem, FILE *dat, FILE *g, int oom)
{
    char dat_name[80], gp_name[80];
    snprintf(dat_name, sizeof dat_name, "%s.dat", stem);
    snprintf(gp_name, sizeof gp_name, "%s.gp", stem);
    int rc1 = rp_close_out(r, dat, r->data, dat_name);
    int rc2 = rp_close_out(r, g, r->data, gp_name);
    if (oom)
        return rp_fail(r, CCS_ENOMEM, "out of memory");
    if (rc1 || rc2)
        return rc1 ? rc1 : rc2;
    return rp_gnuplot(r, stem);
}

/* Open data/STEM.dat and data/STEM.gp of figure p for writing. */
static int fig_open(rp *r, int p, FILE **dat, FILE **g)
{
    char stem[64];
    fig_stem(p, stem);
    return rp_fig_open(r, stem, dat, g);
}

/* Close figure p's files, then run gnuplot on the script (r->made[p] = 1 when
 * it drew). */
static int fig_finish(rp *r, int p, FILE *dat, FILE *g, int oom)
{
    char stem[64];
    fig_stem(p, stem);
    int rc = rp_fig_finish(r, stem, dat, g, oom);
    if (rc == CCS_OK)
        r->made[p] = 1;
    return rc;
}

/* ---- line plots: one panel per (plan kind, hardware), one line per generation and
 * work (devices, gbs, seq where they vary within a model) ---------------------------- */

typedef struct lines_row {
    const char *plan; /* rows whose 'plan' column is this; NULL: every row */
    const char *ycol;
    const char *title;
} lines_row;

typedef struct lines_fig {
    const char *xcol;
    double xscale;
    const char *xlabel, *ylabel;
    int ylog2;         /* log scale base 2 (TP degrees) */
    double ymin, ymax; /* NAN: automatic */
    lines_row rows[2];
    /* Which rows say a model fits (markers for those that do not): the rows
     * of this figure's query (fit_col NULL), or column fit_col of query
     * fit_plot's rows for the same plan kind, when this query leaves out
     * fitting plans (dp_hidden has no row without DP traffic). */
    int fit_plot;
    const char *fit_col;
    const char *key; /* key position; NULL: top left, with room above the data */
} lines_fig;

/* What one panel of a line figure spans: its lines' work (rows of the query
 * standing for each combination of the dimensions that vary within a model)
 * and the range of its points. */
typedef struct lines_panel {
    size_t *work; /* row index in the query per work combination */
    size_t nwork;
    int nlines;
    int nkey;                  /* entries of its key */
    size_t keylen;             /* characters of the longest of them */
    double xlo, xhi, ylo, yhi; /* of the points drawn; lo > hi: none */
} lines_panel;

/* 1 when row i of figure p's query belongs to panel (lr, hardware h). */
static int lines_in_panel(const rp *r, int p, const lines_row *lr, size_t h, size_t i)
{
    const rtab *t = &r->q[p];
    return rtab_is(t, i, "hardware", rp_hw_name(r, h)) &&
           (!lr->plan || rtab_is(t, i, "plan", lr->plan));
}

/* The panel of figure row lr on hardware h: one data block per generation and
 * work combination (devices, gbs, seq where they vary within a model: plans
 * and points compare only at equal work, so each line holds one point per
 * model), their plot clauses appended to cl; *block numbers the blocks.
 * Fills pn (pn->work is allocated; NULL when out of memory, cl->oom set). */
static void lines_series(const rp *r, int p, const lines_row *lr, size_t h, FILE *dat,
                         const char *dat_name, ccs_buf *cl, int *block, lines_panel *pn)
{
    static const int pt[5] = {7, 5, 9, 11, 13};
    const lines_fig *f = rp_figures[p].lines;
    const rtab *t = &r->q[p];
    pn->work = malloc((t->nrows ? t->nrows : 1) * sizeof *pn->work);
    pn->nwork = 0;
    pn->nlines = pn->nkey = 0;
    pn->keylen = 0;
    pn->xlo = pn->ylo = INFINITY;
    pn->xhi = pn->yhi = -INFINITY;
    if (!pn->work) {
        cl->oom = 1;
        return;
    }
    for (size_t i = 0; i < t->nrows; i++) {
        if (!lines_in_panel(r, p, lr, h, i))
            continue;
        size_t w;
        for (w = 0; w < pn->nwork && !rp_same_work(r, t, pn->work[w], t, i); w++)
            ;
        if (w == pn->nwork)
            pn->work[pn->nwork++] = i;
    }
    for (size_t gi = 0; gi < r->gens.nrows; gi++) {
        int gen = rp_gen_at(r, gi);
        for (size_t w = 0; w < pn->nwork; w++) {
            int npts = 0;
            char work[96];
            rp_work_label(r, t, pn->work[w], work, sizeof work);
            for (size_t i = 0; i < t->nrows; i++) {
                double x = rtab_num(t, i, f->xcol) * f->xscale, y = rtab_num(t, i, lr->ycol);
                if (!lines_in_panel(r, p, lr, h, i) || (int)rtab_num(t, i, "generation") != gen ||
                    !rp_same_work(r, t, pn->work[w], t, i) || !isfinite(x) || !isfinite(y))
                    continue;
                if (!npts)
                    fprintf(dat, "# gen %d%s\n", gen, work);
                fprintf(dat, "%.9g %.9g\n", x, y);
                pn->xlo = fmin(pn->xlo, x);
                pn->xhi = fmax(pn->xhi, x);
                if (!f->ylog2 || y > 0) {
                    pn->ylo = fmin(pn->ylo, y);
                    pn->yhi = fmax(pn->yhi, y);
                }
                npts++;
            }
            if (!npts)
                continue;
            fprintf(dat, "\n\n");
            ccs_buf_printf(cl,
                           "%s'%s' index %d using 1:2 with linespoints lw 2 dt %d pt %d ps 0.7 "
                           "lc rgb '%s' title 'gen %d%s'",
                           cl->len ? ", " : "", dat_name, *block, (int)(w % 5) + 1, pt[w % 5],
                           gen_color[gi % 8], gen, work);
            (*block)++;
            pn->nlines++;
            char title[128];
            pn->nkey++;
            snprintf(title, sizeof title, "gen %d%s", gen, work);
            if (strlen(title) > pn->keylen)
                pn->keylen = strlen(title);
        }
    }
}

/* Groups with no fitting plan would just be missing from their line: mark
 * them on the x axis in the line's colour, stacked by line on the y2 axis
 * ([0:1]). Same arguments as lines_series; returns the marks drawn. */
static int lines_nofit(const rp *r, int p, const lines_row *lr, size_t h, FILE *dat,
                       const char *dat_name, ccs_buf *cl, int *block, lines_panel *pn)
{
    const lines_fig *f = rp_figures[p].lines;
    const rtab *t = &r->q[p];
    const rtab *ft = f->fit_col ? &r->q[f->fit_plot] : &r->q[p];
    const char *fcol = f->fit_col ? f->fit_col : lr->ycol;
    int nmiss = 0, line = 0;
    size_t nl = r->gens.nrows * pn->nwork;
    double step = nl > 15 ? 0.6 / (double)nl : 0.04;
    for (size_t gi = 0; gi < r->gens.nrows; gi++) {
        int gen = rp_gen_at(r, gi);
        for (size_t w = 0; w < pn->nwork; w++, line++) {
            int npts = 0;
            for (size_t g = 0; g < r->grp.nrows; g++) {
                if (!rp_same_work(r, &r->grp, g, t, pn->work[w]))
                    continue;
                int have = 0;
                for (size_t i = 0; i < ft->nrows && !have; i++)
                    have = rp_grp_match(r, g, ft, i) &&
                           rtab_is(ft, i, "hardware", rp_hw_name(r, h)) &&
                           (int)rtab_num(ft, i, "generation") == gen &&
                           (!lr->plan || rtab_is(ft, i, "plan", lr->plan)) &&
                           isfinite(rtab_num(ft, i, fcol));
                double x = rtab_num(&r->grp, g, f->xcol) * f->xscale;
                if (have || !isfinite(x))
                    continue;
                if (!npts)
                    fprintf(dat, "# no fitting plan: gen %d\n", gen);
                fprintf(dat, "%.9g %.4g\n", x, 0.025 + step * (double)line);
                pn->xlo = fmin(pn->xlo, x);
                pn->xhi = fmax(pn->xhi, x);
                npts++;
            }
            if (!npts)
                continue;
            fprintf(dat, "\n\n");
            ccs_buf_printf(cl,
                           ", '%s' index %d using 1:2 axes x1y2 with points pt 2 ps 1.3 lw 2 "
                           "lc rgb '%s' notitle",
                           dat_name, (*block)++, gen_color[gi % 8]);
            nmiss += npts;
        }
    }
    return nmiss;
}

/* The script of one panel plot_w pixels wide inside its axes: title, axes
 * from the panel's data pn, and plot cl (an empty panel when cl is empty).
 * The key takes no more columns than fit in plot_w (report_key_fit): a key
 * of long titles in three columns used to run past the panel's right edge,
 * over the next panel or off the figure. */
static void lines_script(FILE *g, const lines_fig *f, const char *title, const ccs_buf *cl,
                         const lines_panel *pn, int plot_w)
{
    report_key key;
    report_key_fit(pn->nkey, pn->keylen, plot_w, &key);
    char q[300];
    report_gp_quote(q, sizeof q, title);
    fprintf(g, "set title %s\nset xlabel '%s'\nset ylabel '%s'\n", q, f->xlabel, f->ylabel);
    if (!cl->len) {
        rp_gp_empty(g, "no fitting plan", "");
        return;
    }
    fprintf(g, "set logscale x 10\nset format x '%%g'\n");
    char lo[32] = "*", hi[32] = "*";
    if (f->ylog2 && pn->ylo <= pn->yhi) {
        /* TP degrees: powers of two as ticks, never a fraction */
        double a = exp2(floor(log2(pn->ylo))), b = exp2(ceil(log2(pn->yhi)));
        if (a < 1)
            a = 1;
        if (b <= a)
            b = 2 * a;
        fprintf(g, "set logscale y 2\nset ytics (");
        for (double v = a; v <= b; v *= 2)
            fprintf(g, "%s%.0f", v > a ? ", " : "", v);
        fprintf(g, ")\nset format y '%%g'\n");
        snprintf(lo, sizeof lo, "%g", a / 1.4);
        snprintf(hi, sizeof hi, "%g", b * 1.4);
    } else {
        fprintf(g, "unset logscale y\nset ytics autofreq\n");
        if (isfinite(f->ymin))
            snprintf(lo, sizeof lo, "%g", f->ymin);
        if (isfinite(f->ymax))
            snprintf(hi, sizeof hi, "%g", f->ymax);
        else if (!f->key && pn->ylo <= pn->yhi && pn->yhi > 0)
            /* the key sits top left over the panel: room above the data for
             * its rows (about 6% of the height each) */
            snprintf(hi, sizeof hi, "%g", pn->yhi * (1.05 + 0.065 * key.rows));
    }
    fprintf(g, "set yrange [%s:%s]\n", lo, hi);
    /* the data's range, a little wider: gnuplot's own would round to decades */
    fprintf(g,
            "set xrange [%.4g:%.4g]\nset y2range [0:1]\nunset y2tics\n"
            "set key %s maxrows %d Left reverse samplen 3 font ',%d'\n",
            pn->xlo / 1.25, pn->xhi * 1.25, f->key ? f->key : "top left", key.rows, key.font);
    fprintf(g, "plot %s\n", ccs_buf_str(cl));
    fprintf(g, "unset logscale\nset key\nset ytics autofreq\n");
}

/* Figure p as lines (rp_figures[p].lines): rows = its two lines_rows, columns
 * = the run's hardware lines, one line per generation. */
static int plot_lines(rp *r, int p)
{
    const lines_fig *f = rp_figures[p].lines;
    char stem[64], dat_name[80];
    fig_stem(p, stem);
    snprintf(dat_name, sizeof dat_name, "%s.dat", stem);
    FILE *dat, *g;
    int rc = fig_open(r, p, &dat, &g);
    if (rc)
        return rc;
    size_t ncol = r->hwnames.nrows;
    int width = (int)(520 * ncol + 80);
    /* a panel's plot area: its share of the width less the y axis's label
     * and tics on the left and the margin on the right (about 92 px) */
    int plot_w = width / (int)(ncol ? ncol : 1) - 100;
    rp_gp_head(g, rp_figures[p].file, width, 880, rp_figures[p].title, 2, (int)ncol);
    int block = 0, oom = 0;
    for (int row = 0; row < 2; row++) {
        const lines_row *lr = &f->rows[row];
        for (size_t h = 0; h < ncol; h++) {
            ccs_buf cl = CCS_BUF_INIT;
            lines_panel pn;
            lines_series(r, p, lr, h, dat, dat_name, &cl, &block, &pn);
            if (cl.len && pn.work && lines_nofit(r, p, lr, h, dat, dat_name, &cl, &block, &pn)) {
                ccs_buf_printf(&cl, ", NaN with points pt 2 ps 1.3 lw 2 lc rgb '#555555' "
                                    "title 'no fitting plan'");
                pn.nkey++;
                if (pn.keylen < strlen("no fitting plan"))
                    pn.keylen = strlen("no fitting plan");
            }
            char title[256];
            snprintf(title, sizeof title, "%s: %s", rp_hw_name(r, h), lr->title);
            lines_script(g, f, title, &cl, &pn, plot_w);
            oom |= cl.oom;
            free(pn.work);
            ccs_buf_free(&cl);
        }
    }
    fprintf(g, "unset multiplot\n");
    return fig_finish(r, p, dat, g, oom);
}

/* ---- breakdown: stacked shares per model ------------------------------------------ */

/* Stacked shares per group (plot 2): rows = hardware x plan kind, columns =
 * first and last generation. Bars are groups (model, devices, and gbs, seq
 * where they vary), so each bar is one job; a panel's legend lists only the
 * classes with a share in it, and says '* no fitting plan' only when a bar has
 * none. */
static int plot_breakdown(rp *r, int p)
{
    const rtab *t = &r->q[p];
    FILE *dat, *g;
    int rc = fig_open(r, p, &dat, &g);
    if (rc)
        return rc;
    int gens[2] = {r->gen_first, r->gen_last};
    int ncol = r->gen_first == r->gen_last ? 1 : 2;
    size_t ng = r->grp.nrows, nhw = r->hwnames.nrows;
    int w = (int)(ng * 34 + 260);
    w = (w < 700 ? 700 : w) * ncol;
    rp_gp_head(g, rp_figures[p].file, w, (int)(500 * 2 * nhw), rp_figures[p].title, (int)(2 * nhw),
               ncol);
    static const char tics[] = "set xtics rotate by 45 right font ',8'\nset ytics 0,20,100\n"
                               "set yrange [0:130]\n";
    fprintf(g,
            "set style data histograms\nset style histogram rowstacked\n"
            "set style fill solid 0.85 border lc rgb '#444444'\nset boxwidth 0.8\n"
            "%sset key top center horizontal maxrows 1 font ',9'\n"
            "set ylabel 'share of iteration time (%%)'\n",
            tics);
    enum { NPART = 7 };
    static const char *const parts[NPART] = {"compute_pct", "tp_comm_pct", "cp_comm_pct",
                                             "ep_comm_pct", "dp_comm_pct", "pp_comm_pct",
                                             "bubble_pct"};
    static const char *const names[NPART] = {
        "computation",       "TP comm (exposed)", "CP comm (exposed)", "EP all-to-all",
        "DP comm (exposed)", "pipeline p2p",      "pipeline bubble"};
    static const char *const colors[NPART] = {"#4c72b0", "#dd8452", "#55a868", "#da8bc3",
                                              "#c44e52", "#8172b3", "#aaaaaa"};
    int block = 0;
    for (size_t h = 0; h < nhw; h++) {
        const char *hw = rp_hw_name(r, h);
        for (int row = 0; row < 2; row++) {
            for (int c = 0; c < ncol; c++) {
                int any = 0, star = 0, drawn[NPART] = {0};
                for (size_t m = 0; m < ng; m++) {
                    char label[160];
                    rp_grp_label(r, m, label, sizeof label);
                    if (!r->vary[0]) /* the device count, even when fixed per model */
                        snprintf(label + strlen(label), sizeof label - strlen(label),
                                 ", %.0f devices", rtab_num(&r->grp, m, "devices"));
                    size_t i;
                    for (i = 0; i < t->nrows; i++)
                        if (rtab_is(t, i, "plan", rp_lens_key[row]) &&
                            rtab_is(t, i, "hardware", hw) &&
                            (int)rtab_num(t, i, "generation") == gens[c] &&
                            rp_grp_match(r, m, t, i))
                            break;
                    fprintf(dat, "\"%s%s\"", label, i < t->nrows ? "" : "*");
                    for (int k = 0; k < NPART; k++) {
                        double v = i < t->nrows ? rtab_num(t, i, parts[k]) : 0.0;
                        fprintf(dat, " %.6g", v);
                        drawn[k] |= v > 0;
                    }
                    fprintf(dat, "\n");
                    any |= i < t->nrows;
                    star |= i == t->nrows;
                }
                fprintf(dat, "\n\n");
                char title[256], q[300];
                snprintf(title, sizeof title, "%s, gen %d: %s", hw, gens[c], rp_lens_title[row]);
                report_gp_quote(q, sizeof q, title);
                fprintf(g, "set title %s\n", q);
                fprintf(g, star ? "set xlabel '* no fitting plan' font ',8'\n" : "unset xlabel\n");
                if (!any) {
                    rp_gp_empty(g, "no fitting plan", tics);
                } else {
                    fprintf(g, "plot ");
                    int first = 1;
                    for (int k = 0; k < NPART; k++) {
                        /* a class with no share here: no bar segment, no legend entry */
                        if (!drawn[k] && !(first && k == NPART - 1))
                            continue;
                        fprintf(g, "%s'breakdown.dat' index %d using %d%s title '%s' lc rgb '%s'",
                                first ? "" : ", ", block, k + 2, first ? ":xtic(1)" : "", names[k],
                                colors[k]);
                        first = 0;
                    }
                    fprintf(g, "\n");
                }
                block++;
            }
        }
    }
    fprintf(g, "unset multiplot\n");
    return fig_finish(r, p, dat, g, 0);
}

/* ---- compute/communication ratio vs hidden size ----------------------------------- */

/* Index of model name in r->models, or -1. */
static long model_index(const rp *r, const char *name)
{
    for (size_t i = 0; i < r->models.nrows; i++)
        if (rtab_is(&r->models, i, "name", name))
            return (long)i;
    return -1;
}

/* Which models plot 3 shows: the fixed-depth ladder when the run has one. */
static size_t ccr_models(const rp *r, unsigned char *mask, int *ladder_layers)
{
    size_t n = r->models.nrows;
    int *layers = malloc((n ? n : 1) * sizeof *layers);
    int *hidden = malloc((n ? n : 1) * sizeof *hidden);
    size_t k = 0;
    *ladder_layers = 0;
    if (layers && hidden) {
        for (size_t i = 0; i < n; i++) {
            layers[i] = (int)rtab_num(&r->models, i, "layers");
            hidden[i] = (int)rtab_num(&r->models, i, "hidden");
        }
        k = report_pick_ladder(layers, hidden, n, mask);
        for (size_t i = 0; k && i < n; i++)
            if (mask[i])
                *ladder_layers = layers[i];
    }
    if (!k)
        memset(mask, 1, n);
    free(layers);
    free(hidden);
    return k ? k : n;
}

/* 1 when row i of the ccr query is a shown model (mask) on hardware hw. */
static int ccr_shown(const rp *r, const unsigned char *mask, size_t i, const char *hw)
{
    const rtab *t = &r->q[P_CCR];
    long m = model_index(r, rtab_str(t, i, "model"));
    return m >= 0 && mask[m] && rtab_is(t, i, "hardware", hw);
}

/* The ratio at the fixed TP: analytic, the same on every hardware, so the rows
 * of the reference hardware's first generation. Appends to cl; *block on. */
static void ccr_fixed(const rp *r, const unsigned char *mask, FILE *dat, ccs_buf *cl, int *block)
{
    const rtab *t = &r->q[P_CCR];
    const char *hw = rp_hw_name(r, r->ref);
    int npts = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        double x = rtab_num(t, i, "hidden"), y = rtab_num(t, i, "fixed_ccr");
        if (!ccr_shown(r, mask, i, hw) || (int)rtab_num(t, i, "generation") != r->gen_first ||
            !isfinite(y) || !(y > 0))
            continue;
        fprintf(dat, "%.9g %.9g\n", x, y);
        npts++;
    }
    if (npts) {
        fprintf(dat, "\n\n");
        ccs_buf_printf(cl,
                       "'ccr.dat' index %d using 1:2 with linespoints lw 3 dt 2 pt 5 lc rgb "
                       "'black' title 'fixed tp = %d'",
                       (*block)++, r->fixed_tp);
    }
}

/* The ratio at the memory-forced TP of the TP+DP plans, one line per generation. */
static void ccr_forced(const rp *r, const unsigned char *mask, FILE *dat, ccs_buf *cl, int *block)
{
    const rtab *t = &r->q[P_CCR];
    const char *hw = rp_hw_name(r, r->ref);
    for (size_t gi = 0; gi < r->gens.nrows; gi++) {
        int gen = rp_gen_at(r, gi), npts = 0;
        for (size_t i = 0; i < t->nrows; i++) {
            double x = rtab_num(t, i, "hidden"), y = rtab_num(t, i, "forced_ccr");
            if (!ccr_shown(r, mask, i, hw) || (int)rtab_num(t, i, "generation") != gen ||
                !isfinite(y) || !(y > 0))
                continue;
            fprintf(dat, "%.9g %.9g %d\n", x, y, (int)rtab_num(t, i, "forced_tp"));
            npts++;
        }
        if (!npts)
            continue;
        fprintf(dat, "\n\n");
        ccs_buf_printf(cl,
                       ", '' index %d using 1:2 with linespoints lw 2 pt 7 lc rgb '%s' "
                       "title 'memory-forced tp (TP+DP), gen %d'",
                       *block, gen_color[gi % 8], gen);
        (*block)++;
    }
}

/* One "tp N" label per distinct point: the ratio depends on h and tp only,
 * so generations with the same forced tp share the point (and a label per
 * generation would print on top of each other). */
static void ccr_labels(const rp *r, const unsigned char *mask, FILE *dat, ccs_buf *cl, int *block)
{
    const rtab *t = &r->q[P_CCR];
    const char *hw = rp_hw_name(r, r->ref);
    int nlab = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        double x = rtab_num(t, i, "hidden"), y = rtab_num(t, i, "forced_ccr");
        int tp = (int)rtab_num(t, i, "forced_tp"), dup = 0;
        if (!ccr_shown(r, mask, i, hw) || !isfinite(y) || !(y > 0))
            continue;
        for (size_t j = 0; j < i && !dup; j++)
            dup = ccr_shown(r, mask, j, hw) && rtab_num(t, j, "hidden") == x &&
                  (int)rtab_num(t, j, "forced_tp") == tp &&
                  isfinite(rtab_num(t, j, "forced_ccr")) && rtab_num(t, j, "forced_ccr") > 0;
        if (dup)
            continue;
        fprintf(dat, "%.9g %.9g %d\n", x, y, tp);
        nlab++;
    }
    if (nlab) {
        fprintf(dat, "\n\n");
        ccs_buf_printf(cl,
                       ", '' index %d using 1:2:(sprintf('tp %%d', $3)) with labels left "
                       "offset 0.8,0.6 font ',8' tc rgb '#333333' notitle",
                       (*block)++);
    }
}

/* Plot 3: analytic FLOP per TP byte vs hidden size, fixed TP and memory-forced
 * TP (TP+DP plans) per generation on the reference hardware. */
static int plot_ccr(rp *r, int p)
{
    const char *hw = rp_hw_name(r, r->ref);
    size_t nm = r->models.nrows;
    unsigned char *mask = malloc(nm ? nm : 1);
    if (!mask)
        return rp_fail(r, CCS_ENOMEM, "out of memory");
    int ladder = 0;
    ccr_models(r, mask, &ladder);
    FILE *dat, *g;
    int rc = fig_open(r, p, &dat, &g);
    if (rc) {
        free(mask);
        return rc;
    }
    char title[256];
    if (ladder)
        snprintf(title, sizeof title, "%s: %d-layer hidden-size ladder, %s", rp_figures[p].title,
                 ladder, hw);
    else
        snprintf(title, sizeof title, "%s: all models of the run, %s", rp_figures[p].title, hw);
    rp_gp_head(g, rp_figures[p].file, 1100, 700, title, 1, 1);
    ccs_buf cl = CCS_BUF_INIT;
    int block = 0;
    ccr_fixed(r, mask, dat, &cl, &block);
    ccr_forced(r, mask, dat, &cl, &block);
    ccr_labels(r, mask, dat, &cl, &block);
    fprintf(g, "set xlabel 'hidden size h'\nset ylabel 'FLOP per TP byte (one layer, "
               "forward, per device)'\n");
    if (!cl.len) {
        rp_gp_empty(g, "no row with tensor parallelism (tp > 1)", "");
    } else {
        /* without the fixed-TP line the clauses start with ", " */
        const char *s = cl.s[0] == ',' ? cl.s + 2 : cl.s;
        fprintf(g,
                "set logscale x 2\nset logscale y 10\nset format x '%%g'\nset format y "
                "'%%g'\nset key top left\n"
                "set offsets graph 0.02, graph 0.08, 0, 0  # room for the last labels\n"
                "plot %s\n",
                s);
    }
    fprintf(g, "unset multiplot\n");
    free(mask);
    int oom = cl.oom;
    ccs_buf_free(&cl);
    return fig_finish(r, p, dat, g, oom);
}

/* ---- mitigations -------------------------------------------------------------------- */

enum { MIT_MAX = 16 }; /* mitigation labels shown, at most */

/* The mitigation plot's state across its two panel rows. */
typedef struct mit_fig {
    const char *hw;              /* the reference hardware */
    const char *labels[MIT_MAX]; /* mitigation labels at r->mit_gen */
    size_t nl;
    long kc, kb;          /* comm_compress and net_bw_factor in labels, or -1 */
    int same[2], both[2]; /* per row: models with both, of which equal */
} mit_fig;

/* Distinct mitigation labels of the reference hardware at generation gen. */
static size_t mit_labels(const rp *r, int gen, const char **out, size_t max)
{
    const rtab *t = &r->q[P_MIT];
    size_t n = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        if (!rtab_is(t, i, "hardware", rp_hw_name(r, r->ref)) ||
            (int)rtab_num(t, i, "generation") != gen)
            continue;
        const char *m = rtab_str(t, i, "mitigation");
        size_t k;
        for (k = 0; k < n && strcmp(out[k], m); k++)
            ;
        if (k == n && n < max)
            out[n++] = m;
    }
    return n;
}

/* The data block of panel row `row`: one line per model, its time saved by
 * each label (? for none). Updates m->same/both; returns 1 when any model has
 * a fitting plan, with *ymax the largest saving. */
static int mit_row_data(const rp *r, mit_fig *m, int row, FILE *dat, double *ymax)
{
    const rtab *t = &r->q[P_MIT];
    int any = 0;
    for (size_t mi = 0; mi < r->models.nrows; mi++) {
        const char *name = rtab_str(&r->models, mi, "name");
        double v[MIT_MAX];
        int have = 0;
        for (size_t k = 0; k < m->nl; k++) {
            v[k] = NAN;
            for (size_t i = 0; i < t->nrows; i++)
                if (rtab_is(t, i, "plan", rp_lens_key[row]) && rtab_is(t, i, "hardware", m->hw) &&
                    (int)rtab_num(t, i, "generation") == r->mit_gen &&
                    rtab_is(t, i, "model", name) && rtab_is(t, i, "mitigation", m->labels[k])) {
                    v[k] = rtab_num(t, i, "time_saved_pct");
                    if (v[k] > *ymax)
                        *ymax = v[k];
                    have = 1;
                    break;
                }
        }
        /* a model without a fitting plan keeps its place, marked '*' */
        fprintf(dat, "\"%s%s\"", name, have ? "" : "*");
        for (size_t k = 0; k < m->nl; k++)
            isfinite(v[k]) ? fprintf(dat, " %.6g", v[k]) : fprintf(dat, " ?");
        fprintf(dat, "\n");
        any |= have;
        if (m->kc >= 0 && m->kb >= 0 && isfinite(v[m->kc]) && isfinite(v[m->kb])) {
            m->both[row]++;
            m->same[row] += fabs(v[m->kc] - v[m->kb]) <= 0.05;
        }
    }
    if (!any)
        fprintf(dat, "\"none\"%s\n", m->nl ? " ?" : "");
    fprintf(dat, "\n\n");
    return any;
}

/* Mitigation label m ("tp_overlap comm_compress=0.5") in words into buf. */
static void mit_words(const char *m, char *buf, size_t n)
{
    static const struct {
        const char *key, *fmt;
    } w[] = {{"tp_overlap", "TP overlapped with GEMMs"},
             {"innet_reduce", "in-network reduction"},
             {"comm_compress=", "collectives x%s bytes"},
             {"net_bw_factor=", "links x%s bandwidth"}};
    size_t k = 0;
    buf[0] = 0;
    while (*m && k + 1 < n) {
        size_t len = strcspn(m, " ");
        char tok[64];
        snprintf(tok, sizeof tok, "%.*s", (int)len, m);
        const char *out = tok;
        char tmp[96];
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
            size_t kl = strlen(w[i].key);
            if (!strncmp(tok, w[i].key, kl) && (w[i].key[kl - 1] == '=' || !tok[kl])) {
                snprintf(tmp, sizeof tmp, w[i].fmt, tok + kl);
                out = tmp;
                break;
            }
        }
        snprintf(buf + k, n - k, "%s%s", k ? " + " : "", out);
        k = strlen(buf);
        m += len;
        while (*m == ' ')
            m++;
    }
}

/* The script of panel row `row` (data block `row` of mitigations.dat). */
static void mit_row_script(const rp *r, const mit_fig *m, int row, int any, double ymax, FILE *g)
{
    char title[256], q[300];
    snprintf(title, sizeof title, "%s gen %d: %s", m->hw, r->mit_gen, rp_lens_title[row]);
    report_gp_quote(q, sizeof q, title);
    fprintf(g, "set title %s\n", q);
    if (!any || !m->nl) {
        rp_gp_empty(g, "no fitting plan with mitigation rows",
                    "set xtics rotate by 45 right font ',8'\n");
        return;
    }
    fprintf(g, "unset label 98\nunset label 97\n");
    if (m->both[row]) {
        char note[300], nq[340];
        char wc[96], wb[96];
        mit_words(m->labels[m->kc], wc, sizeof wc);
        mit_words(m->labels[m->kb], wb, sizeof wb);
        /* two short lines inside the panel: one long line ran past its edge */
        snprintf(note, sizeof note, "%s and %s: equal (within 0.05 points) for %d of %d bars", wc,
                 wb, m->same[row], m->both[row]);
        report_gp_quote(nq, sizeof nq, note);
        fprintf(g, "set label 98 %s at graph 0.01, graph 0.86 left font ',8' tc rgb '#333333'\n",
                nq);
        fprintf(g, "set label 97 'both halve the bandwidth term of every TP/DP collective' at "
                   "graph 0.01, graph 0.81 left font ',8' tc rgb '#333333'\n");
    }
    fprintf(g, "set xrange [-0.7:%.1f]\nset yrange [0:%.3g]\nplot ", (double)r->models.nrows - 0.3,
            ymax > 0 ? ymax * 1.3 : 1.0);
    for (size_t k = 0; k < m->nl; k++) {
        char lq[160], wk[128];
        mit_words(m->labels[k], wk, sizeof wk);
        report_gp_quote(lq, sizeof lq, wk);
        fprintf(g, "%s'%s' index %d using %d%s title %s lc rgb '%s'", k ? ", " : "",
                k ? "" : "mitigations.dat", row, (int)k + 2, k ? "" : ":xtic(1)", lq,
                gen_color[k % 8]);
    }
    fprintf(g, "\n");
}

/* Plot 5: iteration time saved by each mitigation, same plan, at the last
 * generation with mitigation rows, on the reference hardware. Sets
 * r->mit_gen (-1 and a note instead of the plot when there is none). */
static int plot_mitigations(rp *r, int p)
{
    const rtab *t = &r->q[p];
    mit_fig m = {.hw = rp_hw_name(r, r->ref), .kc = -1, .kb = -1};
    r->mit_gen = -1;
    for (size_t i = 0; i < t->nrows; i++)
        if (rtab_is(t, i, "hardware", m.hw) && (int)rtab_num(t, i, "generation") > r->mit_gen)
            r->mit_gen = (int)rtab_num(t, i, "generation");
    if (r->mit_gen < 0) {
        snprintf(r->note[p], sizeof r->note[p],
                 "No plot: run %lld has no mitigation what-ifs on %s (plan axes tp_overlap, "
                 "comm_compress, innet_reduce, net_bw_factor; see sweeps/paper.yaml).",
                 (long long)r->run, m.hw);
        return CCS_OK;
    }
    m.nl = mit_labels(r, r->mit_gen, m.labels, MIT_MAX);
    FILE *dat, *g;
    int rc = fig_open(r, p, &dat, &g);
    if (rc)
        return rc;
    int w = (int)(r->models.nrows * (10 * m.nl + 16) + 300);
    rp_gp_head(g, rp_figures[p].file, w < 1000 ? 1000 : w, 1000, rp_figures[p].title, 2, 1);
    fprintf(g, "set style data histograms\nset style histogram clustered gap 1\n"
               "set style fill solid 0.85 border lc rgb '#444444'\n"
               "set xtics rotate by 45 right font ',8'\nset key top left horizontal\n"
               "set ylabel 'iteration time saved (%%), same plan'\n"
               "set xlabel '* no fitting plan' font ',8'\n");
    /* Compressing collectives 2x and doubling link bandwidth are the same
     * what-if for every collective they both touch (the alpha-beta model's
     * bandwidth term halves either way); they part only where one applies and
     * the other does not (pipeline p2p: links yes, compression no). Say so
     * rather than leave two identical bars unexplained. */
    for (size_t k = 0; k < m.nl; k++) {
        if (!strncmp(m.labels[k], "comm_compress", 13))
            m.kc = (long)k;
        if (!strncmp(m.labels[k], "net_bw_factor", 13))
            m.kb = (long)k;
    }
    for (int row = 0; row < 2; row++) {
        double ymax = 0;
        int any = mit_row_data(r, &m, row, dat, &ymax);
        mit_row_script(r, &m, row, any, ymax, g);
    }
    fprintf(g, "unset multiplot\n");
    if (m.kc >= 0 && m.kb >= 0 && (m.both[0] || m.both[1]))
        snprintf(r->note[p], sizeof r->note[p],
                 "`%s` and `%s` save the same time for %d of %d best plans and %d of %d TP+DP "
                 "plans: in the alpha-beta model, halving the bytes of a collective and doubling "
                 "the bandwidth of its links both halve its bandwidth term. They differ only "
                 "where one applies alone: faster links also speed pipeline p2p transfers.",
                 m.labels[m.kc], m.labels[m.kb], m.same[0], m.both[0], m.same[1], m.both[1]);
    return fig_finish(r, p, dat, g, 0);
}

/* ---- the figure table --------------------------------------------------------------- */

static const lines_fig comm_lines = {
    .xcol = "params",
    .xscale = 1e-9,
    .xlabel = "parameters (billions)",
    .ylabel = "exposed communication (% of iteration)",
    .ymin = 0,
    .ymax = NAN,
    .rows = {{.plan = "best", .ycol = "comm_pct", .title = "best plan"},
             {.plan = "tp+dp",
              .ycol = "comm_pct",
              .title = "TP+DP with memory-forced TP (pp = 1)"}},
};

static const lines_fig dp_lines = {
    .xcol = "params",
    .xscale = 1e-9,
    .xlabel = "parameters (billions)",
    .ylabel = "DP communication hidden (%)",
    .ymin = 0,
    .ymax = 105,
    .rows = {{.plan = "best", .ycol = "dp_hidden_pct", .title = "best plan"},
             {.plan = "tp+dp",
              .ycol = "dp_hidden_pct",
              .title = "TP+DP with memory-forced TP (pp = 1)"}},
    /* dp_hidden leaves out plans without DP traffic: comm_share says which fit */
    .fit_plot = P_COMM,
    .fit_col = "comm_pct",
    .key = "left center", /* the empty middle left: lines start at 100% */
};

static const lines_fig tp_lines = {
    .xcol = "params",
    .xscale = 1e-9,
    .xlabel = "parameters (billions)",
    .ylabel = "smallest tp that fits",
    .ylog2 = 1,
    .ymin = NAN,
    .ymax = NAN,
    .rows = {{.plan = NULL, .ycol = "tp_any_pp", .title = "with pipeline parallelism"},
             {.plan = NULL, .ycol = "tp_no_pp", .title = "without pipeline (pp = 1)"}},
};

static const lines_fig fixed_lines = {
    .xcol = "params",
    .xscale = 1e-9,
    .xlabel = "parameters (billions)",
    .ylabel = "exposed communication (% of iteration)",
    .ymin = 0,
    .ymax = NAN,
    .rows = {{.plan = "best", .ycol = "comm_pct", .title = "first generation's best plan, kept"},
             {.plan = "tp+dp", .ycol = "comm_pct", .title = "first generation's TP+DP plan, kept"}},
};

const rp_figure rp_figures[P_N] = {
    [P_COMM] = {.file = "comm_share.png",
                .query = "comm_share",
                .title = "Communication share of the iteration time vs model size",
                .draw = plot_lines,
                .lines = &comm_lines},
    [P_BREAKDOWN] = {.file = "breakdown.png",
                     .query = "breakdown",
                     .title = "Where the iteration time goes",
                     .draw = plot_breakdown},
    [P_CCR] = {.file = "ccr.png",
               .query = "ccr_hidden",
               .title = "Compute/communication ratio vs hidden size",
               .draw = plot_ccr},
    [P_DP] = {.file = "dp_hidden.png",
              .query = "dp_hidden",
              .title = "Hidden fraction of data-parallel communication",
              .draw = plot_lines,
              .lines = &dp_lines},
    [P_MIT] = {.file = "mitigations.png",
               .query = "mitigations",
               .title = "What each mitigation recovers",
               .draw = plot_mitigations},
    [P_TP] = {.file = "forced_tp.png",
              .query = "forced_tp",
              .title = "Memory-forced tensor-parallel degree",
              .draw = plot_lines,
              .lines = &tp_lines},
    [P_FIXED] = {.file = "fixed_plan.png",
                 .query = "fixed_plan",
                 .title = "Today's plans on future hardware: communication share",
                 .draw = plot_lines,
                 .lines = &fixed_lines},
};

int rp_plot_all(rp *r)
{
    int rc = CCS_OK;
    for (int p = 0; rc == CCS_OK && p < P_N; p++)
        rc = rp_figures[p].draw(r, p);
    return rc;
}
