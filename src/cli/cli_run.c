/* cli_run.c - 'ccsweep run': parse and check the spec on every rank, open the
 * database on rank 0 only after the spec is known to be good, sweep, and
 * record how the run ended. Each phase is a function of the run's state
 * (run_state) that returns an exit status, or RUN_GO to go on. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/util/shquote.h"
#include "ccsweep/dist/dist.h"
#include "ccsweep/sweep/serve_grid.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------------ */

typedef struct run_args {
    const char *spec, *db, *staged, *shard_dir;
    cli_catalogs catalogs;
    int resume, new_run, detail, quiet, verbose, locking;
    long chunk;
    double progress;
    long writers;    /* --writers: 0 not given, -1 node */
    long per_writer; /* --ranks-per-writer, 0 not given */
} run_args;

/* --writers: a count, or -1 for 'node' */
static int writers_arg(const char *text, void *dst)
{
    char *end;
    long v = strcmp(text, "node") ? strtol(text, &end, 10) : -1;
    if (v != -1 && !(*text && !*end && v >= 1 && v <= 1000000))
        return -1;
    memcpy(dst, &v, sizeof v);
    return 0;
}

static int locking_arg(const char *s)
{
    return !strcmp(s, "normal")      ? STORE_LOCK_NORMAL
           : !strcmp(s, "exclusive") ? STORE_LOCK_EXCLUSIVE
           : !strcmp(s, "none")      ? STORE_LOCK_NONE
                                     : -1;
}

/* clang-format off */
#define A run_args
static const cli_opt run_opts[] = {
    CLI_O_STR("db", "PATH", A, db,
              "database file, created if missing; every run is added,\n"
              "nothing is overwritten (results/ccsweep.db)"),
    CLI_O_FLAG("resume", A, resume,
               "continue the latest unfinished run of this same spec\n"
               "(same sha256), computing only what is not yet stored; starts\n"
               "a new run when there is none, does nothing when it is complete"),
    CLI_O_FLAG("new-run", A, new_run,
               "add a new run even when a complete run of this spec (same\n"
               "sha256, same catalog entries and profiles) is in the database;\n"
               "without it such a run is named and nothing is added (exit 1)"),
    CLI_O_FLAG("detail", A, detail, "also store per-region times (table regions; much larger)"),
    CLI_O_INT("chunk", "N", A, chunk, 1, 100000000,
              "scenarios per work request (default: adaptive)"),
    {.name = "progress", .kind = CLI_REAL, .arg = "SECS", CLI_AT(A, progress), .fmax = DBL_MAX,
     .expect = "a positive number of seconds",
     .help = "seconds between progress lines on stderr (3)"},
    CLI_O_FLAG("quiet", A, quiet, "no progress lines"),
    CLI_O_FLAG("verbose", A, verbose,
               "also print rank 0's peak RSS and CPU time, and its writer\n"
               "thread's CPU time, at the end"),
    CLI_O_CATALOG(A, catalogs,
                  "catalog overlay (directory or YAML file): its entries add to\n"
                  "and override the built-in ones by name; repeatable, later\n"
                  "wins; $CCSWEEP_CATALOG_PATH lists overlays too (':')"),
    CLI_O_ENUM("db-locking", "MODE", A, locking, locking_arg, "normal, exclusive or none",
               "normal: WAL, readers may query during the run; exclusive: one\n"
               "process holds the file (filesystems whose locks or shared\n"
               "memory do not work, e.g. some NFS/Lustre mounts); none: no\n"
               "locks at all (nothing else may open the file meanwhile)"),
    CLI_O_STR("staged-from", "PATH", A, staged,
              "--db is a working copy of PATH (e.g. on node-local disk) that\n"
              "is copied back afterwards: messages, the resume hint and the\n"
              "command line recorded in runs/sessions name PATH, and the\n"
              "shards are named after PATH (and written beside it without\n"
              "--shard-dir), so a later attempt finds them"),
    CLI_O_FN("writers", "N|node", A, writers, writers_arg,
             "a positive number of writers or 'node'",
             "N writer groups of consecutive ranks (node: one per node,\n"
             "MPI_Comm_split_type SHARED); each group's first rank writes\n"
             "its part of the grid into a shard file, rank 0 merges the\n"
             "shards into --db at the end: the same rows as one writer.\n"
             "Default 1: rank 0 writes everything, no shard files; more\n"
             "pay off when rank 0's inserts bound the sweep (many ranks)"),
    {.name = "ranks-per-writer", .kind = CLI_INT, .arg = "R", CLI_AT(A, per_writer), .min = 1,
     .max = 1000000, .expect = "a positive number of ranks",
     .help = "writer groups of R consecutive ranks (instead of --writers)"},
    CLI_O_STR("shard-dir", "DIR", A, shard_dir,
              "where the shards are written (the --db file's directory); rank\n"
              "0 must be able to read it (a filesystem all nodes share).\n"
              "Shards are named DB.TAG.runR.wW.shard (TAG: of the database's\n"
              "absolute path) and removed once merged"),
    CLI_O_HELP,
};
#undef A
/* clang-format on */

