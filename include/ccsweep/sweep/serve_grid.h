/* serve_grid.h - a serving sweep (`workload: serve`, sweeps/README.md): its
 * spec parsed and checked up front, and the lazy grid of its scenarios,
 * models x hardware x generations x devices x isl x osl x weight format x KV
 * format (a group: one serving job) x tp x pp x ep x attention DP x
 * concurrency (the plans of the job), decoded from an index by mixed radix,
 * the last axis fastest. So a group's scenarios are one contiguous index
 * range of serve_grid_plan_n. Pure but for reading the spec file; allocates
 * only in serve_grid_load. */
#ifndef CCSWEEP_SERVE_GRID_H
#define CCSWEEP_SERVE_GRID_H

#include "ccsweep/model/catalog.h"
#include "ccsweep/sweep/serve_search.h"

/* The axes, outermost first. */
typedef enum serve_axis {
    SERVE_AX_MODEL = 0,
    SERVE_AX_HW,
    SERVE_AX_GEN,
    SERVE_AX_DEVICES,
    SERVE_AX_ISL,
    SERVE_AX_OSL,
    SERVE_AX_WDTYPE,
    SERVE_AX_KVDTYPE,
    SERVE_AX_TP, /* the first plan axis */
    SERVE_AX_PP,
    SERVE_AX_EP,
    SERVE_AX_ATTN_DP,
    SERVE_AX_CONCURRENCY, /* 0: the most the KV cache holds (`max`) */
    SERVE_AX_N
} serve_axis;

/* keep: {best: K, ttft_max_ms: X, tpot_max_ms: Y}: of each group (one job)
 * only the K best plans (serve_best_cmp) that fit and meet the limits. */
typedef struct serve_keep {
    int best; /* K; 0: every scenario is stored */
    serve_limits lim;
} serve_keep;

typedef struct serve_grid serve_grid;

/* 1 when the YAML text's top-level `workload` is `serve`, 0 when it has none
 * or another (then it is a training spec), with no error checking beyond. */
int serve_spec_is_serve(const char *text, size_t len);

/* Parse and check the serving spec text (path names it in messages), names
 * resolved in cat (borrowed; entries copied). NULL with err "file:line:col:
 * field 'x': ..." on any error. */
serve_grid *serve_grid_parse(const char *text, size_t len, const char *path, const ccs_catalog *cat,
                             ccs_err *err);
void serve_grid_free(serve_grid *g);

const char *serve_grid_name(const serve_grid *g);
const char *serve_grid_evolution(const serve_grid *g); /* NULL when none */
int64_t serve_grid_count(const serve_grid *g);
int64_t serve_grid_plan_n(const serve_grid *g); /* scenarios per group */
const serve_keep *serve_grid_keep(const serve_grid *g);
size_t serve_grid_axis_len(const serve_grid *g, int axis);
/* Value i of a value axis (SERVE_AX_DEVICES and later; 0 <= i < its length):
 * devices 0 when derived from the plan, concurrency 0 for `max`. */
int32_t serve_grid_axis_value(const serve_grid *g, int axis, size_t i);
const ccs_model *serve_grid_model(const serve_grid *g, size_t i);
/* Hardware i at generation index gen_i, evolved. */
const ccs_hw *serve_grid_hw(const serve_grid *g, size_t i, size_t gen_i);

/* Decode and project idx (0 <= idx < count) into out: status invalid with
 * the reason when serve_plan_check rejects the plan. Keeps a cost context
 * between calls (one thread per grid); allocates nothing. */
void serve_grid_eval(serve_grid *g, int64_t idx, serve_record *out);

#endif
