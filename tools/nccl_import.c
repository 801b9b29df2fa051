/* nccl_import.c - turn nccl-tests / rccl-tests output (all_reduce_perf,
 * all_gather_perf, reduce_scatter_perf, sendrecv_perf) into calibration
 * profile rows (format: include/ccsweep/cost/opmodel.h), so GPU clusters are calibrated from the
 * tool everyone already runs.
 *
 *   nccl_import [--op OP] [--group N] [--level intra|inter] [--in-place]
 *               [--append] [--out FILE] LOG...
 *
 * The documented table (nccl-tests src/util/common.cu and doc/PERFORMANCE.md): per
 * message size one line "size count type redop [root] time algbw busbw #wrong"
 * for out-of-place, then the same four columns for in-place; size in bytes is
 * the whole buffer (all-gather output, reduce-scatter input), time in
 * microseconds (the header's units line says "(us)"; "(ms)" is honoured too).
 * The group size and the node count come from the "#  Rank N Group G Pid P on
 * HOST device ..." lines (more than one host: inter-node), or --group/--level.
 * The operation comes from the log's file name (all_reduce_perf.log, ...) or
 * --op allreduce|allgather|reducescatter|p2p. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_HOSTS 4096
#define HOSTLEN 128
/* The bounds a calibration profile accepts (src/cost/opmodel.c): a row beyond
 * them would not load, so it is refused here, at its line. */
#define MAX_TIME_S 1e6
#define MIN_TIME_S 1e-12
#define MAX_BYTES 1125899906842624.0 /* 2^50 */

typedef struct opts {
    const char *op;
    int group;
    const char *level;
    int in_place;
} opts;

static const struct {
    const char *pattern, *op;
} op_names[] = {
    {"all_reduce", "allreduce"},
    {"allreduce", "allreduce"},
    {"all_gather", "allgather"},
    {"allgather", "allgather"},
    {"reduce_scatter", "reducescatter"},
    {"reducescatter", "reducescatter"},
    {"sendrecv", "p2p"},
    {"send_recv", "p2p"},
    {"p2p", "p2p"},
};

static const char *op_from_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
        if (strstr(base, op_names[i].pattern))
            return op_names[i].op;
    return NULL;
}

