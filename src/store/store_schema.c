/* store_schema.c - the tables, views and lookup rows of a new database
 * (schema version CCS_STORE_SCHEMA), built from the steps of the versions
 * before it, so that a new file and a migrated one have the same tables.
 * results/schema.sql holds the result, as a new file has it. */
#include "store_int.h"
#include "ccsweep/sweep/best.h"
#include "ccsweep/util/buf.h"

#include <stdio.h>
#include <string.h>

/* One statement per string (C11 guarantees string literals of 4095 bytes).
 * These are the tables of schema version 5; sti_v6_columns, sti_v7_tables and
 * sti_v8_regions make them those of the later versions, in a new file as in a
 * migrated one, so both have the same tables. */
static const char *const schema_sql[] = {
    "CREATE TABLE runs (\n"
    "  run_id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL,             -- the spec's name\n"
    "  spec_path TEXT NOT NULL,\n"
    "  spec_text TEXT NOT NULL,        -- the spec file as read\n"
    "  spec_sha256 TEXT NOT NULL,      -- of spec_text; --resume matches it\n"
    "  version TEXT NOT NULL,          -- ccsweep version\n"
    "  git_rev TEXT,                   -- git describe of the build\n"
    "  host TEXT, ranks INTEGER,\n"
    "  slurm_job_id TEXT, slurm_nodelist TEXT, slurm_restart_count INTEGER,\n"
    "  argv TEXT,\n"
    "  evolution TEXT, where_expr TEXT, name_template TEXT, detail INTEGER NOT NULL,\n"
    "  started TEXT NOT NULL, updated TEXT, ended TEXT,  -- UTC, ISO 8601\n"
    "  status TEXT NOT NULL CHECK (status IN ('running','complete','interrupted','failed')),\n"
    "  total INTEGER NOT NULL,         -- scenarios in the grid\n"
    "  n_done INTEGER NOT NULL DEFAULT 0,  -- evaluated and committed\n"
    "  n_rows INTEGER NOT NULL DEFAULT 0, n_ok INTEGER NOT NULL DEFAULT 0,\n"
    "  n_invalid INTEGER NOT NULL DEFAULT 0, n_oom INTEGER NOT NULL DEFAULT 0,\n"
    "  n_filtered INTEGER,  -- committed counts; n_filtered = n_done - n_rows at the end\n"
    "  sessions INTEGER NOT NULL DEFAULT 1,\n"
    "  plan_n INTEGER NOT NULL DEFAULT 1  -- idx = cell * plan_n + plan_i (table cells)\n"
    ");\n",
    "CREATE TABLE sessions (\n"
    "  run_id INTEGER NOT NULL REFERENCES runs, session INTEGER NOT NULL,\n"
    "  host TEXT, ranks INTEGER, slurm_job_id TEXT, slurm_nodelist TEXT,\n"
    "  slurm_restart_count INTEGER, argv TEXT, started TEXT NOT NULL, ended TEXT, status TEXT,\n"
    "  PRIMARY KEY (run_id, session)\n"
    ");\n",
    "CREATE TABLE models (\n"
    "  model_id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs,\n"
    "  name TEXT NOT NULL, layers INTEGER, hidden INTEGER, heads INTEGER, kv_heads INTEGER,\n"
    "  ffn INTEGER, vocab INTEGER, max_pos INTEGER, seq INTEGER, gbs INTEGER,\n"
    "  gated INTEGER, bias INTEGER, tied INTEGER, params REAL,\n"
    "  UNIQUE (run_id, name)\n"
    ");\n",
    "CREATE TABLE hardware (  -- one row per derived generation; SI units\n"
    "  hw_id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs,\n"
    "  name TEXT NOT NULL, generation INTEGER NOT NULL, evolution TEXT,\n"
    "  devices_per_node INTEGER, compute_units INTEGER,\n"
    "  peak_fp32 REAL, peak_tf32 REAL, peak_bf16 REAL, peak_fp16 REAL, peak_fp8 REAL,\n"
    "  mem_cap REAL, mem_bw REAL, intra_bw REAL, inter_bw REAL,\n"
    "  intra_lat REAL, inter_lat REAL, kernel_lat REAL,\n"
    "  gemm_eff REAL, mem_eff REAL, intra_eff REAL, inter_eff REAL, variability REAL,\n"
    "  calibration TEXT,\n"
    "  UNIQUE (run_id, name, generation)\n"
    ");\n",
    /* Compact rows: what the index and the spec cannot give back. rid packs
     * run_id and idx (run_id << RID_BITS | idx), so the table needs no second
     * index and a run's rows are one rowid range; sr packs the status (low 2
     * bits) and the reason. The view result_codes decodes them and joins the plan;
     * results names them. */
    "CREATE TABLE result_rows (\n"
    "  rid INTEGER PRIMARY KEY,        -- run_id << " RID_BITS_SQL " | idx\n"
    "  key INTEGER NOT NULL, sr INTEGER NOT NULL, micro_batches INTEGER,\n"
    "  t_iter REAL, t_iter_lo REAL, t_iter_hi REAL, extrap REAL,\n"
    "  t_compute REAL, t_comm REAL, t_comm_exposed REAL, t_tp_comm REAL,\n"
    "  t_tp_comm_exposed REAL, t_dp_comm REAL, t_dp_comm_exposed REAL, t_pp_comm REAL,\n"
    "  t_bubble REAL, t_optimizer REAL, comm_fraction REAL, hidden_fraction REAL,\n"
    "  mem_weights REAL, mem_grads REAL, mem_optimizer REAL, mem_activations REAL,\n"
    "  mem_total REAL, model_flops REAL, hw_flops REAL, mfu REAL, tokens_per_s REAL,\n"
    "  tp_bytes REAL, dp_bytes REAL, pp_bytes REAL, ccr REAL,\n"
    "  name TEXT\n"
    ");\n",
    /* idx = cell * runs.plan_n + plan_i; a cell is a (model, hardware
     * generation) of the grid, z names the plan table the cell reads (its
     * model, and the values of plan axes zipped with a cell axis). */
    "CREATE TABLE cells (\n"
    "  cid INTEGER PRIMARY KEY,        -- run_id << " RID_BITS_SQL " | cell\n"
    "  model_id INTEGER NOT NULL, hw_id INTEGER NOT NULL, z INTEGER NOT NULL\n"
    ");\n",
    "CREATE TABLE plans (  -- derived plans, written when first stored\n"
    "  pid INTEGER PRIMARY KEY,        -- run_id << " RID_BITS_SQL " | (z * plan_n + plan_i)\n"
    "  devices INTEGER, tp INTEGER, pp INTEGER, dp INTEGER, vpp INTEGER, mbs INTEGER,\n"
    "  gbs INTEGER, seq INTEGER, dtype INTEGER, sp INTEGER, zero INTEGER, recompute INTEGER,\n"
    "  flash_attn INTEGER, tp_overlap INTEGER, dp_overlap INTEGER, innet_reduce INTEGER,\n"
    "  comm_compress REAL, net_bw_factor REAL\n"
    ");\n",
    "CREATE TABLE chunks (  -- index ranges whose rows are all committed\n"
    "  run_id INTEGER NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, lo)\n"
    ") WITHOUT ROWID;\n",
    "CREATE TABLE regions (  -- --detail: one row per non-empty region\n"
    "  run_id INTEGER NOT NULL, idx INTEGER NOT NULL, region INTEGER NOT NULL,\n"
    "  time REAL, count REAL, flops REAL, bytes REAL,\n"
    "  PRIMARY KEY (run_id, idx, region)\n"
    ") WITHOUT ROWID;\n",
    "CREATE TABLE writer (  -- the one process writing runs into this file, while it runs\n"
    "  id INTEGER PRIMARY KEY CHECK (id = 1),\n"
    "  host TEXT NOT NULL, pid INTEGER NOT NULL,\n"
    "  pid_start INTEGER,               -- start time of pid (clock ticks after boot)\n"
    "  started TEXT NOT NULL, run_id INTEGER\n"
    ");\n",
    "CREATE TABLE run_inputs (  -- content hash of every catalog entry and profile a run used\n"
    "  run_id INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, sha256 TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, kind, name)\n"
    ") WITHOUT ROWID;\n",
    "CREATE TABLE statuses (status INTEGER PRIMARY KEY, name TEXT NOT NULL);\n",
    "CREATE TABLE reasons (reason INTEGER PRIMARY KEY, name TEXT NOT NULL, text TEXT);\n",
    "CREATE TABLE dtypes (dtype INTEGER PRIMARY KEY, name TEXT NOT NULL);\n",
    "CREATE TABLE recompute_modes (recompute INTEGER PRIMARY KEY, name TEXT NOT NULL);\n",
    "CREATE TABLE region_names (region INTEGER PRIMARY KEY, name TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL);\n",
};

