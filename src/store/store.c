/* store.c - SQLite schema, batched writer, provenance and resume.
 * Write pattern after sqlite's test/speedtest1.c: BEGIN, prepared statement,
 * bind/step/reset per row, COMMIT; every failure message carries
 * sqlite3_errmsg. */
#include "ccsweep/store/store.h"
#include "ccsweep/sweep/best.h"
#include "ccsweep/sweep/keep.h"
#include "ccsweep/cost/opmodel.h"
#include "ccsweep/util/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 'ccsw': marks the file as a ccsweep database. */
#define CCS_APP_ID 0x63637377

#ifndef CCS_GIT_REV
#define CCS_GIT_REV "unknown"
#endif

struct ccs_store {
    sqlite3 *db;
    char path[PATH_MAX];
    const ccs_grid *g;
    int64_t run_id;
    int64_t session;
    char started[32]; /* runs.started of the run */
    int detail;
    int in_tx;
    int locked;             /* this process holds the writer row */
    int full;               /* a write failed because the disk (or quota) is full */
    int created;            /* store_open created the schema: nothing to check */
    int migrating;          /* store_open is migrating the file: a stale writer row stays */
    int64_t tx_rows;        /* rows in the open transaction */
    int64_t tx_done;        /* scenarios of chunks completed in the open transaction */
    store_counts tx;        /* rows by status in the open transaction */
    store_counts committed; /* committed by this session */
    sqlite3_stmt *ins, *ins_rg, *ins_chunk, *upd_run, *ins_plan, *del_row, *del_rg;
    sqlite3_stmt *ins_many;  /* ROWS_PER_INSERT rows in one statement */
    sqlite3_stmt *put_group; /* keep.aggregate: one field of a group */
    ccs_record *pend;        /* ROWS_PER_INSERT rows put but not yet inserted */
    int n_pend;
    int64_t plan_n;      /* idx = cell * plan_n + plan_i */
    unsigned char *seen; /* bit per (z, plan_i): its plans row exists */
    size_t n_seen;       /* bytes of seen */
    int64_t *model_id;   /* per spec model */
    int64_t *hw_id;      /* per (spec hardware, generation index) */
    store_range *todo;
    size_t n_todo;
    store_counts base; /* committed before this session */
};

static const char *const status_names[] = {"running", "complete", "interrupted", "failed"};

/* One statement per string (C11 guarantees string literals of 4095 bytes).
 * These are the tables of schema version 5; v6_columns, v7_tables and
 * v8_regions make them those of the later versions, in a new file as in a
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
     * run_id and idx (run_id << 40 | idx), so the table needs no second
     * index and a run's rows are one rowid range; sr packs the status (low 2
     * bits) and the reason. The view results decodes them and joins the plan. */
    "CREATE TABLE result_rows (\n"
    "  rid INTEGER PRIMARY KEY,        -- run_id << 40 | idx\n"
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
    "  cid INTEGER PRIMARY KEY,        -- run_id << 40 | cell\n"
    "  model_id INTEGER NOT NULL, hw_id INTEGER NOT NULL, z INTEGER NOT NULL\n"
    ");\n",
    "CREATE TABLE plans (  -- derived plans, written when first stored\n"
    "  pid INTEGER PRIMARY KEY,        -- run_id << 40 | (z * plan_n + plan_i)\n"
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

/* The views, recreated by a migration (they read the tables' new columns). */
static const char *const view_sql[] = {
    "CREATE VIEW results AS\n"
    "SELECT r.rid AS rid, r.rid >> 40 AS run_id, r.rid & 1099511627775 AS idx, r.key AS key,\n"
    "  c.model_id AS model_id, c.hw_id AS hw_id,\n"
    "  p.devices AS devices, p.tp AS tp, p.pp AS pp, p.dp AS dp, p.vpp AS vpp, p.mbs AS mbs,\n"
    "  p.gbs AS gbs, p.seq AS seq, p.dtype AS dtype, p.sp AS sp, p.zero AS zero,\n"
    "  p.recompute AS recompute, p.flash_attn AS flash_attn, p.tp_overlap AS tp_overlap,\n"
    "  p.dp_overlap AS dp_overlap, p.innet_reduce AS innet_reduce,\n"
    "  p.comm_compress AS comm_compress, p.net_bw_factor AS net_bw_factor,\n"
    "  p.cp AS cp, p.cp_comm AS cp_comm, p.ep AS ep, p.capacity_factor AS capacity_factor,\n"
    "  p.pp_first_layers AS pp_first_layers, p.pp_last_layers AS pp_last_layers,\n"
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
    "  JOIN runs u ON u.run_id = r.rid >> 40\n"
    "  JOIN cells c ON c.cid = (u.run_id << 40) | ((r.rid & 1099511627775) / u.plan_n)\n"
    "  JOIN plans p ON p.pid = (u.run_id << 40)\n"
    "    | (c.z * u.plan_n + (r.rid & 1099511627775) % u.plan_n);\n",
    "CREATE TRIGGER results_delete INSTEAD OF DELETE ON results BEGIN\n"
    "  DELETE FROM result_rows WHERE rid = OLD.rid;\n"
    "END;\n",
    "CREATE VIEW results_view AS\n"
    "SELECT r.run_id, r.idx, r.key, r.name AS scenario, m.name AS model, m.params,\n"
    "  h.name AS hardware, h.generation, h.evolution,\n"
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
    "FROM results r\n"
    "  JOIN models m ON m.model_id = r.model_id\n"
    "  JOIN hardware h ON h.hw_id = r.hw_id\n"
    "  LEFT JOIN dtypes dt ON dt.dtype = r.dtype\n"
    "  LEFT JOIN recompute_modes rc ON rc.recompute = r.recompute\n"
    "  LEFT JOIN statuses st ON st.status = r.status\n"
    "  LEFT JOIN reasons rs ON rs.reason = r.reason;\n",
    /* The best plan per group, as best.h defines it (one definition for the
     * views, the canned queries and 'ccsweep search'): rk 1 is the best. */
    "CREATE VIEW plan_rank AS\n"
    "SELECT rid, run_id, idx, model_id, hw_id, devices, gbs, seq,\n"
    "  row_number() OVER (PARTITION BY " CCS_BEST_GROUP " ORDER BY " CCS_BEST_ORDER ") AS rk\n"
    "FROM results WHERE " CCS_BEST_ELIGIBLE ";\n",
    "CREATE VIEW comm_share AS\n"
    "WITH a AS (\n"
    "  SELECT " CCS_BEST_GROUP ", count(*) AS plans,\n"
    "    avg(comm_fraction) AS comm_fraction_avg, min(comm_fraction) AS comm_fraction_min,\n"
    "    max(comm_fraction) AS comm_fraction_max, avg(hidden_fraction) AS hidden_fraction_avg\n"
    "  FROM results WHERE " CCS_BEST_ELIGIBLE " GROUP BY " CCS_BEST_GROUP "),\n"
    "b AS (\n"
    "  SELECT r.* FROM results r JOIN plan_rank k ON k.rid = r.rid AND k.rk = 1)\n"
    "SELECT a.run_id, m.name AS model, m.params, h.name AS hardware, h.generation,\n"
    "  h.evolution, a.devices, a.gbs, a.seq, a.plans, a.comm_fraction_avg,\n"
    "  a.comm_fraction_min, a.comm_fraction_max, a.hidden_fraction_avg,\n"
    "  b.idx AS best_idx, b.t_iter AS best_t_iter, b.tokens_per_s AS best_tokens_per_s,\n"
    "  b.mem_total AS best_mem_total, b.comm_fraction AS best_comm_fraction,\n"
    "  b.t_tp_comm_exposed / b.t_iter AS best_tp_share,\n"
    "  b.t_dp_comm_exposed / b.t_iter AS best_dp_share, b.t_pp_comm / b.t_iter AS best_pp_share,\n"
    "  b.t_cp_comm_exposed / b.t_iter AS best_cp_share, b.t_ep_comm / b.t_iter AS best_ep_share,\n"
    "  b.t_bubble / b.t_iter AS best_bubble_share, b.hidden_fraction AS best_hidden_fraction\n"
    "FROM a JOIN b ON b.run_id = a.run_id AND b.model_id = a.model_id AND b.hw_id = a.hw_id\n"
    "  AND b.devices = a.devices AND b.gbs = a.gbs AND b.seq = a.seq\n"
    "  JOIN models m ON m.model_id = a.model_id JOIN hardware h ON h.hw_id = a.hw_id;\n",
    "CREATE VIEW best_plan AS\n"
    "SELECT v.* FROM results_view v JOIN plan_rank b ON v.rid = b.rid AND b.rk = 1;\n",
};

/* result_rows columns: rid, key, sr, name, micro_batches and the outputs */
/* rid, key, sr, name, micro_batches and the stored outputs (timeline.h) */
#define N_RESULT_COLS (5 + CCS_N_OUTPUTS - CCS_N_DERIVED)
/* Rows per INSERT statement: one statement's fixed cost (its start, the
 * cursor it opens, the reset) is shared by 16 rows; the statement holds
 * 16 x 40 = 640 parameters, within SQLite's limit of 999 (its oldest default). */
#define ROWS_PER_INSERT 16
_Static_assert(ROWS_PER_INSERT * N_RESULT_COLS <= 999,
               "an INSERT of ROWS_PER_INSERT rows would exceed 999 parameters");
#define RID_BITS 40 /* rid = run_id << RID_BITS | idx */
#define RID_MAX_RUN ((INT64_C(1) << (63 - RID_BITS)) - 1)

static int64_t rid_of(int64_t run_id, int64_t idx)
{
    return (int64_t)((uint64_t)run_id << RID_BITS) | idx;
}