static void run_notes(FILE *f)
{
    fprintf(f,
            "\nSIGINT, SIGTERM or SIGUSR1 stop the sweep: committed rows stay, the run is marked\n"
            "interrupted and --resume completes it (merging first what shards of the run are\n"
            "left in the shard directory, whatever the writers of this session).\n"
            "Without --resume or --new-run, a spec whose sweep is already complete in the\n"
            "database (same sha256, catalog entries and profiles) adds nothing: the run is\n"
            "named and the exit status is 1.\n"
            "Exit status: 0 done, 1 bad spec or options (or a complete run of the spec is\n"
            "there), 2 runtime failure, 128+signal when interrupted.\n");
}

static const cli_cmd run_cmd = {
    .name = "run",
    .synopsis = "[mpirun -n N] ccsweep run SPEC.yaml [--db PATH] [--resume | --new-run]\n"
                "                     [--detail]"
                " [--chunk N] [--progress SECS] [--quiet] [--verbose]\n"
                "                     [--catalog PATH]\n"
                "                     [--db-locking normal|exclusive|none] [--staged-from PATH]\n"
                "                     [--writers N|node | --ranks-per-writer R] [--shard-dir DIR]",
    .about = "Sweeps the spec's model x hardware x generation x plan grid (format:\n"
             "sweeps/README.md) across the MPI ranks into one SQLite database (schema and\n"
             "example queries: results/README.md). Rank 0 writes; the other ranks project.",
    .opts = run_opts,
    .n_opts = sizeof run_opts / sizeof run_opts[0],
    .col = 18,
    .notes = run_notes,
};

/* Returns 0, or 1 with the message printed when print is set. */
static int parse_args(int argc, char **argv, run_args *a, int print)
{
    FILE *e = print ? stderr : NULL;
    int first;
    if (cli_opt_parse(&run_cmd, argc, argv, a, e, &first) != CLI_OK)
        return 1;
    if (first < argc)
        a->spec = argv[first++];
    if (first < argc)
        return cli_fail_to(e, "run", "unexpected argument '%s'", argv[first]);
    if (a->writers && a->per_writer)
        return cli_fail_to(e, "run", "give --writers or --ranks-per-writer, not both");
    if (a->resume && a->new_run)
        return cli_fail_to(e, "run", "give --resume or --new-run, not both");
    if (!a->spec)
        return cli_fail_to(e, "run",
                           "a spec file is required, e.g. 'ccsweep run "
                           "sweeps/default.yaml'");
    return 0;
}

/* The database the shards are named after (and, without --shard-dir, put
 * beside): the user's file. A working copy (--staged-from) has a path of its
 * own in every attempt (the Slurm template's scratch directory is per job and
 * restart), so shards named after it would be another database's to the
 * requeued or resubmitted job, which would recompute their rows and leave
 * them behind. */
