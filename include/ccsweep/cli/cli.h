/* cli.h - subcommands. Each takes the arguments after its name (argv[0] is
 * the subcommand) and returns the process exit status: 0 ok, 1 usage or input
 * error (message on stderr names the file, line and field), 2 runtime failure. */
#ifndef CCSWEEP_CLI_H
#define CCSWEEP_CLI_H

#include "ccsweep/model/catalog.h"
#include "ccsweep/cost/timeline.h"
#include "ccsweep/cli/cli_opt.h"

#include <limits.h>
#include <stdio.h>

int cli_project(int argc, char **argv);  /* cli_project.c: one scenario */
int cli_list(int argc, char **argv);     /* cli_list.c: catalog entries */
int cli_run(int argc, char **argv);      /* cli_run.c: the MPI sweep */
int cli_validate(int argc, char **argv); /* cli_validate.c: projection vs measurement */
int cli_report(int argc, char **argv);   /* cli_report.c: report and plots from a database */
int cli_search(int argc, char **argv);   /* cli_search.c: the best plans of one training job */
int cli_serve(int argc, char **argv);    /* cli_serve.c: one serving projection */
int cli_compare(int argc, char **argv);  /* cli_compare.c: a job across configurations */
int cli_catalog_command(int argc, char **argv); /* cli_catalog.c: catalog import */
int cli_search_serve(int argc, char **argv);    /* cli_search_serve.c: 'search --serve' */

/* 'compare --db' (cli_compare_runs.c): stored runs side by side. */
#define CLI_CMP_MAX_RUNS 16
/* --across: the dimensions in which paired groups may differ. */
enum { CLI_ACROSS_HW = 1, CLI_ACROSS_GEN = 2, CLI_ACROSS_STACK = 4 };
typedef struct cli_run_ref {
    const char *db; /* borrowed from argv */
    int64_t run;    /* 0: the database's latest training run */
} cli_run_ref;
typedef struct cli_compare_runs_opts {
    cli_run_ref runs[CLI_CMP_MAX_RUNS];
    int n;
    unsigned across; /* CLI_ACROSS_* */
    /* only groups of this work (NULL, 0: any) */
    const char *model;
    long devices, gbs, seq;
    int json;
} cli_compare_runs_opts;
/* Line up the best plans (view best_plan) of the n >= 2 runs o names, group
 * by group at equal work, and print them (text or JSON) on stdout. The exit
 * status: 1 for a missing file, a file that is not a ccsweep database, a run
 * that is not there, a serving run, a group a run holds twice under --across
 * (message on stderr); 2 when out of memory. */
int cli_compare_runs(const cli_compare_runs_opts *o);

/* Shared helpers for subcommands; messages for bad input go through
 * cli_fail (cli_opt.h). */

/* The process's rank when a launcher (mpirun, srun) started it, from the
 * launcher's environment (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK,
 * SLURM_PROCID); 0 otherwise. Subcommands other than 'run' do not use MPI:
 * main runs them on rank 0 only, so a launcher prints their output once. */
int cli_launch_rank(void);

/* Load the layered catalog (catalog_load_layers: the built-in one,
 * $CCSWEEP_CATALOG_PATH, then the overlays). Prints the error and returns
 * NULL on failure; the caller owns the catalog (catalog_free). */
ccs_catalog *cli_catalog(const char *cmd, const cli_catalogs *overlays);

/* The kinds of catalog entry a command line names. */
typedef enum cli_entry {
    CLI_ENTRY_MODEL,
    CLI_ENTRY_HW,
    CLI_ENTRY_EVOLUTION,
    CLI_ENTRY_STACK
} cli_entry;

/* Print that name is no entry of kind in cat ("ccsweep CMD: --hw: unknown
 * hardware 'h100'; did you mean 'h100-sxm'? (see 'ccsweep list hardware')"),
 * with the hint when an entry is close. Returns 1. */
int cli_unknown(const char *cmd, const ccs_catalog *cat, cli_entry kind, const char *name);

/* Where the operators of one scenario are costed from: one entry per
 * operator kind and dtype (compute) or level (collectives, 0 intra, 1 inter)
 * that its operator list holds, measured when the calibration profile has a
 * curve for it (opmodel_measured). */
typedef struct cli_op_source {
    int kind, dtype, level, measured;
} cli_op_source;
typedef struct cli_op_sources {
    int n, n_measured;
    cli_op_source v[2 * CCS_OP_N * CCS_DTYPE_N];
    const char *calibration; /* the profile's path, or NULL: all synthetic */
} cli_op_sources;
struct ccs_opmodel;
/* Fill out for a valid plan p of m on hw, costed with om (NULL: synthetic)
 * loaded from calibration (borrowed). */
