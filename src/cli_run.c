/* cli_run.c - 'ccsweep run': parse and check the spec on every rank, open the
 * database on rank 0 only after the spec is known to be good, sweep, and
 * record how the run ended. */
#include "ccsweep/cli.h"
#include "ccsweep/dist.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: [mpirun -n N] ccsweep run SPEC.yaml [--db PATH] [--resume] [--detail]\n"
            "                     [--chunk N] [--progress SECS] [--quiet] [--catalog PATH]\n"
            "                     [--db-locking normal|exclusive|none] [--staged-from PATH]\n\n"
            "Sweeps the spec's model x hardware x generation x plan grid (format:\n"
            "sweeps/README.md) across the MPI ranks into one SQLite database (schema and\n"
            "example queries: results/README.md). Rank 0 writes; the other ranks project.\n\n"
            "  --db PATH          database file, created if missing; every run is added,\n"
            "                     nothing is overwritten (results/ccsweep.db)\n"
            "  --resume           continue the latest unfinished run of this same spec\n"
            "                     (same sha256), computing only what is not yet stored; starts\n"
            "                     a new run when there is none, does nothing when it is complete\n"
            "  --detail           also store per-region times (table regions; much larger)\n"
            "  --chunk N          scenarios per work request (default: adaptive)\n"
            "  --progress SECS    seconds between progress lines on stderr (3)\n"
            "  --quiet            no progress lines\n"
            "  --catalog PATH     catalog overlay (directory or YAML file): its entries add to\n"
            "                     and override the built-in ones by name; repeatable, later\n"
            "                     wins; $CCSWEEP_CATALOG_PATH lists overlays too (':')\n"
            "  --db-locking MODE  normal: WAL, readers may query during the run; exclusive: one\n"
            "                     process holds the file (filesystems whose locks or shared\n"
            "                     memory do not work, e.g. some NFS/Lustre mounts); none: no\n"
            "                     locks at all (nothing else may open the file meanwhile)\n"
            "  --staged-from PATH --db is a working copy of PATH (e.g. on node-local disk) that\n"
            "                     is copied back afterwards: messages, the resume hint and the\n"
            "                     command line recorded in runs/sessions name PATH\n\n"
            "SIGINT, SIGTERM or SIGUSR1 stop the sweep: committed rows stay, the run is marked\n"
            "interrupted and --resume completes it.\n"
            "Exit status: 0 done, 1 bad spec or options, 2 runtime failure, 128+signal when\n"
            "interrupted.\n");
}

enum {
    O_DB = 256,
    O_RESUME,
    O_DETAIL,
    O_CHUNK,
    O_PROGRESS,
    O_QUIET,
    O_CATALOG,
    O_LOCK,
    O_STAGED,
    O_HELP
};

typedef struct run_args {
    const char *spec, *db, *staged;
    const char *catdirs[CLI_MAX_CATALOGS];
    size_t ncat;
    int resume, detail, quiet, locking;
    long chunk;
    double progress;
} run_args;

