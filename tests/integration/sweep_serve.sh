#!/bin/sh
# sweep_serve.sh - 'ccsweep run' of a serving spec (workload: serve): every
# scenario of the grid in serve_results, one runs row (workload 'serve') with
# the counts, the rows equal to 'ccsweep serve' of the same plan, keep: best K
# under latency limits keeps the K best of each serving job, a bad spec exits
# 1 without touching the database, and under mpirun the run is written once.
. tests/integration/sweep_common.inc
need_tools "serving sweep"

cat >"$TMP/s.yaml" <<'YAML'
name: serve-small
workload: serve
models: [llama3-70b, mixtral-8x22b]
hardware: [h100-sxm, b200]
generations: [0, 1]
serve: {isl: 1000, osl: [200, 1000], concurrency: [1, 16, 64, max], weight_dtype: fp8, kv_dtype: fp8}
plan: {devices: 8, tp: [1, 2, 4, 8], pp: [1, 2], ep: [1, 2, 8], attn_dp: [false, true]}
YAML
$BIN run "$TMP/s.yaml" --db "$TMP/s.db" --quiet; rc=$?
check "a serving run exits 0" [ $rc -eq 0 ]
n=$(q "$TMP/s.db" "SELECT count(*) FROM serve_results")
check "every scenario of the grid is stored ($n of 3072)" [ "$n" = 3072 ]
check "one runs row, workload serve, complete, with its counts" \
    [ "$(q "$TMP/s.db" "SELECT workload, status, total, n_rows, n_ok + n_invalid + n_oom FROM runs")" = "serve|complete|3072|3072|3072" ]
