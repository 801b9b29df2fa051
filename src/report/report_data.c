/* report_data.c - the report's input: the canned queries run on one run into
 * in-memory tables (rtab), the checks that the database is fit to report, and
 * the pure helpers that pick what a figure shows (report.h, unit-tested). */
#include "report_int.h"

#include "ccsweep/report/report_sql.h"
#include "ccsweep/util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- query results held in memory ------------------------------------------------ */

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* storeq_exec's row callback: append row to the rtab ctx (its columns taken
 * from the first row). Returns 0, or 1 with t->oom set to stop the query when
 * out of memory (the row is then partly stored, not counted). */
static int rtab_row(void *ctx, const storeq_row *row)
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

void rtab_free(rtab *t)
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

int rtab_col(const rtab *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->cols[c], name))
            return c;
    return -1;
}

double rtab_num(const rtab *t, size_t r, const char *col)
{
    int c = rtab_col(t, col);
    return c < 0 ? NAN : t->num[r * (size_t)t->ncols + (size_t)c];
}

const char *rtab_str(const rtab *t, size_t r, const char *col)
{
    int c = rtab_col(t, col);
    const char *s = c < 0 ? NULL : t->txt[r * (size_t)t->ncols + (size_t)c];
    return s ? s : "";
}

int rtab_is(const rtab *t, size_t r, const char *col, const char *s)
{
    return !strcmp(rtab_str(t, r, col), s);
}

/* ---- the run ------------------------------------------------------------------------ */

/* The two plan kinds of the queries, as panel rows. */
const char *const rp_lens_key[2] = {"best", "tp+dp"};
const char *const rp_lens_title[2] = {"best plan (highest tokens/s, TP x PP x DP)",
                                      "TP+DP with memory-forced TP (pp = 1)"};

const char *rp_hw_name(const rp *r, size_t i)
{
    return rtab_str(&r->hwnames, i, "name");
}

int rp_gen_at(const rp *r, size_t i)
{
    return (int)rtab_num(&r->gens, i, "generation");
}

/* Run sql with the n parameters par into t (emptied first), every row in memory. */
static int load_par(rp *r, const char *sql, const storeq_param *par, size_t n, rtab *t)
{
    rtab_free(t);
    ccs_err e;
    int rc = storeq_exec(r->db, sql, par, n, rtab_row, t, &e);
    if (t->oom)
        return rp_fail(r, CCS_ENOMEM, "%s: out of memory reading query results", r->o->db);
    if (rc)
        return rp_fail(r, CCS_EIO, "%s", e.msg);
    return CCS_OK;
}

/* Run sql with :run (and :tp) of the training run into t. */
static int load(rp *r, const char *sql, rtab *t)
{
    return load_par(r, sql, r->par, 2, t);
}

int rp_load_run(rp *r, const char *sql, int64_t run, rtab *t)
{
    storeq_param par = {.name = ":run", .type = STOREQ_INT, .i = run};
    return load_par(r, sql, &par, 1, t);
}

/* The text of report query name, or NULL (out of memory, rp_fail'ed). */
static char *query_text(rp *r, const char *name)
{
    const report_query *q = report_query_find(name);
    char *sql = q ? report_query_text(q) : NULL;
    if (!sql)
        rp_fail(r, CCS_ENOMEM, "out of memory");
    return sql;
}

static int load_query(rp *r, const char *name, rtab *t)
{
    char *sql = query_text(r, name);
    int rc = sql ? load(r, sql, t) : CCS_ENOMEM;
    free(sql);
    return rc;
}

int rp_load_query_run(rp *r, const char *name, int64_t run, rtab *t)
{
    char *sql = query_text(r, name);
    int rc = sql ? rp_load_run(r, sql, run, t) : CCS_ENOMEM;
    free(sql);
    return rc;
}

/* The serving run r->srun: its runs row (r->srunfo), checked to have rows
 * when it is the only run reported. */
