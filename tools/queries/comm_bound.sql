-- comm_bound.sql - Which scenarios are communication-bound, i.e. spend at least as
-- long in exposed communication as in computation? Per model and hardware
-- generation: how many of the fitting plans (no mitigation) are, and whether the
-- best and the memory-forced TP+DP plans are; most communication-bound first.
-- Plans compared (the same two in every query here that reports 'plan'), only
-- within a group of equal model, hardware generation, devices, gbs and seq:
--   best   the group's best plan as the view plan_rank ranks it (results/README.md,
--          "Best plan"): the highest tokens/s among fitting plans without what-if
--          mitigations, ties to lower memory per device;
--   tp+dp  the paper's setting: no pipeline (pp = 1) and the smallest tensor-parallel
--          degree that fits device memory (the memory-forced TP), then plan_rank's order.
-- Run: the latest in the database; another one with
--   sqlite3 -header -column -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/comm_bound.sql
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
, groups AS (
  SELECT r.model_id, r.hw_id, count(*) AS plans,
    sum(r.t_comm_exposed >= r.t_compute) AS comm_bound_plans
  FROM result_codes r JOIN run ON r.run_id = run.id
  WHERE r.status = 0 AND r.tp_overlap = 0 AND r.innet_reduce = 0
    AND r.comm_compress = 1 AND r.net_bw_factor = 1
  GROUP BY r.model_id, r.hw_id)
SELECT m.name AS model, h.name AS hardware, h.generation, g.plans, g.comm_bound_plans,
  round(100.0 * g.comm_bound_plans / g.plans, 2) AS comm_bound_pct,
  round(100 * b.comm_fraction, 2) AS best_comm_pct,
  b.t_comm_exposed >= b.t_compute AS best_comm_bound,
  round(100 * f.comm_fraction, 2) AS tp_dp_comm_pct,
  f.t_comm_exposed >= f.t_compute AS tp_dp_comm_bound
FROM groups g
  JOIN models m ON m.model_id = g.model_id
  JOIN hardware h ON h.hw_id = g.hw_id
  LEFT JOIN plans b ON b.plan = 'best' AND b.model_id = g.model_id AND b.hw_id = g.hw_id
  LEFT JOIN plans f ON f.plan = 'tp+dp' AND f.model_id = g.model_id AND f.hw_id = g.hw_id
ORDER BY comm_bound_pct DESC, b.comm_fraction DESC, m.model_id, h.hw_id;
