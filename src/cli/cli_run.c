/* cli_run.c - 'ccsweep run': parse and check the spec on every rank, open the
 * database on rank 0 only after the spec is known to be good, sweep, and
 * record how the run ended. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/dist/dist.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: [mpirun -n N] ccsweep run SPEC.yaml [--db PATH] [--resume] [--detail]\n"
            "                     [--chunk N] [--progress SECS] [--quiet] [--catalog PATH]\n"
            "                     [--db-locking normal|exclusive|none] [--staged-from PATH]\n"
            "                     [--writers N|node | --ranks-per-writer R] [--shard-dir DIR]\n\n"
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
            "                     command line recorded in runs/sessions name PATH\n"
            "  --writers N|node   N writer groups of consecutive ranks (node: one per node,\n"
            "                     MPI_Comm_split_type SHARED); each group's first rank writes\n"
            "                     its part of the grid into a shard file, rank 0 merges the\n"
            "                     shards into --db at the end: the same rows as one writer.\n"
            "                     Default 1: rank 0 writes everything, no shard files; more\n"
            "                     pay off when rank 0's inserts bound the sweep (many ranks)\n"
            "  --ranks-per-writer R  writer groups of R consecutive ranks (instead of --writers)\n"
            "  --shard-dir DIR    where the shards are written (the --db file's directory); rank\n"
            "                     0 must be able to read it (a filesystem all nodes share).\n"
            "                     Shards are named DB.runR.wW.shard and removed once merged\n\n"
            "SIGINT, SIGTERM or SIGUSR1 stop the sweep: committed rows stay, the run is marked\n"
            "interrupted and --resume completes it (merging first what shards of the run are\n"
            "left in the shard directory, whatever the writers of this session).\n"
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
    O_WRITERS,
    O_PER_WRITER,
    O_SHARD_DIR,
    O_HELP
};

typedef struct run_args {
    const char *spec, *db, *staged, *shard_dir;
    const char *catdirs[CLI_MAX_CATALOGS];
    size_t ncat;
    int resume, detail, quiet, locking;
    long chunk;
    double progress;
    long writers;    /* --writers: 0 not given, -1 node */
    long per_writer; /* --ranks-per-writer, 0 not given */
} run_args;

