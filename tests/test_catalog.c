/* test_catalog.c - the shipped catalogs load and name every required entry;
 * each kind of bad entry is rejected with file, line and field named. */
#include "testutil.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void test_shipped_catalog(void **state)
{
    (void)state;
    ccs_catalog *c = test_catalog();
    const char *models[] = {
        "bert-large", "gpt2-xl",     "megatron-8.3b", "t-nlg-17b",    "gpt3-175b",  "mt-nlg-530b",
        "palm-540b",  "megatron-1t", "llama2-70b",    "llama3-8b",    "llama3-70b", "llama3-405b",
        "future-2t",  "future-10t",  "future-100t",   "mixtral-8x7b", "deepseek-v3"};
    const char *hws[] = {"v100", "a100-80g", "h100-sxm", "h800",   "h200",  "b200",
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
    /* every model carries a batch (published or the catalog's rule): plans that
     * leave gbs to the model never fall back to one made up from mbs * dp */
    for (size_t i = 0; i < catalog_n_models(c); i++) {
        const ccs_model *m = catalog_model_at(c, i);
        if (m->gbs <= 0 || m->seq <= 0) {
            print_error("model %s has no global batch or sequence\n", m->name);
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
        print_error("message '%s' lacks '%s', '%s' or '%s'\n", err.msg, where, w1, w2 ? w2 : "");
        fail();
    }
}

#define HW_OK                                                                                      \
    "    peak_tflops: {bf16: 312}\n    mem_gib: 80\n    mem_gbps: 2039\n"                          \
    "    devices_per_node: 8\n    compute_units: 108\n    gemm_tile: [256, 128]\n"                 \
    "    intra_gbps: 300\n    inter_gbps: 25\n    intra_latency_us: 2\n"                           \
    "    inter_latency_us: 4\n    kernel_latency_us: 3\n    gemm_efficiency: 0.86\n"               \
    "    mem_efficiency: 0.85\n    intra_efficiency: 0.77\n    inter_efficiency: 0.96\n"

/* "hardware:\n  - name: x\n" HW_OK with one of its lines replaced. */
static char hw_buf[2048];
static const char *hw_with(const char *line, const char *with)
{
    const char *p = strstr(HW_OK, line);
    assert_non_null(p);
    snprintf(hw_buf, sizeof hw_buf, "hardware:\n  - name: x\n%.*s%s%s", (int)(p - HW_OK), HW_OK,
             with, p + strlen(line));
    return hw_buf;
}

static void test_good_entry(void **state)
{
    (void)state;
    char path[64];
    ccs_err err;
    assert_int_equal(load_text("hardware", "hardware:\n  - name: x\n" HW_OK, path, &err), CCS_OK);
    assert_int_equal(
        load_text("models", "models:\n  - {name: m, layers: 2, hidden: 64, heads: 4, vocab: 100}\n",
                  path, &err),
        CCS_OK);
}

static void test_bad_entries(void **state)
{
    (void)state;
    char path0[64];
    ccs_err err0;
    /* unknown key */
    expect_error("hardware", "hardware:\n  - name: x\n    colour: red\n" HW_OK, 3,
                 "unknown key 'colour'", NULL);
    /* missing field: the entry's line is named */
    expect_error("models", "models:\n  - name: m\n    layers: 2\n    hidden: 64\n    vocab: 10\n",
                 2, "missing field 'heads'", NULL);
    /* negative size */
    expect_error("hardware",
                 "hardware:\n  - name: x\n" HW_OK "    variability: 0.05\n"
                 "  - name: y\n    mem_gib: -80\n    peak_tflops: {bf16: 312}\n"
                 "    mem_gbps: 2039\n",
                 20, "field 'mem_gib'", "positive");
    /* zero size */
    expect_error("models", "models:\n  - {name: m, layers: 0, hidden: 64, heads: 4, vocab: 10}\n",
                 2, "field 'layers'", "positive");
    /* wrong type */
    expect_error("models",
                 "models:\n  - {name: m, layers: 2, hidden: 64, heads: 4, vocab: 10, gated: 2}\n",
                 2, "field 'gated'", "true or false");
    expect_error("hardware", hw_with("gemm_tile: [256, 128]", "gemm_tile: 256"), 8, "gemm_tile",
                 NULL);
    /* efficiency outside (0, 1] */
    expect_error("hardware", "hardware:\n  - name: x\n" HW_OK "    clock_ratio: 1.5\n", 18,
                 "field 'clock_ratio'", "(0, 1]");
    /* measured all-reduce curves: sizes must increase, times must not fall,
     * a group size is at least 2 and given once */
    assert_int_equal(
        load_text("hardware",
                  "hardware:\n  - name: x\n" HW_OK
                  "    allreduce_us: {8: [[1, 25], [16, 121]], 4: [[1, 19], [4, 37]]}\n",
                  path0, &err0),
        CCS_OK);
    expect_error("hardware",
                 "hardware:\n  - name: x\n" HW_OK "    allreduce_us: {8: [[16, 121], [1, 25]]}\n",
                 18, "field 'allreduce_us'", "increasing");
    expect_error("hardware",
                 "hardware:\n  - name: x\n" HW_OK "    allreduce_us: {8: [[1, 25], [16, 20]]}\n",
                 18, "field 'allreduce_us'", "not falling");
    expect_error("hardware",
                 "hardware:\n  - name: x\n" HW_OK "    allreduce_us: {1: [[1, 25], [16, 121]]}\n",
                 18, "field 'allreduce_us'", "group size");
    expect_error("hardware", "hardware:\n  - name: x\n" HW_OK "    allreduce_us: {8: [1, 25]}\n",
                 18, "field 'allreduce_us'", "[MiB, us]");
    expect_error("hardware",
                 "hardware:\n  - name: x\n" HW_OK
                 "    allreduce_us: {8: [[1, 25], [2, 30]], 8: [[1, 25], [2, 30]]}\n",
                 18, "duplicate key '8'", NULL);
    /* unknown dtype */
    expect_error("hardware", hw_with("peak_tflops: {bf16: 312}", "peak_tflops: {bf17: 1}"), 3,
                 "unknown dtype 'bf17'", NULL);
    /* inconsistent shape */
    expect_error("models", "models:\n  - {name: m, layers: 2, hidden: 100, heads: 3, vocab: 10}\n",
                 2, "heads", "divide");
    /* latent attention and dense first layers: inconsistent combinations are
     * reported at the offending field's line */
#define M_OK "models:\n  - name: m\n    layers: 2\n    hidden: 64\n    heads: 4\n    vocab: 10\n"
#define MLA_OK                                                                                     \
    "    attention: mla\n    kv_lora_rank: 16\n    qk_nope_dim: 16\n"                              \
    "    qk_rope_dim: 8\n    v_head_dim: 16\n"
    char path[64];
    ccs_err err;
    assert_int_equal(load_text("models", M_OK MLA_OK, path, &err), CCS_OK);
    expect_error("models", M_OK "    kv_lora_rank: 16\n", 7, "field 'kv_lora_rank'",
                 "attention: mla");
    expect_error("models", M_OK "    attention: gqa\n", 7, "field 'attention'", "mha or mla");
    expect_error("models", M_OK "    attention: mla\n    kv_lora_rank: 16\n", 2,
                 "missing field 'qk_nope_dim'", NULL);
    expect_error("models", M_OK MLA_OK "    kv_heads: 2\n", 12, "field 'kv_heads'", "equal heads");
    expect_error("models",
                 M_OK "    attention: mla\n    kv_lora_rank: 16\n    qk_nope_dim: 16\n"
                      "    qk_rope_dim: 8\n    v_head_dim: 0\n",
                 11, "field 'v_head_dim'", "positive");
    /* head_dim: standard attention only, 1 or more; with it heads need not
     * divide hidden (32 heads of 128 in a hidden of 5000) */
    assert_int_equal(load_text("models",
                               "models:\n  - {name: m, layers: 2, hidden: 5000, heads: 32, "
                               "head_dim: 128, vocab: 10}\n",
                               path, &err),
                     CCS_OK);
    expect_error("models", M_OK "    head_dim: 0\n", 7, "field 'head_dim'", "positive");
    expect_error("models", M_OK MLA_OK "    head_dim: 16\n", 12, "field 'head_dim'",
                 "standard attention");
    expect_error("models", "models:\n  - {name: m, layers: 2, hidden: 100, heads: 3, vocab: 10}\n",
                 2, "divide", "or give head_dim");
    expect_error("models", M_OK "    dense_layers: 1\n", 7, "field 'dense_layers'",
                 "needs experts");
    expect_error("models", M_OK "    experts: 4\n    dense_layers: 2\n", 8, "field 'dense_layers'",
                 "less than layers");
    expect_error("models", M_OK "    route_nodes: 2\n", 7, "field 'route_nodes'", "needs experts");
    expect_error("models", M_OK "    experts: 4\n    top_k: 2\n    route_nodes: 3\n", 9,
                 "field 'route_nodes'", "at most top_k");
#undef M_OK
#undef MLA_OK
    /* duplicate name */
    expect_error(
        "evolutions",
        "evolutions:\n  - {name: e, flops: 2, mem_bw: 2, mem_cap: 2, intra_bw: 2, inter_bw: 2}\n"
        "  - {name: e, flops: 2, mem_bw: 2, mem_cap: 2, intra_bw: 2, inter_bw: 2}\n",
        3, "defined twice", NULL);
    /* evolution factor zero */
    expect_error(
        "evolutions",
        "evolutions:\n  - {name: e, flops: 0, mem_bw: 2, mem_cap: 2, intra_bw: 2, inter_bw: 2}\n",
        2, "field 'flops'", "positive");
    /* figures beyond a physically sensible range (a mem_gib of 1e308
     * stored inf and printed "of inf GiB"): refused at the field, naming the
     * range */
    expect_error("hardware", hw_with("mem_gib: 80", "mem_gib: 1e308"), 4, "field 'mem_gib'",
                 "(0, 1048576]");
    expect_error("hardware", hw_with("peak_tflops: {bf16: 312}", "peak_tflops: {bf16: 1e300}"), 3,
                 "field 'peak_tflops.bf16'", "(0, 1000000]");
    expect_error("hardware", hw_with("mem_gbps: 2039", "mem_gbps: 1e30"), 5, "field 'mem_gbps'",
                 "(0, 10000000]");
    expect_error("hardware", hw_with("inter_gbps: 25", "inter_gbps: 1e300"), 10,
                 "field 'inter_gbps'", "(0, 10000000]");
    expect_error("hardware", hw_with("intra_latency_us: 2", "intra_latency_us: 1e300"), 11,
                 "field 'intra_latency_us'", "[0, 1000000]");
    expect_error("hardware", hw_with("devices_per_node: 8", "devices_per_node: 2147483647"), 6,
                 "field 'devices_per_node'", "[1, 16777216]");
    expect_error("hardware", hw_with("compute_units: 108", "compute_units: 1000000000"), 7,
                 "field 'compute_units'", "[1, 16777216]");
    expect_error("hardware", "hardware:\n  - name: x\n" HW_OK "    oversubscription: 1e300\n", 18,
                 "field 'oversubscription'", "[1, 1000000]");
    expect_error("hardware", "hardware:\n  - name: x\n" HW_OK "    gemm_ref_k: 2000000000\n", 18,
                 "field 'gemm_ref_k'", "[1, 16777216]");
    expect_error("evolutions",
                 "evolutions:\n  - {name: e, flops: 1e300, mem_bw: 2, mem_cap: 2, intra_bw: 2, "
                 "inter_bw: 2}\n",
                 2, "field 'flops'", "[0.001, 1000]");
    expect_error("evolutions",
                 "evolutions:\n  - {name: e, flops: 2, mem_bw: 2, mem_cap: 1e-300, intra_bw: 2, "
                 "inter_bw: 2}\n",
                 2, "field 'mem_cap'", "[0.001, 1000]");
    expect_error("evolutions",
                 "evolutions:\n  - {name: e, years: 1e300, flops: 2, mem_bw: 2, mem_cap: 2, "
                 "intra_bw: 2, inter_bw: 2}\n",
                 2, "field 'years'", "(0, 100]");
    /* wrong top level and YAML syntax */
    expect_error("models", "model:\n  - {name: m}\n", 1, "unknown key 'model'", NULL);
    expect_error("models", "models: [\n  - {name: m\n", 2, "YAML syntax error", NULL);
    expect_error("models", "models: []\n", 1, "non-empty list", NULL);
    /* bad name */
    expect_error("models",
                 "models:\n  - {name: 'a b', layers: 2, hidden: 64, heads: 4, vocab: 10}\n", 2,
                 "field 'name'",
                 NULL); /* duplicate keys, inside an entry and at the top: both lines named */
    expect_error("hardware", "hardware:\n  - name: x\n    mem_gib: 40\n" HW_OK, 5,
                 "duplicate key 'mem_gib'", "first given at line 3");
    expect_error("models",
                 "models:\n  - {name: m, layers: 2, hidden: 64, heads: 4, vocab: 10, layers: 3}\n",
                 2, "duplicate key 'layers'", "first given at line 2");
    expect_error("models",
                 "models:\n  - {name: m, layers: 2, hidden: 64, heads: 4, vocab: 10}\n"
                 "models:\n  - {name: n, layers: 2, hidden: 64, heads: 4, vocab: 10}\n",
                 3, "duplicate key 'models'", "first given at line 1");
}

/* Loading is linear in the number of entries: 4x the entries may not cost
 * 16x the time (a pairwise duplicate check took 6 s for 40,000 names). */
static double load_many(int n, int dup)
{
    size_t cap = (size_t)n * 96 + 64, len = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    len += (size_t)snprintf(t, cap, "models:\n");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len,
                                "  - {name: m%d, layers: 2, hidden: 64, heads: 4, vocab: 10}\n",
                                dup && i == n - 1 ? 0 : i);
    char path[64];
    ccs_err err;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = load_text("models", t, path, &err);
    clock_gettime(CLOCK_MONOTONIC, &b);
    free(t);
    if (dup) {
        assert_int_not_equal(rc, CCS_OK);
        assert_non_null(strstr(err.msg, "model 'm0' is defined twice"));
    } else {
        assert_int_equal(rc, CCS_OK);
    }
    return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}

static void test_many_entries(void **state)
{
    (void)state;
    load_many(1000, 1);
    double t1 = 1e9, t4 = 1e9;
    for (int r = 0; r < 3; r++) { /* best of three against a busy machine */
        double x = load_many(10000, 0), y = load_many(40000, 0);
        t1 = x < t1 ? x : t1;
        t4 = y < t4 ? y : t4;
    }
    if (t4 > 10 * t1) {
        print_error("10,000 entries %.3f s, 40,000 entries %.3f s: not linear\n", t1, t4);
        fail();
    }
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

/* A minimal but complete hardware entry in the catalog's format, with the
 * peak_tflops map given (PEAKS) or {fp32: 10, bf16: 100}. */
#define HW_ENTRY(name, gib) HW_ENTRY_PEAKS(name, gib, "{fp32: 10, bf16: 100}")
#define HW_ENTRY_PEAKS(name, gib, peaks)                                                           \
    "  - name: " name "\n"                                                                         \
    "    peak_tflops: " peaks "\n"                                                                 \
    "    mem_gib: " #gib "\n"                                                                      \
    "    mem_gbps: 1000\n    devices_per_node: 4\n    compute_units: 64\n"                         \
    "    gemm_tile: [128, 128]\n    intra_gbps: 100\n    inter_gbps: 10\n"                         \
    "    intra_latency_us: 2\n    inter_latency_us: 5\n    kernel_latency_us: 3\n"                 \
    "    gemm_efficiency: 0.8\n    mem_efficiency: 0.8\n    intra_efficiency: 0.8\n"               \
    "    inter_efficiency: 0.8\n"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    fclose(f);
}

/* An overlay adds entries and replaces same-named ones in place; the rest of
 * the built-in catalog stays. */
static void test_overlay(void **state)
{
    (void)state;
    char dir[] = "/tmp/ccsweep-overlayXXXXXX", path[128], file[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/hardware.yaml", dir);
    write_file(path, "hardware:\n" HW_ENTRY("my-gpu", 48) HW_ENTRY("a100-80g", 160));
    char mpath[128];
    snprintf(mpath, sizeof mpath, "%s/models.yaml", dir); /* read before hardware.yaml */
    write_file(mpath,
               "models:\n  - {name: gpt3-175b, layers: 2, hidden: 64, heads: 4, vocab: 100}\n");
    snprintf(file, sizeof file, "%s/extra.yaml", dir);
    write_file(file, "models:\n  - {name: tiny, layers: 2, hidden: 64, heads: 4, vocab: 100}\n"
                     "hardware:\n" HW_ENTRY("my-gpu", 96));

    ccs_catalog *c = test_catalog();
    size_t n_hw = catalog_n_hw(c), n_models = catalog_n_models(c);
    size_t a100_at = 0;
    while (strcmp(catalog_hw_at(c, a100_at)->name, "a100-80g"))
        a100_at++;
    ccs_err err;
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_OK);
    assert_int_equal(catalog_n_hw(c), n_hw + 1); /* my-gpu added, a100-80g replaced */
    assert_rel(catalog_hw(c, "a100-80g")->mem_cap, 160.0 * 1073741824.0, 1e-12);
    assert_string_equal(catalog_hw_at(c, a100_at)->name, "a100-80g"); /* in its place */
    assert_rel(catalog_hw(c, "my-gpu")->mem_cap, 48.0 * 1073741824.0, 1e-12);
    assert_non_null(catalog_hw(c, "h100-sxm"));
    assert_int_equal(catalog_n_models(c), n_models);
    assert_int_equal(catalog_model(c, "gpt3-175b")->layers, 2);
    unlink(mpath);

    /* a later layer (one file, two kinds) wins over an earlier overlay */
    assert_int_equal(catalog_overlay(c, file, &err), CCS_OK);
    assert_rel(catalog_hw(c, "my-gpu")->mem_cap, 96.0 * 1073741824.0, 1e-12);
    assert_non_null(catalog_model(c, "tiny"));
    assert_int_equal(catalog_n_models(c), n_models + 1);

    /* after the overlay, a repeated name is an error again (inline spec entries) */
    ccs_hw dup = *catalog_hw(c, "my-gpu");
    assert_int_equal(catalog_add_hw(c, &dup, &err), CCS_EINPUT);
    catalog_free(c);

    /* a name twice within one overlay is an error naming the file and line */
    write_file(path, "hardware:\n" HW_ENTRY("my-gpu", 48) HW_ENTRY("my-gpu", 64));
    c = test_catalog();
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "hardware.yaml:"));
    assert_non_null(strstr(err.msg, "defined twice"));
    catalog_free(c);

    /* a directory without catalog files, a missing path */
    unlink(path);
    unlink(file);
    c = test_catalog();
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_EINPUT);
    assert_non_null(
        strstr(err.msg, "needs models.yaml, hardware.yaml, evolutions.yaml or stacks.yaml"));
    assert_int_equal(catalog_overlay(c, "/nonexistent-overlay", &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "/nonexistent-overlay"));
    catalog_free(c);
    rmdir(dir);
}

