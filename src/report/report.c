/* report.c - 'ccsweep report': runs the canned queries (report_sql.c) on one
 * run of a sweep database, plots their answers with gnuplot and writes
 * report.md. The selection of plans lives in the SQL, so a reader can rerun
 * every number with sqlite3; this file only tabulates, plots and formats. */
#include "ccsweep/report/report.h"
#include "ccsweep/report/report_sql.h"
#include "ccsweep/store/store_query.h"
#include "ccsweep/util/buf.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

/* ---- pure helpers ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void report_stats_of(const double *v, size_t n, report_stats *out)
{
    out->n = 0;
    out->min = out->max = out->mean = out->median = NAN;
    double *s = malloc((n ? n : 1) * sizeof *s);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue;
        if (s)
            s[out->n] = v[i];
        if (out->n == 0 || v[i] < out->min)
            out->min = v[i];
        if (out->n == 0 || v[i] > out->max)
            out->max = v[i];
        sum += v[i];
        out->n++;
    }
    if (out->n) {
        out->mean = sum / (double)out->n;
        if (s) {
            qsort(s, out->n, sizeof *s, cmp_double);
            size_t m = out->n / 2;
            out->median = out->n % 2 ? s[m] : 0.5 * (s[m - 1] + s[m]);
        }
    }
    free(s);
}

int report_first_below(const int *gen, const double *v, size_t n, double thr)
{
    int first = -1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue;
        if (v[i] < thr) {
            if (first < 0)
                first = gen[i];
        } else {
            first = -1; /* back above: not yet for good */
        }
    }
    return first;
}

size_t report_pick_ladder(const int *layers, const int *hidden, size_t n, unsigned char *mask)
{
    size_t best_n = 0;
    int best_layers = 0, best_span = 0;
    for (size_t i = 0; i < n; i++) {
        mask[i] = 0;
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= layers[j] == layers[i];
        if (seen)
            continue; /* group already counted from its first member */
        size_t distinct = 0;
        int lo = hidden[i], hi = hidden[i];
        for (size_t j = i; j < n; j++) {
            if (layers[j] != layers[i])
                continue;
            int dup = 0;
            for (size_t k = i; k < j; k++)
                dup |= layers[k] == layers[i] && hidden[k] == hidden[j];
            distinct += !dup;
            lo = hidden[j] < lo ? hidden[j] : lo;
            hi = hidden[j] > hi ? hidden[j] : hi;
        }
        if (distinct < 3)
            continue;
        if (distinct > best_n || (distinct == best_n && hi - lo > best_span)) {
            best_n = distinct;
            best_layers = layers[i];
            best_span = hi - lo;
        }
    }
    size_t members = 0;
    for (size_t i = 0; best_n && i < n; i++) {
        mask[i] = layers[i] == best_layers;
        members += mask[i];
    }
    return members;
}

int report_pick_fixed_tp(const int *tps, const int64_t *count, size_t n, int preferred)
{
    int best = 0;
    int64_t best_c = -1;
    for (size_t i = 0; i < n; i++) {
        if (tps[i] <= 1)
            continue;
        if (tps[i] == preferred)
            return preferred;
        if (count[i] > best_c || (count[i] == best_c && tps[i] < best)) {
            best = tps[i];
            best_c = count[i];
        }
    }
    return best;
}

int report_gp_quote(char *buf, size_t n, const char *s)
{
    size_t k = 0;
    if (n < 3)
        return -1;
    buf[k++] = '\'';
    for (; *s; s++) {
        size_t need = *s == '\'' ? 2 : 1;
        if (k + need + 2 > n) {
            strcpy(buf, "''");
            return -1;
        }
        /* a line break would end the string and the command: what follows
         * would run as gnuplot commands (system(...)); control characters and
         * backquotes (command substitution) become '?' */
        unsigned char c = (unsigned char)*s;
        buf[k++] = c < 0x20 || c == 0x7f || c == '`' ? '?' : *s;
        if (*s == '\'')
            buf[k++] = '\'';
    }
    buf[k++] = '\'';
    buf[k] = 0;
    return 0;
}

/* ---- query results held in memory ----------------------------------------------- */

typedef struct rtab {
    int ncols;
    char **cols;
    size_t nrows;
    size_t num_cap, txt_cap; /* rows allocated in num and txt (ccs_grow) */
    double *num;             /* nrows x ncols, NAN for NULL */
    char **txt;              /* nrows x ncols, NULL for NULL */
    int oom;
} rtab;

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static int tab_row(void *ctx, const storeq_row *row)
{
    rtab *t = ctx;
    if (!t->cols) {
        t->ncols = storeq_ncols(row);
        t->cols = calloc((size_t)t->ncols, sizeof *t->cols);
        if (!t->cols)
            return t->oom = 1;
        for (int c = 0; c < t->ncols; c++)
            if (!(t->cols[c] = dupstr(storeq_colname(row, c))))
                return t->oom = 1;
    }
    /* a row at a time: the element of both arrays is one row of ncols values */
    if (ccs_grow((void **)&t->num, &t->num_cap, t->nrows + 1, (size_t)t->ncols * sizeof *t->num) ||
        ccs_grow((void **)&t->txt, &t->txt_cap, t->nrows + 1, (size_t)t->ncols * sizeof *t->txt))
        return t->oom = 1;
    size_t base = t->nrows * (size_t)t->ncols;
    for (int c = 0; c < t->ncols; c++) {
        const char *s = storeq_text(row, c);
        t->num[base + (size_t)c] = storeq_double(row, c);
        t->txt[base + (size_t)c] = s ? dupstr(s) : NULL;
        if (s && !t->txt[base + (size_t)c])
            return t->oom = 1;
    }
    t->nrows++;
    return 0;
}

static void tab_free(rtab *t)
{
    for (size_t i = 0; t->txt && i < t->nrows * (size_t)t->ncols; i++)
        free(t->txt[i]);
    for (int c = 0; t->cols && c < t->ncols; c++)
        free(t->cols[c]);
    free(t->cols);
    free(t->num);
    free(t->txt);
    memset(t, 0, sizeof *t);
}

static int tab_col(const rtab *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->cols[c], name))
            return c;
    return -1;
}

static double tab_num(const rtab *t, size_t r, const char *col)
{
    int c = tab_col(t, col);
    return c < 0 ? NAN : t->num[r * (size_t)t->ncols + (size_t)c];
}

static const char *tab_str(const rtab *t, size_t r, const char *col)
{
    int c = tab_col(t, col);
    const char *s = c < 0 ? NULL : t->txt[r * (size_t)t->ncols + (size_t)c];
    return s ? s : "";
}

/* 1 when row r's column col holds text s. */
static int tab_is(const rtab *t, size_t r, const char *col, const char *s)
{
    return !strcmp(tab_str(t, r, col), s);
}

/* ---- report context ------------------------------------------------------------- */

enum { P_COMM = 0, P_BREAKDOWN, P_CCR, P_DP, P_MIT, P_TP, P_FIXED, P_N };

static const struct {
    const char *file;  /* PNG in the output directory */
    const char *query; /* report_sql name */
    const char *title;
} plot_info[P_N] = {
    [P_COMM] = {"comm_share.png", "comm_share",
                "Communication share of the iteration time vs model size"},
    [P_BREAKDOWN] = {"breakdown.png", "breakdown", "Where the iteration time goes"},
    [P_CCR] = {"ccr.png", "ccr_hidden", "Compute/communication ratio vs hidden size"},
    [P_DP] = {"dp_hidden.png", "dp_hidden", "Hidden fraction of data-parallel communication"},
    [P_MIT] = {"mitigations.png", "mitigations", "What each mitigation recovers"},
    [P_TP] = {"forced_tp.png", "forced_tp", "Memory-forced tensor-parallel degree"},
    [P_FIXED] = {"fixed_plan.png", "fixed_plan",
                 "Today's plans on future hardware: communication share"},
};

/* Line colours by generation index (Okabe & Ito's colour-blind-safe set). */
static const char *const gen_color[8] = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                         "#cc79a7", "#56b4e9", "#000000", "#999933"};

/* The two plan kinds of the queries, as panel rows. */
static const char *const lens_key[2] = {"best", "tp+dp"};
static const char *const lens_title[2] = {"best plan (highest tokens/s, TP x PP x DP)",
                                          "TP+DP with memory-forced TP (pp = 1)"};

typedef struct rp {
    const report_opts *o;
    FILE *log;
    ccs_err *err;
    storeq_db *db;
    int64_t run;
    storeq_param par[2]; /* :run, :tp */
    rtab runinfo, hwrows, models, hwnames, gens;
    size_t ref; /* index into hwnames of the single-hardware plots */
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
} rp;

static const char *hw_name(const rp *r, size_t i)
{
    return tab_str(&r->hwnames, i, "name");
}

static int gen_at(const rp *r, size_t i)
{
    return (int)tab_num(&r->gens, i, "generation");
}

