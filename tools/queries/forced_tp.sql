-- forced_tp.sql - How does memory capacity force the tensor-parallel degree? The
-- smallest TP that fits device memory, per model and hardware generation, with
-- pipeline parallelism allowed (any pp of the run) and without it (pp = 1, the
-- paper's TP+DP setting); NULL: no plan of the run fits. Fitting plans with no
-- mitigation switched on. (ccsweep report: plot 6, forced_tp.png)
-- One row per group (model x devices x gbs x seq, the work the plans share: every
-- group with a stored row of the run) x hardware generation; tp forced at one size of the
-- job says nothing of another, so groups are never merged.
-- Run: the latest in the database; another one with
--   sqlite3 -header -column -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/forced_tp.sql
WITH run AS (SELECT coalesce(:run, (SELECT max(run_id) FROM runs)) AS id),
grp AS (
  SELECT DISTINCT r.model_id, r.devices, r.gbs, r.seq
  FROM result_codes r JOIN run ON r.run_id = run.id),
fit AS (
  SELECT r.model_id, r.hw_id, r.devices, r.gbs, r.seq, min(r.tp) AS tp_any_pp,
    min(CASE WHEN r.pp = 1 THEN r.tp END) AS tp_no_pp
  FROM result_codes r JOIN run ON r.run_id = run.id
  WHERE r.status = 0 AND r.tp_overlap = 0 AND r.innet_reduce = 0
    AND r.comm_compress = 1 AND r.net_bw_factor = 1
  GROUP BY r.model_id, r.hw_id, r.devices, r.gbs, r.seq)
SELECT m.name AS model, CAST(m.params AS INTEGER) AS params, m.layers, m.hidden, m.heads, g.devices, g.gbs, g.seq,
  h.name AS hardware, h.generation, round(h.mem_cap / 1073741824.0, 1) AS mem_gib,
  f.tp_any_pp, f.tp_no_pp
FROM grp g JOIN models m ON m.model_id = g.model_id
  JOIN run ON m.run_id = run.id
  JOIN hardware h ON h.run_id = run.id
  LEFT JOIN fit f ON f.model_id = g.model_id AND f.hw_id = h.hw_id AND f.devices = g.devices
    AND f.gbs = g.gbs AND f.seq = g.seq
ORDER BY h.hw_id, m.params, m.model_id, g.devices, g.gbs, g.seq;
