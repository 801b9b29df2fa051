/* cli_opt.c - option tables: getopt_long over a table's rows, the checks of
 * their values, the help printed from them, and the messages for bad input. */
#include "ccsweep/cli/cli_opt.h"
#include "ccsweep/util/common.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int vfail(FILE *f, const char *cmd, const char *fmt, va_list ap)
{
    if (!f)
        return 1;
    fprintf(f, "ccsweep %s: ", cmd);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    return 1;
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(stderr, cmd, fmt, ap);
    va_end(ap);
    return 1;
}

int cli_fail_to(FILE *f, const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(f, cmd, fmt, ap);
    va_end(ap);
    return 1;
}

/* ---- suggestions ------------------------------------------------------------- */

/* Levenshtein distance between a and b (short words). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cli_suggest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t bd = (size_t)-1, len = strlen(word);
    for (size_t i = 0; word && i < n; i++) {
        if (!cands[i])
            continue;
        size_t d = edit_distance(word, cands[i]);
        /* a prefix of a candidate ("--mod", "list model") also counts as close */
        if (len >= 2 && !strncmp(word, cands[i], len))
            d = 0;
        if (d < bd) {
            bd = d;
            best = cands[i];
        }
    }
    size_t limit = len < 6 ? 2 : len / 3 + 1;
    return best && bd <= limit ? best : NULL;
}

static int takes_value(const cli_opt *o)
{
    return o->kind != CLI_HELP && o->kind != CLI_FLAG;
}

void cli_opt_bad(const cli_cmd *c, const char *arg, FILE *err)
{
    char word[64];
    const char *cands[CLI_MAX_OPTS];
    size_t n = 0;
    if (!err)
        return;
    ccs_strlcpy(word, arg ? arg : "?", sizeof word);
    char *eq = strchr(word, '=');
    if (eq)
        *eq = '\0';
    const char *name = word[0] == '-' && word[1] == '-' ? word + 2 : word;
    for (size_t i = 0; i < c->n_opts && n < CLI_MAX_OPTS; i++) {
        if (!strcmp(c->opts[i].name, name) && takes_value(&c->opts[i])) {
            cli_fail_to(err, c->name, "option '--%s' needs a value (see 'ccsweep %s --help')", name,
                        c->name);
            return;
        }
        cands[n++] = c->opts[i].name;
    }
    const char *best = word[0] == '-' ? cli_suggest(name, cands, n) : NULL;
    if (best)
        cli_fail_to(err, c->name,
                    "unknown option '%s'; did you mean '--%s'? (see 'ccsweep %s --help')", word,
                    best, c->name);
    else
        cli_fail_to(err, c->name, "unknown option '%s' (see 'ccsweep %s --help')", word, c->name);
}

/* ---- parsing ------------------------------------------------------------------ */

/* Store v in the integer of size bytes at dst. */
static void put_int(void *dst, size_t size, long v)
{
    int8_t i8 = (int8_t)v;
    int16_t i16 = (int16_t)v;
    int32_t i32 = (int32_t)v;
    int64_t i64 = v;
    switch (size) {
    case 1:
        memcpy(dst, &i8, 1);
        break;
    case 2:
        memcpy(dst, &i16, 2);
        break;
    case 4:
        memcpy(dst, &i32, 4);
        break;
    case 8:
        memcpy(dst, &i64, 8);
        break;
    default:
        assert(!"an integer destination of 1, 2, 4 or 8 bytes");
    }
}

/* The message for a bad value of o; returns CLI_BAD. */
static int bad_value(const cli_cmd *c, const cli_opt *o, const char *text, FILE *err)
{
    if (o->expect)
        return cli_fail_to(err, c->name, "--%s: expected %s, got '%s'", o->name, o->expect, text);
    if (o->kind == CLI_INT)
        return cli_fail_to(err, c->name, "--%s: expected an integer in [%ld, %ld], got '%s'",
                           o->name, o->min, o->max, text);
    return cli_fail_to(err, c->name, "--%s: expected a number in (0, %g], got '%s'", o->name,
                       o->fmax, text);
}

