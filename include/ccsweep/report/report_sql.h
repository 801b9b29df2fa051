/* report_sql.h - the report's canned SQL queries, one per question (plots,
 * summary, best plan, communication-bound scenarios, run differences). The
 * texts are also shipped as tools/queries/NAME.sql and run unchanged with
 * 'sqlite3 DB < FILE'. Parameters: :run (default the latest run), :prev
 * (run_diff: default the run before :run), :tp (ccr_hidden: default 8);
 * unbound parameters are NULL, which the queries read as "default". */
#ifndef CCSWEEP_REPORT_SQL_H
#define CCSWEEP_REPORT_SQL_H

#include <stddef.h>

typedef struct report_query {
    const char *name;         /* file name without ".sql", e.g. "comm_share" */
    const char *title;        /* the question, one line */
    const char *const *lines; /* the text line by line (each ends in '\n'), NULL-terminated */
} report_query;

/* The queries in report order; get returns NULL for i out of range. Static. */
size_t report_query_count(void);
const report_query *report_query_get(size_t i);
/* The query of that name, or NULL. */
const report_query *report_query_find(const char *name);
/* The whole text as one new string the caller frees; NULL when out of memory. */
char *report_query_text(const report_query *q);

#endif
