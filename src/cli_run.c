/* cli_run.c - 'ccsweep run': the MPI sweep (not yet in this build). */
#include "ccsweep/cli.h"

int cli_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ccsweep run: not available in this build\n");
    return 2;
}
