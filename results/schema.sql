-- results/schema.sql - the schema of a new ccsweep database, as
-- 'sqlite3 DB .schema' prints it (generated from the code; do not edit).
-- PRAGMA user_version = 12, application_id = 1667462007
-- tests/integration/schema.sh fails when this file differs from what the
-- code creates; regenerate it with: sh tests/integration/schema.sh --update
-- Columns, units and views are described in results/README.md.
CREATE TABLE runs (
  run_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,             -- the spec's name
  spec_path TEXT NOT NULL,
  spec_text TEXT NOT NULL,        -- the spec file as read
  spec_sha256 TEXT NOT NULL,      -- of spec_text; --resume matches it
  version TEXT NOT NULL,          -- ccsweep version
  git_rev TEXT,                   -- git describe of the build
  host TEXT, ranks INTEGER,
  slurm_job_id TEXT, slurm_nodelist TEXT, slurm_restart_count INTEGER,
  argv TEXT,
  evolution TEXT, where_expr TEXT, name_template TEXT, detail INTEGER NOT NULL,
  started TEXT NOT NULL, updated TEXT, ended TEXT,  -- UTC, ISO 8601
  status TEXT NOT NULL CHECK (status IN ('running','complete','interrupted','failed')),
  total INTEGER NOT NULL,         -- scenarios in the grid
  n_done INTEGER NOT NULL DEFAULT 0,  -- evaluated and committed
  n_rows INTEGER NOT NULL DEFAULT 0, n_ok INTEGER NOT NULL DEFAULT 0,
  n_invalid INTEGER NOT NULL DEFAULT 0, n_oom INTEGER NOT NULL DEFAULT 0,
  n_filtered INTEGER,  -- committed counts; n_filtered = n_done - n_rows at the end
  sessions INTEGER NOT NULL DEFAULT 1,
  plan_n INTEGER NOT NULL DEFAULT 1  -- idx = cell * plan_n + plan_i (table cells)
, workload TEXT);
CREATE TABLE sessions (
  run_id INTEGER NOT NULL REFERENCES runs, session INTEGER NOT NULL,
  host TEXT, ranks INTEGER, slurm_job_id TEXT, slurm_nodelist TEXT,
  slurm_restart_count INTEGER, argv TEXT, started TEXT NOT NULL, ended TEXT, status TEXT,
  PRIMARY KEY (run_id, session)
);
CREATE TABLE models (
  model_id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs,
  name TEXT NOT NULL, layers INTEGER, hidden INTEGER, heads INTEGER, kv_heads INTEGER,
  ffn INTEGER, vocab INTEGER, max_pos INTEGER, seq INTEGER, gbs INTEGER,
  gated INTEGER, bias INTEGER, tied INTEGER, params REAL, experts INTEGER, top_k INTEGER, shared_experts INTEGER, moe_ffn INTEGER,
  UNIQUE (run_id, name)
);
CREATE TABLE hardware (  -- one row per derived generation; SI units
  hw_id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs,
  name TEXT NOT NULL, generation INTEGER NOT NULL, evolution TEXT,
  devices_per_node INTEGER, compute_units INTEGER,
  peak_fp32 REAL, peak_tf32 REAL, peak_bf16 REAL, peak_fp16 REAL, peak_fp8 REAL,
  mem_cap REAL, mem_bw REAL, intra_bw REAL, inter_bw REAL,
  intra_lat REAL, inter_lat REAL, kernel_lat REAL,
  gemm_eff REAL, mem_eff REAL, intra_eff REAL, inter_eff REAL, variability REAL,
  calibration TEXT,
  UNIQUE (run_id, name, generation)
);
CREATE TABLE result_rows (
  rid INTEGER PRIMARY KEY,        -- run_id << 40 | idx
  key INTEGER NOT NULL, sr INTEGER NOT NULL, micro_batches INTEGER,
  t_iter REAL, t_iter_lo REAL, t_iter_hi REAL, extrap REAL,
  t_compute REAL, t_comm REAL, t_comm_exposed REAL, t_tp_comm REAL,
  t_tp_comm_exposed REAL, t_dp_comm REAL, t_dp_comm_exposed REAL, t_pp_comm REAL,
  t_bubble REAL, t_optimizer REAL, comm_fraction REAL, hidden_fraction REAL,
  mem_weights REAL, mem_grads REAL, mem_optimizer REAL, mem_activations REAL,
  mem_total REAL, model_flops REAL, hw_flops REAL, mfu REAL, tokens_per_s REAL,
  tp_bytes REAL, dp_bytes REAL, pp_bytes REAL, ccr REAL,
  name TEXT
, hfu REAL, t_cp_comm REAL, t_cp_comm_exposed REAL, cp_bytes REAL, t_ep_comm REAL, ep_bytes REAL);
CREATE TABLE cells (
  cid INTEGER PRIMARY KEY,        -- run_id << 40 | cell
  model_id INTEGER NOT NULL, hw_id INTEGER NOT NULL, z INTEGER NOT NULL
);
CREATE TABLE plans (  -- derived plans, written when first stored
  pid INTEGER PRIMARY KEY,        -- run_id << 40 | (z * plan_n + plan_i)
  devices INTEGER, tp INTEGER, pp INTEGER, dp INTEGER, vpp INTEGER, mbs INTEGER,
  gbs INTEGER, seq INTEGER, dtype INTEGER, sp INTEGER, zero INTEGER, recompute INTEGER,
  flash_attn INTEGER, tp_overlap INTEGER, dp_overlap INTEGER, innet_reduce INTEGER,
  comm_compress REAL, net_bw_factor REAL
, cp INTEGER NOT NULL DEFAULT 1, cp_comm INTEGER NOT NULL DEFAULT 0, ep INTEGER NOT NULL DEFAULT 1, capacity_factor REAL NOT NULL DEFAULT 0, pp_first_layers INTEGER NOT NULL DEFAULT 0, pp_last_layers INTEGER NOT NULL DEFAULT 0, stack TEXT);
CREATE TABLE chunks (  -- index ranges whose rows are all committed
  run_id INTEGER NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL,
  PRIMARY KEY (run_id, lo)
) WITHOUT ROWID;
CREATE TABLE writer (  -- the one process writing runs into this file, while it runs
  id INTEGER PRIMARY KEY CHECK (id = 1),
  host TEXT NOT NULL, pid INTEGER NOT NULL,
  pid_start INTEGER,               -- start time of pid (clock ticks after boot)
  started TEXT NOT NULL, run_id INTEGER
);
CREATE TABLE run_inputs (  -- content hash of every catalog entry and profile a run used
  run_id INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, sha256 TEXT NOT NULL,
  PRIMARY KEY (run_id, kind, name)
) WITHOUT ROWID;
CREATE TABLE statuses (status INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE reasons (reason INTEGER PRIMARY KEY, name TEXT NOT NULL, text TEXT);
CREATE TABLE dtypes (dtype INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE recompute_modes (recompute INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE region_names (region INTEGER PRIMARY KEY, name TEXT NOT NULL,
  kind TEXT NOT NULL);
CREATE VIEW result_codes AS
SELECT r.rid AS rid, r.rid >> 40 AS run_id, r.rid & 1099511627775 AS idx, r.key AS key,
  c.model_id AS model_id, c.hw_id AS hw_id,
  p.devices AS devices, p.tp AS tp, p.pp AS pp, p.dp AS dp, p.vpp AS vpp, p.mbs AS mbs,
  p.gbs AS gbs, p.seq AS seq, p.dtype AS dtype, p.sp AS sp, p.zero AS zero,
  p.recompute AS recompute, p.flash_attn AS flash_attn, p.tp_overlap AS tp_overlap,
  p.dp_overlap AS dp_overlap, p.innet_reduce AS innet_reduce,
  p.comm_compress AS comm_compress, p.net_bw_factor AS net_bw_factor,
  p.cp AS cp, p.cp_comm AS cp_comm, p.ep AS ep, p.capacity_factor AS capacity_factor,
  p.pp_first_layers AS pp_first_layers, p.pp_last_layers AS pp_last_layers,
  coalesce(p.stack, 'megatron-core') AS stack,
  r.sr & 3 AS status, r.sr >> 2 AS reason, r.micro_batches AS micro_batches,
  r.t_iter AS t_iter, coalesce(r.t_iter_lo, r.t_iter) AS t_iter_lo,
  coalesce(r.t_iter_hi, r.t_iter) AS t_iter_hi,
  r.extrap AS extrap, r.t_compute AS t_compute,
  coalesce(r.t_comm,
    r.t_tp_comm + r.t_cp_comm + r.t_ep_comm + r.t_dp_comm + r.t_pp_comm) AS t_comm,
  coalesce(r.t_comm_exposed, r.t_tp_comm_exposed + r.t_cp_comm_exposed + r.t_ep_comm
    + r.t_dp_comm_exposed + r.t_pp_comm) AS t_comm_exposed,
  r.t_tp_comm AS t_tp_comm,
  r.t_tp_comm_exposed AS t_tp_comm_exposed, r.t_dp_comm AS t_dp_comm,
  r.t_dp_comm_exposed AS t_dp_comm_exposed, r.t_pp_comm AS t_pp_comm,
  r.t_bubble AS t_bubble, r.t_optimizer AS t_optimizer,
  coalesce(r.comm_fraction, CASE WHEN r.t_iter > 0 THEN (r.t_tp_comm_exposed
    + r.t_cp_comm_exposed + r.t_ep_comm + r.t_dp_comm_exposed + r.t_pp_comm) / r.t_iter
    WHEN r.t_iter IS NOT NULL THEN 0.0 END) AS comm_fraction,
  coalesce(r.hidden_fraction, CASE WHEN r.t_dp_comm + r.t_tp_comm + r.t_cp_comm > 0
    THEN 1.0 - (r.t_dp_comm_exposed + r.t_tp_comm_exposed + r.t_cp_comm_exposed)
      / (r.t_dp_comm + r.t_tp_comm + r.t_cp_comm)
    WHEN r.t_iter IS NOT NULL THEN 0.0 END) AS hidden_fraction,
  r.mem_weights AS mem_weights, r.mem_grads AS mem_grads,
  r.mem_optimizer AS mem_optimizer, r.mem_activations AS mem_activations,
  r.mem_total AS mem_total, r.model_flops AS model_flops, r.hw_flops AS hw_flops,
  r.mfu AS mfu, coalesce(r.tokens_per_s, CASE WHEN r.t_iter > 0
    THEN CAST(p.gbs AS REAL) * p.seq / r.t_iter
    WHEN r.t_iter IS NOT NULL THEN 0.0 END) AS tokens_per_s, r.tp_bytes AS tp_bytes,
  r.dp_bytes AS dp_bytes, r.pp_bytes AS pp_bytes, r.ccr AS ccr, r.name AS name,
  r.hfu AS hfu, r.t_cp_comm AS t_cp_comm, r.t_cp_comm_exposed AS t_cp_comm_exposed,
  r.cp_bytes AS cp_bytes, r.t_ep_comm AS t_ep_comm, r.ep_bytes AS ep_bytes
FROM result_rows r
  JOIN runs u ON u.run_id = r.rid >> 40
  JOIN cells c ON c.cid = (u.run_id << 40) | ((r.rid & 1099511627775) / u.plan_n)
  JOIN plans p ON p.pid = (u.run_id << 40)
    | (c.z * u.plan_n + (r.rid & 1099511627775) % u.plan_n)
/* result_codes(rid,run_id,idx,"key",model_id,hw_id,devices,tp,pp,dp,vpp,mbs,gbs,seq,dtype,sp,zero,recompute,flash_attn,tp_overlap,dp_overlap,innet_reduce,comm_compress,net_bw_factor,cp,cp_comm,ep,capacity_factor,pp_first_layers,pp_last_layers,stack,status,reason,micro_batches,t_iter,t_iter_lo,t_iter_hi,extrap,t_compute,t_comm,t_comm_exposed,t_tp_comm,t_tp_comm_exposed,t_dp_comm,t_dp_comm_exposed,t_pp_comm,t_bubble,t_optimizer,comm_fraction,hidden_fraction,mem_weights,mem_grads,mem_optimizer,mem_activations,mem_total,model_flops,hw_flops,mfu,tokens_per_s,tp_bytes,dp_bytes,pp_bytes,ccr,name,hfu,t_cp_comm,t_cp_comm_exposed,cp_bytes,t_ep_comm,ep_bytes) */;
CREATE TRIGGER result_codes_delete INSTEAD OF DELETE ON result_codes BEGIN
  DELETE FROM result_rows WHERE rid = OLD.rid;
END;
CREATE VIEW results AS
SELECT r.run_id AS run_id, r.idx AS idx, r.key AS key, r.name AS scenario,
  m.name AS model, CAST(m.params AS INTEGER) AS params,
  h.name AS hardware, h.generation AS generation, h.evolution AS evolution,
  r.stack AS stack, r.devices AS devices, r.tp AS tp, r.pp AS pp, r.dp AS dp,
  r.vpp AS vpp, r.mbs AS mbs, r.gbs AS gbs, r.seq AS seq, dt.name AS dtype, r.sp AS sp,
  r.zero AS zero, rc.name AS recompute, r.flash_attn AS flash_attn,
  r.tp_overlap AS tp_overlap,
  CASE r.dp_overlap WHEN 0 THEN 'none' WHEN 1 THEN 'last-microbatch'
    WHEN 2 THEN 'bucketed' END AS dp_overlap,
  r.innet_reduce AS innet_reduce, r.comm_compress AS comm_compress,
  r.net_bw_factor AS net_bw_factor, r.cp AS cp,
  CASE r.cp_comm WHEN 1 THEN 'allgather' ELSE 'ring' END AS cp_comm, r.ep AS ep,
  r.capacity_factor AS capacity_factor, r.pp_first_layers AS pp_first_layers,
  r.pp_last_layers AS pp_last_layers,
  st.name AS status, rs.name AS reason, rs.text AS reason_text,
  CASE r.status WHEN 1 THEN NULL ELSE r.status = 0 END AS fits,
  r.micro_batches AS micro_batches, r.t_iter AS t_iter, r.t_iter_lo AS t_iter_lo,
  r.t_iter_hi AS t_iter_hi, r.extrap AS extrap, r.t_compute AS t_compute,
  r.t_comm AS t_comm, r.t_comm_exposed AS t_comm_exposed, r.t_tp_comm AS t_tp_comm,
  r.t_tp_comm_exposed AS t_tp_comm_exposed, r.t_dp_comm AS t_dp_comm,
  r.t_dp_comm_exposed AS t_dp_comm_exposed, r.t_pp_comm AS t_pp_comm,
  r.t_bubble AS t_bubble, r.t_optimizer AS t_optimizer,
  r.comm_fraction AS comm_fraction, r.hidden_fraction AS hidden_fraction,
  r.mem_weights AS mem_weights, r.mem_grads AS mem_grads,
  r.mem_optimizer AS mem_optimizer, r.mem_activations AS mem_activations,
  r.mem_total AS mem_total, h.mem_cap AS mem_cap, r.mem_total / h.mem_cap AS mem_frac,
  r.model_flops AS model_flops, r.hw_flops AS hw_flops, r.mfu AS mfu, r.hfu AS hfu,
  r.tokens_per_s AS tokens_per_s, r.tp_bytes AS tp_bytes, r.dp_bytes AS dp_bytes,
  r.pp_bytes AS pp_bytes, r.t_cp_comm AS t_cp_comm,
  r.t_cp_comm_exposed AS t_cp_comm_exposed, r.cp_bytes AS cp_bytes,
  r.t_ep_comm AS t_ep_comm, r.ep_bytes AS ep_bytes, r.ccr AS ccr,
  r.rid AS rid, r.model_id AS model_id, r.hw_id AS hw_id
FROM result_codes r
  JOIN models m ON m.model_id = r.model_id
  JOIN hardware h ON h.hw_id = r.hw_id
  LEFT JOIN dtypes dt ON dt.dtype = r.dtype
  LEFT JOIN recompute_modes rc ON rc.recompute = r.recompute
  LEFT JOIN statuses st ON st.status = r.status
  LEFT JOIN reasons rs ON rs.reason = r.reason
/* results(run_id,idx,"key",scenario,model,params,hardware,generation,evolution,stack,devices,tp,pp,dp,vpp,mbs,gbs,seq,dtype,sp,zero,recompute,flash_attn,tp_overlap,dp_overlap,innet_reduce,comm_compress,net_bw_factor,cp,cp_comm,ep,capacity_factor,pp_first_layers,pp_last_layers,status,reason,reason_text,fits,micro_batches,t_iter,t_iter_lo,t_iter_hi,extrap,t_compute,t_comm,t_comm_exposed,t_tp_comm,t_tp_comm_exposed,t_dp_comm,t_dp_comm_exposed,t_pp_comm,t_bubble,t_optimizer,comm_fraction,hidden_fraction,mem_weights,mem_grads,mem_optimizer,mem_activations,mem_total,mem_cap,mem_frac,model_flops,hw_flops,mfu,hfu,tokens_per_s,tp_bytes,dp_bytes,pp_bytes,t_cp_comm,t_cp_comm_exposed,cp_bytes,t_ep_comm,ep_bytes,ccr,rid,model_id,hw_id) */;
CREATE TRIGGER results_delete INSTEAD OF DELETE ON results BEGIN
  DELETE FROM result_rows WHERE rid = OLD.rid;
END;
CREATE VIEW results_view AS
SELECT r.run_id, r.idx, r.key, r.name AS scenario, m.name AS model, m.params,
  h.name AS hardware, h.generation, h.evolution,
  r.stack,
  r.devices, r.tp, r.pp, r.dp, r.vpp, r.mbs, r.gbs, r.seq, dt.name AS dtype, r.sp, r.zero,
  rc.name AS recompute, r.flash_attn, r.tp_overlap, r.dp_overlap, r.innet_reduce,
  r.comm_compress, r.net_bw_factor,
  r.cp, CASE r.cp_comm WHEN 1 THEN 'allgather' ELSE 'ring' END AS cp_comm, r.ep,
  r.capacity_factor, r.pp_first_layers, r.pp_last_layers,
  st.name AS status, rs.name AS reason, rs.text AS reason_text,
  CASE r.status WHEN 1 THEN NULL ELSE r.status = 0 END AS fits,
  r.micro_batches, r.t_iter, r.t_iter_lo, r.t_iter_hi, r.extrap,
  r.t_compute, r.t_comm, r.t_comm_exposed, r.t_tp_comm, r.t_tp_comm_exposed,
  r.t_dp_comm, r.t_dp_comm_exposed, r.t_pp_comm, r.t_bubble, r.t_optimizer,
  r.comm_fraction, r.hidden_fraction,
  r.mem_weights, r.mem_grads, r.mem_optimizer, r.mem_activations, r.mem_total,
  h.mem_cap, r.mem_total / h.mem_cap AS mem_frac,
  r.model_flops, r.hw_flops, r.mfu,
  r.hfu, r.tokens_per_s, r.tp_bytes, r.dp_bytes, r.pp_bytes,
  r.t_cp_comm, r.t_cp_comm_exposed, r.cp_bytes, r.t_ep_comm, r.ep_bytes,
  r.ccr, r.rid
FROM result_codes r
  JOIN models m ON m.model_id = r.model_id
  JOIN hardware h ON h.hw_id = r.hw_id
  LEFT JOIN dtypes dt ON dt.dtype = r.dtype
  LEFT JOIN recompute_modes rc ON rc.recompute = r.recompute
  LEFT JOIN statuses st ON st.status = r.status
  LEFT JOIN reasons rs ON rs.reason = r.reason
/* results_view(run_id,idx,"key",scenario,model,params,hardware,generation,evolution,stack,devices,tp,pp,dp,vpp,mbs,gbs,seq,dtype,sp,zero,recompute,flash_attn,tp_overlap,dp_overlap,innet_reduce,comm_compress,net_bw_factor,cp,cp_comm,ep,capacity_factor,pp_first_layers,pp_last_layers,status,reason,reason_text,fits,micro_batches,t_iter,t_iter_lo,t_iter_hi,extrap,t_compute,t_comm,t_comm_exposed,t_tp_comm,t_tp_comm_exposed,t_dp_comm,t_dp_comm_exposed,t_pp_comm,t_bubble,t_optimizer,comm_fraction,hidden_fraction,mem_weights,mem_grads,mem_optimizer,mem_activations,mem_total,mem_cap,mem_frac,model_flops,hw_flops,mfu,hfu,tokens_per_s,tp_bytes,dp_bytes,pp_bytes,t_cp_comm,t_cp_comm_exposed,cp_bytes,t_ep_comm,ep_bytes,ccr,rid) */;
CREATE VIEW plan_rank AS
SELECT rid, run_id, idx, model_id, hw_id, devices, gbs, seq, stack,
  row_number() OVER (PARTITION BY run_id, model_id, hw_id, devices, gbs, seq, stack ORDER BY tokens_per_s DESC, mem_total, tp, cp, ep, pp, vpp, mbs, sp, zero, recompute, flash_attn, dp_overlap, dtype, idx) AS rk
FROM result_codes WHERE status = 0 AND tp_overlap = 0 AND innet_reduce = 0 AND comm_compress = 1 AND net_bw_factor = 1
/* plan_rank(rid,run_id,idx,model_id,hw_id,devices,gbs,seq,stack,rk) */;
CREATE VIEW comm_share AS
WITH a AS (
  SELECT run_id, model_id, hw_id, devices, gbs, seq, stack, count(*) AS plans,
    avg(comm_fraction) AS comm_fraction_avg, min(comm_fraction) AS comm_fraction_min,
    max(comm_fraction) AS comm_fraction_max, avg(hidden_fraction) AS hidden_fraction_avg
  FROM result_codes WHERE status = 0 AND tp_overlap = 0 AND innet_reduce = 0 AND comm_compress = 1 AND net_bw_factor = 1 GROUP BY run_id, model_id, hw_id, devices, gbs, seq, stack),
b AS (
  SELECT r.* FROM result_codes r JOIN plan_rank k ON k.rid = r.rid AND k.rk = 1)
SELECT a.run_id, m.name AS model, CAST(m.params AS INTEGER) AS params,
  h.name AS hardware, h.generation, h.evolution, a.stack, a.devices, a.gbs, a.seq,
  a.plans, a.comm_fraction_avg, a.comm_fraction_min, a.comm_fraction_max,
  a.hidden_fraction_avg,
  b.idx AS best_idx, b.t_iter AS best_t_iter, b.tokens_per_s AS best_tokens_per_s,
  b.mem_total AS best_mem_total, b.comm_fraction AS best_comm_fraction,
  b.t_tp_comm_exposed / b.t_iter AS best_tp_share,
  b.t_dp_comm_exposed / b.t_iter AS best_dp_share, b.t_pp_comm / b.t_iter AS best_pp_share,
  b.t_cp_comm_exposed / b.t_iter AS best_cp_share, b.t_ep_comm / b.t_iter AS best_ep_share,
  b.t_bubble / b.t_iter AS best_bubble_share, b.hidden_fraction AS best_hidden_fraction
FROM a JOIN b ON b.run_id = a.run_id AND b.model_id = a.model_id AND b.hw_id = a.hw_id
  AND b.devices = a.devices AND b.gbs = a.gbs AND b.seq = a.seq AND b.stack = a.stack
  JOIN models m ON m.model_id = a.model_id JOIN hardware h ON h.hw_id = a.hw_id
/* comm_share(run_id,model,params,hardware,generation,evolution,stack,devices,gbs,seq,plans,comm_fraction_avg,comm_fraction_min,comm_fraction_max,hidden_fraction_avg,best_idx,best_t_iter,best_tokens_per_s,best_mem_total,best_comm_fraction,best_tp_share,best_dp_share,best_pp_share,best_cp_share,best_ep_share,best_bubble_share,best_hidden_fraction) */;
CREATE VIEW best_plan AS
SELECT v.* FROM results v JOIN plan_rank b ON v.rid = b.rid AND b.rk = 1
/* best_plan(run_id,idx,"key",scenario,model,params,hardware,generation,evolution,stack,devices,tp,pp,dp,vpp,mbs,gbs,seq,dtype,sp,zero,recompute,flash_attn,tp_overlap,dp_overlap,innet_reduce,comm_compress,net_bw_factor,cp,cp_comm,ep,capacity_factor,pp_first_layers,pp_last_layers,status,reason,reason_text,fits,micro_batches,t_iter,t_iter_lo,t_iter_hi,extrap,t_compute,t_comm,t_comm_exposed,t_tp_comm,t_tp_comm_exposed,t_dp_comm,t_dp_comm_exposed,t_pp_comm,t_bubble,t_optimizer,comm_fraction,hidden_fraction,mem_weights,mem_grads,mem_optimizer,mem_activations,mem_total,mem_cap,mem_frac,model_flops,hw_flops,mfu,hfu,tokens_per_s,tp_bytes,dp_bytes,pp_bytes,t_cp_comm,t_cp_comm_exposed,cp_bytes,t_ep_comm,ep_bytes,ccr,rid,model_id,hw_id) */;
CREATE TABLE keep_groups (  -- keep.aggregate: per group and field
  run_id INTEGER NOT NULL, gkey BLOB NOT NULL, field TEXT NOT NULL,
  g0, g1, g2, g3, g4, g5, g6, g7,  -- the keep.per values (keep_axes names them)
  scenarios INTEGER NOT NULL,      -- of the group that keep ranks
  n INTEGER NOT NULL,              -- of them with a value of field (not NULL)
  min REAL, max REAL, sum REAL,    -- over those n; NULL when n is 0
  sum_exact BLOB NOT NULL,         -- the exact sum, of which sum is the nearest double
  PRIMARY KEY (run_id, gkey, field)
) WITHOUT ROWID;
CREATE TABLE keep_axes (  -- keep.per of a run with keep.aggregate: g<pos> is axis
  run_id INTEGER NOT NULL, pos INTEGER NOT NULL, axis TEXT NOT NULL,
  PRIMARY KEY (run_id, pos)
) WITHOUT ROWID;
CREATE VIEW keep_stats AS
SELECT run_id, field, g0, g1, g2, g3, g4, g5, g6, g7, scenarios, n, min, max, sum,
  sum / n AS mean
FROM keep_groups
/* keep_stats(run_id,field,g0,g1,g2,g3,g4,g5,g6,g7,scenarios,n,min,max,sum,mean) */;
CREATE TABLE region_rows (  -- --detail: one row per scenario
  rid INTEGER PRIMARY KEY, /* run_id << 40 | idx */
  present INTEGER NOT NULL /* bit k: region k is stored */,
  fwd_attn_time REAL,
  fwd_attn_count REAL,
  fwd_attn_flops REAL,
  fwd_attn_bytes REAL,
  fwd_attn_tp_time REAL,
  fwd_attn_tp_count REAL,
  fwd_attn_tp_flops REAL,
  fwd_attn_tp_bytes REAL,
  fwd_mlp_time REAL,
  fwd_mlp_count REAL,
  fwd_mlp_flops REAL,
  fwd_mlp_bytes REAL,
  fwd_mlp_tp_time REAL,
  fwd_mlp_tp_count REAL,
  fwd_mlp_tp_flops REAL,
  fwd_mlp_tp_bytes REAL,
  recompute_attn_time REAL,
  recompute_attn_count REAL,
  recompute_attn_flops REAL,
  recompute_attn_bytes REAL,
  recompute_attn_tp_time REAL,
  recompute_attn_tp_count REAL,
  recompute_attn_tp_flops REAL,
  recompute_attn_tp_bytes REAL,
  recompute_mlp_time REAL,
  recompute_mlp_count REAL,
  recompute_mlp_flops REAL,
  recompute_mlp_bytes REAL,
  recompute_mlp_tp_time REAL,
  recompute_mlp_tp_count REAL,
  recompute_mlp_tp_flops REAL,
  recompute_mlp_tp_bytes REAL,
  bwd_mlp_time REAL,
  bwd_mlp_count REAL,
  bwd_mlp_flops REAL,
  bwd_mlp_bytes REAL,
  bwd_mlp_tp_time REAL,
  bwd_mlp_tp_count REAL,
  bwd_mlp_tp_flops REAL,
  bwd_mlp_tp_bytes REAL,
  bwd_attn_time REAL,
  bwd_attn_count REAL,
  bwd_attn_flops REAL,
  bwd_attn_bytes REAL,
  bwd_attn_tp_time REAL,
  bwd_attn_tp_count REAL,
  bwd_attn_tp_flops REAL,
  bwd_attn_tp_bytes REAL,
  embed_fwd_time REAL,
  embed_fwd_count REAL,
  embed_fwd_flops REAL,
  embed_fwd_bytes REAL,
  embed_bwd_time REAL,
  embed_bwd_count REAL,
  embed_bwd_flops REAL,
  embed_bwd_bytes REAL,
  embed_tp_time REAL,
  embed_tp_count REAL,
  embed_tp_flops REAL,
  embed_tp_bytes REAL,
  head_fwd_time REAL,
  head_fwd_count REAL,
  head_fwd_flops REAL,
  head_fwd_bytes REAL,
  head_bwd_time REAL,
  head_bwd_count REAL,
  head_bwd_flops REAL,
  head_bwd_bytes REAL,
  head_tp_time REAL,
  head_tp_count REAL,
  head_tp_flops REAL,
  head_tp_bytes REAL,
  optimizer_time REAL,
  optimizer_count REAL,
  optimizer_flops REAL,
  optimizer_bytes REAL,
  dp_grad_time REAL,
  dp_grad_count REAL,
  dp_grad_flops REAL,
  dp_grad_bytes REAL,
  dp_zero3_gather_time REAL,
  dp_zero3_gather_count REAL,
  dp_zero3_gather_flops REAL,
  dp_zero3_gather_bytes REAL,
  pp_p2p_time REAL,
  pp_p2p_count REAL,
  pp_p2p_flops REAL,
  pp_p2p_bytes REAL,
  dp_param_gather_time REAL,
  dp_param_gather_count REAL,
  dp_param_gather_flops REAL,
  dp_param_gather_bytes REAL,
  pp_embed_grad_time REAL,
  pp_embed_grad_count REAL,
  pp_embed_grad_flops REAL,
  pp_embed_grad_bytes REAL,
  fwd_attn_cp_time REAL,
  fwd_attn_cp_count REAL,
  fwd_attn_cp_flops REAL,
  fwd_attn_cp_bytes REAL,
  recompute_attn_cp_time REAL,
  recompute_attn_cp_count REAL,
  recompute_attn_cp_flops REAL,
  recompute_attn_cp_bytes REAL,
  bwd_attn_cp_time REAL,
  bwd_attn_cp_count REAL,
  bwd_attn_cp_flops REAL,
  bwd_attn_cp_bytes REAL,
  fwd_mlp_ep_time REAL,
  fwd_mlp_ep_count REAL,
  fwd_mlp_ep_flops REAL,
  fwd_mlp_ep_bytes REAL,
  recompute_mlp_ep_time REAL,
  recompute_mlp_ep_count REAL,
  recompute_mlp_ep_flops REAL,
  recompute_mlp_ep_bytes REAL,
  bwd_mlp_ep_time REAL,
  bwd_mlp_ep_count REAL,
  bwd_mlp_ep_flops REAL,
  bwd_mlp_ep_bytes REAL
);
CREATE VIEW regions AS  -- one row per non-empty region
SELECT r.rid >> 40 AS run_id, r.rid & 1099511627775 AS idx, n.region AS region,
  CASE n.region WHEN 0 THEN r.fwd_attn_time WHEN 1 THEN r.fwd_attn_tp_time WHEN 2 THEN r.fwd_mlp_time WHEN 3 THEN r.fwd_mlp_tp_time WHEN 4 THEN r.recompute_attn_time WHEN 5 THEN r.recompute_attn_tp_time WHEN 6 THEN r.recompute_mlp_time WHEN 7 THEN r.recompute_mlp_tp_time WHEN 8 THEN r.bwd_mlp_time WHEN 9 THEN r.bwd_mlp_tp_time WHEN 10 THEN r.bwd_attn_time WHEN 11 THEN r.bwd_attn_tp_time WHEN 12 THEN r.embed_fwd_time WHEN 13 THEN r.embed_bwd_time WHEN 14 THEN r.embed_tp_time WHEN 15 THEN r.head_fwd_time WHEN 16 THEN r.head_bwd_time WHEN 17 THEN r.head_tp_time WHEN 18 THEN r.optimizer_time WHEN 19 THEN r.dp_grad_time WHEN 20 THEN r.dp_zero3_gather_time WHEN 21 THEN r.pp_p2p_time WHEN 22 THEN r.dp_param_gather_time WHEN 23 THEN r.pp_embed_grad_time WHEN 24 THEN r.fwd_attn_cp_time WHEN 25 THEN r.recompute_attn_cp_time WHEN 26 THEN r.bwd_attn_cp_time WHEN 27 THEN r.fwd_mlp_ep_time WHEN 28 THEN r.recompute_mlp_ep_time WHEN 29 THEN r.bwd_mlp_ep_time END AS time,
  CASE n.region WHEN 0 THEN r.fwd_attn_count WHEN 1 THEN r.fwd_attn_tp_count WHEN 2 THEN r.fwd_mlp_count WHEN 3 THEN r.fwd_mlp_tp_count WHEN 4 THEN r.recompute_attn_count WHEN 5 THEN r.recompute_attn_tp_count WHEN 6 THEN r.recompute_mlp_count WHEN 7 THEN r.recompute_mlp_tp_count WHEN 8 THEN r.bwd_mlp_count WHEN 9 THEN r.bwd_mlp_tp_count WHEN 10 THEN r.bwd_attn_count WHEN 11 THEN r.bwd_attn_tp_count WHEN 12 THEN r.embed_fwd_count WHEN 13 THEN r.embed_bwd_count WHEN 14 THEN r.embed_tp_count WHEN 15 THEN r.head_fwd_count WHEN 16 THEN r.head_bwd_count WHEN 17 THEN r.head_tp_count WHEN 18 THEN r.optimizer_count WHEN 19 THEN r.dp_grad_count WHEN 20 THEN r.dp_zero3_gather_count WHEN 21 THEN r.pp_p2p_count WHEN 22 THEN r.dp_param_gather_count WHEN 23 THEN r.pp_embed_grad_count WHEN 24 THEN r.fwd_attn_cp_count WHEN 25 THEN r.recompute_attn_cp_count WHEN 26 THEN r.bwd_attn_cp_count WHEN 27 THEN r.fwd_mlp_ep_count WHEN 28 THEN r.recompute_mlp_ep_count WHEN 29 THEN r.bwd_mlp_ep_count END AS count,
  CASE n.region WHEN 0 THEN r.fwd_attn_flops WHEN 1 THEN r.fwd_attn_tp_flops WHEN 2 THEN r.fwd_mlp_flops WHEN 3 THEN r.fwd_mlp_tp_flops WHEN 4 THEN r.recompute_attn_flops WHEN 5 THEN r.recompute_attn_tp_flops WHEN 6 THEN r.recompute_mlp_flops WHEN 7 THEN r.recompute_mlp_tp_flops WHEN 8 THEN r.bwd_mlp_flops WHEN 9 THEN r.bwd_mlp_tp_flops WHEN 10 THEN r.bwd_attn_flops WHEN 11 THEN r.bwd_attn_tp_flops WHEN 12 THEN r.embed_fwd_flops WHEN 13 THEN r.embed_bwd_flops WHEN 14 THEN r.embed_tp_flops WHEN 15 THEN r.head_fwd_flops WHEN 16 THEN r.head_bwd_flops WHEN 17 THEN r.head_tp_flops WHEN 18 THEN r.optimizer_flops WHEN 19 THEN r.dp_grad_flops WHEN 20 THEN r.dp_zero3_gather_flops WHEN 21 THEN r.pp_p2p_flops WHEN 22 THEN r.dp_param_gather_flops WHEN 23 THEN r.pp_embed_grad_flops WHEN 24 THEN r.fwd_attn_cp_flops WHEN 25 THEN r.recompute_attn_cp_flops WHEN 26 THEN r.bwd_attn_cp_flops WHEN 27 THEN r.fwd_mlp_ep_flops WHEN 28 THEN r.recompute_mlp_ep_flops WHEN 29 THEN r.bwd_mlp_ep_flops END AS flops,
  CASE n.region WHEN 0 THEN r.fwd_attn_bytes WHEN 1 THEN r.fwd_attn_tp_bytes WHEN 2 THEN r.fwd_mlp_bytes WHEN 3 THEN r.fwd_mlp_tp_bytes WHEN 4 THEN r.recompute_attn_bytes WHEN 5 THEN r.recompute_attn_tp_bytes WHEN 6 THEN r.recompute_mlp_bytes WHEN 7 THEN r.recompute_mlp_tp_bytes WHEN 8 THEN r.bwd_mlp_bytes WHEN 9 THEN r.bwd_mlp_tp_bytes WHEN 10 THEN r.bwd_attn_bytes WHEN 11 THEN r.bwd_attn_tp_bytes WHEN 12 THEN r.embed_fwd_bytes WHEN 13 THEN r.embed_bwd_bytes WHEN 14 THEN r.embed_tp_bytes WHEN 15 THEN r.head_fwd_bytes WHEN 16 THEN r.head_bwd_bytes WHEN 17 THEN r.head_tp_bytes WHEN 18 THEN r.optimizer_bytes WHEN 19 THEN r.dp_grad_bytes WHEN 20 THEN r.dp_zero3_gather_bytes WHEN 21 THEN r.pp_p2p_bytes WHEN 22 THEN r.dp_param_gather_bytes WHEN 23 THEN r.pp_embed_grad_bytes WHEN 24 THEN r.fwd_attn_cp_bytes WHEN 25 THEN r.recompute_attn_cp_bytes WHEN 26 THEN r.bwd_attn_cp_bytes WHEN 27 THEN r.fwd_mlp_ep_bytes WHEN 28 THEN r.recompute_mlp_ep_bytes WHEN 29 THEN r.bwd_mlp_ep_bytes END AS bytes
FROM region_rows r CROSS JOIN region_names n
WHERE (r.present >> n.region) & 1
/* regions(run_id,idx,region,time,count,flops,bytes) */;
CREATE TABLE serve_results (  -- one row per serving scenario; SI units
  run_id INTEGER NOT NULL REFERENCES runs, idx INTEGER NOT NULL,
  model TEXT NOT NULL, hardware TEXT NOT NULL, generation INTEGER NOT NULL,
  devices INTEGER, tp INTEGER, pp INTEGER, ep INTEGER, attn_dp INTEGER,
  dp INTEGER,                     -- replicas on the devices
  isl INTEGER, osl INTEGER,
  wdtype INTEGER, kvdtype INTEGER,  -- serve_dtypes
  chunked INTEGER, status INTEGER NOT NULL, reason INTEGER,
  concurrency INTEGER,            -- requests in flight per replica
  max_concurrency INTEGER, max_num_tokens INTEGER,
  mem_weights REAL, mem_activations REAL, mem_kv REAL, kv_tokens REAL,
  t_prefill REAL, ttft REAL, tpot REAL,
  tok_s_gpu REAL, tok_s_system REAL, tok_s_gpu_limit_mem REAL,
  tok_s_gpu_limit_compute REAL,
  share_compute REAL, share_memory REAL, share_comm REAL,  -- of the decode step
  step_t REAL, step_flops REAL, step_bytes REAL, step_comm_bytes REAL,
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
CREATE TABLE serve_dtypes (dtype INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE VIEW serve_results_view AS
SELECT r.run_id, r.idx, r.model, r.hardware, r.generation, r.devices, r.tp, r.pp, r.ep,
  r.attn_dp, r.dp, r.isl, r.osl, w.name AS weight_dtype, k.name AS kv_dtype, r.chunked,
  s.name AS status, rs.name AS reason, r.concurrency, r.max_concurrency,
  r.max_num_tokens, r.mem_weights, r.mem_activations, r.mem_kv, r.kv_tokens, r.t_prefill,
  r.ttft, r.tpot, r.ttft * 1e3 AS ttft_ms, r.tpot * 1e3 AS tpot_ms, r.tok_s_gpu,
  r.tok_s_system, r.tok_s_gpu_limit_mem, r.tok_s_gpu_limit_compute, r.share_compute,
  r.share_memory, r.share_comm, r.step_t, r.step_flops, r.step_bytes, r.step_comm_bytes,
  r.tp * r.pp AS replica_devices, r.wdtype, r.kvdtype
FROM serve_results r JOIN statuses s ON s.status = r.status
LEFT JOIN reasons rs ON rs.reason = r.reason
LEFT JOIN serve_dtypes w ON w.dtype = r.wdtype LEFT JOIN serve_dtypes k ON k.dtype = r.kvdtype
/* serve_results_view(run_id,idx,model,hardware,generation,devices,tp,pp,ep,attn_dp,dp,isl,osl,weight_dtype,kv_dtype,chunked,status,reason,concurrency,max_concurrency,max_num_tokens,mem_weights,mem_activations,mem_kv,kv_tokens,t_prefill,ttft,tpot,ttft_ms,tpot_ms,tok_s_gpu,tok_s_system,tok_s_gpu_limit_mem,tok_s_gpu_limit_compute,share_compute,share_memory,share_comm,step_t,step_flops,step_bytes,step_comm_bytes,replica_devices,wdtype,kvdtype) */;
CREATE VIEW serve_best AS
SELECT * FROM (SELECT v.*, row_number() OVER (PARTITION BY run_id, model, hardware, generation, devices, isl, osl, wdtype, kvdtype ORDER BY tok_s_gpu DESC, tpot, ttft, tp, pp, ep, attn_dp, idx) AS rank
  FROM serve_results_view v WHERE status = 'ok') WHERE rank = 1
/* serve_best(run_id,idx,model,hardware,generation,devices,tp,pp,ep,attn_dp,dp,isl,osl,weight_dtype,kv_dtype,chunked,status,reason,concurrency,max_concurrency,max_num_tokens,mem_weights,mem_activations,mem_kv,kv_tokens,t_prefill,ttft,tpot,ttft_ms,tpot_ms,tok_s_gpu,tok_s_system,tok_s_gpu_limit_mem,tok_s_gpu_limit_compute,share_compute,share_memory,share_comm,step_t,step_flops,step_bytes,step_comm_bytes,replica_devices,wdtype,kvdtype,rank) */;
CREATE TABLE op_sources (  -- measured or synthetic operator curves
  run_id INTEGER NOT NULL, hardware TEXT NOT NULL,
  op TEXT NOT NULL,       -- gemm, bmm, elementwise, ..., allreduce, p2p
  dtype TEXT,             -- compute kinds: the arithmetic type; NULL for collectives
  level TEXT,             -- collectives: intra | inter; NULL for compute kinds
  source TEXT NOT NULL CHECK (source IN ('measured','synthetic')),
  calibration TEXT        -- the profile of a measured curve
);