/* nccl-tests type names -> profile dtypes; NULL for types ccsweep lacks. */
static const char *dtype_of(const char *t)
{
    static const struct {
        const char *nccl, *ccs;
    } map[] = {{"float", "fp32"},    {"float32", "fp32"}, {"half", "fp16"},  {"float16", "fp16"},
               {"bfloat16", "bf16"}, {"bf16", "bf16"},    {"f8e4m3", "fp8"}, {"f8e5m2", "fp8"},
               {"fp8_e4m3", "fp8"},  {"fp8_e5m2", "fp8"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(t, map[i].nccl))
            return map[i].ccs;
    return NULL;
}

static int is_int(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static int is_num(const char *s)
{
    char *e;
    strtod(s, &e);
    return *s && !*e;
}

/* Import one log, read from f (named path in messages; it must support
 * rewind), into out. Returns rows written, or -1 on an input error. The
 * parser proper: tests/fuzz/fuzz_nccl.c runs it on any bytes. */
static int nccl_import_stream(FILE *f, const char *path, const opts *o, FILE *out)
{
    const char *op = o->op ? o->op : op_from_name(path);
    if (!op) {
        fprintf(stderr,
                "nccl_import: %s: cannot tell the operation from the file name; give "
                "--op allreduce|allgather|reducescatter|p2p\n",
                path);
        return -1;
    }
    static char hosts[MAX_HOSTS][HOSTLEN];
    int nranks = 0, nhosts = 0, iters = 1, rows = 0, ln = 0, skipped = 0, bad = 0;
    double unit = 1e-6; /* microseconds */
    char line[4096];
    /* first pass: the header (ranks, hosts, iterations, units) */
    while (fgets(line, sizeof line, f)) {
        if (line[0] != '#')
            continue;
        int r, g, pid;
        char host[HOSTLEN];
        /* "... warmup iters: 5 iters: 20 agg iters: 1 ..." */
        for (char *it = strstr(line, "iters:"); it; it = strstr(it + 6, "iters:"))
            if (it >= line + 7 && !strncmp(it - 7, "warmup ", 7))
                continue;
            else if (it >= line + 4 && !strncmp(it - 4, "agg ", 4))
                continue;
            else
                iters = atoi(it + 6);
        if (strstr(line, "(ms)"))
            unit = 1e-3;
        /* "#  Rank 0 Group 0 Pid 1 on HOST device ..." (older: no Group) */
        if (sscanf(line, "# Rank %d Group %d Pid %d on %127s", &r, &g, &pid, host) == 4 ||
            sscanf(line, "# Rank %d Pid %d on %127s", &r, &pid, host) == 3) {
            nranks++;
            int known = 0;
            for (int i = 0; i < nhosts && !known; i++)
                known = !strcmp(hosts[i], host);
            if (!known && nhosts < MAX_HOSTS)
                snprintf(hosts[nhosts++], HOSTLEN, "%s", host);
        }
    }
    int group = o->group ? o->group : nranks;
    const char *level = o->level ? o->level : nhosts > 1 ? "inter" : "intra";
    if (group < 2) {
        fprintf(stderr,
                "nccl_import: %s: no '#  Rank ...' lines give the rank count; give "
                "--group N (at least 2)\n",
                path);
        return -1;
    }
    if (iters < 1)
        iters = 1;
    fprintf(out, "# imported by tools/nccl_import from %s: %s, %d ranks on %d host%s, %s\n", path,
            op, group, nhosts ? nhosts : 1, nhosts > 1 ? "s" : "",
            o->in_place ? "in-place" : "out-of-place");
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (line[0] == '#')
            continue;
        char *tok[32];
        int nt = 0;
        for (char *s = strtok(line, " \t\r\n"); s && nt < 32; s = strtok(NULL, " \t\r\n"))
            tok[nt++] = s;
        /* size count type redop [root] (time algbw busbw wrong) x 2 */
        if (nt < 2 || !is_int(tok[0]) || !is_int(tok[1]))
            continue;
        int base;
        if (nt == 13 && is_int(tok[4]))
            base = 5;
        else if (nt == 12)
            base = 4;
        else {
            fprintf(stderr,
                    "nccl_import: %s:%d: expected 12 or 13 columns (size count type "
                    "redop [root] time algbw busbw #wrong time algbw busbw #wrong), got "
                    "%d\n",
                    path, ln, nt);
            bad = 1;
            break;
        }
        const char *dt = dtype_of(tok[2]);
        if (!dt) {
            skipped++;
            continue;
        }
        const char *ts = tok[base + (o->in_place ? 4 : 0)];
        if (!strcmp(ts, "N/A")) /* not run (trace replay): the other column */
            ts = tok[base + (o->in_place ? 0 : 4)];
        double t = is_num(ts) ? atof(ts) * unit : 0;
        double size = atof(tok[0]);
        if (size > 0 && (!isfinite(t) || t > MAX_TIME_S || (t > 0 && t < MIN_TIME_S))) {
            fprintf(stderr,
                    "nccl_import: %s:%d: field 'time': expected a time in [%g, %g] s, got '%s'\n",
                    path, ln, MIN_TIME_S, MAX_TIME_S, ts);
            bad = 1;
            break;
        }
        if (size > MAX_BYTES) {
            fprintf(stderr,
                    "nccl_import: %s:%d: field 'size': expected at most 2^50 bytes, got '%s'\n",
                    path, ln, tok[0]);
            bad = 1;
            break;
        }
        if (!(t > 0) || !(size > 0)) {
            if (size > 0) {
                fprintf(stderr,
                        "nccl_import: %s:%d: field 'time': expected a positive number, "
                        "got '%s'\n",
                        path, ln, ts);
                bad = 1;
                break;
            }
            continue; /* zero-byte lines carry no bandwidth */
        }
        fprintf(out, "%s,%s,0,0,0,%.0f,%d,%s,%.6e,%d\n", op, dt, size, group, level, t, iters);
        rows++;
    }
    if (skipped)
        fprintf(stderr, "nccl_import: %s: %d rows of data types ccsweep lacks skipped\n", path,
                skipped);
    if (!bad && rows == 0) {
        fprintf(stderr, "nccl_import: %s: no result lines found\n", path);
        bad = 1;
    }
    return bad ? -1 : rows;
}

#ifndef NCCL_IMPORT_NO_MAIN
static int valid_op(const char *op)
{
    return !strcmp(op, "allreduce") || !strcmp(op, "allgather") || !strcmp(op, "reducescatter") ||
           !strcmp(op, "p2p");
}

/* Import the log at path into out. Returns rows written, or -1. */
static int import(const char *path, const opts *o, FILE *out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    int rows = nccl_import_stream(f, path, o, out);
    fclose(f);
    return rows;
}

/* Create outp.XXXXXX beside outp, with outp's permissions (0666 less the
 * umask for a new file) and, when appending, a copy of outp's bytes. Returns
 * 0 with *tmp (the caller frees it) and *out open for writing, or -1 with a
 * message (nothing left behind). */
static int open_temp(const char *outp, int append, char **tmp, FILE **out)
{
    size_t n = strlen(outp);
    char *t = malloc(n + 8);
    if (!t) {
        fprintf(stderr, "nccl_import: out of memory\n");
        return -1;
    }
    memcpy(t, outp, n);
    memcpy(t + n, ".XXXXXX", 8);
    struct stat sb;
    int have = stat(outp, &sb) == 0;
    if (have && !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "nccl_import: %s: not a regular file\n", outp);
        free(t);
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    int fd = mkstemp(t);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int bad = !f || fchmod(fd, have ? sb.st_mode & 07777 : 0666 & ~mask) != 0;
    if (!bad && append && have) {
        FILE *in = fopen(outp, "rb");
        char buf[65536];
        size_t got;
        bad = !in;
        while (!bad && (got = fread(buf, 1, sizeof buf, in)) > 0)
            bad = fwrite(buf, 1, got, f) != got;
        if (in && ferror(in))
            bad = 1;
        if (in)
            fclose(in);
    }
    if (bad) {
        fprintf(stderr, "nccl_import: %s: cannot write a temporary copy beside it (%s): %s\n", outp,
                t, strerror(errno));
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
        if (fd >= 0)
            unlink(t);
        free(t);
        return -1;
    }
    *tmp = t;
    *out = f;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: nccl_import [--op OP] [--group N] [--level intra|inter] [--in-place]\n"
               "                   [--append] [--out FILE] LOG...\n\n"
               "Converts nccl-tests / rccl-tests logs (all_reduce_perf, all_gather_perf,\n"
               "reduce_scatter_perf, sendrecv_perf) into calibration profile rows\n"
               "op,dtype,m,n,k,bytes,group,level,time_s,reps (out-of-place times unless\n"
               "--in-place). The operation comes from each log's file name unless --op; the\n"
               "group size and intra/inter from its '#  Rank ... on HOST' lines unless\n"
               "--group/--level. --append omits the CSV header line (to add to a profile).\n");
}

