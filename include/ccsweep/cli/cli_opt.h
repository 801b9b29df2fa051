/* cli_opt.h - a subcommand's options as one table (after IOR's option_help):
 * each row binds an option's name, argument kind, bounds, destination and
 * help text, and getopt_long, the checks of the values and --help all read
 * the same rows. Also cli_fail, the one way a subcommand reports bad input. */
#ifndef CCSWEEP_CLI_OPT_H
#define CCSWEEP_CLI_OPT_H

#include <stddef.h>
#include <stdio.h>

/* Most --catalog options one command takes. */
#define CLI_MAX_CATALOGS 16
/* Most rows of one table. */
#define CLI_MAX_OPTS 64

/* The --catalog overlays of a command line, in order (borrowed from argv). */
typedef struct cli_catalogs {
    const char *path[CLI_MAX_CATALOGS];
    size_t n;
} cli_catalogs;

typedef enum cli_kind {
    CLI_HELP,    /* --help and -h: print the command's help, exit 0 */
    CLI_FLAG,    /* no value: stores .value (an integer of .size bytes) */
    CLI_STR,     /* const char *, borrowed from argv */
    CLI_INT,     /* a decimal integer in [.min, .max] (an integer of .size bytes) */
    CLI_REAL,    /* a number in (0, .fmax] (a double) */
    CLI_ENUM,    /* a name .parse maps to a value >= 0 (an integer of .size bytes) */
    CLI_FN,      /* .fn parses, checks and stores */
    CLI_CATALOG, /* a catalog overlay, added to the cli_catalogs */
} cli_kind;

typedef struct cli_opt {
    const char *name; /* the long option without "--" */
    cli_kind kind;
    const char *arg;  /* the value's name in the help ("N", "NAME"); NULL for no value */
    size_t off, size; /* destination: offset and size in the command's args struct */
    size_t given;     /* offset + 1 of an int set to 1 when the option is given; 0: none */
    long value;       /* CLI_FLAG: the value stored */
    long min, max;    /* CLI_INT: the bounds */
    double fmax;      /* CLI_REAL: the upper bound */
    int (*parse)(const char *text);         /* CLI_ENUM: the value, or < 0 */
    int (*fn)(const char *text, void *dst); /* CLI_FN: 0, or -1 when text is bad */
    /* what a bad value's message says was expected: required for CLI_ENUM and
     * CLI_FN; for CLI_INT and CLI_REAL instead of the bounds */
    const char *expect;
    /* the help text: '\n' continues on a line indented to the text's column;
     * NULL: not in the help */
    const char *help;
} cli_opt;

/* Destination of a row: field F of the args struct T. */
#define CLI_AT(T, F) .off = offsetof(T, F), .size = sizeof(((T *)0)->F)
/* With "given" flag G of T. */
#define CLI_GIVEN(T, G) .given = offsetof(T, G) + 1

/* clang-format off */
/* Rows, as a table reads them. */
#define CLI_O_HELP {.name = "help", .kind = CLI_HELP}
#define CLI_O_FLAG(NAME, T, F, HELP) \
    {.name = NAME, .kind = CLI_FLAG, CLI_AT(T, F), .value = 1, .help = HELP}
#define CLI_O_STR(NAME, ARG, T, F, HELP) \
    {.name = NAME, .kind = CLI_STR, .arg = ARG, CLI_AT(T, F), .help = HELP}
#define CLI_O_INT(NAME, ARG, T, F, MIN, MAX, HELP) \
    {.name = NAME, .kind = CLI_INT, .arg = ARG, CLI_AT(T, F), .min = MIN, .max = MAX, \
     .help = HELP}
#define CLI_O_REAL(NAME, ARG, T, F, FMAX, HELP) \
    {.name = NAME, .kind = CLI_REAL, .arg = ARG, CLI_AT(T, F), .fmax = FMAX, .help = HELP}
#define CLI_O_ENUM(NAME, ARG, T, F, PARSE, EXPECT, HELP) \
    {.name = NAME, .kind = CLI_ENUM, .arg = ARG, CLI_AT(T, F), .parse = PARSE, \
     .expect = EXPECT, .help = HELP}
#define CLI_O_FN(NAME, ARG, T, F, FN, EXPECT, HELP) \
    {.name = NAME, .kind = CLI_FN, .arg = ARG, CLI_AT(T, F), .fn = FN, .expect = EXPECT, \
     .help = HELP}
#define CLI_O_CATALOG(T, F, HELP) \
    {.name = "catalog", .kind = CLI_CATALOG, .arg = "PATH", CLI_AT(T, F), .help = HELP}
/* clang-format on */

/* A subcommand: its name, its table and the prose of its --help. */
typedef struct cli_cmd {
    const char *name;     /* "project": messages start "ccsweep project: " */
    const char *synopsis; /* the help's first lines, after "usage: " */
    const char *about;    /* paragraphs between the synopsis and the options */
    const cli_opt *opts;
    size_t n_opts;
    int col;                /* width of the help's option column */
    void (*notes)(FILE *f); /* prints what follows the options; NULL: nothing */
} cli_cmd;

enum {
    CLI_OK = 0,   /* parsed: go on */
    CLI_BAD = 1,  /* bad input; the message is printed */
    CLI_DONE = 2, /* --help was printed: exit 0 */
};

/* Parse the options of argv[1..argc) (argv[0] is the command's name) into
 * args, the struct the rows' destinations point into; getopt_long permutes
 * argv, and *first is set to the index of the first positional argument.
 * The first bad option or value ends the parse with one line on err (NULL: no
 * message): an unknown option with the closest one as a suggestion, an option
 * without its value, a value outside its row's bounds. Returns CLI_OK,
 * CLI_BAD or CLI_DONE. */
int cli_opt_parse(const cli_cmd *c, int argc, char **argv, void *args, FILE *err, int *first);

/* Print c's help to f: the synopsis, the about text, a line per option row
 * with help, then the notes. */
void cli_opt_help(const cli_cmd *c, FILE *f);

/* One line on err (NULL: none) for an option that is not in c's table, or
 * that needs a value it lacks (arg as typed): "needs a value" for a known
 * option, else "unknown option" with the closest option as a suggestion. */
void cli_opt_bad(const cli_cmd *c, const char *arg, FILE *err);

/* The candidate closest to word (edit distance, or word a prefix of it) when
 * it is close enough to be a likely typo, else NULL. Borrowed from cands;
 * NULL entries are skipped. */
const char *cli_suggest(const char *word, const char *const *cands, size_t n);

/* Print "ccsweep CMD: MESSAGE\n" on stderr. Returns 1, the exit status of a
 * usage or input error. */
int cli_fail(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The same on f; nothing when f is NULL. */
int cli_fail_to(FILE *f, const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
