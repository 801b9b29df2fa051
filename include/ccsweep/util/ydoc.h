/* ydoc.h - a loaded YAML document (libyaml) with positions on every node, so
 * that catalog and spec parsers can name file, line, column and field in
 * their errors. Nodes are borrowed pointers valid until ydoc_free. */
#ifndef CCSWEEP_YDOC_H
#define CCSWEEP_YDOC_H

#include "ccsweep/util/common.h"

typedef struct ydoc ydoc;
typedef struct ynode ynode; /* opaque: a node inside a ydoc */

enum { YN_NONE = 0, YN_SCALAR, YN_SEQ, YN_MAP };

/* Mappings and sequences nest at most this deep (the root counts as 1). */
#define YDOC_MAX_DEPTH 64

/* Load the first document of a file / of a string (name is used in messages).
 * Returns NULL with err "file:line:col: message" on a syntax error, nesting
 * deeper than YDOC_MAX_DEPTH or an empty document, or "file: message" for a
 * file that is not regular or exceeds CCS_MAX_YAML_BYTES (util/file.h).
 * Free with ydoc_free (NULL is a no-op). */
ydoc *ydoc_load_file(const char *path, ccs_err *err);
ydoc *ydoc_load_string(const char *text, size_t len, const char *name, ccs_err *err);
void ydoc_free(ydoc *d);

const char *ydoc_name(const ydoc *d);
ynode *ydoc_root(const ydoc *d);

int ynode_kind(const ynode *n);
int ynode_line(const ynode *n); /* 1-based */
int ynode_col(const ynode *n);  /* 1-based */
/* Scalar text (NUL-terminated), or NULL when n is not a scalar. */
const char *ynode_scalar(const ynode *n);
/* 1 when the scalar was written in quotes (so "1" is a string, not a number). */
int ynode_quoted(const ynode *n);
/* Items of a sequence or pairs of a mapping; 0 for scalars. */
size_t ynode_len(const ynode *n);
ynode *ynode_item(const ydoc *d, const ynode *seq, size_t i);
ynode *ynode_key(const ydoc *d, const ynode *map, size_t i);
ynode *ynode_value(const ydoc *d, const ynode *map, size_t i);
/* Value for a scalar key in a mapping, or NULL. */
ynode *ynode_get(const ydoc *d, const ynode *map, const char *key);

/* Typed reads. On a type mismatch they return CCS_EINPUT and set err to
 * "file:line:col: field 'field': expected <type>, got '<text>'". */
int ynode_int(const ydoc *d, const ynode *n, const char *field, int64_t *out, ccs_err *err);
int ynode_double(const ydoc *d, const ynode *n, const char *field, double *out, ccs_err *err);
int ynode_bool(const ydoc *d, const ynode *n, const char *field, int *out, ccs_err *err);
int ynode_string(const ydoc *d, const ynode *n, const char *field, const char **out, ccs_err *err);

/* Set err to "file:line:col: " + formatted message, positioned at n. */
void ydoc_error(const ydoc *d, const ynode *n, ccs_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Check that every key of map is in the NULL-terminated list `allowed`;
 * otherwise CCS_EINPUT with "unknown key 'x' in <what> (expected one of ...)". */
int ydoc_check_keys(const ydoc *d, const ynode *map, const char *what, const char *const *allowed,
                    ccs_err *err);

#endif
