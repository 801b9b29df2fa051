/* testutil.h - helpers shared by the cmocka unit tests. Tests run from the
 * repository root (make check), so data paths are relative to it. */
#ifndef CCSWEEP_TESTUTIL_H
#define CCSWEEP_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CPU-time bounds of the complexity tests (a linear parse must not take a
 * quadratic one's time) scale by this: ASan's full-stack unwinding on every
 * malloc (fast_unwind_on_malloc=0, which the suppressions need) makes
 * allocation-heavy code tens of times slower. */
#if defined(__SANITIZE_ADDRESS__)
#define CCS_TEST_CPU_SCALE 50.0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CCS_TEST_CPU_SCALE 50.0
#endif
#endif
#ifndef CCS_TEST_CPU_SCALE
#define CCS_TEST_CPU_SCALE 1.0
#endif

#include "ccsweep/model/catalog.h"
#include "ccsweep/cost/timeline.h"

/* |a - b| <= tol * |b|, with both values printed when it fails. */
#define assert_rel(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol)*fabs(b_))) {                                                  \
            print_error("%s = %.10g, expected %s = %.10g within %g relative\n", #a, a_, #b, b_,    \
                        (double)(tol));                                                            \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* 1 when README.md holds text (its figures are the tests' output). */
static inline int readme_has(const char *text)
{
    FILE *f = fopen("README.md", "r");
    if (!f)
        return 0;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* the README wraps its lines: compare with every newline a space */
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\n')
            buf[i] = ' ';
    return strstr(buf, text) != NULL;
}

/* Fails the test (at the caller's line), naming the text, unless README.md
 * holds it. */
#define assert_readme_says(text)                                                                   \
    do {                                                                                           \
        const char *text_ = (text);                                                                \
        if (!readme_has(text_)) {                                                                  \
            print_error("README.md does not say: %s\n", text_);                                    \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* The catalog shipped in sweeps/catalog; the test fails if it does not load. */
static inline ccs_catalog *test_catalog(void)
{
    ccs_catalog *c = catalog_new();
    ccs_err err;
    if (!c || catalog_load_dir(c, "sweeps/catalog", &err) != CCS_OK) {
        print_error("cannot load sweeps/catalog: %s\n", c ? err.msg : "out of memory");
        fail();
    }
    return c;
}

/* Group fixture: the shipped catalog, loaded once per test binary. Pass
 * test_catalog_setup/teardown to cmocka_run_group_tests_name; tests read it
 * with test_cat(). */
static inline ccs_catalog **test_cat_slot(void)
{
    static ccs_catalog *cat;
    return &cat;
}

static inline ccs_catalog *test_cat(void)
{
    return *test_cat_slot();
}

static inline int test_catalog_setup(void **state)
{
    (void)state;
    *test_cat_slot() = test_catalog();
    return 0;
}

static inline int test_catalog_teardown(void **state)
{
    (void)state;
    catalog_free(*test_cat_slot());
    *test_cat_slot() = NULL;
    return 0;
}

/* Project model m with plan p on catalog hardware hw at generation 0. */
/* Mistral NeMo 12B as its config.json gives it (Mistral-Nemo-Base-2407:
 * hidden 5120, 40 layers, 32 query heads of head_dim 128, 8 key-value heads,
 * SwiGLU 14336, vocabulary 131072, untied): its query width 4096 is not the
 * hidden size, the case head_dim exists for. */
static inline ccs_model test_mistral_nemo(void)
{
    ccs_model m = {.name = "nemo",
                   .layers = 40,
                   .hidden = 5120,
                   .heads = 32,
                   .kv_heads = 8,
                   .head_dim = 128,
                   .ffn = 14336,
                   .vocab = 131072,
                   .gated = 1};
    model_fill_defaults(&m);
    return m;
}

/* DeepSeek-V3's training plan (DeepSeek-AI 2024, arXiv 2412.19437): 2048
 * H800 (Sec. 3.1), 16-way pipeline parallelism (DualPipe), 64-way expert
 * parallelism over 8 nodes, ZeRO-1 data parallelism, no tensor parallelism
 * (Sec. 3.2), fp8 mixed precision (Sec. 3.3), sequence 4096 and the batch of
 * 15360 sequences held after the ramp (Sec. 4.2). Not published, assumed
 * here: micro-batch 1, the three dense blocks with the embedding on the
 * first stage and two blocks with the head on the last (3 + 14 x 4 + 2). */
static inline ccs_plan test_deepseek_v3_plan(void)
{
    ccs_plan p;
    plan_defaults(&p);
    p.devices = 2048;
    p.tp = 1;
    p.pp = 16;
    p.ep = 64;
    p.pp_first = 3;
    p.pp_last = 2;
    p.seq = 4096;
    p.gbs = 15360;
    p.mbs = 1;
    p.dtype = CCS_FP8;
    p.zero = 1;
    p.flash_attn = 1;
    p.dp_overlap = CCS_DPOV_LAST_MICRO;
    plan_derive(&p);
    return p;
}

/* The catalog's deepseek-v3, that plan (valid) and its operator list on
 * 8-device nodes. */
static inline const ccs_model *test_deepseek_v3(ccs_plan *p, ccs_oplist *ops)
{
    const ccs_model *m = catalog_model(test_cat(), "deepseek-v3");
    assert_non_null(m);
    *p = test_deepseek_v3_plan();
    assert_int_equal(plan_check(m, NULL, p), CCS_R_OK);
    regions_build(m, p, 8, ops);
    return m;
}

static inline void test_project(const ccs_model *m, ccs_plan *p, const ccs_hw *hw, ccs_result *r,
                                ccs_region_time *rg)
{
    ccs_cost c;
    plan_derive(p);
    cost_init(&c, hw, NULL, NULL, 0, p);
    timeline_project(m, p, &c, r, rg);
}

#endif
