#!/bin/sh
# sweep_counters.sh - the counts of a run (runs.n_done, n_rows, n_ok,
# n_invalid, n_oom, n_filtered) describe exactly the rows its file holds,
# however the run stops: a full disk during a run, during --resume, during a
# shard merge, with one rank, two ranks or two writers, under a serving run,
# and SIGKILL of the writer at random points. Every committed row lies in a
# committed chunk range, n_done is the size of those ranges, the rows of those
# ranges are the uninterrupted run's, and a last --resume completes the run
# with its rows.
. tests/integration/sweep_common.inc
need_tools "run counters"
# the medium grid, with a filter that drops a fifth of the plans (and the
# invalid ones), so that filtered scenarios sit between the rows
SPEC="$TMP/f.yaml"
(cat tests/data/sweep_medium.yaml; echo 'where: "not invalid and pp <= 8"') >"$SPEC"
$BIN run "$SPEC" --db "$TMP/ref.db" --quiet >/dev/null 2>&1
result_rows "$TMP/ref.db" >"$TMP/ref.rows"
check "reference run complete, some scenarios filtered" \
    [ "$(q "$TMP/ref.db" "SELECT status = 'complete' AND n_filtered > 0 AND n_rows > 0 FROM runs")" = 1 ]

# counters DB: "ok", or what of DB's run 1 disagrees with its rows (the
# uninterrupted run in ref.db says which rows the committed ranges must hold)
counters() {
    sqlite3 -batch "$1" "ATTACH '$TMP/ref.db' AS ref;
SELECT CASE WHEN p = '' THEN 'ok' ELSE p END FROM (SELECT
  CASE WHEN n_done != cs THEN ' n_done ' || n_done || ' != sum(hi - lo) of chunks ' || cs ELSE '' END ||
  CASE WHEN ov > 0 THEN ' ' || ov || ' overlapping chunks' ELSE '' END ||
  CASE WHEN n_rows != nr THEN ' n_rows ' || n_rows || ' != ' || nr || ' rows' ELSE '' END ||
  CASE WHEN n_ok != nok OR n_invalid != ninv OR n_oom != noom THEN ' n_ok/invalid/oom ' || n_ok ||
    '/' || n_invalid || '/' || n_oom || ' != ' || nok || '/' || ninv || '/' || noom ELSE '' END ||
  CASE WHEN nin != nr THEN ' ' || (nr - nin) || ' rows outside the chunks' ELSE '' END ||
  CASE WHEN n_filtered IS NOT n_done - n_rows THEN ' n_filtered ' || coalesce(n_filtered, 'NULL') ||
    ' != n_done - n_rows ' || (n_done - n_rows) ELSE '' END ||
  CASE WHEN nref != nin OR nbad > 0 THEN ' the chunks hold ' || nin || ' rows, ' || nbad ||
    ' unlike the reference, which has ' || nref || ' there' ELSE '' END ||
  CASE WHEN (SELECT integrity_check FROM pragma_integrity_check) != 'ok' THEN ' integrity_check'
    ELSE '' END AS p
FROM (SELECT n_done, n_rows, n_ok, n_invalid, n_oom, n_filtered,
  (SELECT coalesce(sum(hi - lo), 0) FROM chunks WHERE run_id = 1) AS cs,
  (SELECT count(*) FROM (SELECT lo, lag(hi) OVER (ORDER BY lo) AS ph FROM chunks WHERE run_id = 1)
    WHERE lo < ph) AS ov,
  (SELECT count(*) FROM result_rows WHERE rid >> 40 = 1) AS nr,
  (SELECT count(*) FROM result_rows WHERE rid >> 40 = 1 AND sr & 3 = 0) AS nok,
  (SELECT count(*) FROM result_rows WHERE rid >> 40 = 1 AND sr & 3 = 1) AS ninv,
  (SELECT count(*) FROM result_rows WHERE rid >> 40 = 1 AND sr & 3 = 2) AS noom,
  (SELECT coalesce(sum((SELECT count(*) FROM main.result_rows x WHERE x.rid >= (1 << 40) + c.lo
    AND x.rid < (1 << 40) + c.hi)), 0) FROM main.chunks c WHERE c.run_id = 1) AS nin,
  (SELECT coalesce(sum((SELECT count(*) FROM ref.result_rows y WHERE y.rid >= (1 << 40) + c.lo
    AND y.rid < (1 << 40) + c.hi)), 0) FROM main.chunks c WHERE c.run_id = 1) AS nref,
  (SELECT count(*) FROM main.result_rows x WHERE x.rid >> 40 = 1 AND NOT EXISTS (SELECT 1 FROM
    ref.result_rows y WHERE y.rid = x.rid AND y.key = x.key AND y.sr = x.sr)) AS nbad
FROM main.runs WHERE run_id = 1))"
}
# expect_counters LABEL DB: a check that the counts of DB describe its rows
expect_counters() {
    got=$(counters "$2" 2>&1)
    check "$1: the counts describe exactly the committed rows (${got:-no answer})" [ "$got" = ok ]
}
# finish LABEL DB [MPIRUN -n N] [OPTIONS]: a last --resume completes the run with the reference rows
finish() {
    label=$1 db=$2
    shift 2
    "$@" "$SPEC" --db "$db" --resume --quiet >"$TMP/fin.out" 2>&1; rc=$?
    result_rows "$db" >"$TMP/got.rows"
    check "$label: a last --resume completes the run (exit $rc) with the uninterrupted run's rows" \
        sh -c "[ $rc -eq 0 ] && [ '$(q "$db" "SELECT status FROM runs")' = complete ] && cmp -s '$TMP/ref.rows' '$TMP/got.rows'"
    expect_counters "$label, completed" "$db"
}

