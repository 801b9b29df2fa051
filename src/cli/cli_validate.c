/* cli_validate.c - 'ccsweep validate': project measured Transformer-layer
 * iterations (tools/groundtruth) from a calibration profile (tools/profiler)
 * and report the error, split into configurations inside the profiled range
 * and those that extrapolate; plus the profiling-cost reduction against
 * measuring every scenario of a sweep end to end. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/sweep/grid.h"
#include "ccsweep/util/noise.h"
#include "ccsweep/cost/opmodel.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define V_MAX_CFG 256
/* An operator this close beyond the largest profiled work is at the edge of
 * the measured range, not an extrapolation. */
#define V_EXTRAP_TOL 1.10
#define V_MAX_COLS 64

/* Layer regions the ground truth times, in its CSV's column names. */
static const int layer_regions[] = {CCS_RG_FWD_ATTN,   CCS_RG_FWD_ATTN_TP, CCS_RG_FWD_MLP,
                                    CCS_RG_FWD_MLP_TP, CCS_RG_BWD_MLP,     CCS_RG_BWD_MLP_TP,
                                    CCS_RG_BWD_ATTN,   CCS_RG_BWD_ATTN_TP};
#define V_NREG ((int)(sizeof layer_regions / sizeof layer_regions[0]))

typedef struct vcfg {
    char name[64];
    int hidden, heads, ffn, seq, mbs, tp, layers;
    double meas, meas_rg[V_NREG]; /* s per iteration; region columns < 0 when absent */
    double proj, lo, hi, extrap, proj_rg[V_NREG];
} vcfg;
/* ---- options ------------------------------------------------------------------ */

typedef struct validate_args {
    const char *profile, *measured, *hw_entry, *hw, *sweep;
    cli_catalogs catalogs;
    long iters;
    double max_mean, max_err; /* as given, in percent; 0: no target */
    int json, regions, allow_busy;
    char guess[4096]; /* the --hw-entry guessed from --profile */
} validate_args;

/* clang-format off */
#define A validate_args
static const cli_opt validate_opts[] = {
    CLI_O_STR("profile", "CSV", A, profile,
              "calibration profile (tools/profiler; format in sweeps/README.md)"),
    CLI_O_STR("measured", "CSV", A, measured, "ground-truth measurements"),
    CLI_O_STR("hw-entry", "YAML", A, hw_entry,
              "hardware description of the measured machine, in the catalog\n"
              "format (tools/profiler --hw-out); default: the profile's name\n"
              "with .yaml instead of .csv"),
    CLI_O_STR("hw", "NAME", A, hw,
              "a catalog hardware entry instead (or the entry of that name\n"
              "in --hw-entry)"),
    CLI_O_CATALOG(A, catalogs, "catalog overlay for --hw and --sweep (repeatable)"),
    {.name = "sweep", .kind = CLI_STR, .arg = "SPEC", CLI_AT(A, sweep),
     .help = "also report the profiling-cost reduction: the wall time to\n"
             "measure every scenario of this sweep end to end (projected,\n"
             "--iters iterations each, default 10) over the profiling time"},
    {.name = "iters", .kind = CLI_INT, CLI_AT(A, iters), .min = 1, .max = 1000000},
    {.name = "max-mean", .kind = CLI_REAL, .arg = "PCT", CLI_AT(A, max_mean), .fmax = HUGE_VAL,
     .expect = "a positive percentage",
     .help = "exit 2 when the mean absolute error exceeds PCT"},
    {.name = "max-err", .kind = CLI_REAL, .arg = "PCT", CLI_AT(A, max_err), .fmax = HUGE_VAL,
     .expect = "a positive percentage",
     .help = "exit 2 when any configuration's error exceeds PCT"},
    CLI_O_FLAG("regions", A, regions, "also print measured vs projected time per region"),
    CLI_O_FLAG("json", A, json, "one JSON object instead of the table"),
    CLI_O_FLAG("allow-busy", A, allow_busy,
               "report the errors even when the measurements were disturbed"),
    CLI_O_HELP,
};
#undef A
/* clang-format on */

