-- dp_hidden.sql - How much of the data-parallel gradient communication is hidden
-- under the backward pass, by model size and hardware generation? 100 = fully
-- overlapped, 0 = fully exposed. Plans without data-parallel traffic are left out.
-- (ccsweep report: plot 4, dp_hidden.png)
-- Plans compared (the same two in every query here that reports 'plan'):
--   best   the fitting plan with the highest MFU (model FLOPs per device-second:
--          the fastest per device) over all the run's tensor/pipeline/data-parallel
--          plans, with no mitigation switched on;
--   tp+dp  the paper's setting: no pipeline (pp = 1) and the smallest tensor-parallel
--          degree that fits device memory (the memory-forced TP), then the highest MFU.
-- Run: the latest in the database; another one with
--   sqlite3 -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 results/ccsweep.db < tools/queries/dp_hidden.sql
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
SELECT plan, hardware, generation, model, params, tp, pp, dp, mbs, micro_batches,
  t_dp_comm AS t_dp_comm_s, t_dp_comm_exposed AS t_dp_exposed_s,
  round(100 * (1 - t_dp_comm_exposed / t_dp_comm), 2) AS dp_hidden_pct,
  round(100 * t_dp_comm_exposed / t_iter, 2) AS dp_exposed_pct_of_iter
FROM plans
WHERE t_dp_comm > 0
ORDER BY plan, hw_id, params, model;
