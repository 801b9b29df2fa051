/* report_sql.c - the canned queries of the report, one per question. The
 * texts are tools/queries/NAME.sql, compiled in at build time (the Makefile
 * runs tools/sql2c.sh), so the shipped files and the report cannot drift. */
#include "ccsweep/report/report_sql.h"

#include <stdlib.h>
#include <string.h>

/* q_NAME[]: generated from tools/queries/NAME.sql by tools/sql2c.sh */
#include "report_queries.inc"

static const report_query queries[] = {
    {"summary", "Summary: communication share and hidden DP communication per hardware generation",
     q_summary},
    {"comm_share", "Communication share of the iteration vs model size (plot 1)", q_comm_share},
    {"breakdown", "Where the iteration time goes (plot 2)", q_breakdown},
    {"ccr_hidden", "Compute/communication ratio vs hidden size (plot 3)", q_ccr_hidden},
    {"dp_hidden", "Hidden fraction of data-parallel communication (plot 4)", q_dp_hidden},
    {"mitigations", "What each mitigation recovers (plot 5)", q_mitigations},
    {"forced_tp", "Memory-forced tensor-parallel degree (plot 6)", q_forced_tp},
    {"fixed_plan", "Today's plans on future hardware", q_fixed_plan},
    {"comm_class", "Communication by class of mixture-of-experts and long-context models",
     q_comm_class},
    {"best_plan", "Best plan per model and hardware", q_best_plan},
    {"comm_bound", "Which scenarios are communication-bound", q_comm_bound},
    {"run_diff", "What changed between two runs", q_run_diff},
    {"serve_best", "Best serving plan per job: TTFT, TPOT, tokens/s per GPU, decode split",
     q_serve_best},
    {"serve_tpot", "Serving: TPOT vs concurrency per tp (serving plot 1)", q_serve_tpot},
    {"serve_comm_tp", "Serving: decode communication share vs tp (serving plot 3)",
     q_serve_comm_tp},
};

size_t report_query_count(void)
{
    return sizeof queries / sizeof queries[0];
}

const report_query *report_query_get(size_t i)
{
    return i < report_query_count() ? &queries[i] : NULL;
}

const report_query *report_query_find(const char *name)
{
    for (size_t i = 0; name && i < report_query_count(); i++)
        if (!strcmp(queries[i].name, name))
            return &queries[i];
    return NULL;
}

char *report_query_text(const report_query *q)
{
    size_t n = 1;
    for (const char *const *l = q->lines; *l; l++)
        n += strlen(*l);
    char *s = malloc(n), *p = s;
    if (!s)
        return NULL;
    for (const char *const *l = q->lines; *l; l++) {
        size_t k = strlen(*l);
        memcpy(p, *l, k);
        p += k;
    }
    *p = 0;
    return s;
}