static int fail_db(ccs_store *st, ccs_err *err, const char *what)
{
    ccs_err_set(err, "%s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
    return CCS_EIO;
}

/* BEGIN IMMEDIATE in short waits (100 ms, up to 100 of them) instead of one
 * long one; between two waits between(st, err) may end the wait: its non-zero
 * result is returned (positive: the transaction is no longer wanted, none is
 * open; negative: an error it has set). CCS_OK once the transaction is open;
 * the busy timeout is back at 10 s on every return. */
static int begin_polling(ccs_store *st, const char *what, int (*between)(ccs_store *, ccs_err *),
                         ccs_err *err)
{
    int rc = CCS_OK;
    sqlite3_busy_timeout(st->db, 100);
    for (int tries = 0;; tries++) {
        int r = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (r == SQLITE_OK)
            break;
        if (r != SQLITE_BUSY || tries >= 100) {
            rc = fail_db(st, err, what);
            break;
        }
        if ((rc = between(st, err)))
            break;
    }
    sqlite3_busy_timeout(st->db, 10000);
    return rc;
}

static int exec(ccs_store *st, const char *sql, ccs_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        ccs_err_set(err, "%s: %s", st->path, msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        return CCS_EIO;
    }
    return CCS_OK;
}

static int64_t query_int(ccs_store *st, const char *sql, int64_t def)
{
    sqlite3_stmt *s;
    int64_t v = def;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return def;
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

static void now_iso(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

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
static int v6_columns(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof v6_sql / sizeof v6_sql[0]; i++)
        if (exec(st, v6_sql[i], err))
            return CCS_EIO;
    for (int k = CCS_OUTPUTS_V5; k < CCS_N_OUTPUTS; k++) {
        char sql[96];
        snprintf(sql, sizeof sql, "ALTER TABLE result_rows ADD COLUMN %s REAL",
                 ccs_outputs[k].name);
        if (exec(st, sql, err))
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

static int v7_tables(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof v7_sql / sizeof v7_sql[0]; i++)
        if (exec(st, v7_sql[i], err))
            return CCS_EIO;
    return CCS_OK;
}

/* --detail rows, version 8: one region_rows row per scenario (rowid rid, as
 * result_rows) with four columns per region, NULL when the region is empty,
 * and present, bit k set when region k is stored, instead of one regions row
 * per region: 19 b-tree entries and their keys per scenario become one. The
 * view regions gives the rows of the old table, the same columns in the same
 * order; present lets it skip empty regions without reading their columns. */
#define REGION_FIELDS 4 /* time, count, flops, bytes */
_Static_assert(CCS_RG_N <= 62, "region_rows.present holds a bit per region in an int64");
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

/* Append printf output to the growing SQL text buf (cap bytes at *cap). */
static int sql_add(char **buf, size_t *cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int sql_add(char **buf, size_t *cap, const char *fmt, ...)
{
    size_t len = *buf ? strlen(*buf) : 0;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(*buf ? *buf + len : NULL, *buf ? *cap - len : 0, fmt, ap);
        va_end(ap);
        if (k < 0)
            return CCS_ENOMEM;
        if (*buf && len + (size_t)k < *cap)
            return CCS_OK;
        size_t nc = 2 * (*cap + (size_t)k + 256);
        char *nb = realloc(*buf, nc);
        if (!nb)
            return CCS_ENOMEM;
        if (!*buf)
            nb[0] = 0;
        *buf = nb;
        *cap = nc;
    }
}

/* Version 7 to 8: region_rows made from regions, regions dropped and made a
 * view over region_rows; every value carried as it was. */
static int v8_regions(ccs_store *st, ccs_err *err)
{
    char *sql = NULL, col[64];
    size_t cap = 0;
    int rc = sql_add(&sql, &cap, "CREATE TABLE region_rows (  -- --detail: one row per scenario\n"
                                 "  rid INTEGER PRIMARY KEY, /* run_id << 40 | idx */\n"
                                 "  present INTEGER NOT NULL /* bit k: region k is stored */");
    for (int k = 0; rc == CCS_OK && k < CCS_RG_N; k++)
        for (int f = 0; rc == CCS_OK && f < REGION_FIELDS; f++) {
            region_col(col, sizeof col, k, f);
            rc = sql_add(&sql, &cap, ",\n  %s REAL", col);
        }
    if (rc == CCS_OK)
        rc = sql_add(&sql, &cap, "\n);\nINSERT INTO region_rows SELECT run_id << 40 | idx, "
                                 "sum(1 << region)");
    for (int k = 0; rc == CCS_OK && k < CCS_RG_N; k++)
        for (int f = 0; rc == CCS_OK && f < REGION_FIELDS; f++)
            rc = sql_add(&sql, &cap, ", max(CASE region WHEN %d THEN %s END)", k,
                         region_fields[f]);
    if (rc == CCS_OK)
        rc = sql_add(&sql, &cap,
                     " FROM regions GROUP BY run_id, idx;\nDROP TABLE regions;\n"
                     "CREATE VIEW regions AS  -- one row per non-empty region\n"
                     "SELECT r.rid >> 40 AS run_id, r.rid & 1099511627775 AS idx, "
                     "n.region AS region");
    for (int f = 0; rc == CCS_OK && f < REGION_FIELDS; f++) {
        rc = sql_add(&sql, &cap, ",\n  CASE n.region");
        for (int k = 0; rc == CCS_OK && k < CCS_RG_N; k++) {
            region_col(col, sizeof col, k, f);
            rc = sql_add(&sql, &cap, " WHEN %d THEN r.%s", k, col);
        }
        if (rc == CCS_OK)
            rc = sql_add(&sql, &cap, " END AS %s", region_fields[f]);
    }
    /* CROSS JOIN keeps region_rows the outer loop: rows come in (rid, region) order */
    if (rc == CCS_OK)
        rc = sql_add(&sql, &cap, "\nFROM region_rows r CROSS JOIN region_names n\n"
                                 "WHERE (r.present >> n.region) & 1;\n");
    if (rc != CCS_OK) {
        free(sql);
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    rc = exec(st, sql, err);
    free(sql);
    return rc;
}

static int create_views(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof view_sql / sizeof view_sql[0]; i++)
        if (exec(st, view_sql[i], err))
            return CCS_EIO;
    return CCS_OK;
}

static int create_schema(ccs_store *st, ccs_err *err)
{
    for (size_t i = 0; i < sizeof schema_sql / sizeof schema_sql[0]; i++)
        if (exec(st, schema_sql[i], err))
            return CCS_EIO;
    if (v6_columns(st, err) || create_views(st, err) || v7_tables(st, err) ||
        v8_regions(st, err))
        return CCS_EIO;
    return exec(st, op_sources_sql, err);
}

static int check_writer(ccs_store *st, ccs_err *err);

/* Version 5, 6, 7 or 8 to 9 in place, in one transaction (all of it or
 * nothing). From 5, first to 6: the new columns with the values version 5
 * computed without storing them (cp and ep 1, so no context- or
 * expert-parallel traffic; hfu from the stored mfu, hw_flops and
 * model_flops, as the version-5 view derived it), its views dropped. Then to 7: the keep.aggregate tables and view, empty (older versions
 * had no aggregates). Then to 8: the regions rows moved to region_rows
 * (v8_regions). Then to 9: the views (re)created (version 9 derives five
 * outputs in the view). No value is removed or changed otherwise. A process writing
 * the file (an older ccsweep) is waited for, not raced. */
static int migrate(ccs_store *st, int64_t from, ccs_err *err)
{
    static const char *const drop_views =
        "DROP VIEW best_plan; DROP VIEW comm_share; DROP VIEW plan_rank; "
        "DROP VIEW results_view; DROP VIEW results;"; /* the trigger goes with results */
    /* the same, also when a user dropped one of them */
    static const char *const drop_views_if =
        "DROP VIEW IF EXISTS best_plan; DROP VIEW IF EXISTS comm_share; "
        "DROP VIEW IF EXISTS plan_rank; DROP VIEW IF EXISTS results_view; "
        "DROP VIEW IF EXISTS results;";
    char fill[512] = "UPDATE result_rows SET hfu = CASE WHEN model_flops > 0 THEN mfu * hw_flops "
                     "/ model_flops ELSE 0 END";
    for (int k = CCS_OUTPUTS_V5; k < CCS_N_OUTPUTS; k++)
        if (strcmp(ccs_outputs[k].name, "hfu"))
            snprintf(fill + strlen(fill), sizeof fill - strlen(fill), ", %s = 0",
                     ccs_outputs[k].name);
    strcat(fill, " WHERE sr & 3 != 1"); /* invalid rows keep NULL timings */
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", CCS_STORE_SCHEMA);
    if (exec(st, "BEGIN IMMEDIATE", err))
        return CCS_EIO;
    st->migrating = 1;
    int rc = check_writer(st, err);
    st->migrating = 0;
    /* another process may have migrated it while this one waited */
    if (rc == CCS_OK && query_int(st, "PRAGMA user_version", -1) == from) {
        if (from == 5 && (exec(st, drop_views, err) || v6_columns(st, err) ||
                          exec(st, fill, err)))
            rc = CCS_EIO;
        if (rc == CCS_OK && from <= 6 && v7_tables(st, err))
            rc = CCS_EIO;
        if (rc == CCS_OK && from <= 7 && v8_regions(st, err))
            rc = CCS_EIO;
        /* to 9: the views that derive five outputs and the band's ends when
         * a row leaves them NULL (stored rows keep their values) */
        if (rc == CCS_OK && (exec(st, drop_views_if, err) || create_views(st, err) ||
                             exec(st, pragma, err)))
            rc = CCS_EIO;
    }
    if (rc == CCS_OK && exec(st, "COMMIT", err))
        rc = CCS_EIO;
    if (rc != CCS_OK)
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Fill the lookup tables the views join with names from the C tables. */
static int fill_lookups(ccs_store *st, ccs_err *err)
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
            return fail_db(st, err, "creating the schema");
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
                return fail_db(st, err, "creating the schema");
            }
            sqlite3_reset(s);
        }
        sqlite3_finalize(s);
    }
    return CCS_OK;
}

static int make_parent(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    struct stat sb;
    if (stat(dir, &sb) == 0)
        return 0;
    return mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/* 1 when the file has tables already (a between() test of begin_polling). */
static int schema_exists(ccs_store *st, ccs_err *err)
{
    (void)err;
    return query_int(st, "SELECT count(*) FROM sqlite_schema", -1) > 0;
}

ccs_store *store_open(const char *path, int locking, int *rc, ccs_err *err)
{
    ccs_store *st = calloc(1, sizeof *st);
    *rc = CCS_EIO;
    if (!st) {
        ccs_err_set(err, "%s: out of memory", path);
        *rc = CCS_ENOMEM;
        return NULL;
    }
    ccs_strlcpy(st->path, path, sizeof st->path);
    if (make_parent(path)) {
        ccs_err_set(err, "%s: cannot create its directory: %s", path, strerror(errno));
        free(st);
        return NULL;
    }
    const char *vfs = locking == STORE_LOCK_NONE ? "unix-none" : NULL;
    if (sqlite3_open_v2(path, &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        vfs) != SQLITE_OK) {
        ccs_err_set(err, "%s: cannot open: %s", path,
                    st->db ? sqlite3_errmsg(st->db) : "out of memory");
        store_close(st);
        return NULL;
    }
    sqlite3_busy_timeout(st->db, 10000);
    /* A small fixed page cache (2 MiB, about SQLite's default) keeps the
     * writer's memory independent of the database size: inserts append to the
     * table and to the (run_id, idx) index, so a larger cache measured no
     * faster, while it would fill (and grow RSS) only on large sweeps. */
    /* Checkpoints copy the WAL into the file and sync both: SQLite's default
     * of one per 1000 pages (4 MiB) of WAL made them a sixth of the writer's
     * time. One per 65536 pages (256 MiB of WAL, about a million rows) keeps
     * the WAL bounded; a run's remainder is checkpointed when the file closes.
     * Commits stay as durable as before (synchronous = NORMAL: a commit in
     * the WAL survives a crash of the process; a power loss can lose the
     * latest ones, never corrupt the file). */
    if (exec(st, "PRAGMA cache_size = -2048", err) || exec(st, "PRAGMA wal_autocheckpoint = 65536", err) ||
        (locking != STORE_LOCK_NORMAL && exec(st, "PRAGMA locking_mode = EXCLUSIVE", err)) ||
        exec(st, "PRAGMA journal_mode = WAL", err) ||
        exec(st, "PRAGMA synchronous = NORMAL", err)) {
        /* "file is not a database" shows up here */
        *rc = CCS_EINPUT;
        store_close(st);
        return NULL;
    }
    /* Look and create in one write transaction: of two processes creating
     * the same new file, the second sees the first one's schema. A file that
     * already has tables is only read here: a write transaction would wait
     * behind a running sweep, which commits back to back. */
    int write_tx = !schema_exists(st, err);
    if (write_tx) {
        /* short waits: when another process created the schema meanwhile,
         * only read, as above (it may be sweeping already) */
        int r = begin_polling(st, "creating the schema", schema_exists, err);
        if (r < 0)
            goto fail;
        write_tx = r == CCS_OK;
    }
    int64_t ver = query_int(st, "PRAGMA user_version", -1);
    int64_t app = query_int(st, "PRAGMA application_id", -1);
    int64_t tables = query_int(st, "SELECT count(*) FROM sqlite_schema", -1);
    if (ver == 0 && tables == 0) {
        char pragma[96];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d; PRAGMA application_id = %d;",
                 CCS_STORE_SCHEMA, CCS_APP_ID);
        if (create_schema(st, err) || fill_lookups(st, err) || exec(st, pragma, err))
            goto fail;
        st->created = 1;
    } else if (app != CCS_APP_ID) {
        ccs_err_set(err, "%s: not a ccsweep database (it has other tables); give another --db",
                    path);
        *rc = CCS_EINPUT;
        goto fail;
    } else if (ver >= CCS_STORE_MIGRATE_FROM && ver < CCS_STORE_SCHEMA && !write_tx) {
        int mrc = migrate(st, ver, err);
        if (mrc != CCS_OK) {
            char why[sizeof err->msg];
            ccs_strlcpy(why, err->msg, sizeof why);
            ccs_err_set(err,
                        "%s: cannot migrate the database from schema version %lld to %d "
                        "(nothing was changed): %s",
                        path, (long long)ver, CCS_STORE_SCHEMA, why);
            *rc = mrc == CCS_EINPUT ? CCS_EINPUT : CCS_EIO;
            goto fail;
        }
    } else if (ver != CCS_STORE_SCHEMA) {
        ccs_err_set(err,
                    "%s: database schema version %lld, but this ccsweep %s reads version "
                    "%d (and migrates versions %d to %d); use a new --db file",
                    path, (long long)ver, CCS_VERSION, CCS_STORE_SCHEMA, CCS_STORE_MIGRATE_FROM,
                    CCS_STORE_SCHEMA - 1);
        *rc = CCS_EINPUT;
        goto fail;
    }
    if (write_tx && exec(st, "COMMIT", err))
        goto fail;
    *rc = CCS_OK;
    return st;
fail:
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    store_close(st);
    return NULL;
}

int store_upgrade(const char *path, ccs_err *err)
{
    int rc;
    ccs_store *st = store_open(path, STORE_LOCK_NORMAL, &rc, err);
    store_close(st);
    return rc;
}

static int release_writer(ccs_store *st);

