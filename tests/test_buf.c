/* test_buf.c - the growable array keeps what it held and refuses sizes that
 * overflow; the string buffer appends across its growth, with the lengths
 * counted by hand below. */
#include "testutil.h"
#include "ccsweep/util/buf.h"

static void test_grow_keeps_elements(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(ccs_grow((void **)&v, &cap, (size_t)i + 1, sizeof *v), 0);
        assert_true(cap >= (size_t)i + 1);
        v[i] = 3 * i;
    }
    /* from 16, doubling: 16, 32, ..., 1024 is the first >= 1000 */
    assert_int_equal(cap, 1024);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(v[i], 3 * i);
    /* a size whose bytes overflow size_t is refused, the array untouched */
    int *before = v;
    assert_int_equal(ccs_grow((void **)&v, &cap, SIZE_MAX / 2, sizeof *v), -1);
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 1024);
    free(v);
}

static void test_buf_appends(void **state)
{
    (void)state;
    ccs_buf b = CCS_BUF_INIT;
    assert_string_equal(ccs_buf_str(&b), "");
    assert_int_equal(ccs_buf_printf(&b, "%s=%d", "tp", 8), 0);
    assert_string_equal(ccs_buf_str(&b), "tp=8");
    assert_int_equal(b.len, 4);
    /* 300 x "ab" (600 bytes) grows past the first 256-byte allocation */
    for (int i = 0; i < 300; i++)
        assert_int_equal(ccs_buf_printf(&b, "ab"), 0);
    assert_int_equal(b.len, 604);
    assert_int_equal(strlen(b.s), 604);
    assert_memory_equal(b.s + 4, "ababab", 6);
    assert_string_equal(b.s + 602, "ab");
    assert_false(b.oom);
    ccs_buf_free(&b);
    assert_null(b.s);
    assert_int_equal(ccs_buf_printf(&b, "%d", 42), 0);
    assert_string_equal(ccs_buf_str(&b), "42");
    ccs_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_keeps_elements),
        cmocka_unit_test(test_buf_appends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