static int fail(rp *r, int rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(rp *r, int rc, const char *fmt, ...)
{
    char msg[sizeof r->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ccs_err_set(r->err, "%s", msg);
    return rc;
}

/* Run sql with :run (and :tp) into t (emptied first). */
static int load(rp *r, const char *sql, rtab *t)
{
    tab_free(t);
    ccs_err e;
    int rc = storeq_exec(r->db, sql, r->par, 2, tab_row, t, &e);
    if (t->oom)
        return fail(r, CCS_ENOMEM, "%s: out of memory reading query results", r->o->db);
    if (rc)
        return fail(r, CCS_EIO, "%s", e.msg);
    return CCS_OK;
}

static int load_query(rp *r, const char *name, rtab *t)
{
    const report_query *q = report_query_find(name);
    char *sql = q ? report_query_text(q) : NULL;
    if (!sql)
        return fail(r, CCS_ENOMEM, "out of memory");
    int rc = load(r, sql, t);
    free(sql);
    return rc;
}

/* ---- input checks ---------------------------------------------------------------- */

static int resolve_run(rp *r)
{
    rtab t = {0};
    int rc = load(r,
                  "SELECT max(run_id) AS id, count(*) AS n, group_concat(run_id, ', ') AS ids "
                  "FROM (SELECT run_id FROM runs ORDER BY run_id)",
                  &t);
    if (rc)
        return rc;
    double last = tab_num(&t, 0, "id");
    char ids[256];
    snprintf(ids, sizeof ids, "%s", tab_str(&t, 0, "ids"));
    tab_free(&t);
    if (!isfinite(last))
        return fail(r, CCS_EINPUT,
                    "%s: the database has no runs; 'ccsweep run SPEC --db %s' "
                    "adds one",
                    r->o->db, r->o->db);
    r->run = r->o->run_id > 0 ? r->o->run_id : (int64_t)last;
    r->par[0] = (storeq_param){.name = ":run", .type = STOREQ_INT, .i = r->run};
    if ((rc = load(r, "SELECT * FROM runs WHERE run_id = :run", &r->runinfo)))
        return rc;
    if (r->runinfo.nrows == 0)
        return fail(r, CCS_EINPUT, "%s: no run %lld (runs in the database: %s)", r->o->db,
                    (long long)r->run, ids);
    if ((rc = load(r,
                   "SELECT count(*) AS n, coalesce(sum(status = 0), 0) AS ok "
                   "FROM results WHERE run_id = :run",
                   &t)))
        return rc;
    double n = tab_num(&t, 0, "n"), ok = tab_num(&t, 0, "ok");
    tab_free(&t);
    const char *name = tab_str(&r->runinfo, 0, "name");
    if (!(n > 0))
        return fail(r, CCS_EINPUT,
                    "%s: run %lld ('%s', %s) has no result rows: nothing to "
                    "report",
                    r->o->db, (long long)r->run, name, tab_str(&r->runinfo, 0, "status"));
    if (!(ok > 0))
        return fail(r, CCS_EINPUT,
                    "%s: run %lld ('%s') has %.0f rows but no plan that fits "
                    "(status ok): nothing to report",
                    r->o->db, (long long)r->run, name, n);
    return CCS_OK;
}

static int load_layout(rp *r)
{
    int rc;
    if ((rc = load(r,
                   "SELECT name, min(hw_id) AS first FROM hardware WHERE run_id = :run "
                   "GROUP BY name ORDER BY first",
                   &r->hwnames)) ||
        (rc = load(r,
                   "SELECT DISTINCT generation FROM hardware WHERE run_id = :run "
                   "ORDER BY generation",
                   &r->gens)) ||
        (rc = load(r, "SELECT * FROM hardware WHERE run_id = :run ORDER BY hw_id", &r->hwrows)) ||
        (rc = load(r, "SELECT * FROM models WHERE run_id = :run ORDER BY params, model_id",
                   &r->models)))
        return rc;
    if (r->hwnames.nrows == 0 || r->gens.nrows == 0)
        return fail(r, CCS_EINPUT, "%s: run %lld has no hardware rows", r->o->db,
                    (long long)r->run);
    /* Names reach plot scripts and the report: a database written by ccsweep
     * holds only catalog names, so anything else was put there by hand. */
    const struct {
        const rtab *t;
        const char *col, *what;
    } names[] = {{&r->hwrows, "name", "hardware"},
                 {&r->hwrows, "evolution", "evolution"},
                 {&r->models, "name", "model"}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        for (size_t i = 0; i < names[k].t->nrows; i++) {
            const char *nm = tab_str(names[k].t, i, names[k].col);
            if (ccs_name_ok(nm) || (!*nm && !strcmp(names[k].col, "evolution")))
                continue;
            char shown[64];
            report_gp_quote(shown, sizeof shown, nm);
            return fail(r, CCS_EINPUT,
                        "%s: run %lld: %s name %s is not a catalog name (letters, digits, '-', "
                        "'_', '.', at most %d): the database was not written by ccsweep as it "
                        "is; nothing reported",
                        r->o->db, (long long)r->run, names[k].what, shown, CCS_NAME_MAX - 1);
        }
    }
    r->ref = 0;
    if (r->o->hw) {
        size_t i;
        for (i = 0; i < r->hwnames.nrows && strcmp(hw_name(r, i), r->o->hw); i++)
            ;
        if (i == r->hwnames.nrows) {
            ccs_buf b = CCS_BUF_INIT;
            for (size_t j = 0; j < r->hwnames.nrows; j++)
                ccs_buf_printf(&b, "%s%s", j ? ", " : "", hw_name(r, j));
            rc = fail(r, CCS_EINPUT, "--hw: no hardware '%s' in run %lld (it has: %s)", r->o->hw,
                      (long long)r->run, ccs_buf_str(&b));
            ccs_buf_free(&b);
            return rc;
        }
        r->ref = i;
    }
    r->gen_first = gen_at(r, 0);
    r->gen_last = gen_at(r, r->gens.nrows - 1);

    /* fixed TP of the compute/communication plot: 8 when the run has it */
    rtab t = {0};
    if ((rc = load(r,
                   "SELECT tp, count(*) AS n FROM results WHERE run_id = :run "
                   "AND status != 1 AND ccr > 0 GROUP BY tp ORDER BY tp",
                   &t)))
        return rc;
    int *tps = malloc((t.nrows ? t.nrows : 1) * sizeof *tps);
    int64_t *cnt = malloc((t.nrows ? t.nrows : 1) * sizeof *cnt);
    if (!tps || !cnt) {
        free(tps);
        free(cnt);
        tab_free(&t);
        return fail(r, CCS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < t.nrows; i++) {
        tps[i] = (int)tab_num(&t, i, "tp");
        cnt[i] = (int64_t)tab_num(&t, i, "n");
    }
    r->fixed_tp = report_pick_fixed_tp(tps, cnt, t.nrows, 8);
    free(tps);
    free(cnt);
    tab_free(&t);
    r->par[1] =
        (storeq_param){.name = ":tp", .type = STOREQ_INT, .i = r->fixed_tp ? r->fixed_tp : 8};
    return CCS_OK;
}

/* ---- gnuplot --------------------------------------------------------------------- */

static int find_program(const char *name, char *out, size_t n)
{
    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0)
            return -1;
        return ccs_strlcpy(out, name, n);
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if ((int)snprintf(out, n, "%.*s/%s", (int)len, len ? path : ".", name) < (int)n &&
            access(out, X_OK) == 0)
            return 0;
        path += len + (colon ? 1 : 0);
    }
    return -1;
}

static int find_gnuplot(rp *r)
{
    const char *g = r->o->gnuplot;
    if (!g || !*g)
        g = getenv("CCSWEEP_GNUPLOT");
    if (!g || !*g)
        g = "gnuplot";
    if (find_program(g, r->gnuplot, sizeof r->gnuplot))
        return fail(r, CCS_ERUNTIME,
                    "gnuplot not found (looked for '%s'%s); install it with "
                    "'make deps' (Debian package gnuplot-nox) or point CCSWEEP_GNUPLOT at it",
                    g, strchr(g, '/') ? "" : " on PATH");
    return CCS_OK;
}

static int run_gnuplot_fmt(rp *r, const char *name, const char *fmt);

/* Run gnuplot on data/NAME.gp in the data directory once per format of the
 * options; its messages go to data/NAME.log. */
static int run_gnuplot(rp *r, const char *name)
{
    static const char *const ext[] = {"png", "pdf", "svg"};
    unsigned formats = r->o->formats ? r->o->formats : REPORT_PNG;
    int rc = CCS_OK;
    for (int k = 0; rc == CCS_OK && k < 3; k++)
        if (formats & (1u << k))
            rc = run_gnuplot_fmt(r, name, ext[k]);
    return rc;
}

static int run_gnuplot_fmt(rp *r, const char *name, const char *fmt)
{
    char script[128], logf[PATH_MAX + 16], png[PATH_MAX + 16], var[32];
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(logf, sizeof logf, "%s/%s.log", r->data, name);
    snprintf(png, sizeof png, "%s/%s.%s", r->dir, name, fmt);
    snprintf(var, sizeof var, "fmt='%s'", fmt);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return fail(r, CCS_ERUNTIME, "cannot start gnuplot: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        if (chdir(r->data) == 0)
            execl(r->gnuplot, r->gnuplot, "-e", var, script, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return fail(r, CCS_ERUNTIME, "waiting for gnuplot: %s", strerror(errno));
    struct stat sb;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || stat(png, &sb) != 0 || sb.st_size == 0) {
        char first[200] = "";
        FILE *f = fopen(logf, "r");
        if (f) {
            while (fgets(first, sizeof first, f) && first[0] == '\n')
                ;
            fclose(f);
            first[strcspn(first, "\n")] = 0;
        }
        return fail(r, CCS_ERUNTIME, "gnuplot (%s) failed on %s/%s (exit %d): %s", r->gnuplot,
                    r->data, script, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                    first[0] ? first : "no figure written");
    }
    if (r->log)
        fprintf(r->log, "  %s\n", png);
    return CCS_OK;
}

static FILE *open_out(rp *r, const char *dir, const char *name, int *rc)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        *rc = fail(r, CCS_EIO, "%s: cannot write: %s", path, strerror(errno));
    return f;
}

static int close_out(rp *r, FILE *f, const char *dir, const char *name)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return fail(r, CCS_EIO, "%s/%s: write failed", dir, name);
    return CCS_OK;
}

int report_parse_formats(const char *s, unsigned *out, const char **bad)
{
    static const char *const names[] = {"png", "pdf", "svg"};
    *out = 0;
    *bad = s;
    if (!s || !*s)
        return -1;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < 3 && !(strlen(names[k]) == len && !strncmp(p, names[k], len)))
            k++;
        if (k == 3) {
            *bad = p;
            return -1;
        }
        *out |= 1u << k;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

/* The terminal and common settings of every figure. The script draws in the
 * format of the gnuplot variable fmt (png, pdf or svg; run_gnuplot sets it with
 * -e), same layout in each: PDF at 96 px per inch, fonts in points. */