void store_close(ccs_store *st)
{
    if (!st)
        return;
    if (st->db && !sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    release_writer(st);
    sqlite3_finalize(st->ins);
    sqlite3_finalize(st->ins_many);
    sqlite3_finalize(st->put_group);
    free(st->pend);
    sqlite3_finalize(st->ins_rg);
    sqlite3_finalize(st->ins_chunk);
    sqlite3_finalize(st->upd_run);
    sqlite3_finalize(st->ins_plan);
    sqlite3_finalize(st->del_row);
    sqlite3_finalize(st->del_rg);
    free(st->seen);
    sqlite3_close(st->db);
    free(st->model_id);
    free(st->hw_id);
    free(st->todo);
    free(st);
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
    if (v && *v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static void bind_env(sqlite3_stmt *s, int i, const char *name, int as_int)
{
    const char *v = getenv(name);
    if (v && *v && as_int)
        sqlite3_bind_int64(s, i, strtoll(v, NULL, 10));
    else
        bind_text_or_null(s, i, v);
}

static int step_done(ccs_store *st, sqlite3_stmt *s, ccs_err *err, const char *what)
{
    int r = sqlite3_step(s);
    sqlite3_reset(s);
    if (r != SQLITE_DONE && r != SQLITE_ROW)
        return fail_db(st, err, what);
    return CCS_OK;
}

static int insert_run(ccs_store *st, const store_run_info *info, ccs_err *err)
{
    const ccs_spec *sp = grid_spec(st->g);
    char host[256] = "", now[32];
    gethostname(host, sizeof host - 1);
    now_iso(now, sizeof now);
    sqlite3_stmt *s;
    const char *sql =
        "INSERT INTO runs (name, spec_path, spec_text, spec_sha256, version, git_rev, host, "
        "ranks, slurm_job_id, slurm_nodelist, slurm_restart_count, argv, evolution, where_expr, "
        "name_template, detail, started, updated, status, total, plan_n, run_id) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,'running',?,?,?)";
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "recording the run");
    size_t tlen;
    const char *text = spec_text(sp, &tlen);
    const ccs_evolution *ev = spec_evolution(sp);
    sqlite3_bind_text(s, 1, spec_name(sp), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, spec_path(sp), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, text, (int)tlen, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, spec_sha256(sp), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, CCS_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, CCS_GIT_REV, -1, SQLITE_STATIC);
    bind_text_or_null(s, 7, host);
    sqlite3_bind_int(s, 8, info->ranks);
    bind_env(s, 9, "SLURM_JOB_ID", 0);
    bind_env(s, 10, "SLURM_JOB_NODELIST", 0);
    bind_env(s, 11, "SLURM_RESTART_COUNT", 1);
    bind_text_or_null(s, 12, info->argv);
    bind_text_or_null(s, 13, ev ? ev->name : NULL);
    bind_text_or_null(s, 14, spec_where_text(sp));
    bind_text_or_null(s, 15, spec_name_template(sp));
    sqlite3_bind_int(s, 16, info->detail);
    /* a shard takes its run's id and start time; a new run gets the next id */
    sqlite3_bind_text(s, 17, info->shard_of > 0 ? info->shard_started : now, -1,
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 18, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 19, grid_count(st->g));
    sqlite3_bind_int64(s, 20, st->plan_n);
    if (info->shard_of > 0)
        sqlite3_bind_int64(s, 21, info->shard_of);
    else
        sqlite3_bind_null(s, 21);
    int rc = step_done(st, s, err, "recording the run");
    sqlite3_finalize(s);
    st->run_id = sqlite3_last_insert_rowid(st->db);
    return rc;
}

static int insert_session(ccs_store *st, const store_run_info *info, ccs_err *err)
{
    char host[256] = "", now[32];
    gethostname(host, sizeof host - 1);
    now_iso(now, sizeof now);
    sqlite3_stmt *s;
    const char *sql =
        "INSERT INTO sessions (run_id, session, host, ranks, slurm_job_id, slurm_nodelist, "
        "slurm_restart_count, argv, started, status) VALUES (?1, (SELECT coalesce(max(session), "
        "0) + 1 FROM sessions WHERE run_id = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running')";
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "recording the session");
    sqlite3_bind_int64(s, 1, st->run_id);
    bind_text_or_null(s, 2, host);
    sqlite3_bind_int(s, 3, info->ranks);
    bind_env(s, 4, "SLURM_JOB_ID", 0);
    bind_env(s, 5, "SLURM_JOB_NODELIST", 0);
    bind_env(s, 6, "SLURM_RESTART_COUNT", 1);
    bind_text_or_null(s, 7, info->argv);
    sqlite3_bind_text(s, 8, now, -1, SQLITE_TRANSIENT);
    int rc = step_done(st, s, err, "recording the session");
    sqlite3_finalize(s);
    if (rc)
        return rc;
    char sql2[160];
    snprintf(sql2, sizeof sql2, "SELECT max(session) FROM sessions WHERE run_id = %lld",
             (long long)st->run_id);
    st->session = query_int(st, sql2, 1);
    return CCS_OK;
}

/* The run's op_sources rows: every operator kind (per dtype, or per level for
 * collectives) on every hardware of the spec, measured when its calibration
 * profile has a curve for it (opmodel_measured), else synthetic. */
static int record_op_sources(ccs_store *st, ccs_err *err)
{
    const ccs_spec *sp = grid_spec(st->g);
    sqlite3_stmt *del = NULL, *ins = NULL;
    int rc = exec(st, op_sources_sql, err);
    if (rc != CCS_OK)
        return rc;
    if (sqlite3_prepare_v2(st->db, "DELETE FROM op_sources WHERE run_id = ?", -1, &del, NULL) ||
        sqlite3_prepare_v2(st->db, "INSERT INTO op_sources VALUES (?,?,?,?,?,?,?)", -1, &ins,
                           NULL)) {
        sqlite3_finalize(del);
        return fail_db(st, err, "recording operator sources");
    }
    sqlite3_bind_int64(del, 1, st->run_id);
    rc = step_done(st, del, err, "recording operator sources");
    for (size_t h = 0; rc == CCS_OK && h < spec_n_hw(sp); h++) {
        const struct ccs_opmodel *om = spec_opmodel(sp, h);
        for (int k = 0; rc == CCS_OK && k < CCS_OP_N; k++) {
            int coll = opkind_is_collective(k), n = coll ? 2 : CCS_DTYPE_N;
            for (int v = 0; rc == CCS_OK && v < n; v++) {
                int measured = opmodel_measured(om, k, coll ? CCS_FP32 : v, coll ? v : 0);
                sqlite3_bind_int64(ins, 1, st->run_id);
                sqlite3_bind_text(ins, 2, spec_hw(sp, h)->name, -1, SQLITE_STATIC);
                sqlite3_bind_text(ins, 3, opkind_name(k), -1, SQLITE_STATIC);
                bind_text_or_null(ins, 4, coll ? NULL : dtype_name(v));
                bind_text_or_null(ins, 5, coll ? (v ? "inter" : "intra") : NULL);
                sqlite3_bind_text(ins, 6, measured ? "measured" : "synthetic", -1, SQLITE_STATIC);
                bind_text_or_null(ins, 7, measured ? spec_calibration(sp, h) : NULL);
                rc = step_done(st, ins, err, "recording operator sources");
            }
        }
    }
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    return rc;
}

/* The cells of the grid (idx / plan_n): their model and hardware rows and
 * the plan table they read. */
static int map_cells(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    size_t ng = spec_axis_len(grid_spec(st->g), SPEC_AX_GEN);
    int64_t n = grid_count(st->g) / st->plan_n;
    if (sqlite3_prepare_v2(st->db, "INSERT OR IGNORE INTO cells VALUES (?,?,?,?)", -1, &s, NULL) !=
        SQLITE_OK)
        return fail_db(st, err, "recording the grid cells");
    int rc = CCS_OK;
    for (int64_t c = 0; rc == CCS_OK && c < n; c++) {
        ccs_scenario sc;
        grid_decode(st->g, c * st->plan_n, &sc);
        sqlite3_bind_int64(s, 1, rid_of(st->run_id, c));
        sqlite3_bind_int64(s, 2, st->model_id[sc.model]);
        sqlite3_bind_int64(s, 3, st->hw_id[(size_t)sc.hw * ng + (size_t)sc.gen_i]);
        sqlite3_bind_int64(s, 4, grid_cell_z(st->g, c));
        rc = step_done(st, s, err, "recording the grid cells");
    }
    sqlite3_finalize(s);
    return rc;
}

/* Which plan rows exist already (a resumed run): one bit per (z, plan_i). */
static int load_seen(ccs_store *st, ccs_err *err)
{
    int64_t nz = grid_plan_tables(st->g);
    st->n_seen = (size_t)((nz * st->plan_n + 7) / 8);
    st->seen = calloc(st->n_seen ? st->n_seen : 1, 1);
    if (!st->seen) {
        ccs_err_set(err, "%s: out of memory for the plan table of %lld plans", st->path,
                    (long long)(nz * st->plan_n));
        return CCS_ENOMEM;
    }
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "SELECT pid FROM plans WHERE pid >= ? AND pid < ?", -1, &s,
                           NULL) != SQLITE_OK)
        return fail_db(st, err, "reading the plan table");
    sqlite3_bind_int64(s, 1, rid_of(st->run_id, 0));
    sqlite3_bind_int64(s, 2, rid_of(st->run_id + 1, 0));
    while (sqlite3_step(s) == SQLITE_ROW) {
        int64_t bit = sqlite3_column_int64(s, 0) & ((INT64_C(1) << RID_BITS) - 1);
        if (bit >= 0 && (size_t)(bit / 8) < st->n_seen)
            st->seen[bit / 8] |= (unsigned char)(1u << (bit % 8));
    }
    sqlite3_finalize(s);
    return CCS_OK;
}