static void validate_notes(FILE *f)
{
    fprintf(f,
            "\nInterference: before measuring, both tools check how much CPU other processes\n"
            "use (the pre-check: busy when fewer cores are idle than ranks run); they time a\n"
            "probe GEMM between their phases and rounds and measure again what ran while it\n"
            "was slow; their files record the pre-check, the probes and a verdict. When a\n"
            "pre-check or a verdict says the machine was busy, or the two tools' probes differ\n"
            "by more than %.0f%% (one ran under load the other did not see), the timings do not\n"
            "measure the model: validate says so and exits 3 instead of reporting an error.\n"
            "An operator counts as extrapolated when its work exceeds the largest profiled\n"
            "by more than %.0f%% (within that, the curve's band covers it).\n\n"
            "Exit status: 0 ok, 1 usage or input error, 2 runtime failure or a missed target,\n"
            "3 the machine was too busy to measure (see above).\n",
            100 * NOISE_TOL, 100 * (V_EXTRAP_TOL - 1));
}

static const cli_cmd validate_cmd = {
    .name = "validate",
    .synopsis = "ccsweep validate --profile CSV --measured CSV [--hw-entry YAML | --hw NAME]\n"
                "                        [--catalog PATH] [--sweep SPEC.yaml] [--iters N]\n"
                "                        [--max-mean PCT] [--max-err PCT] [--regions] [--json]\n"
                "                        [--allow-busy]",
    .about = "Projects every configuration of a ground-truth CSV (tools/groundtruth: one row\n"
             "per configuration, times per region and total_s for all layers of one\n"
             "micro-batch, fp32, ffn given, GPT-style layers with dropout) from the operator\n"
             "models of a calibration profile (tools/profiler), and prints projected vs\n"
             "measured time and error per configuration, then mean and max absolute error\n"
             "for the configurations whose operators lie inside the profiled range and for\n"
             "those that extrapolate beyond it.",
    .opts = validate_opts,
    .n_opts = sizeof validate_opts / sizeof validate_opts[0],
    .col = 17,
    .notes = validate_notes,
};

/* CLI_OK, CLI_BAD (message printed) or CLI_DONE (--help). */
static int parse_validate_args(int argc, char **argv, validate_args *a)
{
    memset(a, 0, sizeof *a);
    a->iters = 10;
    int first, rc = cli_opt_parse(&validate_cmd, argc, argv, a, stderr, &first);
    if (rc != CLI_OK)
        return rc;
    if (first < argc || !a->profile || !a->measured) {
        cli_fail("validate", "%s",
                 first < argc ? "unexpected argument" : "--profile and --measured are required");
        cli_opt_help(&validate_cmd, stderr);
        return CLI_BAD;
    }
    if (!a->hw_entry && !a->hw) {
        size_t l = strlen(a->profile);
        if (!(l > 4 && l < sizeof a->guess - 1 && !strcmp(a->profile + l - 4, ".csv")))
            return cli_fail("validate", "give --hw-entry YAML or --hw NAME");
        snprintf(a->guess, sizeof a->guess, "%.*s.yaml", (int)(l - 4), a->profile);
        a->hw_entry = a->guess;
    }
    return CLI_OK;
}

/* ---- measured CSV ------------------------------------------------------------ */

