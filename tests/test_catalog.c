/* test_catalog.c - the shipped catalogs load and name every required entry;
 * each kind of bad entry is rejected with file, line and field named. */
#include "testutil.h"

#include <unistd.h>

static void test_shipped_catalog(void **state)
{
    (void)state;
    ccs_catalog *c = test_catalog();
    const char *models[] = {"bert-large", "gpt2-xl",     "megatron-8.3b", "t-nlg-17b",
                            "gpt3-175b",  "mt-nlg-530b", "palm-540b",     "megatron-1t",
                            "llama2-70b", "llama3-8b",   "llama3-70b",    "llama3-405b",
                            "future-2t",  "future-10t",  "future-100t"};
    const char *hws[] = {"v100", "a100-80g", "h100-sxm", "h200", "b200",
                         "mi50", "mi100",    "mi210",    "mi250x", "mi300x"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        if (!catalog_model(c, models[i])) {
            print_error("model %s missing\n", models[i]);
            fail();
        }
    }
    for (size_t i = 0; i < sizeof hws / sizeof hws[0]; i++) {
        if (!catalog_hw(c, hws[i])) {
            print_error("hardware %s missing\n", hws[i]);
            fail();
        }
    }
    const ccs_evolution *mw = catalog_evolution(c, "memory-wall");
    assert_non_null(mw);
    /* Gholami et al. 2024 trend per 2 years: FLOP/s 3.0x, DRAM BW 1.6x, interconnect 1.4x */
    assert_rel(mw->flops, 3.0, 1e-12);
    assert_rel(mw->mem_bw, 1.6, 1e-12);
    assert_rel(mw->intra_bw, 1.4, 1e-12);
    assert_rel(mw->inter_bw, 1.4, 1e-12);
    /* units: the A100 80GB datasheet's 312 TFLOP/s bf16, 80 GiB, 2039 GB/s */
    const ccs_hw *a = catalog_hw(c, "a100-80g");
    assert_rel(a->peak_flops[CCS_BF16], 312e12, 1e-12);
    assert_rel(a->mem_cap, 80.0 * 1073741824.0, 1e-12);
    assert_rel(a->mem_bw, 2039e9, 1e-12);
    /* GQA and gated FFN where the architecture has them */
    const ccs_model *l = catalog_model(c, "llama3-70b");
    assert_int_equal(l->kv_heads, 8);
    assert_true(l->gated);
    catalog_free(c);
}

