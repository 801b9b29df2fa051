/* report_serve.c - the serving section of the report: the serving run's
 * queries (serve_best, serve_tpot, serve_comm_tp), its three figures (TPOT vs
 * concurrency, output tokens/s per GPU vs generation, decode communication
 * share vs tp) and its part of report.md: a summary per hardware generation,
 * the findings, the figures and the best plan of every serving job. The plans
 * are chosen in the SQL; this file counts, takes medians and formats. */
#include "report_int.h"

#include "ccsweep/util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ------------------------------------------------------------------------ */

/* The tp of the per-hardware communication finding: 8 when the run has it,
 * else the tp > 1 with the most rows (report_pick_fixed_tp). */
static int pick_tp(const rtab *t)
{
    int tps[32];
    int64_t cnt[32];
    size_t n = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        int tp = (int)rtab_num(t, i, "tp");
        size_t k;
        for (k = 0; k < n && tps[k] != tp; k++)
            ;
        if (k == n && n < 32) {
            tps[n] = tp;
            cnt[n++] = 0;
        }
        if (k < n)
            cnt[k]++;
    }
    return report_pick_fixed_tp(tps, cnt, n, 8);
}

int rp_serve_load(rp *r)
{
    rp_serve *sv = &r->sv;
    rtab d = {0};
    int rc = CCS_OK;
    const struct {
        const char *query, *sql; /* a report query, or SQL with :run */
        rtab *t;
    } loads[] = {
        {"serve_best", NULL, &sv->best},
        {"serve_comm_tp", NULL, &sv->comm},
        {"serve_tpot", NULL, &sv->tpot},
        {NULL,
         "SELECT model AS name, min(idx) AS first FROM serve_results WHERE run_id = :run "
         "GROUP BY model ORDER BY first",
         &sv->models},
        {NULL,
         "SELECT hardware AS name, min(idx) AS first FROM serve_results WHERE run_id = :run "
         "GROUP BY hardware ORDER BY first",
         &sv->hw},
        {NULL,
         "SELECT DISTINCT generation FROM serve_results WHERE run_id = :run ORDER BY generation",
         &sv->gens},
        {NULL,
         "SELECT DISTINCT isl, osl, w.name AS weight_dtype, k.name AS kv_dtype "
         "FROM serve_results r LEFT JOIN serve_dtypes w ON w.dtype = r.wdtype "
         "LEFT JOIN serve_dtypes k ON k.dtype = r.kvdtype WHERE run_id = :run "
         "ORDER BY isl, osl, wdtype, kvdtype",
         &sv->shapes},
        {NULL, "SELECT max(devices) AS dev FROM serve_results WHERE run_id = :run", &d},
    };
    for (size_t i = 0; rc == CCS_OK && i < sizeof loads / sizeof loads[0]; i++)
        rc = loads[i].query ? rp_load_query_run(r, loads[i].query, r->srun, loads[i].t)
                            : rp_load_run(r, loads[i].sql, r->srun, loads[i].t);
    if (rc) {
        rtab_free(&d);
        return rc;
    }
    snprintf(sv->ref[0], sizeof sv->ref[0], "%s", rtab_str(&d, 0, "dev"));
    rtab_free(&d);
    /* names reach plot scripts and the report (see rp_load_layout) */
    const rtab *names[2] = {&sv->models, &sv->hw};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < names[k]->nrows; i++) {
            const char *nm = rtab_str(names[k], i, "name");
            if (ccs_name_ok(nm))
                continue;
            char shown[64];
            report_gp_quote(shown, sizeof shown, nm);
            return rp_fail(r, CCS_EINPUT,
                           "%s: serving run %lld: %s name %s is not a catalog name: the "
                           "database was not written by ccsweep as it is; nothing reported",
                           r->o->db, (long long)r->srun, k ? "hardware" : "model", shown);
        }
    if (sv->gens.nrows) {
        sv->gen_first = (int)rtab_num(&sv->gens, 0, "generation");
        sv->gen_last = (int)rtab_num(&sv->gens, sv->gens.nrows - 1, "generation");
    }
    /* the single-job figures: the most devices, the first request shape */
    if (sv->shapes.nrows) {
        snprintf(sv->ref[1], sizeof sv->ref[1], "%s", rtab_str(&sv->shapes, 0, "isl"));
        snprintf(sv->ref[2], sizeof sv->ref[2], "%s", rtab_str(&sv->shapes, 0, "osl"));
        snprintf(sv->ref_w, sizeof sv->ref_w, "%s", rtab_str(&sv->shapes, 0, "weight_dtype"));
        snprintf(sv->ref_kv, sizeof sv->ref_kv, "%s", rtab_str(&sv->shapes, 0, "kv_dtype"));
    }
    sv->fixed_tp = pick_tp(&sv->comm);
    return CCS_OK;
}

