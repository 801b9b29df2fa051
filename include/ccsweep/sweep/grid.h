/* grid.h - the lazy scenario grid of a spec: index -> scenario by mixed-radix
 * decoding over the spec's axes (zipped axes share one digit), never
 * materialised; evaluation of one index (decode, plan derivation, projection,
 * where-filter) without allocation; a stable 64-bit key per scenario.
 *
 * Index order: axes in spec_axis order (models, hardware, generations, then
 * the plan axes), the last axis varying fastest; a zip group takes the place
 * of its first axis in that order.
 *
 * Key (stable across runs, ranks and machines; stored as a signed 64-bit
 * integer): h starts at 0xcbf29ce484222325 (the FNV-1a offset basis) and
 * absorbs 64-bit little-endian words w as h = mix(h ^ w), where mix is the
 * splitmix64 finalizer (Steele, Lea, Flood 2014: z ^= z>>30; z *= 0xbf58476d1ce4e5b9;
 * z ^= z>>27; z *= 0x94d049bb133111eb; z ^= z>>31). The words are, in order:
 * the model hash, the hardware hash, then the derived plan: devices, tp, pp,
 * dp, vpp, mbs, gbs, seq, dtype, sp, zero, recompute, flash_attn, tp_overlap,
 * dp_overlap, innet_reduce as integers and comm_compress, net_bw_factor as
 * IEEE-754 bits; then, only when one of them differs from its default (cp 1,
 * cp_comm ring, ep 1, capacity_factor 0, pp_first/pp_last 0), cp, cp_comm,
 * ep, pp_first, pp_last as integers and capacity_factor as bits; then, only
 * for a software stack other than the default (plan.stack), its name (six
 * words), attention kernel and gradient type as integers, 1 when it trains
 * without dropout, then 2 + fused_loss + 2 x logit_metrics when either is
 * set, then 64 when its bias gradients are separate kernels (nothing for each
 * otherwise), and its eltwise_factor, op, layer and
 * iteration overheads, comm_units, tp_overlap_share and zero3_units as bits.
 * The model
 * hash absorbs the name (NUL-padded to 48 bytes, six words), layers, hidden,
 * heads, kv_heads, ffn, vocab, max_pos, gated, bias, tied (and, for a mixture
 * of experts, experts, top_k, shared_experts, moe_ffn); the hardware hash the
 * name (six words), the generation, every numeric catalog figure in ccs_hw
 * field order (doubles as IEEE bits, SI units) and, for generations above 0,
 * the evolution name and its six factors. Equal inputs give equal keys
 * whatever the spec's axis order or grid position. */
#ifndef CCSWEEP_GRID_H
#define CCSWEEP_GRID_H

#include "ccsweep/sweep/spec.h"
#include "ccsweep/cost/timeline.h"

/* One decoded scenario. Flat and pointer-free (crosses MPI as bytes). */
typedef struct ccs_scenario {
    int64_t idx;    /* position in the grid, 0 .. count-1 */
    uint64_t key;   /* stable hash of the canonical parameters (above) */
    int32_t model;  /* index into the spec's models */
    int32_t hw;     /* index into the spec's hardware */
    int32_t gen_i;  /* index into the generations axis */
    int32_t gen;    /* hardware generation */
    int32_t derive; /* CCS_R_OK, or why devices/tp/pp/dp are inconsistent */
    int32_t pad_;
    ccs_plan plan; /* dp, devices, gbs and seq resolved */
} ccs_scenario;

/* What a worker sends back for a scenario that passed the filter. */
typedef struct ccs_record {
    ccs_scenario s;
    ccs_result r;
} ccs_record;

typedef struct ccs_grid ccs_grid;

/* Build the grid of spec (borrowed; must outlive the grid). Fails with
 * CCS_EINPUT in err when the grid holds more than 2^63-1 scenarios. */
ccs_grid *grid_new(const ccs_spec *spec, ccs_err *err);
void grid_free(ccs_grid *g);

int64_t grid_count(const ccs_grid *g);
const ccs_spec *grid_spec(const ccs_grid *g);
/* Number of decoding digits (axes with more than one value count once per zip). */
int grid_dims(const ccs_grid *g);

/* The index splits as idx = cell * plan_n + plan_i: the cell (the leading
 * digits) selects the model, hardware and generation, plan_i the plan axes.
 * Returns plan_n. */
int64_t grid_plan_n(const ccs_grid *g);
/* The derived plan of idx depends only on plan_i and the cell's plan table
 * z = grid_cell_z(g, cell), 0 <= z < grid_plan_tables(g): the model (its
 * default seq and gbs) and any plan axis zipped with a cell axis. */
int64_t grid_plan_tables(const ccs_grid *g);
int64_t grid_cell_z(const ccs_grid *g, int64_t cell);

/* Decode idx (0 <= idx < count) into *out. No allocation. */
void grid_decode(const ccs_grid *g, int64_t idx, ccs_scenario *out);

/* Decode and project idx into *out (regions, when not NULL, receives CCS_RG_N
 * entries) and apply the where-filter. Returns 1 when the scenario is kept, 0
 * when the filter drops it (then *out is only partly filled), EXPR_UNDEFINED
 * (negative) when the filter divides by zero for it. No allocation. */
int grid_eval(const ccs_grid *g, int64_t idx, ccs_record *out, ccs_region_time *regions);
/* (grid_eval fills a cost cache of g: one thread at a time per grid.) */

/* Hardware i at generation index gen_i, as evolved for the sweep. */
const ccs_hw *grid_hw(const ccs_grid *g, int hw, int gen_i);

/* Field values for expressions (expr.h): plan, model and hardware fields of s,
 * and result fields of r when r is not NULL (else 0). */
void grid_fields(const ccs_grid *g, const ccs_scenario *s, const ccs_result *r, double *vals);

/* Render the spec's scenario_name template for rec into buf (size n, always
 * NUL-terminated). Returns the length, or 0 when the spec has no template. */
size_t grid_format_name(const ccs_grid *g, const ccs_record *rec, char *buf, size_t n);

#endif
