/* test_expr.c - the where-filter language: values, precedence, enums, and the
 * column of every syntax and type error. Expected values are worked by hand
 * from the grammar in sweeps/README.md (C operator precedence for arithmetic
 * and comparisons; not > and > or, as in Python). */
#include "testutil.h"
#include "ccsweep/sweep/expr.h"

static double vals[EXPR_F_N];

static int eval(const char *text)
{
    ccs_err err;
    int col;
    ccs_expr *e = expr_compile(text, &err, &col);
    if (!e) {
        print_error("'%s' did not compile: %s\n", text, err.msg);
        fail();
    }
    int r = expr_eval(e, vals);
    expr_free(e);
    return r;
}

static void setup_vals(void)
{
    memset(vals, 0, sizeof vals);
    vals[EXPR_F_TP] = 8;
    vals[EXPR_F_PP] = 2;
    vals[EXPR_F_DEVICES] = 64;
    vals[EXPR_F_HIDDEN] = 12288;
    vals[EXPR_F_RECOMPUTE] = CCS_RECOMPUTE_SELECTIVE;
    vals[EXPR_F_DTYPE] = CCS_BF16;
    vals[EXPR_F_SP] = 1;
    vals[EXPR_F_FITS] = 1;
    vals[EXPR_F_COMM_FRACTION] = 0.25;
}

static void test_values(void **state)
{
    (void)state;
    setup_vals();
    assert_true(eval("tp <= 8 and pp == 2"));
    assert_false(eval("tp < 8"));
    assert_true(eval("devices / (tp * pp) == 4"));
    assert_true(eval("1 + 2 * 3 == 7"));
    assert_true(eval("(1 + 2) * 3 == 9"));
    assert_true(eval("-2 * -3 == 6 && 7 % 4 == 3"));
    assert_true(eval("10 - 4 - 3 == 3")); /* left-associative */
    assert_true(eval("not false"));
    assert_true(eval("true or false and false")); /* and binds tighter */
    assert_false(eval("not true or false"));
    assert_true(eval("!(tp > 8) || pp > 100"));
    assert_true(eval("hidden / tp >= 1536"));
    assert_true(eval("comm_fraction > 0.2 and fits"));
    assert_true(eval("sp == true and sp != false"));
    assert_true(eval("1e3 == 1000 and .5 == 0.5"));
}

static void test_enums(void **state)
{
    (void)state;
    setup_vals();
    assert_true(eval("recompute == selective"));
    assert_true(eval("recompute != 'full' and recompute != \"none\""));
    assert_true(eval("recompute > none"));
    assert_true(eval("dtype == bf16"));
    assert_false(eval("dtype == 'fp8'"));
    /* dp_overlap is a mode (CCS_DPOV_*), not a boolean: bucketed (code 2)
     * equals its own name only, and 'none' takes the kind of the side it is
     * compared with (a recompute mode and a dp_overlap mode both have it) */
    vals[EXPR_F_DP_OVERLAP] = CCS_DPOV_BUCKETED;
    assert_true(eval("dp_overlap == bucketed"));
    assert_true(eval("dp_overlap != none and dp_overlap != 'last-microbatch'"));
    assert_true(eval("dp_overlap > \"last-microbatch\"")); /* none < last < bucketed */
    vals[EXPR_F_DP_OVERLAP] = CCS_DPOV_LAST_MICRO;
    assert_true(eval("dp_overlap == 'last-microbatch'"));
    assert_false(eval("dp_overlap == bucketed or dp_overlap == none"));
    vals[EXPR_F_DP_OVERLAP] = CCS_DPOV_NONE;
    assert_true(eval("none == dp_overlap and (none) == dp_overlap and none == none"));
    assert_false(eval("recompute == none")); /* selective */
}