/* Insert (if absent) and look up the model and hardware rows of the run. */
static int map_entries(ccs_store *st, ccs_err *err)
{
    const ccs_spec *sp = grid_spec(st->g);
    size_t nm = spec_n_models(sp), nh = spec_n_hw(sp), ng = spec_axis_len(sp, SPEC_AX_GEN);
    const double *gens = spec_axis_values(sp, SPEC_AX_GEN);
    const ccs_evolution *ev = spec_evolution(sp);
    st->model_id = calloc(nm, sizeof *st->model_id);
    st->hw_id = calloc(nh * ng, sizeof *st->hw_id);
    if (!st->model_id || !st->hw_id) {
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    sqlite3_stmt *im, *ih, *qm, *qh;
    int rc = CCS_OK;
    if (sqlite3_prepare_v2(st->db,
                           "INSERT OR IGNORE INTO models (run_id, name, layers, hidden, heads, "
                           "kv_heads, ffn, vocab, max_pos, seq, gbs, gated, bias, tied, params, "
                           "experts, top_k, shared_experts, moe_ffn) "
                           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &im, NULL) ||
        sqlite3_prepare_v2(st->db,
                           "INSERT OR IGNORE INTO hardware (run_id, name, generation, evolution, "
                           "devices_per_node, compute_units, peak_fp32, peak_tf32, peak_bf16, "
                           "peak_fp16, peak_fp8, mem_cap, mem_bw, intra_bw, inter_bw, intra_lat, "
                           "inter_lat, kernel_lat, gemm_eff, mem_eff, intra_eff, inter_eff, "
                           "variability, calibration) VALUES "
                           "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &ih, NULL) ||
        sqlite3_prepare_v2(st->db, "SELECT model_id FROM models WHERE run_id = ? AND name = ?", -1,
                           &qm, NULL) ||
        sqlite3_prepare_v2(st->db,
                           "SELECT hw_id FROM hardware WHERE run_id = ? AND name = ? "
                           "AND generation = ?",
                           -1, &qh, NULL))
        return fail_db(st, err, "recording models and hardware");
    for (size_t i = 0; rc == CCS_OK && i < nm; i++) {
        const ccs_model *m = spec_model(sp, i);
        const int64_t iv[] = {m->layers,  m->hidden, m->heads, m->kv_heads, m->ffn,  m->vocab,
                              m->max_pos, m->seq,    m->gbs,   m->gated,    m->bias, m->tied};
        sqlite3_bind_int64(im, 1, st->run_id);
        sqlite3_bind_text(im, 2, m->name, -1, SQLITE_STATIC);
        for (int k = 0; k < 12; k++)
            sqlite3_bind_int64(im, 3 + k, iv[k]);
        sqlite3_bind_double(im, 15, model_params(m));
        const int64_t moe[] = {m->experts, m->top_k, m->shared_experts, m->moe_ffn};
        for (int k = 0; k < 4; k++)
            sqlite3_bind_int64(im, 16 + k, moe[k]);
        rc = step_done(st, im, err, "recording models");
        sqlite3_bind_int64(qm, 1, st->run_id);
        sqlite3_bind_text(qm, 2, m->name, -1, SQLITE_STATIC);
        if (rc == CCS_OK && sqlite3_step(qm) == SQLITE_ROW)
            st->model_id[i] = sqlite3_column_int64(qm, 0);
        else
            rc = fail_db(st, err, "looking up models");
        sqlite3_reset(qm);
    }
    for (size_t h = 0; rc == CCS_OK && h < nh; h++) {
        for (size_t j = 0; rc == CCS_OK && j < ng; j++) {
            const ccs_hw *w = grid_hw(st->g, (int)h, (int)j);
            sqlite3_bind_int64(ih, 1, st->run_id);
            sqlite3_bind_text(ih, 2, w->name, -1, SQLITE_STATIC);
            sqlite3_bind_int(ih, 3, (int)gens[j]);
            bind_text_or_null(ih, 4, gens[j] > 0 && ev ? ev->name : NULL);
            sqlite3_bind_int(ih, 5, w->devices_per_node);
            sqlite3_bind_int(ih, 6, w->compute_units);
            for (int d = 0; d < CCS_DTYPE_N; d++)
                sqlite3_bind_double(ih, 7 + d, w->peak_flops[d]);
            const double dv[] = {w->mem_cap,   w->mem_bw,    w->intra_bw,   w->inter_bw,
                                 w->intra_lat, w->inter_lat, w->kernel_lat, w->gemm_eff,
                                 w->mem_eff,   w->intra_eff, w->inter_eff,  w->variability};
            for (int k = 0; k < 12; k++)
                sqlite3_bind_double(ih, 12 + k, dv[k]);
            bind_text_or_null(ih, 24, spec_calibration(sp, h));
            rc = step_done(st, ih, err, "recording hardware");
            sqlite3_bind_int64(qh, 1, st->run_id);
            sqlite3_bind_text(qh, 2, w->name, -1, SQLITE_STATIC);
            sqlite3_bind_int(qh, 3, (int)gens[j]);
            if (rc == CCS_OK && sqlite3_step(qh) == SQLITE_ROW)
                st->hw_id[h * ng + j] = sqlite3_column_int64(qh, 0);
            else if (rc == CCS_OK)
                rc = fail_db(st, err, "looking up hardware");
            sqlite3_reset(qh);
        }
    }
    sqlite3_finalize(im);
    sqlite3_finalize(ih);
    sqlite3_finalize(qm);
    sqlite3_finalize(qh);
    if (rc == CCS_OK)
        rc = record_op_sources(st, err);
    return rc ? rc : map_cells(st, err);
}

static int push_range(ccs_store *st, int64_t lo, int64_t hi, size_t *cap)
{
    if (st->n_todo == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        store_range *nr = realloc(st->todo, nc * sizeof *nr);
        if (!nr)
            return CCS_ENOMEM;
        st->todo = nr;
        *cap = nc;
    }
    st->todo[st->n_todo].lo = lo;
    st->todo[st->n_todo].hi = hi;
    st->n_todo++;
    return CCS_OK;
}

/* The gaps between committed chunks are still to do; rows committed inside a
 * gap (a chunk cut short by a signal or a crash) are removed so that every
 * index ends with exactly one row. */
static int compute_todo(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    size_t cap = 0;
    int64_t pos = 0, total = grid_count(st->g);
    if (sqlite3_prepare_v2(st->db, "SELECT lo, hi FROM chunks WHERE run_id = ? ORDER BY lo", -1, &s,
                           NULL) != SQLITE_OK)
        return fail_db(st, err, "reading completed chunks");
    sqlite3_bind_int64(s, 1, st->run_id);
    int r, rc = CCS_OK;
    while (rc == CCS_OK && (r = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t lo = sqlite3_column_int64(s, 0), hi = sqlite3_column_int64(s, 1);
        if (lo > pos)
            rc = push_range(st, pos, lo, &cap);
        if (hi > pos)
            pos = hi;
    }
    sqlite3_finalize(s);
    if (rc == CCS_OK && pos < total)
        rc = push_range(st, pos, total, &cap);
    if (rc) {
        ccs_err_set(err, "out of memory");
        return rc;
    }
    /* the committed counts of the run drop by what is removed */
    sqlite3_stmt *cnt, *del, *delrg;
    int64_t gone[3] = {0, 0, 0};
    if (sqlite3_prepare_v2(st->db,
                           "SELECT sr & 3, count(*) FROM result_rows WHERE rid >= ? AND rid < ? "
                           "GROUP BY 1",
                           -1, &cnt, NULL) != SQLITE_OK)
        return fail_db(st, err, "clearing partial chunks");
    if (sqlite3_prepare_v2(st->db, "DELETE FROM result_rows WHERE rid >= ? AND rid < ?", -1, &del,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, "DELETE FROM region_rows WHERE rid >= ? AND rid < ?", -1,
                           &delrg, NULL) != SQLITE_OK) {
        sqlite3_finalize(cnt);
        sqlite3_finalize(del);
        return fail_db(st, err, "clearing partial chunks");
    }
    for (size_t i = 0; rc == CCS_OK && i < st->n_todo; i++) {
        int64_t lo = rid_of(st->run_id, st->todo[i].lo), hi = rid_of(st->run_id, st->todo[i].hi);
        sqlite3_bind_int64(cnt, 1, lo);
        sqlite3_bind_int64(cnt, 2, hi);
        while (sqlite3_step(cnt) == SQLITE_ROW) {
            int k = sqlite3_column_int(cnt, 0);
            if (k >= 0 && k < 3)
                gone[k] += sqlite3_column_int64(cnt, 1);
        }
        sqlite3_reset(cnt);
        sqlite3_bind_int64(del, 1, lo);
        sqlite3_bind_int64(del, 2, hi);
        rc = step_done(st, del, err, "clearing partial chunks");
        if (rc == CCS_OK) {
            sqlite3_bind_int64(delrg, 1, lo);
            sqlite3_bind_int64(delrg, 2, hi);
            rc = step_done(st, delrg, err, "clearing partial chunks");
        }
    }
    sqlite3_finalize(cnt);
    sqlite3_finalize(del);
    sqlite3_finalize(delrg);
    if (rc == CCS_OK && gone[0] + gone[1] + gone[2] > 0) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "UPDATE runs SET n_rows = n_rows - %lld, n_ok = n_ok - %lld, n_invalid = "
                 "n_invalid - %lld, n_oom = n_oom - %lld WHERE run_id = %lld",
                 (long long)(gone[0] + gone[1] + gone[2]), (long long)gone[CCS_ST_OK],
                 (long long)gone[CCS_ST_INVALID], (long long)gone[CCS_ST_OOM],
                 (long long)st->run_id);
        rc = exec(st, sql, err);
    }
    return rc;
}

/* The committed counts of the run, kept up to date by every commit (no
 * count over the table). */
static int count_rows(ccs_store *st, store_counts *c, ccs_err *err)
{
    sqlite3_stmt *s;
    memset(c, 0, sizeof *c);
    if (sqlite3_prepare_v2(
            st->db, "SELECT n_done, n_rows, n_ok, n_invalid, n_oom FROM runs WHERE run_id = ?", -1,
            &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "counting rows");
    sqlite3_bind_int64(s, 1, st->run_id);
    if (sqlite3_step(s) == SQLITE_ROW) {
        c->done = sqlite3_column_int64(s, 0);
        c->rows = sqlite3_column_int64(s, 1);
        c->ok = sqlite3_column_int64(s, 2);
        c->invalid = sqlite3_column_int64(s, 3);
        c->oom = sqlite3_column_int64(s, 4);
    }
    sqlite3_finalize(s);
    /* an interrupted run may hold rows of chunks not yet complete (they are
     * redone on resume), so rows can exceed the scenarios counted as done */
    c->filtered = c->done > c->rows ? c->done - c->rows : 0;
    return CCS_OK;
}

/* Latest unfinished run: of this spec, or (to refuse) of another. */
static int find_resume(ccs_store *st, const char *sha, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT run_id, spec_sha256, status, name, total FROM runs "
                           "ORDER BY run_id DESC",
                           -1, &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "looking for a run to resume");
    int64_t same_open = 0, other_open = 0, same_done = 0;
    char other_sha[65] = "", other_name[128] = "";
    while (sqlite3_step(s) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        const char *h = (const char *)sqlite3_column_text(s, 1);
        const char *status = (const char *)sqlite3_column_text(s, 2);
        int same = h && !strcmp(h, sha), done = status && !strcmp(status, "complete");
        if (same && !done && !same_open)
            same_open = id;
        else if (same && done && !same_done)
            same_done = id;
        else if (!same && !done && !other_open) {
            other_open = id;
            ccs_strlcpy(other_sha, h ? h : "", sizeof other_sha);
            const char *nm = (const char *)sqlite3_column_text(s, 3);
            ccs_strlcpy(other_name, nm ? nm : "", sizeof other_name);
        }
    }
    sqlite3_finalize(s);
    if (same_open) {
        st->run_id = same_open;
        return STORE_RESUMED;
    }
    if (other_open) {
        ccs_err_set(err,
                    "%s: --resume: the latest unfinished run (%lld, '%s') was started from "
                    "a different spec (sha256 %.12s..., this spec %.12s...); resume it with its "
                    "own spec, or run without --resume to start a new run",
                    st->path, (long long)other_open, other_name, other_sha, sha);
        return CCS_EINPUT;
    }
    if (same_done) {
        st->run_id = same_done;
        return STORE_NOTHING;
    }
    return STORE_NEW;
}

/* PRAGMA quick_check before anything is appended: rows added to a damaged
 * file could not be read back reliably. */
static int check_integrity(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "PRAGMA quick_check(1)", -1, &s, NULL) != SQLITE_OK) {
        ccs_err_set(err,
                    "%s: the database is damaged (%s); nothing was appended: give another "
                    "--db (sqlite3's .recover can salvage rows into a new file)",
                    st->path, sqlite3_errmsg(st->db));
        return CCS_EINPUT;
    }
    int r = sqlite3_step(s);
    const char *msg = r == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    int ok = msg && !strcmp(msg, "ok");
    if (!ok)
        ccs_err_set(err,
                    "%s: the database is damaged: PRAGMA quick_check says: %.200s; nothing was "
                    "appended: give another --db (sqlite3's .recover can salvage rows into a new "
                    "file)",
                    st->path, msg ? msg : sqlite3_errmsg(st->db));
    sqlite3_finalize(s);
    return ok ? CCS_OK : CCS_EINPUT;
}

/* ---- one writer per file ------------------------------------------------------ */

/* Start time of process pid in clock ticks after boot (field 22 of
 * /proc/PID/stat), or 0 when unknown: with the pid it names one process even
 * after the pid is reused. *state gets field 3 ('Z': exited, not yet reaped). */
static int64_t proc_start(long pid, char *state)
{
    *state = '?';
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p)
        return 0;
    p++;
    while (*p == ' ')
        p++;
    *state = *p;
    /* after ')' come field 3 (state) ... field 22 (starttime) */
    for (int field = 3; field < 22 && *p; field++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
    }
    return strtoll(p, NULL, 10);
}

/* 1 when the process that took a lock on this host is still running. */
static int holder_alive(long pid, int64_t start)
{
    if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
        return 0;
    char state;
    int64_t now = proc_start(pid, &state);
    if (state == 'Z' || state == 'X')
        return 0;
    return !(start > 0 && now > 0 && now != start);
}

/* Look at the writer row. A row of a process that no longer runs on this
 * host is stale (it is taken over); a live holder, or one on another host
 * (whose liveness cannot be checked from here), is an input error naming it. */
static int check_writer(ccs_store *st, ccs_err *err)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "SELECT host, pid, pid_start, started, run_id FROM writer", -1,
                           &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "checking for another writer");
    int rc = CCS_OK;
    if (sqlite3_step(s) == SQLITE_ROW) {
        char h[256], started[64];
        const char *hv = (const char *)sqlite3_column_text(s, 0);
        const char *sv = (const char *)sqlite3_column_text(s, 3);
        ccs_strlcpy(h, hv ? hv : "?", sizeof h);
        ccs_strlcpy(started, sv ? sv : "?", sizeof started);
        long pid = (long)sqlite3_column_int64(s, 1);
        int64_t pstart = sqlite3_column_int64(s, 2), run = sqlite3_column_int64(s, 4);
        int here = !strcmp(h, host);
        if (here && !holder_alive(pid, pstart)) {
            if (!st->migrating)
                fprintf(stderr,
                        "ccsweep: %s: taking over the writer lock of pid %ld on %s (since %s), "
                        "which is no longer running\n",
                        st->path, pid, h, started);
        } else {
            ccs_err_set(err,
                        "%s: another ccsweep is writing to this database: pid %ld on host %s, "
                        "since %s (run %lld); wait for it to end%s",
                        st->path, pid, h, started, (long long)run,
                        here ? ""
                             : ", or if that process is gone, remove its lock with "
                               "sqlite3 DB 'DELETE FROM writer'");
            rc = CCS_EINPUT;
        }
    }
    sqlite3_finalize(s);
    return rc;
}

