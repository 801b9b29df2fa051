/* store_query.h - read-only SQL access to a ccsweep results database, for
 * reports and tools. Part of the store subsystem: with store.c the only code
 * that includes sqlite3.h. A database opened here is read-only and refused
 * unless it carries the ccsweep application id and the schema version this
 * build writes (CCS_STORE_SCHEMA, store.h); a file of an older version that
 * store_open migrates is migrated once (store_upgrade) before it is read, or,
 * when this process cannot write it (permissions, a read-only filesystem), a
 * migrated copy of it in $TMPDIR is read instead: the file is never written. */
#ifndef CCSWEEP_STORE_QUERY_H
#define CCSWEEP_STORE_QUERY_H

#include "ccsweep/util/common.h"

typedef struct storeq_db storeq_db;
/* The current result row; valid only during the row callback. */
typedef struct storeq_row storeq_row;

/* Value types of parameters and columns. */
enum { STOREQ_NULL = 0, STOREQ_INT, STOREQ_REAL, STOREQ_TEXT };

/* A bound parameter: by name (":run", as written in the SQL) or, when name is
 * NULL, by position (1-based position = index in the array + 1). A named
 * parameter the SQL does not use is ignored; parameters left unbound are NULL. */
typedef struct storeq_param {
    const char *name;
    int type;      /* STOREQ_* */
    int64_t i;     /* STOREQ_INT */
    double d;      /* STOREQ_REAL */
    const char *s; /* STOREQ_TEXT, borrowed for the call */
} storeq_param;

/* Row callback: return 0 to continue, anything else to stop the query (that
 * value is then returned by storeq_exec). */
typedef int (*storeq_row_fn)(void *ctx, const storeq_row *row);

/* Open the database at path read-only. Returns NULL with *rc = CCS_EINPUT and
 * err naming the path when the file is missing, is not an SQLite database, is
 * not a ccsweep database, or has another schema version; CCS_EIO or
 * CCS_ENOMEM on other failures. */
storeq_db *storeq_open(const char *path, int *rc, ccs_err *err);
void storeq_close(storeq_db *db);
/* The path as given to storeq_open. */
const char *storeq_path(const storeq_db *db);

/* Run every statement of sql in turn with params (n_params entries, may be
 * NULL when 0) bound to each, calling fn (may be NULL) for each result row.
 * Returns CCS_OK, the callback's non-zero value when it stopped the query, or
 * CCS_EIO with err "PATH: MESSAGE" (sqlite3_errmsg) when a statement fails. */
int storeq_exec(storeq_db *db, const char *sql, const storeq_param *params, size_t n_params,
                storeq_row_fn fn, void *ctx, ccs_err *err);

/* Column access for the current row; i in [0, storeq_ncols). Conversions follow
 * SQLite's: text to numbers where it parses. */
int storeq_ncols(const storeq_row *row);
const char *storeq_colname(const storeq_row *row, int i);
int storeq_type(const storeq_row *row, int i);      /* STOREQ_* */
double storeq_double(const storeq_row *row, int i); /* NAN when NULL */
int64_t storeq_int(const storeq_row *row, int i);   /* 0 when NULL */
/* NULL when the value is NULL; the text is valid until the callback returns. */
const char *storeq_text(const storeq_row *row, int i);

#endif