# 1. a full disk: a small tmpfs holds the database
mkdir "$TMP/mnt"
if mount -t tmpfs -o size=8m tmpfs "$TMP/mnt" 2>/dev/null; then
    trap 'umount "$TMP/mnt" 2>/dev/null; rm -rf "$TMP"' EXIT
    D=$TMP/mnt
    # one rank: full during the run, then during two resumes with a little more room
    $BIN run "$SPEC" --db "$D/one.db" --quiet >"$TMP/out" 2>&1; rc=$?
    check "disk full, one rank: exit 2 ($rc)" [ $rc -eq 2 ]
    expect_counters "disk full, one rank" "$D/one.db"
    for size in 12m 16m; do
        mount -o remount,size=$size "$D"
        $BIN run "$SPEC" --db "$D/one.db" --resume --quiet >"$TMP/out" 2>&1; rc=$?
        check "disk full again on --resume in $size: exit 2 ($rc)" [ $rc -eq 2 ]
        expect_counters "disk full on --resume in $size" "$D/one.db"
    done
    sqlite3 "$D/one.db" ".backup '$TMP/one.db'"
    rm -f "$D"/*
    finish "disk full, one rank" "$TMP/one.db" $BIN run

    # two ranks: rank 0 writes the rows of both
    mount -o remount,size=10m "$D"
    $MPIRUN -n 2 $BIN run "$SPEC" --db "$D/two.db" --quiet >"$TMP/out" 2>&1; rc=$?
    check "disk full, two ranks: non-zero exit ($rc)" [ $rc -ne 0 ]
    expect_counters "disk full, two ranks" "$D/two.db"
    mount -o remount,size=14m "$D"
    $MPIRUN -n 2 $BIN run "$SPEC" --db "$D/two.db" --resume --quiet >"$TMP/out" 2>&1; rc=$?
    check "disk full again on --resume, two ranks: non-zero exit ($rc)" [ $rc -ne 0 ]
    expect_counters "disk full on --resume, two ranks" "$D/two.db"
    sqlite3 "$D/two.db" ".backup '$TMP/two.db'"
    rm -f "$D"/*
    finish "disk full, two ranks" "$TMP/two.db" $MPIRUN -n 2 $BIN run

    # two writers, the shards on the full disk: writer 2 stops, the job ends
    mount -o remount,size=6m "$D"
    $MPIRUN -n 2 $BIN run "$SPEC" --db "$TMP/w.db" --writers 2 --shard-dir "$D" --quiet \
        >"$TMP/out" 2>&1; rc=$?
    mount -o remount,size=64m "$D" # (sqlite3 needs room to open the shard)
    shard=$(ls "$D"/*.shard 2>/dev/null | head -1)
    check "disk full under the shard: non-zero exit ($rc), the shard left" [ $rc -ne 0 -a -n "$shard" ]
    expect_counters "disk full under the shard, its database" "$TMP/w.db"
    [ -n "$shard" ] && expect_counters "disk full under the shard, the shard" "$shard"
    finish "disk full under the shard" "$TMP/w.db" $MPIRUN -n 2 $BIN run --writers 2 --shard-dir "$D"
    rm -f "$D"/*

    # two writers, the database on the full disk: rank 0's part fits, the merge does not
    mount -o remount,size=24m "$D"
    mkdir "$TMP/shards"
    $MPIRUN -n 2 $BIN run "$SPEC" --db "$D/m.db" --writers 2 --shard-dir "$TMP/shards" --quiet \
        >"$TMP/out" 2>&1; rc=$?
    check "disk full during the shard merge: non-zero exit ($rc), the shard left" \
        [ $rc -ne 0 -a "$(ls "$TMP/shards" | grep -c '\.shard$')" = 1 ]
    grep -q 'merging a shard' "$TMP/out" || skip "disk full during the shard merge (the disk filled before it)"
    check "disk full during the shard merge: the resume command it prints names --shard-dir" \
        grep -q "finish the run with: ccsweep run .* --resume --shard-dir $TMP/shards\$" "$TMP/out"
    expect_counters "disk full during the shard merge" "$D/m.db"
    mount -o remount,size=30m "$D"
    $MPIRUN -n 2 $BIN run "$SPEC" --db "$D/m.db" --writers 2 --shard-dir "$TMP/shards" --resume \
        --quiet >"$TMP/out" 2>&1; rc=$?
    expect_counters "disk full during the merge on --resume (exit $rc)" "$D/m.db"
    sqlite3 "$D/m.db" ".backup '$TMP/m.db'"
    rm -f "$D"/*
    finish "disk full during the shard merge" "$TMP/m.db" $MPIRUN -n 2 $BIN run --writers 2 \
        --shard-dir "$TMP/shards"
    # a serving run (no resume): its runs row counts its committed batches
    mount -o remount,size=4m "$D"
    $BIN run sweeps/serve.yaml --db "$D/s.db" --quiet >"$TMP/out" 2>&1; rc=$?
    mount -o remount,size=64m "$D"
    got=$(q "$D/s.db" "SELECT status, n_done = (SELECT max(idx) + 1 FROM serve_results) AND n_rows =
        (SELECT count(*) FROM serve_results) AND n_ok = (SELECT count(*) FROM serve_results WHERE
        status = 0) AND n_invalid = (SELECT count(*) FROM serve_results WHERE status = 1) AND n_oom =
        (SELECT count(*) FROM serve_results WHERE status = 2) AND n_filtered = n_done - n_rows AND
        n_rows > 0 FROM runs")
    check "disk full, a serving run: exit 2 ($rc), the disk named, the counts describe its rows ($got)" \
        sh -c "[ $rc -eq 2 ] && [ '$got' = 'failed|1' ] && grep -q 'the disk holding .* is full' '$TMP/out'"
    umount "$D"
else
    skip "disk full (cannot mount a small tmpfs here: needs root with CAP_SYS_ADMIN)"
fi

# a job killed after its last commit but before it marked the run complete:
# every chunk is done, so --resume on two writers has nothing to share out
cp "$TMP/ref.db" "$TMP/done.db"
sqlite3 "$TMP/done.db" "UPDATE runs SET status = 'failed', ended = NULL"
mkdir -p "$TMP/done-shards"
finish "every chunk done, the run not marked complete" "$TMP/done.db" $MPIRUN -n 2 $BIN run \
    --writers 2 --shard-dir "$TMP/done-shards"

# 2. SIGKILL of the writer at random points: of a single rank, and of rank 0
# of two, during the run and during each --resume. Chunks of 15000 scenarios
# (a batch of 10000 rows commits inside one), each held 0.2 s
# (CCSWEEP_TEST_CHUNK_DELAY_US), so that the sweep lasts seconds.
rnd() { echo $(($(od -An -N2 -tu2 /dev/urandom) % $1)); }
export CCSWEEP_TEST_CHUNK_DELAY_US=200000
for np in 1 2; do
    db=$TMP/kill$np.db
    for round in 1 2 3; do
        ms=$(rnd 1000)
        opt=
        [ $round -gt 1 ] && opt=--resume
        if [ $np = 1 ]; then
            $BIN run "$SPEC" --db "$db" --chunk 15000 $opt --quiet >/dev/null 2>&1 &
        else
            $MPIRUN -n 2 $BIN run "$SPEC" --db "$db" --chunk 15000 $opt --quiet >/dev/null 2>&1 &
        fi
        job=$!
        n0=$(q "$db" "SELECT n_rows FROM runs" 2>/dev/null)
        i=0 # wait until this session committed rows (up to 30 s), then $ms ms more
        while [ $i -lt 600 ]; do
            n=$(q "$db" "SELECT n_rows FROM runs" 2>/dev/null)
            [ -n "$n" ] && [ "$n" != "${n0:-0}" ] && break
            sleep 0.05
            i=$((i + 1))
        done
        sleep "$(awk "BEGIN { print $ms / 1000 }")"
        if [ $np = 1 ]; then pid=$job; else pid=$(rank_pid "$db" 0); fi
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
        wait $job 2>/dev/null
        if [ "$(q "$db" "SELECT status FROM runs")" = complete ]; then
            skip "SIGKILL of the writer, $np rank(s), round $round (the sweep finished first)"
            break
        fi
        expect_counters "SIGKILL of the writer, $np rank(s), round $round, $ms ms after a commit" "$db"
    done
    if [ $np = 1 ]; then finish "SIGKILL, one rank" "$db" $BIN run; else
        finish "SIGKILL, two ranks" "$db" $MPIRUN -n 2 $BIN run; fi
done