static int resolve_serve(rp *r)
{
    int rc = rp_load_run(r, "SELECT * FROM runs WHERE run_id = :run", r->srun, &r->srunfo);
    rtab t = {0};
    if (rc || (rc = rp_load_run(r,
                                "SELECT count(*) AS n, coalesce(sum(status = 0), 0) AS ok "
                                "FROM serve_results WHERE run_id = :run",
                                r->srun, &t)))
        return rc;
    double n = rtab_num(&t, 0, "n"), ok = rtab_num(&t, 0, "ok");
    rtab_free(&t);
    if (r->run)
        return CCS_OK; /* a training run is reported too: the section says what is missing */
    const char *name = rtab_str(&r->srunfo, 0, "name");
    if (!(n > 0))
        return rp_fail(r, CCS_EINPUT,
                       "%s: serving run %lld ('%s', %s) has no rows: nothing to "
                       "report",
                       r->o->db, (long long)r->srun, name, rtab_str(&r->srunfo, 0, "status"));
    if (!(ok > 0))
        return rp_fail(r, CCS_EINPUT,
                       "%s: serving run %lld ('%s') has %.0f rows but no plan that fits "
                       "(status ok): nothing to report",
                       r->o->db, (long long)r->srun, name, n);
    return CCS_OK;
}

int rp_resolve_run(rp *r)
{
    rtab t = {0};
    int rc = load(r,
                  "SELECT max(run_id) AS id, count(*) AS n, group_concat(run_id, ', ') AS ids, "
                  "max(CASE WHEN workload IS NULL THEN run_id END) AS train, "
                  "max(CASE WHEN workload = 'serve' THEN run_id END) AS serve "
                  "FROM (SELECT run_id, workload FROM runs ORDER BY run_id)",
                  &t);
    if (rc)
        return rc;
    double last = rtab_num(&t, 0, "id"), train = rtab_num(&t, 0, "train"),
           serve = rtab_num(&t, 0, "serve");
    char ids[256];
    snprintf(ids, sizeof ids, "%s", rtab_str(&t, 0, "ids"));
    rtab_free(&t);
    if (!isfinite(last))
        return rp_fail(r, CCS_EINPUT,
                       "%s: the database has no runs; 'ccsweep run SPEC --db %s' "
                       "adds one",
                       r->o->db, r->o->db);
    /* --run N reports that run alone; by default the latest training run and the
     * latest serving run, each where there is one */
    r->run = isfinite(train) ? (int64_t)train : 0;
    r->srun = isfinite(serve) ? (int64_t)serve : 0;
    if (r->o->run_id > 0) {
        storeq_param par = {.name = ":run", .type = STOREQ_INT, .i = r->o->run_id};
        if ((rc = load_par(r, "SELECT workload FROM runs WHERE run_id = :run", &par, 1, &t)))
            return rc;
        int found = t.nrows > 0, is_serve = found && rtab_is(&t, 0, "workload", "serve");
        rtab_free(&t);
        if (!found)
            return rp_fail(r, CCS_EINPUT, "%s: no run %lld (runs in the database: %s)", r->o->db,
                           (long long)r->o->run_id, ids);
        r->run = is_serve ? 0 : r->o->run_id;
        r->srun = is_serve ? r->o->run_id : 0;
    }
    if (r->srun && (rc = resolve_serve(r)))
        return rc;
    if (!r->run)
        return CCS_OK;
    r->par[0] = (storeq_param){.name = ":run", .type = STOREQ_INT, .i = r->run};
    if ((rc = load(r, "SELECT * FROM runs WHERE run_id = :run", &r->runinfo)))
        return rc;
    if (r->runinfo.nrows == 0)
        return rp_fail(r, CCS_EINPUT, "%s: no run %lld (runs in the database: %s)", r->o->db,
                       (long long)r->run, ids);
    if ((rc = load(r,
                   "SELECT count(*) AS n, coalesce(sum(status = 0), 0) AS ok "
                   "FROM result_codes WHERE run_id = :run",
                   &t)))
        return rc;
    double n = rtab_num(&t, 0, "n"), ok = rtab_num(&t, 0, "ok");
    rtab_free(&t);
    const char *name = rtab_str(&r->runinfo, 0, "name");
    if (!(n > 0))
        return rp_fail(r, CCS_EINPUT,
                       "%s: run %lld ('%s', %s) has no result rows: nothing to "
                       "report",
                       r->o->db, (long long)r->run, name, rtab_str(&r->runinfo, 0, "status"));
    if (!(ok > 0))
        return rp_fail(r, CCS_EINPUT,
                       "%s: run %lld ('%s') has %.0f rows but no plan that fits "
                       "(status ok): nothing to report",
                       r->o->db, (long long)r->run, name, n);
    return CCS_OK;
}