/* The views, recreated by a migration (they read the tables' new columns).
 * result_codes is the id-level view: the row's ids (model_id, hw_id) and its
 * codes (dtype, recompute, dp_overlap, cp_comm, status, reason as integers)
 * over the three rowid lookups of result_rows, cells and plans; the views
 * below and the report's queries read it, for its speed and its codes.
 * results, the view users query, names every code and joins the model and the
 * hardware; each of its numbers is result_codes' value as it is (params, a
 * REAL column of models, cast to the exact integer it holds). results_view,
 * the view of names up to schema version 11, stays as it was for older
 * queries. */
static const char *const view_sql[] = {
    "CREATE VIEW result_codes AS\n"
    "SELECT r.rid AS rid, r.rid >> " RID_BITS_SQL " AS run_id, r.rid & " RID_MASK_SQL
    " AS idx, r.key AS key,\n"
    "  c.model_id AS model_id, c.hw_id AS hw_id,\n"
    "  p.devices AS devices, p.tp AS tp, p.pp AS pp, p.dp AS dp, p.vpp AS vpp, p.mbs AS mbs,\n"
    "  p.gbs AS gbs, p.seq AS seq, p.dtype AS dtype, p.sp AS sp, p.zero AS zero,\n"
    "  p.recompute AS recompute, p.flash_attn AS flash_attn, p.tp_overlap AS tp_overlap,\n"
    "  p.dp_overlap AS dp_overlap, p.innet_reduce AS innet_reduce,\n"
    "  p.comm_compress AS comm_compress, p.net_bw_factor AS net_bw_factor,\n"
    "  p.cp AS cp, p.cp_comm AS cp_comm, p.ep AS ep, p.capacity_factor AS capacity_factor,\n"
    "  p.pp_first_layers AS pp_first_layers, p.pp_last_layers AS pp_last_layers,\n"
    "  coalesce(p.stack, 'megatron-core') AS stack,\n"
    "  r.sr & 3 AS status, r.sr >> 2 AS reason, r.micro_batches AS micro_batches,\n"
    /* Rows of version 9 on leave the five derived outputs NULL and the band's
     * ends NULL when they equal t_iter (timeline.h); these expressions are
     * timeline_project's, term by term in its order, so they give its values
     * bit for bit, and older rows keep their stored values. */
    "  r.t_iter AS t_iter, coalesce(r.t_iter_lo, r.t_iter) AS t_iter_lo,\n"
    "  coalesce(r.t_iter_hi, r.t_iter) AS t_iter_hi,\n"
    "  r.extrap AS extrap, r.t_compute AS t_compute,\n"
    "  coalesce(r.t_comm,\n"
    "    r.t_tp_comm + r.t_cp_comm + r.t_ep_comm + r.t_dp_comm + r.t_pp_comm) AS t_comm,\n"
    "  coalesce(r.t_comm_exposed, r.t_tp_comm_exposed + r.t_cp_comm_exposed + r.t_ep_comm\n"
    "    + r.t_dp_comm_exposed + r.t_pp_comm) AS t_comm_exposed,\n"
    "  r.t_tp_comm AS t_tp_comm,\n"
    "  r.t_tp_comm_exposed AS t_tp_comm_exposed, r.t_dp_comm AS t_dp_comm,\n"
    "  r.t_dp_comm_exposed AS t_dp_comm_exposed, r.t_pp_comm AS t_pp_comm,\n"
    "  r.t_bubble AS t_bubble, r.t_optimizer AS t_optimizer,\n"
    "  coalesce(r.comm_fraction, CASE WHEN r.t_iter > 0 THEN (r.t_tp_comm_exposed\n"
    "    + r.t_cp_comm_exposed + r.t_ep_comm + r.t_dp_comm_exposed + r.t_pp_comm) / r.t_iter\n"
    "    WHEN r.t_iter IS NOT NULL THEN 0.0 END) AS comm_fraction,\n"
    "  coalesce(r.hidden_fraction, CASE WHEN r.t_dp_comm + r.t_tp_comm + r.t_cp_comm > 0\n"
    "    THEN 1.0 - (r.t_dp_comm_exposed + r.t_tp_comm_exposed + r.t_cp_comm_exposed)\n"
    "      / (r.t_dp_comm + r.t_tp_comm + r.t_cp_comm)\n"
    "    WHEN r.t_iter IS NOT NULL THEN 0.0 END) AS hidden_fraction,\n"
    "  r.mem_weights AS mem_weights, r.mem_grads AS mem_grads,\n"
    "  r.mem_optimizer AS mem_optimizer, r.mem_activations AS mem_activations,\n"
    "  r.mem_total AS mem_total, r.model_flops AS model_flops, r.hw_flops AS hw_flops,\n"
    "  r.mfu AS mfu, coalesce(r.tokens_per_s, CASE WHEN r.t_iter > 0\n"
    "    THEN CAST(p.gbs AS REAL) * p.seq / r.t_iter\n"
    "    WHEN r.t_iter IS NOT NULL THEN 0.0 END) AS tokens_per_s, r.tp_bytes AS tp_bytes,\n"
    "  r.dp_bytes AS dp_bytes, r.pp_bytes AS pp_bytes, r.ccr AS ccr, r.name AS name,\n"
    "  r.hfu AS hfu, r.t_cp_comm AS t_cp_comm, r.t_cp_comm_exposed AS t_cp_comm_exposed,\n"
    "  r.cp_bytes AS cp_bytes, r.t_ep_comm AS t_ep_comm, r.ep_bytes AS ep_bytes\n"
    "FROM result_rows r\n"
    "  JOIN runs u ON u.run_id = r.rid >> " RID_BITS_SQL "\n"
    "  JOIN cells c ON c.cid = (u.run_id << " RID_BITS_SQL ") | ((r.rid & " RID_MASK_SQL
    ") / u.plan_n)\n"
    "  JOIN plans p ON p.pid = (u.run_id << " RID_BITS_SQL ")\n"
    "    | (c.z * u.plan_n + (r.rid & " RID_MASK_SQL ") % u.plan_n);\n",
    "CREATE TRIGGER result_codes_delete INSTEAD OF DELETE ON result_codes BEGIN\n"
    "  DELETE FROM result_rows WHERE rid = OLD.rid;\n"
    "END;\n",
    "CREATE VIEW results AS\n"
    "SELECT r.run_id AS run_id, r.idx AS idx, r.key AS key, r.name AS scenario,\n"
    "  m.name AS model, CAST(m.params AS INTEGER) AS params,\n"
    "  h.name AS hardware, h.generation AS generation, h.evolution AS evolution,\n"
    "  r.stack AS stack, r.devices AS devices, r.tp AS tp, r.pp AS pp, r.dp AS dp,\n"
    "  r.vpp AS vpp, r.mbs AS mbs, r.gbs AS gbs, r.seq AS seq, dt.name AS dtype, r.sp AS sp,\n"
    "  r.zero AS zero, rc.name AS recompute, r.flash_attn AS flash_attn,\n"
    "  r.tp_overlap AS tp_overlap,\n"
    /* dp_overlap_name and cp_comm_name (plan.c; test_store checks the words) */
    "  CASE r.dp_overlap WHEN 0 THEN 'none' WHEN 1 THEN 'last-microbatch'\n"
    "    WHEN 2 THEN 'bucketed' END AS dp_overlap,\n"
    "  r.innet_reduce AS innet_reduce, r.comm_compress AS comm_compress,\n"
    "  r.net_bw_factor AS net_bw_factor, r.cp AS cp,\n"
    "  CASE r.cp_comm WHEN 1 THEN 'allgather' ELSE 'ring' END AS cp_comm, r.ep AS ep,\n"
    "  r.capacity_factor AS capacity_factor, r.pp_first_layers AS pp_first_layers,\n"
    "  r.pp_last_layers AS pp_last_layers,\n"
    "  st.name AS status, rs.name AS reason, rs.text AS reason_text,\n"
    "  CASE r.status WHEN 1 THEN NULL ELSE r.status = 0 END AS fits,\n"
    "  r.micro_batches AS micro_batches, r.t_iter AS t_iter, r.t_iter_lo AS t_iter_lo,\n"
    "  r.t_iter_hi AS t_iter_hi, r.extrap AS extrap, r.t_compute AS t_compute,\n"
    "  r.t_comm AS t_comm, r.t_comm_exposed AS t_comm_exposed, r.t_tp_comm AS t_tp_comm,\n"
    "  r.t_tp_comm_exposed AS t_tp_comm_exposed, r.t_dp_comm AS t_dp_comm,\n"
    "  r.t_dp_comm_exposed AS t_dp_comm_exposed, r.t_pp_comm AS t_pp_comm,\n"
    "  r.t_bubble AS t_bubble, r.t_optimizer AS t_optimizer,\n"
    "  r.comm_fraction AS comm_fraction, r.hidden_fraction AS hidden_fraction,\n"
    "  r.mem_weights AS mem_weights, r.mem_grads AS mem_grads,\n"
    "  r.mem_optimizer AS mem_optimizer, r.mem_activations AS mem_activations,\n"
    "  r.mem_total AS mem_total, h.mem_cap AS mem_cap, r.mem_total / h.mem_cap AS mem_frac,\n"
    "  r.model_flops AS model_flops, r.hw_flops AS hw_flops, r.mfu AS mfu, r.hfu AS hfu,\n"
    "  r.tokens_per_s AS tokens_per_s, r.tp_bytes AS tp_bytes, r.dp_bytes AS dp_bytes,\n"
    "  r.pp_bytes AS pp_bytes, r.t_cp_comm AS t_cp_comm,\n"
    "  r.t_cp_comm_exposed AS t_cp_comm_exposed, r.cp_bytes AS cp_bytes,\n"
    "  r.t_ep_comm AS t_ep_comm, r.ep_bytes AS ep_bytes, r.ccr AS ccr,\n"
    "  r.rid AS rid, r.model_id AS model_id, r.hw_id AS hw_id\n"
    "FROM result_codes r\n"
    "  JOIN models m ON m.model_id = r.model_id\n"
    "  JOIN hardware h ON h.hw_id = r.hw_id\n"
    "  LEFT JOIN dtypes dt ON dt.dtype = r.dtype\n"
    "  LEFT JOIN recompute_modes rc ON rc.recompute = r.recompute\n"
    "  LEFT JOIN statuses st ON st.status = r.status\n"
    "  LEFT JOIN reasons rs ON rs.reason = r.reason;\n",
    /* 'DELETE FROM results WHERE ...' deletes the stored rows */
    "CREATE TRIGGER results_delete INSTEAD OF DELETE ON results BEGIN\n"
    "  DELETE FROM result_rows WHERE rid = OLD.rid;\n"
    "END;\n",
    /* as schema version 11 defined it (then the view of names): for older
     * queries, dp_overlap stays its code and params a REAL */
    "CREATE VIEW results_view AS\n"
    "SELECT r.run_id, r.idx, r.key, r.name AS scenario, m.name AS model, m.params,\n"
    "  h.name AS hardware, h.generation, h.evolution,\n"
    "  r.stack,\n"
    "  r.devices, r.tp, r.pp, r.dp, r.vpp, r.mbs, r.gbs, r.seq, dt.name AS dtype, r.sp, r.zero,\n"
    "  rc.name AS recompute, r.flash_attn, r.tp_overlap, r.dp_overlap, r.innet_reduce,\n"
    "  r.comm_compress, r.net_bw_factor,\n"
    "  r.cp, CASE r.cp_comm WHEN 1 THEN 'allgather' ELSE 'ring' END AS cp_comm, r.ep,\n"
    "  r.capacity_factor, r.pp_first_layers, r.pp_last_layers,\n"
    "  st.name AS status, rs.name AS reason, rs.text AS reason_text,\n"
    "  CASE r.status WHEN 1 THEN NULL ELSE r.status = 0 END AS fits,\n"
    "  r.micro_batches, r.t_iter, r.t_iter_lo, r.t_iter_hi, r.extrap,\n"
    "  r.t_compute, r.t_comm, r.t_comm_exposed, r.t_tp_comm, r.t_tp_comm_exposed,\n"
    "  r.t_dp_comm, r.t_dp_comm_exposed, r.t_pp_comm, r.t_bubble, r.t_optimizer,\n"
    "  r.comm_fraction, r.hidden_fraction,\n"
    "  r.mem_weights, r.mem_grads, r.mem_optimizer, r.mem_activations, r.mem_total,\n"
    "  h.mem_cap, r.mem_total / h.mem_cap AS mem_frac,\n"
    "  r.model_flops, r.hw_flops, r.mfu,\n"
    "  r.hfu, r.tokens_per_s, r.tp_bytes, r.dp_bytes, r.pp_bytes,\n"
    "  r.t_cp_comm, r.t_cp_comm_exposed, r.cp_bytes, r.t_ep_comm, r.ep_bytes,\n"
    "  r.ccr, r.rid\n"
    "FROM result_codes r\n"
    "  JOIN models m ON m.model_id = r.model_id\n"
    "  JOIN hardware h ON h.hw_id = r.hw_id\n"
    "  LEFT JOIN dtypes dt ON dt.dtype = r.dtype\n"
    "  LEFT JOIN recompute_modes rc ON rc.recompute = r.recompute\n"
    "  LEFT JOIN statuses st ON st.status = r.status\n"
    "  LEFT JOIN reasons rs ON rs.reason = r.reason;\n",
    /* The best plan per group, as best.h defines it (one definition for the
     * views, the canned queries and 'ccsweep search'): rk 1 is the best. */
    "CREATE VIEW plan_rank AS\n"
    "SELECT rid, run_id, idx, model_id, hw_id, devices, gbs, seq, stack,\n"
    "  row_number() OVER (PARTITION BY " CCS_BEST_GROUP " ORDER BY " CCS_BEST_ORDER ") AS rk\n"
    "FROM result_codes WHERE " CCS_BEST_ELIGIBLE ";\n",
    "CREATE VIEW comm_share AS\n"
    "WITH a AS (\n"
    "  SELECT " CCS_BEST_GROUP ", count(*) AS plans,\n"
    "    avg(comm_fraction) AS comm_fraction_avg, min(comm_fraction) AS comm_fraction_min,\n"
    "    max(comm_fraction) AS comm_fraction_max, avg(hidden_fraction) AS hidden_fraction_avg\n"
    "  FROM result_codes WHERE " CCS_BEST_ELIGIBLE " GROUP BY " CCS_BEST_GROUP "),\n"
    "b AS (\n"
    "  SELECT r.* FROM result_codes r JOIN plan_rank k ON k.rid = r.rid AND k.rk = 1)\n"
    "SELECT a.run_id, m.name AS model, CAST(m.params AS INTEGER) AS params,\n"
    "  h.name AS hardware, h.generation, h.evolution, a.stack, a.devices, a.gbs, a.seq,\n"
    "  a.plans, a.comm_fraction_avg, a.comm_fraction_min, a.comm_fraction_max,\n"
    "  a.hidden_fraction_avg,\n"
    "  b.idx AS best_idx, b.t_iter AS best_t_iter, b.tokens_per_s AS best_tokens_per_s,\n"
    "  b.mem_total AS best_mem_total, b.comm_fraction AS best_comm_fraction,\n"
    "  b.t_tp_comm_exposed / b.t_iter AS best_tp_share,\n"
    "  b.t_dp_comm_exposed / b.t_iter AS best_dp_share, b.t_pp_comm / b.t_iter AS best_pp_share,\n"
    "  b.t_cp_comm_exposed / b.t_iter AS best_cp_share, b.t_ep_comm / b.t_iter AS best_ep_share,\n"
    "  b.t_bubble / b.t_iter AS best_bubble_share, b.hidden_fraction AS best_hidden_fraction\n"
    "FROM a JOIN b ON b.run_id = a.run_id AND b.model_id = a.model_id AND b.hw_id = a.hw_id\n"
    "  AND b.devices = a.devices AND b.gbs = a.gbs AND b.seq = a.seq AND b.stack = a.stack\n"
    "  JOIN models m ON m.model_id = a.model_id JOIN hardware h ON h.hw_id = a.hw_id;\n",
    "CREATE VIEW best_plan AS\n"
    "SELECT v.* FROM results v JOIN plan_rank b ON v.rid = b.rid AND b.rk = 1;\n",
};

