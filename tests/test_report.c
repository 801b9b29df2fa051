/* test_report.c - the report's pure helpers (summary statistics, where hidden
 * communication turns exposed, the hidden-size ladder, the fixed TP, gnuplot
 * quoting), the canned-query catalog, and the read-only query API of the store
 * on a database made by store_open. */
#include "testutil.h"
#include "ccsweep/report/report.h"
#include "ccsweep/sweep/serve_search.h"
#include "ccsweep/report/report_sql.h"
#include "ccsweep/store/store.h"
#include "ccsweep/store/store_query.h"

#include <unistd.h>

static void test_stats(void **state)
{
    (void)state;
    report_stats st;
    double v[] = {5, NAN, 1, 3, INFINITY, 2};
    report_stats_of(v, 6, &st);
    assert_int_equal(st.n, 4);
    assert_rel(st.min, 1, 0);
    assert_rel(st.max, 5, 0);
    assert_rel(st.mean, 2.75, 1e-12);
    assert_rel(st.median, 2.5, 1e-12); /* even count: mean of the middle two */
    report_stats_of(v, 4, &st);        /* 5, 1, 3 */
    assert_rel(st.median, 3, 0);
    double none[] = {NAN};
    report_stats_of(none, 1, &st);
    assert_int_equal(st.n, 0);
    assert_true(isnan(st.min) && isnan(st.median));
    report_stats_of(NULL, 0, &st);
    assert_int_equal(st.n, 0);
}

static void test_first_below(void **state)
{
    (void)state;
    int gen[] = {0, 1, 2, 3, 4};
    double hid[] = {100, 80, 45, 20, 5};
    assert_int_equal(report_first_below(gen, hid, 5, 50), 2);
    double back[] = {100, 40, 60, 70, 80}; /* dips, then hidden again: not for good */
    assert_int_equal(report_first_below(gen, back, 5, 50), -1);
    double dip[] = {100, 40, 60, 30, 10};
    assert_int_equal(report_first_below(gen, dip, 5, 50), 3);
    double all[] = {10, 10, 10, 10, 10};
    assert_int_equal(report_first_below(gen, all, 5, 50), 0);
    double gaps[] = {100, NAN, 40, NAN, NAN}; /* missing values do not break the run */
    assert_int_equal(report_first_below(gen, gaps, 5, 50), 2);
    double never[] = {NAN, NAN, NAN, NAN, NAN};
    assert_int_equal(report_first_below(gen, never, 5, 50), -1);
    assert_int_equal(report_first_below(gen, hid, 0, 50), -1);
}

static void test_ladder(void **state)
{
    (void)state;
    /* catalog-like models plus a 64-layer ladder; 80 layers has only two sizes */
    int layers[] = {24, 64, 80, 64, 80, 64, 96, 64, 64};
    int hidden[] = {1024, 4096, 8192, 8192, 8192, 16384, 12288, 32768, 65536};
    unsigned char mask[9];
    assert_int_equal(report_pick_ladder(layers, hidden, 9, mask), 5);
    for (int i = 0; i < 9; i++)
        assert_int_equal(mask[i], layers[i] == 64);

    /* two groups of three: the wider hidden range wins */
    int l2[] = {8, 8, 8, 16, 16, 16};
    int h2[] = {1024, 2048, 4096, 1024, 8192, 65536};
    assert_int_equal(report_pick_ladder(l2, h2, 6, mask), 3);
    assert_int_equal(mask[3] + mask[4] + mask[5], 3);

    /* duplicates of one size do not make a ladder */
    int l3[] = {32, 32, 32, 80};
    int h3[] = {4096, 4096, 8192, 8192};
    assert_int_equal(report_pick_ladder(l3, h3, 4, mask), 0);
    assert_int_equal(mask[0] | mask[1] | mask[2] | mask[3], 0);
}

static void test_fixed_tp(void **state)
{
    (void)state;
    int tps[] = {1, 2, 4, 8, 16};
    int64_t n[] = {100, 5, 50, 1, 50};
    assert_int_equal(report_pick_fixed_tp(tps, n, 5, 8), 8);  /* preferred, even if rare */
    assert_int_equal(report_pick_fixed_tp(tps, n, 5, 32), 4); /* most rows, ties to smaller */
    int ones[] = {1};
    int64_t n1[] = {10};
    assert_int_equal(report_pick_fixed_tp(ones, n1, 1, 8), 0); /* no tensor parallelism */
}