const char *const rp_grp_dims[3] = {"devices", "gbs", "seq"};

static void work_label(const rp *r, const rtab *t, size_t i, char *buf, size_t n)
{
    static const char *const fmt[3] = {", %.0f devices", ", gbs %.0f", ", seq %.0f"};
    size_t k = strlen(buf);
    for (int d = 0; d < 3; d++) {
        double v = rtab_num(t, i, rp_grp_dims[d]);
        if (r->vary[d] && isfinite(v) && k < n) {
            snprintf(buf + k, n - k, fmt[d], v);
            k += strlen(buf + k);
        }
    }
}

void rp_work_label(const rp *r, const rtab *t, size_t i, char *buf, size_t n)
{
    if (n)
        buf[0] = 0;
    work_label(r, t, i, buf, n);
}

void rp_grp_label(const rp *r, size_t g, char *buf, size_t n)
{
    snprintf(buf, n, "%s", rtab_str(&r->grp, g, "model"));
    work_label(r, &r->grp, g, buf, n);
}

int rp_grp_match(const rp *r, size_t g, const rtab *t, size_t i)
{
    if (!rtab_is(t, i, "model", rtab_str(&r->grp, g, "model")))
        return 0;
    for (int d = 0; d < 3; d++)
        if (rtab_col(t, rp_grp_dims[d]) >= 0 &&
            rtab_num(t, i, rp_grp_dims[d]) != rtab_num(&r->grp, g, rp_grp_dims[d]))
            return 0;
    return 1;
}

int rp_same_work(const rp *r, const rtab *t, size_t i, const rtab *u, size_t j)
{
    for (int d = 0; d < 3; d++)
        if (r->vary[d] && rtab_num(t, i, rp_grp_dims[d]) != rtab_num(u, j, rp_grp_dims[d]))
            return 0;
    return 1;
}

/* The run's groups (r->grp) and what varies within a model (r->vary, r->multi,
 * r->gword, r->gnoun). */
static int load_groups(rp *r)
{
    rtab v = {0};
    int rc;
    if ((rc = load(r,
                   "SELECT m.name AS model, m.params, m.layers, m.hidden, g.devices, g.gbs, "
                   "g.seq FROM (SELECT DISTINCT model_id, devices, gbs, seq FROM result_codes "
                   "WHERE run_id = :run) g JOIN models m ON m.model_id = g.model_id "
                   "ORDER BY m.params, m.model_id, g.devices, g.gbs, g.seq",
                   &r->grp)) ||
        (rc = load(r,
                   "SELECT coalesce(max(d), 0) > 1 AS d, coalesce(max(g), 0) > 1 AS g, "
                   "coalesce(max(s), 0) > 1 AS s, coalesce(max(n), 0) > 1 AS n FROM "
                   "(SELECT count(DISTINCT devices) AS d, count(DISTINCT gbs) AS g, "
                   "count(DISTINCT seq) AS s, count(DISTINCT devices || ' ' || gbs || ' ' "
                   "|| seq) AS n FROM result_codes WHERE run_id = :run GROUP BY model_id)",
                   &v)))
        return rc;
    static const char *const word[3] = {" x devices", " x gbs", " x seq"};
    snprintf(r->gword, sizeof r->gword, "model x hardware");
    for (int d = 0; d < 3; d++) {
        r->vary[d] = v.nrows && rtab_num(&v, 0, (const char *[]){"d", "g", "s"}[d]) > 0;
        if (r->vary[d])
            ccs_strlcpy(r->gword + strlen(r->gword), word[d], sizeof r->gword - strlen(r->gword));
    }
    r->multi = v.nrows && rtab_num(&v, 0, "n") > 0;
    rtab_free(&v);
    r->gnoun = r->multi ? "groups" : "pairs";
    size_t k = strlen(r->gword);
    snprintf(r->gword + k, sizeof r->gword - k, " %s", r->gnoun);
    return CCS_OK;
}

