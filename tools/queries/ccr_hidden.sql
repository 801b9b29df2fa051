-- ccr_hidden.sql - How does the analytic compute/communication ratio of a
-- tensor-parallel layer (forward FLOPs per device / TP bytes sent per device, column
-- results.ccr, ~ h/(tp-1)) move with the hidden size h, at a fixed TP degree (:tp,
-- default 8) and at the memory-forced TP of the TP+DP plan for each hardware
-- generation? NULL ccr: no row with that TP (fixed), no TP+DP plan fits, or tp 1
-- (no TP traffic). (ccsweep report: plot 3, ccr.png)
-- Plans compared (the same two in every query here that reports 'plan'), only
-- within a group of equal model, hardware generation, devices, gbs and seq:
--   best   the group's best plan as the view plan_rank ranks it (results/README.md,
--          "Best plan"): the highest tokens/s among fitting plans without what-if
--          mitigations, ties to lower memory per device;
--   tp+dp  the paper's setting: no pipeline (pp = 1) and the smallest tensor-parallel
--          degree that fits device memory (the memory-forced TP), then plan_rank's order.
-- Run: the latest in the database; another one with
--   sqlite3 -header -column -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/ccr_hidden.sql
--   other TP: sqlite3 -header -column -cmd '.param set :tp 16' \
--             results/ccsweep.db < tools/queries/ccr_hidden.sql
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
, fixed AS (
  SELECT r.model_id, max(r.ccr) AS ccr
  FROM result_codes r JOIN run ON r.run_id = run.id
  WHERE r.status != 1 AND r.tp = coalesce(:tp, 8) AND r.ccr > 0 AND r.innet_reduce = 0
    AND r.comm_compress = 1
  GROUP BY r.model_id)
SELECT m.name AS model, m.layers, m.hidden, CAST(m.params AS INTEGER) AS params, h.name AS hardware, h.generation,
  coalesce(:tp, 8) AS fixed_tp, round(f.ccr, 1) AS fixed_ccr,
  p.tp AS forced_tp, CASE WHEN p.ccr > 0 THEN round(p.ccr, 1) END AS forced_ccr
FROM models m JOIN run ON m.run_id = run.id
  JOIN hardware h ON h.run_id = run.id
  LEFT JOIN fixed f ON f.model_id = m.model_id
  LEFT JOIN plans p ON p.plan = 'tp+dp' AND p.model_id = m.model_id AND p.hw_id = h.hw_id
ORDER BY h.hw_id, m.hidden, m.model_id;