void cli_op_sources_of(const ccs_model *m, const ccs_plan *p, const ccs_hw *hw,
                       const struct ccs_opmodel *om, const char *calibration, cli_op_sources *out);

/* Print s to f as one CSV field: quoted (quotes doubled) when it holds a
 * comma, a quote or a newline. */
void cli_csv_field(FILE *f, const char *s);

/* The JSON object (jansson) of one projection, keys as the database's
 * columns of the view results, with "regions" only when regions is not NULL
 * (src as for cli_print_json). The
 * caller owns it (json_decref); NULL when out of memory. */
struct json_t;
struct json_t *cli_json_projection(const ccs_model *m, const ccs_hw *hw, const char *evolution,
                                   const ccs_stack *st, const ccs_plan *p, const ccs_result *r,
                                   const ccs_region_time *regions, const cli_op_sources *src);

/* Set o's key to arr (unless rc is already non-zero), print o to stdout as
 * the commands print JSON (indented, 15 significant digits, a newline) and
 * release both. Returns 0, or -1 when rc was non-zero or a step failed. */
int cli_json_emit(struct json_t *o, struct json_t *arr, const char *key, int rc);

/* Print a one-object JSON description of a projection (jansson) to f.
 * st (NULL: the default stack), regions and src may be NULL. Returns 0, or
 * -1 when out of memory. */
int cli_print_json(FILE *f, const ccs_model *m, const ccs_hw *hw, const char *evolution,
                   const ccs_stack *st, const ccs_plan *p, const ccs_result *r,
                   const ccs_region_time *regions, const cli_op_sources *src);

/* 'run' of a serving spec (cli_run_serve.c): what cli_run read and parsed. */
typedef struct cli_serve_run {
    const char *spec, *text; /* the spec's path and bytes (len of them) */
    size_t len;
    const ccs_catalog *cat;
    const char *db, *db_shown, *argv; /* the file, its name in messages, the command line */
    int locking, resume, new_run, detail, quiet, ranks;
    const char *shards; /* a shard option given ("--writers", ...), or NULL */
} cli_serve_run;
/* The option rows of the serving formats and prefill mode, shared by 'serve'
 * and 'search --serve': T the args struct, P its ccs_serve_plan field, NC
 * its int for --no-chunked-prefill. */
/* clang-format off */
#define CLI_O_SERVE_FORMATS(T, P, NC)                                                            \
    CLI_O_ENUM("weight-dtype", "T", T, P.wdtype, serve_dtype_parse, "bf16, fp16, fp8 or fp4",    \
               "weight format: bf16, fp16, fp8 or fp4 (NVFP4) (bf16)"),                           \
    CLI_O_ENUM("kv-dtype", "T", T, P.kvdtype, serve_dtype_parse, "bf16, fp16, fp8 or fp4",       \
               "KV-cache format (bf16)"),                                                         \
    CLI_O_FLAG("no-chunked-prefill", T, NC, "prefill in iterations of its own that stall decode")
/* clang-format on */
/* Run it on rank 0 (other ranks return 0); the exit status. */
int cli_run_serve(const cli_serve_run *a);
/* The command that finishes an unfinished run, each word quoted for the
 * shell so that it pastes as it is: "ccsweep run SPEC --db DB --resume", with
 * --shard-dir DIR when shard_dir is not NULL (a failed merge left shards
 * there). Returns out (CLI_RESUME_CMD_MAX bytes hold any). */
#define CLI_RESUME_CMD_MAX (12 * PATH_MAX + 96)
const char *cli_run_resume_command(char *out, size_t n, const char *spec, const char *db,
                                   const char *shard_dir);
/* 'run' found run run_id of the spec complete with the same inputs in the
 * database (shown as db_shown) and added nothing: says so, naming --new-run,
 * for a training and a serving spec alike. Returns 1, the exit status. */
int cli_run_done_before(const char *db_shown, int64_t run_id);

/* The catalog (*cat, the caller's to free; NULL on failure), model *m
 * (borrowed from it) and hardware at generation gen (*hw) a serving command
 * names; 0, or the exit status with the message printed (cmd names the
 * command). */
struct ccs_serve_plan;
struct ccs_serve_result;
int cli_serve_resolve(const char *cmd, const cli_catalogs *overlays, const char *model,
                      const char *hwname, const char *evolution, long gen, ccs_catalog **cat,
                      const ccs_model **m, ccs_hw *hw);
/* The JSON object of one serving projection (the keys 'serve --json'
 * documents); the caller owns it; NULL when out of memory. */
struct json_t *cli_serve_json(const char *model, const ccs_hw *hw, long gen,
                              const struct ccs_serve_plan *p, const struct ccs_serve_result *r);

#endif
