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
#include <getopt.h>
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

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ccsweep validate --profile CSV --measured CSV [--hw-entry YAML | --hw NAME]\n"
            "                        [--catalog PATH] [--sweep SPEC.yaml] [--iters N]\n"
            "                        [--max-mean PCT] [--max-err PCT] [--regions] [--json]\n"
            "                        [--allow-busy]\n\n"
            "Projects every configuration of a ground-truth CSV (tools/groundtruth: one row\n"
            "per configuration, times per region and total_s for all layers of one\n"
            "micro-batch, fp32, ffn given, GPT-style layers with dropout) from the operator\n"
            "models of a calibration profile (tools/profiler), and prints projected vs\n"
            "measured time and error per configuration, then mean and max absolute error\n"
            "for the configurations whose operators lie inside the profiled range and for\n"
            "those that extrapolate beyond it.\n\n"
            "  --profile CSV     calibration profile (tools/profiler; format in sweeps/README.md)\n"
            "  --measured CSV    ground-truth measurements\n"
            "  --hw-entry YAML   hardware description of the measured machine, in the catalog\n"
            "                    format (tools/profiler --hw-out); default: the profile's name\n"
            "                    with .yaml instead of .csv\n"
            "  --hw NAME         a catalog hardware entry instead (or the entry of that name\n"
            "                    in --hw-entry)\n"
            "  --catalog PATH    catalog overlay for --hw and --sweep (repeatable)\n"
            "  --sweep SPEC      also report the profiling-cost reduction: the wall time to\n"
            "                    measure every scenario of this sweep end to end (projected,\n"
            "                    --iters iterations each, default 10) over the profiling time\n"
            "  --max-mean PCT    exit 2 when the mean absolute error exceeds PCT\n"
            "  --max-err PCT     exit 2 when any configuration's error exceeds PCT\n"
            "  --regions         also print measured vs projected time per region\n"
            "  --json            one JSON object instead of the table\n"
            "  --allow-busy      report the errors even when the measurements were disturbed\n\n"
            "Interference: both tools time a probe GEMM between their phases and rounds and\n"
            "measure again what ran while it was slow; their files record the probes and a\n"
            "verdict. When either says the machine was busy, or the two tools' probes differ\n"
            "by more than %.0f%% (one ran under load the other did not see), the timings do not\n"
            "measure the model: validate says so and exits 3 instead of reporting an error.\n"
            "An operator counts as extrapolated when its work exceeds the largest profiled\n"
            "by more than %.0f%% (within that, the curve's band covers it).\n\n"
            "Exit status: 0 ok, 1 usage or input error, 2 runtime failure or a missed target,\n"
            "3 the machine was too busy to measure (see above).\n",
            100 * NOISE_TOL, 100 * (V_EXTRAP_TOL - 1));
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

/* "# probe_s:" and "# interference:" header values of a ground truth. */
typedef struct vnoise {
    double probe[NOISE_MAX_PROBES];
    int nprobe;
    char verdict[256];
} vnoise;

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
            if (!strncmp(s, "# interference:", 15)) {
                ccs_strlcpy(nz->verdict, s + 15 + strspn(s + 15, " "), sizeof nz->verdict);
                nz->verdict[strcspn(nz->verdict, "\r\n")] = '\0';
            }
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

enum {
    O_PROFILE = 256,
    O_MEASURED,
    O_HWENTRY,
    O_HW,
    O_CATALOG,
    O_SWEEP,
    O_ITERS,
    O_MAXMEAN,
    O_MAXERR,
    O_REGIONS,
    O_JSON,
    O_BUSY,
    O_HELP
};