/* An integer option in [1, max]: 0, or 1 with the message on e. */
static int count_arg(FILE *e, const char *opt, const char *expected, const char *s, long max,
                     long *out)
{
    char *end;
    *out = strtol(s, &end, 10);
    if (*s && !*end && *out >= 1 && *out <= max)
        return 0;
    fprintf(e, "ccsweep run: %s: expected %s, got '%s'\n", opt, expected, s);
    return 1;
}

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
                                         {"writers", required_argument, 0, O_WRITERS},
                                         {"ranks-per-writer", required_argument, 0, O_PER_WRITER},
                                         {"shard-dir", required_argument, 0, O_SHARD_DIR},
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
        case O_SHARD_DIR:
            a->shard_dir = optarg;
            break;
        case O_WRITERS:
            if (!strcmp(optarg, "node"))
                a->writers = -1;
            else
                bad = count_arg(e, "--writers", "a positive number of writers or 'node'", optarg,
                                1000000, &a->writers);
            break;
        case O_PER_WRITER:
            bad = count_arg(e, "--ranks-per-writer", "a positive number of ranks", optarg, 1000000,
                            &a->per_writer);
            break;
        case O_CHUNK:
            bad = count_arg(e, "--chunk", "an integer in [1, 100000000]", optarg, 100000000,
                            &a->chunk);
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
    if (!bad && a->writers && a->per_writer) {
        fprintf(e, "ccsweep run: give --writers or --ranks-per-writer, not both\n");
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

/* Set up this rank's writer group: rank 0 broadcasts the run and its todo
 * ranges, every rank takes its group's part, and the first rank of every
 * group but rank 0's creates its shard (rank 0 writes into the database
 * itself). Collective; the message is printed once. */
static int open_shard(dist_comm *w, dist_comm *grp, const run_args *a, int widx, int nw,
                      const ccs_grid *g, const char *joined, ccs_store **st, store_range **todo,
                      size_t *n_todo, store_range **part, size_t *n_part, ccs_err *err)
{
    int rank = dist_rank(w);
    int64_t run[5] = {0, 0, 0, 0, 0}; /* run id, then its start time (32 bytes) */
    char started[32] = "";
    if (rank == 0) {
        run[0] = store_run_id(*st);
        ccs_strlcpy(started, store_run_started(*st), sizeof started);
        memcpy(&run[1], started, sizeof started);
        const store_range *t = store_todo(*st, n_todo);
        *todo = malloc(sizeof **todo * (*n_todo ? *n_todo : 1));
        if (*todo)
            memcpy(*todo, t, sizeof **todo * *n_todo);
    }
    if (dist_agree(w, rank != 0 || *todo ? CCS_OK : CCS_ENOMEM) != CCS_OK)
        return CCS_ENOMEM;
    dist_bcast_i64(w, run, 5);
    memcpy(started, &run[1], sizeof started);
    started[sizeof started - 1] = 0;
    int rc = dist_bcast_ranges(w, todo, n_todo);
    if (rc == CCS_OK && dist_partition(*todo, *n_todo, widx, nw, part, n_part) != CCS_OK) {
        ccs_err_set(err, "out of memory");
        rc = CCS_ENOMEM;
    }
    char path[PATH_MAX] = "";
    if (rc == CCS_OK && dist_rank(grp) == 0 && widx > 0) {
        if (store_shard_path(path, sizeof path, a->shard_dir, a->db, run[0], widx)) {
            ccs_err_set(err, "--shard-dir: the shard path is too long");
            rc = CCS_EINPUT;
        }
        store_run_info info = {.argv = joined,
                               .ranks = dist_size(grp),
                               .detail = a->detail,
                               .shard_of = run[0],
                               .shard_started = started};
        if (rc == CCS_OK) {
            store_remove_file(path); /* a stale file of that name: its rows are not ours */
            /* one process writes a shard: no shared memory, fine on network filesystems */
            *st = store_open(path, STORE_LOCK_EXCLUSIVE, &rc, err);
        }
        if (*st && (rc = store_prepare_run(*st, g, &info, 0, err)) >= 0)
            rc = CCS_OK;
    }
    if ((rc = agree(w, rc, err)) != CCS_OK)
        return rc;
    /* rank 0 merges the shards at the end: it must see every one of them */
    for (int i = 1; rank == 0 && rc == CCS_OK && i < nw; i++) {
        struct stat sb;
        store_shard_path(path, sizeof path, a->shard_dir, a->db, run[0], i);
        if (stat(path, &sb) != 0) {
            fprintf(stderr,
                    "ccsweep run: --shard-dir: the shard of writer %d (%s) is not visible from "
                    "rank 0: give a --shard-dir on a filesystem every node shares\n",
                    i + 1, path);
            rc = CCS_EINPUT;
        }
    }
    return dist_agree(w, rc);
}

/* Rank 0 after the sweep: merge every writer's shard into the database (and
 * under a keep: rule reduce the union to the best rows). Returns the sweep's
 * status rc, or a failure with err. */
static int merge_shards(ccs_store *st, const run_args *a, int nw, const ccs_grid *g, int rc,
                        ccs_err *err)
{
    int merged = 0;
    double t0 = dist_clock();
    int r = store_absorb_shards(st, a->shard_dir, a->db, a->quiet ? NULL : stderr, &merged, err);
    if (r != CCS_OK)
        return r;
    if (!a->quiet)
        fprintf(stderr, "ccsweep: merged %d shard%s in %.2f s\n", merged, merged == 1 ? "" : "s",
                dist_clock() - t0);
    if (merged != nw - 1) {
        ccs_err_set(err,
                    "%s: %d of the %d shards were found to merge; --resume recomputes the rest",
                    a->db, merged, nw - 1);
        return CCS_EIO;
    }
    if (rc == CCS_OK && spec_keep_rule(grid_spec(g)))
        return dist_keep_reduce(g, st, err);
    return rc;
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
    dist_comm *grp = NULL; /* this rank's writer group, when there are several */
    int nw = 1, widx = 0;
    store_range *todo = NULL, *part = NULL; /* the run's todo ranges, the group's part */
    size_t n_todo = 0, n_part = 0;
    char *text = NULL;
    long len = -1;
    ccs_err err = {""};
    int rc = parse_args(argc, argv, &a, rank == 0) ? CCS_EINPUT : CCS_OK;
    int exit_code = 1;
    if (dist_agree(w, rc) != CCS_OK)
        goto out; /* rank 0 has printed the usage error */
    if (a.writers > ranks) {
        if (rank == 0)
            fprintf(stderr,
                    "ccsweep run: --writers %ld: more writers than MPI ranks (%d); a writer is "
                    "a rank: give at most %d, or start more ranks\n",
                    a.writers, ranks, ranks);
        goto out;
    }
    struct stat sb;
    if (rank == 0 && a.shard_dir && stat(a.shard_dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "ccsweep run: --shard-dir %s: not a directory\n", a.shard_dir);
        rc = CCS_EINPUT;
    }
    if (dist_agree(w, rc) != CCS_OK)
        goto out;
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
        /* shards an earlier session left (killed, or killed while merging) */
        int merged = 0;
        if (rc >= 0 && kind != STORE_NOTHING &&
            (rc = store_absorb_shards(st, a.shard_dir, a.db, a.quiet ? NULL : stderr, &merged,
                                      &err)) == CCS_OK)
            rc = kind;
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
    /* writer groups: each group's first rank writes a shard of its part */
    if (a.writers > 1 || a.writers < 0 || a.per_writer) {
        int color = a.writers > 1    ? (int)((int64_t)rank * a.writers / ranks)
                    : a.per_writer ? (int)(rank / a.per_writer)
                                   : -1;
        if (!(grp = dist_split_writers(w, color, &widx, &nw))) {
            exit_code = 2;
            goto out;
        }
        if (nw == 1) {
            dist_comm_free(grp); /* one writer: rank 0 writes, as without the option */
            grp = NULL;
        }
    }
    if (grp) {
        rc = open_shard(w, grp, &a, widx, nw, g, joined, &st, &todo, &n_todo, &part, &n_part, &err);
        if (rc != CCS_OK && rank == 0)
            store_finish(st, STORE_FAILED, NULL, &err); /* nothing swept: --resume starts it */
        if (rc != CCS_OK) {
            exit_code = rc == CCS_EINPUT ? 1 : 2;
            goto out;
        }
    }
    if (rank == 0 && !a.quiet) {
        store_counts c;
        store_counts_get(st, &c);
        char writers[32] = "";
        if (nw > 1)
            snprintf(writers, sizeof writers, ", %d writers", nw);
        if (kind == STORE_RESUMED)
            fprintf(stderr, "ccsweep: resuming run %lld: %lld of %lld scenarios already done\n",
                    (long long)store_run_id(st), (long long)c.done, (long long)grid_count(g));
        else
            fprintf(stderr, "ccsweep: run %lld: %lld scenarios on %d rank%s%s -> %s%s\n",
                    (long long)store_run_id(st), (long long)grid_count(g), ranks,
                    ranks > 1 ? "s" : "", writers, shown,
                    a.resume ? " (nothing to resume: new run)" : "");
    }

    dist_opts o = {.chunk = a.chunk,
                   .progress = a.progress,
                   .quiet = a.quiet,
                   .detail = a.detail,
                   .log = stderr,
                   .todo = part,
                   .n_todo = n_part,
                   .writer = widx,
                   .writers = nw};
    if (widx > 0)
        o.quiet = 1; /* rank 0 reports its group's progress */
    dist_stats ds;
    rc = dist_sweep(grp ? grp : w, g, st, &o, &ds, &err);
    if (grp) {
        int leader = dist_rank(grp) == 0;
        if (leader && widx > 0) {
            if (rc < 0) {
                /* its rows committed so far stay in the shard: --resume merges them */
                fprintf(stderr, "ccsweep run: writer %d: %s\n", widx + 1, err.msg);
                store_close(st);
                st = NULL;
                dist_abort(w, rc == CCS_EINPUT ? 1 : 2);
            }
            if (store_seal(st, &err) != CCS_OK)
                fprintf(stderr, "ccsweep run: writer %d: %s\n", widx + 1, err.msg);
            store_close(st);
            st = NULL;
        }
        if (!leader)
            ds.done = ds.rows = ds.ok = ds.invalid = ds.oom = 0;
        if (rank != 0 || rc >= 0)
            dist_sum_stats(w, &ds); /* rank 0 failing ends the job below */
        if (rank == 0 && rc == CCS_OK && ds.signal)
            rc = DIST_INTERRUPTED; /* another group was stopped */
        if (rank == 0 && rc >= 0) {
            double t0 = dist_clock();
            rc = merge_shards(st, &a, nw, g, rc, &err);
            ds.seconds += dist_clock() - t0; /* the sweep's time includes its merge */
        }
    }
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
        fprintf(stderr,
                "ccsweep: rank 0 peak RSS %.1f MiB\nccsweep: rank 0 CPU %.3f s (user + system)\n",
                ru.ru_maxrss / 1024.0,
                ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
                    1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec));
    if (!a.quiet && ds.writer_cpu > 0)
        fprintf(stderr, "ccsweep: rank 0 writer thread CPU %.3f s (of the above)\n", ds.writer_cpu);
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
    dist_comm_free(grp);
    free(todo);
    free(part);
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
