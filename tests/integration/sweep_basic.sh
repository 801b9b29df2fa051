#!/bin/sh
# sweep_basic.sh - 'ccsweep run' end to end under mpirun: row count = grid
# count, byte-identical rows for 1, 2 and 4 ranks and any chunk size,
# provenance, views, where-filter, --detail, schema-version and
# not-a-database refusals.
. tests/integration/sweep_common.inc
need_tools "sweep basics"
SPEC=tests/data/sweep_small.yaml

$MPIRUN -n 1 $BIN run $SPEC --db "$TMP/n1.db" --quiet >"$TMP/out1" 2>"$TMP/err1"; rc=$?
check "run -n 1 exits 0" [ $rc -eq 0 ]
total=$(q "$TMP/n1.db" "SELECT total FROM runs WHERE run_id = 1")
rows=$(q "$TMP/n1.db" "SELECT count(*) FROM results WHERE run_id = 1")
check "row count ($rows) equals the grid count (576)" [ "$rows" = 576 -a "$total" = 576 ]
check "run marked complete with n_done = total" \
    [ "$(q "$TMP/n1.db" "SELECT status || ' ' || n_done FROM runs")" = "complete 576" ]
check "one row per index" [ "$(q "$TMP/n1.db" "SELECT count(DISTINCT idx) || ' ' || min(idx) || ' ' || max(idx) FROM results")" = "576 0 575" ]
grep -q '^ccsweep run: run 1 complete: 576/576 scenarios' "$TMP/out1"
check "summary line printed" [ $? -eq 0 ]

result_rows "$TMP/n1.db" >"$TMP/rows1"
SLURM_JOB_ID=4242 SLURM_RESTART_COUNT=3 $MPIRUN -x SLURM_JOB_ID -x SLURM_RESTART_COUNT -n 2 \
    $BIN run $SPEC --db "$TMP/n2.db" --chunk 7 --quiet >/dev/null 2>"$TMP/err2"; rc2=$?
$MPIRUN -n 4 $BIN run $SPEC --db "$TMP/n4.db" --chunk 100 --quiet >/dev/null 2>"$TMP/err4"; rc4=$?
$BIN run $SPEC --db "$TMP/s.db" --quiet --db-locking exclusive >/dev/null 2>&1; rcs=$?
check "runs with -n 2 --chunk 7, -n 4 --chunk 100 and without mpirun exit 0" \
    [ $rc2 -eq 0 -a $rc4 -eq 0 -a $rcs -eq 0 ]
result_rows "$TMP/n2.db" >"$TMP/rows2"
result_rows "$TMP/n4.db" >"$TMP/rows4"
result_rows "$TMP/s.db" >"$TMP/rowss"
check "identical rows for -n 1 and -n 2 --chunk 7" \
    cmp -s "$TMP/rows1" "$TMP/rows2"
check "identical rows for -n 1 and -n 4 --chunk 100" cmp -s "$TMP/rows1" "$TMP/rows4"
check "identical rows for -n 1 and a singleton run with --db-locking exclusive" cmp -s "$TMP/rows1" "$TMP/rowss"

sha=$(sha256sum $SPEC | cut -d' ' -f1)
check "provenance: spec sha256, spec text, version, ranks, argv, slurm job id and restart count" \
    [ "$(q "$TMP/n2.db" "SELECT spec_sha256 = '$sha', spec_text = CAST(readfile('$SPEC') AS TEXT), version != '',
        ranks, argv LIKE 'ccsweep run % --chunk 7 --quiet', slurm_job_id, slurm_restart_count FROM runs")" \
      = "1|1|1|2|1|4242|3" ]
check "sessions table has one finished session" \
    [ "$(q "$TMP/n2.db" "SELECT count(*), max(status) FROM sessions")" = "1|complete" ]

check "results joins every row with readable names" \
    [ "$(q "$TMP/n1.db" "SELECT count(*) FROM results WHERE model IN ('llama3-8b','gpt3-175b')
        AND hardware IN ('a100-80g','mi300x') AND status IN ('ok','invalid','oom') AND recompute IN ('selective','full')")" = 576 ]
check "scenario names rendered from the template" \
    [ "$(q "$TMP/n1.db" "SELECT scenario FROM results WHERE idx = 0")" = "llama3-8b/a100-80g/g0/n64-tp1-pp1-selective" ]
check "invalid rows carry a reason and no timings" \
    [ "$(q "$TMP/n1.db" "SELECT count(*) FROM results WHERE status = 'invalid' AND (reason = 'ok' OR t_iter IS NOT NULL)")" = 0 ]
