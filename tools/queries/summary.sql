-- summary.sql - The report's summary: per plan and hardware generation, how many
-- groups and models fit, the range (min, mean, max over the groups) of the
-- communication share of the iteration time, the share for the largest group that
-- fits, and the range of the hidden fraction of data-parallel communication.
-- (ccsweep report: summary table)
-- A group is one model x devices x gbs x seq (x the row's hardware generation): the
-- work every plan of the group does, so the only set within which a plan comparison
-- is fair. A model with two device counts or sequence lengths is two groups; groups
-- counts the groups with a plan of the kind, all_groups every group with a stored row
-- of the run (on any hardware), models and all_models the distinct models of those.
-- Plans compared (the same two in every query here that reports 'plan'), only
-- within a group of equal model, hardware generation, devices, gbs and seq:
--   best   the group's best plan as the view plan_rank ranks it (results/README.md,
--          "Best plan"): the highest tokens/s among fitting plans without what-if
--          mitigations, ties to lower memory per device;
--   tp+dp  the paper's setting: no pipeline (pp = 1) and the smallest tensor-parallel
--          degree that fits device memory (the memory-forced TP), then plan_rank's order.
-- Run: the latest in the database; another one with
--   sqlite3 -header -column -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/summary.sql
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
, largest AS (
  SELECT plan, hw_id, model, comm_fraction,
    devices, gbs, seq,
    row_number() OVER (PARTITION BY plan, hw_id
                       ORDER BY params DESC, model_id, devices DESC, seq DESC, gbs DESC) AS rk
  FROM plans)
, everything AS (
  SELECT count(*) AS all_groups, count(DISTINCT model_id) AS all_models
  FROM (SELECT DISTINCT r.model_id, r.devices, r.gbs, r.seq
        FROM result_codes r JOIN run ON r.run_id = run.id))
SELECT p.plan, p.hardware, p.generation, count(*) AS groups,
  count(DISTINCT p.model_id) AS models, e.all_groups, e.all_models,
  round(100 * min(p.comm_fraction), 2) AS comm_min_pct,
  round(100 * avg(p.comm_fraction), 2) AS comm_mean_pct,
  round(100 * max(p.comm_fraction), 2) AS comm_max_pct,
  l.model AS largest_model, l.devices AS largest_devices, l.gbs AS largest_gbs,
  l.seq AS largest_seq, round(100 * l.comm_fraction, 2) AS largest_comm_pct,
  round(100 * min(CASE WHEN p.t_dp_comm > 0
                  THEN 1 - p.t_dp_comm_exposed / p.t_dp_comm END), 2)
    AS dp_hidden_min_pct,
  round(100 * max(CASE WHEN p.t_dp_comm > 0
                  THEN 1 - p.t_dp_comm_exposed / p.t_dp_comm END), 2)
    AS dp_hidden_max_pct,
  max(p.tp) AS max_tp
FROM plans p JOIN largest l ON l.plan = p.plan AND l.hw_id = p.hw_id AND l.rk = 1
  CROSS JOIN everything e
GROUP BY p.plan, p.hw_id
ORDER BY p.plan, p.hw_id;
