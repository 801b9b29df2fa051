/* test_keep.c - best K per group: the table ends the same whatever the order
 * of the offers and however they are split into chunks that are reduced
 * first (fixed-size tables, as the workers use) and then merged; a full
 * fixed-size table refuses a new group and changes nothing; ties go to the
 * lower index; invalid plans are never kept. */
#include "testutil.h"
#include "ccsweep/keep.h"

static const char keep_spec[] = "models: [gpt3-175b, llama3-8b]\nhardware: [a100-80g, mi210]\n"
                                "generations: [0, 1]\n"
                                "plan:\n  devices: [64, 128, 256]\n  tp: [1, 2, 3, 4, 8]\n"
                                "  pp: [1, 2, 4]\n  mbs: [1, 2]\n"
                                "keep: {best: 3, by: t_iter, per: [model, devices]}\n";

/* Indices held, sorted, into out; returns how many. */
static size_t held(const ccs_keep *k, int64_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < keep_slots(k); i++)
        if (keep_at(k, i))
            out[n++] = keep_at(k, i)->s.idx;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int64_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static void test_keep_orders_and_chunks(void **state)
{
    (void)state;
    ccs_err err;
    ccs_spec *sp = spec_parse(keep_spec, sizeof keep_spec - 1, "keep.yaml", test_cat(), &err);
    assert_non_null(sp);
    ccs_grid *g = grid_new(sp, &err);
    assert_non_null(g);
    int64_t n = grid_count(g);
    ccs_keep *fwd = keep_new(g, 0), *rev = keep_new(g, 0), *merged = keep_new(g, 0);
    ccs_keep *chunk = keep_new(g, 4); /* fewer groups than the grid has: it fills */
    assert_non_null(fwd);
    assert_non_null(chunk);
    ccs_record rec;
    int disp, invalid_kept = 0;
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(grid_eval(g, i, &rec, NULL), 1);
        int r = keep_offer(fwd, &rec, &disp, NULL, NULL);
        invalid_kept += r == KEEP_KEPT && rec.r.status == CCS_ST_INVALID;
        grid_eval(g, n - 1 - i, &rec, NULL);
        keep_offer(rev, &rec, &disp, NULL, NULL);
    }
    assert_int_equal(invalid_kept, 0);
    /* chunks of 7, reduced in a 4-group table that is flushed when full */
    for (int64_t lo = 0; lo < n; lo += 7) {
        for (int64_t i = lo; i < lo + 7 && i < n; i++) {
            grid_eval(g, i, &rec, NULL);
            if (keep_offer(chunk, &rec, &disp, NULL, NULL) == KEEP_FULL) {
                size_t before = keep_count(chunk);
                for (size_t s = 0; s < keep_slots(chunk); s++)
                    if (keep_at(chunk, s))
                        keep_offer(merged, keep_at(chunk, s), &disp, NULL, NULL);
                keep_clear(chunk);
                assert_true(before > 0);
                assert_int_equal(keep_offer(chunk, &rec, &disp, NULL, NULL) != KEEP_FULL, 1);
            }
        }
        for (size_t s = 0; s < keep_slots(chunk); s++)
            if (keep_at(chunk, s))
                keep_offer(merged, keep_at(chunk, s), &disp, NULL, NULL);
        keep_clear(chunk);
    }
    int64_t a[512], b[512], c[512];
    size_t na = held(fwd, a), nb = held(rev, b), nc = held(merged, c);
    /* 2 models x 3 device counts, 3 each */
    assert_int_equal(na, 18);
    assert_int_equal(nb, na);
    assert_int_equal(nc, na);
    assert_memory_equal(a, b, na * sizeof a[0]);
    assert_memory_equal(a, c, na * sizeof a[0]);
    keep_free(fwd);
    keep_free(rev);
    keep_free(merged);
    keep_free(chunk);
    keep_free(NULL);
    grid_free(g);
    spec_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_orders_and_chunks),
    };
    return cmocka_run_group_tests_name("keep", tests, test_catalog_setup, test_catalog_teardown);
}