# best (best.h): highest tokens/s among fitting plans without what-if
# mitigations at equal model, hardware generation, devices, gbs and seq; ties
# to lower memory per device. Checked here by a plain correlated query.
ELIG="v.status = 'ok' AND v.tp_overlap = 0 AND v.innet_reduce = 0 AND v.comm_compress = 1 AND v.net_bw_factor = 1"
SAME="v.run_id = b.run_id AND v.model = b.model AND v.hardware = b.hardware AND v.generation = b.generation
    AND v.devices = b.devices AND v.gbs = b.gbs AND v.seq = b.seq"
best_bad=$(q "$TMP/n1.db" "SELECT count(*) FROM best_plan b WHERE EXISTS (SELECT 1 FROM results v
    WHERE $ELIG AND $SAME AND (v.tokens_per_s > b.tokens_per_s
      OR (v.tokens_per_s = b.tokens_per_s AND v.mem_total < b.mem_total)))")
best_n=$(q "$TMP/n1.db" "SELECT count(*) FROM best_plan")
groups=$(q "$TMP/n1.db" "SELECT count(*) FROM (SELECT DISTINCT v.run_id, v.model, v.hardware, v.generation,
    v.devices, v.gbs, v.seq FROM results v WHERE $ELIG)")
check "best_plan holds one plan per group, none with a faster (or as fast and smaller) rival ($best_n groups)" \
    [ "$best_n" -gt 0 -a "$best_bad" = 0 -a "$best_n" = "$groups" ]
check "comm_share's best plan is best_plan's, for every group" \
    [ "$(q "$TMP/n1.db" "SELECT count(*) FROM comm_share c JOIN best_plan b ON b.run_id = c.run_id
        AND b.idx = c.best_idx AND b.model = c.model AND b.devices = c.devices")" = "$groups" ]
check "comm_share's shares are fractions" \
    [ "$(q "$TMP/n1.db" "SELECT count(*) FROM comm_share WHERE comm_fraction_avg BETWEEN 0 AND 1
        AND best_comm_fraction BETWEEN 0 AND 1")" = "$groups" ]
check "every stored plan uses the model's global batch (gbs: model)" \
    [ "$(q "$TMP/n1.db" "SELECT count(*) FROM results r JOIN models m ON m.model_id = r.model_id
        WHERE r.gbs <> m.gbs OR m.gbs IS NULL OR m.gbs <= 0")" = 0 ]

# progress lines: ok + invalid + oom + filtered is the count done (rows of
# chunks still in flight are not counted yet), the ETA is h:mm:ss; rank 0's
# peak RSS and CPU only with --verbose
$MPIRUN -n 3 $BIN run $SPEC --db "$TMP/pr.db" --chunk 5 --progress 1e-9 >/dev/null 2>"$TMP/prog"
bad=$(awk '/^ccsweep: [0-9]+\/[0-9]+ / { n++; split($2, d, "/");
    if ($(NF-6) + $(NF-4) + $(NF-2) + $NF != d[1] || $6 !~ /^[0-9]+:[0-5][0-9]:[0-5][0-9]$/) b++ }
    END { print n + 0, b + 0 }' "$TMP/prog")
check "progress lines ($bad: lines, bad ones): the counts add up to what is done, ETA h:mm:ss" \
    [ "${bad% *}" -gt 5 -a "${bad#* }" = 0 ]
check "no peak RSS or CPU lines without --verbose" [ "$(grep -c 'peak RSS\|CPU' "$TMP/prog")" = 0 ]
$BIN run $SPEC --db "$TMP/pv.db" --verbose >/dev/null 2>"$TMP/verb"
check "--verbose prints rank 0's peak RSS and CPU" \
    sh -c "grep -q '^ccsweep: rank 0 peak RSS' '$TMP/verb' && grep -q '^ccsweep: rank 0 CPU' '$TMP/verb'"

# where-filter on the workers, --detail, a second run in the same database
sed 's/^name: small/name: small-fits\nwhere: "fits and tp >= 2"/' $SPEC >"$TMP/fits.yaml"
$MPIRUN -n 2 $BIN run "$TMP/fits.yaml" --db "$TMP/n1.db" --detail --quiet >/dev/null 2>&1; rc=$?
want=$(q "$TMP/n1.db" "SELECT count(*) FROM results WHERE run_id = 1 AND status = 'ok' AND tp >= 2")
got=$(q "$TMP/n1.db" "SELECT n_rows || ' ' || n_filtered || ' ' || n_done FROM runs WHERE run_id = 2")
check "where-filter keeps only matching rows ($want) and counts the rest as filtered" \
    [ $rc -eq 0 -a "$got" = "$want $((576 - want)) 576" ]
check "a second run leaves run 1 untouched" [ "$(q "$TMP/n1.db" "SELECT count(*) FROM results WHERE run_id = 1")" = 576 ]
check "--detail stores per-region times for every kept row" \
    [ "$(q "$TMP/n1.db" "SELECT count(DISTINCT idx) FROM regions WHERE run_id = 2")" = "$want" ]
