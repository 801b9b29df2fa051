-- fixed_plan.sql - How do today's plans fare on future hardware? The plan chosen at
-- the first generation of the run (best, and TP+DP), kept unchanged (same tp, pp, dp,
-- micro-batch, ... on the same hardware line) on every generation: communication
-- share, hidden share of DP communication and MFU per generation. This is the
-- paper's question "does communication hidden today become exposed?" without
-- re-planning for the larger memory of later generations. One row per plan x group
-- (model x devices x gbs x seq: equal work, the plan's own) x generation: every plan
-- column takes part in the match, so a kept plan has at most one row per generation.
-- Plans compared (the same two in every query here that reports 'plan'), only
-- within a group of equal model, hardware generation, devices, gbs and seq:
--   best   the group's best plan as the view plan_rank ranks it (results/README.md,
--          "Best plan"): the highest tokens/s among fitting plans without what-if
--          mitigations, ties to lower memory per device;
--   tp+dp  the paper's setting: no pipeline (pp = 1) and the smallest tensor-parallel
--          degree that fits device memory (the memory-forced TP), then plan_rank's order.
-- Run: the latest in the database; another one with
--   sqlite3 -header -column -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/fixed_plan.sql
WITH run AS (SELECT coalesce(:run, (SELECT max(run_id) FROM runs)) AS id),
ranked AS (
  SELECT k.rid, k.run_id, k.idx, k.rk AS best_rk, r.pp,
    row_number() OVER (PARTITION BY k.model_id, k.hw_id, k.devices, k.gbs, k.seq, r.pp = 1
                       ORDER BY r.tp, k.rk) AS forced_rk
  FROM plan_rank k JOIN run ON k.run_id = run.id
    JOIN result_codes r ON r.rid = k.rid),
plans AS (
  SELECT k.plan, r.*, m.name AS model, m.params, m.layers, m.hidden,
    h.name AS hardware, h.generation
  FROM (SELECT 'best' AS plan, rid FROM ranked WHERE best_rk = 1
        UNION ALL
        SELECT 'tp+dp', rid FROM ranked WHERE pp = 1 AND forced_rk = 1) k
    JOIN result_codes r ON r.rid = k.rid
    JOIN models m ON m.model_id = r.model_id
    JOIN hardware h ON h.hw_id = r.hw_id)
, first AS MATERIALIZED (
  SELECT p.* FROM plans p
  WHERE p.generation = (SELECT min(h.generation) FROM hardware h
                        JOIN run ON h.run_id = run.id))
SELECT f.plan, f.hardware, h.generation, f.model, CAST(f.params AS INTEGER) AS params, f.devices, f.gbs, f.seq, f.tp,
  f.cp, f.ep, f.pp, f.dp, f.mbs, f.sp,
  round(r.t_iter, 4) AS t_iter_s, round(100 * r.comm_fraction, 2) AS comm_pct,
  CASE WHEN r.t_dp_comm > 0 THEN
    round(100 * (1 - r.t_dp_comm_exposed / r.t_dp_comm), 2) END AS dp_hidden_pct,
  round(100 * r.mfu, 2) AS mfu_pct
FROM result_codes r JOIN run ON r.run_id = run.id
  CROSS JOIN first f ON r.model_id = f.model_id AND r.devices = f.devices
    AND r.tp = f.tp AND r.pp = f.pp AND r.dp = f.dp AND r.vpp = f.vpp AND r.mbs = f.mbs
    AND r.gbs = f.gbs AND r.seq = f.seq AND r.dtype = f.dtype AND r.sp = f.sp
    AND r.zero = f.zero AND r.recompute = f.recompute AND r.flash_attn = f.flash_attn
    AND r.dp_overlap = f.dp_overlap AND r.cp = f.cp AND r.ep = f.ep AND r.cp_comm = f.cp_comm
    AND r.capacity_factor = f.capacity_factor AND r.pp_first_layers IS f.pp_first_layers
    AND r.pp_last_layers IS f.pp_last_layers
  JOIN hardware h ON h.hw_id = r.hw_id AND h.name = f.hardware
WHERE r.status = 0 AND r.tp_overlap = 0 AND r.innet_reduce = 0 AND r.comm_compress = 1
  AND r.net_bw_factor = 1
ORDER BY f.plan, h.hw_id, f.params, f.model;