int cli_validate(int argc, char **argv)
{
    static const struct option opts[] = {{"profile", required_argument, 0, O_PROFILE},
                                         {"measured", required_argument, 0, O_MEASURED},
                                         {"hw-entry", required_argument, 0, O_HWENTRY},
                                         {"hw", required_argument, 0, O_HW},
                                         {"catalog", required_argument, 0, O_CATALOG},
                                         {"sweep", required_argument, 0, O_SWEEP},
                                         {"iters", required_argument, 0, O_ITERS},
                                         {"max-mean", required_argument, 0, O_MAXMEAN},
                                         {"max-err", required_argument, 0, O_MAXERR},
                                         {"regions", no_argument, 0, O_REGIONS},
                                         {"json", no_argument, 0, O_JSON},
                                         {"allow-busy", no_argument, 0, O_BUSY},
                                         {"help", no_argument, 0, O_HELP},
                                         {0, 0, 0, 0}};
    const char *profile = NULL, *measured = NULL, *hw_entry = NULL, *hw_name = NULL,
               *catdirs[CLI_MAX_CATALOGS], *sweep = NULL;
    long iters = 10;
    size_t ncat = 0;
    double max_mean = -1, max_err = -1;
    int json = 0, show_rg = 0, allow_busy = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case O_PROFILE:
            profile = optarg;
            break;
        case O_MEASURED:
            measured = optarg;
            break;
        case O_HWENTRY:
            hw_entry = optarg;
            break;
        case O_HW:
            hw_name = optarg;
            break;
        case O_CATALOG:
            if (cli_add_catalog("validate", catdirs, &ncat, optarg))
                return 1;
            break;
        case O_SWEEP:
            sweep = optarg;
            break;
        case O_ITERS:
            if (cli_int("validate", "--iters", optarg, 1, 1000000, &iters))
                return 1;
            break;
        case O_MAXMEAN:
        case O_MAXERR: {
            double x = strtod(optarg, &end);
            if (!*optarg || *end || !(x > 0)) {
                fprintf(stderr, "ccsweep validate: %s: expected a positive percentage, got '%s'\n",
                        c == O_MAXMEAN ? "--max-mean" : "--max-err", optarg);
                return 1;
            }
            *(c == O_MAXMEAN ? &max_mean : &max_err) = x / 100;
            break;
        }
        case O_REGIONS:
            show_rg = 1;
            break;
        case O_JSON:
            json = 1;
            break;
        case O_BUSY:
            allow_busy = 1;
            break;
        case O_HELP:
            usage(stdout);
            return 0;
        default:
            cli_bad_option("validate", argv[optind - 1], opts);
            return 1;
        }
    }
    if (optind < argc || !profile || !measured) {
        fprintf(stderr, "ccsweep validate: %s\n",
                optind < argc ? "unexpected argument" : "--profile and --measured are required");
        usage(stderr);
        return 1;
    }
    char guess[4096];
    if (!hw_entry && !hw_name) {
        size_t l = strlen(profile);
        if (l > 4 && l < sizeof guess - 1 && !strcmp(profile + l - 4, ".csv")) {
            snprintf(guess, sizeof guess, "%.*s.yaml", (int)(l - 4), profile);
            hw_entry = guess;
        } else {
            fprintf(stderr, "ccsweep validate: give --hw-entry YAML or --hw NAME\n");
            return 1;
        }
    }

    int rc = 1;
    ccs_err err;
    ccs_catalog *cat = NULL, *own = NULL;
    ccs_opmodel *om = NULL;
    static vcfg cf[V_MAX_CFG];
    int ncf = 0;
    double gt_wall = 0;
    if (hw_name || sweep) {
        if (!(cat = cli_catalog("validate", catdirs, ncat)))
            return 1;
    }
    const ccs_hw *hw = NULL;
    if (hw_entry) {
        own = catalog_new();
        if (!own || catalog_load_hardware(own, hw_entry, &err) != CCS_OK) {
            fprintf(stderr, "ccsweep validate: --hw-entry: %s\n", own ? err.msg : "out of memory");
            goto out;
        }
        hw = hw_name ? catalog_hw(own, hw_name) : catalog_hw_at(own, 0);
    } else {
        hw = catalog_hw(cat, hw_name);
    }
    if (!hw) {
        fprintf(stderr, "ccsweep validate: --hw: unknown hardware '%s'\n", hw_name);
        goto out;
    }
    if (!(om = opmodel_load(profile, &err))) {
        fprintf(stderr, "ccsweep validate: --profile: %s\n", err.msg);
        goto out;
    }
    vnoise nz;
    memset(&nz, 0, sizeof nz);
    if (read_measured(measured, cf, &ncf, &gt_wall, &nz, &err) != CCS_OK) {
        fprintf(stderr, "ccsweep validate: --measured: %s\n", err.msg);
        goto out;
    }
    sweepcost sc = {0};
    if (sweep && sweep_cost(sweep, cat, (int)iters, &sc, &err) != CCS_OK) {
        fprintf(stderr, "ccsweep validate: --sweep: %s\n", err.msg);
        goto out;
    }
    const char *pw = opmodel_meta(om, "profiling_wall_s");
    double prof_wall = pw ? atof(pw) : 0;

    /* Interference: either tool's own verdict, and whether both ran under the
     * same load (their probes agree). Files without probes (older tools, or
     * imported) are taken as they are. */
    double pprobe[NOISE_MAX_PROBES];
    const char *pp = opmodel_meta(om, "probe_s"), *pv = opmodel_meta(om, "interference");
    int npp = pp ? noise_parse(pp, pprobe, NOISE_MAX_PROBES) : -1;
    noise_verdict vp, vm;
    noise_judge(pprobe, npp > 0 ? npp : 0, NOISE_TOL, &vp);
    noise_judge(nz.probe, nz.nprobe > 0 ? nz.nprobe : 0, NOISE_TOL, &vm);
    char why[3][320];
    int nwhy = 0;
    if ((pv && !strncmp(pv, "busy", 4)) || vp.busy)
        snprintf(why[nwhy++], sizeof why[0],
                 "while profiling (%s) the probe ran a median %.0f%% and at worst %.0f%% slower "
                 "than its fastest",
                 profile, 100 * noise_slowdown(vp.median, vp.fastest), 100 * vp.slowdown);
    if (!strncmp(nz.verdict, "busy", 4) || vm.busy)
        snprintf(why[nwhy++], sizeof why[0],
                 "while measuring the layers (%s) the probe ran a median %.0f%% and at worst "
                 "%.0f%% slower than its fastest",
                 measured, 100 * noise_slowdown(vm.median, vm.fastest), 100 * vm.slowdown);
    double mism = vp.n && vm.n ? noise_mismatch(vp.median, vm.median) : 0;
    if (mism > NOISE_TOL)
        snprintf(why[nwhy++], sizeof why[0],
                 "the probe took %.3g ms while profiling and %.3g ms while measuring the layers "
                 "(%.0f%% apart): the two ran under different load",
                 1e3 * vp.median, 1e3 * vm.median, 100 * mism);
    int busy = nwhy > 0;
    if (busy && !allow_busy) {
        if (json) {
            json_t *o = json_object(), *arr = json_array();
            for (int i = 0; i < nwhy; i++)
                json_array_append_new(arr, json_string(why[i]));
            json_object_set_new(o, "busy", json_true());
            json_object_set_new(o, "reasons", arr);
            json_dumpf(o, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
            json_decref(o);
        }
        fprintf(stderr, "ccsweep validate: the machine was too busy to measure:");
        for (int i = 0; i < nwhy; i++)
            fprintf(stderr, "%s %s", i ? ";" : "", why[i]);
        fprintf(stderr, ".\nOther work slowed the measurements, so their difference from the "
                        "projection would be load, not model error: no error is reported.\n"
                        "Measure again on a quiet machine, or add --allow-busy to see the "
                        "numbers anyway.\n");
        rc = 3;
        goto out;
    }
    if (busy && !json)
        printf("warning (--allow-busy): the machine was too busy to measure: %s; the errors "
               "below include that load\n",
               why[0]);
    double lam0, la, lb, lc;
    int have_terms = opmodel_gemm_terms(om, CCS_FP32, &lam0, &la, &lb, &lc) == 0;

    stats in = {0}, ex = {0}, all = {0};
    for (int i = 0; i < ncf; i++) {
        int reason = project(&cf[i], hw, om, CCS_FP32, &cf[i]);
        if (reason != CCS_R_OK) {
            fprintf(stderr, "ccsweep validate: %s: configuration '%s': %s\n", measured, cf[i].name,
                    plan_reason_text(reason));
            goto out;
        }
        double e = rel_err(cf[i].proj, cf[i].meas);
        acc(cf[i].extrap > V_EXTRAP_TOL ? &ex : &in, e);
        acc(&all, e);
    }
    rc = 0;
    if ((max_mean > 0 && mean(&all) > max_mean) || (max_err > 0 && all.max > max_err))
        rc = 2;

    if (json) {
        json_t *o = json_object(), *arr = json_array();
        for (int i = 0; o && arr && i < ncf; i++) {
            const vcfg *v = &cf[i];
            json_t *e =
                json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:o}", "config",
                          v->name, "hidden", v->hidden, "heads", v->heads, "ffn", v->ffn, "seq",
                          v->seq, "mbs", v->mbs, "tp", v->tp, "layers", v->layers, "measured_s",
                          v->meas, "projected_s", v->proj, "projected_lo_s", v->lo,
                          "projected_hi_s", v->hi, "error", rel_err(v->proj, v->meas),
                          "extrapolation", v->extrap > 0 ? json_real(v->extrap) : json_null());
            json_t *rg = json_object();
            for (int r = 0; e && rg && r < V_NREG; r++)
                json_object_set_new(
                    rg, region_name(layer_regions[r]),
                    json_pack("{s:o,s:f}", "measured_s",
                              v->meas_rg[r] >= 0 ? json_real(v->meas_rg[r]) : json_null(),
                              "projected_s", v->proj_rg[r]));
            json_object_set_new(e, "regions", rg);
            json_array_append_new(arr, e);
        }
        json_object_set_new(o, "profile", json_string(profile));
        json_object_set_new(o, "measured", json_string(measured));
        json_object_set_new(o, "hardware", json_string(hw->name));
        json_object_set_new(o, "configs", arr);
        json_object_set_new(o, "inside", jstats(&in));
        json_object_set_new(o, "extrapolated", jstats(&ex));
        json_object_set_new(o, "all", jstats(&all));
        json_object_set_new(o, "profiling_wall_s",
                            prof_wall > 0 ? json_real(prof_wall) : json_null());
        json_object_set_new(o, "measured_wall_s", gt_wall > 0 ? json_real(gt_wall) : json_null());
        if (sweep)
            json_object_set_new(
                o, "sweep",
                json_pack("{s:s,s:I,s:I,s:i,s:f,s:o}", "spec", sweep, "scenarios",
                          (json_int_t)sc.scenarios, "measurable", (json_int_t)sc.measured, "iters",
                          (int)iters, "measure_wall_s", sc.wall, "reduction",
                          prof_wall > 0 ? json_real(sc.wall / prof_wall) : json_null()));
        json_object_set_new(o, "pass", json_boolean(rc == 0));
        json_object_set_new(o, "busy", json_boolean(busy));
        json_object_set_new(o, "extrapolation_tolerance", json_real(V_EXTRAP_TOL));
        if (have_terms)
            json_object_set_new(
                o, "gemm_terms",
                json_pack("{s:f,s:f,s:f,s:f}", "per_call", lam0, "a", la, "b", lb, "c", lc));
        if (json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(8)) != 0)
            rc = 2;
        fputc('\n', stdout);
        json_decref(o);
        goto out;
    }

    printf("validation of %s against %s on %s\n", profile, measured, hw->name);
    printf("%-14s %6s %5s %5s %4s %3s %3s %11s %11s %23s %8s %7s\n", "config", "hidden", "heads",
           "seq", "mbs", "tp", "L", "measured s", "projected s", "band s", "error", "extrap");
    for (int i = 0; i < ncf; i++) {
        const vcfg *v = &cf[i];
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
    } rows[] = {{"inside the profiled range", &in}, {"extrapolated", &ex}, {"all", &all}};
    for (int i = 0; i < 3; i++) {
        if (rows[i].s->n)
            printf("%-26s %2d configs: mean |error| %5.1f%%, max |error| %5.1f%%\n", rows[i].label,
                   rows[i].s->n, 100 * mean(rows[i].s), 100 * rows[i].s->max);
        else
            printf("%-26s %2d configs\n", rows[i].label, 0);
    }
    if (show_rg) {
        printf("\nper region (all layers, one micro-batch): measured / projected s\n%-14s",
               "config");
        for (int r = 0; r < V_NREG; r++)
            printf(" %19s", region_name(layer_regions[r]));
        printf("\n");
        for (int i = 0; i < ncf; i++) {
            printf("%-14s", cf[i].name);
            for (int r = 0; r < V_NREG; r++)
                printf(" %9.4f/%9.4f", cf[i].meas_rg[r], cf[i].proj_rg[r]);
            printf("\n");
        }
        printf("\noperator curves of the profile:\n");
        opmodel_describe(om, stdout);
    }
    if (have_terms && la == 0 && lb == 0 && lc == 0)
        printf("\nGEMM shape terms (fp32): none fitted - the profile's GEMM timings do not "
               "separate operand traffic from FLOPs (too few points, or disturbed by other "
               "load); FLOPs alone are used\n");
    else if (have_terms)
        printf("\nGEMM shape terms (fp32), FLOP equivalents: %.3g per call, %.3g per A, %.3g "
               "per B, %.3g per C element\n",
               lam0, la, lb, lc);
    if (vp.n || vm.n)
        printf("interference: probe median %.3g ms profiling (%d probes, slowest +%.0f%%), "
               "%.3g ms measuring layers (%d probes, slowest +%.0f%%)%s\n",
               1e3 * vp.median, vp.n, 100 * vp.slowdown, 1e3 * vm.median, vm.n, 100 * vm.slowdown,
               busy ? ": BUSY" : ": quiet");
    printf("\nprofiling wall time: ");
    if (prof_wall > 0)
        printf("%.1f s (%d measurements, %d curves)\n", prof_wall, opmodel_rows(om),
               opmodel_curves(om));
    else
        printf("unknown (the profile has no 'profiling_wall_s' comment)\n");
    if (gt_wall > 0)
        printf("measuring these %d configurations end to end took %.1f s\n", ncf, gt_wall);
    if (sweep) {
        printf("sweep %s: %lld scenarios, %lld measurable (valid, fit memory); measuring each\n"
               "  end to end (%ld iterations) would take %.4g s = %.4g h (projected)",
               sweep, (long long)sc.scenarios, (long long)sc.measured, iters, sc.wall,
               sc.wall / 3600);
        if (prof_wall > 0)
            printf(" -> profiling-cost reduction %.0fx\n", sc.wall / prof_wall);
        else
            printf("\n");
    }
    if (max_mean > 0 || max_err > 0)
        printf("target: mean |error| <= %.0f%%, every configuration <= %.0f%%: %s\n",
               100 * (max_mean > 0 ? max_mean : HUGE_VAL), 100 * (max_err > 0 ? max_err : HUGE_VAL),
               rc == 0 ? "met" : "MISSED");
out:
    opmodel_free(om);
    catalog_free(own);
    catalog_free(cat);
    return rc;
}
