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

/* A YAML double-quoted scalar. */
static void yaml_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void print_entry(FILE *f, const ccs_model *m, const char *path)
{
    fprintf(f, "# ccsweep catalog import %s: %.2fB parameters\nmodels:\n  - name: ", path,
            model_params(m) / 1e9);
    yaml_quoted(f, m->name);
    fprintf(f,
            "\n    layers: %d\n    hidden: %d\n    heads: %d\n    kv_heads: %d\n    ffn: %d\n"
            "    vocab: %d\n    max_pos: %d\n    gated: %s\n    bias: %s\n    tied: %s\n",
            m->layers, m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->max_pos,
            m->gated ? "true" : "false", m->bias ? "true" : "false", m->tied ? "true" : "false");
    if (m->head_dim > 0)
        fprintf(f, "    head_dim: %d\n", m->head_dim);
    if (model_is_mla(m))
        fprintf(f,
                "    attention: mla\n    q_lora_rank: %d\n    kv_lora_rank: %d\n"
                "    qk_nope_dim: %d\n    qk_rope_dim: %d\n    v_head_dim: %d\n",
                m->q_lora_rank, m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim, m->v_head_dim);
    if (m->experts > 0) {
        fprintf(f, "    experts: %d\n    top_k: %d\n    moe_ffn: %d\n", m->experts, m->top_k,
                m->moe_ffn);
        if (m->shared_experts)
            fprintf(f, "    shared_experts: %d\n", m->shared_experts);
        if (m->dense_layers)
            fprintf(f, "    dense_layers: %d\n", m->dense_layers);
        if (m->route_nodes)
            fprintf(f, "    route_nodes: %d\n", m->route_nodes);
    }
    fputs("    source: ", f);
    char src[CCS_NAME_MAX + 512];
    snprintf(src, sizeof src,
             "imported from %s by 'ccsweep catalog import'; seq and gbs not in the config", path);
    yaml_quoted(f, src);
    fputc('\n', f);
}

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
    print_entry(stdout, &m, argv[first + 1]);
    return 0;
}
