/* spec.h - a sweep specification (YAML; format in
 * sweeps/README.md): the models, hardware, generations and plan axes whose
 * cross product (with zips) is the scenario grid, plus the `where` filter, the
 * scenario name template and calibration profiles. Parsing validates
 * everything up front, so a sweep never starts on a bad spec. A spec is
 * immutable after spec_load; pointers it returns are borrowed until spec_free. */
#ifndef CCSWEEP_SPEC_H
#define CCSWEEP_SPEC_H

#include "ccsweep/model/catalog.h"
#include "ccsweep/sweep/expr.h"

struct ccs_opmodel;

/* The grid's axes, in the order of mixed-radix decoding (the last varies
 * fastest). Model and hardware values are indices into the spec's lists. */
typedef enum spec_axis {
    SPEC_AX_MODEL = 0,
    SPEC_AX_HW,
    SPEC_AX_GEN,
    SPEC_AX_DEVICES,
    SPEC_AX_TP,
    SPEC_AX_CP,
    SPEC_AX_CP_COMM,
    SPEC_AX_EP,
    SPEC_AX_CAPACITY_FACTOR,
    SPEC_AX_PP,
    SPEC_AX_PP_FIRST_LAYERS,
    SPEC_AX_PP_LAST_LAYERS,
    SPEC_AX_DP,
    SPEC_AX_VPP,
    SPEC_AX_MBS,
    SPEC_AX_GBS,
    SPEC_AX_SEQ,
    SPEC_AX_DTYPE,
    SPEC_AX_SP,
    SPEC_AX_ZERO,
    SPEC_AX_RECOMPUTE,
    SPEC_AX_FLASH_ATTN,
    SPEC_AX_TP_OVERLAP,
    SPEC_AX_DP_OVERLAP,
    SPEC_AX_INNET_REDUCE,
    SPEC_AX_COMM_COMPRESS,
    SPEC_AX_NET_BW_FACTOR,
    SPEC_AX_STACK, /* software stacks: 1-based indices into the spec's list, 0 = the default */
    SPEC_AX_N
} spec_axis;

/* Axis value meaning "the model's published figure" (gbs: model, seq: model). */
#define SPEC_FROM_MODEL (-1.0)
/* Most values one axis may hold. */
#define SPEC_AXIS_MAX (1 << 20)

/* Name template pieces: a literal, or a field (expr_field id, or one of these). */
enum { SPEC_TPL_LITERAL = -1, SPEC_TPL_MODEL = EXPR_F_N, SPEC_TPL_HW, SPEC_TPL_EVOLUTION };
typedef struct spec_tpl_part {
    int field;       /* SPEC_TPL_LITERAL, an expr_field, or SPEC_TPL_* */
    const char *lit; /* literal text (not NUL-terminated at len) */
    size_t len;
} spec_tpl_part;

typedef struct ccs_spec ccs_spec;

/* Load and validate the spec file at path, resolving catalog names in cat
 * (borrowed; entries are copied). Calibration paths are relative to the spec's
 * directory. Returns NULL with err "file:line:col: field 'x': expected ..." on
 * any error. */
ccs_spec *spec_load(const char *path, const ccs_catalog *cat, ccs_err *err);
/* Same from text already in memory; path names it in messages and anchors
 * relative calibration paths. */
ccs_spec *spec_parse(const char *text, size_t len, const char *path, const ccs_catalog *cat,
                     ccs_err *err);
void spec_free(ccs_spec *s);

/* Read a whole spec file (a regular file of at most 16 MiB,
 * CCS_MAX_YAML_BYTES) into a new NUL-terminated buffer the caller frees.
 * CCS_EINPUT with err naming the file when it cannot be read, is not a
 * regular file (a FIFO is refused, not waited on) or is larger. */
int spec_read_file(const char *path, char **text, size_t *len, ccs_err *err);

const char *spec_name(const ccs_spec *s);
const char *spec_path(const ccs_spec *s);
const char *spec_text(const ccs_spec *s, size_t *len); /* the file's bytes, NUL-terminated */
const char *spec_sha256(const ccs_spec *s);            /* 64 hex digits of the text */

size_t spec_n_models(const ccs_spec *s);
const ccs_model *spec_model(const ccs_spec *s, size_t i);
size_t spec_n_hw(const ccs_spec *s);
const ccs_hw *spec_hw(const ccs_spec *s, size_t i);
/* The software stacks of plan.stack, in the spec's order; a plan's stack
 * field k >= 1 names spec_stack(s, k - 1), 0 the default (NULL here). */
size_t spec_n_stacks(const ccs_spec *s);
const ccs_stack *spec_stack(const ccs_spec *s, size_t i);
/* Measured operator model of hardware i, or NULL (synthetic curves). */
const struct ccs_opmodel *spec_opmodel(const ccs_spec *s, size_t i);
/* Calibration profile path of hardware i as resolved, or NULL. */
const char *spec_calibration(const ccs_spec *s, size_t i);
/* The evolution rule; NULL only when every generation is 0 and none was named. */
const ccs_evolution *spec_evolution(const ccs_spec *s);

/* Values of an axis (at least one; defaults when the spec does not set it). */
size_t spec_axis_len(const ccs_spec *s, int axis);
const double *spec_axis_values(const ccs_spec *s, int axis);
int spec_axis_given(const ccs_spec *s, int axis); /* 1 when the spec sets it */
int spec_axis_zip(const ccs_spec *s, int axis);   /* zip group (0..) or -1 */
const char *spec_axis_name(int axis);             /* "tp", "models", ... */

/* The compiled `where` filter and its text, or NULL. */
const ccs_expr *spec_where(const ccs_spec *s);
const char *spec_where_text(const ccs_spec *s);

/* keep: {best: K, by: FIELD, per: [NAMES]}: of the rows that pass where,
 * store only the K best per group (sweeps/README.md). by names a field
 * (expr.h); lowest first, or highest first when written -FIELD. Ties go to
 * the lower grid index. Invalid plans (no timings) are never kept. */
#define SPEC_KEEP_PER_MAX 8
#define SPEC_KEEP_BEST_MAX 1000
#define SPEC_KEEP_AGG_MAX 8
enum { SPEC_PER_MODEL = -2, SPEC_PER_HW = -3 }; /* group by entry, besides expr fields */
/* keep.by "best" (the default): best.h's order, which ranks only plans that fit
 * without what-ifs; its default group is best.h's (model, hardware,
 * generation, devices, gbs, seq). */
#define SPEC_KEEP_BY_BEST (-4)
typedef struct spec_keep {
    int best;                   /* K, 1 .. SPEC_KEEP_BEST_MAX */
    int by;                     /* expr field, or SPEC_KEEP_BY_BEST */
    int desc;                   /* 1: highest first */
    int n_per;                  /* group fields, 0 .. SPEC_KEEP_PER_MAX */
    int per[SPEC_KEEP_PER_MAX]; /* expr field ids, or SPEC_PER_MODEL / SPEC_PER_HW */
    /* keep.aggregate: per group, the count of the scenarios the rule ranks
     * and the count, min, max and sum of these fields (expr field ids) over
     * them; best may then be 0 (the aggregates only). */
    int n_agg;
    int agg[SPEC_KEEP_AGG_MAX];
} spec_keep;
/* The keep rule, or NULL when every row that passes where is stored. */
const spec_keep *spec_keep_rule(const ccs_spec *s);

/* The scenario name template (NULL when none) and its pieces. */
const char *spec_name_template(const ccs_spec *s);
const spec_tpl_part *spec_name_parts(const ccs_spec *s, size_t *n);

#endif