static void gp_head(FILE *g, const char *png, int w, int h, const char *title, int rows, int cols)
{
    char q[512];
    int stem = (int)strcspn(png, ".");
    report_gp_quote(q, sizeof q, title);
    fprintf(g, "# written by ccsweep report; rerun: cd data && gnuplot -e \"fmt='pdf'\" %.*s.gp\n",
            stem, png);
    fprintf(g,
            "if (!exists('fmt')) fmt = 'png'\n"
            "if (fmt eq 'pdf') {\n"
            "    set terminal pdfcairo size %.4g,%.4g noenhanced font 'sans,7.5'\n"
            "} else {\n"
            "    if (fmt eq 'svg') {\n"
            "        set terminal svg size %d,%d dynamic noenhanced font 'sans,10' background "
            "'#ffffff'\n"
            "    } else {\n"
            "        set terminal pngcairo size %d,%d noenhanced font 'sans,10'\n"
            "    }\n"
            "}\n",
            w / 96.0, h / 96.0, w, h, w, h);
    fprintf(g, "set output '../%.*s.'.fmt\n", stem, png);
    fprintf(g, "set datafile missing '?'\n");
    fprintf(g, "set grid lc rgb '#dddddd'\n");
    fprintf(g, "set key top left font ',9' opaque box lc rgb '#bbbbbb'\n");
    fprintf(g, "set multiplot layout %d,%d title %s font ',13'\n", rows, cols, q);
}

/* An empty panel saying why; restore: the settings to put back afterwards. */
static void gp_empty(FILE *g, const char *why, const char *restore)
{
    char q[256];
    report_gp_quote(q, sizeof q, why);
    fprintf(g,
            "set label 99 %s at graph 0.5, graph 0.5 center font ',11'\n"
            "unset key\nunset tics\nset xrange [0:1]\nset yrange [0:1]\nunset logscale\n"
            "plot 2 notitle\nunset label 99\nset key\nset tics\n",
            q);
    fprintf(g, "set xrange [*:*]\nset yrange [*:*]\n%s", restore);
}

/* ---- figures ----------------------------------------------------------------------- */

/* "175B", "1.01T", "334M" */
static void fmt_params(char *buf, size_t n, double p)
{
    if (!isfinite(p))
        snprintf(buf, n, "?");
    else if (p >= 1e12)
        snprintf(buf, n, "%.3gT", p / 1e12);
    else if (p >= 1e9)
        snprintf(buf, n, "%.3gB", p / 1e9);
    else
        snprintf(buf, n, "%.3gM", p / 1e6);
}

typedef struct lines_row {
    const char *plan; /* rows whose 'plan' column is this; NULL: every row */
    const char *ycol;
    const char *title;
} lines_row;

typedef struct lines_fig {
    int plot;
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
    const char *key; /* key position and shape; NULL: top left, one column */
} lines_fig;

/* One panel per (figure row, hardware), one line per generation. */
static int plot_lines(rp *r, const lines_fig *f)
{
    const rtab *t = &r->q[f->plot];
    char stem[64], dat_name[80], gp_name[80];
    snprintf(stem, sizeof stem, "%.*s", (int)strcspn(plot_info[f->plot].file, "."),
             plot_info[f->plot].file);
    snprintf(dat_name, sizeof dat_name, "%s.dat", stem);
    snprintf(gp_name, sizeof gp_name, "%s.gp", stem);
    int rc = CCS_OK;
    FILE *dat = open_out(r, r->data, dat_name, &rc);
    FILE *g = dat ? open_out(r, r->data, gp_name, &rc) : NULL;
    if (!g) {
        if (dat)
            fclose(dat);
        return rc;
    }
    size_t ncol = r->hwnames.nrows;
    gp_head(g, plot_info[f->plot].file, (int)(520 * ncol + 80), 880, plot_info[f->plot].title, 2,
            (int)ncol);
    int block = 0;
    for (int row = 0; row < 2; row++) {
        const lines_row *lr = &f->rows[row];
        for (size_t h = 0; h < ncol; h++) {
            ccs_buf cl = CCS_BUF_INIT;
            for (size_t gi = 0; gi < r->gens.nrows; gi++) {
                int gen = gen_at(r, gi), npts = 0;
                for (size_t i = 0; i < t->nrows; i++) {
                    double x = tab_num(t, i, f->xcol) * f->xscale, y = tab_num(t, i, lr->ycol);
                    if (!tab_is(t, i, "hardware", hw_name(r, h)) ||
                        (int)tab_num(t, i, "generation") != gen ||
                        (lr->plan && !tab_is(t, i, "plan", lr->plan)) || !isfinite(x) ||
                        !isfinite(y))
                        continue;
                    fprintf(dat, "%.9g %.9g\n", x, y);
                    npts++;
                }
                if (!npts)
                    continue;
                fprintf(dat, "\n\n");
                ccs_buf_printf(&cl,
                               "%s'%s' index %d using 1:2 with linespoints lw 2 pt 7 ps 0.7 "
                               "lc rgb '%s' title 'gen %d'",
                               cl.len ? ", " : "", dat_name, block, gen_color[gi % 8], gen);
                block++;
            }
            /* Models with no fitting plan would just be missing from their
             * line: mark them on the x axis in the generation's colour. */
            int nmiss = 0; /* stacked by generation on the y2 axis, [0:1] */
            for (size_t gi = 0; cl.len && gi < r->gens.nrows; gi++) {
                int gen = gen_at(r, gi), npts = 0;
                const rtab *ft = f->fit_col ? &r->q[f->fit_plot] : t;
                const char *fcol = f->fit_col ? f->fit_col : lr->ycol;
                for (size_t m = 0; m < r->models.nrows; m++) {
                    const char *name = tab_str(&r->models, m, "name");
                    int have = 0;
                    for (size_t i = 0; i < ft->nrows && !have; i++)
                        have = tab_is(ft, i, "model", name) &&
                               tab_is(ft, i, "hardware", hw_name(r, h)) &&
                               (int)tab_num(ft, i, "generation") == gen &&
                               (!lr->plan || tab_is(ft, i, "plan", lr->plan)) &&
                               isfinite(tab_num(ft, i, fcol));
                    double x = tab_num(&r->models, m, f->xcol) * f->xscale;
                    if (have || !isfinite(x))
                        continue;
                    fprintf(dat, "%.9g %.4g\n", x, 0.025 + 0.04 * (double)gi);
                    npts++;
                }
                if (!npts)
                    continue;
                fprintf(dat, "\n\n");
                ccs_buf_printf(&cl,
                               ", '%s' index %d using 1:2 axes x1y2 with points pt 2 ps 1.3 lw 2 "
                               "lc rgb '%s' notitle",
                               dat_name, block++, gen_color[gi % 8]);
                nmiss += npts;
            }
            if (nmiss)
                ccs_buf_printf(&cl, ", NaN with points pt 2 ps 1.3 lw 2 lc rgb '#555555' "
                                    "title 'no fitting plan'");
            char title[256], q[300];
            snprintf(title, sizeof title, "%s: %s", hw_name(r, h), lr->title);
            report_gp_quote(q, sizeof q, title);
            fprintf(g, "set title %s\nset xlabel '%s'\nset ylabel '%s'\n", q, f->xlabel, f->ylabel);
            if (!cl.len) {
                gp_empty(g, "no fitting plan", "");
            } else {
                fprintf(g, "set logscale x 10\nset format x '%%g'\n");
                if (f->ylog2)
                    fprintf(g, "set logscale y 2\nset format y '%%g'\n");
                else
                    fprintf(g, "unset logscale y\n");
                char lo[32] = "*", hi[32] = "*";
                if (isfinite(f->ymin))
                    snprintf(lo, sizeof lo, "%g", f->ymin);
                if (isfinite(f->ymax))
                    snprintf(hi, sizeof hi, "%g", f->ymax);
                fprintf(g, "set yrange [%s:%s]\n", lo, hi);
                fprintf(g,
                        "set xrange [*:*]\nset y2range [0:1]\nunset y2tics\n"
                        "set key %s Left reverse samplen 2 font ',8'\n",
                        f->key ? f->key : "top left maxrows 6");
                fprintf(g, "plot %s\n", ccs_buf_str(&cl));
                fprintf(g, "unset logscale\nset key\n");
            }
            if (cl.oom)
                rc = fail(r, CCS_ENOMEM, "out of memory");
            ccs_buf_free(&cl);
        }
    }
    fprintf(g, "unset multiplot\n");
    int rc1 = close_out(r, dat, r->data, dat_name);
    int rc2 = close_out(r, g, r->data, gp_name);
    if (rc || rc1 || rc2)
        return rc ? rc : rc1 ? rc1 : rc2;
    if ((rc = run_gnuplot(r, stem)) == CCS_OK)
        r->made[f->plot] = 1;
    return rc;
}

/* Index of model name in r->models, or -1. */
static long model_index(const rp *r, const char *name)
{
    for (size_t i = 0; i < r->models.nrows; i++)
        if (tab_is(&r->models, i, "name", name))
            return (long)i;
    return -1;
}

/* Stacked shares per model (plot 2): rows = plan kind, columns = first and last
 * generation, on the reference hardware. */