static int split_csv(char *line, char **f, int max)
{
    int n = 0;
    for (char *p = line;;) {
        char *c = strchr(p, ',');
        if (n < max)
            f[n] = p;
        n++;
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    for (int i = 0; i < n && i < max; i++) {
        char *s = f[i];
        while (*s == ' ' || *s == '\t')
            s++;
        char *e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
            *--e = '\0';
        f[i] = s;
    }
    return n;
}

/* "# probe_s:", "# interference:" and "# precheck:" header values of a
 * ground truth. */
typedef struct vnoise {
    double probe[NOISE_MAX_PROBES];
    int nprobe;
    char verdict[256];
    char precheck[256];
} vnoise;

/* The value of header line s ("# key: value") into out, without the newline. */
static void header_value(const char *s, size_t klen, char *out, size_t n)
{
    ccs_strlcpy(out, s + klen + strspn(s + klen, " "), n);
    out[strcspn(out, "\r\n")] = '\0';
}

static int read_measured(const char *path, vcfg *c, int *n, double *wall, vnoise *nz, ccs_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        ccs_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return CCS_EINPUT;
    }
    static const char *const need[] = {"config", "hidden", "heads",  "ffn",    "seq",
                                       "mbs",    "tp",     "layers", "total_s"};
    enum { NNEED = 9 };
    int col[NNEED], rcol[V_NREG], ncol = 0, ln = 0, rc = CCS_OK;
    char line[4096], *fl[V_MAX_COLS];
    *n = 0;
    *wall = 0;
    while (rc == CCS_OK && fgets(line, sizeof line, f)) {
        ln++;
        char *s = line + strspn(line, " \t");
        if (*s == '#') {
            sscanf(s, "# wall_s: %lf", wall);
            if (!strncmp(s, "# probe_s:", 10))
                nz->nprobe = noise_parse(s + 10, nz->probe, NOISE_MAX_PROBES);
            if (!strncmp(s, "# interference:", 15))
                header_value(s, 15, nz->verdict, sizeof nz->verdict);
            if (!strncmp(s, "# precheck:", 11))
                header_value(s, 11, nz->precheck, sizeof nz->precheck);
            continue;
        }
        if (*s == '\n' || *s == '\r' || !*s)
            continue;
        int nf = split_csv(s, fl, V_MAX_COLS);
        if (!ncol) { /* header */
            ncol = nf;
            for (int i = 0; i < NNEED; i++) {
                col[i] = -1;
                for (int j = 0; j < nf && j < V_MAX_COLS; j++)
                    if (!strcmp(fl[j], need[i]))
                        col[i] = j;
                if (col[i] < 0) {
                    ccs_err_set(err, "%s:%d: header lacks the column '%s'", path, ln, need[i]);
                    rc = CCS_EINPUT;
                }
            }
            for (int r = 0; r < V_NREG; r++) {
                rcol[r] = -1;
                for (int j = 0; j < nf && j < V_MAX_COLS; j++)
                    if (!strcmp(fl[j], region_name(layer_regions[r])))
                        rcol[r] = j;
            }
            continue;
        }
        if (nf != ncol) {
            ccs_err_set(err, "%s:%d: expected %d fields as the header, got %d", path, ln, ncol, nf);
            rc = CCS_EINPUT;
            break;
        }
        if (*n == V_MAX_CFG) {
            ccs_err_set(err, "%s:%d: more than %d configurations", path, ln, V_MAX_CFG);
            rc = CCS_EINPUT;
            break;
        }
        vcfg *v = &c[(*n)++];
        memset(v, 0, sizeof *v);
        ccs_strlcpy(v->name, fl[col[0]], sizeof v->name);
        int *ints[] = {&v->hidden, &v->heads, &v->ffn, &v->seq, &v->mbs, &v->tp, &v->layers};
        for (int i = 1; i < NNEED && rc == CCS_OK; i++) {
            char *e;
            errno = 0;
            double x = strtod(fl[col[i]], &e);
            int is_int = i < NNEED - 1;
            if (!*fl[col[i]] || *e || errno || !(x > 0) || (is_int && (x != floor(x) || x > 1e9))) {
                ccs_err_set(err, "%s:%d: field '%s': expected a positive %s, got '%s'", path, ln,
                            need[i], is_int ? "integer" : "number", fl[col[i]]);
                rc = CCS_EINPUT;
            } else if (is_int) {
                *ints[i - 1] = (int)x;
            } else {
                v->meas = x;
            }
        }
        for (int r = 0; r < V_NREG; r++) {
            v->meas_rg[r] = -1;
            if (rcol[r] >= 0) {
                char *e;
                double x = strtod(fl[rcol[r]], &e);
                if (*fl[rcol[r]] && !*e && x >= 0)
                    v->meas_rg[r] = x;
            }
        }
    }
    fclose(f);
    if (rc == CCS_OK && *n == 0) {
        ccs_err_set(err, "%s: no configurations", path);
        rc = CCS_EINPUT;
    }
    return rc;
}

/* ---- projection -------------------------------------------------------------- */

/* Project v's layers on hw with the operator models om: regions_build, then
 * cost_op per layer operator; the layer's regions compose serially (no
 * overlap, one micro-batch). Returns a plan_check reason, CCS_R_OK when done. */
