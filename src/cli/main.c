/* main.c - ccsweep entry point: dispatches to a subcommand. */
#include "ccsweep/cli/cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"run", cli_run, "sweep a spec's scenario grid with MPI into a SQLite database"},
    {"project", cli_project, "project one model x hardware x plan scenario"},
    {"list", cli_list, "list catalog models, hardware or evolution rules"},
    {"validate", cli_validate, "compare operator-model projections with measured iterations"},
    {"report", cli_report, "write a report with plots from a sweep database"},
    {"serve", cli_serve, "project serving: prefill, decode, KV cache, TTFT, TPOT, tokens/s"},
    {"catalog", cli_catalog_command, "import a Hugging Face config.json as a catalog entry"},
    {"compare", cli_compare, "best plans across hardware, generations, stacks, or stored runs"},
    {"search", cli_search, "find the best parallel plans for one model, hardware and device count"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ccsweep COMMAND [OPTIONS]\n\n"
               "Projects computation vs. communication of Transformer training on\n"
               "today's and future hardware, for one scenario or millions.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'ccsweep COMMAND --help' describes a command. 'ccsweep --version' prints the "
               "version.\n");
}

int main(int argc, char **argv)
{
    /* Only 'run' and 'search' are MPI programs: under a launcher (mpirun -n 2
     * ccsweep list ...) every other command runs on the first rank only. */
    if (cli_launch_rank() > 0 &&
        !(argc > 1 && (!strcmp(argv[1], "run") || !strcmp(argv[1], "search"))))
        return 0;
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("ccsweep %s (%s)\n", CCS_VERSION, CCS_GIT_REV);
        return 0;
    }
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        names[i] = commands[i].name;
        if (strcmp(argv[1], commands[i].name))
            continue;
        return commands[i].fn(argc - 1, argv + 1);
    }
    const char *best = cli_suggest(argv[1], names, sizeof names / sizeof names[0]);
    if (best)
        fprintf(stderr,
                "ccsweep: unknown command '%s'; did you mean '%s'? (see 'ccsweep --help')\n",
                argv[1], best);
    else
        fprintf(stderr, "ccsweep: unknown command '%s' (see 'ccsweep --help')\n", argv[1]);
    return 1;
}