static void test_gp_quote(void **state)
{
    (void)state;
    char buf[32];
    assert_int_equal(report_gp_quote(buf, sizeof buf, "mi210: best plan"), 0);
    assert_string_equal(buf, "'mi210: best plan'");
    assert_int_equal(report_gp_quote(buf, sizeof buf, "it's"), 0);
    assert_string_equal(buf, "'it''s'");
    assert_int_equal(report_gp_quote(buf, 8, "too long for it"), -1);
    assert_string_equal(buf, "''");
    /* a newline would end the title command and run the next line */
    char big[96];
    assert_int_equal(report_gp_quote(big, sizeof big, "h100\nsystem(\"touch x\")\r\t`id`"), 0);
    assert_string_equal(big, "'h100?system(\"touch x\")???id?'");
}

/* Keys of line panels: columns capped by what fits in the plot area (a
 * 547 px panel of a three-hardware figure has about 447 px), six rows per
 * column until then, 7 points when that saves rows. Widths per column from
 * report_key_fit's rule: (longest + 6) x 0.9 x points. */
static void test_key_fit(void **state)
{
    (void)state;
    report_key k;
    report_key_fit(5, 28, 447, &k); /* one column of five */
    assert_int_equal(k.font, 8);
    assert_int_equal(k.rows, 5);
    report_key_fit(9, 12, 447, &k); /* short titles: two columns of 6 and 3 */
    assert_int_equal(k.font, 8);
    assert_int_equal(k.rows, 5);
    /* 28 characters: 245 px per column at 8 points (one fits), 214 at 7 (two) */
    report_key_fit(9, 28, 447, &k);
    assert_int_equal(k.font, 7);
    assert_int_equal(k.rows, 5);
    report_key_fit(17, 28, 447, &k); /* was three columns past the edge */
    assert_int_equal(k.font, 7);
    assert_int_equal(k.rows, 9);
    report_key_fit(17, 28, 1000, &k); /* room for three at 8 points */
    assert_int_equal(k.font, 8);
    assert_int_equal(k.rows, 6);
    report_key_fit(4, 200, 447, &k); /* too long for any column: one */
    assert_int_equal(k.font, 8);
    assert_int_equal(k.rows, 4);
    report_key_fit(0, 0, 447, &k);
    assert_int_equal(k.rows, 1);
}

/* --format lists: any order and subset of png, pdf, svg; anything else names
 * the bad entry. */
static void test_formats(void **state)
{
    (void)state;
    unsigned f;
    const char *bad;
    assert_int_equal(report_parse_formats("png", &f, &bad), 0);
    assert_int_equal(f, REPORT_PNG);
    assert_int_equal(report_parse_formats("svg,pdf,png", &f, &bad), 0);
    assert_int_equal(f, REPORT_PNG | REPORT_PDF | REPORT_SVG);
    assert_int_equal(report_parse_formats("pdf,pdf", &f, &bad), 0);
    assert_int_equal(f, REPORT_PDF);
    assert_int_equal(report_parse_formats("png,gif", &f, &bad), -1);
    assert_string_equal(bad, "gif");
    assert_int_equal(report_parse_formats("png,", &f, &bad), -1);
    assert_int_equal(report_parse_formats("", &f, &bad), -1);
    assert_int_equal(report_parse_formats("pngx", &f, &bad), -1);
}

static void test_query_catalog(void **state)
{
    (void)state;
    static const char *const must[] = {"comm_share",  "breakdown", "ccr_hidden", "dp_hidden",
                                       "mitigations", "forced_tp", "best_plan",  "comm_bound",
                                       "run_diff",    "summary",   "fixed_plan"};
    assert_true(report_query_count() >= 11);
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        assert_non_null(report_query_find(must[i]));
    assert_null(report_query_find("nope"));
    assert_null(report_query_get(report_query_count()));
    for (size_t i = 0; i < report_query_count(); i++) {
        const report_query *q = report_query_get(i);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(q->name, report_query_get(j)->name);
        char *text = report_query_text(q);
        assert_non_null(text);
        char head[96];
        snprintf(head, sizeof head, "-- %s.sql - ", q->name);
        assert_memory_equal(text, head, strlen(head)); /* says what it answers */
        size_t len = strlen(text);
        assert_true(len > 100 && !strcmp(text + len - 2, ";\n"));
        assert_non_null(strstr(text, ":run")); /* runs on any run, default the latest */
        for (const char *const *l = q->lines; *l; l++) {
            size_t k = strlen(*l);
            assert_true(k >= 1 && (*l)[k - 1] == '\n' && !strchr(*l, '\t'));
        }
        /* the serving queries rank plans as search --serve and the view serve_best do */
        if (!strncmp(q->name, "serve_", 6))
            assert_non_null(strstr(text, "ORDER BY " CCS_SERVE_BEST_ORDER));
        free(text);
    }
}

/* ---- store_query on a fresh database ---------------------------------------------- */

