/* test_xsum.c - exact sums: cancellations that a double loses are kept;
 * rounding is to nearest, ties to even (the cases written out below); sums
 * of integers scaled by a power of two equal the int64 sum converted to a
 * double (an independent exact computation); the same values summed in any
 * order, or in parts merged in any order, give the same bytes; infinities
 * and NaN; the encoding round-trips and bad bytes are refused. */
#include "testutil.h"
#include "ccsweep/util/xsum.h"

#include <float.h>

static double sum_of(const double *v, size_t n)
{
    ccs_xsum x;
    xsum_zero(&x);
    for (size_t i = 0; i < n; i++)
        xsum_add(&x, v[i]);
    return xsum_value(&x);
}

static void test_xsum_exact_cases(void **state)
{
    (void)state;
    /* a double sum loses the 1 under 1e100 */
    const double cancel[] = {1e100, 1.0, -1e100};
    assert_true(sum_of(cancel, 3) == 1.0);
    /* ten times the double nearest 0.1 is 1 + 5.55e-17, whose nearest double
     * is 1 (half an ulp of 1 is 1.11e-16); adding left to right in doubles
     * gives 0.9999999999999999 */
    double tenth[10];
    for (int i = 0; i < 10; i++)
        tenth[i] = 0.1;
    assert_true(sum_of(tenth, 10) == 1.0);
    /* 1 + 2^-53 is halfway between 1 and 1 + 2^-52: ties go to the even 1;
     * any bit below makes it round up; 1 + 2^-52 + 2^-53 is halfway between
     * the odd 1 + 2^-52 and the even 1 + 2^-51: it goes to the even one */
    const double tie[] = {1.0, 0x1p-53};
    assert_true(sum_of(tie, 2) == 1.0);
    const double above[] = {1.0, 0x1p-53, 0x1p-300};
    assert_true(sum_of(above, 3) == 1.0 + 0x1p-52);
    const double odd[] = {1.0 + 0x1p-52, 0x1p-53};
    assert_true(sum_of(odd, 2) == 1.0 + 0x1p-51);
    /* negative sums round the magnitude alike */
    const double ntie[] = {-1.0, -0x1p-53, -0x1p-300};
    assert_true(sum_of(ntie, 3) == -(1.0 + 0x1p-52));
    /* subnormals are whole units of 2^-1074 */
    const double sub[] = {0x1p-1074, 0x1p-1074, 0x1p-1074};
    assert_true(sum_of(sub, 3) == 3 * 0x1p-1074);
    /* beyond DBL_MAX in between, back within at the end */
    const double big[] = {DBL_MAX, DBL_MAX, -DBL_MAX};
    assert_true(sum_of(big, 3) == DBL_MAX);
    assert_true(isinf(sum_of(big, 2)) && sum_of(big, 2) > 0);
    /* zero, signs, infinities, NaN */
    assert_true(sum_of(NULL, 0) == 0);
    const double zeros[] = {-0.0, 0.0, 2.5, -2.5};
    assert_true(sum_of(zeros, 4) == 0);
    const double inf1[] = {INFINITY, 1.0, NAN};
    assert_true(sum_of(inf1, 3) == INFINITY);
    const double ninf[] = {-INFINITY, 1.0};
    assert_true(sum_of(ninf, 2) == -INFINITY);
    const double both[] = {INFINITY, -INFINITY};
    assert_true(isnan(sum_of(both, 2)));
    const double nan1[] = {NAN, 3.0};
    assert_true(sum_of(nan1, 2) == 3.0);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

/* k_i 2^-20 with |k_i| < 2^48: the exact sum is (sum of k_i) 2^-20, an
 * int64; converting it to a double rounds to nearest, ties to even (C11
 * F.4, IEEE 754 default), the rounding xsum_value must reproduce. */
static void test_xsum_integers(void **state)
{
    (void)state;
    enum { N = 4096 };
    static double v[N];
    uint64_t seed = 42;
    for (int trial = 0; trial < 20; trial++) {
        int64_t exact = 0;
        for (int i = 0; i < N; i++) {
            int64_t k = (int64_t)(lcg(&seed) & ((UINT64_C(1) << 48) - 1));
            if (trial % 3 == 1 || (trial % 3 == 2 && (lcg(&seed) & 1)))
                k = -k;
            exact += k;
            v[i] = ldexp((double)k, -20);
        }
        assert_true(sum_of(v, N) == ldexp((double)exact, -20));
    }
}

static void test_xsum_order_and_parts(void **state)
{
    (void)state;
    enum { N = 3000 };
    static double v[N];
    uint64_t seed = 7;
    for (int i = 0; i < N; i++) {
        double m = (double)(lcg(&seed) % 1000003) / 1000003.0;
        int e = (int)(lcg(&seed) % 200) - 100;
        v[i] = ldexp(lcg(&seed) & 1 ? -m : m, e);
    }
    ccs_xsum fwd, rev, parts, p;
    xsum_zero(&fwd);
    xsum_zero(&rev);
    xsum_zero(&parts);
    for (int i = 0; i < N; i++) {
        xsum_add(&fwd, v[i]);
        xsum_add(&rev, v[N - 1 - i]);
    }
    /* parts of 97 from the end, merged last to first */
    for (int hi = N; hi > 0; hi -= 97) {
        xsum_zero(&p);
        for (int i = hi - 1; i >= 0 && i >= hi - 97; i--)
            xsum_add(&p, v[i]);
        xsum_merge(&parts, &p);
    }
    unsigned char a[XSUM_ENCODED_MAX], b[XSUM_ENCODED_MAX], c[XSUM_ENCODED_MAX];
    size_t na = xsum_encode(&fwd, a), nb = xsum_encode(&rev, b), nc = xsum_encode(&parts, c);
    assert_int_equal(na, nb);
    assert_int_equal(na, nc);
    assert_memory_equal(a, b, na);
    assert_memory_equal(a, c, na);
    double x = xsum_value(&fwd), y = xsum_value(&parts);
    assert_memory_equal(&x, &y, sizeof x);
    /* and the value is the double sum's, give or take its rounding errors */
    double naive = 0, mag = 0;
    for (int i = 0; i < N; i++) {
        naive += v[i];
        mag += fabs(v[i]);
    }
    assert_true(fabs(x - naive) <= N * DBL_EPSILON * mag);
}

static void test_xsum_encoding(void **state)
{
    (void)state;
    const double vals[] = {3.25, -0x1p-1074, 1e300, -7e-200, INFINITY};
    ccs_xsum x, y;
    xsum_zero(&x);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        xsum_add(&x, vals[i]);
    unsigned char buf[XSUM_ENCODED_MAX], again[XSUM_ENCODED_MAX];
    size_t n = xsum_encode(&x, buf);
    assert_int_equal(xsum_decode(&y, buf, n), n);
    assert_int_equal(xsum_encode(&y, again), n);
    assert_memory_equal(buf, again, n);
    assert_true(xsum_value(&y) == INFINITY);
    /* the empty sum: the header only */
    xsum_zero(&x);
    assert_int_equal(xsum_encode(&x, buf), 20);
    assert_int_equal(xsum_decode(&y, buf, 20), 20);
    assert_true(xsum_value(&y) == 0);
    /* truncated, unknown format, a limb out of range */
    xsum_add(&x, 1.5);
    n = xsum_encode(&x, buf);
    assert_int_equal(xsum_decode(&y, buf, n - 1), 0);
    buf[0] = 2;
    assert_int_equal(xsum_decode(&y, buf, n), 0);
    buf[0] = 1;
    buf[20 + 4] = 1; /* the first limb becomes >= 2^32 */
    assert_int_equal(xsum_decode(&y, buf, n), 0);
    assert_true(xsum_value(&y) == 0);
}

/* An encoding of +inf and -inf counts and one top limb (limb 67), written by
 * hand as a damaged or crafted file could hold it. */
static size_t craft(unsigned char *buf, uint64_t pinf, uint64_t ninf, int64_t top)
{
    memset(buf, 0, XSUM_ENCODED_MAX);
    buf[0] = 1;
    buf[1] = top ? XSUM_LIMBS - 1 : 0;
    buf[2] = top ? 1 : 0;
    for (int i = 0; i < 8; i++) {
        buf[4 + i] = (unsigned char)(pinf >> (8 * i));
        buf[12 + i] = (unsigned char)(ninf >> (8 * i));
        buf[20 + i] = (unsigned char)((uint64_t)top >> (8 * i));
    }
    return top ? 28 : 20;
}

/* Decoding bounds the infinity counts (at most 2^62); merging saturates
 * there and at the top limb instead of overflowing, so that whatever decode
 * accepts, merged with itself any number of times, encodes to bytes decode
 * accepts again; decode(b) re-encodes to b (non-canonical bytes are refused). */
static void test_xsum_bounds(void **state)
{
    (void)state;
    const uint64_t inf_max = UINT64_C(1) << 62;
    unsigned char buf[XSUM_ENCODED_MAX], out[XSUM_ENCODED_MAX];
    ccs_xsum x, y;
    assert_int_equal(xsum_decode(&x, buf, craft(buf, INT64_MAX, 0, 0)), 0);
    assert_int_equal(xsum_decode(&x, buf, craft(buf, 0, inf_max + 1, 0)), 0);
    size_t n = craft(buf, inf_max, inf_max, (INT64_C(1) << 32) - 1);
    assert_int_equal(xsum_decode(&x, buf, n), n);
    assert_int_equal(xsum_encode(&x, out), n);
    assert_memory_equal(buf, out, n);
    y = x;
    for (int i = 0; i < 70; i++)
        xsum_merge(&x, &x); /* 2^70 copies */
    xsum_merge(&x, &y);
    assert_true(x.pinf == (int64_t)inf_max && x.ninf == (int64_t)inf_max);
    n = xsum_encode(&x, out);
    assert_int_equal(xsum_decode(&y, out, n), n);
    assert_true(isnan(xsum_value(&y)));
    /* the same for the top limb alone, both signs: beyond any double */
    for (int sign = -1; sign <= 1; sign += 2) {
        n = craft(buf, 0, 0, sign * ((INT64_C(1) << 32) - 1));
        assert_int_equal(xsum_decode(&x, buf, n), n);
        for (int i = 0; i < 40; i++)
            xsum_merge(&x, &x);
        n = xsum_encode(&x, out);
        assert_int_equal(xsum_decode(&y, out, n), n);
        assert_true(xsum_value(&y) == sign * INFINITY);
    }
    /* a saturated top limb, then additions whose carries reach it (found by
     * fuzz_xsum: tests/fuzz/regress/xsum/top-limb-after-adds) */
    n = craft(buf, 0, 0, -((INT64_C(1) << 32) - 1));
    assert_int_equal(xsum_decode(&x, buf, n), n);
    for (int i = 0; i < 1000; i++)
        xsum_add(&x, -DBL_MAX);
    n = xsum_encode(&x, out);
    assert_int_equal(xsum_decode(&y, out, n), n);
    assert_true(xsum_value(&y) == -INFINITY);
    /* additions of infinities saturate too */
    xsum_zero(&x);
    x.pinf = (int64_t)inf_max;
    xsum_add(&x, INFINITY);
    assert_true(x.pinf == (int64_t)inf_max);
    /* non-canonical: a zero first or last limb, a first limb with no limbs */
    xsum_zero(&x);
    xsum_add(&x, 1.5);
    n = xsum_encode(&x, buf);
    memmove(buf + 28, buf + 20, n - 20);
    memset(buf + 20, 0, 8);
    buf[1]--;
    buf[2]++;
    assert_int_equal(xsum_decode(&y, buf, n + 8), 0);
    n = xsum_encode(&x, buf);
    memset(buf + n, 0, 8);
    buf[2]++;
    assert_int_equal(xsum_decode(&y, buf, n + 8), 0);
    craft(buf, 0, 0, 0);
    buf[1] = 5;
    assert_int_equal(xsum_decode(&y, buf, 20), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xsum_exact_cases),     cmocka_unit_test(test_xsum_integers),
        cmocka_unit_test(test_xsum_order_and_parts), cmocka_unit_test(test_xsum_encoding),
        cmocka_unit_test(test_xsum_bounds),
    };
    return cmocka_run_group_tests_name("xsum", tests, NULL, NULL);
}
