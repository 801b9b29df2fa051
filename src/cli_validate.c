/* cli_validate.c - 'ccsweep validate': projection validation (not yet in this build). */
#include "ccsweep/cli.h"

int cli_validate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ccsweep validate: not available in this build\n");
    return 2;
}