/* BEGIN IMMEDIATE for the claim, in short waits: between them the writer row
 * is read again, so a writer that took the file meanwhile is named instead of
 * waited for (its batches would keep the write lock busy until it ends). */
static int begin_claim(ccs_store *st, ccs_err *err)
{
    return begin_polling(st, "starting the run", check_writer, err);
}

/* Claim the writer row inside the open write transaction (see check_writer). */
static int claim_writer(ccs_store *st, ccs_err *err)
{
    char host[256] = "", now[32];
    gethostname(host, sizeof host - 1);
    now_iso(now, sizeof now);
    sqlite3_stmt *s;
    int rc = check_writer(st, err);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(st->db,
                           "INSERT OR REPLACE INTO writer (id, host, pid, pid_start, started) "
                           "VALUES (1, ?, ?, ?, ?)",
                           -1, &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "taking the writer lock");
    sqlite3_bind_text(s, 1, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (int64_t)getpid());
    char state;
    sqlite3_bind_int64(s, 3, proc_start((long)getpid(), &state));
    sqlite3_bind_text(s, 4, now, -1, SQLITE_TRANSIENT);
    rc = step_done(st, s, err, "taking the writer lock");
    sqlite3_finalize(s);
    return rc;
}

/* Drop this process's writer row (in the caller's transaction, or alone). */
static int release_writer(ccs_store *st)
{
    if (!st->locked)
        return CCS_OK;
    char sql[96];
    snprintf(sql, sizeof sql, "DELETE FROM writer WHERE pid = %lld", (long long)getpid());
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return CCS_EIO; /* left behind: the next writer finds it stale */
    st->locked = 0;
    return CCS_OK;
}

/* ---- inputs of a run ------------------------------------------------------------- */

/* Content hashes of what a run reads besides its spec: the catalog entries
 * (as parsed, so inline and catalog entries alike) and calibration profiles.
 * The spec's own sha256 covers inline text; these cover the files it names. */
typedef struct input_hash {
    const char *kind;
    char name[CCS_NAME_MAX + 16];
    char sha[65];
} input_hash;

/* Entries are hashed whole, as the bytes of their struct: every field,
 * including any added later, takes part. catalog_parse_model, _hw and
 * _evolution zero an entry before filling it and entries are only copied
 * whole, so padding and the tail of the name are zero and the bytes of one
 * entry are the same in every process of one build (a resume with another
 * build may see a difference and refuse, which is the safe side). */
static void digest_model(const ccs_model *m, char out[65])
{
    sha256_hex(m, sizeof *m, out);
}

static void digest_hw(const ccs_hw *w, char out[65])
{
    sha256_hex(w, sizeof *w, out);
}

static void digest_evolution(const ccs_evolution *e, char out[65])
{
    sha256_hex(e, sizeof *e, out);
}

/* The inputs of this session's grid; a new array of *n entries. */
static input_hash *collect_inputs(const ccs_store *st, size_t *n)
{
    const ccs_spec *sp = grid_spec(st->g);
    size_t nm = spec_n_models(sp), nh = spec_n_hw(sp), k = 0;
    input_hash *v = calloc(nm + 2 * nh + 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < nm; i++, k++) {
        v[k].kind = "model";
        ccs_strlcpy(v[k].name, spec_model(sp, i)->name, sizeof v[k].name);
        digest_model(spec_model(sp, i), v[k].sha);
    }
    for (size_t i = 0; i < nh; i++, k++) {
        v[k].kind = "hardware";
        ccs_strlcpy(v[k].name, spec_hw(sp, i)->name, sizeof v[k].name);
        digest_hw(spec_hw(sp, i), v[k].sha);
        const struct ccs_opmodel *om = spec_opmodel(sp, i);
        if (om) {
            k++;
            v[k].kind = "calibration";
            ccs_strlcpy(v[k].name, spec_hw(sp, i)->name, sizeof v[k].name);
            ccs_strlcpy(v[k].sha, opmodel_sha256(om), sizeof v[k].sha);
        }
    }
    if (spec_evolution(sp)) {
        v[k].kind = "evolution";
        ccs_strlcpy(v[k].name, spec_evolution(sp)->name, sizeof v[k].name);
        digest_evolution(spec_evolution(sp), v[k].sha);
        k++;
    }
    *n = k;
    return v;
}

static int record_inputs(ccs_store *st, const input_hash *v, size_t n, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO run_inputs VALUES (?, ?, ?, ?)", -1, &s,
                           NULL) != SQLITE_OK)
        return fail_db(st, err, "recording the run's inputs");
    int rc = CCS_OK;
    for (size_t i = 0; rc == CCS_OK && i < n; i++) {
        sqlite3_bind_int64(s, 1, st->run_id);
        sqlite3_bind_text(s, 2, v[i].kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, v[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, v[i].sha, -1, SQLITE_STATIC);
        rc = step_done(st, s, err, "recording the run's inputs");
    }
    sqlite3_finalize(s);
    return rc;
}

/* A resumed run must read exactly what it read before: the same entries with
 * the same content. Names the first difference. */
static int check_inputs(ccs_store *st, const input_hash *v, size_t n, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT sha256 FROM run_inputs WHERE run_id = ? AND kind = ? AND "
                           "name = ?",
                           -1, &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "reading the run's inputs");
    const char *why = NULL;
    size_t i;
    for (i = 0; i < n && !why; i++) {
        sqlite3_bind_int64(s, 1, st->run_id);
        sqlite3_bind_text(s, 2, v[i].kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, v[i].name, -1, SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_ROW)
            why = "was not used when the run started";
        else if (strcmp((const char *)sqlite3_column_text(s, 0), v[i].sha))
            why = "has changed since the run started";
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    if (!why)
        return CCS_OK;
    i--;
    ccs_err_set(err,
                "%s: --resume: run %lld was computed with other inputs: %s '%s' %s (its "
                "content sha256 differs); resuming would mix old and new results: restore the "
                "%s it used, or run without --resume to start a new run",
                st->path, (long long)st->run_id, v[i].kind, v[i].name, why,
                strcmp(v[i].kind, "calibration") ? "catalog entry" : "calibration profile");
    return CCS_EINPUT;
}

/* The name of keep.per axis i. */
static const char *axis_name(int id)
{
    return id == SPEC_PER_MODEL ? "model"
           : id == SPEC_PER_HW  ? "hardware"
           : id == EXPR_F_GEN   ? "generation"
                                : expr_field_name(id);
}

/* keep_axes of a new run with keep.aggregate. */
static int record_keep_axes(ccs_store *st, ccs_err *err)
{
    const spec_keep *rule = spec_keep_rule(grid_spec(st->g));
    if (!rule || !rule->n_agg)
        return CCS_OK;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "INSERT INTO keep_axes VALUES (?, ?, ?)", -1, &s, NULL) !=
        SQLITE_OK)
        return fail_db(st, err, "recording the keep axes");
    int rc = CCS_OK;
    for (int i = 0; rc == CCS_OK && i < rule->n_per; i++) {
        sqlite3_bind_int64(s, 1, st->run_id);
        sqlite3_bind_int(s, 2, i);
        sqlite3_bind_text(s, 3, axis_name(rule->per[i]), -1, SQLITE_STATIC);
        rc = step_done(st, s, err, "recording the keep axes");
    }
    sqlite3_finalize(s);
    return rc;
}

static int read_started(ccs_store *st, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "SELECT started FROM runs WHERE run_id = ?", -1, &s, NULL) !=
        SQLITE_OK)
        return fail_db(st, err, "reading the run");
    sqlite3_bind_int64(s, 1, st->run_id);
    const char *v = sqlite3_step(s) == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    ccs_strlcpy(st->started, v ? v : "", sizeof st->started);
    sqlite3_finalize(s);
    return CCS_OK;
}

