/* test_noise.c - interference verdicts from probe times: quiet series, a
 * single burst, sustained load, frequent bursts; the header round trip. */
#include "testutil.h"

#include "ccsweep/util/noise.h"

static void test_quiet(void **state)
{
    (void)state;
    /* a quiet 2-core machine: probes within a few percent of each other */
    const double t[] = {0.0102, 0.0100, 0.0104, 0.0101, 0.0103, 0.0100};
    noise_verdict v;
    noise_judge(t, 6, NOISE_TOL, &v);
    assert_int_equal(v.n, 6);
    assert_rel(v.fastest, 0.0100, 1e-12);
    assert_int_equal(v.slow, 0);
    assert_false(v.busy);
    assert_rel(v.slowdown, 0.04, 1e-9);
}

static void test_one_burst(void **state)
{
    (void)state;
    /* one probe caught a burst: not busy (the caller re-measures that window) */
    const double t[] = {0.0100, 0.0101, 0.0180, 0.0100, 0.0102, 0.0101, 0.0100, 0.0103};
    noise_verdict v;
    noise_judge(t, 8, NOISE_TOL, &v);
    assert_int_equal(v.slow, 1);
    assert_false(v.busy);
    assert_rel(v.slowdown, 0.8, 1e-9);
}

static void test_sustained(void **state)
{
    (void)state;
    /* another job took the cores for most of the run: the median is slow */
    const double t[] = {0.0100, 0.0160, 0.0170, 0.0150, 0.0180, 0.0165};
    noise_verdict v;
    noise_judge(t, 6, NOISE_TOL, &v);
    assert_true(v.busy);
    assert_int_equal(v.slow, 5);
    /* frequent bursts: a quarter or more of the probes slow, median quiet */
    const double b[] = {0.0100, 0.0101, 0.0150, 0.0100, 0.0160, 0.0102, 0.0100, 0.0101};
    noise_judge(b, 8, NOISE_TOL, &v);
    assert_int_equal(v.slow, 2);
    assert_false(v.busy); /* exactly a quarter */
    const double c[] = {0.0100, 0.0150, 0.0150, 0.0100, 0.0160, 0.0102, 0.0100, 0.0101};
    noise_judge(c, 8, NOISE_TOL, &v);
    assert_true(v.busy);
}

static void test_format_parse(void **state)
{
    (void)state;
    const double t[] = {0.01234, 0.0125, 0.02};
    char buf[128];
    double back[8];
    assert_int_equal(noise_format(t, 3, buf, sizeof buf), 0);
    assert_string_equal(buf, "0.01234 0.0125 0.02");
    assert_int_equal(noise_parse(buf, back, 8), 3);
    assert_rel(back[2], 0.02, 1e-12);
    assert_int_equal(noise_parse("none", back, 8), -1);
    assert_int_equal(noise_format(t, 3, buf, 8), -1); /* does not fit */
    assert_rel(noise_mismatch(0.014, 0.010), 0.4, 1e-9);
    assert_rel(noise_mismatch(0.010, 0.014), 0.4, 1e-9);
    assert_rel(noise_mismatch(0, 0.01), 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_one_burst),
        cmocka_unit_test(test_sustained),
        cmocka_unit_test(test_format_parse),
    };
    return cmocka_run_group_tests_name("noise", tests, NULL, NULL);
}
