-- run_diff.sql - What changed between two runs? Compares run :run (default the
-- latest) with run :prev (default the one before it), scenario by scenario matched
-- by the stable scenario key (same model, hardware generation and plan give the same
-- key in any run), per model and hardware generation: scenarios only in one run,
-- scenarios whose status or iteration time changed (relative change above 1e-9), the
-- largest relative change, and the shortest fitting iteration of any plan in each run
-- (a range, not a best plan: plans compare only at equal devices, see best_plan). The first
-- columns say whether the spec text and the build differ.
-- Usage: sqlite3 -header -column results/ccsweep.db < tools/queries/run_diff.sql
--   two given runs: sqlite3 -header -column -cmd '.param set :run 5' -cmd '.param set :prev 2' \
--                     results/ccsweep.db < tools/queries/run_diff.sql
WITH cur AS (SELECT coalesce(:run, (SELECT max(run_id) FROM runs)) AS id),
prev AS (
  SELECT coalesce(:prev, (SELECT max(run_id) FROM runs, cur WHERE run_id < cur.id))
    AS id),
a AS (
  SELECT r.key, r.status, r.t_iter, m.name AS model, h.name AS hardware, h.generation
  FROM result_codes r JOIN prev ON r.run_id = prev.id
    JOIN models m ON m.model_id = r.model_id JOIN hardware h ON h.hw_id = r.hw_id),
b AS (
  SELECT r.key, r.status, r.t_iter, m.name AS model, h.name AS hardware, h.generation
  FROM result_codes r JOIN cur ON r.run_id = cur.id
    JOIN models m ON m.model_id = r.model_id JOIN hardware h ON h.hw_id = r.hw_id),
both AS (
  SELECT 0 AS side, * FROM a
  UNION ALL
  SELECT 1 AS side, * FROM b),
pairs AS (
  SELECT key, max(model) AS model, max(hardware) AS hardware, max(generation) AS generation,
    max(side = 0) AS in_prev, max(side = 1) AS in_cur,
    max(CASE WHEN side = 0 THEN status END) AS st_a,
    max(CASE WHEN side = 1 THEN status END) AS st_b,
    max(CASE WHEN side = 0 THEN t_iter END) AS t_a,
    max(CASE WHEN side = 1 THEN t_iter END) AS t_b
  FROM both GROUP BY key)
SELECT (SELECT id FROM prev) AS prev_run, (SELECT id FROM cur) AS run,
  (SELECT ra.spec_sha256 IS rb.spec_sha256 FROM runs ra, runs rb, prev, cur
   WHERE ra.run_id = prev.id AND rb.run_id = cur.id) AS same_spec,
  (SELECT ra.git_rev IS rb.git_rev FROM runs ra, runs rb, prev, cur
   WHERE ra.run_id = prev.id AND rb.run_id = cur.id) AS same_build,
  model, hardware, generation,
  sum(in_prev) AS rows_prev, sum(in_cur) AS rows_run,
  sum(in_cur AND NOT in_prev) AS added, sum(in_prev AND NOT in_cur) AS removed,
  sum(in_prev AND in_cur AND (st_a IS NOT st_b
      OR abs(coalesce(t_b, 0) - coalesce(t_a, 0)) > 1e-9 * abs(coalesce(t_a, 0))))
    AS changed,
  round(max(CASE WHEN in_prev AND in_cur AND t_a > 0 THEN abs(t_b / t_a - 1) END), 6)
    AS max_rel_change,
  round(min(CASE WHEN in_prev AND st_a = 0 THEN t_a END), 4) AS min_t_iter_prev_s,
  round(min(CASE WHEN in_cur AND st_b = 0 THEN t_b END), 4) AS min_t_iter_s
FROM pairs
GROUP BY model, hardware, generation
ORDER BY changed + added + removed DESC, model, hardware, generation;