int store_prepare_run(ccs_store *st, const ccs_grid *g, const store_run_info *info, int resume,
                      ccs_err *err)
{
    st->g = g;
    st->detail = info->detail;
    st->plan_n = grid_plan_n(g);
    int kind = STORE_NEW;
    if (grid_count(g) > (INT64_C(1) << RID_BITS) ||
        grid_plan_tables(g) > (INT64_C(1) << RID_BITS) / st->plan_n) {
        ccs_err_set(err,
                    "%s: the grid has %lld scenarios; a run holds at most 2^%d: split the sweep",
                    spec_path(grid_spec(g)), (long long)grid_count(g), RID_BITS);
        return CCS_EINPUT;
    }
    if (!st->created && check_integrity(st, err))
        return CCS_EINPUT;
    size_t n_in = 0;
    input_hash *in = collect_inputs(st, &n_in);
    if (!in) {
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    /* A live writer is named at once, from a read: waiting for the write
     * lock first could last until that writer ends (it commits back to back). */
    int rc = check_writer(st, err);
    if (rc == CCS_OK)
        rc = begin_claim(st, err);
    if (rc) {
        free(in);
        return rc;
    }
    rc = claim_writer(st, err);
    if (rc == CCS_OK && resume)
        kind = find_resume(st, spec_sha256(grid_spec(g)), err);
    if (rc == CCS_OK && kind < 0)
        rc = kind;
    if (rc == CCS_OK && kind == STORE_NOTHING) {
        free(in);
        exec(st, "ROLLBACK", NULL);
        return count_rows(st, &st->base, err) ? CCS_EIO : STORE_NOTHING;
    }
    if (rc == CCS_OK && kind == STORE_NEW) {
        rc = insert_run(st, info, err);
        if (rc == CCS_OK)
            rc = record_inputs(st, in, n_in, err);
        if (rc == CCS_OK)
            rc = record_keep_axes(st, err);
    }
    if (rc == CCS_OK && st->run_id > RID_MAX_RUN) {
        ccs_err_set(err, "%s: more than %lld runs; use a new --db", st->path,
                    (long long)RID_MAX_RUN);
        rc = CCS_EINPUT;
    }
    if (rc == CCS_OK && kind == STORE_RESUMED)
        rc = check_inputs(st, in, n_in, err);
    free(in);
    if (rc == CCS_OK) {
        char sql[96];
        snprintf(sql, sizeof sql, "UPDATE writer SET run_id = %lld", (long long)st->run_id);
        rc = exec(st, sql, err);
    }
    if (rc == CCS_OK && kind == STORE_RESUMED) {
        char sql[256];
        char now[32];
        now_iso(now, sizeof now);
        snprintf(sql, sizeof sql,
                 "UPDATE runs SET status = 'running', ended = NULL, updated = "
                 "'%s', sessions = sessions + 1, detail = max(detail, %d) WHERE run_id = %lld",
                 now, info->detail, (long long)st->run_id);
        rc = exec(st, sql, err);
        if (rc == CCS_OK) {
            snprintf(sql, sizeof sql, "SELECT detail FROM runs WHERE run_id = %lld",
                     (long long)st->run_id);
            st->detail = (int)query_int(st, sql, info->detail);
        }
    }
    if (rc == CCS_OK)
        rc = insert_session(st, info, err);
    if (rc == CCS_OK)
        rc = read_started(st, err);
    if (rc == CCS_OK)
        rc = map_entries(st, err);
    if (rc == CCS_OK)
        rc = compute_todo(st, err);
    if (rc == CCS_OK)
        rc = load_seen(st, err);
    if (rc == CCS_OK)
        rc = count_rows(st, &st->base, err);
    if (rc != CCS_OK) {
        exec(st, "ROLLBACK", NULL);
        return rc;
    }
    if (exec(st, "COMMIT", err))
        return CCS_EIO;
    st->locked = 1;
    /* "INSERT INTO result_rows (rid, key, sr, name, micro_batches, OUTPUTS...)
     * VALUES (?,...,?)", then ",(?,...,?)" up to ROWS_PER_INSERT rows; the
     * first row's length prepares the one-row form. The output columns are
     * named as the outputs (timeline.h). */
    /* one region_rows row: rid, present and the region columns, in table order */
    char ins_rg_sql[64 + 2 * REGION_FIELDS * CCS_RG_N] = "INSERT INTO region_rows VALUES (?,?";
    for (int k = 0; k < REGION_FIELDS * CCS_RG_N; k++)
        strcat(ins_rg_sql, ",?");
    strcat(ins_rg_sql, ")");
    char insert_sql[128 + 24 * CCS_N_OUTPUTS + (3 + 2 * N_RESULT_COLS) * ROWS_PER_INSERT] =
        "INSERT INTO result_rows (rid, key, sr, name, micro_batches";
    int derived = 0;
    for (int k = 0; k < CCS_N_OUTPUTS; k++) {
        if (ccs_outputs[k].store == CCS_OUT_DERIVED) {
            derived++;
            continue;
        }
        snprintf(insert_sql + strlen(insert_sql), sizeof insert_sql - strlen(insert_sql), ", %s",
                 ccs_outputs[k].name);
    }
    if (derived != CCS_N_DERIVED) { /* timeline.c and timeline.h disagree */
        ccs_err_set(err, "%s: internal error: %d derived outputs, CCS_N_DERIVED is %d", st->path,
                    derived, CCS_N_DERIVED);
        return CCS_ERUNTIME;
    }
    strcat(insert_sql, ") VALUES ");
    size_t one_row = 0;
    for (int r = 0; r < ROWS_PER_INSERT; r++) {
        strcat(insert_sql, r ? ",(?" : "(?");
        for (int k = 1; k < N_RESULT_COLS; k++)
            strcat(insert_sql, ",?");
        strcat(insert_sql, ")");
        if (r == 0)
            one_row = strlen(insert_sql);
    }
    free(st->pend);
    st->n_pend = 0;
    st->pend = malloc(ROWS_PER_INSERT * sizeof *st->pend);
    if (!st->pend) {
        ccs_err_set(err, "%s: out of memory", st->path);
        return CCS_ENOMEM;
    }
    if (sqlite3_prepare_v2(st->db, insert_sql, (int)one_row, &st->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, insert_sql, -1, &st->ins_many, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, ins_rg_sql, -1, &st->ins_rg, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, "INSERT INTO chunks VALUES (?,?,?)", -1, &st->ins_chunk, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(st->db,
                           "INSERT OR IGNORE INTO plans VALUES "
                           "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st->ins_plan, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db,
                           "UPDATE runs SET n_done = n_done + ?, updated = ?, n_rows = n_rows "
                           "+ ?, n_ok = n_ok + ?, n_invalid = n_invalid + ?, n_oom = n_oom + ? "
                           "WHERE run_id = ?",
                           -1, &st->upd_run, NULL) != SQLITE_OK)
        return fail_db(st, err, "preparing the writer");
    return kind;
}

int64_t store_run_id(const ccs_store *st)
{
    return st->run_id;
}

const char *store_run_started(const ccs_store *st)
{
    return st->started;
}

const store_range *store_todo(const ccs_store *st, size_t *n)
{
    *n = st->n_todo;
    return st->todo;
}

void store_counts_get(const ccs_store *st, store_counts *out)
{
    *out = st->base;
}

/* A write of the open transaction failed: say why, and end the transaction.
 * SQLite may have rolled it back already (it does on SQLITE_FULL) or only the
 * statement; either way nothing of it is committed now, so the in-memory
 * counters drop it too and stay equal to what the file holds. */
static int write_failed(ccs_store *st, ccs_err *err, const char *what)
{
    int code = sqlite3_errcode(st->db), sys = sqlite3_system_errno(st->db);
    if (code == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT)
        st->full = 1;
    if (st->full)
        ccs_err_set(err,
                    "%s: the disk is full (%s) while %s: the batch being written was rolled back, "
                    "every batch committed before it is kept",
                    st->path, sqlite3_errmsg(st->db), what);
    else
        fail_db(st, err, what);
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->in_tx = 0;
    st->tx_rows = st->tx_done = 0;
    st->n_pend = 0;
    memset(&st->tx, 0, sizeof st->tx);
    return CCS_EIO;
}

static int write_step(ccs_store *st, sqlite3_stmt *s, ccs_err *err, const char *what)
{
    int r = sqlite3_step(s);
    sqlite3_reset(s);
    return r == SQLITE_DONE || r == SQLITE_ROW ? CCS_OK : write_failed(st, err, what);
}

static int begin(ccs_store *st, ccs_err *err)
{
    if (st->in_tx)
        return CCS_OK;
    if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return write_failed(st, err, "starting a transaction");
    st->in_tx = 1;
    st->tx_rows = st->tx_done = 0;
    memset(&st->tx, 0, sizeof st->tx);
    return CCS_OK;
}

/* The plans row of s, written the first time one of its scenarios is stored. */
static int put_plan(ccs_store *st, const ccs_scenario *s, ccs_err *err)
{
    int64_t plan_i = s->idx % st->plan_n;
    int64_t z = grid_cell_z(st->g, s->idx / st->plan_n);
    int64_t bit = z * st->plan_n + plan_i;
    unsigned char m = (unsigned char)(1u << (bit % 8));
    if (st->seen[bit / 8] & m)
        return CCS_OK;
    const ccs_plan *p = &s->plan;
    sqlite3_stmt *q = st->ins_plan;
    sqlite3_bind_int64(q, 1, rid_of(st->run_id, bit));
    const int ints[] = {p->devices,    p->tp,         p->pp,         p->dp,
                        p->vpp,        p->mbs,        p->gbs,        p->seq,
                        p->dtype,      p->sp,         p->zero,       p->recompute,
                        p->flash_attn, p->tp_overlap, p->dp_overlap, p->innet_reduce};
    int i = 2;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        sqlite3_bind_int(q, i++, ints[k]);
    sqlite3_bind_double(q, i++, p->comm_compress);
    sqlite3_bind_double(q, i++, p->net_bw_factor);
    const int v6[] = {plan_cp(p), p->cp_comm, plan_ep(p)};
    for (size_t k = 0; k < sizeof v6 / sizeof v6[0]; k++)
        sqlite3_bind_int(q, i++, v6[k]);
    sqlite3_bind_double(q, i++, p->capacity_factor);
    sqlite3_bind_int(q, i++, p->pp_first);
    sqlite3_bind_int(q, i++, p->pp_last);
    if (write_step(st, q, err, "inserting a plan"))
        return CCS_EIO;
    st->seen[bit / 8] |= m;
    return CCS_OK;
}

void store_counts_committed(const ccs_store *st, store_counts *out)
{
    const store_counts *b = &st->base, *c = &st->committed;
    out->done = b->done + c->done;
    out->rows = b->rows + c->rows;
    out->ok = b->ok + c->ok;
    out->invalid = b->invalid + c->invalid;
    out->oom = b->oom + c->oom;
    out->filtered = out->done > out->rows ? out->done - out->rows : 0;
}

int store_disk_full(const ccs_store *st)
{
    return st->full;
}

/* Bind the result_rows columns of rec to q's parameters from i on. */
static void bind_row(ccs_store *st, sqlite3_stmt *q, int i, const ccs_record *rec)
{
    const ccs_scenario *s = &rec->s;
    const ccs_result *r = &rec->r;
    sqlite3_bind_int64(q, i++, rid_of(st->run_id, s->idx));
    sqlite3_bind_int64(q, i++, (int64_t)s->key);
    sqlite3_bind_int64(q, i++, (int64_t)r->reason << 2 | r->status);

    char name[256];
    if (grid_format_name(st->g, rec, name, sizeof name))
        sqlite3_bind_text(q, i++, name, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(q, i++);
    if (r->status == CCS_ST_INVALID) {
        /* no timeline for invalid plans: NULLs keep aggregates honest */
        for (int k = 0; k <= CCS_N_OUTPUTS - CCS_N_DERIVED; k++)
            sqlite3_bind_null(q, i++);
        return;
    }
    sqlite3_bind_int(q, i++, r->micro_batches);
    for (int k = 0; k < CCS_N_OUTPUTS; k++) {
        int how = ccs_outputs[k].store;
        if (how == CCS_OUT_DERIVED)
            continue; /* the view computes it */
        double v = ccs_output_of(r, k);
        if (how == CCS_OUT_UNLESS_T_ITER && !memcmp(&v, &r->t_iter, sizeof v))
            sqlite3_bind_null(q, i++); /* no band: the view gives t_iter */
        else
            sqlite3_bind_double(q, i++, v);
    }
}

/* Insert the rows put since the last flush: ROWS_PER_INSERT of them in one
 * statement, fewer one by one (at a commit or a drop). */
static int flush_rows(ccs_store *st, ccs_err *err)
{
    int n = st->n_pend;
    st->n_pend = 0;
    if (n == ROWS_PER_INSERT) {
        for (int k = 0; k < n; k++)
            bind_row(st, st->ins_many, 1 + k * N_RESULT_COLS, &st->pend[k]);
        return write_step(st, st->ins_many, err, "inserting results");
    }
    for (int k = 0; k < n; k++) {
        bind_row(st, st->ins, 1, &st->pend[k]);
        if (write_step(st, st->ins, err, "inserting a result"))
            return CCS_EIO;
    }
    return CCS_OK;
}

int store_put(ccs_store *st, const ccs_record *rec, const ccs_region_time *rg, ccs_err *err)
{
    if (begin(st, err))
        return CCS_EIO;
    const ccs_scenario *s = &rec->s;
    const ccs_result *r = &rec->r;
    if (put_plan(st, s, err))
        return CCS_EIO;
    st->pend[st->n_pend++] = *rec;
    if (st->n_pend == ROWS_PER_INSERT && flush_rows(st, err))
        return CCS_EIO;
    st->tx.rows++;
    st->tx.ok += r->status == CCS_ST_OK;
    st->tx.invalid += r->status == CCS_ST_INVALID;
    st->tx.oom += r->status != CCS_ST_OK && r->status != CCS_ST_INVALID;
    if (st->detail && rg && r->status != CCS_ST_INVALID) {
        sqlite3_stmt *q = st->ins_rg;
        int64_t present = 0;
        sqlite3_bind_int64(q, 1, rid_of(st->run_id, s->idx));
        for (int k = 0; k < CCS_RG_N; k++) {
            const double v[REGION_FIELDS] = {rg[k].time, rg[k].count, rg[k].flops, rg[k].bytes};
            int stored = rg[k].time > 0; /* an empty region has no row in the view */
            present |= (int64_t)stored << k;
            for (int f = 0; f < REGION_FIELDS; f++) {
                int i = 3 + REGION_FIELDS * k + f;
                if (stored)
                    sqlite3_bind_double(q, i, v[f]);
                else
                    sqlite3_bind_null(q, i);
            }
        }
        sqlite3_bind_int64(q, 2, present);
        if (write_step(st, q, err, "inserting regions"))
            return CCS_EIO;
    }
    if (++st->tx_rows >= CCS_STORE_BATCH)
        return store_commit(st, err);
    return CCS_OK;
}

int store_drop(ccs_store *st, int64_t idx, int status, ccs_err *err)
{
    if (begin(st, err) || flush_rows(st, err)) /* the row may be among the pending ones */
        return CCS_EIO;
    if (!st->del_row &&
        (sqlite3_prepare_v2(st->db, "DELETE FROM result_rows WHERE rid = ?", -1, &st->del_row,
                            NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(st->db, "DELETE FROM region_rows WHERE rid = ?", -1, &st->del_rg,
                            NULL) != SQLITE_OK))
        return fail_db(st, err, "preparing to drop rows");
    sqlite3_bind_int64(st->del_row, 1, rid_of(st->run_id, idx));
    if (write_step(st, st->del_row, err, "dropping a row"))
        return CCS_EIO;
    sqlite3_bind_int64(st->del_rg, 1, rid_of(st->run_id, idx));
    if (write_step(st, st->del_rg, err, "dropping a row"))
        return CCS_EIO;
    st->tx.rows--;
    st->tx.ok -= status == CCS_ST_OK;
    st->tx.invalid -= status == CCS_ST_INVALID;
    st->tx.oom -= status != CCS_ST_OK && status != CCS_ST_INVALID;
    return CCS_OK;
}

int store_each_row(ccs_store *st, int (*cb)(int64_t idx, void *ctx), void *ctx, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "SELECT rid FROM result_rows WHERE rid >= ? AND rid < ?", -1, &s,
                           NULL) != SQLITE_OK)
        return fail_db(st, err, "reading the run's rows");
    sqlite3_bind_int64(s, 1, rid_of(st->run_id, 0));
    sqlite3_bind_int64(s, 2, rid_of(st->run_id + 1, 0));
    int rc = 0;
    while (!rc && sqlite3_step(s) == SQLITE_ROW)
        rc = cb(sqlite3_column_int64(s, 0) & ((INT64_C(1) << RID_BITS) - 1), ctx);
    sqlite3_finalize(s);
    return rc;
}

int store_chunk_done(ccs_store *st, int64_t lo, int64_t hi, ccs_err *err)
{
    if (begin(st, err))
        return CCS_EIO;
    sqlite3_bind_int64(st->ins_chunk, 1, st->run_id);
    sqlite3_bind_int64(st->ins_chunk, 2, lo);
    sqlite3_bind_int64(st->ins_chunk, 3, hi);
    if (write_step(st, st->ins_chunk, err, "recording a chunk"))
        return CCS_EIO;
    st->tx_done += hi - lo;
    return CCS_OK;
}

/* ---- keep.aggregate ------------------------------------------------------------ */

/* One field of a group's aggregates, replacing what the file held. */
static const char *const keep_put_sql =
    "INSERT OR REPLACE INTO main.keep_groups (run_id, gkey, field, g0, g1, g2, g3, g4, g5, g6, "
    "g7, scenarios, n, min, max, sum, sum_exact) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

/* A readable group value: model and hardware by name, whole numbers as
 * integers (as the results columns hold them), others as reals. */
static void bind_axis(ccs_store *st, sqlite3_stmt *q, int i, int id, double v)
{
    const ccs_spec *sp = grid_spec(st->g);
    if (id == SPEC_PER_MODEL)
        sqlite3_bind_text(q, i, spec_model(sp, (size_t)v)->name, -1, SQLITE_STATIC);
    else if (id == SPEC_PER_HW)
        sqlite3_bind_text(q, i, spec_hw(sp, (size_t)v)->name, -1, SQLITE_STATIC);
    else if (v == floor(v) && fabs(v) < 0x1p53)
        sqlite3_bind_int64(q, i, (int64_t)v);
    else
        sqlite3_bind_double(q, i, v);
}

/* Bind a field's aggregates from i on: n, min, max, sum, sum_exact. */
static void bind_stat(sqlite3_stmt *q, int i, const keep_stat *f)
{
    unsigned char enc[XSUM_ENCODED_MAX];
    size_t len = xsum_encode(&f->sum, enc);
    sqlite3_bind_int64(q, i, f->n);
    if (f->n) {
        sqlite3_bind_double(q, i + 1, f->min);
        sqlite3_bind_double(q, i + 2, f->max);
        sqlite3_bind_double(q, i + 3, xsum_value(&f->sum));
    } else {
        for (int k = 1; k <= 3; k++)
            sqlite3_bind_null(q, i + k);
    }
    sqlite3_bind_blob(q, i + 4, enc, (int)len, SQLITE_TRANSIENT);
}

int store_keep_group(ccs_store *st, const double *key, int64_t scenarios, const keep_stat *stats,
                     ccs_err *err)
{
    const spec_keep *rule = spec_keep_rule(grid_spec(st->g));
    if (begin(st, err))
        return CCS_EIO;
    if (!st->put_group &&
        sqlite3_prepare_v2(st->db, keep_put_sql, -1, &st->put_group, NULL) != SQLITE_OK)
        return fail_db(st, err, "preparing to store the keep aggregates");
    unsigned char gkey[8 * SPEC_KEEP_PER_MAX];
    for (int i = 0; i < rule->n_per; i++) {
        uint64_t w;
        memcpy(&w, &key[i], sizeof w);
        ccs_put_le64(gkey + 8 * i, w);
    }
    sqlite3_stmt *q = st->put_group;
    for (int f = 0; f < rule->n_agg; f++) {
        sqlite3_bind_int64(q, 1, st->run_id);
        sqlite3_bind_blob(q, 2, gkey, 8 * rule->n_per, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, expr_field_name(rule->agg[f]), -1, SQLITE_STATIC);
        for (int i = 0; i < SPEC_KEEP_PER_MAX; i++) {
            if (i < rule->n_per)
                bind_axis(st, q, 4 + i, rule->per[i], key[i]);
            else
                sqlite3_bind_null(q, 4 + i);
        }
        sqlite3_bind_int64(q, 12, scenarios);
        bind_stat(q, 13, &stats[f]);
        if (write_step(st, q, err, "storing the keep aggregates"))
            return CCS_EIO;
    }
    return CCS_OK;
}

/* A stored field's aggregates from column i on (n, min, max, sum_exact);
 * -1 when sum_exact is not an exact sum. */
static int read_stat(sqlite3_stmt *s, int i, keep_stat *f)
{
    keep_stat_zero(f);
    f->n = sqlite3_column_int64(s, i);
    if (f->n) {
        f->min = sqlite3_column_double(s, i + 1);
        f->max = sqlite3_column_double(s, i + 2);
    }
    const unsigned char *b = sqlite3_column_blob(s, i + 3);
    size_t n = (size_t)sqlite3_column_bytes(s, i + 3);
    return b && xsum_decode(&f->sum, b, n) == n ? 0 : -1;
}

int store_each_keep_group(ccs_store *st,
                          int (*cb)(const double *key, int64_t scenarios, const keep_stat *stats,
                                    void *ctx),
                          void *ctx, ccs_err *err)
{
    const spec_keep *rule = spec_keep_rule(grid_spec(st->g));
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT gkey, field, scenarios, n, min, max, sum_exact FROM "
                           "keep_groups WHERE run_id = ? ORDER BY gkey",
                           -1, &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "reading the keep aggregates");
    sqlite3_bind_int64(s, 1, st->run_id);
    keep_stat stats[SPEC_KEEP_AGG_MAX];
    double key[SPEC_KEEP_PER_MAX] = {0};
    int64_t scenarios = 0;
    int have = 0, rc = CCS_OK; /* bit f: field f of the group in key was read */
    size_t klen = 8 * (size_t)rule->n_per;
    while (rc == CCS_OK) {
        int r = sqlite3_step(s), row = r == SQLITE_ROW;
        if (!row && r != SQLITE_DONE) {
            rc = fail_db(st, err, "reading the keep aggregates");
            break;
        }
        double k[SPEC_KEEP_PER_MAX] = {0};
        if (row && (size_t)sqlite3_column_bytes(s, 0) != klen) {
            ccs_err_set(err, "%s: run %lld: a keep_groups key of %d bytes, expected %zu",
                        st->path, (long long)st->run_id, sqlite3_column_bytes(s, 0), klen);
            rc = CCS_EIO;
            break;
        }
        const unsigned char *gk = row ? sqlite3_column_blob(s, 0) : NULL;
        for (int i = 0; gk && i < rule->n_per; i++) {
            uint64_t w = ccs_get_le64(gk + 8 * i);
            memcpy(&k[i], &w, sizeof w);
        }
        if (have && (!row || memcmp(k, key, klen))) { /* the group in key is complete */
            if (have != (1 << rule->n_agg) - 1) {
                ccs_err_set(err, "%s: run %lld: keep_groups lacks fields of a group", st->path,
                            (long long)st->run_id);
                rc = CCS_EIO;
                break;
            }
            if ((rc = cb(key, scenarios, stats, ctx)))
                break;
            have = 0;
        }
        if (!row)
            break;
        memcpy(key, k, sizeof key);
        const char *field = (const char *)sqlite3_column_text(s, 1);
        int f = 0;
        while (f < rule->n_agg && (!field || strcmp(field, expr_field_name(rule->agg[f]))))
            f++;
        if (f == rule->n_agg || read_stat(s, 3, &stats[f])) {
            ccs_err_set(err, "%s: run %lld: keep_groups holds a field '%s' or an exact sum "
                             "that keep.aggregate of the spec does not give",
                        st->path, (long long)st->run_id, field ? field : "?");
            rc = CCS_EIO;
            break;
        }
        scenarios = sqlite3_column_int64(s, 2);
        have |= 1 << f;
    }
    sqlite3_finalize(s);
    return rc;
}

int store_commit(ccs_store *st, ccs_err *err)
{
    if (!st->in_tx)
        return CCS_OK;
    if (flush_rows(st, err))
        return CCS_EIO;
    char now[32];
    now_iso(now, sizeof now);
    sqlite3_bind_int64(st->upd_run, 1, st->tx_done);
    sqlite3_bind_text(st->upd_run, 2, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st->upd_run, 3, st->tx.rows);
    sqlite3_bind_int64(st->upd_run, 4, st->tx.ok);
    sqlite3_bind_int64(st->upd_run, 5, st->tx.invalid);
    sqlite3_bind_int64(st->upd_run, 6, st->tx.oom);
    sqlite3_bind_int64(st->upd_run, 7, st->run_id);
    if (write_step(st, st->upd_run, err, "updating the run"))
        return CCS_EIO;
    if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return write_failed(st, err, "committing a batch");
    st->committed.done += st->tx_done;
    st->committed.rows += st->tx.rows;
    st->committed.ok += st->tx.ok;
    st->committed.invalid += st->tx.invalid;
    st->committed.oom += st->tx.oom;
    st->in_tx = 0;
    st->tx_rows = st->tx_done = 0;
    memset(&st->tx, 0, sizeof st->tx);
    return CCS_OK;
}

int store_finish(ccs_store *st, int status, store_counts *out, ccs_err *err)
{
    if (store_commit(st, err))
        return CCS_EIO;
    char now[32], sql[512];
    now_iso(now, sizeof now);
    if (exec(st, "BEGIN IMMEDIATE", err))
        return CCS_EIO;
    /* Rows of chunks cut short are dropped now rather than at resume, so the
     * counts of an interrupted run describe exactly its completed chunks. */
    st->n_todo = 0;
    store_counts c;
    if ((status != STORE_COMPLETE && compute_todo(st, err)) || count_rows(st, &c, err))
        goto fail;
    /* A complete run needs one chunk row: collapse the list. */
    if (status == STORE_COMPLETE && c.done == grid_count(st->g)) {
        snprintf(sql, sizeof sql,
                 "DELETE FROM chunks WHERE run_id = %lld; INSERT INTO chunks "
                 "VALUES (%lld, 0, %lld);",
                 (long long)st->run_id, (long long)st->run_id, (long long)grid_count(st->g));
        if (exec(st, sql, err))
            goto fail;
    } else if (status == STORE_COMPLETE) {
        status = STORE_FAILED; /* should not happen: not every index was stored */
    }
    snprintf(sql, sizeof sql,
             "UPDATE runs SET status = '%s', ended = '%s', updated = '%s', n_rows = %lld, "
             "n_ok = %lld, n_invalid = %lld, n_oom = %lld, n_filtered = %lld WHERE run_id = "
             "%lld; UPDATE sessions SET ended = '%s', status = '%s' WHERE run_id = %lld AND "
             "session = %lld; DELETE FROM writer WHERE pid = %lld;",
             status_names[status], now, now, (long long)c.rows, (long long)c.ok,
             (long long)c.invalid, (long long)c.oom, (long long)c.filtered, (long long)st->run_id,
             now, status_names[status], (long long)st->run_id, (long long)st->session,
             (long long)getpid());
    if (exec(st, sql, err))
        goto fail;
    if (exec(st, "COMMIT", err))
        goto fail;
    st->locked = 0;
    if (out)
        *out = c;
    return CCS_OK;
fail:
    exec(st, "ROLLBACK", NULL);
    return CCS_EIO;
}

/* ---- shards ------------------------------------------------------------------- */

int store_shard_path(char *out, size_t n, const char *dir, const char *db, int64_t run_id, int w)
{
    const char *slash = strrchr(db, '/');
    const char *base = slash ? slash + 1 : db;
    int k;
    if (dir)
        k = snprintf(out, n, "%s/%s.run%lld.w%d.shard", dir, base, (long long)run_id, w);
    else
        k = snprintf(out, n, "%.*s%s.run%lld.w%d.shard", slash ? (int)(slash - db + 1) : 0, db,
                     base, (long long)run_id, w);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

int store_seal(ccs_store *st, ccs_err *err)
{
    if (store_commit(st, err))
        return CCS_EIO;
    return exec(st, "PRAGMA journal_mode = DELETE", err);
}

void store_remove_file(const char *path)
{
    char side[PATH_MAX + 8];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* The quoted names of table's columns in schema (main or shard), in order,
 * comma-separated: a new string, or NULL. */
static char *table_cols(ccs_store *st, const char *schema, const char *table)
{
    sqlite3_stmt *s;
    char *cols = NULL;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT group_concat('\"' || name || '\"', ',') FROM "
                           "pragma_table_info(?1, ?2)",
                           -1, &s, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, schema, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        if ((cols = malloc(strlen(v) + 1)))
            strcpy(cols, v);
    }
    sqlite3_finalize(s);
    return cols;
}

enum { COPY_CONFLICT = 1 };

/* Copy the shard's rows of table into this file. fast: when the shard's
 * columns are this file's, in the same order, a plain INSERT ... SELECT *,
 * which SQLite copies record by record without decoding them (its transfer
 * optimisation); it fails with COPY_CONFLICT (statement undone) when a row is
 * there already. Otherwise INSERT OR IGNORE by column name, so that whatever
 * columns the schema has are carried without a change here. */
static int copy_table(ccs_store *st, const char *table, int fast, ccs_err *err)
{
    char *cols = table_cols(st, "main", table), *theirs = table_cols(st, "shard", table);
    int rc = CCS_OK;
    if (!cols || !theirs) {
        rc = fail_db(st, err, "reading the columns to merge");
    } else {
        size_t n = 2 * strlen(cols) + 2 * strlen(table) + 96;
        char *sql = malloc(n);
        if (!sql) {
            ccs_err_set(err, "out of memory");
            rc = CCS_ENOMEM;
        } else {
            if (fast && !strcmp(cols, theirs))
                snprintf(sql, n, "INSERT INTO main.%s SELECT * FROM shard.%s", table, table);
            else
                snprintf(sql, n, "INSERT OR IGNORE INTO main.%s (%s) SELECT %s FROM shard.%s",
                         table, cols, cols, table);
            if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
                rc = sqlite3_errcode(st->db) == SQLITE_CONSTRAINT && fast
                         ? COPY_CONFLICT
                         : fail_db(st, err, "merging a shard");
            free(sql);
        }
    }
    free(cols);
    free(theirs);
    return rc;
}

/* Add what schema holds of the run (the shard's rows) to the run's counts,
 * or with set make them what this file holds. */
static int merge_counts(ccs_store *st, const char *schema, int set, ccs_err *err)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT sr & 3, count(*) FROM %s.result_rows WHERE rid >= %lld AND rid < %lld "
             "GROUP BY 1",
             schema, (long long)rid_of(st->run_id, 0), (long long)rid_of(st->run_id + 1, 0));
    sqlite3_stmt *s;
    int64_t n[3] = {0, 0, 0};
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "counting merged rows");
    while (sqlite3_step(s) == SQLITE_ROW) {
        int k = sqlite3_column_int(s, 0);
        if (k >= 0 && k < 3)
            n[k] = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    snprintf(sql, sizeof sql, "SELECT coalesce(sum(hi - lo), 0) FROM %s.chunks WHERE run_id = %lld",
             schema, (long long)st->run_id);
    int64_t done = query_int(st, sql, 0);
    const char *base = set ? "0" : "";
    char now[32];
    now_iso(now, sizeof now);
    snprintf(sql, sizeof sql,
             "UPDATE main.runs SET updated = '%s', n_done = %s%s + %lld, n_rows = %s%s + %lld, "
             "n_ok = %s%s + %lld, n_invalid = %s%s + %lld, n_oom = %s%s + %lld WHERE run_id = %lld",
             now, base, set ? "" : "n_done", (long long)done, base, set ? "" : "n_rows",
             (long long)(n[0] + n[1] + n[2]), base, set ? "" : "n_ok", (long long)n[CCS_ST_OK],
             base, set ? "" : "n_invalid", (long long)n[CCS_ST_INVALID], base,
             set ? "" : "n_oom", (long long)n[CCS_ST_OOM], (long long)st->run_id);
    return exec(st, sql, err);
}