static void test_results_flag(void **state)
{
    (void)state;
    ccs_err err;
    ccs_expr *a = expr_compile("tp > 1 and hidden > 4096", &err, NULL);
    ccs_expr *b = expr_compile("tp > 1 and fits", &err, NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_false(expr_uses_results(a));
    assert_true(expr_uses_results(b));
    expr_free(a);
    expr_free(b);
    expr_free(NULL);
    assert_int_equal(expr_field_lookup("t_iter"), EXPR_F_T_ITER);
    assert_int_equal(expr_field_lookup("nope"), -1);
    assert_string_equal(expr_field_name(EXPR_F_MFU), "mfu");
}

/* text, 1-based column of the error, a word the message must contain */
static const struct {
    const char *text;
    int col;
    const char *msg;
} bad[] = {
    {"tp >", 5, "end of expression"},
    {"tp = 2", 4, "'=='"},
    {"(tp > 1", 8, "expected ')'"},
    {"tp > 1 pp", 8, "after a complete expression"},
    {"foo > 1", 1, "unknown field 'foo'"},
    {"tp @ 1", 4, "unexpected character"},
    {"tp > 'partial'", 6, "unknown name 'partial'"},
    {"'abc", 1, "unterminated"},
    {"2x > 1", 1, "malformed number"},
    {"1 < tp < 4", 8, "chained"},
    {"", 1, "end of expression"},
    /* type errors */
    {"tp and pp", 4, "type error"},
    {"fits + 1", 6, "arithmetic needs numbers"},
    {"tp", 1, "must be a condition"},
    {"recompute == 3", 11, "cannot compare a recompute mode with a number"},
    {"sp < true", 4, "ordering needs numbers"},
    {"not tp", 1, "'not' needs a boolean"},
    {"-fits", 1, "unary sign"},
    {"dtype == full", 7, "cannot compare a dtype with a recompute mode"},
    {"dtype == none", 7, "cannot compare a dtype with a mode name"},
    {"dp_overlap", 1, "got a dp_overlap mode"},
    {"dp_overlap == true", 12, "cannot compare a dp_overlap mode with a boolean"},
    {"dp_overlap and tp > 1", 12, "'and' needs booleans, got a dp_overlap mode"},
    {"dp_overlap == last-microbatch", 15, "quote it"},
    {"dp_overlap == 'ring'", 12, "cannot compare a dp_overlap mode with a cp_comm mode"},
    {"none", 1, "got a mode name"},
    /* decimal literals only */
    {"tp == 0x8", 7, "hexadecimal"},
    {"tp == 0X1p3", 7, "hexadecimal"},
    {"tp < 1e999", 6, "out of range"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ccs_err err = {""};
        int col = -1;
        ccs_expr *e = expr_compile(bad[i].text, &err, &col);
        if (e || col != bad[i].col || !strstr(err.msg, bad[i].msg)) {
            print_error("'%s': got col %d, message '%s'; expected col %d and '%s'\n", bad[i].text,
                        col, err.msg, bad[i].col, bad[i].msg);
            expr_free(e);
            fail();
        }
        char want[16];
        snprintf(want, sizeof want, "column %d", bad[i].col);
        assert_non_null(strstr(err.msg, want));
    }
}

/* 1 when s is well-formed UTF-8. */
static int utf8_ok(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        int n = *u < 0x80             ? 0
                : (*u & 0xe0) == 0xc0 ? 1
                : (*u & 0xf0) == 0xe0 ? 2
                : (*u & 0xf8) == 0xf0 ? 3
                                      : -1;
        if (n < 0)
            return 0;
        u++;
        for (int i = 0; i < n; i++, u++)
            if ((*u & 0xc0) != 0x80)
                return 0;
    }
    return 1;
}

/* A non-ASCII character is quoted whole in an error, and columns count
 * characters, not bytes: in "'\u00fc\u00fc' @" the '@' is the 6th character
 * (the 8th byte). */
static void test_non_ascii(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int col;
        const char *msg;
    } cases[] = {
        {"tp == \u00e9", 7, "unexpected character '\u00e9'"},
        {"tp > 1 and \u20ac > 2", 12, "unexpected character '\u20ac'"},
        {"'\u00fc\u00fc' @", 6, "unexpected character '@'"},
        {"recompute == '\u00fc'", 14, "unknown name '\u00fc'"},
        {"tp > \x80", 6, "unexpected character '\\x80'"}, /* a byte that is not UTF-8 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ccs_err err = {""};
        int col = -1;
        ccs_expr *e = expr_compile(cases[i].text, &err, &col);
        if (e || col != cases[i].col || !strstr(err.msg, cases[i].msg) || !utf8_ok(err.msg)) {
            print_error("'%s': got col %d, message '%s'; expected col %d and '%s'\n", cases[i].text,
                        col, err.msg, cases[i].col, cases[i].msg);
            expr_free(e);
            fail();
        }
    }
    /* a long tail of two-byte characters after a complete expression is cut
     * between characters, never inside one */
    for (int pad = 0; pad < 2; pad++) {
        char t[1024];
        snprintf(t, sizeof t, "tp > 1%s )", pad ? " " : "");
        for (int i = 0; i < 300; i++)
            strcat(t, "\u00e9");
        ccs_err err = {""};
        ccs_expr *e = expr_compile(t, &err, NULL);
        assert_null(e);
        if (!strstr(err.msg, "after a complete expression") || !utf8_ok(err.msg)) {
            print_error("message not UTF-8 or wrong: '%s'\n", err.msg);
            fail();
        }
    }
}

