/* test_keep.c - best K per group: the table ends the same whatever the order
 * of the offers and however they are split into chunks that are reduced
 * first (fixed-size tables, as the workers use) and then merged; a full
 * fixed-size table refuses a new group and changes nothing; ties go to the
 * lower index; invalid plans are never kept. */
#include "testutil.h"
#include "ccsweep/sweep/keep.h"

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

static const char agg_spec[] = "models: [gpt3-175b, llama3-8b]\nhardware: [a100-80g, mi210]\n"
                               "generations: [0, 1]\n"
                               "plan:\n  devices: [64, 128, 256]\n  tp: [1, 2, 3, 4, 8]\n"
                               "  pp: [1, 2, 4]\n  mbs: [1, 2]\n"
                               "keep: {best: 0, by: t_iter, per: [model, devices], "
                               "aggregate: [t_iter, mfu, comm_fraction]}\n";

/* One group's aggregates, bytes that must match: count, and per field n,
 * min, max and the sum's canonical encoding. */
static size_t agg_bytes(const ccs_agg *a, const double *key, int nf, unsigned char *out)
{
    for (size_t gi = 0; gi < agg_groups(a); gi++) {
        int64_t scen;
        const keep_stat *st;
        const double *k = agg_group_at(a, gi, &scen, &st);
        if (k[0] != key[0] || k[1] != key[1])
            continue;
        size_t at = 0;
        memcpy(out, &scen, sizeof scen);
        at += sizeof scen;
        for (int f = 0; f < nf; f++) {
            memcpy(out + at, &st[f].n, 8);
            memcpy(out + at + 8, &st[f].min, 8);
            memcpy(out + at + 16, &st[f].max, 8);
            at += 24;
            at += xsum_encode(&st[f].sum, out + at);
        }
        return at;
    }
    return 0;
}

/* keep.aggregate: per (model, devices), the count of the ranked scenarios
 * and count, min, max and sum of three outputs equal a direct loop over the
 * grid (sums within rounding of a double loop); the same bytes whether the
 * records are counted in order, backwards, or in chunks counted in a
 * fixed-size table (flushed when full), packed, unpacked and merged; best 0
 * keeps no record. */
