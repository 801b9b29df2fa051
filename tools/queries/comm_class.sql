-- comm_class.sql - How does the communication of mixture-of-experts and long-context
-- models split by class over hardware generations? For the best plan of every group of
-- a mixture-of-experts model (experts > 0) or of sequences longer than 8192 tokens: the
-- exposed share of the iteration time of each class of communication, tensor-parallel
-- collectives (tp_pct), context-parallel K/V transfers (cp_pct), expert-parallel
-- all-to-alls (ep_pct), data-parallel gradient reduction (dp_pct) and pipeline transfers
-- (pp_pct); they add up to comm_pct, the exposed share of all communication.
-- (ccsweep report: section "Communication by class")
-- Best plan: the group's (model, hardware generation, devices, gbs, seq) first in the
-- view plan_rank (results/README.md, "Best plan"): the highest tokens/s among fitting
-- plans without what-if mitigations, over every tp, cp, ep, pp and dp of the run.
-- Models recorded by schema version 5 have no expert count (NULL): they count as dense.
-- Run: the latest in the database; another one with
--   sqlite3 -header -column -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/comm_class.sql
WITH run AS (SELECT coalesce(:run, (SELECT max(run_id) FROM runs)) AS id),
best AS (
  SELECT r.* FROM plan_rank k JOIN run ON k.run_id = run.id
    JOIN result_codes r ON r.rid = k.rid
  WHERE k.rk = 1)
SELECT h.name AS hardware, h.generation, m.name AS model, CAST(m.params AS INTEGER) AS params,
  coalesce(m.experts, 0) AS experts, b.seq, b.devices, b.gbs,
  b.tp, b.cp, b.ep, b.pp, b.dp, b.mbs, round(b.t_iter, 4) AS t_iter_s,
  round(100 * b.comm_fraction, 2) AS comm_pct,
  round(100 * b.t_tp_comm_exposed / b.t_iter, 2) AS tp_pct,
  round(100 * b.t_cp_comm_exposed / b.t_iter, 2) AS cp_pct,
  round(100 * b.t_ep_comm / b.t_iter, 2) AS ep_pct,
  round(100 * b.t_dp_comm_exposed / b.t_iter, 2) AS dp_pct,
  round(100 * b.t_pp_comm / b.t_iter, 2) AS pp_pct
FROM best b
  JOIN models m ON m.model_id = b.model_id
  JOIN hardware h ON h.hw_id = b.hw_id
WHERE coalesce(m.experts, 0) > 0 OR b.seq > 8192
ORDER BY h.name, m.params, m.name, b.seq, b.devices, b.gbs, h.generation;