/* Per run and hardware, where each operator kind's cost comes from. Created
 * with the schema, and on demand in files made before it existed (a table
 * added beside the others; nothing existing changes). */
static const char *const op_sources_sql =
    "CREATE TABLE IF NOT EXISTS op_sources (  -- measured or synthetic operator curves\n"
    "  run_id INTEGER NOT NULL, hardware TEXT NOT NULL,\n"
    "  op TEXT NOT NULL,       -- gemm, bmm, elementwise, ..., allreduce, p2p\n"
    "  dtype TEXT,             -- compute kinds: the arithmetic type; NULL for collectives\n"
    "  level TEXT,             -- collectives: intra | inter; NULL for compute kinds\n"
    "  source TEXT NOT NULL CHECK (source IN ('measured','synthetic')),\n"
    "  calibration TEXT        -- the profile of a measured curve\n"
    ");\n";

int sti_create_op_sources(ccs_store *st, ccs_err *err)
{
    return sti_exec(st, op_sources_sql, err);
}

/* The plan axes version 6 added, with the value every version-5 plan had,
 * and the model fields it records. */
static const char *const v6_sql[] = {
    "ALTER TABLE plans ADD COLUMN cp INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE plans ADD COLUMN cp_comm INTEGER NOT NULL DEFAULT 0", /* CCS_CP_RING */
    "ALTER TABLE plans ADD COLUMN ep INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE plans ADD COLUMN capacity_factor REAL NOT NULL DEFAULT 0", /* dropless */
    "ALTER TABLE plans ADD COLUMN pp_first_layers INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE plans ADD COLUMN pp_last_layers INTEGER NOT NULL DEFAULT 0",
    /* mixture of experts; NULL in the models of version 5, which did not record them */
    "ALTER TABLE models ADD COLUMN experts INTEGER",
    "ALTER TABLE models ADD COLUMN top_k INTEGER",
    "ALTER TABLE models ADD COLUMN shared_experts INTEGER",
    "ALTER TABLE models ADD COLUMN moe_ffn INTEGER",
};