/* Check text as o's value and store it into args. */
static int take(const cli_cmd *c, const cli_opt *o, const char *text, char *args, FILE *err)
{
    void *dst = args + o->off;
    char *end;
    switch (o->kind) {
    case CLI_HELP:
        cli_opt_help(c, stdout);
        return CLI_DONE;
    case CLI_FLAG:
        put_int(dst, o->size, o->value);
        break;
    case CLI_STR:
        assert(o->size == sizeof text);
        memcpy(dst, &text, sizeof text);
        break;
    case CLI_INT: {
        errno = 0;
        long v = strtol(text, &end, 10);
        if (!*text || *end || errno || v < o->min || v > o->max)
            return bad_value(c, o, text, err);
        put_int(dst, o->size, v);
        break;
    }
    case CLI_REAL: {
        double v = strtod(text, &end);
        assert(o->size == sizeof v);
        if (!*text || *end || !(v > 0) || !(v <= o->fmax))
            return bad_value(c, o, text, err);
        memcpy(dst, &v, sizeof v);
        break;
    }
    case CLI_ENUM: {
        int v = o->parse(text);
        if (v < 0)
            return bad_value(c, o, text, err);
        put_int(dst, o->size, v);
        break;
    }
    case CLI_FN:
        if (o->fn(text, dst))
            return bad_value(c, o, text, err);
        break;
    case CLI_CATALOG: {
        cli_catalogs *k = dst;
        assert(o->size == sizeof *k);
        if (k->n >= CLI_MAX_CATALOGS)
            return cli_fail_to(err, c->name, "--catalog: at most %d overlays", CLI_MAX_CATALOGS);
        k->path[k->n++] = text;
        break;
    }
    }
    if (o->given) {
        int one = 1;
        memcpy(args + o->given - 1, &one, sizeof one);
    }
    return CLI_OK;
}

int cli_opt_parse(const cli_cmd *c, int argc, char **argv, void *args, FILE *err, int *first)
{
    struct option lo[CLI_MAX_OPTS + 1];
    int help = -1, ch, rc = CLI_OK, n = (int)c->n_opts;
    assert(c->n_opts <= CLI_MAX_OPTS);
    for (int i = 0; i < n; i++) {
        lo[i] = (struct option){c->opts[i].name,
                                takes_value(&c->opts[i]) ? required_argument : no_argument, NULL,
                                256 + i};
        if (c->opts[i].kind == CLI_HELP)
            help = i;
    }
    lo[n] = (struct option){NULL, 0, NULL, 0};
    optind = 1;
    opterr = 0;
    while (rc == CLI_OK && (ch = getopt_long(argc, argv, help >= 0 ? "h" : "", lo, NULL)) != -1) {
        if (ch == 'h')
            ch = 256 + help;
        if (ch < 256 || ch >= 256 + n) {
            cli_opt_bad(c, argv[optind - 1], err);
            rc = CLI_BAD;
        } else {
            rc = take(c, &c->opts[ch - 256], optarg, args, err);
        }
    }
    *first = optind;
    return rc;
}

/* ---- help --------------------------------------------------------------------- */

void cli_opt_help(const cli_cmd *c, FILE *f)
{
    fprintf(f, "usage: %s\n", c->synopsis);
    if (c->about)
        fprintf(f, "\n%s\n", c->about);
    for (size_t i = 0, rows = 0; i < c->n_opts; i++) {
        const cli_opt *o = &c->opts[i];
        if (!o->help)
            continue;
        if (!rows++)
            fputc('\n', f);
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        if ((int)strlen(left) <= c->col)
            fprintf(f, "  %-*s ", c->col, left);
        else
            fprintf(f, "  %s  ", left);
        for (const char *s = o->help; *s; s++) {
            fputc(*s, f);
            if (*s == '\n')
                fprintf(f, "%*s", c->col + 3, "");
        }
        fputc('\n', f);
    }
    if (c->notes)
        c->notes(f);
}
