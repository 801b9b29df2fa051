-- serve_tpot.sql - What does concurrency cost in time per output token? Per serving
-- job, tp and concurrency (requests in flight per replica), the fitting plan with
-- the most output tokens/s per GPU (over pp, ep and attention data parallelism;
-- serve_best's order), its TPOT, TTFT and tokens/s per GPU. (ccsweep report:
-- serving plot serve_tpot.png, one line per model x hardware x tp)
-- Run: the latest serving run (runs.workload = 'serve'); another one with
--   sqlite3 -cmd '.param set :run 3' DB < FILE
-- Usage: sqlite3 results/serve.db < tools/queries/serve_tpot.sql
WITH run AS (SELECT coalesce(:run, (SELECT max(run_id) FROM runs WHERE workload = 'serve')) AS id),
ranked AS (
  SELECT v.*, row_number() OVER (
      PARTITION BY v.model, v.hardware, v.generation, v.devices, v.isl, v.osl, v.wdtype,
        v.kvdtype, v.tp, v.concurrency
      ORDER BY tok_s_gpu DESC, tpot, ttft, tp, pp, ep, attn_dp, idx) AS rk
  FROM serve_results_view v JOIN run ON v.run_id = run.id
  WHERE v.status = 'ok')
SELECT model, hardware, generation, devices, isl, osl, weight_dtype, kv_dtype, tp, pp, ep,
  attn_dp, concurrency, round(tpot_ms, 3) AS tpot_ms, round(ttft_ms, 2) AS ttft_ms,
  round(tok_s_gpu, 1) AS tok_s_gpu, round(100 * share_comm, 2) AS comm_pct
FROM ranked WHERE rk = 1
ORDER BY model, hardware, generation, devices, isl, osl, wdtype, kvdtype, tp, concurrency;
