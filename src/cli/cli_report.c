/* cli_report.c - 'ccsweep report': options, then report_write (report.c). */
#include "ccsweep/cli/cli.h"
#include "ccsweep/report/report.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* --format: the figure formats */
static int formats_arg(const char *text, void *dst)
{
    const char *bad;
    return report_parse_formats(text, dst, &bad) ? -1 : 0;
}

#define A report_opts
static const cli_opt report_table[] = {
    CLI_O_STR("db", "PATH", A, db, "sweep database written by 'ccsweep run' (required)"),
    CLI_O_INT("run", "ID", A, run_id, 1, LONG_MAX,
              "run to report (default: the latest in the database)"),
    CLI_O_STR("out", "DIR", A, out, "output directory, created if missing (results/report)"),
    CLI_O_STR("hw", "NAME", A, hw,
              "hardware of the single-hardware plots (default: the run's first)"),
    CLI_O_FN("format", "LIST", A, formats, formats_arg,
             "a comma-separated list of png, pdf and svg",
             "figure formats, comma-separated: png (shown in report.md), pdf\n"
             "(vector, for papers), svg (default png)"),
    CLI_O_HELP,
};
#undef A

static void report_notes(FILE *f)
{
    fprintf(f, "\nNeeds gnuplot with the cairo terminals (Debian: gnuplot-nox; 'make deps');\n"
               "$CCSWEEP_GNUPLOT names another gnuplot program.\n"
               "Exit status: 0 ok, 1 bad options or input (missing database, not a ccsweep\n"
               "database, unknown run, a run with nothing to report), 2 runtime failure\n"
               "(gnuplot missing or failing, output not writable).\n");
}

static const cli_cmd report_cmd = {
    .name = "report",
    .synopsis = "ccsweep report --db PATH [--run ID] [--out DIR] [--hw NAME]\n"
                "                      [--format png,pdf,svg]",
    .about = "Writes DIR/report.md with plots (gnuplot) answering the study's questions\n"
             "for one run of a sweep database: communication share vs model size per hardware\n"
             "generation, where the iteration time goes, compute/communication ratio vs hidden\n"
             "size, hidden fraction of data-parallel communication, what each mitigation\n"
             "recovers, and the memory-forced tensor-parallel degree; with a summary table and\n"
             "the SQL of every number (DIR/queries/, also tools/queries/ in the source tree).",
    .opts = report_table,
    .n_opts = sizeof report_table / sizeof report_table[0],
    .col = 13,
    .notes = report_notes,
};

/* CLI_OK, CLI_BAD (message printed) or CLI_DONE (--help). */
static int parse_report_args(int argc, char **argv, report_opts *o)
{
    memset(o, 0, sizeof *o);
    o->out = "results/report";
    int first, rc = cli_opt_parse(&report_cmd, argc, argv, o, stderr, &first);
    if (rc != CLI_OK)
        return rc;
    if (first < argc || !o->db) {
        if (first < argc)
            cli_fail("report", "unexpected argument '%s'\n", argv[first]);
        else
            cli_fail("report", "--db PATH is required\n");
        cli_opt_help(&report_cmd, stderr);
        return CLI_BAD;
    }
    if (!*o->out)
        return cli_fail("report", "--out: expected a directory");
    return CLI_OK;
}

int cli_report(int argc, char **argv)
{
    report_opts o;
    int rc = parse_report_args(argc, argv, &o);
    if (rc != CLI_OK)
        return rc == CLI_DONE ? 0 : 1;
    ccs_err err = {""};
    rc = report_write(&o, stdout, &err);
    if (rc == CCS_OK)
        return 0;
    cli_fail("report", "%s", err.msg);
    return rc == CCS_EINPUT ? 1 : 2;
}
