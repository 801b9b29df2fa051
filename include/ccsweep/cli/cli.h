/* cli.h - subcommands. Each takes the arguments after its name (argv[0] is
 * the subcommand) and returns the process exit status: 0 ok, 1 usage or input
 * error (message on stderr names the file, line and field), 2 runtime failure. */
#ifndef CCSWEEP_CLI_H
#define CCSWEEP_CLI_H

#include "ccsweep/model/catalog.h"
#include "ccsweep/cost/timeline.h"

#include <stdio.h>

int cli_project(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_run(int argc, char **argv);      /* cli_run.c: the MPI sweep */
int cli_validate(int argc, char **argv); /* cli_validate.c: projection vs measurement */
int cli_report(int argc, char **argv);   /* cli_report.c: report and plots from a database */
int cli_search(int argc, char **argv);   /* cli_search.c: the best plans of one training job */

/* Shared helpers for subcommands. */

/* Parse a decimal integer option value in [min, max]; on error prints
 * "ccsweep CMD: --opt: expected ..., got 'text'" and returns -1. */
int cli_int(const char *cmd, const char *opt, const char *text, long min, long max, long *out);

/* The process's rank when a launcher (mpirun, srun) started it, from the
 * launcher's environment (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK,
 * SLURM_PROCID); 0 otherwise. Subcommands other than 'run' do not use MPI:
 * main runs them on rank 0 only, so a launcher prints their output once. */
int cli_launch_rank(void);

/* The candidate closest to word (edit distance, or word a prefix of it) when
 * it is close enough to be a likely typo, else NULL. Borrowed from cands. */
const char *cli_suggest(const char *word, const char *const *cands, size_t n);

/* One line on stderr for an option getopt_long rejected (arg as typed):
 * "needs a value" for a known option, else "unknown option" with the closest
 * option of opts (NULL-terminated getopt table) as a suggestion. */
struct option;
void cli_bad_option(const char *cmd, const char *arg, const struct option *opts);

/* Most --catalog options one command takes. */
#define CLI_MAX_CATALOGS 16

/* Add a --catalog value to overlays[*n] (at most CLI_MAX_CATALOGS); prints the
 * error and returns -1 when there are too many. */
int cli_add_catalog(const char *cmd, const char **overlays, size_t *n, const char *path);

/* Load the layered catalog (catalog_load_layers: the built-in one,
 * $CCSWEEP_CATALOG_PATH, then overlays[0..n)). Prints the error and returns
 * NULL on failure. */
ccs_catalog *cli_catalog(const char *cmd, const char *const *overlays, size_t n);

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

/* The JSON object (jansson) of one projection, keys as the database's
 * results_view columns, with "regions" only when regions is not NULL
 * (src as for cli_print_json). The
 * caller owns it (json_decref); NULL when out of memory. */
struct json_t;
struct json_t *cli_json_projection(const ccs_model *m, const ccs_hw *hw, const char *evolution,
                                   const ccs_plan *p, const ccs_result *r,
                                   const ccs_region_time *regions, const cli_op_sources *src);

/* Print a one-object JSON description of a projection (jansson) to f.
 * regions and src may be NULL. Returns 0, or -1 when out of memory. */
int cli_print_json(FILE *f, const ccs_model *m, const ccs_hw *hw, const char *evolution,
                   const ccs_plan *p, const ccs_result *r, const ccs_region_time *regions,
                   const cli_op_sources *src);

#endif