/* Deep nesting is refused with an error, not a stack overflow: 10,000
 * parentheses, 500,000 'not' and as many unary minus signs. */
static void test_nesting_limit(void **state)
{
    (void)state;
    const char *unit[] = {"(", "not ", "-"};
    const size_t reps[] = {10000, 500000, 500000};
    for (int k = 0; k < 3; k++) {
        size_t u = strlen(unit[k]), n = reps[k];
        char *t = malloc(n * u + 64);
        assert_non_null(t);
        for (size_t i = 0; i < n; i++)
            memcpy(t + i * u, unit[k], u);
        strcpy(t + n * u, k == 2 ? "tp > 1" : "fits");
        ccs_err err = {""};
        int col = 0;
        ccs_expr *e = expr_compile(t, &err, &col);
        free(t);
        assert_null(e);
        if (!strstr(err.msg, "nested too deeply")) {
            print_error("%s x %zu: %s\n", unit[k], n, err.msg);
            fail();
        }
        assert_int_equal(col, 64 * (int)u + 1); /* the 65th level */
    }
    /* 64 levels are fine */
    char t[256] = "";
    for (int i = 0; i < 64; i++)
        strcat(t, "(");
    strcat(t, "fits");
    for (int i = 0; i < 64; i++)
        strcat(t, ")");
    setup_vals();
    assert_true(eval(t));
}

/* A divisor that is a constant 0 is a compile error; a division by zero at
 * run time makes the filter undefined unless the other side of and/or
 * decides it. */
static void test_division_by_zero(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int col;
    } bad[] = {{"tp / 0 > 1", 4},
               {"tp % 0 == 1", 4},
               {"tp / (2 - 2) > 1", 4},
               {"tp > 1 and hidden / (0 * 5) > 2", 19},
               {"tp / -0 > 1", 4}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ccs_err err = {""};
        int col = 0;
        ccs_expr *e = expr_compile(bad[i].text, &err, &col);
        if (e || col != bad[i].col || !strstr(err.msg, "division by zero")) {
            print_error("'%s': col %d, '%s'\n", bad[i].text, col, err.msg);
            expr_free(e);
            fail();
        }
    }
    setup_vals();
    vals[EXPR_F_DP] = 0;
    ccs_err err;
    static const struct {
        const char *text;
        int want;
    } run[] = {
        {"tp / dp > 1", EXPR_UNDEFINED},
        {"tp % dp == 0", EXPR_UNDEFINED},
        {"not (tp / dp > 1)", EXPR_UNDEFINED},
        {"tp / dp == tp / dp", EXPR_UNDEFINED},
        {"fits and tp / dp > 1", EXPR_UNDEFINED},
        {"dp > 0 and tp / dp > 1", 0}, /* the guard decides */
        {"tp / dp > 1 and dp > 0", 0}, /* either side */
        {"dp == 0 or tp / dp > 1", 1},
        {"tp / dp > 1 or dp == 0", 1},
        {"tp / (dp + 1) == 8", 1},
        {"tp / 0.5 == 16", 1},
    };
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) {
        ccs_expr *e = expr_compile(run[i].text, &err, NULL);
        assert_non_null(e);
        int r = expr_eval(e, vals);
        expr_free(e);
        if (r != run[i].want) {
            print_error("'%s' = %d, want %d\n", run[i].text, r, run[i].want);
            fail();
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nesting_limit), cmocka_unit_test(test_division_by_zero),
        cmocka_unit_test(test_values),        cmocka_unit_test(test_enums),
        cmocka_unit_test(test_results_flag),  cmocka_unit_test(test_errors),
        cmocka_unit_test(test_non_ascii),
    };
    return cmocka_run_group_tests_name("expr", tests, NULL, NULL);
}