/* gemm_efficiency_fp4 (NVFP4 GEMMs, serving): read with its depth, in (0, 1],
 * and only for a device with an fp4 peak. */
static void test_hw_fp4_efficiency(void **state)
{
    (void)state;
    char dir[] = "/tmp/ccsweep-fp4XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/hardware.yaml", dir);
    static const struct {
        const char *extra, *error; /* the entry's extra line, what the error says */
    } cases[] = {
        {"    gemm_efficiency_fp4: 0.5\n", "needs an fp4 peak"},
        {"    gemm_efficiency_fp4: 1.5\n", "gemm_efficiency_fp4"},
        {"    gemm_fp4_ref_k: 0\n", "gemm_fp4_ref_k"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text, "hardware:\n" HW_ENTRY("fp4-gpu", 48) "%s", cases[i].extra);
        write_file(path, text);
        ccs_catalog *c = test_catalog();
        ccs_err err;
        assert_int_equal(catalog_overlay(c, dir, &err), CCS_EINPUT);
        if (!strstr(err.msg, cases[i].error))
            fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, cases[i].error);
        catalog_free(c);
    }
    /* with an fp4 peak: read as given; without the field: 0 (the fp8 figures) */
    const char *fp4 = HW_ENTRY_PEAKS("fp4-gpu", 48, "{fp32: 10, bf16: 100, fp8: 200, fp4: 400}");
    char text[2048];
    snprintf(text, sizeof text, "hardware:\n%s%s%s", HW_ENTRY("plain-gpu", 48), fp4,
             "    gemm_efficiency_fp4: 0.5\n    gemm_fp4_ref_k: 8192\n");
    write_file(path, text);
    ccs_catalog *c = test_catalog();
    ccs_err err;
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_OK);
    const ccs_hw *h = catalog_hw(c, "fp4-gpu");
    assert_non_null(h);
    assert_rel(h->peak_fp4, 400e12, 1e-12);
    assert_rel(h->gemm_eff_fp4, 0.5, 1e-12);
    assert_int_equal(h->gemm_fp4_ref_k, 8192);
    assert_true(catalog_hw(c, "plain-gpu")->gemm_eff_fp4 == 0);
    catalog_free(c);
    unlink(path);
    rmdir(dir);
}

