/* cli_narrow.h - the options that narrow a plan search, shared by 'search'
 * and 'compare': listed values for any plan axis (--tp 4,8 --pp 1), a memory
 * limit (--max-mem-frac) and a filter in the spec expression language
 * (--where), and the per-plan output both commands print (the share of the
 * iteration each part takes, CSV rows). */
#ifndef CCSWEEP_CLI_NARROW_H
#define CCSWEEP_CLI_NARROW_H

#include "ccsweep/cli/cli_opt.h"
#include "ccsweep/sweep/search.h"

#include <stdio.h>

typedef struct cli_narrow {
    search_opts so;    /* the rows fill so.ax[] and so.max_mem_frac; so.where is expr */
    const char *where; /* --where text (borrowed from argv) */
    ccs_expr *expr;    /* compiled by cli_narrow_prepare */
} cli_narrow;

/* CLI_FN parsers: a comma-separated list into a search_axis. */
int cli_axis_ints(const char *text, void *dst);
int cli_axis_recompute(const char *text, void *dst);
int cli_axis_bool(const char *text, void *dst);
int cli_axis_dpov(const char *text, void *dst);

/* clang-format off */
#define CLI_NARROW_AXIS(NAME, T, F, AX, FN, EXPECT, HELP) \
    {.name = NAME, .kind = CLI_FN, .arg = "LIST", CLI_AT(T, F.so.ax[AX]), .fn = FN, \
     .expect = EXPECT, .help = HELP}
/* The rows of a command whose args struct T holds a cli_narrow F. */
#define CLI_NARROW_ROWS(T, F) \
    CLI_NARROW_AXIS("tp", T, F, SEARCH_AX_TP, cli_axis_ints, "positive integers, comma-separated", \
                    "only these tensor-parallel degrees (e.g. 4,8);\n" \
                    "likewise --cp --ep --pp --dp --vpp --mbs"), \
    CLI_NARROW_AXIS("cp", T, F, SEARCH_AX_CP, cli_axis_ints, "positive integers, comma-separated", NULL), \
    CLI_NARROW_AXIS("ep", T, F, SEARCH_AX_EP, cli_axis_ints, "positive integers, comma-separated", NULL), \
    CLI_NARROW_AXIS("pp", T, F, SEARCH_AX_PP, cli_axis_ints, "positive integers, comma-separated", NULL), \
    CLI_NARROW_AXIS("dp", T, F, SEARCH_AX_DP, cli_axis_ints, "positive integers, comma-separated", NULL), \
    CLI_NARROW_AXIS("vpp", T, F, SEARCH_AX_VPP, cli_axis_ints, "positive integers, comma-separated", NULL), \
    CLI_NARROW_AXIS("mbs", T, F, SEARCH_AX_MBS, cli_axis_ints, "positive integers, comma-separated", NULL), \
    CLI_NARROW_AXIS("recompute", T, F, SEARCH_AX_RECOMPUTE, cli_axis_recompute, \
                    "none, selective or full, comma-separated", "only these recompute modes"), \
    CLI_NARROW_AXIS("sp", T, F, SEARCH_AX_SP, cli_axis_bool, "0 or 1, comma-separated", \
                    "sequence parallelism off (0), on (1) or both (0,1);\n" \
                    "likewise --flash-attn"), \
    CLI_NARROW_AXIS("flash-attn", T, F, SEARCH_AX_FLASH_ATTN, cli_axis_bool, \
                    "0 or 1, comma-separated", NULL), \
    CLI_NARROW_AXIS("zero", T, F, SEARCH_AX_ZERO, cli_axis_ints, "ZeRO stages 0-3, comma-separated", \
                    "only these ZeRO stages"), \
    CLI_NARROW_AXIS("dp-overlap", T, F, SEARCH_AX_DP_OVERLAP, cli_axis_dpov, \
                    "none, last-microbatch or bucketed, comma-separated", \
                    "only these DP overlap modes"), \
    CLI_O_REAL("max-mem-frac", "X", T, F.so.max_mem_frac, 1, \
               "a plan fits in X of device memory, (0, 1] (1)"), \
    CLI_O_STR("where", "EXPR", T, F.where, \
              "keep plans for which EXPR holds: the spec language\n" \
              "(sweeps/README.md), e.g. 'pp <= 4 and comm_fraction < 0.2'")
/* clang-format on */

/* Set n to no narrowing (before the parse). */
void cli_narrow_init(cli_narrow *n);

/* After the parse: check the listed values (ZeRO stages 0-3) and compile
 * --where. 0, or 1 with the message printed ("ccsweep CMD: --where: ..."). */
int cli_narrow_prepare(const char *cmd, cli_narrow *n);
void cli_narrow_free(cli_narrow *n);

/* --where was undefined for st->undefined plans of s (a division by zero):
 * the error, as a sweep's (its text, the count, the first such plan), is
 * printed; returns 1, the exit status. */
int cli_where_undefined(const char *cmd, const cli_narrow *n, const ccs_search *s,
                        const search_stats *st);

/* What narrowed the search, in words ("tp 8, max-mem-frac 0.85, where
 * 'pp <= 4'"), into buf; "" when nothing did. Returns buf. */
const char *cli_narrow_text(const cli_narrow *n, char *buf, size_t size);

/* Set the job's keys on JSON object o: model, devices, gbs, seq, dtype, and
 * narrowed (cli_narrow_text). 0, or nonzero when out of memory. */
struct json_t;
int cli_json_job(struct json_t *o, const ccs_model *m, const ccs_plan *job, const char *narrow);

/* The share of the iteration each part takes, in % of t_iter: compute,
 * exposed TP, CP, EP and DP communication, pipeline p2p and bubble. */
#define CLI_N_SHARES 7
extern const char *const cli_share_names[CLI_N_SHARES];
void cli_shares(const ccs_result *r, double *pct);

/* CSV of plans: the header, then one row per hit (rank 1-based; same: the
 * search_same_text of its equal plans). */
void cli_hits_csv_header(FILE *f, const char *lead);
void cli_hits_csv_row(FILE *f, const char *lead, int rank, const search_hit *h, const char *same);

#endif