static void test_keep_aggregates(void **state)
{
    (void)state;
    ccs_err err;
    ccs_spec *sp = spec_parse(agg_spec, sizeof agg_spec - 1, "agg.yaml", test_cat(), &err);
    assert_non_null(sp);
    const spec_keep *rule = spec_keep_rule(sp);
    assert_int_equal(rule->best, 0);
    assert_int_equal(rule->n_agg, 3);
    ccs_grid *g = grid_new(sp, &err);
    assert_non_null(g);
    int64_t n = grid_count(g);
    ccs_agg *fwd = agg_new(g, 0), *rev = agg_new(g, 0), *merged = agg_new(g, 0);
    ccs_agg *chunk = agg_new(g, 2), *pend = agg_new(g, 0);
    ccs_keep *kp = keep_new(g, 0);
    assert_non_null(fwd);
    assert_non_null(chunk);
    assert_non_null(kp);
    unsigned char *buf = malloc(agg_pack_max(chunk));
    assert_non_null(buf);
    /* direct: 2 models x 3 device counts */
    int64_t count[2][3] = {{0}}, nv[2][3][3] = {{{0}}};
    double mn[2][3][3], mx[2][3][3], sum[2][3][3] = {{{0}}};
    const int fields[3] = {EXPR_F_T_ITER, EXPR_F_MFU, EXPR_F_COMM_FRACTION};
    ccs_record rec;
    int disp;
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(grid_eval(g, i, &rec, NULL), 1);
        assert_int_equal(keep_offer(kp, &rec, &disp, NULL, NULL), KEEP_DROPPED);
        int r = agg_offer(fwd, &rec);
        assert_int_equal(r, rec.r.status == CCS_ST_INVALID ? KEEP_DROPPED : KEEP_KEPT);
        grid_eval(g, n - 1 - i, &rec, NULL);
        agg_offer(rev, &rec);
        grid_eval(g, i, &rec, NULL);
        if (rec.r.status == CCS_ST_INVALID)
            continue;
        double vals[EXPR_F_N];
        grid_fields(g, &rec.s, &rec.r, vals);
        int m = rec.s.model, d = rec.s.plan.devices == 64 ? 0 : rec.s.plan.devices == 128 ? 1 : 2;
        count[m][d]++;
        for (int f = 0; f < 3; f++) {
            double v = vals[fields[f]];
            if (isnan(v))
                continue;
            if (!nv[m][d][f] || v < mn[m][d][f])
                mn[m][d][f] = v;
            if (!nv[m][d][f] || v > mx[m][d][f])
                mx[m][d][f] = v;
            nv[m][d][f]++;
            sum[m][d][f] += v;
        }
    }
    assert_int_equal(keep_count(kp), 0);
    /* chunks of 13 from the end: a 2-group table, flushed into the chunk's
     * pending table when full, which is merged when the chunk ends */
    for (int64_t hi = n; hi > 0; hi -= 13) {
        for (int64_t i = hi - 1; i >= 0 && i >= hi - 13; i--) {
            grid_eval(g, i, &rec, NULL);
            int r = agg_offer(chunk, &rec);
            if (r == KEEP_FULL) {
                for (size_t gi = 0; gi < agg_groups(chunk); gi++) {
                    size_t len = agg_pack(chunk, gi, buf), used = 0;
                    assert_int_equal(agg_unpack_add(pend, buf, len, &used), CCS_OK);
                    assert_int_equal(used, len);
                    assert_int_equal(agg_unpack_add(pend, buf, len - 1, &used), CCS_EINPUT);
                }
                agg_clear(chunk);
                assert_int_equal(agg_offer(chunk, &rec), KEEP_KEPT);
            }
        }
        assert_int_equal(agg_merge(pend, chunk), CCS_OK);
        agg_clear(chunk);
        assert_int_equal(agg_merge(merged, pend), CCS_OK);
        agg_clear(pend);
    }
    assert_int_equal(agg_groups(fwd), 6);
    assert_int_equal(agg_groups(merged), 6);
    const int devs[3] = {64, 128, 256};
    unsigned char a[4096], b[4096], c[4096];
    for (int m = 0; m < 2; m++)
        for (int d = 0; d < 3; d++) {
            double key[2] = {m, devs[d]};
            size_t na = agg_bytes(fwd, key, 3, a), nb = agg_bytes(rev, key, 3, b),
                   nc = agg_bytes(merged, key, 3, c);
            assert_true(na > 0);
            assert_int_equal(nb, na);
            assert_int_equal(nc, na);
            assert_memory_equal(a, b, na);
            assert_memory_equal(a, c, na);
            for (size_t gi = 0; gi < agg_groups(fwd); gi++) {
                int64_t scen;
                const keep_stat *st;
                const double *k = agg_group_at(fwd, gi, &scen, &st);
                if (k[0] != key[0] || k[1] != key[1])
                    continue;
                assert_int_equal(scen, count[m][d]);
                for (int f = 0; f < 3; f++) {
                    assert_int_equal(st[f].n, nv[m][d][f]);
                    assert_true(st[f].min == mn[m][d][f]);
                    assert_true(st[f].max == mx[m][d][f]);
                    assert_rel(xsum_value(&st[f].sum), sum[m][d][f], 1e-13);
                }
            }
        }
    /* the dirty list names each changed group once; clean empties it */
    const size_t *dl;
    assert_int_equal(agg_dirty(merged, &dl), 6);
    agg_clean(merged);
    assert_int_equal(agg_dirty(merged, &dl), 0);
    free(buf);
    agg_free(fwd);
    agg_free(rev);
    agg_free(merged);
    agg_free(chunk);
    agg_free(pend);
    agg_free(NULL);
    keep_free(kp);
    grid_free(g);
    spec_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_orders_and_chunks),
        cmocka_unit_test(test_keep_aggregates),
    };
    return cmocka_run_group_tests_name("keep", tests, test_catalog_setup, test_catalog_teardown);
}