/* Overlays that are not regular files are refused at once, not read (a FIFO
 * would block forever); so are files over 16 MiB and nesting beyond 64. */
static void test_overlay_files(void **state)
{
    (void)state;
    alarm(20); /* a blocking open fails the test instead of hanging it */
    char dir[] = "/tmp/ccsweep-overlayXXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fifo.yaml", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    ccs_catalog *c = test_catalog();
    ccs_err err = {""};
    assert_int_equal(catalog_overlay(c, path, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "fifo.yaml: not a regular file"));
    unlink(path);
    snprintf(path, sizeof path, "%s/models.yaml", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "models.yaml: not a regular file"));
    unlink(path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), (off_t)(16 << 20) + 1), 0);
    fclose(f);
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "models.yaml: larger than 16 MiB"));
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("models:\n  - {name: deep, layers: 2, hidden: 64, heads: 4, vocab: 100, description: ",
          f);
    for (int i = 0; i < 1000; i++)
        fputc('[', f);
    fclose(f);
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "models.yaml:2:"));
    assert_non_null(strstr(err.msg, "nested deeper than 64 levels"));
    unlink(path);
    catalog_free(c);
    rmdir(dir);
    alarm(0);
}

/* In an overlay directory a catalog file that is a dangling symbolic link or
 * a loop of them is an error naming it, not a file left out. */
