/* test_shquote.c - words quoted by ccs_shquote come back whole from a real
 * POSIX shell (/bin/sh prints its first argument), for paths with spaces,
 * quotes, newlines, $, backquotes, globs and the empty word; plain words stay
 * as they are (the expected strings are written out by hand). */
#include "testutil.h"
#include "ccsweep/util/shquote.h"

/* What /bin/sh makes of `printf %s QUOTED`: the word it read. */
static void shell_reads(const char *quoted, char *out, size_t n)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "printf %%s %s", quoted);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t k = fread(out, 1, n - 1, p);
    out[k] = '\0';
    assert_int_equal(pclose(p), 0);
}

static void test_plain_words_unchanged(void **state)
{
    (void)state;
    char q[64];
    assert_string_equal(ccs_shquote(q, sizeof q, "results/ccsweep.db"), "results/ccsweep.db");
    assert_string_equal(ccs_shquote(q, sizeof q, "sweeps/moe-longctx.yaml"),
                        "sweeps/moe-longctx.yaml");
    assert_string_equal(ccs_shquote(q, sizeof q, "a b"), "'a b'");
    assert_string_equal(ccs_shquote(q, sizeof q, "it's"), "'it'\\''s'");
    assert_string_equal(ccs_shquote(q, sizeof q, ""), "''");
}

static void test_shell_reads_the_word_back(void **state)
{
    (void)state;
    const char *words[] = {
        "my study.db", "it's.db",     "a\"b",           "$HOME/x", "`id`", "*.db",
        "line\nbreak", "tab\there",   "semi;colon&amp", "''",      "'",    "",
        "~/x",         "back\\slash", "!bang",          "#hash"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char q[256], back[256];
        ccs_shquote(q, sizeof q, words[i]);
        shell_reads(q, back, sizeof back);
        assert_string_equal(back, words[i]);
    }
}

static void test_too_small_stays_one_word(void **state)
{
    (void)state;
    char q[8];
    /* "'a b c d e'" needs 12 bytes: cut, but closed */
    ccs_shquote(q, sizeof q, "a b c d e");
    assert_int_equal(q[0], '\'');
    assert_int_equal(q[strlen(q) - 1], '\'');
    assert_true(strlen(q) < sizeof q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_words_unchanged),
        cmocka_unit_test(test_shell_reads_the_word_back),
        cmocka_unit_test(test_too_small_stays_one_word),
    };
    return cmocka_run_group_tests_name("shquote", tests, NULL, NULL);
}