check "filtered rows equal the unfiltered run's rows" [ "$(q "$TMP/n1.db" "SELECT count(*) FROM results a JOIN results b
    ON a.idx = b.idx AND a.key = b.key AND a.t_iter = b.t_iter WHERE a.run_id = 2 AND b.run_id = 1")" = "$want" ]

# --detail: a scenario's rows in the regions view are the regions 'ccsweep
# project --json' computes for the same plan (an independent path: no store)
$BIN run tests/data/schema5.yaml --db "$TMP/rg.db" --detail --quiet >/dev/null 2>&1
$BIN project --model llama3-8b --hw h100-sxm --gen 0 --evolution memory-wall --devices 16 --tp 2 \
    --pp 1 --gbs 32 --seq 4096 --recompute selective --json >"$TMP/rg.json" 2>/dev/null
same=$(q "$TMP/rg.db" "WITH p AS (SELECT json_extract(value, '\$.name') AS name,
      json_extract(value, '\$.time') AS time, json_extract(value, '\$.count') AS count,
      json_extract(value, '\$.flops') AS flops, json_extract(value, '\$.bytes') AS bytes
    FROM json_each(readfile('$TMP/rg.json'), '\$.regions') WHERE json_extract(value, '\$.time') > 0),
  d AS (SELECT n.name, g.time, g.count, g.flops, g.bytes FROM regions g
    JOIN region_names n USING (region) JOIN results v ON v.run_id = g.run_id AND v.idx = g.idx
    WHERE v.model = 'llama3-8b' AND v.hardware = 'h100-sxm' AND v.generation = 0 AND v.tp = 2
      AND v.pp = 1)
  SELECT (SELECT count(*) FROM p) || '|' || (SELECT count(*) FROM d) || '|' || (SELECT count(*)
    FROM p JOIN d USING (name) WHERE p.count = d.count AND abs(p.time - d.time) <= 1e-13 * d.time
      AND abs(p.flops - d.flops) <= 1e-13 * abs(d.flops)
      AND abs(p.bytes - d.bytes) <= 1e-13 * abs(d.bytes))")
check "--detail: a scenario's stored regions are those 'project --json' gives (projected|stored|equal: $same)" \
    sh -c "[ '${same%%|*}' -gt 0 ] && [ '$same' = '${same%%|*}|${same%%|*}|${same%%|*}' ]"

# --resume of a complete run does nothing
out=$($BIN run $SPEC --db "$TMP/n2.db" --resume 2>&1); rc=$?
check "--resume of a complete run exits 0 and adds nothing" \
    [ $rc -eq 0 -a "$(q "$TMP/n2.db" "SELECT count(*) FROM runs")" = 1 ]