/* Columns of version 6, appended to plans and result_rows (the outputs from
 * CCS_OUTPUTS_V5 on, named as in timeline.h). */
int sti_v6_columns(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof v6_sql / sizeof v6_sql[0]; i++)
        if (sti_exec(st, v6_sql[i], err))
            return CCS_EIO;
    for (int k = CCS_OUTPUTS_V5; k < CCS_N_OUTPUTS; k++) {
        char sql[96];
        snprintf(sql, sizeof sql, "ALTER TABLE result_rows ADD COLUMN %s REAL",
                 ccs_outputs[k].name);
        if (sti_exec(st, sql, err))
            return CCS_EIO;
    }
    return CCS_OK;
}

/* What version 7 added: the aggregates of keep.aggregate, one row per group
 * and field. gkey is the group's key (its keep.per values as little-endian
 * doubles, model and hardware as their index in the spec); g0 .. g7 the same
 * values readable (model and hardware by name), NULL past the last axis,
 * which keep_axes names. sum is the exact sum sum_exact (xsum.h) rounded to
 * a double; sum_exact lets a resumed run or a shard's merge add to it
 * exactly. */
static const char *const v7_sql[] = {
    "CREATE TABLE keep_groups (  -- keep.aggregate: per group and field\n"
    "  run_id INTEGER NOT NULL, gkey BLOB NOT NULL, field TEXT NOT NULL,\n"
    "  g0, g1, g2, g3, g4, g5, g6, g7,  -- the keep.per values (keep_axes names them)\n"
    "  scenarios INTEGER NOT NULL,      -- of the group that keep ranks\n"
    "  n INTEGER NOT NULL,              -- of them with a value of field (not NULL)\n"
    "  min REAL, max REAL, sum REAL,    -- over those n; NULL when n is 0\n"
    "  sum_exact BLOB NOT NULL,         -- the exact sum, of which sum is the nearest double\n"
    "  PRIMARY KEY (run_id, gkey, field)\n"
    ") WITHOUT ROWID;\n",
    "CREATE TABLE keep_axes (  -- keep.per of a run with keep.aggregate: g<pos> is axis\n"
    "  run_id INTEGER NOT NULL, pos INTEGER NOT NULL, axis TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, pos)\n"
    ") WITHOUT ROWID;\n",
    "CREATE VIEW keep_stats AS\n"
    "SELECT run_id, field, g0, g1, g2, g3, g4, g5, g6, g7, scenarios, n, min, max, sum,\n"
    "  sum / n AS mean\n"
    "FROM keep_groups;\n",
};