row=$(q "$TMP/s.db" "SELECT tp, pp, ep, concurrency, tok_s_gpu, ttft FROM serve_results_view
    WHERE model = 'mixtral-8x22b' AND hardware = 'b200' AND generation = 0 AND osl = 1000
      AND status = 'ok' AND attn_dp = 0 AND concurrency = 64 ORDER BY idx LIMIT 1")
tp=$(echo "$row" | cut -d'|' -f1); pp=$(echo "$row" | cut -d'|' -f2); ep=$(echo "$row" | cut -d'|' -f3)
$BIN serve --model mixtral-8x22b --hw b200 --tp "$tp" --pp "$pp" --ep "$ep" --isl 1000 --osl 1000 \
    --weight-dtype fp8 --kv-dtype fp8 --concurrency 64 --json >"$TMP/one.json"
got=$(sqlite3 :memory: "SELECT json_extract(readfile('$TMP/one.json'), '\$.tok_s_gpu') = $(echo "$row" | cut -d'|' -f5)")
check "a stored row is what 'ccsweep serve' projects for its plan" [ "$got" = 1 ]
check "invalid plans are stored with a reason (ep without experts)" \
    [ "$(q "$TMP/s.db" "SELECT count(*) > 0 FROM serve_results_view WHERE model = 'llama3-70b' AND ep > 1 AND status = 'invalid' AND reason IS NOT NULL")" = 1 ]
nb=$(q "$TMP/s.db" "SELECT count(*) FROM serve_best")
check "serve_best: one plan per serving job ($nb of 16)" [ "$nb" = 16 ]

sed 's/^plan:/keep: {best: 2, tpot_max_ms: 40}\nplan:/' "$TMP/s.yaml" >"$TMP/k.yaml"
$BIN run "$TMP/k.yaml" --db "$TMP/k.db" --quiet
want=$(q "$TMP/s.db" "SELECT model, hardware, generation, osl, idx FROM (SELECT *, row_number() OVER
    (PARTITION BY model, hardware, generation, osl ORDER BY tok_s_gpu DESC, tpot, ttft, tp, pp, ep,
    attn_dp, idx) AS k FROM serve_results_view WHERE status = 'ok' AND tpot <= 0.040) WHERE k <= 2
    ORDER BY 1, 2, 3, 4, 5")
have=$(q "$TMP/k.db" "SELECT model, hardware, generation, osl, idx FROM serve_results_view ORDER BY 1, 2, 3, 4, 5")
check "keep: best 2 under TPOT <= 40 ms keeps the 2 best of each job ($(echo "$have" | wc -l) rows)" \
    [ -n "$have" -a "$want" = "$have" ]
check "keep: the runs row counts the rows left out" \
    [ "$(q "$TMP/k.db" "SELECT n_filtered = total - n_rows AND n_rows > 0 FROM runs")" = 1 ]

# Without plan: devices a replica's size is the job's: tp x pp over [1, 2, 4, 8]
# x [1, 2] are jobs of 1, 2, 4, 8 and 16 devices (2, 4 and 8 reached by two
# shapes each), as serve_best groups them, so keep: best 1 stores one plan for
# each of the five, the one serve_best ranks first in the full sweep.
cat >"$TMP/nd.yaml" <<'YAML'
name: serve-nodevices
workload: serve
models: [llama3-70b]
hardware: [h100-sxm]
serve: {isl: 1000, osl: 200, concurrency: [16, max], weight_dtype: fp8, kv_dtype: fp8}
plan: {tp: [1, 2, 4, 8], pp: [1, 2]}
YAML
sed 's/^plan:/keep: {best: 1}\nplan:/' "$TMP/nd.yaml" >"$TMP/ndk.yaml"
$BIN run "$TMP/nd.yaml" --db "$TMP/nd.db" --quiet
$BIN run "$TMP/ndk.yaml" --db "$TMP/ndk.db" --quiet
want=$(q "$TMP/nd.db" "SELECT devices, tp, pp, idx FROM serve_best ORDER BY devices")
have=$(q "$TMP/ndk.db" "SELECT devices, tp, pp, idx FROM serve_results ORDER BY devices")
check "keep: best 1 without plan: devices keeps one plan per replica size, serve_best's ($(echo "$have" | wc -l) of 5 rows)" \
    [ "$(echo "$want" | cut -d'|' -f1 | tr '\n' ' ')" = "1 2 4 8 16 " -a "$want" = "$have" ]

# the options of shards (writer groups) do not apply: rank 0 writes a serving
# run alone; each is refused, not ignored
for opt in "--writers node" "--ranks-per-writer 1" "--shard-dir $TMP"; do
    $BIN run "$TMP/s.yaml" --db "$TMP/w.db" $opt --quiet 2>"$TMP/err"; rc=$?
    check "a serving spec with ${opt%% *} exits 1 naming it, no database (rc $rc)" \
        sh -c "[ $rc -eq 1 ] && grep -q 'serving spec (workload: serve) takes no ${opt%% *}' '$TMP/err' && [ ! -e '$TMP/w.db' ]"
done
printf 'workload: serve\nmodels: llama3-70b\nhardware: h100-sxm\nserve: {isl: 10, osl: 10, kv_dtype: fp5}\n' >"$TMP/bad.yaml"
$BIN run "$TMP/bad.yaml" --db "$TMP/bad.db" 2>"$TMP/err"; rc=$?
check "a bad serving spec exits 1 naming the field, no database" \
    sh -c "[ $rc -eq 1 ] && grep -q \"bad.yaml:4:.*kv_dtype\" '$TMP/err' && [ ! -e '$TMP/bad.db' ]"

# --resume, as for a training spec: a new run when there is none, nothing when
# the spec's latest run is complete, else the latest unfinished run continued
# from its committed scenarios (rows commit with n_done, in index order: the
# rows of scenarios 0 .. n_done - 1 are exactly the committed ones), to the
# rows of a run never cut short. A run is made unfinished here as a stop
# leaves it: n_done at a commit, the rows after it gone, the counts theirs.
serve_rows() { q "$1" "SELECT idx, model, hardware, generation, devices, tp, pp, ep, attn_dp, dp, isl, osl,
    concurrency, status, reason, tok_s_gpu, ttft, tpot FROM serve_results ORDER BY idx"; }
cut_run() { # DB N: run 1 of DB as if stopped after its first N scenarios
    q "$1" "DELETE FROM serve_results WHERE idx >= $2;
        UPDATE runs SET status = 'interrupted', n_done = $2,
          n_rows = (SELECT count(*) FROM serve_results), n_filtered = $2 - (SELECT count(*) FROM serve_results),
          n_ok = (SELECT count(*) FROM serve_results WHERE status = 0),
          n_invalid = (SELECT count(*) FROM serve_results WHERE status = 1),
          n_oom = (SELECT count(*) FROM serve_results WHERE status = 2)"
}
$BIN run "$TMP/s.yaml" --db "$TMP/r.db" --resume --quiet 2>"$TMP/err"; rc=$?
check "--resume of a serving spec with no run in the file starts one and completes it (exit $rc)" \
    [ $rc -eq 0 -a "$(q "$TMP/r.db" "SELECT count(*) || ' ' || status || ' ' || n_rows FROM runs")" = "1 complete 3072" ]
$BIN run "$TMP/s.yaml" --db "$TMP/r.db" --resume >"$TMP/out" 2>&1; rc=$?
check "--resume of a complete serving run adds nothing, exit 0 (rc $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q 'already complete .*nothing to resume' '$TMP/out' && [ \"\$(sqlite3 '$TMP/r.db' 'SELECT count(*) FROM runs')\" = 1 ]"
cut_run "$TMP/r.db" 1000
$BIN run "$TMP/s.yaml" --db "$TMP/r.db" --resume >"$TMP/out" 2>&1; rc=$?
check "--resume of an unfinished serving run goes on from scenario 1000 of 3072 (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q 'resuming serving run 1: 1000 of 3072 scenarios already done' '$TMP/out' && grep -q ': 2072 scenarios, 2072 rows' '$TMP/out'"
counts="count(*), status, n_done, n_rows, n_ok, n_invalid, n_oom, n_filtered"
check "the resumed run: complete, its counts and rows those of a run never cut short, two sessions" \
    [ "$(q "$TMP/r.db" "SELECT $counts, sessions, (SELECT count(*) FROM sessions) FROM runs")" = \
      "$(q "$TMP/s.db" "SELECT $counts, 2, 2 FROM runs")" -a \
      "$(serve_rows "$TMP/r.db" | md5sum)" = "$(serve_rows "$TMP/s.db" | md5sum)" ]
# under keep a job's rows commit together: a stop falls after a whole job
# (192 scenarios each here), and the resumed run keeps the best of the rest
cp "$TMP/k.db" "$TMP/kr.db"
cut_run "$TMP/kr.db" $((192 * 5))
$BIN run "$TMP/k.yaml" --db "$TMP/kr.db" --resume --quiet 2>"$TMP/err"; rc=$?
check "--resume under keep: the rows and counts of the run never cut short (exit $rc)" \
    [ $rc -eq 0 -a "$(serve_rows "$TMP/kr.db" | md5sum)" = "$(serve_rows "$TMP/k.db" | md5sum)" -a \
      "$(q "$TMP/kr.db" "SELECT $counts FROM runs")" = "$(q "$TMP/k.db" "SELECT $counts FROM runs")" ]
q "$TMP/kr.db" "UPDATE runs SET status = 'interrupted'"
$BIN run "$TMP/s.yaml" --db "$TMP/kr.db" --resume --quiet 2>"$TMP/err"; rc=$?
check "--resume of another spec while a serving run is unfinished exits 1 naming it" \
    sh -c "[ $rc -eq 1 ] && grep -q 'the latest unfinished run (1, .serve-small.) was started from a different spec' '$TMP/err'"
# SIGINT, SIGTERM and SIGUSR1 stop a serving run as they stop a training run
# (run --help): the rows of the scenarios done commit, the run is marked
# interrupted, the exit status is 128 + the signal, and --resume completes the
# run to the rows of one never stopped. Each job waits 50 ms
# (CCSWEEP_TEST_CHUNK_DELAY_US; 64 jobs: 3.2 s), so a signal sent once the
# run holds the writer row, or once its first commit is in the file (rows
# commit at least once a second), lands mid-run.
cat >"$TMP/slow.yaml" <<'YAML'
name: serve-slow
workload: serve
models: [llama3-8b, llama3-70b]
hardware: [h100-sxm, b200]
generations: [0, 1]
serve: {isl: [500, 1000], osl: [100, 200, 400, 800], concurrency: [16, max]}
plan: {devices: 8, tp: [1, 2, 4, 8]}
YAML
sed 's/^plan:/keep: {best: 1}\nplan:/' "$TMP/slow.yaml" >"$TMP/slowk.yaml"
$BIN run "$TMP/slow.yaml" --db "$TMP/slow-ref.db" --quiet
$BIN run "$TMP/slowk.yaml" --db "$TMP/slowk-ref.db" --quiet
# stopped WAIT SPEC DB SIG LAUNCH...: run SPEC into DB slowly; once WAIT DB
# returns (wait_writer or wait_done), send SIG when the runs row says running
# (early=0; early=1: the run had ended, or committed nothing until its end);
# sets rc and st (the run's status at the end)
stopped() {
    until=$1 spec=$2 db=$3 sig=$4
    shift 4
    CCSWEEP_TEST_CHUNK_DELAY_US=50000 "$@" $BIN run "$spec" --db "$db" --quiet >"$TMP/stop.out" 2>"$TMP/stop.err" &
    job=$!
    early=1
    $until "$db" && [ "$(q "$db" "SELECT status FROM runs")" = running ] && kill -$sig $job && early=0
    wait $job; rc=$?
    st=$(q "$db" "SELECT status FROM runs")
}
stopped wait_writer "$TMP/slow.yaml" "$TMP/int.db" INT
if [ $early = 1 ]; then
    skip "SIGINT to a serving run (it finished before the signal)"
else
    check "SIGINT to a serving run: exit 130, run interrupted, the resume command printed (rc $rc, $st)" \
        sh -c "[ $rc -eq 130 -a '$st' = interrupted ] && grep -q 'interrupted by signal 2; committed rows are kept, finish with: ccsweep run .*slow.yaml --db .*int.db --resume' '$TMP/stop.out'"
    check "after SIGINT: integrity_check ok, part of the grid done, the counts those of the rows committed" \
        [ "$(q "$TMP/int.db" "SELECT (SELECT group_concat(integrity_check) FROM pragma_integrity_check), n_done > 0 AND n_done < total, n_rows = (SELECT count(*) FROM serve_results), n_rows = n_done, (SELECT max(idx) + 1 FROM serve_results) = n_done, (SELECT count(*) FROM writer) FROM runs")" = "ok|1|1|1|1|0" ]
    $BIN run "$TMP/slow.yaml" --db "$TMP/int.db" --resume --quiet 2>"$TMP/err"; rc=$?
    check "--resume after SIGINT completes the run with the rows of one never stopped (exit $rc)" \
        [ $rc -eq 0 -a "$(q "$TMP/int.db" "SELECT count(*) || status FROM runs")" = 1complete -a \
          "$(serve_rows "$TMP/int.db" | md5sum)" = "$(serve_rows "$TMP/slow-ref.db" | md5sum)" ]
fi
stopped wait_done "$TMP/slowk.yaml" "$TMP/term.db" TERM $MPIRUN -n 2
check "a serving run of 3.2 s commits its rows while it runs (at least once a second)" [ $early = 0 ]
if [ $early = 0 ]; then
    check "SIGTERM to mpirun of a serving run under keep: non-zero exit, run interrupted after a whole job (rc $rc, $st)" \
        [ $rc -ne 0 -a "$st" = interrupted -a "$(q "$TMP/term.db" "SELECT n_done % 8 = 0 AND n_done < total AND n_rows = (SELECT count(*) FROM serve_results) FROM runs")" = 1 ]
    $BIN run "$TMP/slowk.yaml" --db "$TMP/term.db" --resume --quiet 2>"$TMP/err"; rc=$?
    check "--resume after SIGTERM completes the run with the rows kept by one never stopped (exit $rc)" \
        [ $rc -eq 0 -a "$(q "$TMP/term.db" "SELECT count(*) || status || (SELECT group_concat(integrity_check) FROM pragma_integrity_check) FROM runs")" = 1completeok -a \
          "$(serve_rows "$TMP/term.db" | md5sum)" = "$(serve_rows "$TMP/slowk-ref.db" | md5sum)" ]
fi
$MPIRUN -n 2 $BIN run "$TMP/s.yaml" --db "$TMP/m.db" --quiet 2>/dev/null; rc=$?
check "under mpirun -n 2 the run is written once" \
    [ $rc -eq 0 -a "$(q "$TMP/m.db" "SELECT count(*) FROM runs; SELECT count(*) FROM serve_results")" = "1
3072" ]

# the same serving spec again: as for a training spec, the complete run (same
# sha256, catalog entries) is named and nothing is added (exit 1) until
# --new-run asks for another run; other inputs (a changed catalog entry) start
# a new run
$BIN run "$TMP/s.yaml" --db "$TMP/s.db" --quiet >"$TMP/again" 2>&1; rc=$?
check "a second run of a complete serving spec exits 1 naming run 1 and --new-run, adds no run (got $rc)" \
    sh -c "[ $rc -eq 1 ] && grep -q 'run 1 of this spec .* is already complete in .*s.db: nothing was added' '$TMP/again' &&
           grep -q -- '--new-run' '$TMP/again' && [ \"\$(sqlite3 '$TMP/s.db' 'SELECT count(*) FROM runs')\" = 1 ]"
$BIN run "$TMP/s.yaml" --db "$TMP/s.db" --new-run --quiet >/dev/null 2>&1; rc=$?
check "--new-run adds serving run 2 with the same rows as run 1 (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && [ \"\$(sqlite3 '$TMP/s.db' \"SELECT group_concat(run_id || ':' || workload || ':' || status || ':' || n_rows) FROM runs\")\" = '1:serve:complete:3072,2:serve:complete:3072' ] &&
           [ \"\$(sqlite3 '$TMP/s.db' 'SELECT count(*) FROM (SELECT model, hardware, generation, idx, tok_s_gpu FROM serve_results WHERE run_id = 1 EXCEPT SELECT model, hardware, generation, idx, tok_s_gpu FROM serve_results WHERE run_id = 2)')\" = 0 ]"
{ echo 'hardware:'; awk '/^  - name: b200$/ { on = 1; print; next } on && /^  - name:/ { exit }
    on { sub(/mem_gbps: .*/, "mem_gbps: 8000"); print }' sweeps/catalog/hardware.yaml; } >"$TMP/b200.yaml"
$BIN run "$TMP/s.yaml" --db "$TMP/s.db" --catalog "$TMP/b200.yaml" --quiet >/dev/null 2>"$TMP/err"; rc=$?
check "a changed catalog entry (b200's memory bandwidth) starts serving run 3 (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && [ \"\$(sqlite3 '$TMP/s.db' 'SELECT count(*) FROM runs')\" = 3 ] && grep -q 'mem_gbps: 8000' '$TMP/b200.yaml'"
