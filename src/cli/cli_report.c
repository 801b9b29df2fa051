/* cli_report.c - 'ccsweep report': options, then report_write (report.c). */
#include "ccsweep/cli/cli.h"
#include "ccsweep/report/report.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void report_usage(FILE *f)
{
    fprintf(f, "usage: ccsweep report --db PATH [--run ID] [--out DIR] [--hw NAME]\n"
               "                      [--format png,pdf,svg]\n\n"
               "Writes DIR/report.md with plots (gnuplot) answering the study's questions\n"
               "for one run of a sweep database: communication share vs model size per hardware\n"
               "generation, where the iteration time goes, compute/communication ratio vs hidden\n"
               "size, hidden fraction of data-parallel communication, what each mitigation\n"
               "recovers, and the memory-forced tensor-parallel degree; with a summary table and\n"
               "the SQL of every number (DIR/queries/, also tools/queries/ in the source tree).\n\n"
               "  --db PATH     sweep database written by 'ccsweep run' (required)\n"
               "  --run ID      run to report (default: the latest in the database)\n"
               "  --out DIR     output directory, created if missing (results/report)\n"
               "  --hw NAME     hardware of the single-hardware plots (default: the run's first)\n"
               "  --format LIST figure formats, comma-separated: png (shown in report.md), pdf\n"
               "                (vector, for papers), svg (default png)\n\n"
               "Needs gnuplot with the cairo terminals (Debian: gnuplot-nox; 'make deps');\n"
               "$CCSWEEP_GNUPLOT names another gnuplot program.\n"
               "Exit status: 0 ok, 1 bad options or input (missing database, not a ccsweep\n"
               "database, unknown run, a run with nothing to report), 2 runtime failure\n"
               "(gnuplot missing or failing, output not writable).\n");
}

int cli_report(int argc, char **argv)
{
    enum { O_DB = 256, O_RUN, O_OUT, O_HW, O_FORMAT, O_HELP };
    static const struct option opts[] = {{"db", required_argument, 0, O_DB},
                                         {"run", required_argument, 0, O_RUN},
                                         {"out", required_argument, 0, O_OUT},
                                         {"hw", required_argument, 0, O_HW},
                                         {"format", required_argument, 0, O_FORMAT},
                                         {"help", no_argument, 0, O_HELP},
                                         {0, 0, 0, 0}};
    report_opts o = {.out = "results/report"};
    long run = 0;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_DB:
            o.db = optarg;
            break;
        case O_OUT:
            o.out = optarg;
            break;
        case O_HW:
            o.hw = optarg;
            break;
        case O_FORMAT: {
            const char *bad;
            if (report_parse_formats(optarg, &o.formats, &bad)) {
                fprintf(stderr,
                        "ccsweep report: --format: expected a comma-separated list of png, pdf "
                        "and svg, got '%s'\n",
                        optarg);
                return 1;
            }
            break;
        }
        case O_RUN:
            if (cli_int("report", "--run", optarg, 1, LONG_MAX, &run))
                return 1;
            o.run_id = run;
            break;
        case O_HELP:
            report_usage(stdout);
            return 0;
        default:
            cli_bad_option("report", argv[optind - 1], opts);
            return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ccsweep report: unexpected argument '%s'\n\n", argv[optind]);
        report_usage(stderr);
        return 1;
    }
    if (!o.db) {
        fprintf(stderr, "ccsweep report: --db PATH is required\n\n");
        report_usage(stderr);
        return 1;
    }
    if (!*o.out) {
        fprintf(stderr, "ccsweep report: --out: expected a directory\n");
        return 1;
    }
    ccs_err err = {""};
    int rc = report_write(&o, stdout, &err);
    if (rc == CCS_OK)
        return 0;
    fprintf(stderr, "ccsweep report: %s\n", err.msg);
    return rc == CCS_EINPUT ? 1 : 2;
}