static void test_overlay_symlinks(void **state)
{
    (void)state;
    char dir[] = "/tmp/ccsweep-overlayXXXXXX", path[128], other[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/models.yaml", dir);
    snprintf(other, sizeof other, "%s/hardware.yaml", dir);
    write_file(other, "hardware:\n" HW_ENTRY("my-gpu", 48));
    assert_int_equal(symlink("/nonexistent/models.yaml", path), 0);
    ccs_catalog *c = test_catalog();
    ccs_err err = {""};
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "models.yaml: a symbolic link to nothing"));
    unlink(path);
    assert_int_equal(symlink(path, path), 0); /* a loop */
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "models.yaml: a symbolic link to nothing"));
    unlink(path);
    assert_int_equal(catalog_overlay(c, dir, &err), CCS_OK); /* absent: fine */
    catalog_free(c);
    unlink(other);
    rmdir(dir);
}

/* The three kinds share one add path: past the first growth of their arrays
 * every entry is found again by name, and a repeated name is named with its
 * kind. */
static void test_add_entries(void **state)
{
    (void)state;
    ccs_catalog *c = catalog_new();
    ccs_err err;
    ccs_model m;
    ccs_hw hw;
    ccs_evolution ev;
    memset(&m, 0, sizeof m);
    memset(&hw, 0, sizeof hw);
    memset(&ev, 0, sizeof ev);
    for (int i = 0; i < 40; i++) {
        snprintf(m.name, sizeof m.name, "m%d", i);
        snprintf(hw.name, sizeof hw.name, "h%d", i);
        snprintf(ev.name, sizeof ev.name, "e%d", i);
        m.layers = hw.devices_per_node = i;
        ev.flops = i;
        assert_int_equal(catalog_add_model(c, &m, &err), CCS_OK);
        assert_int_equal(catalog_add_hw(c, &hw, &err), CCS_OK);
        assert_int_equal(catalog_add_evolution(c, &ev, &err), CCS_OK);
    }
    assert_int_equal(catalog_n_models(c), 40);
    assert_int_equal(catalog_n_hw(c), 40);
    assert_int_equal(catalog_n_evolutions(c), 40);
    assert_int_equal(catalog_model(c, "m33")->layers, 33);
    assert_int_equal(catalog_hw(c, "h17")->devices_per_node, 17);
    assert_true(catalog_evolution(c, "e39")->flops == 39);
    assert_int_equal(catalog_add_model(c, &m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "model 'm39' is defined twice"));
    assert_int_equal(catalog_add_hw(c, &hw, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "hardware 'h39' is defined twice"));
    assert_int_equal(catalog_add_evolution(c, &ev, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "evolution 'e39' is defined twice"));
    catalog_free(c);
}