typedef struct seen {
    int rows, ncols;
    double d[4];
    int64_t i;
    char text[32];
    int null_text;
} seen;

static int on_row(void *ctx, const storeq_row *row)
{
    seen *s = ctx;
    s->rows++;
    s->ncols = storeq_ncols(row);
    for (int c = 0; c < s->ncols && c < 4; c++)
        s->d[c] = storeq_double(row, c);
    s->i = storeq_int(row, 0);
    const char *t = storeq_text(row, 2);
    s->null_text = t == NULL;
    snprintf(s->text, sizeof s->text, "%s", t ? t : "");
    assert_string_equal(storeq_colname(row, 0), "a");
    assert_int_equal(storeq_type(row, 0), STOREQ_INT);
    assert_int_equal(storeq_type(row, 1), STOREQ_NULL);
    return 0;
}

static int stop_at_two(void *ctx, const storeq_row *row)
{
    (void)row;
    return ++*(int *)ctx == 2 ? 42 : 0;
}

static void test_store_query(void **state)
{
    (void)state;
    char path[] = "/tmp/ccsweep-test-report-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    int rc;
    ccs_err err;
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, &err);
    assert_non_null(st);
    store_close(st);

    storeq_db *db = storeq_open(path, &rc, &err);
    assert_non_null(db);
    assert_int_equal(rc, CCS_OK);
    assert_string_equal(storeq_path(db), path);

    seen s = {0};
    storeq_param p[] = {
        {.name = ":x", .type = STOREQ_INT, .i = 7},
        {.name = ":t", .type = STOREQ_TEXT, .s = "bf16"},
        {.name = ":unused", .type = STOREQ_REAL, .d = 1.5},
    };
    /* two statements: rows of both reach the callback; unbound :y is NULL */
    assert_int_equal(storeq_exec(db,
                                 "-- a comment\nSELECT :x AS a, :y AS b, :t AS c;\n"
                                 "SELECT :x + 1 AS a, NULL AS b, NULL AS c; -- done\n",
                                 p, 3, on_row, &s, &err),
                     CCS_OK);
    assert_int_equal(s.rows, 2);
    assert_int_equal(s.ncols, 3);
    assert_int_equal(s.i, 8);
    assert_true(isnan(s.d[1]));
    assert_true(s.null_text);

    seen s1 = {0};
    assert_int_equal(storeq_exec(db, "SELECT :x AS a, NULL AS b, :t AS c", p, 2, on_row, &s1, &err),
                     CCS_OK);
    assert_string_equal(s1.text, "bf16");
    assert_rel(s1.d[0], 7, 0);

    /* positional parameters, and a callback that stops the query */
    storeq_param pos[] = {{.type = STOREQ_INT, .i = 3}};
    int n = 0;
    assert_int_equal(storeq_exec(db,
                                 "WITH RECURSIVE c(v) AS (SELECT 1 UNION ALL SELECT v + 1 "
                                 "FROM c WHERE v < ?1) SELECT v FROM c",
                                 pos, 1, stop_at_two, &n, &err),
                     42);
    assert_int_equal(n, 2);

    /* the schema is there, and errors name the database */
    assert_int_equal(storeq_exec(db, "SELECT count(*) FROM runs", NULL, 0, NULL, NULL, &err),
                     CCS_OK);
    assert_int_equal(storeq_exec(db, "SELECT x FROM nowhere", NULL, 0, NULL, NULL, &err), CCS_EIO);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "no such table"));
    /* read-only: writes fail */
    assert_int_equal(storeq_exec(db, "DELETE FROM runs", NULL, 0, NULL, NULL, &err), CCS_EIO);
    assert_non_null(strstr(err.msg, "readonly"));
    storeq_close(db);
    storeq_close(NULL);

    /* refusals */
    unlink(path);
    assert_null(storeq_open(path, &rc, &err));
    assert_int_equal(rc, CCS_EINPUT);
    assert_non_null(strstr(err.msg, "No such file"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("plain text, not sqlite, long enough to fill a header of one hundred bytes ......"
          "................................................\n",
          f);
    fclose(f);
    assert_null(storeq_open(path, &rc, &err));
    assert_int_equal(rc, CCS_EINPUT);
    assert_non_null(strstr(err.msg, "not a ccsweep database"));
    assert_non_null(strstr(err.msg, path));
    unlink(path);
    char wal[sizeof path + 8];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats),       cmocka_unit_test(test_first_below),
        cmocka_unit_test(test_ladder),      cmocka_unit_test(test_fixed_tp),
        cmocka_unit_test(test_gp_quote),    cmocka_unit_test(test_query_catalog),
        cmocka_unit_test(test_store_query), cmocka_unit_test(test_formats),
        cmocka_unit_test(test_key_fit),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