int sti_v7_tables(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof v7_sql / sizeof v7_sql[0]; i++)
        if (sti_exec(st, v7_sql[i], err))
            return CCS_EIO;
    return CCS_OK;
}

/* --detail rows, version 8: one region_rows row per scenario (rowid rid, as
 * result_rows) with four columns per region, NULL when the region is empty,
 * and present, bit k set when region k is stored, instead of one regions row
 * per region: 19 b-tree entries and their keys per scenario become one. The
 * view regions gives the rows of the old table, the same columns in the same
 * order; present lets it skip empty regions without reading their columns. */
static const char *const region_fields[REGION_FIELDS] = {"time", "count", "flops", "bytes"};

/* The region_rows column of field f of region k: its name with '_' for
 * '.', then the field (fwd_attn_tp_time). */
static void region_col(char *out, size_t n, int k, int f)
{
    snprintf(out, n, "%s_%s", region_name(k), region_fields[f]);
    for (char *c = out; *c; c++)
        if (*c == '.')
            *c = '_';
}

/* Version 7 to 8: region_rows made from regions, regions dropped and made a
 * view over region_rows; every value carried as it was. */
int sti_v8_regions(ccs_store *st, ccs_err *err)
{
    ccs_buf sql = CCS_BUF_INIT;
    char col[64];
    ccs_buf_printf(&sql, "CREATE TABLE region_rows (  -- --detail: one row per scenario\n"
                         "  rid INTEGER PRIMARY KEY, /* run_id << " RID_BITS_SQL " | idx */\n"
                         "  present INTEGER NOT NULL /* bit k: region k is stored */");
    for (int k = 0; k < CCS_RG_N; k++)
        for (int f = 0; f < REGION_FIELDS; f++) {
            region_col(col, sizeof col, k, f);
            ccs_buf_printf(&sql, ",\n  %s REAL", col);
        }
    ccs_buf_printf(&sql, "\n);\nINSERT INTO region_rows SELECT run_id << " RID_BITS_SQL
                         " | idx, sum(1 << region)");
    for (int k = 0; k < CCS_RG_N; k++)
        for (int f = 0; f < REGION_FIELDS; f++)
            ccs_buf_printf(&sql, ", max(CASE region WHEN %d THEN %s END)", k, region_fields[f]);
    ccs_buf_printf(&sql, " FROM regions GROUP BY run_id, idx;\nDROP TABLE regions;\n"
                         "CREATE VIEW regions AS  -- one row per non-empty region\n"
                         "SELECT r.rid >> " RID_BITS_SQL " AS run_id, r.rid & " RID_MASK_SQL
                         " AS idx, n.region AS region");
    for (int f = 0; f < REGION_FIELDS; f++) {
        ccs_buf_printf(&sql, ",\n  CASE n.region");
        for (int k = 0; k < CCS_RG_N; k++) {
            region_col(col, sizeof col, k, f);
            ccs_buf_printf(&sql, " WHEN %d THEN r.%s", k, col);
        }
        ccs_buf_printf(&sql, " END AS %s", region_fields[f]);
    }
    /* CROSS JOIN keeps region_rows the outer loop: rows come in (rid, region) order */
    ccs_buf_printf(&sql, "\nFROM region_rows r CROSS JOIN region_names n\n"
                         "WHERE (r.present >> n.region) & 1;\n");
    int rc;
    if (sql.oom) {
        ccs_err_set(err, "out of memory");
        rc = CCS_ENOMEM;
    } else {
        rc = sti_exec(st, ccs_buf_str(&sql), err);
    }
    ccs_buf_free(&sql);
    return rc;
}