void rp_serve_free(rp *r)
{
    rp_serve *sv = &r->sv;
    rtab *t[] = {&sv->best, &sv->comm, &sv->tpot, &sv->models, &sv->hw, &sv->gens, &sv->shapes};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        rtab_free(t[i]);
}

/* ---- figures: panels of lines ------------------------------------------------------- */

/* A panel's rows: column col holds text val (every one given). */
typedef struct sv_eq {
    const char *col, *val;
} sv_eq;
enum { SV_EQ_MAX = 8, SV_VAL_MAX = 64 };

/* One of a figure's line keys: a line per combination of the keys' values. */
typedef struct sv_key {
    const char *col;
    const char *pre, *post; /* label: pre VALUE post */
    const char *val[SV_VAL_MAX];
    size_t nv;
} sv_key;

typedef struct sv_axes {
    const char *xcol, *ycol, *xlabel, *ylabel;
    int xlog2; /* x: log scale 2, ticks at integer powers of two */
    int xint;  /* x: linear, a tick at every integer */
    int ylog;  /* y: log scale 10; else linear from 0 */
    int ymax;  /* rows of one line sharing an x (adjacent): the largest y */
} sv_axes;

static int sv_match(const rtab *t, size_t i, const sv_eq *eq, int n)
{
    for (int k = 0; k < n; k++)
        if (!rtab_is(t, i, eq[k].col, eq[k].val))
            return 0;
    return 1;
}

static int cmp_num_str(const void *a, const void *b)
{
    double x = atof(*(const char *const *)a), y = atof(*(const char *const *)b);
    return (x > y) - (x < y);
}

/* k's values: the rows of order (column name) in their order, or the distinct
 * values of k->col in t, ascending as numbers. */
static void sv_key_values(sv_key *k, const rtab *t, const rtab *order)
{
    k->nv = 0;
    if (order) {
        for (size_t i = 0; i < order->nrows && k->nv < SV_VAL_MAX; i++)
            k->val[k->nv++] = rtab_str(order, i, "name");
        return;
    }
    for (size_t i = 0; i < t->nrows; i++) {
        const char *v = rtab_str(t, i, k->col);
        size_t j;
        for (j = 0; j < k->nv && strcmp(k->val[j], v); j++)
            ;
        if (j == k->nv && k->nv < SV_VAL_MAX && *v)
            k->val[k->nv++] = v;
    }
    qsort(k->val, k->nv, sizeof k->val[0], cmp_num_str);
}

/* Integer ticks on a log-2 axis from lo to hi: powers of two, every second or
 * fourth one when there would be more than eight. */
static void sv_log2_tics(FILE *g, char axis, double lo, double hi)
{
    int a = (int)floor(log2(lo)), b = (int)ceil(log2(hi));
    if (a < 0)
        a = 0;
    if (b <= a)
        b = a + 1;
    int step = 1;
    while ((b - a) / step > 8)
        step *= 2;
    fprintf(g, "set logscale %c 2\nset %ctics (", axis, axis);
    for (int e = a; e <= b; e += step)
        fprintf(g, "%s%.0f", e > a ? ", " : "", exp2(e));
    fprintf(g, ")\nset %crange [%g:%g]\n", axis, exp2(a) / 1.3, exp2(b) * 1.3);
}

/* One panel, plot_w pixels wide inside its axes: the rows of t matching eq, a
 * line per combination of the keys with a point (the legend names only
 * those, in no more columns than fit: report_key_fit), its data blocks into
 * dat (*block numbers them) and its commands into g. */