# the same spec again, without --resume: the complete run is named, nothing
# added (exit 1) until --new-run asks for another run
$MPIRUN -n 2 $BIN run $SPEC --db "$TMP/n2.db" --quiet >"$TMP/again" 2>&1; rc=$?
check "a second run of a complete spec exits 1 naming run 1 and --new-run, adds no run (got $rc)" \
    sh -c "[ $rc -eq 1 ] && grep -q 'run 1 of this spec .* is already complete in .*n2.db: nothing was added' '$TMP/again' &&
           grep -q -- '--new-run' '$TMP/again' && [ \"\$(sqlite3 '$TMP/n2.db' 'SELECT count(*) FROM runs')\" = 1 ]"
$BIN run $SPEC --db "$TMP/n2.db" --resume --new-run >/dev/null 2>"$TMP/both"; rc=$?
check "--resume with --new-run is a usage error" \
    sh -c "[ $rc -eq 1 ] && grep -q 'give --resume or --new-run, not both' '$TMP/both'"
$BIN run $SPEC --db "$TMP/n2.db" --new-run --quiet >/dev/null 2>&1; rc=$?
check "--new-run appends run 2, the same rows as run 1 (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && [ \"\$(sqlite3 '$TMP/n2.db' \"SELECT group_concat(run_id || ':' || status || ':' || n_rows) FROM runs\")\" = '1:complete:576,2:complete:576' ]"
sed 's/^name: small$/name: small-renamed/' $SPEC >"$TMP/renamed.yaml"
$BIN run "$TMP/renamed.yaml" --db "$TMP/n2.db" --quiet >/dev/null 2>&1; rc=$?
check "another spec (another sha256) starts a new run (exit $rc)" \
    [ $rc -eq 0 -a "$(q "$TMP/n2.db" "SELECT count(*) FROM runs")" = 3 ]

# refusals: another schema version, a file that is not a database
cp "$TMP/n2.db" "$TMP/v99.db"
q "$TMP/v99.db" "PRAGMA user_version = 99" >/dev/null
$BIN run $SPEC --db "$TMP/v99.db" --quiet >/dev/null 2>"$TMP/errv"; rc=$?
check "schema version mismatch exits 1 with a clear message" \
    sh -c "[ $rc -eq 1 ] && grep -q 'schema version 99, but this ccsweep' '$TMP/errv'"
check "the mismatching database is left as it was" \
    [ "$(q "$TMP/v99.db" "PRAGMA user_version; SELECT count(*) FROM runs")" = "99
3" ]
echo "plain text, not sqlite" >"$TMP/text.db"
$BIN run $SPEC --db "$TMP/text.db" --quiet >/dev/null 2>"$TMP/errt"; rc=$?
check "a file that is not a database exits 1" [ $rc -eq 1 ]

$BIN run --help >/dev/null; rc=$?
$BIN run $SPEC --chunk 0 >/dev/null 2>&1; rc2=$?
check "run --help exits 0, a bad option exits 1" [ $rc -eq 0 -a $rc2 -eq 1 ]

# calibration: a spec naming a profile projects with the fitted curves
{
    echo "op,dtype,m,n,k,bytes,group,level,time_s,reps"
    for s in 256 512 1024 2048 4096 8192; do
        for k in 1024 4096 12288; do
            awk -v m=$s -v k=$k 'BEGIN { f = 2 * m * m * k;
                printf "gemm,bf16,%d,%d,%d,%d,1,,%.6e,10\n", m, m, k, 2 * (2 * m * k + m * m), f / 1.5e14 + 8e-6 }'
        done
    done
} >"$TMP/mini.csv"
cat >"$TMP/cal.yaml" <<EOS
models: [gpt3-175b]
hardware: [a100-80g]
plan: {devices: 512, tp: [2, 8], pp: 8}
calibration:
  a100-80g: mini.csv
EOS
sed '/calibration/d; /mini.csv/d' "$TMP/cal.yaml" >"$TMP/syn.yaml"
$BIN run "$TMP/cal.yaml" --db "$TMP/cal.db" --quiet >/dev/null 2>"$TMP/errc"; rc=$?
if [ $rc -ne 0 ] && grep -q "cannot load the profile" "$TMP/errc"; then
    skip "calibration profile in a spec (opmodel_load refused the test profile: $(cat "$TMP/errc"))"
else
    $BIN run "$TMP/syn.yaml" --db "$TMP/cal.db" --quiet >/dev/null 2>&1
    check "calibration: profile recorded and used (t_iter differs from the synthetic run)" \
        [ $rc -eq 0 -a "$(q "$TMP/cal.db" "SELECT count(*) FROM hardware WHERE calibration LIKE '%/mini.csv'")" = 1 \
          -a "$(q "$TMP/cal.db" "SELECT count(*) FROM results a JOIN results b ON a.idx = b.idx
                 WHERE a.run_id = 1 AND b.run_id = 2 AND a.t_iter != b.t_iter")" = 2 ]
    src=$(q "$TMP/cal.db" "SELECT group_concat(op || '/' || coalesce(dtype, level) || '=' || source, ' ')
            FROM op_sources WHERE run_id = 1 AND op IN ('gemm', 'layernorm', 'allreduce')
            AND (dtype IN ('bf16', 'fp32') OR level = 'intra')")
    check "calibration: op_sources says gemm/bf16 measured, the rest synthetic ($src)" \
        [ "$src" = "gemm/fp32=synthetic gemm/bf16=measured layernorm/fp32=synthetic layernorm/bf16=synthetic allreduce/intra=synthetic" ]
    cal=$(q "$TMP/cal.db" "SELECT count(*) FROM op_sources WHERE run_id = 1 AND source = 'measured' AND calibration LIKE '%/mini.csv'")
    nsyn=$(q "$TMP/cal.db" "SELECT count(*) || ' ' || sum(source = 'synthetic') FROM op_sources WHERE run_id = 2")
    check "calibration: the measured row names the profile ($cal); a run without one is all synthetic ($nsyn)" \
        [ "$cal" = 1 -a "${nsyn% *}" = "${nsyn#* }" -a "${nsyn% *}" -gt 0 ]
fi
echo "op,dtype" >"$TMP/bad.csv"
sed 's/mini.csv/bad.csv/' "$TMP/cal.yaml" >"$TMP/bad.yaml"
$BIN run "$TMP/bad.yaml" --db "$TMP/bad.db" --quiet >/dev/null 2>"$TMP/errb"; rc=$?
check "calibration: a profile that does not load is a spec error at its line, no database" \
    sh -c "[ $rc -eq 1 ] && grep -q '$TMP/bad.yaml:5:13: field .calibration.a100-80g.: cannot load the profile' '$TMP/errb' && [ ! -e '$TMP/bad.db' ]"