static int project(const vcfg *v, const ccs_hw *hw, const ccs_opmodel *om, int dtype, vcfg *out)
{
    ccs_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%.40s", v->name);
    m.layers = v->layers;
    m.hidden = v->hidden;
    m.heads = v->heads;
    m.kv_heads = v->heads;
    m.ffn = v->ffn;
    m.vocab = 128 * v->tp; /* the head is not part of the measurement */
    m.bias = 1;
    m.tied = 1;
    ccs_plan p;
    plan_defaults(&p);
    p.tp = v->tp;
    p.pp = 1;
    p.dp = 1;
    p.devices = v->tp;
    p.mbs = p.gbs = v->mbs;
    p.seq = v->seq;
    p.dtype = (int8_t)dtype;
    int reason = plan_check(&m, hw, &p);
    if (reason != CCS_R_OK)
        return reason;
    static ccs_oplist ops; /* large; validate is single-threaded */
    regions_build(&m, &p, hw_scaleup(hw), &ops);
    ccs_cost c;
    cost_init(&c, hw, om, NULL, 0, &p);
    out->proj = out->lo = out->hi = out->extrap = 0;
    memset(out->proj_rg, 0, sizeof out->proj_rg);
    for (int i = 0; i < ops.n; i++) {
        const ccs_op *op = &ops.ops[i];
        int r = 0;
        while (r < V_NREG && layer_regions[r] != op->region)
            r++;
        if (r == V_NREG)
            continue;
        ccs_optime t;
        cost_op(&c, op, &t);
        double k = op->count * v->layers;
        out->proj += t.t * k;
        out->lo += t.lo * k;
        out->hi += t.hi * k;
        out->proj_rg[r] += t.t * k;
        if (t.extrap > out->extrap)
            out->extrap = t.extrap;
    }
    return CCS_OK;
}

/* ---- profiling-cost reduction ----------------------------------------------------- */

typedef struct sweepcost {
    int64_t scenarios, measured; /* in the grid; kept, valid and fitting memory */
    double wall;                 /* s to measure the kept ones end to end */
} sweepcost;

static int sweep_cost(const char *spec_path, const ccs_catalog *cat, int iters, sweepcost *out,
                      ccs_err *err)
{
    memset(out, 0, sizeof *out);
    ccs_spec *s = spec_load(spec_path, cat, err);
    if (!s)
        return CCS_EINPUT;
    ccs_grid *g = grid_new(s, err);
    if (!g) {
        spec_free(s);
        return CCS_EINPUT;
    }
    out->scenarios = grid_count(g);
    for (int64_t i = 0; i < out->scenarios; i++) {
        ccs_record rec;
        if (grid_eval(g, i, &rec, NULL) != 1 || rec.r.status != CCS_ST_OK)
            continue;
        out->measured++;
        out->wall += iters * rec.r.t_iter;
    }
    grid_free(g);
    spec_free(s);
    return CCS_OK;
}

/* ---- output ------------------------------------------------------------------ */

typedef struct stats {
    int n;
    double sum, max;
} stats;

static void acc(stats *s, double e)
{
    s->n++;
    s->sum += fabs(e);
    s->max = fabs(e) > s->max ? fabs(e) : s->max;
}

static double mean(const stats *s)
{
    return s->n ? s->sum / s->n : 0;
}

static json_t *jstats(const stats *s)
{
    return s->n ? json_pack("{s:i,s:f,s:f}", "configs", s->n, "mean_abs_error", mean(s),
                            "max_abs_error", s->max)
                : json_pack("{s:i,s:n,s:n}", "configs", 0, "mean_abs_error", "max_abs_error");
}

static double rel_err(double proj, double meas)
{
    return (proj - meas) / meas;
}

/* ---- resolve -------------------------------------------------------------------- */

/* What a validation reads: the hardware, the profile, the measurements. */
typedef struct validate_job {
    ccs_catalog *cat, *own; /* the layered catalog (--hw, --sweep); the --hw-entry file's */
    const ccs_hw *hw;       /* borrowed from one of them */
    ccs_opmodel *om;
    vcfg *cf; /* ncf measured configurations */
    int ncf;
    double gt_wall, prof_wall; /* s the measurements and the profiling took; 0 unknown */
    vnoise nz;                 /* the measurements' interference probes */
    sweepcost sc;              /* of --sweep */
} validate_job;

/* 0, or 1 with the message printed; j owns what it holds either way
 * (validate_job_free). */