/* Is the attached shard a part of this run? NULL when it is, else why not. */
static const char *shard_mismatch(ccs_store *st)
{
    if (query_int(st, "PRAGMA shard.application_id", -1) != CCS_APP_ID)
        return "not a ccsweep database";
    if (query_int(st, "PRAGMA shard.user_version", -1) != CCS_STORE_SCHEMA)
        return "another schema version";
    sqlite3_stmt *s;
    const char *why = "it holds no row of this run";
    if (sqlite3_prepare_v2(st->db,
                           "SELECT s.spec_sha256 = m.spec_sha256, s.started = m.started FROM "
                           "shard.runs s JOIN main.runs m ON m.run_id = s.run_id WHERE "
                           "s.run_id = ?",
                           -1, &s, NULL) != SQLITE_OK)
        return "it cannot be read";
    sqlite3_bind_int64(s, 1, st->run_id);
    if (query_int(st, "SELECT count(*) FROM shard.runs", -1) != 1)
        why = "it holds no run, or several";
    else if (sqlite3_step(s) == SQLITE_ROW)
        why = !sqlite3_column_int(s, 0)   ? "its run has another spec"
              : !sqlite3_column_int(s, 1) ? "its run has another start time (an earlier file of "
                                            "the same name)"
                                          : NULL;
    sqlite3_finalize(s);
    if (why)
        return why;
    /* the same catalog entries and profiles: then its rows are the ones a
     * recomputation would give, whichever session wrote them */
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM (SELECT kind, name, sha256 FROM shard.run_inputs "
             "WHERE run_id = %lld EXCEPT SELECT kind, name, sha256 FROM main.run_inputs WHERE "
             "run_id = %lld)) + abs((SELECT count(*) FROM main.run_inputs WHERE run_id = %lld) - "
             "(SELECT count(*) FROM shard.run_inputs WHERE run_id = %lld))",
             (long long)st->run_id, (long long)st->run_id, (long long)st->run_id,
             (long long)st->run_id);
    return query_int(st, sql, -1) != 0 ? "its run read other catalog entries or profiles" : NULL;
}