static void sv_panel(FILE *dat, FILE *g, const char *stem, int *block, const rtab *t,
                     const sv_eq *eq, int neq, const sv_key *key, int nkey, const sv_axes *ax,
                     const char *title, int plot_w, int *oom)
{
    static const int pt[5] = {7, 5, 9, 11, 13};
    ccs_buf cl = CCS_BUF_INIT;
    int nlines = 0;
    size_t longest = 0;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    size_t n1 = nkey > 1 ? key[1].nv : 1;
    for (size_t a = 0; a < key[0].nv; a++)
        for (size_t b = 0; b < n1; b++) {
            int npts = 0;
            double px = NAN, py = NAN; /* the point not yet written */
            for (size_t i = 0; i <= t->nrows; i++) {
                double x = NAN, y = NAN;
                if (i < t->nrows) {
                    x = rtab_num(t, i, ax->xcol);
                    y = rtab_num(t, i, ax->ycol);
                    if (!sv_match(t, i, eq, neq) || !rtab_is(t, i, key[0].col, key[0].val[a]) ||
                        (nkey > 1 && !rtab_is(t, i, key[1].col, key[1].val[b])) || !isfinite(x) ||
                        !isfinite(y) || (ax->ylog && !(y > 0)))
                        continue;
                    if (ax->ymax && x == px) {
                        py = fmax(py, y);
                        continue;
                    }
                }
                if (isfinite(px)) {
                    if (!npts)
                        fprintf(dat, "# %s %s%s\n", title, key[0].val[a],
                                nkey > 1 ? key[1].val[b] : "");
                    fprintf(dat, "%.9g %.9g\n", px, py);
                    xlo = fmin(xlo, px);
                    xhi = fmax(xhi, px);
                    ylo = fmin(ylo, py);
                    yhi = fmax(yhi, py);
                    npts++;
                }
                px = x;
                py = y;
            }
            if (!npts)
                continue;
            fprintf(dat, "\n\n");
            char label[160] = "", q[200];
            for (int k = 0; k < nkey; k++)
                snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s%s", key[k].pre,
                         k ? key[k].val[b] : key[k].val[a], key[k].post);
            report_gp_quote(q, sizeof q, label);
            nlines++;
            if (strlen(label) > longest)
                longest = strlen(label);
            ccs_buf_printf(&cl,
                           "%s'%s.dat' index %d using 1:2 with linespoints lw 2 dt %d pt %d "
                           "ps 0.7 lc rgb '%s' title %s",
                           cl.len ? ", " : "", stem, (*block)++, (int)(b % 5) + 1, pt[b % 5],
                           rp_color(a), q);
        }
    char tq[300];
    report_gp_quote(tq, sizeof tq, title);
    fprintf(g, "set title %s\nset xlabel '%s'\nset ylabel '%s'\n", tq, ax->xlabel, ax->ylabel);
    if (!cl.len) {
        rp_gp_empty(g, "no fitting plan", "");
    } else {
        if (ax->xlog2) {
            sv_log2_tics(g, 'x', xlo, xhi);
        } else {
            fprintf(g, "unset logscale x\nset xtics (");
            for (double v = ceil(xlo); v <= floor(xhi); v++)
                fprintf(g, "%s%.0f", v > ceil(xlo) ? ", " : "", v);
            fprintf(g, ")\nset xrange [%g:%g]\n", xlo - 0.3, xhi + 0.3);
        }
        if (ax->ylog)
            fprintf(g, "set logscale y 10\nset ytics autofreq\nset yrange [%.4g:%.4g]\n", ylo / 1.3,
                    yhi * 1.3);
        else
            fprintf(g, "unset logscale y\nset ytics autofreq\nset yrange [0:%.4g]\n",
                    yhi > 0 ? yhi * 1.15 : 1.0);
        report_key k;
        report_key_fit(nlines, longest, plot_w, &k);
        fprintf(g,
                "set format x '%%g'\nset format y '%%g'\n"
                "set key top left Left reverse samplen 3 font ',%d' maxrows %d\nplot %s\n"
                "unset logscale\nset xtics autofreq\nset ytics autofreq\n",
                k.font, k.rows, ccs_buf_str(&cl));
    }
    *oom |= cl.oom;
    ccs_buf_free(&cl);
}

/* A figure's grid of panels is bounded: a panel row per request shape (or
 * model) of a run that sweeps 120 of them was a canvas cairo refuses. Past
 * these, the panels show a spread of the facets and the tables the rest. */
enum { SV_MAX_ROWS = 6, SV_MAX_COLS = 6 };

/* The facets of n that get a panel, into idx: all when n <= max, else max of
 * them spread evenly from the first to the last. Returns their number. */
static size_t sv_pick(size_t n, size_t max, size_t *idx)
{
    size_t k = 0;
    for (; k < n && k < max; k++)
        idx[k] = n <= max ? k : (k * (n - 1) + (max - 1) / 2) / (max - 1);
    return k;
}

/* The note of a figure whose panels show m of the n facets of t (chosen:
 * idx), named by what: appended to buf. */
