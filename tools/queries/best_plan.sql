-- best_plan.sql - Which plan should I run? Per model and hardware generation, the
-- fitting plan with the highest MFU (the fastest per device) and, next to it, the
-- paper's memory-forced TP+DP plan, with time, throughput and memory.
-- Plans compared (the same two in every query here that reports 'plan'):
--   best   the fitting plan with the highest MFU (model FLOPs per device-second:
--          the fastest per device) over all the run's tensor/pipeline/data-parallel
--          plans, with no mitigation switched on;
--   tp+dp  the paper's setting: no pipeline (pp = 1) and the smallest tensor-parallel
--          degree that fits device memory (the memory-forced TP), then the highest MFU.
-- Run: the latest in the database; another one with
--   sqlite3 -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 results/ccsweep.db < tools/queries/best_plan.sql
WITH run AS (SELECT coalesce(:run, (SELECT max(run_id) FROM runs)) AS id),
ranked AS (
  SELECT r.rid, r.run_id, r.idx, r.model_id, r.hw_id, r.tp, r.pp,
    row_number() OVER (PARTITION BY r.model_id, r.hw_id
                       ORDER BY r.mfu DESC, r.idx) AS best_rk,
    row_number() OVER (PARTITION BY r.model_id, r.hw_id, r.pp = 1
                       ORDER BY r.tp, r.mfu DESC, r.idx) AS forced_rk
  FROM results r JOIN run ON r.run_id = run.id
  WHERE r.status = 0 AND r.tp_overlap = 0 AND r.innet_reduce = 0
    AND r.comm_compress = 1 AND r.net_bw_factor = 1),
plans AS (
  SELECT k.plan, r.*, m.name AS model, m.params, m.layers, m.hidden,
    h.name AS hardware, h.generation
  FROM (SELECT 'best' AS plan, rid FROM ranked WHERE best_rk = 1
        UNION ALL
        SELECT 'tp+dp', rid FROM ranked WHERE pp = 1 AND forced_rk = 1) k
    JOIN results r ON r.rid = k.rid
    JOIN models m ON m.model_id = r.model_id
    JOIN hardware h ON h.hw_id = r.hw_id)
SELECT plan, model, hardware, generation, name AS scenario, devices, tp, pp, dp, vpp, mbs,
  gbs, seq, sp, zero, recompute, t_iter AS t_iter_s, round(100 * mfu, 2) AS mfu_pct,
  round(tokens_per_s) AS tokens_per_s, round(100 * comm_fraction, 2) AS comm_pct,
  round(mem_total / 1073741824.0, 2) AS mem_gib
FROM plans
ORDER BY model_id, hw_id, plan;