static int plot_breakdown(rp *r)
{
    const rtab *t = &r->q[P_BREAKDOWN];
    const char *hw = hw_name(r, r->ref);
    int rc = CCS_OK;
    FILE *dat = open_out(r, r->data, "breakdown.dat", &rc);
    FILE *g = dat ? open_out(r, r->data, "breakdown.gp", &rc) : NULL;
    if (!g) {
        if (dat)
            fclose(dat);
        return rc;
    }
    int gens[2] = {r->gen_first, r->gen_last};
    int ncol = r->gen_first == r->gen_last ? 1 : 2;
    size_t nm = r->models.nrows;
    int w = (int)(nm * 34 + 260);
    w = (w < 700 ? 700 : w) * ncol;
    gp_head(g, plot_info[P_BREAKDOWN].file, w, 1000, plot_info[P_BREAKDOWN].title, 2, ncol);
    static const char tics[] = "set xtics rotate by 45 right font ',8'\nset ytics 0,20,100\n"
                               "set yrange [0:130]\n";
    fprintf(g,
            "set style data histograms\nset style histogram rowstacked\n"
            "set style fill solid 0.85 border lc rgb '#444444'\nset boxwidth 0.8\n"
            "%sset key top center horizontal maxrows 1 font ',9'\n"
            "set ylabel 'share of iteration time (%%)'\n"
            "set xlabel '* no fitting plan' font ',8'\n",
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
    for (int row = 0; row < 2; row++) {
        for (int c = 0; c < ncol; c++) {
            int any = 0;
            for (size_t m = 0; m < nm; m++) {
                const char *name = tab_str(&r->models, m, "name");
                size_t i;
                for (i = 0; i < t->nrows; i++)
                    if (tab_is(t, i, "plan", lens_key[row]) && tab_is(t, i, "hardware", hw) &&
                        (int)tab_num(t, i, "generation") == gens[c] && tab_is(t, i, "model", name))
                        break;
                fprintf(dat, "\"%s%s\"", name, i < t->nrows ? "" : "*");
                for (int k = 0; k < NPART; k++)
                    fprintf(dat, " %.6g", i < t->nrows ? tab_num(t, i, parts[k]) : 0.0);
                fprintf(dat, "\n");
                any |= i < t->nrows;
            }
            fprintf(dat, "\n\n");
            char title[256], q[300];
            snprintf(title, sizeof title, "%s, gen %d: %s", hw, gens[c], lens_title[row]);
            report_gp_quote(q, sizeof q, title);
            fprintf(g, "set title %s\n", q);
            if (!any) {
                gp_empty(g, "no fitting plan", tics);
            } else {
                fprintf(g, "plot ");
                for (int k = 0; k < NPART; k++)
                    fprintf(g, "%s'%s' index %d using %d%s title '%s' lc rgb '%s'", k ? ", " : "",
                            k ? "" : "breakdown.dat", block, k + 2, k ? "" : ":xtic(1)", names[k],
                            colors[k]);
                fprintf(g, "\n");
            }
            block++;
        }
    }
    fprintf(g, "unset multiplot\n");
    int rc1 = close_out(r, dat, r->data, "breakdown.dat");
    int rc2 = close_out(r, g, r->data, "breakdown.gp");
    if (rc1 || rc2)
        return rc1 ? rc1 : rc2;
    if ((rc = run_gnuplot(r, "breakdown")) == CCS_OK)
        r->made[P_BREAKDOWN] = 1;
    return rc;
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
            layers[i] = (int)tab_num(&r->models, i, "layers");
            hidden[i] = (int)tab_num(&r->models, i, "hidden");
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

/* Plot 3: analytic FLOP per TP byte vs hidden size, fixed TP and memory-forced
 * TP (TP+DP plans) per generation on the reference hardware. */
static int plot_ccr(rp *r)
{
    const rtab *t = &r->q[P_CCR];
    const char *hw = hw_name(r, r->ref);
    size_t nm = r->models.nrows;
    unsigned char *mask = malloc(nm ? nm : 1);
    if (!mask)
        return fail(r, CCS_ENOMEM, "out of memory");
    int ladder = 0;
    ccr_models(r, mask, &ladder);
    int rc = CCS_OK;
    FILE *dat = open_out(r, r->data, "ccr.dat", &rc);
    FILE *g = dat ? open_out(r, r->data, "ccr.gp", &rc) : NULL;
    if (!g) {
        if (dat)
            fclose(dat);
        free(mask);
        return rc;
    }
    char title[256];
    if (ladder)
        snprintf(title, sizeof title, "%s: %d-layer hidden-size ladder, %s", plot_info[P_CCR].title,
                 ladder, hw);
    else
        snprintf(title, sizeof title, "%s: all models of the run, %s", plot_info[P_CCR].title, hw);
    gp_head(g, plot_info[P_CCR].file, 1100, 700, title, 1, 1);
    ccs_buf cl = CCS_BUF_INIT;
    int block = 0;
    /* fixed TP: analytic, the same on every hardware; rows of the first hardware row */
    int npts = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        long m = model_index(r, tab_str(t, i, "model"));
        double x = tab_num(t, i, "hidden"), y = tab_num(t, i, "fixed_ccr");
        if (m < 0 || !mask[m] || !tab_is(t, i, "hardware", hw) ||
            (int)tab_num(t, i, "generation") != r->gen_first || !isfinite(y) || !(y > 0))
            continue;
        fprintf(dat, "%.9g %.9g\n", x, y);
        npts++;
    }
    if (npts) {
        fprintf(dat, "\n\n");
        ccs_buf_printf(&cl,
                       "'ccr.dat' index %d using 1:2 with linespoints lw 3 dt 2 pt 5 lc rgb "
                       "'black' title 'fixed tp = %d'",
                       block++, r->fixed_tp);
    }
    for (size_t gi = 0; gi < r->gens.nrows; gi++) {
        int gen = gen_at(r, gi);
        npts = 0;
        for (size_t i = 0; i < t->nrows; i++) {
            long m = model_index(r, tab_str(t, i, "model"));
            double x = tab_num(t, i, "hidden"), y = tab_num(t, i, "forced_ccr");
            if (m < 0 || !mask[m] || !tab_is(t, i, "hardware", hw) ||
                (int)tab_num(t, i, "generation") != gen || !isfinite(y) || !(y > 0))
                continue;
            fprintf(dat, "%.9g %.9g %d\n", x, y, (int)tab_num(t, i, "forced_tp"));
            npts++;
        }
        if (!npts)
            continue;
        fprintf(dat, "\n\n");
        ccs_buf_printf(&cl,
                       ", '' index %d using 1:2 with linespoints lw 2 pt 7 lc rgb '%s' "
                       "title 'memory-forced tp (TP+DP), gen %d'",
                       block, gen_color[gi % 8], gen);
        block++;
    }
    /* One "tp N" label per distinct point: the ratio depends on h and tp only,
     * so generations with the same forced tp share the point (and a label per
     * generation would print on top of each other). */
    int nlab = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        long m = model_index(r, tab_str(t, i, "model"));
        double x = tab_num(t, i, "hidden"), y = tab_num(t, i, "forced_ccr");
        int tp = (int)tab_num(t, i, "forced_tp"), dup = 0;
        if (m < 0 || !mask[m] || !tab_is(t, i, "hardware", hw) || !isfinite(y) || !(y > 0))
            continue;
        for (size_t j = 0; j < i && !dup; j++) {
            long mj = model_index(r, tab_str(t, j, "model"));
            dup = mj >= 0 && mask[mj] && tab_is(t, j, "hardware", hw) &&
                  tab_num(t, j, "hidden") == x && (int)tab_num(t, j, "forced_tp") == tp &&
                  isfinite(tab_num(t, j, "forced_ccr")) && tab_num(t, j, "forced_ccr") > 0;
        }
        if (dup)
            continue;
        fprintf(dat, "%.9g %.9g %d\n", x, y, tp);
        nlab++;
    }
    if (nlab) {
        fprintf(dat, "\n\n");
        ccs_buf_printf(&cl,
                       ", '' index %d using 1:2:(sprintf('tp %%d', $3)) with labels left "
                       "offset 0.8,0.6 font ',8' tc rgb '#333333' notitle",
                       block++);
    }
    fprintf(g, "set xlabel 'hidden size h'\nset ylabel 'FLOP per TP byte (one layer, "
               "forward, per device)'\n");
    if (!cl.len) {
        gp_empty(g, "no row with tensor parallelism (tp > 1)", "");
    } else {
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
    int bad = cl.oom;
    ccs_buf_free(&cl);
    int rc1 = close_out(r, dat, r->data, "ccr.dat");
    int rc2 = close_out(r, g, r->data, "ccr.gp");
    if (bad)
        return fail(r, CCS_ENOMEM, "out of memory");
    if (rc1 || rc2)
        return rc1 ? rc1 : rc2;
    if ((rc = run_gnuplot(r, "ccr")) == CCS_OK)
        r->made[P_CCR] = 1;
    return rc;
}

/* Distinct mitigation labels of the reference hardware at generation gen. */
static size_t mit_labels(const rp *r, int gen, const char **out, size_t max)
{
    const rtab *t = &r->q[P_MIT];
    size_t n = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        if (!tab_is(t, i, "hardware", hw_name(r, r->ref)) ||
            (int)tab_num(t, i, "generation") != gen)
            continue;
        const char *m = tab_str(t, i, "mitigation");
        size_t k;
        for (k = 0; k < n && strcmp(out[k], m); k++)
            ;
        if (k == n && n < max)
            out[n++] = m;
    }
    return n;
}

/* Plot 5: iteration time saved by each mitigation, same plan, at the last
 * generation with mitigation rows, on the reference hardware. */