/* Write text to a temporary file and load it as the given catalog kind. */
static int load_text(const char *kind, const char *text, char *path, ccs_err *err)
{
    strcpy(path, "/tmp/ccsweep-catXXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ccs_catalog *c = catalog_new();
    int rc;
    if (!strcmp(kind, "models"))
        rc = catalog_load_models(c, path, err);
    else if (!strcmp(kind, "hardware"))
        rc = catalog_load_hardware(c, path, err);
    else
        rc = catalog_load_evolutions(c, path, err);
    catalog_free(c);
    unlink(path);
    return rc;
}

/* The error must start with "path:line:" and contain the given words. */
static void expect_error(const char *kind, const char *text, int line, const char *w1,
                         const char *w2)
{
    char path[64], where[96];
    ccs_err err;
    memset(&err, 0, sizeof err);
    int rc = load_text(kind, text, path, &err);
    if (rc == CCS_OK) {
        print_error("accepted a bad %s catalog:\n%s\n", kind, text);
        fail();
    }
    snprintf(where, sizeof where, "%s:%d:", path, line);
    if (strncmp(err.msg, where, strlen(where)) || !strstr(err.msg, w1) ||
        (w2 && !strstr(err.msg, w2))) {
        print_error("message '%s' lacks '%s', '%s' or '%s'\n", err.msg, where, w1,
                    w2 ? w2 : "");
        fail();
    }
}

#define HW_OK                                                                                      \
    "    peak_tflops: {bf16: 312}\n    mem_gib: 80\n    mem_gbps: 2039\n"                          \
    "    devices_per_node: 8\n    compute_units: 108\n    gemm_tile: [256, 128]\n"                 \
    "    intra_gbps: 300\n    inter_gbps: 25\n    intra_latency_us: 2\n"                           \
    "    inter_latency_us: 4\n    kernel_latency_us: 3\n    gemm_efficiency: 0.86\n"               \
    "    mem_efficiency: 0.85\n    intra_efficiency: 0.77\n    inter_efficiency: 0.96\n"

static void test_good_entry(void **state)
{
    (void)state;
    char path[64];
    ccs_err err;
    assert_int_equal(load_text("hardware", "hardware:\n  - name: x\n" HW_OK, path, &err), CCS_OK);
    assert_int_equal(load_text("models",
                               "models:\n  - {name: m, layers: 2, hidden: 64, heads: 4, vocab: 100}\n",
                               path, &err),
                     CCS_OK);
}

static void test_bad_entries(void **state)
{
    (void)state;
    /* unknown key */
    expect_error("hardware", "hardware:\n  - name: x\n    colour: red\n" HW_OK, 3,
                 "unknown key 'colour'", NULL);
    /* missing field: the entry's line is named */
    expect_error("models", "models:\n  - name: m\n    layers: 2\n    hidden: 64\n    vocab: 10\n",
                 2, "missing field 'heads'", NULL);
    /* negative size */
    expect_error("hardware", "hardware:\n  - name: x\n" HW_OK "    variability: 0.05\n"
                             "  - name: y\n    mem_gib: -80\n" HW_OK,
                 20, "field 'mem_gib'", "positive");
    /* zero size */
    expect_error("models", "models:\n  - {name: m, layers: 0, hidden: 64, heads: 4, vocab: 10}\n", 2,
                 "field 'layers'", "positive");
    /* wrong type */
    expect_error("models",
                 "models:\n  - name: m\n    layers: 2\n    hidden: wide\n    heads: 4\n    vocab: 10\n",
                 4, "field 'hidden'", "expected an integer");
    expect_error("models",
                 "models:\n  - {name: m, layers: 2, hidden: 64, heads: 4, vocab: 10, gated: 2}\n", 2,
                 "field 'gated'", "true or false");
    expect_error("hardware", "hardware:\n  - name: x\n    gemm_tile: 256\n" HW_OK, 3,
                 "gemm_tile", NULL);
    /* efficiency outside (0, 1] */
    expect_error("hardware", "hardware:\n  - name: x\n" HW_OK "    clock_ratio: 1.5\n", 18,
                 "field 'clock_ratio'", "(0, 1]");
    /* unknown dtype */
    expect_error("hardware", "hardware:\n  - name: x\n    peak_tflops: {bf17: 1}\n" HW_OK, 3,
                 "unknown dtype 'bf17'", NULL);
    /* inconsistent shape */
    expect_error("models", "models:\n  - {name: m, layers: 2, hidden: 100, heads: 3, vocab: 10}\n",
                 2, "heads", "divide");
    /* duplicate name */
    expect_error("evolutions",
                 "evolutions:\n  - {name: e, flops: 2, mem_bw: 2, mem_cap: 2, intra_bw: 2, inter_bw: 2}\n"
                 "  - {name: e, flops: 2, mem_bw: 2, mem_cap: 2, intra_bw: 2, inter_bw: 2}\n",
                 3, "defined twice", NULL);
    /* evolution factor zero */
    expect_error("evolutions",
                 "evolutions:\n  - {name: e, flops: 0, mem_bw: 2, mem_cap: 2, intra_bw: 2, inter_bw: 2}\n",
                 2, "field 'flops'", "positive");
    /* wrong top level and YAML syntax */
    expect_error("models", "model:\n  - {name: m}\n", 1, "unknown key 'model'", NULL);
    expect_error("models", "models: [\n  - {name: m\n", 2, "YAML syntax error", NULL);
    expect_error("models", "models: []\n", 1, "non-empty list", NULL);
    /* bad name */
    expect_error("models", "models:\n  - {name: 'a b', layers: 2, hidden: 64, heads: 4, vocab: 10}\n",
                 2, "field 'name'", NULL);
}

static void test_missing_file(void **state)
{
    (void)state;
    ccs_catalog *c = catalog_new();
    ccs_err err;
    assert_int_not_equal(catalog_load_dir(c, "/nonexistent-dir", &err), CCS_OK);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/models.yaml"));
    assert_non_null(strstr(err.msg, "cannot open"));
    catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_catalog),
        cmocka_unit_test(test_good_entry),
        cmocka_unit_test(test_bad_entries),
        cmocka_unit_test(test_missing_file),
    };
    return cmocka_run_group_tests_name("catalog", tests, NULL, NULL);
}