int main(int argc, char **argv)
{
    opts o = {0};
    const char *outp = NULL;
    int append = 0, c;
    static const struct option lo[] = {
        {"op", required_argument, 0, 'o'},    {"group", required_argument, 0, 'g'},
        {"level", required_argument, 0, 'l'}, {"in-place", no_argument, 0, 'i'},
        {"append", no_argument, 0, 'a'},      {"out", required_argument, 0, 'O'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'o':
            o.op = optarg;
            if (!valid_op(o.op)) {
                fprintf(stderr,
                        "nccl_import: --op: expected allreduce, allgather, reducescatter "
                        "or p2p, got '%s'\n",
                        optarg);
                return 1;
            }
            break;
        case 'g':
            o.group = atoi(optarg);
            if (o.group < 2) {
                fprintf(stderr, "nccl_import: --group: expected an integer >= 2, got '%s'\n",
                        optarg);
                return 1;
            }
            break;
        case 'l':
            o.level = optarg;
            if (strcmp(o.level, "intra") && strcmp(o.level, "inter")) {
                fprintf(stderr, "nccl_import: --level: expected intra or inter, got '%s'\n",
                        optarg);
                return 1;
            }
            break;
        case 'i':
            o.in_place = 1;
            break;
        case 'a':
            append = 1;
            break;
        case 'O':
            outp = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            fprintf(stderr, "nccl_import: unknown or incomplete option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return 1;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 1;
    }
    /* --out writes a temporary file beside the target (with the target's rows
     * first when appending) and renames it over the target only when every log
     * imported: a failed import leaves the profile as it was. */
    char *tmp = NULL;
    FILE *out = stdout;
    if (outp && open_temp(outp, append, &tmp, &out) != 0)
        return 2;
    if (!append)
        fprintf(out, "op,dtype,m,n,k,bytes,group,level,time_s,reps\n");
    int rc = 0;
    for (int i = optind; i < argc && !rc; i++)
        if (import(argv[i], &o, out) < 0)
            rc = 1;
    if (out != stdout) {
        if ((fflush(out) || fsync(fileno(out))) && !rc) {
            perror(tmp);
            rc = 2;
        }
        if (fclose(out) && !rc) {
            perror(tmp);
            rc = 2;
        }
        if (!rc && rename(tmp, outp)) {
            fprintf(stderr, "nccl_import: %s: cannot rename %s over it: %s\n", outp, tmp,
                    strerror(errno));
            rc = 2;
        }
        if (rc)
            unlink(tmp);
        free(tmp);
    }
    return rc;
}
#endif
