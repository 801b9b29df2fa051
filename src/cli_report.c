/* cli_report.c - 'ccsweep report': reports (not yet in this build). */
#include "ccsweep/cli.h"

int cli_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ccsweep report: not available in this build\n");
    return 2;
}