static int plot_mitigations(rp *r)
{
    const rtab *t = &r->q[P_MIT];
    const char *hw = hw_name(r, r->ref);
    r->mit_gen = -1;
    for (size_t i = 0; i < t->nrows; i++)
        if (tab_is(t, i, "hardware", hw) && (int)tab_num(t, i, "generation") > r->mit_gen)
            r->mit_gen = (int)tab_num(t, i, "generation");
    if (r->mit_gen < 0) {
        snprintf(r->note[P_MIT], sizeof r->note[P_MIT],
                 "No plot: run %lld has no mitigation what-ifs on %s (plan axes tp_overlap, "
                 "comm_compress, innet_reduce, net_bw_factor; see sweeps/paper.yaml).",
                 (long long)r->run, hw);
        return CCS_OK;
    }
    const char *labels[16];
    size_t nl = mit_labels(r, r->mit_gen, labels, 16);
    int rc = CCS_OK;
    FILE *dat = open_out(r, r->data, "mitigations.dat", &rc);
    FILE *g = dat ? open_out(r, r->data, "mitigations.gp", &rc) : NULL;
    if (!g) {
        if (dat)
            fclose(dat);
        return rc;
    }
    size_t nm = r->models.nrows;
    int w = (int)(nm * (10 * nl + 16) + 300);
    gp_head(g, plot_info[P_MIT].file, w < 1000 ? 1000 : w, 1000, plot_info[P_MIT].title, 2, 1);
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
    long kc = -1, kb = -1;
    for (size_t k = 0; k < nl; k++) {
        if (!strncmp(labels[k], "comm_compress", 13))
            kc = (long)k;
        if (!strncmp(labels[k], "net_bw_factor", 13))
            kb = (long)k;
    }
    int same[2] = {0, 0}, both[2] = {0, 0};
    double ymax[2] = {0, 0};
    for (int row = 0; row < 2; row++) {
        int any = 0;
        for (size_t m = 0; m < nm; m++) {
            const char *name = tab_str(&r->models, m, "name");
            double v[16];
            int have = 0;
            for (size_t k = 0; k < nl; k++) {
                v[k] = NAN;
                for (size_t i = 0; i < t->nrows; i++)
                    if (tab_is(t, i, "plan", lens_key[row]) && tab_is(t, i, "hardware", hw) &&
                        (int)tab_num(t, i, "generation") == r->mit_gen &&
                        tab_is(t, i, "model", name) && tab_is(t, i, "mitigation", labels[k])) {
                        v[k] = tab_num(t, i, "time_saved_pct");
                        if (v[k] > ymax[row])
                            ymax[row] = v[k];
                        have = 1;
                        break;
                    }
            }
            /* a model without a fitting plan keeps its place, marked '*' */
            fprintf(dat, "\"%s%s\"", name, have ? "" : "*");
            for (size_t k = 0; k < nl; k++)
                isfinite(v[k]) ? fprintf(dat, " %.6g", v[k]) : fprintf(dat, " ?");
            fprintf(dat, "\n");
            any |= have;
            if (kc >= 0 && kb >= 0 && isfinite(v[kc]) && isfinite(v[kb])) {
                both[row]++;
                same[row] += fabs(v[kc] - v[kb]) <= 0.05;
            }
        }
        if (!any)
            fprintf(dat, "\"none\"%s\n", nl ? " ?" : "");
        fprintf(dat, "\n\n");
        char title[256], q[300];
        snprintf(title, sizeof title, "%s gen %d: %s", hw, r->mit_gen, lens_title[row]);
        report_gp_quote(q, sizeof q, title);
        fprintf(g, "set title %s\n", q);
        if (!any || !nl) {
            gp_empty(g, "no fitting plan with mitigation rows",
                     "set xtics rotate by 45 right font ',8'\n");
            continue;
        }
        fprintf(g, "unset label 98\n");
        if (both[row]) {
            char note[300], q[340];
            snprintf(note, sizeof note,
                     "%s and %s: equal (within 0.05 points) for %d of %d models - both halve the "
                     "bandwidth term of every TP/DP collective; only links also speed pipeline p2p",
                     labels[kc], labels[kb], same[row], both[row]);
            report_gp_quote(q, sizeof q, note);
            fprintf(g,
                    "set label 98 %s at graph 0.01, graph 0.86 left font ',8' tc rgb '#333333'\n",
                    q);
        }
        fprintf(g, "set xrange [-0.7:%.1f]\nset yrange [0:%.3g]\nplot ", (double)nm - 0.3,
                ymax[row] > 0 ? ymax[row] * 1.3 : 1.0);
        for (size_t k = 0; k < nl; k++) {
            char lq[128];
            report_gp_quote(lq, sizeof lq, labels[k]);
            fprintf(g, "%s'%s' index %d using %d%s title %s lc rgb '%s'", k ? ", " : "",
                    k ? "" : "mitigations.dat", row, (int)k + 2, k ? "" : ":xtic(1)", lq,
                    gen_color[k % 8]);
        }
        fprintf(g, "\n");
    }
    fprintf(g, "unset multiplot\n");
    if (kc >= 0 && kb >= 0 && (both[0] || both[1]))
        snprintf(r->note[P_MIT], sizeof r->note[P_MIT],
                 "`%s` and `%s` save the same time for %d of %d best plans and %d of %d TP+DP "
                 "plans: in the alpha-beta model, halving the bytes of a collective and doubling "
                 "the bandwidth of its links both halve its bandwidth term. They differ only "
                 "where one applies alone: faster links also speed pipeline p2p transfers.",
                 labels[kc], labels[kb], same[0], both[0], same[1], both[1]);
    int rc1 = close_out(r, dat, r->data, "mitigations.dat");
    int rc2 = close_out(r, g, r->data, "mitigations.gp");
    if (rc1 || rc2)
        return rc1 ? rc1 : rc2;
    if ((rc = run_gnuplot(r, "mitigations")) == CCS_OK)
        r->made[P_MIT] = 1;
    return rc;
}

/* ---- report.md ----------------------------------------------------------------------- */