static int resolve_validate(const validate_args *a, validate_job *j)
{
    static vcfg cf[V_MAX_CFG];
    ccs_err err;
    memset(j, 0, sizeof *j);
    j->cf = cf;
    if ((a->hw || a->sweep) && !(j->cat = cli_catalog("validate", &a->catalogs)))
        return 1;
    if (a->hw_entry) {
        j->own = catalog_new();
        if (!j->own || catalog_load_hardware(j->own, a->hw_entry, &err) != CCS_OK)
            return cli_fail("validate", "--hw-entry: %s", j->own ? err.msg : "out of memory");
        j->hw = a->hw ? catalog_hw(j->own, a->hw) : catalog_hw_at(j->own, 0);
    } else {
        j->hw = catalog_hw(j->cat, a->hw);
    }
    if (!j->hw)
        return cli_fail("validate", "--hw: unknown hardware '%s'", a->hw);
    if (!(j->om = opmodel_load(a->profile, &err)))
        return cli_fail("validate", "--profile: %s", err.msg);
    if (read_measured(a->measured, j->cf, &j->ncf, &j->gt_wall, &j->nz, &err) != CCS_OK)
        return cli_fail("validate", "--measured: %s", err.msg);
    if (a->sweep && sweep_cost(a->sweep, j->cat, (int)a->iters, &j->sc, &err) != CCS_OK)
        return cli_fail("validate", "--sweep: %s", err.msg);
    const char *pw = opmodel_meta(j->om, "profiling_wall_s");
    j->prof_wall = pw ? atof(pw) : 0;
    return 0;
}

static void validate_job_free(validate_job *j)
{
    opmodel_free(j->om);
    catalog_free(j->own);
    catalog_free(j->cat);
}

/* ---- interference ---------------------------------------------------------------- */

/* Whether the measurements measured the model, and if not, why. */
typedef struct vbusy {
    noise_verdict vp, vm; /* the profiler's probes, the ground truth's */
    char why[5][448];
    int nwhy; /* > 0: busy */
} vbusy;

/* Interference: either tool's pre-check (other processes' CPU use before it
 * started), either tool's own verdict from its probes, and whether both ran
 * under the same load (their probes agree). Files without them (older tools,
 * or imported) are taken as they are. */
static void judge_busy(const validate_args *a, const validate_job *j, vbusy *b)
{
    double pprobe[NOISE_MAX_PROBES];
    const char *pp = opmodel_meta(j->om, "probe_s"), *pv = opmodel_meta(j->om, "interference");
    int npp = pp ? noise_parse(pp, pprobe, NOISE_MAX_PROBES) : -1;
    noise_verdict *vp = &b->vp, *vm = &b->vm;
    noise_judge(pprobe, npp > 0 ? npp : 0, NOISE_TOL, vp);
    noise_judge(j->nz.probe, j->nz.nprobe > 0 ? j->nz.nprobe : 0, NOISE_TOL, vm);
    b->nwhy = 0;
    const char *pc = opmodel_meta(j->om, "precheck");
    if (pc && !strncmp(pc, "busy", 4))
        snprintf(b->why[b->nwhy++], sizeof b->why[0],
                 "before profiling (%s) the pre-check found %s", a->profile,
                 pc + 4 + strspn(pc + 4, ": "));
    if (!strncmp(j->nz.precheck, "busy", 4))
        snprintf(b->why[b->nwhy++], sizeof b->why[0],
                 "before measuring the layers (%s) the pre-check found %s", a->measured,
                 j->nz.precheck + 4 + strspn(j->nz.precheck + 4, ": "));
    if ((pv && !strncmp(pv, "busy", 4)) || vp->busy)
        snprintf(b->why[b->nwhy++], sizeof b->why[0],
                 "while profiling (%s) the probe ran a median %.0f%% and at worst %.0f%% slower "
                 "than its fastest",
                 a->profile, 100 * noise_slowdown(vp->median, vp->fastest), 100 * vp->slowdown);
    if (!strncmp(j->nz.verdict, "busy", 4) || vm->busy)
        snprintf(b->why[b->nwhy++], sizeof b->why[0],
                 "while measuring the layers (%s) the probe ran a median %.0f%% and at worst "
                 "%.0f%% slower than its fastest",
                 a->measured, 100 * noise_slowdown(vm->median, vm->fastest), 100 * vm->slowdown);
    double mism = vp->n && vm->n ? noise_mismatch(vp->median, vm->median) : 0;
    if (mism > NOISE_TOL)
        snprintf(b->why[b->nwhy++], sizeof b->why[0],
                 "the probe took %.3g ms while profiling and %.3g ms while measuring the layers "
                 "(%.0f%% apart): the two ran under different load",
                 1e3 * vp->median, 1e3 * vm->median, 100 * mism);
}