static void sv_note_pick(char *buf, size_t size, const char *what, const rtab *t, const size_t *idx,
                         size_t m)
{
    if (m == t->nrows)
        return;
    size_t len = strlen(buf);
    len += (size_t)snprintf(buf + len, len < size ? size - len : 0,
                            "%sthe panels show %zu of the %zu %s (", len ? "; " : "", m, t->nrows,
                            what);
    if (strcmp(what, "request shapes")) {
        for (size_t k = 0; k < m && len < size; k++)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", k ? ", " : "",
                                    rtab_str(t, idx[k], "name"));
    } else {
        /* the distinct input and output lengths of the shapes drawn */
        const char *col[2] = {"isl", "osl"};
        for (int c = 0; c < 2 && len < size; c++) {
            len += (size_t)snprintf(buf + len, size - len, "%s%s", c ? "; " : "", col[c]);
            for (size_t k = 0; k < m && len < size; k++) {
                const char *v = rtab_str(t, idx[k], col[c]);
                int seen = 0;
                for (size_t j = 0; j < k && !seen; j++)
                    seen = !strcmp(rtab_str(t, idx[j], col[c]), v);
                if (!seen)
                    len += (size_t)snprintf(buf + len, size - len, "%s %s", k ? "," : "", v);
            }
        }
    }
    if (len < size)
        snprintf(buf + len, size - len, ")");
}

static const char *const sv_stem[SV_N] = {"serve_tpot", "serve_tok_gen", "serve_comm_tp"};
static const char *const sv_title[SV_N] = {
    "Serving: time per output token vs concurrency",
    "Serving: output tokens/s per GPU vs hardware generation",
    "Serving: communication share of the decode step vs tensor parallelism"};
static const char *const sv_query[SV_N] = {"serve_tpot", "serve_best", "serve_comm_tp"};

/* Figure f: rows x cols panels of the serving figures. */
static int sv_figure(rp *r, int fig)
{
    rp_serve *sv = &r->sv;
    FILE *dat, *g;
    int rc = rp_fig_open(r, sv_stem[fig], &dat, &g);
    if (rc)
        return rc;
    static const sv_axes axes[SV_N] = {
        {"concurrency", "tpot_ms", "requests in flight per replica", "TPOT (ms)", 1, 0, 1, 0},
        {"generation", "tok_s_gpu", "hardware generation", "output tokens/s per GPU", 0, 1, 0, 1},
        {"tp", "comm_pct", "tensor-parallel degree tp", "communication (% of decode step)", 1, 0, 0,
         0}};
    const rtab *t = fig == SV_TPOT ? &sv->tpot : fig == SV_TOK ? &sv->best : &sv->comm;
    /* panel rows and columns: models x hardware; request shapes x models */
    const rtab *rows = fig == SV_TOK ? &sv->shapes : &sv->models;
    const rtab *cols = fig == SV_TOK ? &sv->models : &sv->hw;
    sv_key key[2] = {{0}};
    int nkey = 1;
    if (fig == SV_TPOT) {
        key[0] = (sv_key){.col = "tp", .pre = "tp ", .post = ""};
        sv_key_values(&key[0], t, NULL);
    } else if (fig == SV_COMM) {
        key[0] = (sv_key){.col = "generation", .pre = "gen ", .post = ""};
        sv_key_values(&key[0], t, NULL);
    } else {
        /* tokens/s per GPU: the best over the run's device counts */
        key[0] = (sv_key){.col = "hardware", .pre = "", .post = ""};
        sv_key_values(&key[0], t, &sv->hw);
    }
    char title[400], gen[16];
    snprintf(gen, sizeof gen, "%d", sv->gen_first);
    if (fig == SV_TOK)
        snprintf(title, sizeof title, "%s (best plan per job)", sv_title[fig]);
    else
        snprintf(title, sizeof title, "%s (%s devices, isl %s, osl %s%s%s)", sv_title[fig],
                 sv->ref[0], sv->ref[1], sv->ref[2], fig == SV_TPOT ? ", generation " : "",
                 fig == SV_TPOT ? gen : "");
    size_t ri[SV_MAX_ROWS], ci[SV_MAX_COLS];
    size_t nr = sv_pick(rows->nrows, SV_MAX_ROWS, ri), nc = sv_pick(cols->nrows, SV_MAX_COLS, ci);
    char *note = sv->note[fig];
    note[0] = '\0';
    sv_note_pick(note, sizeof sv->note[fig], fig == SV_TOK ? "request shapes" : "models", rows, ri,
                 nr);
    sv_note_pick(note, sizeof sv->note[fig], fig == SV_TOK ? "models" : "hardware", cols, ci, nc);
    int width = (int)(430 * nc + 80);
    /* a panel's plot area: its share less the y axis's labels and the margin */
    int plot_w = width / (int)(nc ? nc : 1) - 100;
    rp_gp_head(g, sv_stem[fig], width, (int)(380 * nr + 60), title, (int)nr, (int)nc);
    int block = 0, oom = 0;
    for (size_t a = 0; a < nr; a++)
        for (size_t b = 0; b < nc; b++) {
            size_t i = ri[a], j = ci[b];
            sv_eq eq[SV_EQ_MAX];
            int n = 0;
            char ptitle[200];
            if (fig == SV_TOK) {
                const char *c[4] = {"isl", "osl", "weight_dtype", "kv_dtype"};
                eq[n++] = (sv_eq){"model", rtab_str(cols, j, "name")};
                for (int k = 0; k < 4; k++)
                    eq[n++] = (sv_eq){c[k], rtab_str(rows, i, c[k])};
                snprintf(ptitle, sizeof ptitle, "%s, isl %s, osl %s", eq[0].val, eq[1].val,
                         eq[2].val);
            } else {
                eq[n++] = (sv_eq){"model", rtab_str(rows, i, "name")};
                eq[n++] = (sv_eq){"hardware", rtab_str(cols, j, "name")};
                eq[n++] = (sv_eq){"devices", sv->ref[0]};
                eq[n++] = (sv_eq){"isl", sv->ref[1]};
                eq[n++] = (sv_eq){"osl", sv->ref[2]};
                eq[n++] = (sv_eq){"weight_dtype", sv->ref_w};
                eq[n++] = (sv_eq){"kv_dtype", sv->ref_kv};
                if (fig == SV_TPOT)
                    eq[n++] = (sv_eq){"generation", gen};
                snprintf(ptitle, sizeof ptitle, "%s on %s", eq[0].val, eq[1].val);
            }
            sv_panel(dat, g, sv_stem[fig], &block, t, eq, n, key, nkey, &axes[fig], ptitle, plot_w,
                     &oom);
        }
    fprintf(g, "unset multiplot\n");
    rc = rp_fig_finish(r, sv_stem[fig], dat, g, oom);
    if (rc == CCS_OK)
        sv->made[fig] = 1;
    return rc;
}

