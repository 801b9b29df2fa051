-- breakdown.sql - Where does the iteration time go? Shares of the iteration time
-- (they add up to 100): computation (with the optimizer step), exposed tensor-parallel
-- communication, exposed context-parallel communication, expert-parallel all-to-alls,
-- exposed data-parallel communication, pipeline transfers and the pipeline bubble, per
-- plan x hardware generation x group (model x devices x gbs x seq: equal work).
-- (ccsweep report: plot 2, breakdown.png, shows the first and the last generation)
-- Plans compared (the same two in every query here that reports 'plan'), only
-- within a group of equal model, hardware generation, devices, gbs and seq:
--   best   the group's best plan as the view plan_rank ranks it (results/README.md,
--          "Best plan"): the highest tokens/s among fitting plans without what-if
--          mitigations, ties to lower memory per device;
--   tp+dp  the paper's setting: no pipeline (pp = 1) and the smallest tensor-parallel
--          degree that fits device memory (the memory-forced TP), then plan_rank's order.
-- Run: the latest in the database; another one with
--   sqlite3 -header -column -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/breakdown.sql
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
SELECT plan, hardware, generation, model, CAST(params AS INTEGER) AS params, devices, gbs, seq, tp, pp, dp, mbs,
  round(t_iter, 4) AS t_iter_s,
  round(100 * t_compute / t_iter, 2) AS compute_pct,
  round(100 * t_tp_comm_exposed / t_iter, 2) AS tp_comm_pct,
  round(100 * t_cp_comm_exposed / t_iter, 2) AS cp_comm_pct,
  round(100 * t_ep_comm / t_iter, 2) AS ep_comm_pct,
  round(100 * t_dp_comm_exposed / t_iter, 2) AS dp_comm_pct,
  round(100 * t_pp_comm / t_iter, 2) AS pp_comm_pct,
  round(100 * t_bubble / t_iter, 2) AS bubble_pct
FROM plans
ORDER BY plan, hw_id, params, model;