/* Say the machine was too busy (and as JSON when json is set); returns 3. */
static int print_busy(const vbusy *b, int json)
{
    if (json) {
        json_t *o = json_object(), *arr = json_array();
        for (int i = 0; i < b->nwhy; i++)
            json_array_append_new(arr, json_string(b->why[i]));
        json_object_set_new(o, "busy", json_true());
        json_object_set_new(o, "reasons", arr);
        json_dumpf(o, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(o);
    }
    fprintf(stderr, "ccsweep validate: the machine was too busy to measure:");
    for (int i = 0; i < b->nwhy; i++)
        fprintf(stderr, "%s %s", i ? ";" : "", b->why[i]);
    fprintf(stderr, ".\nOther work slowed the measurements, so their difference from the "
                    "projection would be load, not model error: no error is reported.\n"
                    "Measure again on a quiet machine, or add --allow-busy to see the "
                    "numbers anyway.\n");
    return 3;
}

/* ---- compute ------------------------------------------------------------------- */

/* The errors of the projections against the measurements. */
typedef struct verrors {
    stats in, ex, all;       /* inside the profiled range, extrapolated, all */
    double lam0, la, lb, lc; /* the profile's fp32 GEMM terms, when have_terms */
    int have_terms;
    double max_mean, max_err; /* the targets as fractions; <= 0: none */
    int missed;               /* a target was missed */
} verrors;

/* Project every configuration of j and gather the errors. 0, or 1 with the
 * message printed when a configuration is no valid plan. */
static int compute_validate(const validate_args *a, validate_job *j, verrors *e)
{
    memset(e, 0, sizeof *e);
    e->max_mean = a->max_mean > 0 ? a->max_mean / 100 : -1;
    e->max_err = a->max_err > 0 ? a->max_err / 100 : -1;
    e->have_terms = opmodel_gemm_terms(j->om, CCS_FP32, &e->lam0, &e->la, &e->lb, &e->lc) == 0;
    for (int i = 0; i < j->ncf; i++) {
        vcfg *v = &j->cf[i];
        int reason = project(v, j->hw, j->om, CCS_FP32, v);
        if (reason != CCS_R_OK)
            return cli_fail("validate", "%s: configuration '%s': %s", a->measured, v->name,
                            plan_reason_text(reason));
        double err = rel_err(v->proj, v->meas);
        acc(v->extrap > V_EXTRAP_TOL ? &e->ex : &e->in, err);
        acc(&e->all, err);
    }
    e->missed = (e->max_mean > 0 && mean(&e->all) > e->max_mean) ||
                (e->max_err > 0 && e->all.max > e->max_err);
    return 0;
}

/* ---- JSON ------------------------------------------------------------------------- */

/* Print the validation as one JSON object. Returns the exit status: 0, or 2
 * when a target was missed or the output failed. */
static int print_validate_json(const validate_args *a, const validate_job *j, const verrors *e,
                               int busy)
{
    int rc = e->missed ? 2 : 0;
    json_t *o = json_object(), *arr = json_array();
    for (int i = 0; o && arr && i < j->ncf; i++) {
        const vcfg *v = &j->cf[i];
        json_t *c = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:o}", "config",
                              v->name, "hidden", v->hidden, "heads", v->heads, "ffn", v->ffn, "seq",
                              v->seq, "mbs", v->mbs, "tp", v->tp, "layers", v->layers, "measured_s",
                              v->meas, "projected_s", v->proj, "projected_lo_s", v->lo,
                              "projected_hi_s", v->hi, "error", rel_err(v->proj, v->meas),
                              "extrapolation", v->extrap > 0 ? json_real(v->extrap) : json_null());
        json_t *rg = json_object();
        for (int r = 0; c && rg && r < V_NREG; r++)
            json_object_set_new(
                rg, region_name(layer_regions[r]),
                json_pack("{s:o,s:f}", "measured_s",
                          v->meas_rg[r] >= 0 ? json_real(v->meas_rg[r]) : json_null(),
                          "projected_s", v->proj_rg[r]));
        json_object_set_new(c, "regions", rg);
        json_array_append_new(arr, c);
    }
    const sweepcost *sc = &j->sc;
    double prof_wall = j->prof_wall;
    json_object_set_new(o, "profile", json_string(a->profile));
    json_object_set_new(o, "measured", json_string(a->measured));
    json_object_set_new(o, "hardware", json_string(j->hw->name));
    json_object_set_new(o, "configs", arr);
    json_object_set_new(o, "inside", jstats(&e->in));
    json_object_set_new(o, "extrapolated", jstats(&e->ex));
    json_object_set_new(o, "all", jstats(&e->all));
    json_object_set_new(o, "profiling_wall_s", prof_wall > 0 ? json_real(prof_wall) : json_null());
    json_object_set_new(o, "measured_wall_s", j->gt_wall > 0 ? json_real(j->gt_wall) : json_null());
    if (a->sweep)
        json_object_set_new(
            o, "sweep",
            json_pack("{s:s,s:I,s:I,s:i,s:f,s:o}", "spec", a->sweep, "scenarios",
                      (json_int_t)sc->scenarios, "measurable", (json_int_t)sc->measured, "iters",
                      (int)a->iters, "measure_wall_s", sc->wall, "reduction",
                      prof_wall > 0 ? json_real(sc->wall / prof_wall) : json_null()));
    json_object_set_new(o, "pass", json_boolean(rc == 0));
    json_object_set_new(o, "busy", json_boolean(busy));
    json_object_set_new(o, "extrapolation_tolerance", json_real(V_EXTRAP_TOL));
    if (e->have_terms)
        json_object_set_new(o, "gemm_terms",
                            json_pack("{s:f,s:f,s:f,s:f}", "per_call", e->lam0, "a", e->la, "b",
                                      e->lb, "c", e->lc));
    if (json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(8)) != 0)
        rc = 2;
    fputc('\n', stdout);
    json_decref(o);
    return rc;
}