/* Version 10: the plan's software stack by name (NULL: the default stack,
 * megatron-core, which every plan of an older version ran under). */
int sti_v10_columns(ccs_store *st, ccs_err *err)
{
    return sti_exec(st, "ALTER TABLE plans ADD COLUMN stack TEXT", err);
}

int sti_create_views(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof view_sql / sizeof view_sql[0]; i++)
        if (sti_exec(st, view_sql[i], err))
            return CCS_EIO;
    return CCS_OK;
}

int sti_create_schema(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof schema_sql / sizeof schema_sql[0]; i++)
        if (sti_exec(st, schema_sql[i], err))
            return CCS_EIO;
    if (sti_v6_columns(st, err) || sti_v10_columns(st, err) || sti_create_views(st, err) ||
        sti_v7_tables(st, err) || sti_v8_regions(st, err) || sti_serve_tables(st, err))
        return CCS_EIO;
    return sti_create_op_sources(st, err);
}

/* Fill the lookup tables the views join with names from the C tables. */
int sti_fill_lookups(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    static const char *const sql[] = {
        "INSERT INTO statuses VALUES (?1, ?2)", "INSERT INTO reasons VALUES (?1, ?2, ?3)",
        "INSERT INTO dtypes VALUES (?1, ?2)", "INSERT INTO recompute_modes VALUES (?1, ?2)",
        "INSERT INTO region_names VALUES (?1, ?2, ?3)"};
    static const int count[] = {3, CCS_R_N, CCS_DTYPE_N, 3, CCS_RG_N};
    static const char *const st_names[] = {"ok", "invalid", "oom"};
    for (int t = 0; t < 5; t++) {
        if (sqlite3_prepare_v2(st->db, sql[t], -1, &s, NULL) != SQLITE_OK)
            return sti_fail_db(st, err, "creating the schema");
        for (int i = 0; i < count[t]; i++) {
            const char *name = t == 0   ? st_names[i]
                               : t == 1 ? plan_reason_name(i)
                               : t == 2 ? dtype_name(i)
                               : t == 3 ? recompute_name(i)
                                        : region_name(i);
            sqlite3_bind_int(s, 1, i);
            sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
            if (t == 1)
                sqlite3_bind_text(s, 3, plan_reason_text(i), -1, SQLITE_STATIC);
            if (t == 4)
                sqlite3_bind_text(s, 3, region_is_comm(i) ? "comm" : "compute", -1, SQLITE_STATIC);
            if (sqlite3_step(s) != SQLITE_DONE) {
                sqlite3_finalize(s);
                return sti_fail_db(st, err, "creating the schema");
            }
            sqlite3_reset(s);
        }
        sqlite3_finalize(s);
    }
    return CCS_OK;
}
