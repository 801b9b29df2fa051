/* ydoc.c - libyaml document loading and typed, positioned node access. */
#include "ccsweep/util/ydoc.h"
#include "ccsweep/util/file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct ydoc {
    yaml_document_t doc;
    char name[256];
};

static yaml_node_t *N(const ynode *n)
{
    return (yaml_node_t *)n;
}

typedef struct keyref {
    const char *text;
    int line, col;
} keyref;

static int cmp_keyref(const void *a, const void *b)
{
    const keyref *x = a, *y = b;
    int c = strcmp(x->text, y->text);
    return c ? c : x->line != y->line ? x->line - y->line : x->col - y->col;
}

/* YAML leaves duplicate keys to the application and libyaml keeps both, so
 * a lookup would silently take the first: refuse them in every mapping,
 * naming both lines. The node array is walked flat (no recursion, each node
 * once, also when aliases share it). */
static int check_duplicates(ydoc *d, ccs_err *err)
{
    yaml_document_t *doc = &d->doc;
    keyref *keys = NULL;
    size_t cap = 0;
    int rc = CCS_OK;
    for (yaml_node_t *n = doc->nodes.start; rc == CCS_OK && n < doc->nodes.top; n++) {
        if (n->type != YAML_MAPPING_NODE)
            continue;
        size_t k = 0, len = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
        if (len < 2)
            continue;
        if (len > cap) {
            keyref *nk = realloc(keys, len * sizeof *nk);
            if (!nk) {
                ccs_err_set(err, "%s: out of memory", d->name);
                rc = CCS_ENOMEM;
                break;
            }
            keys = nk;
            cap = len;
        }
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
             p++) {
            yaml_node_t *kn = yaml_document_get_node(doc, p->key);
            if (kn && kn->type == YAML_SCALAR_NODE)
                keys[k++] = (keyref){(const char *)kn->data.scalar.value,
                                     (int)kn->start_mark.line + 1, (int)kn->start_mark.column + 1};
        }
        /* sorted by text, then position: equal keys form runs whose first
         * element is the first occurrence and whose second is the earliest
         * repetition; one pass, O(k log k) in all */
        qsort(keys, k, sizeof *keys, cmp_keyref);
        const keyref *dup = NULL, *first = NULL;
        for (size_t i = 1, run = 0; i < k; i++) {
            if (strcmp(keys[i].text, keys[run].text)) {
                run = i;
                continue;
            }
            if (i == run + 1 && (!dup || keys[i].line < dup->line)) {
                dup = &keys[i];
                first = &keys[run];
            }
        }
        if (dup) {
            ccs_err_set(err, "%s:%d:%d: duplicate key '%.64s' (first given at line %d)", d->name,
                        dup->line, dup->col, dup->text, first->line);
            rc = CCS_EINPUT;
        }
    }
    free(keys);
    return rc;
}

/* Refuse nesting beyond YDOC_MAX_DEPTH in the first document of text,
 * counted on libyaml's events before any document is built, so that the
 * cost stops growing at the limit (libyaml's scanner and loader cost grows
 * with the depth at each level). A syntax error ends the count: the load
 * that follows reports it. */