/* Add the shard's keep aggregates to this file's, group and field by field
 * (exact sums: the result does not depend on the order of the shards). */
static int merge_keep_groups(ccs_store *st, ccs_err *err)
{
    static const char *const sel =
        "SELECT s.gkey, s.field, s.g0, s.g1, s.g2, s.g3, s.g4, s.g5, s.g6, s.g7, "
        "s.scenarios + coalesce(m.scenarios, 0), s.n, s.min, s.max, s.sum_exact, m.n, m.min, "
        "m.max, m.sum_exact FROM shard.keep_groups s LEFT JOIN main.keep_groups m ON m.run_id = "
        "s.run_id AND m.gkey = s.gkey AND m.field = s.field WHERE s.run_id = ?";
    sqlite3_stmt *s = NULL, *q = NULL;
    if (sqlite3_prepare_v2(st->db, sel, -1, &s, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, keep_put_sql, -1, &q, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return fail_db(st, err, "merging the keep aggregates");
    }
    sqlite3_bind_int64(s, 1, st->run_id);
    int rc = CCS_OK, r;
    while (rc == CCS_OK && (r = sqlite3_step(s)) == SQLITE_ROW) {
        keep_stat a, b;
        if (read_stat(s, 11, &a) || (sqlite3_column_type(s, 18) != SQLITE_NULL &&
                                     read_stat(s, 15, &b))) {
            ccs_err_set(err, "%s: a keep_groups row of the shard has a damaged exact sum",
                        st->path);
            rc = CCS_EIO;
            break;
        }
        if (sqlite3_column_type(s, 18) != SQLITE_NULL)
            keep_stat_merge(&a, &b);
        sqlite3_bind_int64(q, 1, st->run_id);
        for (int i = 0; i < 10; i++)
            sqlite3_bind_value(q, 2 + i, sqlite3_column_value(s, i));
        sqlite3_bind_int64(q, 12, sqlite3_column_int64(s, 10));
        bind_stat(q, 13, &a);
        rc = step_done(st, q, err, "merging the keep aggregates");
    }
    if (rc == CCS_OK && r != SQLITE_DONE)
        rc = fail_db(st, err, "merging the keep aggregates");
    sqlite3_finalize(s);
    sqlite3_finalize(q);
    return rc;
}

int store_merge_shard(ccs_store *st, const char *path, ccs_err *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db, "ATTACH ? AS shard", -1, &s, NULL) != SQLITE_OK)
        return fail_db(st, err, "attaching a shard");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    if (r != SQLITE_DONE) {
        ccs_err_set(err, "%s: cannot attach the shard %s: %s", st->path, path,
                    sqlite3_errmsg(st->db));
        return CCS_EIO;
    }
    const char *why = shard_mismatch(st);
    int rc = CCS_OK;
    if (why) {
        ccs_err_set(err, "%s: not a shard of run %lld of %s: %s", path, (long long)st->run_id,
                    st->path, why);
        rc = STORE_STALE_SHARD;
    }
    /* Rows, regions and chunk records are the shard's own (one per index, its
     * writer had the only copy) unless an earlier merge of this shard
     * committed but the shard outlived it: then everything is copied again
     * with OR IGNORE and the counts are recounted. Plans are shared by the
     * writers: always OR IGNORE. */
    static const char *const own[] = {"result_rows", "region_rows", "chunks"};
    int again = 0;
    if (rc == CCS_OK)
        rc = exec(st, "BEGIN IMMEDIATE", err);
    if (rc == CCS_OK)
        rc = exec(st, "SAVEPOINT fast", err);
    for (int i = 0; rc == CCS_OK && i < 3; i++)
        rc = copy_table(st, own[i], 1, err);
    if (rc == COPY_CONFLICT) {
        again = 1;
        rc = exec(st, "ROLLBACK TO fast", err);
        for (int i = 0; rc == CCS_OK && i < 3; i++)
            rc = copy_table(st, own[i], 0, err);
    }
    if (rc == CCS_OK)
        rc = copy_table(st, "plans", 0, err);
    if (rc == CCS_OK)
        rc = copy_table(st, "keep_axes", 0, err);
    /* aggregates add up: merged again, they would count twice */
    if (rc == CCS_OK && !again)
        rc = merge_keep_groups(st, err);
    if (rc == CCS_OK)
        rc = again ? merge_counts(st, "main", 1, err) : merge_counts(st, "shard", 0, err);
    if (rc == CCS_OK)
        rc = exec(st, "RELEASE fast", err);
    if (rc == CCS_OK)
        rc = exec(st, "COMMIT", err);
    if (rc != CCS_OK && rc != STORE_STALE_SHARD && !sqlite3_get_autocommit(st->db))
        exec(st, "ROLLBACK", NULL);
    exec(st, "DETACH shard", NULL);
    return rc;
}

/* 1 when name is BASE.runR.wW.shard for this database and run. */
static int is_shard_name(const char *name, const char *base, int64_t run_id)
{
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s.run%lld.w", base, (long long)run_id);
    size_t np = strlen(prefix), n = strlen(name);
    if (n <= np + 6 || strncmp(name, prefix, np) || strcmp(name + n - 6, ".shard"))
        return 0;
    for (size_t i = np; i < n - 6; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

/* Shard paths of one directory, database and run, in writer order: the
 * names differ only in the writer number, so a shorter one is a smaller one. */
static int by_writer(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t nx = strlen(x), ny = strlen(y);
    return nx != ny ? (nx < ny ? -1 : 1) : strcmp(x, y);
}

/* Test hook: CCSWEEP_TEST_KILL_AFTER_MERGE=N kills this process with SIGKILL
 * right after the N-th shard's merge has committed, before the shard is
 * removed: the half-merged state that a resume must finish. */
static void kill_after_merge(int merged)
{
    const char *v = getenv("CCSWEEP_TEST_KILL_AFTER_MERGE");
    if (v && *v && atoi(v) == merged)
        raise(SIGKILL);
}

int store_absorb_shards(ccs_store *st, const char *dir, const char *db, FILE *log, int *n,
                        ccs_err *err)
{
    char d[PATH_MAX];
    const char *slash = strrchr(db, '/');
    const char *base = slash ? slash + 1 : db;
    if (dir)
        ccs_strlcpy(d, dir, sizeof d);
    else
        snprintf(d, sizeof d, "%.*s", slash ? (int)(slash - db) + (slash == db) : 1,
                 slash ? db : ".");
    *n = 0;
    DIR *dp = opendir(d);
    if (!dp) {
        if (errno == ENOENT)
            return CCS_OK;
        ccs_err_set(err, "%s: cannot read the shard directory: %s", d, strerror(errno));
        return CCS_EIO;
    }
    /* names first: the directory changes while shards are removed */
    char **names = NULL;
    size_t k = 0, cap = 0;
    struct dirent *e;
    int rc = CCS_OK;
    while (rc == CCS_OK && (e = readdir(dp))) {
        if (!is_shard_name(e->d_name, base, st->run_id))
            continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 8;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                rc = CCS_ENOMEM;
                break;
            }
            names = nn;
        }
        if (!(names[k] = malloc(strlen(d) + strlen(e->d_name) + 2)))
            rc = CCS_ENOMEM;
        else
            sprintf(names[k++], "%s/%s", d, e->d_name);
    }
    closedir(dp);
    if (rc == CCS_ENOMEM)
        ccs_err_set(err, "out of memory");
    else if (k > 1)
        qsort(names, k, sizeof *names, by_writer); /* each merge appends to the previous */
    for (size_t i = 0; rc == CCS_OK && i < k; i++) {
        if (log)
            fprintf(log, "ccsweep: merging shard %s into %s\n", names[i], st->path);
        ccs_err why;
        int r = store_merge_shard(st, names[i], &why);
        if (r == STORE_STALE_SHARD) {
            fprintf(stderr, "ccsweep: %s; removed\n", why.msg);
        } else if (r != CCS_OK) {
            *err = why;
            rc = r;
            break;
        } else {
            kill_after_merge(++*n);
        }
        store_remove_file(names[i]);
    }
    for (size_t i = 0; i < k; i++)
        free(names[i]);
    free(names);
    if (rc != CCS_OK || k == 0)
        return rc;
    /* rows of chunks cut short in a shard are removed as they are in the file */
    if (exec(st, "BEGIN IMMEDIATE", err))
        return CCS_EIO;
    st->n_todo = 0;
    if (compute_todo(st, err) || count_rows(st, &st->base, err)) {
        exec(st, "ROLLBACK", NULL);
        return CCS_EIO;
    }
    memset(&st->committed, 0, sizeof st->committed);
    return exec(st, "COMMIT", err);
}