/* ---- text ------------------------------------------------------------------------- */

/* The table of configurations and the error summary. */
static void print_configs(const validate_job *j, const verrors *e)
{
    printf("%-14s %6s %5s %5s %4s %3s %3s %11s %11s %23s %8s %7s\n", "config", "hidden", "heads",
           "seq", "mbs", "tp", "L", "measured s", "projected s", "band s", "error", "extrap");
    for (int i = 0; i < j->ncf; i++) {
        const vcfg *v = &j->cf[i];
        char ext[16] = "-";
        if (v->extrap > 0) /* 1.04x is at the edge, 1.3x beyond: two decimals below 10x */
            snprintf(ext, sizeof ext, v->extrap < 10 ? "%.2fx" : "%.1fx", v->extrap);
        printf("%-14s %6d %5d %5d %4d %3d %3d %11.4f %11.4f  [%9.4f, %9.4f] %+7.1f%% %7s\n",
               v->name, v->hidden, v->heads, v->seq, v->mbs, v->tp, v->layers, v->meas, v->proj,
               v->lo, v->hi, 100 * rel_err(v->proj, v->meas), ext);
    }
    printf("(extrap: an operator's work over the largest profiled; above %.2fx the "
           "configuration counts as extrapolated)\n",
           V_EXTRAP_TOL);
    const struct {
        const char *label;
        const stats *s;
    } rows[] = {{"inside the profiled range", &e->in}, {"extrapolated", &e->ex}, {"all", &e->all}};
    for (int i = 0; i < 3; i++) {
        if (rows[i].s->n)
            printf("%-26s %2d configs: mean |error| %5.1f%%, max |error| %5.1f%%\n", rows[i].label,
                   rows[i].s->n, 100 * mean(rows[i].s), 100 * rows[i].s->max);
        else
            printf("%-26s %2d configs\n", rows[i].label, 0);
    }
}

/* --regions: measured and projected time per region, and the profile's curves. */
static void print_regions(const validate_job *j)
{
    printf("\nper region (all layers, one micro-batch): measured / projected s\n%-14s", "config");
    for (int r = 0; r < V_NREG; r++)
        printf(" %19s", region_name(layer_regions[r]));
    printf("\n");
    for (int i = 0; i < j->ncf; i++) {
        printf("%-14s", j->cf[i].name);
        for (int r = 0; r < V_NREG; r++)
            printf(" %9.4f/%9.4f", j->cf[i].meas_rg[r], j->cf[i].proj_rg[r]);
        printf("\n");
    }
    printf("\noperator curves of the profile:\n");
    opmodel_describe(j->om, stdout);
}

