/* cli_list.c - 'ccsweep list models|hardware|evolutions|stacks': the catalog's
 * entries with their key figures, a table per kind. */
#include "ccsweep/cli/cli.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct list_args {
    cli_catalogs catalogs;
    const char *what; /* the positional argument */
    int csv, json;
} list_args;

static const cli_opt list_opts[] = {
    CLI_O_CATALOG(list_args, catalogs, "catalog overlay (directory or YAML file); repeatable"),
    CLI_O_FLAG("csv", list_args, csv, "a header and one row per entry, in SI units"),
    CLI_O_FLAG("json", list_args, json, "one JSON array of objects, in SI units"),
    CLI_O_HELP,
};

static const cli_cmd list_cmd = {
    .name = "list",
    .synopsis = "ccsweep list models|hardware|evolutions|stacks [--csv | --json]\n"
                "                    [--catalog PATH]...",
    .about = "Lists the catalog entries with their key figures: the built-in catalog,\n"
             "then the overlays of $CCSWEEP_CATALOG_PATH and --catalog (repeatable),\n"
             "whose entries add to and override earlier ones by name.",
    .opts = list_opts,
    .n_opts = sizeof list_opts / sizeof list_opts[0],
    .col = 18,
};

static const char *const subjects[] = {"models", "hardware", "evolutions", "stacks"};