static int check_depth(const char *text, size_t len, const char *name, ccs_err *err)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        ccs_err_set(err, "%s: out of memory", name);
        return CCS_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int depth = 0, rc = CCS_OK, done = 0;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev))
            break;
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > YDOC_MAX_DEPTH) {
                ccs_err_set(err, "%s:%zu:%zu: nested deeper than %d levels", name,
                            ev.start_mark.line + 1, ev.start_mark.column + 1, YDOC_MAX_DEPTH);
                rc = CCS_EINPUT;
                done = 1;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

static ydoc *load(yaml_parser_t *parser, const char *name, ccs_err *err)
{
    ydoc *d = calloc(1, sizeof *d);
    if (!d) {
        ccs_err_set(err, "%s: out of memory", name);
        return NULL;
    }
    ccs_strlcpy(d->name, name, sizeof d->name);
    if (!yaml_parser_load(parser, &d->doc)) {
        ccs_err_set(err, "%s:%zu:%zu: YAML syntax error: %s%s%s", name,
                    parser->problem_mark.line + 1, parser->problem_mark.column + 1,
                    parser->problem ? parser->problem : "unknown problem",
                    parser->context ? " " : "", parser->context ? parser->context : "");
        free(d);
        return NULL;
    }
    if (!yaml_document_get_root_node(&d->doc)) {
        ccs_err_set(err, "%s: the document is empty", name);
        yaml_document_delete(&d->doc);
        free(d);
        return NULL;
    }
    if (check_duplicates(d, err)) {
        yaml_document_delete(&d->doc);
        free(d);
        return NULL;
    }
    return d;
}

ydoc *ydoc_load_file(const char *path, ccs_err *err)
{
    char *text;
    size_t len;
    if (ccs_read_file(path, CCS_MAX_YAML_BYTES, "spec and catalog files", &text, &len, err))
        return NULL;
    ydoc *d = ydoc_load_string(text, len, path, err);
    free(text);
    return d;
}

ydoc *ydoc_load_string(const char *text, size_t len, const char *name, ccs_err *err)
{
    if (len > CCS_MAX_YAML_BYTES) {
        ccs_err_set(err, "%s: larger than %zu MiB (the limit for spec and catalog files)", name,
                    CCS_MAX_YAML_BYTES >> 20);
        return NULL;
    }
    if (check_depth(text, len, name, err))
        return NULL;
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    ydoc *d = load(&parser, name, err);
    yaml_parser_delete(&parser);
    return d;
}

void ydoc_free(ydoc *d)
{
    if (!d)
        return;
    yaml_document_delete(&d->doc);
    free(d);
}

const char *ydoc_name(const ydoc *d)
{
    return d->name;
}

ynode *ydoc_root(const ydoc *d)
{
    return (ynode *)yaml_document_get_root_node((yaml_document_t *)&d->doc);
}

int ynode_kind(const ynode *n)
{
    if (!n)
        return YN_NONE;
    switch (N(n)->type) {
    case YAML_SCALAR_NODE:
        return YN_SCALAR;
    case YAML_SEQUENCE_NODE:
        return YN_SEQ;
    case YAML_MAPPING_NODE:
        return YN_MAP;
    default:
        return YN_NONE;
    }
}

int ynode_line(const ynode *n)
{
    return n ? (int)N(n)->start_mark.line + 1 : 0;
}

int ynode_col(const ynode *n)
{
    return n ? (int)N(n)->start_mark.column + 1 : 0;
}

const char *ynode_scalar(const ynode *n)
{
    return ynode_kind(n) == YN_SCALAR ? (const char *)N(n)->data.scalar.value : NULL;
}

int ynode_quoted(const ynode *n)
{
    if (ynode_kind(n) != YN_SCALAR)
        return 0;
    yaml_scalar_style_t st = N(n)->data.scalar.style;
    return st == YAML_SINGLE_QUOTED_SCALAR_STYLE || st == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
}

size_t ynode_len(const ynode *n)
{
    switch (ynode_kind(n)) {
    case YN_SEQ:
        return (size_t)(N(n)->data.sequence.items.top - N(n)->data.sequence.items.start);
    case YN_MAP:
        return (size_t)(N(n)->data.mapping.pairs.top - N(n)->data.mapping.pairs.start);
    default:
        return 0;
    }
}

static ynode *node_at(const ydoc *d, int id)
{
    return (ynode *)yaml_document_get_node((yaml_document_t *)&d->doc, id);
}

ynode *ynode_item(const ydoc *d, const ynode *seq, size_t i)
{
    if (ynode_kind(seq) != YN_SEQ || i >= ynode_len(seq))
        return NULL;
    return node_at(d, N(seq)->data.sequence.items.start[i]);
}

ynode *ynode_key(const ydoc *d, const ynode *map, size_t i)
{
    if (ynode_kind(map) != YN_MAP || i >= ynode_len(map))
        return NULL;
    return node_at(d, N(map)->data.mapping.pairs.start[i].key);
}

ynode *ynode_value(const ydoc *d, const ynode *map, size_t i)
{
    if (ynode_kind(map) != YN_MAP || i >= ynode_len(map))
        return NULL;
    return node_at(d, N(map)->data.mapping.pairs.start[i].value);
}

ynode *ynode_get(const ydoc *d, const ynode *map, const char *key)
{
    size_t n = ynode_len(map);
    for (size_t i = 0; i < n && ynode_kind(map) == YN_MAP; i++) {
        const char *k = ynode_scalar(ynode_key(d, map, i));
        if (k && strcmp(k, key) == 0)
            return ynode_value(d, map, i);
    }
    return NULL;
}

void ydoc_error(const ydoc *d, const ynode *n, ccs_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        ccs_err_set(err, "%s:%d:%d: %s", d->name, ynode_line(n), ynode_col(n), msg);
    else
        ccs_err_set(err, "%s: %s", d->name, msg);
}

static int mismatch(const ydoc *d, const ynode *n, const char *field, const char *type,
                    ccs_err *err)
{
    const char *s = ynode_scalar(n);
    const char *what = s ? s : (ynode_kind(n) == YN_SEQ ? "a list" : "a mapping");
    ydoc_error(d, n, err, "field '%s': expected %s, got %s%s%s", field, type, s ? "'" : "", what,
               s ? "'" : "");
    return CCS_EINPUT;
}

int ynode_int(const ydoc *d, const ynode *n, const char *field, int64_t *out, ccs_err *err)
{
    const char *s = ynode_scalar(n);
    if (!s || ynode_quoted(n) || !*s)
        return mismatch(d, n, field, "an integer", err);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end == '\0' && errno == 0) {
        *out = v;
        return CCS_OK;
    }
    /* accept integral floats written as 1e3 or 2048.0 */
    double x = strtod(s, &end);
    if (*end == '\0' && isfinite(x) && x == floor(x) && fabs(x) < 9.2e18) {
        *out = (int64_t)x;
        return CCS_OK;
    }
    return mismatch(d, n, field, "an integer", err);
}