int rp_load_layout(rp *r)
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
                   &r->models)) ||
        (rc = load_groups(r)))
        return rc;
    if (r->hwnames.nrows == 0 || r->gens.nrows == 0)
        return rp_fail(r, CCS_EINPUT, "%s: run %lld has no hardware rows", r->o->db,
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
            const char *nm = rtab_str(names[k].t, i, names[k].col);
            if (ccs_name_ok(nm) || (!*nm && !strcmp(names[k].col, "evolution")))
                continue;
            char shown[64];
            report_gp_quote(shown, sizeof shown, nm);
            return rp_fail(r, CCS_EINPUT,
                           "%s: run %lld: %s name %s is not a catalog name (letters, digits, '-', "
                           "'_', '.', at most %d): the database was not written by ccsweep as it "
                           "is; nothing reported",
                           r->o->db, (long long)r->run, names[k].what, shown, CCS_NAME_MAX - 1);
        }
    }
    r->ref = 0;
    if (r->o->hw) {
        size_t i;
        for (i = 0; i < r->hwnames.nrows && strcmp(rp_hw_name(r, i), r->o->hw); i++)
            ;
        if (i == r->hwnames.nrows) {
            ccs_buf b = CCS_BUF_INIT;
            for (size_t j = 0; j < r->hwnames.nrows; j++)
                ccs_buf_printf(&b, "%s%s", j ? ", " : "", rp_hw_name(r, j));
            rc = rp_fail(r, CCS_EINPUT, "--hw: no hardware '%s' in run %lld (it has: %s)", r->o->hw,
                         (long long)r->run, ccs_buf_str(&b));
            ccs_buf_free(&b);
            return rc;
        }
        r->ref = i;
    }
    r->gen_first = rp_gen_at(r, 0);
    r->gen_last = rp_gen_at(r, r->gens.nrows - 1);

    /* fixed TP of the compute/communication plot: 8 when the run has it */
    rtab t = {0};
    if ((rc = load(r,
                   "SELECT tp, count(*) AS n FROM result_codes WHERE run_id = :run "
                   "AND status != 1 AND ccr > 0 GROUP BY tp ORDER BY tp",
                   &t)))
        return rc;
    int *tps = malloc((t.nrows ? t.nrows : 1) * sizeof *tps);
    int64_t *cnt = malloc((t.nrows ? t.nrows : 1) * sizeof *cnt);
    if (!tps || !cnt) {
        free(tps);
        free(cnt);
        rtab_free(&t);
        return rp_fail(r, CCS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < t.nrows; i++) {
        tps[i] = (int)rtab_num(&t, i, "tp");
        cnt[i] = (int64_t)rtab_num(&t, i, "n");
    }
    r->fixed_tp = report_pick_fixed_tp(tps, cnt, t.nrows, 8);
    free(tps);
    free(cnt);
    rtab_free(&t);
    r->par[1] =
        (storeq_param){.name = ":tp", .type = STOREQ_INT, .i = r->fixed_tp ? r->fixed_tp : 8};
    return CCS_OK;
}

int rp_load_queries(rp *r)
{
    int rc;
    for (int p = 0; p < P_N; p++)
        if ((rc = load_query(r, rp_figures[p].query, &r->q[p])))
            return rc;
    if ((rc = load_query(r, "summary", &r->summary)))
        return rc;
    return load_query(r, "comm_class", &r->cls);
}

void rp_free_tables(rp *r)
{
    for (int p = 0; p < P_N; p++)
        rtab_free(&r->q[p]);
    rtab_free(&r->summary);
    rtab_free(&r->cls);
    rtab_free(&r->runinfo);
    rtab_free(&r->hwrows);
    rtab_free(&r->models);
    rtab_free(&r->grp);
    rtab_free(&r->hwnames);
    rtab_free(&r->gens);
    rtab_free(&r->srunfo);
    rp_serve_free(r);
}