/* CLI_OK with a->what one of subjects, CLI_BAD (message printed) or CLI_DONE. */
static int parse_list_args(int argc, char **argv, list_args *a)
{
    memset(a, 0, sizeof *a);
    int first, rc = cli_opt_parse(&list_cmd, argc, argv, a, stderr, &first);
    if (rc != CLI_OK)
        return rc;
    if (first + 1 < argc)
        return cli_fail("list", "unexpected argument '%s'", argv[first + 1]);
    if (a->csv && a->json)
        return cli_fail("list", "--csv and --json: give one");
    if (first == argc)
        return cli_fail("list", "what to list? expected models, hardware, evolutions or stacks");
    a->what = argv[first];
    for (size_t i = 0; i < sizeof subjects / sizeof subjects[0]; i++)
        if (!strcmp(a->what, subjects[i]))
            return CLI_OK;
    const char *best = cli_suggest(a->what, subjects, 4);
    return cli_fail("list",
                    "unknown list '%s' (expected models, hardware, evolutions or stacks)%s%s%s",
                    a->what, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
}

static void print_models(const ccs_catalog *cat)
{
    printf("%-14s %7s %7s %6s %4s %7s %7s %5s %5s %9s\n", "name", "layers", "hidden", "heads", "kv",
           "ffn", "vocab", "gated", "seq", "params");
    for (size_t i = 0; i < catalog_n_models(cat); i++) {
        const ccs_model *m = catalog_model_at(cat, i);
        printf("%-14s %7d %7d %6d %4d %7d %7d %5s %5d %8.2fB\n", m->name, m->layers, m->hidden,
               m->heads, m->kv_heads, m->ffn, m->vocab, m->gated ? "yes" : "no", m->seq,
               model_params(m) / 1e9);
    }
}

static void print_hardware(const ccs_catalog *cat)
{
    /* dense peaks; '-' where the device has no such arithmetic */
    printf("%-10s %9s %9s %9s %9s %7s %8s %5s %10s %10s\n", "name", "fp16 TF/s", "bf16 TF/s",
           "fp8 TF/s", "fp32 TF/s", "HBM GiB", "HBM GB/s", "/node", "intra GB/s", "inter GB/s");
    for (size_t i = 0; i < catalog_n_hw(cat); i++) {
        const ccs_hw *h = catalog_hw_at(cat, i);
        const int dt[] = {CCS_FP16, CCS_BF16, CCS_FP8, CCS_FP32};
        char pk[4][16];
        for (int k = 0; k < 4; k++) {
            double v = h->peak_flops[dt[k]] / 1e12;
            if (v > 0)
                snprintf(pk[k], sizeof pk[k], "%.1f", v);
            else
                ccs_strlcpy(pk[k], "-", sizeof pk[k]);
        }
        printf("%-10s %9s %9s %9s %9s %7.0f %8.0f %5d %10.0f %10.1f\n", h->name, pk[0], pk[1],
               pk[2], pk[3], h->mem_cap / 1073741824.0, h->mem_bw / 1e9, h->devices_per_node,
               h->intra_bw / 1e9, h->inter_bw / 1e9);
    }
}

static void print_evolutions(const ccs_catalog *cat)
{
    printf("%-16s %6s %7s %7s %8s %9s %9s %8s\n", "name", "years", "flops", "mem_bw", "mem_cap",
           "intra_bw", "inter_bw", "latency");
    for (size_t i = 0; i < catalog_n_evolutions(cat); i++) {
        const ccs_evolution *e = catalog_evolution_at(cat, i);
        printf("%-16s %6.1f %7.2f %7.2f %8.2f %9.2f %9.2f %8.2f\n", e->name, e->years, e->flops,
               e->mem_bw, e->mem_cap, e->intra_bw, e->inter_bw, e->latency);
    }
}

static void print_stacks(const ccs_catalog *cat)
{
    printf("%-22s %-9s %5s %8s %8s %8s %6s %7s %6s %7s %-14s %7s %-9s %-11s %s\n", "name",
           "attention", "grads", "kernel_us", "layer_us", "iter_ms", "comm", "tp_ovl", "zero3",
           "dropout", "loss", "metrics", "bias_grad", "elementwise", "selective");
    for (size_t i = 0; i < catalog_n_stacks(cat); i++) {
        const ccs_stack *s = catalog_stack_at(cat, i);
        printf("%-22s %-9s %5s %8.1f %8.1f %8.2f %6.1f %7.2f %6.0f %7s %-14s %7d %-9s %-11s %s\n",
               s->name, attn_kernel_name(s->attn_kernel), dtype_name(s->grad_dtype),
               s->op_overhead * 1e6, s->layer_overhead * 1e6, s->iter_overhead * 1e3, s->comm_units,
               s->tp_overlap_share, s->zero3_units, s->no_dropout ? "no" : "yes",
               ccs_loss_kernel_names[s->fused_loss], s->logit_metrics,
               ccs_bias_grad_names[s->bias_grad_sep], ccs_elementwise_names[s->eager],
               ccs_selective_names[s->sac_op]);
    }
}

/* ---- CSV and JSON: one column per field, SI units ----------------------------- */

typedef struct list_val {
    const char *s; /* a text field; NULL: the number d */
    double d;
} list_val;

#define LIST_MAX_COLS 16
typedef struct list_kind {
    const char *cols[LIST_MAX_COLS];
    size_t (*count)(const ccs_catalog *cat);
    void (*fill)(const ccs_catalog *cat, size_t i, list_val *v);
} list_kind;

#define NUM(x) ((list_val){NULL, (double)(x)})
#define TXT(x) ((list_val){(x), 0})

static void fill_model(const ccs_catalog *cat, size_t i, list_val *v)
{
    const ccs_model *m = catalog_model_at(cat, i);
    const list_val r[] = {TXT(m->name),        NUM(m->layers), NUM(m->hidden),  NUM(m->heads),
                          NUM(m->kv_heads),    NUM(m->ffn),    NUM(m->vocab),   NUM(m->gated),
                          NUM(m->seq),         NUM(m->gbs),    NUM(m->experts), NUM(m->top_k),
                          NUM(model_params(m))};
    memcpy(v, r, sizeof r);
}

static void fill_hw(const ccs_catalog *cat, size_t i, list_val *v)
{
    const ccs_hw *h = catalog_hw_at(cat, i);
    const list_val r[] = {TXT(h->name),
                          NUM(h->peak_flops[CCS_FP16]),
                          NUM(h->peak_flops[CCS_BF16]),
                          NUM(h->peak_flops[CCS_FP8]),
                          NUM(h->peak_flops[CCS_FP32]),
                          NUM(h->mem_cap),
                          NUM(h->mem_bw),
                          NUM(h->devices_per_node),
                          NUM(h->intra_bw),
                          NUM(h->inter_bw)};
    memcpy(v, r, sizeof r);
}

static void fill_evolution(const ccs_catalog *cat, size_t i, list_val *v)
{
    const ccs_evolution *e = catalog_evolution_at(cat, i);
    const list_val r[] = {TXT(e->name),    NUM(e->years),    NUM(e->flops),    NUM(e->mem_bw),
                          NUM(e->mem_cap), NUM(e->intra_bw), NUM(e->inter_bw), NUM(e->latency)};
    memcpy(v, r, sizeof r);
}

static void fill_stack(const ccs_catalog *cat, size_t i, list_val *v)
{
    const ccs_stack *st = catalog_stack_at(cat, i);
    const list_val r[] = {TXT(st->name),
                          TXT(attn_kernel_name(st->attn_kernel)),
                          TXT(dtype_name(st->grad_dtype)),
                          NUM(st->op_overhead),
                          NUM(st->layer_overhead),
                          NUM(st->iter_overhead),
                          NUM(st->comm_units),
                          NUM(st->tp_overlap_share),
                          NUM(!st->no_dropout),
                          TXT(ccs_loss_kernel_names[st->fused_loss]),
                          NUM(st->logit_metrics),
                          TXT(ccs_bias_grad_names[st->bias_grad_sep]),
                          TXT(ccs_elementwise_names[st->eager]),
                          TXT(ccs_selective_names[st->sac_op])};
    memcpy(v, r, sizeof r);
}

static const list_kind kinds[] = {
    {{"name", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "gated", "seq", "gbs",
      "experts", "top_k", "params"},
     catalog_n_models,
     fill_model},
    {{"name", "peak_fp16", "peak_bf16", "peak_fp8", "peak_fp32", "mem_cap", "mem_bw",
      "devices_per_node", "intra_bw", "inter_bw"},
     catalog_n_hw,
     fill_hw},
    {{"name", "years", "flops", "mem_bw", "mem_cap", "intra_bw", "inter_bw", "latency"},
     catalog_n_evolutions,
     fill_evolution},
    {{"name", "attention", "grads", "op_overhead", "layer_overhead", "iter_overhead", "comm_units",
      "tp_overlap_share", "dropout", "loss_kernel", "logit_metrics", "bias_grad", "elementwise",
      "selective"},
     catalog_n_stacks,
     fill_stack},
};

static size_t n_cols(const list_kind *k)
{
    size_t n = 0;
    while (n < LIST_MAX_COLS && k->cols[n])
        n++;
    return n;
}

static void print_csv(const ccs_catalog *cat, const list_kind *k)
{
    size_t nc = n_cols(k);
    for (size_t c = 0; c < nc; c++)
        printf("%s%s", c ? "," : "", k->cols[c]);
    putchar('\n');
    for (size_t i = 0; i < k->count(cat); i++) {
        list_val v[LIST_MAX_COLS];
        k->fill(cat, i, v);
        for (size_t c = 0; c < nc; c++) {
            if (c)
                putchar(',');
            if (v[c].s)
                cli_csv_field(stdout, v[c].s);
            else
                printf("%.15g", v[c].d);
        }
        putchar('\n');
    }
}

static int print_json(const ccs_catalog *cat, const list_kind *k)
{
    size_t nc = n_cols(k);
    json_t *arr = json_array();
    int rc = !arr;
    for (size_t i = 0; !rc && i < k->count(cat); i++) {
        list_val v[LIST_MAX_COLS];
        k->fill(cat, i, v);
        json_t *o = json_object();
        rc |= !o;
        for (size_t c = 0; !rc && c < nc; c++) {
            json_t *x = v[c].s ? json_string(v[c].s)
                        : v[c].d == floor(v[c].d) && fabs(v[c].d) < 9e15
                            ? json_integer((json_int_t)v[c].d)
                            : json_real(v[c].d);
            rc |= json_object_set_new(o, k->cols[c], x);
        }
        rc |= !o || json_array_append_new(arr, o);
    }
    if (!rc)
        rc = json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    putchar('\n');
    json_decref(arr);
    return rc ? -1 : 0;
}

int cli_list(int argc, char **argv)
{
    list_args a;
    int rc = parse_list_args(argc, argv, &a);
    if (rc != CLI_OK)
        return rc == CLI_DONE ? 0 : 1;
    ccs_catalog *cat = cli_catalog("list", &a.catalogs);
    if (!cat)
        return 1;
    size_t kind = 0;
    while (strcmp(a.what, subjects[kind]))
        kind++;
    if (a.csv) {
        print_csv(cat, &kinds[kind]);
    } else if (a.json) {
        if (print_json(cat, &kinds[kind]))
            rc = cli_fail("list", "out of memory writing JSON") + 1;
    } else if (!strcmp(a.what, "models"))
        print_models(cat);
    else if (!strcmp(a.what, "hardware"))
        print_hardware(cat);
    else if (!strcmp(a.what, "evolutions"))
        print_evolutions(cat);
    else
        print_stacks(cat);
    catalog_free(cat);
    return rc;
}
