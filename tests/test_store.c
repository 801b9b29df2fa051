/* test_store.c - SHA-256 against the FIPS 180-4 / NIST example vectors, and
 * the store: schema creation, batched rows, chunks, resume (exact todo list,
 * partial chunks removed), the parts of open chunks recorded by each commit,
 * refusal of a different spec and of files that are not ccsweep databases.
 * Databases live in a mkdtemp directory. */
#include "testutil.h"
#include "ccsweep/util/sha256.h"
#include "ccsweep/store/store.h"
#include "ccsweep/store/store_query.h"

#include <sys/stat.h>
#include <unistd.h>

static ccs_catalog *cat;
static char dir[64];

static int setup(void **state)
{
    (void)state;
    cat = test_catalog();
    strcpy(dir, "/tmp/ccsweep-test-store-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    catalog_free(cat);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

/* Source: NIST CSRC "Examples with intermediate values", SHA-256 (FIPS 180-4):
 * "abc", the 448-bit two-block message, and one million 'a' (FIPS 180-2
 * appendix B.3); the empty string from the same NIST example set. */
static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[65];
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(m2, strlen(m2), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces to exercise the buffering */
    ccs_sha256 s;
    sha256_init(&s);
    char a[1000];
    memset(a, 'a', sizeof a);
    size_t fed = 0, step = 1;
    while (fed < 1000000) {
        size_t n = step < 1000000 - fed ? step : 1000000 - fed;
        n = n > sizeof a ? sizeof a : n;
        sha256_update(&s, a, n);
        fed += n;
        step = step * 7 % 997 + 1;
    }
    uint8_t d[32];
    sha256_final(&s, d);
    static const uint8_t want[32] = {0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92,
                                     0x81, 0xa1, 0xc7, 0xe2, 0x84, 0xd7, 0x3e, 0x67,
                                     0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97, 0x20, 0x0e,
                                     0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
    assert_memory_equal(d, want, 32);
}

static const char spec_text_a[] = "models: [gpt3-175b, llama3-8b]\nhardware: [a100-80g, mi210]\n"
                                  "generations: [0, 1]\n"
                                  "plan:\n  devices: 64\n  tp: [1, 2, 4, 8]\n  pp: [1, 2]\n"
                                  "scenario_name: \"{model}-{hardware}-tp{tp}\"\n";

static void put_range(ccs_store *st, const ccs_grid *g, int64_t lo, int64_t hi, int done)
{
    ccs_err err;
    for (int64_t i = lo; i < hi; i++) {
        ccs_record rec;
        ccs_region_time rg[CCS_RG_N];
        if (grid_eval(g, i, &rec, rg))
            assert_int_equal(store_put(st, &rec, rg, &err), CCS_OK);
    }
    if (done)
        assert_int_equal(store_chunk_done(st, lo, hi, &err), CCS_OK);
}

static void test_store_resume(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/sub/r.db", dir); /* parent is created */
    ccs_err err;
    int rc;
    ccs_spec *spec = spec_parse(spec_text_a, strlen(spec_text_a), "a.yaml", cat, &err);
    ccs_grid *g = grid_new(spec, &err);
    assert_non_null(g);
    int64_t n = grid_count(g);
    assert_int_equal(n, 2 * 2 * 2 * 4 * 2);

    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_non_null(st);
    store_run_info info = {.argv = "test", .ranks = 1, .detail = 1};
    assert_int_equal(store_prepare_run(st, g, &info, 1, &err), STORE_NEW); /* nothing to resume */
    assert_int_equal(store_run_id(st), 1);
    size_t nt;
    const store_range *todo = store_todo(st, &nt);
    assert_int_equal(nt, 1);
    assert_true(todo[0].lo == 0 && todo[0].hi == n);
    /* [0,10) and [20,30) complete and committed; [10,15) rows committed without
     * their chunk; [30,40) rows in a transaction that is never committed */
    put_range(st, g, 0, 10, 1);
    put_range(st, g, 20, 30, 1);
    put_range(st, g, 10, 15, 0);
    assert_int_equal(store_commit(st, &err), CCS_OK);
    put_range(st, g, 30, 40, 1);
    store_close(st); /* rolls back the open transaction, like a crash */

    /* resume: todo is exactly the gaps */
    st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_non_null(st);
    assert_int_equal(store_prepare_run(st, g, &info, 1, &err), STORE_RESUMED);
    assert_int_equal(store_run_id(st), 1);
    todo = store_todo(st, &nt);
    assert_int_equal(nt, 2);
    assert_true(todo[0].lo == 10 && todo[0].hi == 20);
    assert_true(todo[1].lo == 30 && todo[1].hi == n);
    store_counts c;
    store_counts_get(st, &c);
    assert_int_equal(c.done, 20);
    assert_int_equal(c.rows, 20); /* the rows of [10, 15) were removed */
    for (size_t i = 0; i < nt; i++)
        put_range(st, g, todo[i].lo, todo[i].hi, 1);
    assert_int_equal(store_finish(st, STORE_COMPLETE, &c, &err), CCS_OK);
    assert_int_equal(c.done, n);
    assert_int_equal(c.rows, n);
    assert_int_equal(c.filtered, 0);
    assert_int_equal(c.ok + c.invalid + c.oom, n);
    store_close(st);

    /* complete: --resume has nothing to do, a plain new run is refused (the
     * same sweep is there), --new-run gets id 2 */
    st = store_open(path, STORE_LOCK_EXCLUSIVE, &rc, &err);
    assert_non_null(st);
    assert_int_equal(store_prepare_run(st, g, &info, STORE_MODE_RESUME, &err), STORE_NOTHING);
    store_close(st);
    st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_int_equal(store_prepare_run(st, g, &info, STORE_MODE_NEW, &err), STORE_DONE_BEFORE);
    assert_int_equal(store_run_id(st), 1);
    store_close(st);
    st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_int_equal(store_prepare_run(st, g, &info, STORE_MODE_APPEND, &err), STORE_NEW);
    assert_int_equal(store_run_id(st), 2);
    store_close(st); /* run 2 stays 'running' (unfinished) */

    /* resuming with another spec while run 2 is unfinished is refused */
    const char *other = "models: gpt3-175b\nhardware: a100-80g\nplan: {tp: 1}\n";
    ccs_spec *spec_b = spec_parse(other, strlen(other), "b.yaml", cat, &err);
    ccs_grid *gb = grid_new(spec_b, &err);
    st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_int_equal(store_prepare_run(st, gb, &info, 1, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "different spec"));
    store_close(st);
    grid_free(gb);
    spec_free(spec_b);
    grid_free(g);
    spec_free(spec);
}

/* Open chunks: a commit inside them records the parts their rows cover, so
 * that a crash right after it leaves no row outside chunks and n_done counts
 * exactly the indices whose rows are committed. */
static void test_store_open_chunks(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/open.db", dir);
    ccs_err err;
    int rc;
    ccs_spec *spec = spec_parse(spec_text_a, strlen(spec_text_a), "a.yaml", cat, &err);
    ccs_grid *g = grid_new(spec, &err);
    assert_non_null(g);
    int64_t n = grid_count(g);
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_non_null(st);
    store_run_info info = {.argv = "test", .ranks = 1};
    assert_int_equal(store_prepare_run(st, g, &info, STORE_MODE_NEW, &err), STORE_NEW);
    /* two chunks computed side by side, a commit in the middle of both */
    assert_int_equal(store_chunk_open(st, 0, 20, &err), CCS_OK);
    assert_int_equal(store_chunk_open(st, 20, 40, &err), CCS_OK);
    put_range(st, g, 0, 10, 0);
    put_range(st, g, 20, 25, 0);
    assert_int_equal(store_commit(st, &err), CCS_OK);
    store_counts c;
    store_counts_committed(st, &c);
    assert_int_equal(c.done, 15);
    assert_int_equal(c.rows, 15);
    /* the first completes: what the commit did not record of it is recorded */
    put_range(st, g, 10, 20, 0);
    assert_int_equal(store_chunk_done(st, 0, 20, &err), CCS_OK);
    assert_int_equal(store_commit(st, &err), CCS_OK);
    store_counts_committed(st, &c);
    assert_int_equal(c.done, 25);
    /* rows of the second in a transaction that never commits (a crash) */
    put_range(st, g, 25, 30, 0);
    store_close(st);

    st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_non_null(st);
    assert_int_equal(store_prepare_run(st, g, &info, STORE_MODE_RESUME, &err), STORE_RESUMED);
    size_t nt;
    const store_range *todo = store_todo(st, &nt);
    assert_int_equal(nt, 1);
    assert_true(todo[0].lo == 25 && todo[0].hi == n);
    store_counts_get(st, &c);
    assert_int_equal(c.done, 25);
    assert_int_equal(c.rows, 25);
    assert_int_equal(c.filtered, 0);
    /* a chunk done whose every row a commit recorded adds nothing more */
    assert_int_equal(store_chunk_open(st, 25, n, &err), CCS_OK);
    put_range(st, g, 25, n, 0);
    assert_int_equal(store_commit(st, &err), CCS_OK);
    assert_int_equal(store_chunk_done(st, 25, n, &err), CCS_OK);
    assert_int_equal(store_finish(st, STORE_COMPLETE, &c, &err), CCS_OK);
    assert_int_equal(c.done, n);
    assert_int_equal(c.rows, n);
    store_close(st);
    grid_free(g);
    spec_free(spec);
}

/* The WAL file stays within max(4 MiB, a sixteenth of the file) plus what
 * one commit writes, in a sweep of a 26 MB file (--detail) committed every
 * 500 rows, and is gone once the file closes: the disk a sweep needs is about
 * 1.06x its final size (results/README.md; a quarter of the file, the rule
 * before, fails). SQLite reuses the WAL file from its start after a
 * checkpoint: its size is the largest it has been, and a commit that makes it
 * larger adds its frames (the largest such growth: one commit's frames). */
static void test_store_wal_bound(void **state)
{
    (void)state;
    static const char text[] = "models: [gpt3-175b, llama3-8b]\nhardware: [a100-80g, mi210]\n"
                               "generations: [0, 1, 2, 3]\nevolution: memory-wall\nplan:\n"
                               "  devices: {geom: [64, 1024, 2]}\n  tp: {geom: [1, 8, 2]}\n"
                               "  pp: [1, 2, 4, 8, 16]\n  recompute: [none, selective, full]\n"
                               "  sp: [false, true]\n  mbs: [1, 2]\n  zero: [0, 1]\n";
    char path[128], wal[160];
    snprintf(path, sizeof path, "%s/wal.db", dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    ccs_err err;
    int rc;
    ccs_spec *spec = spec_parse(text, strlen(text), "w.yaml", cat, &err);
    assert_non_null(spec);
    ccs_grid *g = grid_new(spec, &err);
    assert_non_null(g);
    int64_t n = grid_count(g), step = 500;
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_non_null(st);
    store_run_info info = {.argv = "test", .ranks = 1, .detail = 1};
    assert_int_equal(store_prepare_run(st, g, &info, STORE_MODE_NEW, &err), STORE_NEW);
    long long most = 0, grew = 0; /* bytes: the WAL file, its largest growth in one commit */
    for (int64_t lo = 0; lo < n; lo += step) {
        int64_t hi = lo + step < n ? lo + step : n;
        assert_int_equal(store_chunk_open(st, lo, hi, &err), CCS_OK);
        put_range(st, g, lo, hi, 1);
        assert_int_equal(store_commit(st, &err), CCS_OK);
        struct stat w;
        assert_int_equal(stat(wal, &w), 0);
        if (w.st_size - most > grew)
            grew = w.st_size - most;
        most = w.st_size > most ? w.st_size : most;
    }
    assert_int_equal(store_finish(st, STORE_COMPLETE, NULL, &err), CCS_OK);
    store_close(st);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    long long final = sb.st_size, rule = final / 16;
    if (rule < 4096000)
        rule = 4096000;
    printf("wal bound: file %lld bytes, WAL at most %lld (final + WAL %.3fx), the rule %lld, one "
           "commit %lld at most\n",
           final, most, (double)(final + most) / (double) final, rule, grew);
    assert_true(final / 4 > rule + 2 * grew); /* large enough to tell a quarter apart */
    assert_true(most <= rule + grew + grew / 4);
    assert_int_not_equal(stat(wal, &sb), 0); /* checkpointed and removed at close */
    grid_free(g);
    spec_free(spec);
}

/* One row of results read back: the values of its columns in order. */
typedef struct row_vals {
    int n;
    int null_at; /* first NULL column, or -1 */
    double v[64];
} row_vals;

static int get_row(void *ctx, const storeq_row *row)
{
    row_vals *rv = ctx;
    rv->n = storeq_ncols(row);
    rv->null_at = -1;
    for (int i = 0; i < rv->n && i < 64; i++) {
        rv->v[i] = storeq_double(row, i);
        if (storeq_type(row, i) == STOREQ_NULL && rv->null_at < 0)
            rv->null_at = i;
    }
    return 0;
}

/* One row of the view results: its words, the type of params, its outputs. */
typedef struct named_vals {
    char word[6][32]; /* dtype, recompute, dp_overlap, cp_comm, status, reason */
    int params_int;   /* typeof(params) is integer */
    int64_t params;
    double out[CCS_N_OUTPUTS];
    int n;
} named_vals;

static int get_named(void *ctx, const storeq_row *row)
{
    named_vals *nv = ctx;
    nv->n = storeq_ncols(row);
    for (int i = 0; i < 6; i++) {
        const char *w = storeq_text(row, i);
        snprintf(nv->word[i], sizeof nv->word[i], "%s", w ? w : "(null)");
    }
    nv->params_int = storeq_type(row, 6) == STOREQ_INT;
    nv->params = storeq_int(row, 6);
    for (int k = 0; k < CCS_N_OUTPUTS && 7 + k < nv->n; k++)
        nv->out[k] = storeq_double(row, 7 + k);
    return 0;
}

/* Every plan axis and every output of a grid with the axes of schema
 * version 6 comes back from the view result_codes as it was projected, bit
 * for bit: also the five outputs that rows of version 9 leave to the view to
 * derive, and the band's ends it stores only when they differ from t_iter.
 * The view results gives the same outputs, the codes as plan.c's words and
 * params as an integer. */
static void test_store_roundtrip(void **state)
{
    (void)state;
    static const char text[] = "models: [llama3-8b, mixtral-8x7b]\nhardware: h100-sxm\n"
                               "plan:\n  devices: 64\n  tp: 2\n  cp: [1, 2]\n"
                               "  cp_comm: [ring, allgather]\n  ep: [1, 8]\n"
                               "  capacity_factor: [dropless, 1.25]\n  pp: 2\n"
                               "  pp_first_layers: [0, 14]\n  seq: 8192\n  gbs: 64\n"
                               "  dp_overlap: [none, last-microbatch, bucketed]\n";
    char path[128];
    snprintf(path, sizeof path, "%s/rt.db", dir);
    ccs_err err;
    int rc;
    ccs_spec *spec = spec_parse(text, strlen(text), "rt.yaml", cat, &err);
    assert_non_null(spec);
    ccs_grid *g = grid_new(spec, &err);
    int64_t n = grid_count(g);
    assert_int_equal(n, 2 * 2 * 2 * 2 * 2 * 2 * 3);
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_non_null(st);
    store_run_info info = {.argv = "test", .ranks = 1};
    assert_int_equal(store_prepare_run(st, g, &info, STORE_MODE_NEW, &err), STORE_NEW);
    put_range(st, g, 0, n, 1);
    store_counts c;
    assert_int_equal(store_finish(st, STORE_COMPLETE, &c, &err), CCS_OK);
    store_close(st);

    char sql[2048] = "SELECT cp, cp_comm, ep, capacity_factor, pp_first_layers, pp_last_layers, "
                     "devices, tp, pp, dp, seq, gbs, status, reason";
    for (int k = 0; k < CCS_N_OUTPUTS; k++)
        snprintf(sql + strlen(sql), sizeof sql - strlen(sql), ", %s", ccs_outputs[k].name);
    strcat(sql, " FROM result_codes WHERE run_id = 1 AND idx = :idx");
    char named[2048] = "SELECT dtype, recompute, dp_overlap, cp_comm, status, reason, params";
    for (int k = 0; k < CCS_N_OUTPUTS; k++)
        snprintf(named + strlen(named), sizeof named - strlen(named), ", %s", ccs_outputs[k].name);
    strcat(named, " FROM results WHERE run_id = 1 AND idx = :idx");
    storeq_db *q = storeq_open(path, &rc, &err);
    assert_non_null(q);
    int timed = 0, invalid = 0, ep_rows = 0, cp_rows = 0, dpov[3] = {0};
    for (int64_t i = 0; i < n; i++) {
        ccs_record rec;
        assert_int_equal(grid_eval(g, i, &rec, NULL), 1);
        storeq_param par = {":idx", STOREQ_INT, i, 0, NULL};
        row_vals rv = {0};
        assert_int_equal(storeq_exec(q, sql, &par, 1, get_row, &rv, &err), CCS_OK);
        assert_int_equal(rv.n, 14 + CCS_N_OUTPUTS);
        const ccs_plan *p = &rec.s.plan;
        const double plan[] = {p->cp,        p->cp_comm,  p->ep,      p->capacity_factor,
                               p->pp_first,  p->pp_last,  p->devices, p->tp,
                               p->pp,        p->dp,       p->seq,     p->gbs,
                               rec.r.status, rec.r.reason};
        for (int k = 0; k < 14; k++)
            assert_true(rv.v[k] == plan[k]);
        named_vals nv = {0};
        assert_int_equal(storeq_exec(q, named, &par, 1, get_named, &nv, &err), CCS_OK);
        assert_int_equal(nv.n, 7 + CCS_N_OUTPUTS);
        static const char *const st_names[] = {"ok", "invalid", "oom"};
        const char *want[6] = {dtype_name(p->dtype),           recompute_name(p->recompute),
                               dp_overlap_name(p->dp_overlap), cp_comm_name(p->cp_comm),
                               st_names[rec.r.status],         plan_reason_name(rec.r.reason)};
        for (int k = 0; k < 6; k++)
            assert_string_equal(nv.word[k], want[k]);
        assert_true(nv.params_int);
        dpov[p->dp_overlap]++;
        if (rec.r.status == CCS_ST_INVALID) {
            invalid++;
            assert_int_equal(rv.null_at, 14); /* every output NULL */
            continue;
        }
        timed++;
        assert_int_equal(rv.null_at, -1);
        for (int k = 0; k < CCS_N_OUTPUTS; k++) {
            assert_true(rv.v[14 + k] == ccs_output_of(&rec.r, k)); /* REAL: the same double */
            assert_true(nv.out[k] == ccs_output_of(&rec.r, k));
        }
        assert_true(nv.params == (int64_t)rec.r.params && nv.params == rec.r.params);
        ep_rows += rec.r.t_ep_comm > 0;
        cp_rows += rec.r.t_cp_comm > 0;
    }
    /* the grid holds both kinds, and traffic of both classes */
    assert_true(timed > 0 && invalid > 0 && ep_rows > 0 && cp_rows > 0);
    assert_true(dpov[0] > 0 && dpov[1] > 0 && dpov[2] > 0); /* every dp_overlap word */
    storeq_close(q);
    grid_free(g);
    spec_free(spec);
}

static void test_not_a_database(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/text.db", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("this is not sqlite, just some text that is long enough to look like a header...\n", f);
    fclose(f);
    ccs_err err;
    int rc;
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_null(st);
    assert_int_equal(rc, CCS_EINPUT);
    store_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),    cmocka_unit_test(test_store_resume),
        cmocka_unit_test(test_store_open_chunks), cmocka_unit_test(test_store_wal_bound),
        cmocka_unit_test(test_store_roundtrip),   cmocka_unit_test(test_not_a_database),
    };
    return cmocka_run_group_tests_name("store", tests, setup, teardown);
}