int rp_serve_plot(rp *r)
{
    int rc = CCS_OK;
    if (!r->sv.best.nrows || !r->sv.models.nrows || !r->sv.hw.nrows)
        return CCS_OK; /* a serving run without rows: the section says so */
    for (int fig = 0; rc == CCS_OK && fig < SV_N; fig++)
        rc = sv_figure(r, fig);
    return rc;
}

/* ---- report.md ---------------------------------------------------------------------- */

static const char *pct(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.1f%%", v);
    else
        snprintf(buf, n, "-");
    return buf;
}

/* Statistics of column col over the rows of t with hardware hw (NULL: any)
 * and generation gen (INT_MIN: any) that have a value there. */
static void col_stats(const rtab *t, const char *col, const char *hw, int gen, const char *tp,
                      report_stats *st)
{
    double *v = malloc((t->nrows ? t->nrows : 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; v && i < t->nrows; i++)
        if ((!hw || rtab_is(t, i, "hardware", hw)) &&
            (gen == INT_MIN || (int)rtab_num(t, i, "generation") == gen) &&
            (!tp || rtab_is(t, i, "tp", tp)))
            v[n++] = rtab_num(t, i, col);
    report_stats_of(v ? v : (double[]){NAN}, v ? n : 1, st);
    free(v);
}

/* Jobs of the serve_best rows on hw (NULL: any) at gen: all, and those with a plan. */
static void job_counts(const rtab *t, const char *hw, int gen, size_t *all, size_t *fit)
{
    *all = *fit = 0;
    for (size_t i = 0; i < t->nrows; i++)
        if ((!hw || rtab_is(t, i, "hardware", hw)) && (int)rtab_num(t, i, "generation") == gen) {
            (*all)++;
            *fit += isfinite(rtab_num(t, i, "tok_s_gpu"));
        }
}

static void md_summary(const rp *r, FILE *f)
{
    const rp_serve *sv = &r->sv;
    const rtab *t = &sv->best;
    fprintf(f, "| hardware | gen | jobs fitting | tp of the best plan (median) | decode "
               "compute / memory / comm (median) | comm share (min - max) | output tokens/s "
               "per GPU (median) | TPOT ms (median) | TTFT ms (median) |\n"
               "|---|---:|---|---:|---|---|---:|---:|---:|\n");
    for (size_t h = 0; h < sv->hw.nrows; h++) {
        const char *hw = rtab_str(&sv->hw, h, "name");
        for (size_t gi = 0; gi < sv->gens.nrows; gi++) {
            int gen = (int)rtab_num(&sv->gens, gi, "generation");
            size_t all, fit;
            job_counts(t, hw, gen, &all, &fit);
            if (!all)
                continue;
            report_stats tp, c, m, k, tok, tpot, ttft;
            col_stats(t, "tp", hw, gen, NULL, &tp);
            col_stats(t, "compute_pct", hw, gen, NULL, &c);
            col_stats(t, "memory_pct", hw, gen, NULL, &m);
            col_stats(t, "comm_pct", hw, gen, NULL, &k);
            col_stats(t, "tok_s_gpu", hw, gen, NULL, &tok);
            col_stats(t, "tpot_ms", hw, gen, NULL, &tpot);
            col_stats(t, "ttft_ms", hw, gen, NULL, &ttft);
            char a[6][24];
            fprintf(f, "| %s | %d | %zu of %zu |", hw, gen, fit, all);
            if (!fit) {
                fprintf(f, " - | - | - | - | - | - |\n");
                continue;
            }
            fprintf(f, " %g | %s / %s / %s | %s - %s | %.0f | %.2f | %.1f |\n", tp.median,
                    pct(a[0], 24, c.median), pct(a[1], 24, m.median), pct(a[2], 24, k.median),
                    pct(a[3], 24, k.min), pct(a[4], 24, k.max), tok.median, tpot.median,
                    ttft.median);
        }
    }
    fprintf(f, "\n");
}

/* Decode split of the best plans at the first and the last generation. */
static void find_split(const rp *r, FILE *f)
{
    const rp_serve *sv = &r->sv;
    for (int j = 0; j < (sv->gen_first == sv->gen_last ? 1 : 2); j++) {
        int gen = j ? sv->gen_last : sv->gen_first;
        size_t all, fit;
        job_counts(&sv->best, NULL, gen, &all, &fit);
        if (!fit)
            continue;
        report_stats c, m, k;
        char a[7][24];
        col_stats(&sv->best, "compute_pct", NULL, gen, NULL, &c);
        col_stats(&sv->best, "memory_pct", NULL, gen, NULL, &m);
        col_stats(&sv->best, "comm_pct", NULL, gen, NULL, &k);
        fprintf(f,
                "- Decode, generation %d: the best plans' decode step is %s memory-bound "
                "(median; %s - %s), %s compute-bound and %s communication (%s - %s), over the "
                "%zu of %zu jobs that fit (`queries/serve_best.sql`).\n",
                gen, pct(a[0], 24, m.median), pct(a[1], 24, m.min), pct(a[2], 24, m.max),
                pct(a[3], 24, c.median), pct(a[4], 24, k.median), pct(a[5], 24, k.min),
                pct(a[6], 24, k.max), fit, all);
    }
}

/* Per hardware, the first generation against the last: split, tp, throughput. */
static void find_hw(const rp *r, FILE *f)
{
    const rp_serve *sv = &r->sv;
    const rtab *t = &sv->best;
    if (sv->gen_first == sv->gen_last)
        return;
    for (size_t h = 0; h < sv->hw.nrows; h++) {
        const char *hw = rtab_str(&sv->hw, h, "name");
        report_stats m[2], k[2], tp[2], ratio;
        for (int j = 0; j < 2; j++) {
            int gen = j ? sv->gen_last : sv->gen_first;
            col_stats(t, "memory_pct", hw, gen, NULL, &m[j]);
            col_stats(t, "comm_pct", hw, gen, NULL, &k[j]);
            col_stats(t, "tp", hw, gen, NULL, &tp[j]);
        }
        /* the throughput ratio of each job that fits at both generations */
        double *v = malloc((t->nrows ? t->nrows : 1) * sizeof *v);
        size_t n = 0;
        for (size_t i = 0; v && i < t->nrows; i++) {
            if (!rtab_is(t, i, "hardware", hw) ||
                (int)rtab_num(t, i, "generation") != sv->gen_first)
                continue;
            for (size_t j = 0; j < t->nrows; j++)
                if (rtab_is(t, j, "hardware", hw) &&
                    (int)rtab_num(t, j, "generation") == sv->gen_last &&
                    rtab_is(t, j, "model", rtab_str(t, i, "model")) &&
                    rtab_num(t, j, "devices") == rtab_num(t, i, "devices") &&
                    rtab_num(t, j, "isl") == rtab_num(t, i, "isl") &&
                    rtab_num(t, j, "osl") == rtab_num(t, i, "osl") &&
                    rtab_is(t, j, "weight_dtype", rtab_str(t, i, "weight_dtype")) &&
                    rtab_is(t, j, "kv_dtype", rtab_str(t, i, "kv_dtype"))) {
                    double x = rtab_num(t, j, "tok_s_gpu") / rtab_num(t, i, "tok_s_gpu");
                    if (isfinite(x))
                        v[n++] = x;
                }
        }
        report_stats_of(v ? v : (double[]){NAN}, v ? n : 1, &ratio);
        free(v);
        if (!m[0].n || !m[1].n)
            continue;
        char a[4][24];
        fprintf(f,
                "- %s, generation %d -> %d (best plans, medians): decode memory-bound %s -> %s, "
                "communication %s -> %s, tp %g -> %g; output tokens/s per GPU x%.2f over the %zu "
                "jobs that fit at both (`queries/serve_best.sql`).\n",
                hw, sv->gen_first, sv->gen_last, pct(a[0], 24, m[0].median),
                pct(a[1], 24, m[1].median), pct(a[2], 24, k[0].median), pct(a[3], 24, k[1].median),
                tp[0].median, tp[1].median, ratio.median, ratio.n);
    }
}

/* Communication by tp at the first and the last generation, over every job. */
static void find_tp(const rp *r, FILE *f)
{
    const rp_serve *sv = &r->sv;
    sv_key k = {.col = "tp"};
    sv_key_values(&k, &sv->comm, NULL);
    for (int j = 0; j < (sv->gen_first == sv->gen_last ? 1 : 2); j++) {
        int gen = j ? sv->gen_last : sv->gen_first;
        ccs_buf b = CCS_BUF_INIT;
        for (size_t i = 0; i < k.nv; i++) {
            report_stats st;
            char a[24];
            col_stats(&sv->comm, "comm_pct", NULL, gen, k.val[i], &st);
            if (st.n)
                ccs_buf_printf(&b, "%s%s at tp %s (%zu jobs)", b.len ? ", " : "",
                               pct(a, sizeof a, st.median), k.val[i], st.n);
        }
        if (b.len)
            fprintf(f,
                    "- Decode communication by tp, generation %d (each job's best plan at that "
                    "tp, median over the jobs): %s (`queries/serve_comm_tp.sql`).\n",
                    gen, ccs_buf_str(&b));
        ccs_buf_free(&b);
    }
}

/* Communication at one tp, per hardware, the first generation against the last. */
static void find_fixed_tp(const rp *r, FILE *f)
{
    const rp_serve *sv = &r->sv;
    if (!sv->fixed_tp || sv->gen_first == sv->gen_last)
        return;
    char tp[16];
    snprintf(tp, sizeof tp, "%d", sv->fixed_tp);
    ccs_buf b = CCS_BUF_INIT;
    for (size_t h = 0; h < sv->hw.nrows; h++) {
        const char *hw = rtab_str(&sv->hw, h, "name");
        report_stats st[2];
        col_stats(&sv->comm, "comm_pct", hw, sv->gen_first, tp, &st[0]);
        col_stats(&sv->comm, "comm_pct", hw, sv->gen_last, tp, &st[1]);
        char a[2][24];
        if (st[0].n && st[1].n)
            ccs_buf_printf(&b, "%s%s %s -> %s (%zu -> %zu jobs)", b.len ? "; " : "", hw,
                           pct(a[0], 24, st[0].median), pct(a[1], 24, st[1].median), st[0].n,
                           st[1].n);
    }
    if (b.len)
        fprintf(f,
                "- Decode communication at tp %d, generation %d -> %d (each job's best plan at "
                "that tp, median): %s (`queries/serve_comm_tp.sql`).\n",
                sv->fixed_tp, sv->gen_first, sv->gen_last, ccs_buf_str(&b));
    ccs_buf_free(&b);
}

/* The best plan of every serving job. */
static void md_jobs(const rp *r, FILE *f)
{
    const rtab *t = &r->sv.best;
    fprintf(f, "### Best plan per serving job\n\n"
               "Plan: tp x pp, expert parallelism ep, attention data parallelism (adp), dp "
               "replicas on the devices; at the concurrency (requests in flight per replica) "
               "that gives the most output tokens/s per GPU (`queries/serve_best.sql`).\n\n"
               "| model | hardware | gen | devices | isl / osl | weights / KV | plan | "
               "concurrency | TTFT ms | TPOT ms | tokens/s per GPU | compute | memory | comm |\n"
               "|---|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < t->nrows; i++) {
        fprintf(f, "| %s | %s | %.0f | %.0f | %.0f / %.0f | %s / %s |", rtab_str(t, i, "model"),
                rtab_str(t, i, "hardware"), rtab_num(t, i, "generation"), rtab_num(t, i, "devices"),
                rtab_num(t, i, "isl"), rtab_num(t, i, "osl"), rtab_str(t, i, "weight_dtype"),
                rtab_str(t, i, "kv_dtype"));
        if (!isfinite(rtab_num(t, i, "tok_s_gpu"))) {
            fprintf(f, " no fitting plan | - | - | - | - | - | - | - |\n");
            continue;
        }
        char a[3][24];
        fprintf(
            f, " %.0f x %.0f, ep %.0f%s, dp %.0f | %.0f | %.2f | %.3f | %.1f | %s | %s | %s |\n",
            rtab_num(t, i, "tp"), rtab_num(t, i, "pp"), rtab_num(t, i, "ep"),
            rtab_num(t, i, "attn_dp") > 0 ? ", adp" : "", rtab_num(t, i, "dp"),
            rtab_num(t, i, "concurrency"), rtab_num(t, i, "ttft_ms"), rtab_num(t, i, "tpot_ms"),
            rtab_num(t, i, "tok_s_gpu"), pct(a[0], 24, rtab_num(t, i, "compute_pct")),
            pct(a[1], 24, rtab_num(t, i, "memory_pct")), pct(a[2], 24, rtab_num(t, i, "comm_pct")));
    }
    fprintf(f, "\n");
}

void rp_serve_md(const rp *r, FILE *f)
{
    const rp_serve *sv = &r->sv;
    char ref[160], note[SV_N][800];
    for (int k = 0; k < SV_N; k++)
        if (sv->note[k][0])
            snprintf(note[k], sizeof note[k],
                     "A grid of at most %d x %d panels: %s, spread from the first to the last; "
                     "the table of best plans below lists every job.",
                     SV_MAX_ROWS, SV_MAX_COLS, sv->note[k]);
        else
            note[k][0] = '\0';
    fprintf(f, "## Serving: %s (run %lld)\n\n", rtab_str(&r->srunfo, 0, "name"),
            (long long)r->srun);
    if (r->run)
        rp_md_run(r, f, &r->srunfo);
    if (!sv->best.nrows) {
        fprintf(f, "Serving run %lld has no rows: nothing to report.\n\n", (long long)r->srun);
        return;
    }
    fprintf(f, "- A *serving job* is one model x hardware generation x device count x prompt "
               "and output length (isl, osl) x weight and KV-cache format; its plans are the "
               "replica shapes (tp x pp, ep, attention data parallelism; dp replicas on the "
               "devices) at each concurrency of the run.\n"
               "- The *best plan* of a job is the one the view `serve_best` ranks first: the most "
               "output tokens/s per GPU at any concurrency (no latency limit), ties to lower "
               "TPOT, TTFT, then the simpler plan.\n"
               "- *Decode split*: the time of the steady-state engine iteration in compute-bound "
               "operators, memory-bound operators (weights and KV cache streamed from device "
               "memory) and collectives (TP all-reduce, EP all-to-all, PP transfers). No "
               "collective is overlapped, so the communication share is all exposed.\n\n");
    fprintf(f, "### Serving summary\n\n");
    md_summary(r, f);
    fprintf(f, "What the serving run shows (each number from the query named after it):\n\n");
    find_split(r, f);
    find_hw(r, f);
    find_tp(r, f);
    find_fixed_tp(r, f);
    fprintf(f, "\n");
    snprintf(ref, sizeof ref, "%s devices, isl %s, osl %s, weights %s, KV %s", sv->ref[0],
             sv->ref[1], sv->ref[2], sv->ref_w, sv->ref_kv);
    char cap[800];
    snprintf(cap, sizeof cap,
             "One panel per model (rows) and hardware (columns) at generation %d, %s; one line "
             "per tp; x: requests in flight per replica (log scale; the largest point of a line "
             "is the most its KV cache holds); y: TPOT (log scale), each point the plan "
             "(pp, ep, attention DP) with the most tokens/s per GPU at that tp and concurrency.",
             sv->gen_first, ref);
    rp_md_figure(r, f, "### Serving 1.", sv_title[SV_TPOT], sv_stem[SV_TPOT], sv->made[SV_TPOT],
                 note[SV_TPOT], cap, sv_query[SV_TPOT]);
    rp_md_figure(r, f, "### Serving 2.", sv_title[SV_TOK], sv_stem[SV_TOK], sv->made[SV_TOK],
                 note[SV_TOK],
                 "One panel per request shape (rows) and model (columns); one line per hardware; "
                 "x: generation; y: output tokens/s per GPU of the best plan over the run's "
                 "device counts (each job's best plan, the highest of them). A missing point: "
                 "no plan fits on any device count.",
                 sv_query[SV_TOK]);
    snprintf(cap, sizeof cap,
             "One panel per model (rows) and hardware (columns), %s; one line per generation; "
             "x: tp (log scale); y: communication share of the decode step of the plan with "
             "the most tokens/s per GPU at that tp (any pp, ep, attention DP, concurrency).",
             ref);
    rp_md_figure(r, f, "### Serving 3.", sv_title[SV_COMM], sv_stem[SV_COMM], sv->made[SV_COMM],
                 note[SV_COMM], cap, sv_query[SV_COMM]);
    md_jobs(r, f);
}