/* Returns 0, or 1 with the message printed when print is set. */
static int parse_args(int argc, char **argv, run_args *a, int print)
{
    static const struct option opts[] = {{"db", required_argument, 0, O_DB},
                                         {"resume", no_argument, 0, O_RESUME},
                                         {"detail", no_argument, 0, O_DETAIL},
                                         {"chunk", required_argument, 0, O_CHUNK},
                                         {"progress", required_argument, 0, O_PROGRESS},
                                         {"quiet", no_argument, 0, O_QUIET},
                                         {"catalog", required_argument, 0, O_CATALOG},
                                         {"db-locking", required_argument, 0, O_LOCK},
                                         {"staged-from", required_argument, 0, O_STAGED},
                                         {"help", no_argument, 0, O_HELP},
                                         {0, 0, 0, 0}};
    FILE *e = print ? stderr : fopen("/dev/null", "w");
    int bad = 0, c;
    if (!e)
        e = stderr;
    optind = 1;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case O_DB:
            a->db = optarg;
            break;
        case O_RESUME:
            a->resume = 1;
            break;
        case O_DETAIL:
            a->detail = 1;
            break;
        case O_QUIET:
            a->quiet = 1;
            break;
        case O_CATALOG:
            if (cli_add_catalog("run", a->catdirs, &a->ncat, optarg))
                bad = 1;
            break;
        case O_STAGED:
            a->staged = optarg;
            break;
        case O_CHUNK:
            a->chunk = strtol(optarg, &end, 10);
            if (!*optarg || *end || a->chunk < 1 || a->chunk > 100000000) {
                fprintf(e,
                        "ccsweep run: --chunk: expected an integer in [1, 100000000], got "
                        "'%s'\n",
                        optarg);
                bad = 1;
            }
            break;
        case O_PROGRESS:
            a->progress = strtod(optarg, &end);
            if (!*optarg || *end || !(a->progress > 0) || !isfinite(a->progress)) {
                fprintf(e,
                        "ccsweep run: --progress: expected a positive number of seconds, "
                        "got '%s'\n",
                        optarg);
                bad = 1;
            }
            break;
        case O_LOCK:
            if (!strcmp(optarg, "normal"))
                a->locking = STORE_LOCK_NORMAL;
            else if (!strcmp(optarg, "exclusive"))
                a->locking = STORE_LOCK_EXCLUSIVE;
            else if (!strcmp(optarg, "none"))
                a->locking = STORE_LOCK_NONE;
            else {
                fprintf(e,
                        "ccsweep run: --db-locking: expected normal, exclusive or none, got "
                        "'%s'\n",
                        optarg);
                bad = 1;
            }
            break;
        default:
            if (print)
                cli_bad_option("run", argv[optind - 1], opts);
            bad = 1;
        }
    }
    if (!bad && optind < argc)
        a->spec = argv[optind++];
    if (!bad && optind < argc) {
        fprintf(e, "ccsweep run: unexpected argument '%s'\n", argv[optind]);
        bad = 1;
    }
    if (!bad && !a->spec) {
        fprintf(e, "ccsweep run: a spec file is required, e.g. 'ccsweep run sweeps/default.yaml'"
                   "\n");
        bad = 1;
    }
    if (e != stderr)
        fclose(e);
    return bad;
}

/* The command line as typed (argv[0] of a subcommand is its name), except that
 * with --staged-from the database named is the one the user asked for, not
 * its working copy. */
static char *join_argv(int argc, char **argv, const char *staged)
{
    size_t n = 16 + (staged ? strlen(staged) + 3 : 0);
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 8;
    char *s = malloc(n);
    if (!s)
        return NULL;
    strcpy(s, "ccsweep");
    for (int i = 0; i < argc; i++) {
        const char *w = argv[i];
        if (staged && !strcmp(w, "--staged-from")) {
            i++;
            continue;
        }
        if (staged && !strncmp(w, "--staged-from=", 14))
            continue;
        char *q = strchr(w, ' ') ? "'" : "";
        if (staged && !strncmp(w, "--db=", 5)) {
            q = strchr(staged, ' ') ? "'" : "";
            strcat(s, " --db=");
            w = staged;
        } else {
            strcat(s, " ");
        }
        strcat(s, q);
        strcat(s, w);
        strcat(s, q);
        if (staged && !strcmp(w, "--db") && i + 1 < argc) {
            q = strchr(staged, ' ') ? "'" : "";
            strcat(s, " ");
            strcat(s, q);
            strcat(s, staged);
            strcat(s, q);
            i++;
        }
    }
    return s;
}

/* Combine a setup step's status over all ranks. The message is printed once:
 * by rank 0, or by a worker that failed where rank 0 did not. */
static int agree(dist_comm *w, int rc, const ccs_err *err)
{
    int rank = dist_rank(w);
    int all = dist_agree(w, rc);
    int r0 = dist_agree(w, rank == 0 ? rc : CCS_OK);
    if (rc != CCS_OK && (rank == 0 || r0 == CCS_OK))
        fprintf(stderr, "ccsweep run: %s%s\n",
                rank == 0 ? "" : "on a worker rank: ", err->msg[0] ? err->msg : "out of memory");
    return all;
}

