-- serve_comm_tp.sql - How does the communication share of a decode step change
-- with the tensor-parallel degree? Per serving job and tp, the fitting plan with
-- the most output tokens/s per GPU at that tp (over pp, ep, attention data
-- parallelism and concurrency; serve_best's order within the tp), with the split
-- of its decode step. (ccsweep report: serving plot serve_comm_tp.png, one line per
-- generation)
-- Run: the latest serving run (runs.workload = 'serve'); another one with
--   sqlite3 -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 results/serve.db < tools/queries/serve_comm_tp.sql
WITH run AS (SELECT coalesce(:run, (SELECT max(run_id) FROM runs WHERE workload = 'serve')) AS id),
ranked AS (
  SELECT v.*, row_number() OVER (
      PARTITION BY v.model, v.hardware, v.generation, v.devices, v.isl, v.osl, v.wdtype,
        v.kvdtype, v.tp
      ORDER BY tok_s_gpu DESC, tpot, ttft, tp, pp, ep, attn_dp, idx) AS rk
  FROM serve_results_view v JOIN run ON v.run_id = run.id
  WHERE v.status = 'ok')
SELECT model, hardware, generation, devices, isl, osl, weight_dtype, kv_dtype, tp, pp, ep,
  attn_dp, concurrency, round(tpot_ms, 3) AS tpot_ms, round(tok_s_gpu, 1) AS tok_s_gpu,
  round(100 * share_compute, 2) AS compute_pct,
  round(100 * share_memory, 2) AS memory_pct,
  round(100 * share_comm, 2) AS comm_pct
FROM ranked WHERE rk = 1
ORDER BY model, hardware, generation, devices, isl, osl, wdtype, kvdtype, tp;
