/* report.c - 'ccsweep report': the driver. report_write checks the input and
 * loads the query results (report_data.c), creates the output directory,
 * draws the figures (report_plot.c) and writes report.md (report_md.c); the
 * files share the context rp through report_int.h. The selection of plans
 * lives in the SQL (report_sql.c), so a reader can rerun every number with
 * sqlite3; the report only tabulates, plots and formats. A database may hold
 * training runs and serving runs (runs.workload = 'serve'): the report covers
 * the latest of each (report_serve.c writes the serving section), or the one
 * run --run names. */
#include "report_int.h"

#include "ccsweep/report/report_sql.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---- errors and output files -------------------------------------------------------- */

int rp_fail(rp *r, int rc, const char *fmt, ...)
{
    char msg[sizeof r->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ccs_err_set(r->err, "%s", msg);
    return rc;
}

FILE *rp_open_out(rp *r, const char *dir, const char *name, int *rc)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        *rc = rp_fail(r, CCS_EIO, "%s: cannot write: %s", path, strerror(errno));
    return f;
}

int rp_close_out(rp *r, FILE *f, const char *dir, const char *name)
{
    int bad = ferror(f);
    errno = 0; /* what fclose reports, else the failed write's error when it kept it */
    if (fclose(f) != 0 || bad)
        return rp_fail(r, CCS_EIO, "%s/%s: write failed%s%s", dir, name, errno ? ": " : "",
                       errno ? strerror(errno) : "");
    return CCS_OK;
}

/* ---- the output directory ------------------------------------------------------------ */

static int make_dir(rp *r, const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST) {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            return CCS_OK;
        return rp_fail(r, CCS_EIO, "%s: exists and is not a directory", path);
    }
    return rp_fail(r, CCS_EIO, "%s: cannot create the directory: %s", path, strerror(errno));
}

/* Create DIR (and its parents), DIR/data, DIR/queries. */
static int make_dirs(rp *r)
{
    char tmp[PATH_MAX];
    if (ccs_strlcpy(tmp, r->o->out, sizeof tmp) || strlen(tmp) >= sizeof r->dir)
        return rp_fail(r, CCS_EINPUT, "--out: path too long");
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
        FILE *f = rp_open_out(r, qd, name, &rc);
        if (!f)
            return rc;
        for (const char *const *l = q->lines; *l; l++)
            fputs(*l, f);
        if ((rc = rp_close_out(r, f, qd, name)))
            return rc;
    }
    return CCS_OK;
}

/* ---- driver --------------------------------------------------------------------------- */

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
    /* every input check comes before the first file is written */
    if ((rc = rp_resolve_run(&r)) || (r.run && (rc = rp_load_layout(&r))) ||
        (rc = rp_find_gnuplot(&r)) || (r.run && (rc = rp_load_queries(&r))) ||
        (r.srun && (rc = rp_serve_load(&r))) || (rc = make_dirs(&r)) || (rc = write_queries(&r)))
        goto done;
    if (log && r.run)
        fprintf(log, "ccsweep report: run %lld ('%s') of %s -> %s\n", (long long)r.run,
                rtab_str(&r.runinfo, 0, "name"), o->db, r.dir);
    if (log && r.srun)
        fprintf(log, "ccsweep report: serving run %lld ('%s') of %s -> %s\n", (long long)r.srun,
                rtab_str(&r.srunfo, 0, "name"), o->db, r.dir);
    if ((r.run && (rc = rp_plot_all(&r))) || (r.srun && (rc = rp_serve_plot(&r))))
        goto done;
    rc = rp_write_md(&r);
done:
    rp_free_tables(&r);
    storeq_close(r.db);
    return rc;
}