int cli_run(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (cli_launch_rank() == 0)
                run_usage(stdout);
            return 0;
        }
    }
    char *joined = NULL;
    /* getopt permutes argv: keep the order as typed for the record */
    char **typed = malloc(((size_t)argc + 1) * sizeof *typed);
    if (!typed) {
        fprintf(stderr, "ccsweep run: out of memory\n");
        return 2;
    }
    memcpy(typed, argv, ((size_t)argc + 1) * sizeof *typed);
    if (dist_init(&argc, &argv) != CCS_OK) {
        fprintf(stderr, "ccsweep run: MPI_Init failed\n");
        free(typed);
        return 2;
    }
    dist_catch_signals();
    dist_comm *w = dist_world();
    int rank = dist_rank(w), ranks = dist_size(w);
    run_args a = {.db = "results/ccsweep.db", .progress = 3.0};
    ccs_catalog *cat = NULL;
    ccs_spec *spec = NULL;
    ccs_grid *g = NULL;
    ccs_store *st = NULL;
    char *text = NULL;
    long len = -1;
    ccs_err err = {""};
    int rc = parse_args(argc, argv, &a, rank == 0) ? CCS_EINPUT : CCS_OK;
    int exit_code = 1;
    if (dist_agree(w, rc) != CCS_OK)
        goto out; /* rank 0 has printed the usage error */
    /* what messages call the database: the user's file, not a staged copy */
    const char *shown = a.staged ? a.staged : a.db;
    if (rank == 0 && !(joined = join_argv(argc, typed, a.staged)))
        rc = CCS_ENOMEM;
    if (dist_agree(w, rc) != CCS_OK) {
        exit_code = 2;
        goto out;
    }

    /* Spec and catalog on every rank: rank 0 reads the file once and
     * broadcasts it, so all ranks build the same grid from the same bytes. */
    {
        cat = catalog_new();
        rc = cat ? catalog_load_layers(cat, a.catdirs, a.ncat, &err) : CCS_ENOMEM;
    }
    if (agree(w, rc, &err) != CCS_OK)
        goto out;
    if (rank == 0) {
        size_t n;
        if (spec_read_file(a.spec, &text, &n, &err) == CCS_OK)
            len = (long)n;
    }
    rc = dist_bcast_text(w, &text, &len);
    if (rc == CCS_OK) {
        spec = spec_parse(text, (size_t)len, a.spec, cat, &err);
        rc = spec ? CCS_OK : CCS_EINPUT;
    }
    if (rc == CCS_OK) {
        g = grid_new(spec, &err);
        rc = g ? CCS_OK : CCS_EINPUT;
    }
    if (agree(w, rc, &err) != CCS_OK)
        goto out;

    /* The spec is good: only now is the database touched. */
    int kind = STORE_NEW;
    if (rank == 0) {
        store_run_info info = {.argv = joined, .ranks = ranks, .detail = a.detail};
        st = store_open(a.db, a.locking, &rc, &err);
        if (st)
            kind = rc = store_prepare_run(st, g, &info, a.resume, &err);
        if (rc < 0)
            fprintf(stderr, "ccsweep run: %s\n", err.msg);
    }
    rc = dist_agree(w, rc < 0 ? rc : CCS_OK);
    if (rc != CCS_OK) {
        exit_code = rc == CCS_EINPUT ? 1 : 2;
        goto out;
    }
    /* every rank learns whether rank 0 found the run already complete */
    if (dist_agree(w, kind == STORE_NOTHING ? -1 : 0) < 0) {
        if (rank == 0)
            printf("ccsweep run: run %lld of this spec is already complete in %s; nothing to "
                   "resume\n",
                   (long long)store_run_id(st), shown);
        exit_code = 0;
        goto out;
    }
    if (rank == 0 && !a.quiet) {
        store_counts c;
        store_counts_get(st, &c);
        if (kind == STORE_RESUMED)
            fprintf(stderr, "ccsweep: resuming run %lld: %lld of %lld scenarios already done\n",
                    (long long)store_run_id(st), (long long)c.done, (long long)grid_count(g));
        else
            fprintf(stderr, "ccsweep: run %lld: %lld scenarios on %d rank%s -> %s%s\n",
                    (long long)store_run_id(st), (long long)grid_count(g), ranks,
                    ranks > 1 ? "s" : "", shown, a.resume ? " (nothing to resume: new run)" : "");
    }

    dist_opts o = {.chunk = a.chunk,
                   .progress = a.progress,
                   .quiet = a.quiet,
                   .detail = a.detail,
                   .log = stderr};
    dist_stats ds;
    rc = dist_sweep(w, g, st, &o, &ds, &err);
    if (rank != 0) {
        /* the sweep's status is rank 0's (it is the one that stored the rows) */
        exit_code = -dist_agree(w, 0);
        goto out;
    }
    int status = rc == CCS_OK             ? STORE_COMPLETE
                 : rc == DIST_INTERRUPTED ? STORE_INTERRUPTED
                                          : STORE_FAILED;
    if (rc < 0)
        fprintf(stderr, "ccsweep run: %s\n", err.msg);
    store_counts fin;
    ccs_err ferr;
    if (store_finish(st, status, &fin, &ferr) != CCS_OK) {
        /* the file holds what was committed; say so rather than nothing */
        if (!(rc < 0 && store_disk_full(st)))
            fprintf(stderr, "ccsweep run: %s\n", ferr.msg);
        store_counts_committed(st, &fin);
        status = STORE_FAILED;
    }
    if (store_disk_full(st))
        fprintf(stderr,
                "ccsweep run: the disk holding %s is full: free space (or move the database "
                "to a larger disk), then finish the run with 'ccsweep run %s --db %s --resume'\n",
                a.db, a.spec, shown);
    static const char *const words[] = {"running", "complete", "interrupted", "failed"};
    printf("ccsweep run: run %lld %s: %lld/%lld scenarios in %.2f s (%.0f/s this session), "
           "%lld rows (ok %lld, invalid %lld, oom %lld, filtered %lld) -> %s\n",
           (long long)store_run_id(st), words[status], (long long)fin.done,
           (long long)grid_count(g), ds.seconds, ds.seconds > 0 ? ds.done / ds.seconds : 0,
           (long long)fin.rows, (long long)fin.ok, (long long)fin.invalid, (long long)fin.oom,
           (long long)fin.filtered, shown);
    struct rusage ru;
    if (!a.quiet && getrusage(RUSAGE_SELF, &ru) == 0)
        fprintf(stderr, "ccsweep: rank 0 peak RSS %.1f MiB\n", ru.ru_maxrss / 1024.0);
    if (status == STORE_INTERRUPTED)
        printf("ccsweep run: interrupted by signal %d; committed rows are kept, finish with "
               "'ccsweep run %s --db %s --resume'\n",
               ds.signal, a.spec, shown);
    fflush(stdout);
    exit_code = status == STORE_COMPLETE ? 0 : status == STORE_INTERRUPTED ? 128 + ds.signal : 2;
    if (rc == CCS_EINPUT)
        exit_code = 1; /* the spec's filter is undefined for a scenario */
    if (status == STORE_FAILED && ranks > 1) {
        /* workers may be mid-chunk or waiting: the data is safe, end the job */
        store_close(st);
        st = NULL;
        dist_abort(w, exit_code);
    }
    /* every worker has said goodbye: all ranks end with rank 0's status */
    dist_agree(w, -exit_code);
out:
    store_close(st);
    grid_free(g);
    spec_free(spec);
    catalog_free(cat);
    free(text);
    free(joined);
    free(typed);
    dist_finalize();
    return exit_code;
}
