/* cli.h - subcommands. Each takes the arguments after its name (argv[0] is
 * the subcommand) and returns the process exit status: 0 ok, 1 usage or input
 * error (message on stderr names the file, line and field), 2 runtime failure. */
#ifndef CCSWEEP_CLI_H
#define CCSWEEP_CLI_H

#include "ccsweep/catalog.h"
#include "ccsweep/timeline.h"

#include <stdio.h>

int cli_project(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_run(int argc, char **argv);      /* cli_run.c: the MPI sweep */
int cli_validate(int argc, char **argv); /* cli_validate.c: projection vs measurement */
int cli_report(int argc, char **argv);   /* cli_report.c: report and plots from a database */

/* Shared helpers for subcommands. */

/* Parse a decimal integer option value in [min, max]; on error prints
 * "ccsweep CMD: --opt: expected ..., got 'text'" and returns -1. */
int cli_int(const char *cmd, const char *opt, const char *text, long min, long max, long *out);

/* Load the catalog from dir (NULL: catalog_default_dir). Prints the error and
 * returns NULL on failure. */
ccs_catalog *cli_catalog(const char *cmd, const char *dir);

/* Print a one-object JSON description of a projection (jansson) to f.
 * regions may be NULL. Returns 0, or -1 when out of memory. */
int cli_print_json(FILE *f, const ccs_model *m, const ccs_hw *hw, const char *evolution,
                   const ccs_plan *p, const ccs_result *r, const ccs_region_time *regions);

#endif