static const char *shard_db(const run_args *a)
{
    return a->staged ? a->staged : a->db;
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
        cli_fail("run", "%s%s",
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
        if (*todo && *n_todo) /* nothing left to do: t may be NULL */
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
        if (store_shard_path(path, sizeof path, a->shard_dir, shard_db(a), run[0], widx)) {
            ccs_err_set(err, "--shard-dir: the shard path is too long");
            rc = CCS_EINPUT;
        }
        store_run_info info = {.argv = joined,
                               .ranks = dist_size(grp),
                               .detail = a->detail,
                               .shard_of = run[0],
                               .shard_started = started};
        if (rc == CCS_OK) {
            /* Shards an earlier session left were merged (or found stale and
             * removed) before the sweep; a file still here could not be read
             * (left by store_absorb_shards): keep it aside, never delete it. */
            char aside[PATH_MAX + 16];
            snprintf(aside, sizeof aside, "%s.unreadable", path);
            if (access(path, F_OK) == 0 && rename(path, aside) == 0)
                fprintf(stderr, "ccsweep: %s could not be merged; kept as %s\n", path, aside);
            store_remove_file(path); /* its -wal and -shm, if any */
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
        store_shard_path(path, sizeof path, a->shard_dir, shard_db(a), run[0], i);
        if (stat(path, &sb) != 0) {
            cli_fail("run",
                     "--shard-dir: the shard of writer %d (%s) is not visible from rank 0: give "
                     "a --shard-dir on a filesystem every node shares",
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
    int r =
        store_absorb_shards(st, a->shard_dir, shard_db(a), a->quiet ? NULL : stderr, &merged, err);
    if (r != CCS_OK)
        return r;
    if (!a->quiet)
        fprintf(stderr, "ccsweep: merged %d shard%s in %.2f s\n", merged, merged == 1 ? "" : "s",
                dist_clock() - t0);
    if (merged != nw - 1) {
        ccs_err_set(err,
                    "%s: %d of the %d shards were found to merge; --resume recomputes the rest",
                    shard_db(a), merged, nw - 1);
        return CCS_EIO;
    }
    if (rc == CCS_OK && spec_keep_rule(grid_spec(g)))
        return dist_keep_reduce(g, st, err);
    return rc;
}

/* ---- phases ------------------------------------------------------------------- */

enum { RUN_GO = -1 }; /* a phase's "go on": exit statuses are >= 0 */

/* Everything one rank holds during a run; run_state_free releases it. */
typedef struct run_state {
    run_args a;
    char **typed;       /* argv as typed: getopt permutes argv */
    char *joined;       /* the command line recorded (rank 0) */
    const char *shown;  /* what messages call the database: the user's file, not a staged copy */
    dist_comm *w, *grp; /* the world; this rank's writer group, when there are several */
    int rank, ranks, nw, widx, kind; /* kind: store_prepare_run's (rank 0) */
    ccs_catalog *cat;
    char *text; /* the spec's bytes, as rank 0 read them */
    ccs_spec *spec;
    ccs_grid *g;
    ccs_store *st;
    store_range *todo, *part; /* the run's todo ranges, the group's part */
    size_t n_todo, n_part;
    ccs_err err;
} run_state;

/* Options and the checks that need the ranks; the command line to record. */
static int run_setup(run_state *s, int argc, char **argv)
{
    const run_args *a = &s->a;
    int rc = parse_args(argc, argv, &s->a, s->rank == 0) ? CCS_EINPUT : CCS_OK;
    if (dist_agree(s->w, rc) != CCS_OK)
        return 1; /* rank 0 has printed the usage error */
    if (a->writers > s->ranks) {
        if (s->rank == 0)
            cli_fail("run",
                     "--writers %ld: more writers than MPI ranks (%d); a writer is a rank: give "
                     "at most %d, or start more ranks",
                     a->writers, s->ranks, s->ranks);
        return 1;
    }
    struct stat sb;
    if (s->rank == 0 && a->shard_dir && stat(a->shard_dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        cli_fail("run", "--shard-dir %s: not a directory", a->shard_dir);
        rc = CCS_EINPUT;
    }
    if (dist_agree(s->w, rc) != CCS_OK)
        return 1;
    s->shown = a->staged ? a->staged : a->db;
    if (s->rank == 0 && !(s->joined = join_argv(argc, s->typed, a->staged)))
        rc = CCS_ENOMEM;
    if (dist_agree(s->w, rc) != CCS_OK)
        return 2;
    return RUN_GO;
}

/* Spec and catalog on every rank: rank 0 reads the file once and broadcasts
 * it, so all ranks build the same grid from the same bytes. */
static int run_load(run_state *s)
{
    s->cat = catalog_new();
    int rc = s->cat ? catalog_load_layers(s->cat, s->a.catalogs.path, s->a.catalogs.n, &s->err)
                    : CCS_ENOMEM;
    if (agree(s->w, rc, &s->err) != CCS_OK)
        return 1;
    long len = -1;
    if (s->rank == 0) {
        size_t n;
        if (spec_read_file(s->a.spec, &s->text, &n, &s->err) == CCS_OK)
            len = (long)n;
    }
    rc = dist_bcast_text(s->w, &s->text, &len);
    if (rc == CCS_OK && serve_spec_is_serve(s->text, (size_t)len)) { /* cli_run_serve.c */
        const run_args *a = &s->a;
        const char *shards = a->writers > 1 || a->writers < 0 ? "--writers"
                             : a->per_writer                  ? "--ranks-per-writer"
                             : a->shard_dir                   ? "--shard-dir"
                                                              : NULL;
        return cli_run_serve(&(cli_serve_run){a->spec, s->text, (size_t)len, s->cat, a->db,
                                              s->shown, s->joined, a->locking, a->resume,
                                              a->new_run, a->detail, a->quiet, s->ranks, shards});
    }
    if (rc == CCS_OK) {
        s->spec = spec_parse(s->text, (size_t)len, s->a.spec, s->cat, &s->err);
        rc = s->spec ? CCS_OK : CCS_EINPUT;
    }
    if (rc == CCS_OK) {
        s->g = grid_new(s->spec, &s->err);
        rc = s->g ? CCS_OK : CCS_EINPUT;
    }
    if (agree(s->w, rc, &s->err) != CCS_OK)
        return 1;
    dist_test_load_delay();
    /* a signal while the spec was read and checked: stop before the database
     * is touched, with the signal's status (the highest signal of any rank) */
    int sig = -dist_agree(s->w, -dist_signal());
    if (sig) {
        if (s->rank == 0)
            cli_fail("run", "interrupted by signal %d while loading %s; nothing was written", sig,
                     s->a.spec);
        return 128 + sig;
    }
    return RUN_GO;
}

int cli_run_done_before(const char *db_shown, int64_t run_id)
{
    char q[4 * PATH_MAX + 3];
    return cli_fail("run",
                    "run %lld of this spec (the same sha256, catalog entries and profiles) is "
                    "already complete in %s: nothing was added. Query it (sqlite3 %s \"SELECT * "
                    "FROM runs WHERE run_id = %lld\"), or add --new-run to sweep it again as a "
                    "new run",
                    (long long)run_id, db_shown, ccs_shquote(q, sizeof q, db_shown),
                    (long long)run_id);
}

/* The spec is good: only now is the database touched (rank 0). 0 when the
 * run is already complete. */
static int run_open(run_state *s)
{
    int rc = CCS_OK;
    s->kind = STORE_NEW;
    if (s->rank == 0) {
        store_run_info info = {.argv = s->joined, .ranks = s->ranks, .detail = s->a.detail};
        s->st = store_open(s->a.db, s->a.locking, &rc, &s->err);
        if (s->st)
            s->kind = rc = store_prepare_run(s->st, s->g, &info,
                                             s->a.resume    ? STORE_MODE_RESUME
                                             : s->a.new_run ? STORE_MODE_APPEND
                                                            : STORE_MODE_NEW,
                                             &s->err);
        /* failed before its claim: another live writer is the reason where
         * there is one (store_writer_holds) */
        if (rc < 0 && store_writer_holds(s->a.db, &s->err))
            rc = CCS_EINPUT;
        /* shards an earlier session left (killed, or killed while merging) */
        int merged = 0;
        if (rc >= 0 && s->kind != STORE_NOTHING && s->kind != STORE_DONE_BEFORE &&
            (rc = store_absorb_shards(s->st, s->a.shard_dir, shard_db(&s->a),
                                      s->a.quiet ? NULL : stderr, &merged, &s->err)) == CCS_OK)
            rc = s->kind;
        if (rc < 0)
            cli_fail("run", "%s", s->err.msg);
    }
    rc = dist_agree(s->w, rc < 0 ? rc : CCS_OK);
    if (rc != CCS_OK)
        return rc == CCS_EINPUT ? 1 : 2;
    /* every rank learns whether rank 0 found the sweep already complete */
    if (dist_agree(s->w, s->kind == STORE_DONE_BEFORE ? -1 : 0) < 0) {
        return s->rank == 0 ? cli_run_done_before(s->shown, store_run_id(s->st)) : 1;
    }
    if (dist_agree(s->w, s->kind == STORE_NOTHING ? -1 : 0) < 0) {
        if (s->rank == 0)
            printf("ccsweep run: run %lld of this spec is already complete in %s; nothing to "
                   "resume\n",
                   (long long)store_run_id(s->st), s->shown);
        return 0;
    }
    return RUN_GO;
}

/* Writer groups: each group's first rank writes a shard of its part. */
static int run_writers(run_state *s)
{
    const run_args *a = &s->a;
    if (a->writers > 1 || a->writers < 0 || a->per_writer) {
        int color = a->writers > 1  ? (int)((int64_t)s->rank * a->writers / s->ranks)
                    : a->per_writer ? (int)(s->rank / a->per_writer)
                                    : -1;
        if (!(s->grp = dist_split_writers(s->w, color, &s->widx, &s->nw)))
            return 2;
        if (s->nw == 1) {
            dist_comm_free(s->grp); /* one writer: rank 0 writes, as without the option */
            s->grp = NULL;
        }
    }
    if (s->grp) {
        int rc = open_shard(s->w, s->grp, a, s->widx, s->nw, s->g, s->joined, &s->st, &s->todo,
                            &s->n_todo, &s->part, &s->n_part, &s->err);
        if (rc != CCS_OK && s->rank == 0)
            store_finish(s->st, STORE_FAILED, NULL,
                         &s->err); /* nothing swept: --resume starts it */
        if (rc != CCS_OK)
            return rc == CCS_EINPUT ? 1 : 2;
    }
    return RUN_GO;
}

/* Rank 0: what is about to be swept, on stderr. */
static void run_announce(const run_state *s)
{
    if (s->rank != 0 || s->a.quiet)
        return;
    store_counts c;
    store_counts_get(s->st, &c);
    char writers[32] = "";
    if (s->nw > 1)
        snprintf(writers, sizeof writers, ", %d writers", s->nw);
    if (s->kind == STORE_RESUMED)
        fprintf(stderr, "ccsweep: resuming run %lld: %lld of %lld scenarios already done\n",
                (long long)store_run_id(s->st), (long long)c.done, (long long)grid_count(s->g));
    else
        fprintf(stderr, "ccsweep: run %lld: %lld scenarios on %d rank%s%s -> %s%s\n",
                (long long)store_run_id(s->st), (long long)grid_count(s->g), s->ranks,
                s->ranks > 1 ? "s" : "", writers, s->shown,
                s->a.resume ? " (nothing to resume: new run)" : "");
}

/* The sweep, then with writer groups the end of the shards and rank 0's
 * merge. Returns the sweep's status (rank 0's is the run's). */
static int run_sweep(run_state *s, dist_stats *ds)
{
    dist_opts o = {.chunk = s->a.chunk,
                   .progress = s->a.progress,
                   .quiet = s->a.quiet,
                   .detail = s->a.detail,
                   .log = stderr,
                   .todo = s->part,
                   .n_todo = s->n_part,
                   .writer = s->widx,
                   .writers = s->nw};
    if (s->widx > 0)
        o.quiet = 1; /* rank 0 reports its group's progress */
    int rc = dist_sweep(s->grp ? s->grp : s->w, s->g, s->st, &o, ds, &s->err);
    if (!s->grp)
        return rc;
    int leader = dist_rank(s->grp) == 0;
    if (leader && s->widx > 0) {
        if (rc < 0) {
            /* its rows committed so far stay in the shard: --resume merges them */
            cli_fail("run", "writer %d: %s", s->widx + 1, s->err.msg);
            store_close(s->st);
            s->st = NULL;
            dist_abort(s->w, rc == CCS_EINPUT ? 1 : 2);
        }
        if (store_seal(s->st, &s->err) != CCS_OK)
            cli_fail("run", "writer %d: %s", s->widx + 1, s->err.msg);
        store_close(s->st);
        s->st = NULL;
    }
    if (!leader)
        ds->done = ds->rows = ds->ok = ds->invalid = ds->oom = 0;
    if (s->rank != 0 || rc >= 0)
        dist_sum_stats(s->w, ds); /* rank 0 failing ends the job below */
    if (s->rank == 0 && rc == CCS_OK && ds->signal)
        rc = DIST_INTERRUPTED; /* another group was stopped */
    if (s->rank == 0 && rc >= 0) {
        double t0 = dist_clock();
        rc = merge_shards(s->st, &s->a, s->nw, s->g, rc, &s->err);
        ds->seconds += dist_clock() - t0; /* the sweep's time includes its merge */
    }
    return rc;
}

const char *cli_run_resume_command(char *out, size_t n, const char *spec, const char *db,
                                   const char *shard_dir)
{
    char qs[4 * PATH_MAX + 3], qd[4 * PATH_MAX + 3], qh[4 * PATH_MAX + 3] = "";
    if (shard_dir)
        ccs_shquote(qh, sizeof qh, shard_dir);
    snprintf(out, n, "ccsweep run %s --db %s --resume%s%s", ccs_shquote(qs, sizeof qs, spec),
             ccs_shquote(qd, sizeof qd, db), *qh ? " --shard-dir " : "", qh);
    return out;
}

/* The command that finishes this run: DB the user's file, not a staged copy,
 * with the run's --shard-dir when it had one (the shards a failed merge left
 * there are merged only by a resume that looks there). */
static const char *resume_command(const run_state *s, char *out, size_t n)
{
    return cli_run_resume_command(out, n, s->a.spec, s->shown, s->a.shard_dir);
}

/* Rank 0: the run's summary line, resource use and how to resume. */

static void run_summary(const run_state *s, int status, const store_counts *fin,
                        const dist_stats *ds)
{
    const run_args *a = &s->a;
    static const char *const words[] = {"running", "complete", "interrupted", "failed"};
    printf("ccsweep run: run %lld %s: %lld/%lld scenarios in %.2f s (%.0f/s this session), "
           "%lld rows (ok %lld, invalid %lld, oom %lld, filtered %lld) -> %s\n",
           (long long)store_run_id(s->st), words[status], (long long)fin->done,
           (long long)grid_count(s->g), ds->seconds, ds->seconds > 0 ? ds->done / ds->seconds : 0,
           (long long)fin->rows, (long long)fin->ok, (long long)fin->invalid, (long long)fin->oom,
           (long long)fin->filtered, s->shown);
    struct rusage ru;
    if (a->verbose && getrusage(RUSAGE_SELF, &ru) == 0)
        fprintf(stderr,
                "ccsweep: rank 0 peak RSS %.1f MiB\nccsweep: rank 0 CPU %.3f s (user + system)\n",
                ru.ru_maxrss / 1024.0,
                ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
                    1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec));
    if (a->verbose && ds->writer_cpu > 0)
        fprintf(stderr, "ccsweep: rank 0 writer thread CPU %.3f s (of the above)\n",
                ds->writer_cpu);
    if (status == STORE_INTERRUPTED) {
        char cmd[CLI_RESUME_CMD_MAX];
        printf("ccsweep run: interrupted by signal %d; committed rows are kept, finish with: %s\n",
               ds->signal, resume_command(s, cmd, sizeof cmd));
    }
    fflush(stdout);
}

/* Record how the run ended (rank 0) and agree on the exit status. */
static int run_finish(run_state *s, int rc, const dist_stats *ds)
{
    if (s->rank != 0) {
        /* the sweep's status is rank 0's (it is the one that stored the rows) */
        return -dist_agree(s->w, 0);
    }
    int status = rc == CCS_OK             ? STORE_COMPLETE
                 : rc == DIST_INTERRUPTED ? STORE_INTERRUPTED
                                          : STORE_FAILED;
    if (rc < 0)
        cli_fail("run", "%s", s->err.msg);
    store_counts fin;
    ccs_err ferr;
    if (store_finish(s->st, status, &fin, &ferr) != CCS_OK) {
        /* the file holds what was committed; say so rather than nothing */
        if (!(rc < 0 && store_disk_full(s->st)))
            cli_fail("run", "%s", ferr.msg);
        store_counts_committed(s->st, &fin);
        status = STORE_FAILED;
    }
    if (store_disk_full(s->st)) {
        char cmd[CLI_RESUME_CMD_MAX];
        cli_fail("run",
                 "the disk holding %s is full: free space (or move the database to a larger "
                 "disk), then finish the run with: %s",
                 s->a.db, resume_command(s, cmd, sizeof cmd));
    }
    run_summary(s, status, &fin, ds);
    int exit_code = status == STORE_COMPLETE      ? 0
                    : status == STORE_INTERRUPTED ? 128 + ds->signal
                                                  : 2;
    if (rc == CCS_EINPUT)
        exit_code = 1; /* the spec's filter is undefined for a scenario */
    if (status == STORE_FAILED && s->ranks > 1) {
        /* workers may be mid-chunk or waiting: the data is safe, end the job */
        store_close(s->st);
        s->st = NULL;
        dist_abort(s->w, exit_code);
    }
    /* every worker has said goodbye: all ranks end with rank 0's status */
    dist_agree(s->w, -exit_code);
    return exit_code;
}

static void run_state_free(run_state *s)
{
    dist_comm_free(s->grp);
    free(s->todo);
    free(s->part);
    store_close(s->st);
    grid_free(s->g);
    spec_free(s->spec);
    catalog_free(s->cat);
    free(s->text);
    free(s->joined);
    free(s->typed);
}

/* ---- the command ----------------------------------------------------------------- */

int cli_run(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (cli_launch_rank() == 0)
                cli_opt_help(&run_cmd, stdout);
            return 0;
        }
    }
    run_state s = {.a = {.db = "results/ccsweep.db", .progress = 3.0}, .nw = 1};
    /* getopt permutes argv: keep the order as typed for the record */
    if (!(s.typed = malloc(((size_t)argc + 1) * sizeof *s.typed))) {
        cli_fail("run", "out of memory");
        return 2;
    }
    memcpy(s.typed, argv, ((size_t)argc + 1) * sizeof *s.typed);
    if (dist_init(&argc, &argv) != CCS_OK) {
        cli_fail("run", "MPI_Init failed");
        free(s.typed);
        return 2;
    }
    dist_catch_signals();
    s.w = dist_world();
    s.rank = dist_rank(s.w);
    s.ranks = dist_size(s.w);
    int code = run_setup(&s, argc, argv);
    if (code == RUN_GO)
        code = run_load(&s);
    if (code == RUN_GO)
        code = run_open(&s);
    if (code == RUN_GO)
        code = run_writers(&s);
    if (code == RUN_GO) {
        dist_stats ds;
        run_announce(&s);
        int rc = run_sweep(&s, &ds);
        code = run_finish(&s, rc, &ds);
    }
    run_state_free(&s);
    dist_finalize();
    return code;
}
