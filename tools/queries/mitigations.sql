-- mitigations.sql - How much does each mitigation recover? Each mitigated row is
-- matched with the same plan without mitigation (same model, hardware generation,
-- devices, gbs, seq and every plan column): the share of the iteration time it saves, and the share of the
-- exposed communication it removes. Mitigations: tp_overlap (TP collectives hidden
-- under their GEMMs), comm_compress=X (bytes factor on every collective),
-- innet_reduce (in-network reduction), net_bw_factor=X (faster links).
-- (ccsweep report: plot 5, mitigations.png, shows the last generation)
-- Plans compared (the same two in every query here that reports 'plan'), only
-- within a group of equal model, hardware generation, devices, gbs and seq:
--   best   the group's best plan as the view plan_rank ranks it (results/README.md,
--          "Best plan"): the highest tokens/s among fitting plans without what-if
--          mitigations, ties to lower memory per device;
--   tp+dp  the paper's setting: no pipeline (pp = 1) and the smallest tensor-parallel
--          degree that fits device memory (the memory-forced TP), then plan_rank's order.
-- Run: the latest in the database; another one with
--   sqlite3 -header -column -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/mitigations.sql
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
, mit AS MATERIALIZED (
  SELECT r.model_id, r.hw_id, r.devices, r.tp, r.pp, r.dp, r.vpp, r.mbs, r.gbs, r.seq,
    r.dtype, r.sp, r.zero, r.recompute, r.flash_attn, r.dp_overlap, r.cp, r.ep, r.cp_comm,
    r.capacity_factor, r.pp_first_layers, r.pp_last_layers, r.t_iter,
    r.comm_fraction, r.t_comm_exposed, trim(
      CASE WHEN r.tp_overlap THEN 'tp_overlap ' ELSE '' END ||
      CASE WHEN r.comm_compress != 1 THEN 'comm_compress=' || r.comm_compress || ' '
           ELSE '' END ||
      CASE WHEN r.innet_reduce THEN 'innet_reduce ' ELSE '' END ||
      CASE WHEN r.net_bw_factor != 1 THEN 'net_bw_factor=' || r.net_bw_factor ELSE '' END)
      AS mitigation
  FROM result_codes r JOIN run ON r.run_id = run.id
  WHERE r.status != 1 AND (r.tp_overlap OR r.innet_reduce OR r.comm_compress != 1
                           OR r.net_bw_factor != 1))
SELECT p.plan, p.hardware, p.generation, p.model, CAST(p.params AS INTEGER) AS params, p.devices, p.gbs, p.seq, p.tp,
  p.pp, p.dp, p.mbs,
  x.mitigation, round(p.t_iter, 4) AS t_base_s, round(x.t_iter, 4) AS t_mitigated_s,
  round(100 * (1 - x.t_iter / p.t_iter), 2) AS time_saved_pct,
  round(100 * p.comm_fraction, 2) AS comm_pct_base,
  round(100 * x.comm_fraction, 2) AS comm_pct_mitigated,
  CASE WHEN p.t_comm_exposed > 0 THEN
    round(100 * (p.t_comm_exposed - x.t_comm_exposed) / p.t_comm_exposed, 2) END
    AS exposed_comm_removed_pct
FROM plans p
  JOIN mit x ON x.model_id = p.model_id AND x.hw_id = p.hw_id AND x.devices = p.devices
    AND x.tp = p.tp AND x.pp = p.pp AND x.dp = p.dp AND x.vpp = p.vpp AND x.mbs = p.mbs
    AND x.gbs = p.gbs AND x.seq = p.seq AND x.dtype = p.dtype AND x.sp = p.sp
    AND x.zero = p.zero AND x.recompute = p.recompute AND x.flash_attn = p.flash_attn
    AND x.dp_overlap = p.dp_overlap AND x.cp = p.cp AND x.ep = p.ep AND x.cp_comm = p.cp_comm
    AND x.capacity_factor = p.capacity_factor AND x.pp_first_layers IS p.pp_first_layers
    AND x.pp_last_layers IS p.pp_last_layers
ORDER BY p.plan, p.hw_id, x.mitigation, p.params, p.model;
