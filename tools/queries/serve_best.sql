-- serve_best.sql - Which serving plan should I run, and where does its decode step
-- go? Per serving job (model, hardware generation, devices, prompt and output
-- lengths, weight and KV formats) of a serving run, the fitting plan with the most
-- output tokens/s per GPU at any concurrency (the order of the view serve_best: ties to lower
-- TPOT, TTFT, then the simpler plan; no latency limit), its TTFT, TPOT and the
-- split of its decode step: compute-bound, memory-bound and communication (every
-- collective is on the critical path: all of it is exposed). A job without a
-- fitting plan has one row with NULL plan columns.
-- (ccsweep report: the serving section's tables and the plot serve_tok_gen.png)
-- Run: the latest serving run (runs.workload = 'serve'); another one with
--   sqlite3 -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 results/serve.db < tools/queries/serve_best.sql
WITH run AS (SELECT coalesce(:run, (SELECT max(run_id) FROM runs WHERE workload = 'serve')) AS id),
ranked AS (
  SELECT v.*, row_number() OVER (
      PARTITION BY v.model, v.hardware, v.generation, v.devices, v.isl, v.osl, v.wdtype,
        v.kvdtype
      ORDER BY tok_s_gpu DESC, tpot, ttft, tp, pp, ep, attn_dp, idx) AS rk
  FROM serve_results_view v JOIN run ON v.run_id = run.id
  WHERE v.status = 'ok'),
best AS MATERIALIZED (SELECT * FROM ranked WHERE rk = 1),
jobs AS (
  SELECT DISTINCT r.model, r.hardware, r.generation, r.devices, r.isl, r.osl, r.wdtype,
    r.kvdtype
  FROM serve_results r JOIN run ON r.run_id = run.id)
SELECT j.model, j.hardware, j.generation, j.devices, j.isl, j.osl,
  w.name AS weight_dtype, k.name AS kv_dtype,
  b.tp, b.pp, b.ep, b.attn_dp, b.dp, b.concurrency,
  round(b.ttft_ms, 2) AS ttft_ms, round(b.tpot_ms, 3) AS tpot_ms,
  round(b.tok_s_gpu, 1) AS tok_s_gpu,
  round(100 * b.share_compute, 2) AS compute_pct,
  round(100 * b.share_memory, 2) AS memory_pct,
  round(100 * b.share_comm, 2) AS comm_pct
FROM jobs j
  LEFT JOIN best b ON b.model = j.model AND b.hardware = j.hardware
    AND b.generation = j.generation AND b.devices = j.devices AND b.isl = j.isl
    AND b.osl = j.osl AND b.wdtype = j.wdtype AND b.kvdtype = j.kvdtype
  LEFT JOIN serve_dtypes w ON w.dtype = j.wdtype
  LEFT JOIN serve_dtypes k ON k.dtype = j.kvdtype
ORDER BY j.model, j.hardware, j.generation, j.devices, j.isl, j.osl, j.wdtype, j.kvdtype;