/* Print the validation as text. Returns the exit status: 0, or 2 when a
 * target was missed. */
static int print_validate_text(const validate_args *a, const validate_job *j, const verrors *e,
                               const vbusy *b)
{
    int busy = b->nwhy > 0;
    const noise_verdict *vp = &b->vp, *vm = &b->vm;
    printf("validation of %s against %s on %s\n", a->profile, a->measured, j->hw->name);
    print_configs(j, e);
    if (a->regions)
        print_regions(j);
    if (e->have_terms && e->la == 0 && e->lb == 0 && e->lc == 0)
        printf("\nGEMM shape terms (fp32): none fitted - the profile's GEMM timings do not "
               "separate operand traffic from FLOPs (too few points, or disturbed by other "
               "load); FLOPs alone are used\n");
    else if (e->have_terms)
        printf("\nGEMM shape terms (fp32), FLOP equivalents: %.3g per call, %.3g per A, %.3g "
               "per B, %.3g per C element\n",
               e->lam0, e->la, e->lb, e->lc);
    if (vp->n || vm->n)
        printf("interference: probe median %.3g ms profiling (%d probes, slowest +%.0f%%), "
               "%.3g ms measuring layers (%d probes, slowest +%.0f%%)%s\n",
               1e3 * vp->median, vp->n, 100 * vp->slowdown, 1e3 * vm->median, vm->n,
               100 * vm->slowdown, busy ? ": BUSY" : ": quiet");
    printf("\nprofiling wall time: ");
    if (j->prof_wall > 0)
        printf("%.1f s (%d measurements, %d curves)\n", j->prof_wall, opmodel_rows(j->om),
               opmodel_curves(j->om));
    else
        printf("unknown (the profile has no 'profiling_wall_s' comment)\n");
    if (j->gt_wall > 0)
        printf("measuring these %d configurations end to end took %.1f s\n", j->ncf, j->gt_wall);
    if (a->sweep) {
        const sweepcost *sc = &j->sc;
        printf("sweep %s: %lld scenarios, %lld measurable (valid, fit memory); measuring each\n"
               "  end to end (%ld iterations) would take %.4g s = %.4g h (projected)",
               a->sweep, (long long)sc->scenarios, (long long)sc->measured, a->iters, sc->wall,
               sc->wall / 3600);
        if (j->prof_wall > 0)
            printf(" -> profiling-cost reduction %.0fx\n", sc->wall / j->prof_wall);
        else
            printf("\n");
    }
    if (e->max_mean > 0 || e->max_err > 0)
        printf("target: mean |error| <= %.0f%%, every configuration <= %.0f%%: %s\n",
               100 * (e->max_mean > 0 ? e->max_mean : HUGE_VAL),
               100 * (e->max_err > 0 ? e->max_err : HUGE_VAL), e->missed ? "MISSED" : "met");
    return e->missed ? 2 : 0;
}

/* ---- the command ------------------------------------------------------------------ */

int cli_validate(int argc, char **argv)
{
    static validate_args a; /* large: the guessed --hw-entry path */
    int rc = parse_validate_args(argc, argv, &a);
    if (rc != CLI_OK)
        return rc == CLI_DONE ? 0 : 1;
    validate_job j;
    vbusy b;
    verrors e;
    rc = resolve_validate(&a, &j);
    if (rc == 0)
        judge_busy(&a, &j, &b);
    if (rc == 0 && b.nwhy > 0 && !a.allow_busy)
        rc = print_busy(&b, a.json);
    if (rc == 0 && b.nwhy > 0 && !a.json)
        printf("warning (--allow-busy): the machine was too busy to measure: %s; the errors "
               "below include that load\n",
               b.why[0]);
    if (rc == 0)
        rc = compute_validate(&a, &j, &e);
    if (rc == 0)
        rc = a.json ? print_validate_json(&a, &j, &e, b.nwhy > 0)
                    : print_validate_text(&a, &j, &e, &b);
    validate_job_free(&j);
    return rc;
}
