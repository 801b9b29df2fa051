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

#include "ccsweep/catalog.h"
#include "ccsweep/timeline.h"

/* |a - b| <= tol * |b|, with both values printed when it fails. */
#define assert_rel(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol) * fabs(b_))) {                                                \
            print_error("%s = %.10g, expected %s = %.10g within %g relative\n", #a, a_, #b, b_,   \
                        (double)(tol));                                                            \
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
static inline void test_project(const ccs_model *m, ccs_plan *p, const ccs_hw *hw,
                                ccs_result *r, ccs_region_time *rg)
{
    ccs_cost c;
    plan_derive(p);
    cost_init(&c, hw, NULL, NULL, 0, p);
    timeline_project(m, p, &c, r, rg);
}

#endif