int ynode_double(const ydoc *d, const ynode *n, const char *field, double *out, ccs_err *err)
{
    const char *s = ynode_scalar(n);
    if (!s || ynode_quoted(n) || !*s)
        return mismatch(d, n, field, "a number", err);
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (*end != '\0' || errno != 0 || !isfinite(x))
        return mismatch(d, n, field, "a number", err);
    *out = x;
    return CCS_OK;
}

int ynode_bool(const ydoc *d, const ynode *n, const char *field, int *out, ccs_err *err)
{
    const char *s = ynode_scalar(n);
    if (s && !ynode_quoted(n)) {
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "yes") || !strcmp(s, "on")) {
            *out = 1;
            return CCS_OK;
        }
        if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "no") || !strcmp(s, "off")) {
            *out = 0;
            return CCS_OK;
        }
    }
    return mismatch(d, n, field, "true or false", err);
}

int ynode_string(const ydoc *d, const ynode *n, const char *field, const char **out, ccs_err *err)
{
    const char *s = ynode_scalar(n);
    if (!s)
        return mismatch(d, n, field, "a string", err);
    *out = s;
    return CCS_OK;
}

int ydoc_check_keys(const ydoc *d, const ynode *map, const char *what, const char *const *allowed,
                    ccs_err *err)
{
    size_t n = ynode_len(map);
    for (size_t i = 0; i < n; i++) {
        ynode *k = ynode_key(d, map, i);
        const char *ks = ynode_scalar(k);
        int ok = 0;
        for (const char *const *a = allowed; ks && *a; a++)
            ok |= strcmp(ks, *a) == 0;
        if (!ok) {
            char list[300] = "";
            size_t used = 0;
            for (const char *const *a = allowed; *a && used + 2 < sizeof list; a++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                                         a == allowed ? "" : ", ", *a);
            ydoc_error(d, k, err, "unknown key '%s' in %s (expected one of: %s)", ks ? ks : "?",
                       what, list);
            return CCS_EINPUT;
        }
    }
    return CCS_OK;
}
