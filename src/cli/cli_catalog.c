/* cli_catalog.c - 'ccsweep catalog import config.json [--name N]': a
 * Hugging Face config as a catalog overlay (YAML with one models entry) on
 * stdout, for --catalog or $CCSWEEP_CATALOG_PATH. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/model/hfconfig.h"

#include <string.h>

typedef struct catalog_args {
    const char *name;
} catalog_args;

static const cli_opt catalog_rows[] = {
    CLI_O_STR("name", "NAME", catalog_args, name,
              "the entry's name (letters, digits, '-', '_', '.'; without\n"
              "it the last component of the config's _name_or_path,\n"
              "other characters as '-', else its model_type)"),
    CLI_O_HELP,
};

static const cli_cmd catalog_cmd = {
    .name = "catalog",
    .synopsis = "ccsweep catalog import CONFIG.json [--name NAME]",
    .about = "Writes a Hugging Face config.json (model_type " HFCONFIG_TYPES ")\n"
             "as a catalog overlay with one model entry to stdout: save it and pass it\n"
             "to --catalog. A config does not say the training sequence or batch: the\n"
             "entry leaves them out, so give --seq and --gbs, or add seq and gbs.",
    .opts = catalog_rows,
    .n_opts = sizeof catalog_rows / sizeof catalog_rows[0],
    .col = 18,
};

int cli_catalog_command(int argc, char **argv)
{
    catalog_args a = {0};
    int first, rc = cli_opt_parse(&catalog_cmd, argc, argv, &a, stderr, &first);
    if (rc != CLI_OK)
        return rc == CLI_DONE ? 0 : 1;
    if (first == argc || strcmp(argv[first], "import"))
        return cli_fail("catalog", "expected 'import CONFIG.json' (see 'ccsweep catalog --help')");
    if (first + 2 != argc)
        return cli_fail("catalog", "import takes one config file");
    if (a.name && !ccs_name_ok(a.name))
        return cli_fail("catalog",
                        !*a.name || strlen(a.name) >= CCS_NAME_MAX
                            ? "--name '%s': a catalog name is 1 to %d characters"
                            : "--name '%s': a catalog name may hold only letters, digits, '-', "
                              "'_', '.' (%d characters at most)",
                        a.name, CCS_NAME_MAX - 1);
    ccs_model m;
    ccs_err err;
    if (hfconfig_load(argv[first + 1], a.name, &m, &err) != CCS_OK)
        return cli_fail("catalog", "%s%s", err.msg,
                        strstr(err.msg, ": _name_or_path: ") ? " (give one with --name)" : "");
    hfconfig_write_entry(stdout, &m, argv[first + 1]);
    return 0;
}