/* Layers: built-in, then $CCSWEEP_CATALOG_PATH, then the --catalog list. */
static void test_layers(void **state)
{
    (void)state;
    char d1[] = "/tmp/ccsweep-layer1XXXXXX", d2[] = "/tmp/ccsweep-layer2XXXXXX", p1[96], p2[96];
    assert_non_null(mkdtemp(d1));
    assert_non_null(mkdtemp(d2));
    snprintf(p1, sizeof p1, "%s/hardware.yaml", d1);
    snprintf(p2, sizeof p2, "%s/hardware.yaml", d2);
    write_file(p1, "hardware:\n" HW_ENTRY("my-gpu", 48));
    write_file(p2, "hardware:\n" HW_ENTRY("my-gpu", 64));
    setenv("CCSWEEP_CATALOG", "sweeps/catalog", 1);
    setenv("CCSWEEP_CATALOG_PATH", d1, 1);
    ccs_catalog *c = catalog_new();
    ccs_err err;
    assert_int_equal(catalog_load_layers(c, NULL, 0, &err), CCS_OK);
    assert_rel(catalog_hw(c, "my-gpu")->mem_cap, 48.0 * 1073741824.0, 1e-12);
    catalog_free(c);
    const char *ov[] = {d2};
    c = catalog_new();
    assert_int_equal(catalog_load_layers(c, ov, 1, &err), CCS_OK);
    assert_rel(catalog_hw(c, "my-gpu")->mem_cap, 64.0 * 1073741824.0, 1e-12);
    assert_non_null(catalog_hw(c, "a100-80g"));
    catalog_free(c);
    setenv("CCSWEEP_CATALOG_PATH", "/nonexistent-layer", 1);
    c = catalog_new();
    assert_int_equal(catalog_load_layers(c, NULL, 0, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "CCSWEEP_CATALOG_PATH"));
    catalog_free(c);
    unsetenv("CCSWEEP_CATALOG_PATH");
    unsetenv("CCSWEEP_CATALOG");
    unlink(p1);
    unlink(p2);
    rmdir(d1);
    rmdir(d2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_catalog),   cmocka_unit_test(test_good_entry),
        cmocka_unit_test(test_bad_entries),       cmocka_unit_test(test_many_entries),
        cmocka_unit_test(test_missing_file),      cmocka_unit_test(test_overlay),
        cmocka_unit_test(test_hw_fp4_efficiency), cmocka_unit_test(test_layers),
        cmocka_unit_test(test_overlay_files),     cmocka_unit_test(test_overlay_symlinks),
        cmocka_unit_test(test_add_entries),
    };
    return cmocka_run_group_tests_name("catalog", tests, NULL, NULL);
}