static const char *pct(char *buf, size_t n, double v)
{
    if (!isfinite(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.1f%%", v);
    return buf;
}

/* Row of the summary query for (plan, hardware, generation), or -1. */
static long summary_row(const rp *r, const char *plan, const char *hw, int gen)
{
    const rtab *t = &r->summary;
    for (size_t i = 0; i < t->nrows; i++)
        if (tab_is(t, i, "plan", plan) && tab_is(t, i, "hardware", hw) &&
            (int)tab_num(t, i, "generation") == gen)
            return (long)i;
    return -1;
}

static void md_summary(const rp *r, FILE *f)
{
    const rtab *t = &r->summary;
    size_t nm = r->models.nrows;
    fprintf(f, "Communication share = exposed communication time / iteration time, over the "
               "models that fit (min - max, mean in brackets); DP hidden = share of the "
               "data-parallel gradient communication overlapped with the backward pass "
               "(min - max over the models with DP traffic).\n\n");
    fprintf(f, "| hardware | gen | HBM GiB | models fitting: best / TP+DP | comm share, best "
               "plan | largest model, best plan | comm share, TP+DP | largest model, TP+DP "
               "| DP hidden, best plan | DP hidden, TP+DP |\n");
    fprintf(f, "|---|---:|---:|---|---|---|---|---|---|---|\n");
    for (size_t h = 0; h < r->hwrows.nrows; h++) {
        const char *hw = tab_str(&r->hwrows, h, "name");
        int gen = (int)tab_num(&r->hwrows, h, "generation");
        long b = summary_row(r, "best", hw, gen), p = summary_row(r, "tp+dp", hw, gen);
        char a[5][24], c[6][24];
        fprintf(f, "| %s | %d | %.0f | %.0f / %.0f of %zu |", hw, gen,
                tab_num(&r->hwrows, h, "mem_cap") / 1073741824.0,
                b < 0 ? 0 : tab_num(t, (size_t)b, "models"),
                p < 0 ? 0 : tab_num(t, (size_t)p, "models"), nm);
        for (int k = 0; k < 2; k++) {
            long i = k ? p : b;
            if (i < 0) {
                fprintf(f, " - | - |");
                continue;
            }
            fprintf(f, " %s - %s (%s) | %s: %s |",
                    pct(a[0], 24, tab_num(t, (size_t)i, "comm_min_pct")),
                    pct(a[1], 24, tab_num(t, (size_t)i, "comm_max_pct")),
                    pct(a[2], 24, tab_num(t, (size_t)i, "comm_mean_pct")),
                    tab_str(t, (size_t)i, "largest_model"),
                    pct(a[3], 24, tab_num(t, (size_t)i, "largest_comm_pct")));
        }
        for (int k = 0; k < 2; k++) {
            long i = k ? p : b;
            if (i < 0)
                fprintf(f, " - |");
            else
                fprintf(f, " %s - %s |", pct(c[0], 24, tab_num(t, (size_t)i, "dp_hidden_min_pct")),
                        pct(c[1], 24, tab_num(t, (size_t)i, "dp_hidden_max_pct")));
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

/* Comm share statistics over every hardware for one plan kind and generation. */
static void comm_stats(const rp *r, const char *plan, int gen, report_stats *st,
                       const char **max_model, const char **max_hw, size_t *n_over40)
{
    const rtab *t = &r->q[P_COMM];
    double *v = malloc((t->nrows ? t->nrows : 1) * sizeof *v);
    size_t n = 0;
    *max_model = *max_hw = "";
    *n_over40 = 0;
    double best = -1;
    for (size_t i = 0; v && i < t->nrows; i++) {
        if (!tab_is(t, i, "plan", plan) || (int)tab_num(t, i, "generation") != gen)
            continue;
        v[n] = tab_num(t, i, "comm_pct");
        *n_over40 += v[n] >= 40;
        if (v[n] > best) {
            best = v[n];
            *max_model = tab_str(t, i, "model");
            *max_hw = tab_str(t, i, "hardware");
        }
        n++;
    }
    report_stats_of(v ? v : (double[]){NAN}, v ? n : 1, st);
    free(v);
}

static void md_findings(const rp *r, FILE *f)
{
    char a[4][24];
    fprintf(f, "What this run shows (each number from the query named after it; the queries "
               "are listed at the end):\n\n");
    for (int k = 0; k < 2; k++) {
        int gens[2] = {r->gen_first, r->gen_last};
        for (int j = 0; j < (r->gen_first == r->gen_last ? 1 : 2); j++) {
            report_stats st;
            const char *mm, *mh;
            size_t over;
            comm_stats(r, lens_key[k], gens[j], &st, &mm, &mh, &over);
            if (!st.n)
                continue;
            fprintf(f,
                    "- %s, generation %d: communication is %s - %s of the iteration "
                    "(median %s) over %zu model x hardware pairs; the most is %s on %s; "
                    "%zu pairs at 40%% or more (`queries/comm_share.sql`).\n",
                    k ? "TP+DP (memory-forced TP)" : "Best plan", gens[j], pct(a[0], 24, st.min),
                    pct(a[1], 24, st.max), pct(a[2], 24, st.median), st.n, mm, mh, over);
        }
    }
    /* the first generation's plans kept on later hardware */
    const rtab *fx = &r->q[P_FIXED];
    for (int k = 0; k < 2 && r->gen_first != r->gen_last; k++) {
        double *v = malloc((fx->nrows ? fx->nrows : 1) * sizeof *v);
        report_stats st[2];
        size_t over = 0;
        for (int j = 0; v && j < 2; j++) {
            size_t n = 0;
            int g = j ? r->gen_last : r->gen_first;
            for (size_t i = 0; i < fx->nrows; i++)
                if (tab_is(fx, i, "plan", lens_key[k]) && (int)tab_num(fx, i, "generation") == g) {
                    v[n] = tab_num(fx, i, "comm_pct");
                    over += j && v[n] >= 40;
                    n++;
                }
            report_stats_of(v, n, &st[j]);
        }
        if (v && st[0].n && st[1].n)
            fprintf(f,
                    "- %s plans of generation %d kept unchanged: the median communication "
                    "share goes from %s to %s at generation %d (max %s); %zu of %zu model x "
                    "hardware pairs reach 40%% or more (`queries/fixed_plan.sql`).\n",
                    k ? "TP+DP" : "Best", r->gen_first, pct(a[0], 24, st[0].median),
                    pct(a[1], 24, st[1].median), r->gen_last, pct(a[2], 24, st[1].max), over,
                    st[1].n);
        free(v);
    }
    /* hidden DP communication turning exposed, on the reference hardware */
    const rtab *t = &r->q[P_DP];
    const char *hw = hw_name(r, r->ref);
    for (int k = 0; k < 2; k++) {
        size_t hidden0 = 0, exposed = 0;
        ccs_buf names = CCS_BUF_INIT;
        for (size_t m = 0; m < r->models.nrows; m++) {
            const char *name = tab_str(&r->models, m, "name");
            double first = NAN, last = NAN;
            for (size_t i = 0; i < t->nrows; i++) {
                if (!tab_is(t, i, "plan", lens_key[k]) || !tab_is(t, i, "hardware", hw) ||
                    !tab_is(t, i, "model", name))
                    continue;
                int g = (int)tab_num(t, i, "generation");
                if (g == r->gen_first)
                    first = tab_num(t, i, "dp_hidden_pct");
                if (g == r->gen_last)
                    last = tab_num(t, i, "dp_hidden_pct");
            }
            if (!(first >= 50))
                continue;
            hidden0++;
            if (last < 50) {
                exposed++;
                ccs_buf_printf(&names, "%s%s", names.len ? ", " : "", name);
            }
        }
        if (hidden0 && r->gen_first != r->gen_last)
            fprintf(f,
                    "- %s on %s: of the %zu models whose DP communication is at least half "
                    "hidden at generation %d, %zu have less than half hidden at generation "
                    "%d%s%s%s (`queries/dp_hidden.sql`).\n",
                    k ? "TP+DP" : "Best plan", hw, hidden0, r->gen_first, exposed, r->gen_last,
                    exposed ? " (" : "", exposed ? ccs_buf_str(&names) : "", exposed ? ")" : "");
        ccs_buf_free(&names);
    }
    /* memory-forced TP on the reference hardware */
    const rtab *ft = &r->q[P_TP];
    int gens[2] = {r->gen_first, r->gen_last};
    for (int j = 0; j < (r->gen_first == r->gen_last ? 1 : 2); j++) {
        int max_nopp = 0, max_any = 0, nofit = 0;
        const char *mn = "", *ma = "";
        for (size_t i = 0; i < ft->nrows; i++) {
            if (!tab_is(ft, i, "hardware", hw) || (int)tab_num(ft, i, "generation") != gens[j])
                continue;
            double a1 = tab_num(ft, i, "tp_no_pp"), a2 = tab_num(ft, i, "tp_any_pp");
            if (a1 > max_nopp) {
                max_nopp = (int)a1;
                mn = tab_str(ft, i, "model");
            }
            if (a2 > max_any) {
                max_any = (int)a2;
                ma = tab_str(ft, i, "model");
            }
            nofit += !isfinite(a1);
        }
        fprintf(f,
                "- Memory-forced TP on %s, generation %d: without pipeline parallelism "
                "the smallest fitting tp reaches %d (%s) and %d models fit no TP+DP plan; "
                "with pipeline parallelism it reaches %d (%s) (`queries/forced_tp.sql`).\n",
                hw, gens[j], max_nopp, mn, nofit, max_any, ma);
    }
    fprintf(f, "\n");
}

static void md_dp_table(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_DP];
    const char *hw = hw_name(r, r->ref);
    size_t ng = r->gens.nrows;
    int *gens = malloc(ng * sizeof *gens);
    double *v = malloc(ng * sizeof *v);
    if (!gens || !v) {
        free(gens);
        free(v);
        return;
    }
    fprintf(f,
            "Hidden share of DP communication on %s per generation (%d .. %d), and the "
            "generation from which less than half of it stays hidden:\n\n",
            hw, r->gen_first, r->gen_last);
    fprintf(f, "| model | params | best plan | below 50%% from | TP+DP | below 50%% from |\n");
    fprintf(f, "|---|---:|---|---:|---|---:|\n");
    for (size_t m = 0; m < r->models.nrows; m++) {
        const char *name = tab_str(&r->models, m, "name");
        char p[16];
        fmt_params(p, sizeof p, tab_num(&r->models, m, "params"));
        fprintf(f, "| %s | %s |", name, p);
        for (int k = 0; k < 2; k++) {
            int any = 0;
            for (size_t gi = 0; gi < ng; gi++) {
                gens[gi] = gen_at(r, gi);
                v[gi] = NAN;
                for (size_t i = 0; i < t->nrows; i++)
                    if (tab_is(t, i, "plan", lens_key[k]) && tab_is(t, i, "hardware", hw) &&
                        tab_is(t, i, "model", name) &&
                        (int)tab_num(t, i, "generation") == gens[gi]) {
                        v[gi] = tab_num(t, i, "dp_hidden_pct");
                        any = 1;
                    }
            }
            fprintf(f, " ");
            for (size_t gi = 0; gi < ng; gi++)
                isfinite(v[gi]) ? fprintf(f, "%s%.0f", gi ? " / " : "", v[gi])
                                : fprintf(f, "%s-", gi ? " / " : "");
            int fb = report_first_below(gens, v, ng, 50.0);
            if (!any)
                fprintf(f, " | - |");
            else if (fb < 0)
                fprintf(f, " | stays hidden |");
            else if (fb == r->gen_first)
                fprintf(f, " | already at gen %d |", fb);
            else
                fprintf(f, " | gen %d |", fb);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
    free(gens);
    free(v);
}

static void md_tp_table(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_TP];
    const char *hw = hw_name(r, r->ref);
    fprintf(f,
            "Smallest tp that fits on %s, without pipeline parallelism / with it "
            "(- : nothing fits):\n\n| model | params | layers | hidden |",
            hw);
    for (size_t gi = 0; gi < r->gens.nrows; gi++) {
        double cap = NAN;
        for (size_t h = 0; h < r->hwrows.nrows; h++)
            if (tab_is(&r->hwrows, h, "name", hw) &&
                (int)tab_num(&r->hwrows, h, "generation") == gen_at(r, gi))
                cap = tab_num(&r->hwrows, h, "mem_cap") / 1073741824.0;
        fprintf(f, " gen %d (%.0f GiB) |", gen_at(r, gi), cap);
    }
    fprintf(f, "\n|---|---:|---:|---:|");
    for (size_t gi = 0; gi < r->gens.nrows; gi++)
        fprintf(f, "---|");
    fprintf(f, "\n");
    for (size_t m = 0; m < r->models.nrows; m++) {
        const char *name = tab_str(&r->models, m, "name");
        char p[16];
        fmt_params(p, sizeof p, tab_num(&r->models, m, "params"));
        fprintf(f, "| %s | %s | %.0f | %.0f |", name, p, tab_num(&r->models, m, "layers"),
                tab_num(&r->models, m, "hidden"));
        for (size_t gi = 0; gi < r->gens.nrows; gi++) {
            double a = NAN, b = NAN;
            for (size_t i = 0; i < t->nrows; i++)
                if (tab_is(t, i, "hardware", hw) && tab_is(t, i, "model", name) &&
                    (int)tab_num(t, i, "generation") == gen_at(r, gi)) {
                    a = tab_num(t, i, "tp_no_pp");
                    b = tab_num(t, i, "tp_any_pp");
                }
            char sa[16] = "-", sb[16] = "-";
            if (isfinite(a))
                snprintf(sa, sizeof sa, "%.0f", a);
            if (isfinite(b))
                snprintf(sb, sizeof sb, "%.0f", b);
            fprintf(f, " %s / %s |", sa, sb);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

static void md_mit_table(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_MIT];
    fprintf(f,
            "At generation %d, each mitigation applied to the same plan (mean and largest "
            "saving over the models; exposed communication removed, mean):\n\n",
            r->mit_gen);
    fprintf(f, "| plan | hardware | mitigation | models | time saved, mean | time saved, max "
               "| exposed comm removed, mean |\n|---|---|---|---:|---:|---|---:|\n");
    for (int k = 0; k < 2; k++) {
        for (size_t h = 0; h < r->hwnames.nrows; h++) {
            const char *hw = hw_name(r, h);
            const char *labels[16];
            size_t nl = 0;
            for (size_t i = 0; i < t->nrows; i++) {
                if (!tab_is(t, i, "hardware", hw) || (int)tab_num(t, i, "generation") != r->mit_gen)
                    continue;
                size_t j;
                for (j = 0; j < nl && strcmp(labels[j], tab_str(t, i, "mitigation")); j++)
                    ;
                if (j == nl && nl < 16)
                    labels[nl++] = tab_str(t, i, "mitigation");
            }
            for (size_t j = 0; j < nl; j++) {
                double sum = 0, sum_rm = 0, mx = -INFINITY;
                size_t n = 0, n_rm = 0;
                const char *mx_model = "";
                for (size_t i = 0; i < t->nrows; i++) {
                    if (!tab_is(t, i, "plan", lens_key[k]) || !tab_is(t, i, "hardware", hw) ||
                        (int)tab_num(t, i, "generation") != r->mit_gen ||
                        !tab_is(t, i, "mitigation", labels[j]))
                        continue;
                    double v = tab_num(t, i, "time_saved_pct");
                    double rm = tab_num(t, i, "exposed_comm_removed_pct");
                    if (isfinite(v)) {
                        sum += v;
                        n++;
                        if (v > mx) {
                            mx = v;
                            mx_model = tab_str(t, i, "model");
                        }
                    }
                    if (isfinite(rm)) {
                        sum_rm += rm;
                        n_rm++;
                    }
                }
                if (!n)
                    continue;
                char a[3][24];
                fprintf(f, "| %s | %s | %s | %zu | %s | %s (%s) | %s |\n", lens_key[k], hw,
                        labels[j], n, pct(a[0], 24, sum / (double)n), pct(a[1], 24, mx), mx_model,
                        pct(a[2], 24, n_rm ? sum_rm / (double)n_rm : NAN));
            }
        }
    }
    fprintf(f, "\n");
}

/* Statistics of the kept first-generation plans per generation, and per model on
 * the reference hardware. */
static void md_fixed_table(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_FIXED];
    double *v = malloc((t->nrows ? t->nrows : 1) * sizeof *v);
    double *d = malloc((t->nrows ? t->nrows : 1) * sizeof *d);
    if (!v || !d) {
        free(v);
        free(d);
        return;
    }
    char a[5][24];
    fprintf(f, "Kept plans over every hardware of the run: communication share (min - max, "
               "median) and hidden share of DP communication (median) per generation:\n\n"
               "| plan | gen | model x hardware pairs | comm share | pairs at 40%% or more "
               "| DP hidden, median |\n|---|---:|---:|---|---:|---:|\n");
    for (int k = 0; k < 2; k++) {
        for (size_t gi = 0; gi < r->gens.nrows; gi++) {
            size_t n = 0, nd = 0, over = 0;
            for (size_t i = 0; i < t->nrows; i++) {
                if (!tab_is(t, i, "plan", lens_key[k]) ||
                    (int)tab_num(t, i, "generation") != gen_at(r, gi))
                    continue;
                v[n] = tab_num(t, i, "comm_pct");
                over += v[n] >= 40;
                n++;
                double h = tab_num(t, i, "dp_hidden_pct");
                if (isfinite(h))
                    d[nd++] = h;
            }
            if (!n)
                continue;
            report_stats sc, sd;
            report_stats_of(v, n, &sc);
            report_stats_of(d, nd, &sd);
            fprintf(f, "| %s | %d | %zu | %s - %s (%s) | %zu | %s |\n", lens_key[k], gen_at(r, gi),
                    n, pct(a[0], 24, sc.min), pct(a[1], 24, sc.max), pct(a[2], 24, sc.median), over,
                    pct(a[3], 24, sd.median));
        }
    }
    free(v);
    free(d);
    const char *hw = hw_name(r, r->ref);
    fprintf(f,
            "\nOn %s, communication share per generation (%d .. %d) of the kept plans:\n\n"
            "| model | best plan (tp x pp, mbs) | comm share | TP+DP plan (tp, mbs) | "
            "comm share |\n|---|---|---|---|---|\n",
            hw, r->gen_first, r->gen_last);
    for (size_t m = 0; m < r->models.nrows; m++) {
        const char *name = tab_str(&r->models, m, "name");
        fprintf(f, "| %s |", name);
        for (int k = 0; k < 2; k++) {
            ccs_buf b = CCS_BUF_INIT;
            char planbuf[64] = "-";
            for (size_t gi = 0; gi < r->gens.nrows; gi++) {
                double c = NAN;
                for (size_t i = 0; i < t->nrows; i++)
                    if (tab_is(t, i, "plan", lens_key[k]) && tab_is(t, i, "hardware", hw) &&
                        tab_is(t, i, "model", name) &&
                        (int)tab_num(t, i, "generation") == gen_at(r, gi)) {
                        c = tab_num(t, i, "comm_pct");
                        if (k)
                            snprintf(planbuf, sizeof planbuf, "%.0f, %.0f", tab_num(t, i, "tp"),
                                     tab_num(t, i, "mbs"));
                        else
                            snprintf(planbuf, sizeof planbuf, "%.0f x %.0f, %.0f",
                                     tab_num(t, i, "tp"), tab_num(t, i, "pp"),
                                     tab_num(t, i, "mbs"));
                    }
                if (isfinite(c))
                    ccs_buf_printf(&b, "%s%.0f", gi ? " / " : "", c);
                else
                    ccs_buf_printf(&b, "%s-", gi ? " / " : "");
            }
            fprintf(f, " %s | %s |", planbuf, ccs_buf_str(&b));
            ccs_buf_free(&b);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

static void md_plot(const rp *r, FILE *f, int p, const char *caption)
{
    unsigned formats = r->o->formats ? r->o->formats : REPORT_PNG;
    int stem = (int)strcspn(plot_info[p].file, ".");
    /* shown inline: PNG, else SVG; every format drawn is linked */
    const char *shown = formats & REPORT_PNG ? "png" : formats & REPORT_SVG ? "svg" : NULL;
    fprintf(f, "## %d. %s (`%.*s`)\n\n", p + 1, plot_info[p].title, stem, plot_info[p].file);
    if (r->made[p] && shown)
        fprintf(f, "![%s](%.*s.%s)\n\n", plot_info[p].title, stem, plot_info[p].file, shown);
    if (r->made[p]) {
        static const char *const ext[] = {"png", "pdf", "svg"};
        fprintf(f, "Figure:");
        for (int k = 0; k < 3; k++)
            if (formats & (1u << k))
                fprintf(f, " [%s](%.*s.%s)", ext[k], stem, plot_info[p].file, ext[k]);
        fprintf(f, "\n\n");
    }
    if (r->note[p][0])
        fprintf(f, "%s\n\n", r->note[p]);
    fprintf(f,
            "%s Query: [`queries/%s.sql`](queries/%s.sql); plotted numbers and gnuplot "
            "script: `data/%.*s.dat`, `data/%.*s.gp`.\n\n",
            caption, plot_info[p].query, plot_info[p].query, (int)strcspn(plot_info[p].file, "."),
            plot_info[p].file, (int)strcspn(plot_info[p].file, "."), plot_info[p].file);
}

/* Communication by class of the mixture-of-experts and long-context best
 * plans (query comm_class): per hardware, the mean share of each class at
 * the first and the last generation, then the rows of the reference hardware. */
static void md_comm_class(const rp *r, FILE *f)
{
    /* the columns TP, CP, EP, DP, PP of the tables */
    static const char *const cls[] = {"tp_pct", "cp_pct", "ep_pct", "dp_pct", "pp_pct"};
    enum { NC = sizeof cls / sizeof cls[0] };
    const rtab *t = &r->cls;
    const char *ref = hw_name(r, r->ref);
    fprintf(f, "## Communication by class: mixture-of-experts and long-context models\n\n");
    if (t->nrows == 0) {
        fprintf(f, "This run has no fitting plan of a mixture-of-experts model or of sequences "
                   "longer than 8192 tokens (`queries/comm_class.sql`).\n\n");
        return;
    }
    fprintf(f, "The best plan of every mixture-of-experts model and of every sequence longer "
               "than 8192 tokens, its exposed communication split by class, in %% of the "
               "iteration: tensor-parallel collectives (TP), context-parallel K/V transfers "
               "(CP), expert-parallel all-to-alls (EP), data-parallel gradient reduction (DP) "
               "and pipeline transfers (PP); the classes add up to the communication share "
               "(`queries/comm_class.sql`). Mean over these groups, per hardware, at the first "
               "and the last generation:\n\n");
    fprintf(f, "| hardware | gen | groups | comm | TP | CP | EP | DP | PP |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t h = 0; h < r->hwnames.nrows; h++) {
        const char *hw = hw_name(r, h);
        for (int k = 0; k < 2; k++) {
            int gen = k ? r->gen_last : r->gen_first;
            if (k && gen == r->gen_first)
                break;
            double sum[NC + 1] = {0};
            size_t n = 0;
            for (size_t i = 0; i < t->nrows; i++) {
                if (!tab_is(t, i, "hardware", hw) || (int)tab_num(t, i, "generation") != gen)
                    continue;
                n++;
                sum[NC] += tab_num(t, i, "comm_pct");
                for (int c = 0; c < NC; c++)
                    sum[c] += tab_num(t, i, cls[c]);
            }
            if (n == 0)
                continue;
            fprintf(f, "| %s | %d | %zu | %.1f |", hw, gen, n, sum[NC] / (double)n);
            for (int c = 0; c < NC; c++)
                fprintf(f, " %.1f |", sum[c] / (double)n);
            fprintf(f, "\n");
        }
    }
    fprintf(f,
            "\nOn %s, every generation (plan: tp x cp x ep x pp x dp, micro-batch):\n\n"
            "| model | params | experts | seq | devices | gen | plan | comm | TP | CP | EP | DP | "
            "PP |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n",
            ref);
    for (size_t i = 0; i < t->nrows; i++) {
        if (!tab_is(t, i, "hardware", ref))
            continue;
        char p[16];
        fmt_params(p, sizeof p, tab_num(t, i, "params"));
        fprintf(f,
                "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0fx%.0fx%.0fx%.0fx%.0f, mbs %.0f | "
                "%.1f |",
                tab_str(t, i, "model"), p, tab_num(t, i, "experts"), tab_num(t, i, "seq"),
                tab_num(t, i, "devices"), tab_num(t, i, "generation"), tab_num(t, i, "tp"),
                tab_num(t, i, "cp"), tab_num(t, i, "ep"), tab_num(t, i, "pp"), tab_num(t, i, "dp"),
                tab_num(t, i, "mbs"), tab_num(t, i, "comm_pct"));
        for (int c = 0; c < NC; c++)
            fprintf(f, " %.1f |", tab_num(t, i, cls[c]));
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

static int write_md(rp *r)
{
    int rc = CCS_OK;
    FILE *f = open_out(r, r->dir, "report.md", &rc);
    if (!f)
        return rc;
    const rtab *ri = &r->runinfo;
    const char *hw = hw_name(r, r->ref);
    fprintf(f, "# ccsweep report: %s (run %lld)\n\n", tab_str(ri, 0, "name"), (long long)r->run);
    fprintf(f, "| | |\n|---|---|\n");
    fprintf(f, "| database | `%s` |\n", r->o->db);
    fprintf(f, "| spec | `%s` (sha256 %.12s...) |\n", tab_str(ri, 0, "spec_path"),
            tab_str(ri, 0, "spec_sha256"));
    fprintf(f,
            "| run | %s; %.0f scenarios, %.0f rows stored (%.0f fit, %.0f out of memory, "
            "%.0f invalid), %.0f filtered out by `where` |\n",
            tab_str(ri, 0, "status"), tab_num(ri, 0, "total"), tab_num(ri, 0, "n_rows"),
            tab_num(ri, 0, "n_ok"), tab_num(ri, 0, "n_oom"), tab_num(ri, 0, "n_invalid"),
            tab_num(ri, 0, "n_filtered"));
    fprintf(f, "| when | %s - %s, %.0f MPI ranks on %s |\n", tab_str(ri, 0, "started"),
            tab_str(ri, 0, "ended"), tab_num(ri, 0, "ranks"), tab_str(ri, 0, "host"));
    fprintf(f, "| build | ccsweep %s (%s) |\n", tab_str(ri, 0, "version"),
            tab_str(ri, 0, "git_rev"));
    fprintf(f, "| hardware evolution | %s |\n", tab_str(ri, 0, "evolution"));
    fprintf(f, "| where | `%s` |\n\n", tab_str(ri, 0, "where_expr"));
    if (strcmp(tab_str(ri, 0, "status"), "complete"))
        fprintf(f,
                "**Note:** this run is %s, not complete: the numbers cover only the "
                "scenarios stored so far.\n\n",
                tab_str(ri, 0, "status"));

    fprintf(f,
            "## How to read this report\n\n"
            "- *Communication share*: exposed communication (tensor-parallel collectives "
            "on the critical path, context-parallel K/V transfers not hidden under the "
            "attention, expert-parallel all-to-alls, data-parallel gradient reduction not "
            "hidden under the backward pass, pipeline transfers) divided by the iteration "
            "time.\n"
            "- Every model x hardware generation is shown at two plans, chosen in SQL "
            "(the `plans` CTE of the queries) among the fitting plans with no mitigation "
            "switched on, and compared only at equal model, hardware generation, "
            "devices, global batch and sequence length:\n"
            "  - **best**: the plan the view `plan_rank` ranks first, the highest tokens/s "
            "(ties: lower memory per device) over all tensor, pipeline and data-parallel "
            "plans of the run;\n"
            "  - **TP+DP**: the paper's setting, no pipeline parallelism (pp = 1), the "
            "smallest tensor-parallel degree that fits device memory (memory-forced TP), "
            "then `plan_rank`'s order.\n"
            "- Mitigations are applied to the very same plan (same tp, pp, dp, micro-batch, "
            "...), so their savings are for that plan, not after re-planning.\n"
            "- Plots 2, 3 and 5 and the per-model tables of sections 4, 6 and 7 show one "
            "hardware: "
            "**%s** (`--hw NAME` picks another).\n\n",
            hw);

    fprintf(f, "## Summary\n\n");
    md_summary(r, f);
    md_findings(r, f);

    md_plot(r, f, P_COMM,
            "One line per hardware generation; x: parameters (billions, log scale); y: "
            "exposed communication in % of the iteration. Top: best plans; bottom: TP+DP "
            "plans with the memory-forced TP. A model missing from a line has no fitting "
            "plan of that kind.");
    md_plot(r, f, P_BREAKDOWN,
            "Bars per model (ascending size), stacked shares of the iteration that add up "
            "to 100%: computation (with the optimizer step), exposed TP communication, "
            "exposed CP communication, EP all-to-alls, exposed DP communication, pipeline "
            "transfers, pipeline bubble; first and last "
            "generation, best plans (top) and TP+DP plans (bottom).");
    char cap[640];
    snprintf(cap, sizeof cap,
             "Analytic ratio of one layer's forward FLOPs per device to the TP bytes each "
             "device sends in that forward (`results.ccr`, about h/(tp-1) for Megatron "
             "layers): at a fixed tp = %d (dashed) it grows with the hidden size h; at the "
             "memory-forced tp of the TP+DP plan (one line per generation, labels: tp) it "
             "falls as h grows, because the tp needed to fit grows faster than h. "
             "Points with tp = 1 (no TP traffic) are not drawn.",
             r->fixed_tp);
    md_plot(r, f, P_CCR, cap);
    md_plot(r, f, P_DP,
            "Share of the data-parallel gradient communication hidden under the backward "
            "pass (100%: fully overlapped), one line per generation; best plans (top), "
            "TP+DP plans (bottom).");
    md_dp_table(r, f);
    md_plot(r, f, P_MIT,
            "Iteration time saved by each mitigation on the same plan, per model, at the "
            "last generation with mitigation rows; best plans (top), TP+DP plans (bottom). "
            "tp_overlap: TP collectives hidden under their block's GEMMs (max instead of "
            "sum); comm_compress: bytes factor on every collective; innet_reduce: "
            "in-network reduction ((n-1)/n instead of 2(n-1)/n per all-reduce); "
            "net_bw_factor: every link faster.");
    if (r->mit_gen >= 0)
        md_mit_table(r, f);
    md_plot(r, f, P_TP,
            "Smallest tensor-parallel degree that fits device memory, per model (x: "
            "parameters, billions) and generation: with pipeline parallelism allowed (top) "
            "and without (bottom, the paper's setting). Memory capacity grows 2x per "
            "generation under memory-wall, so later generations need less TP.");
    md_tp_table(r, f);
    md_plot(r, f, P_FIXED,
            "The plan each model got at the first generation (best, top; TP+DP, bottom), "
            "kept unchanged on every later generation of the same hardware line: the "
            "paper's view of today's models on future hardware, without re-planning for "
            "the larger memory. One line per generation; x: parameters (billions).");
    md_fixed_table(r, f);
    md_comm_class(r, f);

    fprintf(f,
            "## Queries\n\nEvery number above comes from these queries (also in "
            "`queries/` next to this file and in the source tree as `tools/queries/`), "
            "run on run %lld. Each runs as it is with `sqlite3 DB < FILE` on the latest "
            "run, or on another with `sqlite3 -cmd '.param set :run N' DB < FILE`.\n\n",
            (long long)r->run);
    for (size_t i = 0; i < report_query_count(); i++) {
        const report_query *q = report_query_get(i);
        fprintf(f, "### %s (`queries/%s.sql`)\n\n```sql\n", q->title, q->name);
        for (const char *const *l = q->lines; *l; l++)
            fputs(*l, f);
        fprintf(f, "```\n\n");
    }
    rc = close_out(r, f, r->dir, "report.md");
    if (!rc && r->log)
        fprintf(r->log, "  %s/report.md\n", r->dir);
    return rc;
}

/* ---- driver -------------------------------------------------------------------------- */

static int make_dir(rp *r, const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST) {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            return CCS_OK;
        return fail(r, CCS_EIO, "%s: exists and is not a directory", path);
    }
    return fail(r, CCS_EIO, "%s: cannot create the directory: %s", path, strerror(errno));
}

/* Create DIR (and its parents), DIR/data, DIR/queries. */
static int make_dirs(rp *r)
{
    char tmp[PATH_MAX];
    if (ccs_strlcpy(tmp, r->o->out, sizeof tmp) || strlen(tmp) >= sizeof r->dir)
        return fail(r, CCS_EINPUT, "--out: path too long");
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/')
        tmp[--n] = 0;
    memcpy(r->dir, tmp, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int rc = make_dir(r, tmp);
        *p = '/';
        if (rc)
            return rc;
    }
    int rc = make_dir(r, r->dir);
    if (rc)
        return rc;
    snprintf(r->data, sizeof r->data, "%s/data", r->dir);
    if ((rc = make_dir(r, r->data)))
        return rc;
    char qd[PATH_MAX];
    snprintf(qd, sizeof qd, "%s/queries", r->dir);
    return make_dir(r, qd);
}

static int write_queries(rp *r)
{
    char qd[PATH_MAX];
    snprintf(qd, sizeof qd, "%s/queries", r->dir);
    for (size_t i = 0; i < report_query_count(); i++) {
        const report_query *q = report_query_get(i);
        char name[96];
        int rc = CCS_OK;
        snprintf(name, sizeof name, "%s.sql", q->name);
        FILE *f = open_out(r, qd, name, &rc);
        if (!f)
            return rc;
        for (const char *const *l = q->lines; *l; l++)
            fputs(*l, f);
        if ((rc = close_out(r, f, qd, name)))
            return rc;
    }
    return CCS_OK;
}

int report_write(const report_opts *o, FILE *log, ccs_err *err)
{
    rp r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.log = log;
    r.err = err;
    r.mit_gen = -1;
    int rc;
    r.db = storeq_open(o->db, &rc, err);
    if (!r.db)
        return rc;
    if ((rc = resolve_run(&r)) || (rc = load_layout(&r)) || (rc = find_gnuplot(&r)))
        goto done;
    for (int p = 0; p < P_N; p++)
        if ((rc = load_query(&r, plot_info[p].query, &r.q[p])))
            goto done;
    if ((rc = load_query(&r, "summary", &r.summary)) ||
        (rc = load_query(&r, "comm_class", &r.cls)) || (rc = make_dirs(&r)) ||
        (rc = write_queries(&r)))
        goto done;
    if (log)
        fprintf(log, "ccsweep report: run %lld ('%s') of %s -> %s\n", (long long)r.run,
                tab_str(&r.runinfo, 0, "name"), o->db, r.dir);
    static const lines_fig comm = {P_COMM,
                                   "params",
                                   1e-9,
                                   "parameters (billions)",
                                   "exposed communication (% of iteration)",
                                   0,
                                   0,
                                   NAN,
                                   {{"best", "comm_pct", "best plan"},
                                    {"tp+dp", "comm_pct", "TP+DP with memory-forced TP (pp = 1)"}},
                                   0,
                                   NULL,
                                   NULL};
    static const lines_fig dp = {
        P_DP,
        "params",
        1e-9,
        "parameters (billions)",
        "DP communication hidden (%)",
        0,
        0,
        105,
        {{"best", "dp_hidden_pct", "best plan"},
         {"tp+dp", "dp_hidden_pct", "TP+DP with memory-forced TP (pp = 1)"}},
        P_COMM,
        "comm_pct",
        "left center maxrows 6"}; /* the empty middle left: lines start at 100% */
    static const lines_fig tp = {P_TP,
                                 "params",
                                 1e-9,
                                 "parameters (billions)",
                                 "smallest tp that fits",
                                 1,
                                 NAN,
                                 NAN,
                                 {{NULL, "tp_any_pp", "with pipeline parallelism"},
                                  {NULL, "tp_no_pp", "without pipeline (pp = 1)"}},
                                 0,
                                 NULL,
                                 NULL};
    static const lines_fig fixed = {P_FIXED,
                                    "params",
                                    1e-9,
                                    "parameters (billions)",
                                    "exposed communication (% of iteration)",
                                    0,
                                    0,
                                    NAN,
                                    {{"best", "comm_pct", "first generation's best plan, kept"},
                                     {"tp+dp", "comm_pct", "first generation's TP+DP plan, kept"}},
                                    0,
                                    NULL,
                                    NULL};
    if ((rc = plot_lines(&r, &comm)) || (rc = plot_breakdown(&r)) || (rc = plot_ccr(&r)) ||
        (rc = plot_lines(&r, &dp)) || (rc = plot_mitigations(&r)) || (rc = plot_lines(&r, &tp)) ||
        (rc = plot_lines(&r, &fixed)))
        goto done;
    rc = write_md(&r);
done:
    for (int p = 0; p < P_N; p++)
        tab_free(&r.q[p]);
    tab_free(&r.summary);
    tab_free(&r.cls);
    tab_free(&r.runinfo);
    tab_free(&r.hwrows);
    tab_free(&r.models);
    tab_free(&r.hwnames);
    tab_free(&r.gens);
    storeq_close(r.db);
    return rc;
}
