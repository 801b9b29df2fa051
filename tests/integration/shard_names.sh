#!/bin/sh
# shard_names.sh - shards of two databases of one base name (a/study.db,
# b/study.db) in one --shard-dir: each run merges and removes only its own,
# so a run started beside a live one loses nothing; a file that has a shard's
# name but is no database is reported and kept (set aside), never deleted.
. tests/integration/sweep_common.inc
need_tools "shard names"
SPEC=tests/data/sweep_medium.yaml
mkdir -p "$TMP/a" "$TMP/b" "$TMP/shards"
$MPIRUN -n 2 $BIN run $SPEC --db "$TMP/ref.db" --quiet >/dev/null 2>&1
total=$(q "$TMP/ref.db" "SELECT total FROM runs")
rows() { q "$1" "SELECT count(*) || ' ' || count(DISTINCT idx) FROM results"; }

# A: slowed, 2 writers (rank 1 writes a shard into the shared directory)
CCSWEEP_TEST_CHUNK_DELAY_US=200000 $MPIRUN -n 2 $BIN run $SPEC --db "$TMP/a/study.db" \
    --writers 2 --shard-dir "$TMP/shards" --chunk 2000 --quiet >/dev/null 2>"$TMP/a.err" &
job=$!
i=0
while [ $i -lt 600 ] && ! ls "$TMP/shards" | grep -q '\.shard-wal$'; do sleep 0.05; i=$((i + 1)); done
a_shard=$(ls "$TMP/shards" | grep '\.shard$' | head -1)
# B: same base name, same shard directory, while A runs
$MPIRUN -n 2 $BIN run $SPEC --db "$TMP/b/study.db" --writers 2 --shard-dir "$TMP/shards" \
    --quiet >/dev/null 2>"$TMP/b.err"; rc_b=$?
a_alive=$(kill -0 $job 2>/dev/null && echo yes || echo no)
check "B beside a live A (A still running: $a_alive): B exits 0 with one row per scenario" \
    [ $rc_b -eq 0 -a "$(rows "$TMP/b/study.db")" = "$total $total" ]
check "B neither merged nor removed A's shard ($a_shard)" \
    sh -c "[ -n '$a_shard' ] && ! grep -q 'removed\\|$a_shard' '$TMP/b.err' && { [ -e '$TMP/shards/$a_shard' ] || [ $a_alive = no ]; }"
wait $job; rc_a=$?
check "A completes after B ran beside it: exit $rc_a, one row per scenario" \
    [ $rc_a -eq 0 -a "$(rows "$TMP/a/study.db")" = "$total $total" -a "$(q "$TMP/a/study.db" "SELECT status FROM runs")" = complete ]
check "no shard is left in the shared directory" [ "$(ls "$TMP/shards" | grep -c '\.shard$')" -eq 0 ]

# An unreadable file with a shard's name of this database: reported, left in place
name=$(echo "$a_shard" | sed 's/\.run1\.w1\.shard$/.run2.w1.shard/')
CCSWEEP_TEST_CHUNK_DELAY_US=50000 $BIN run $SPEC --db "$TMP/a/study.db" --chunk 2000 --new-run --quiet \
    >/dev/null 2>&1 &
job=$!
wait_n() { i=0; while [ $i -lt 600 ]; do n=$(q "$1" "SELECT n_done FROM runs WHERE run_id = 2" 2>/dev/null); [ -n "$n" ] && [ "$n" -gt 0 ] && return 0; sleep 0.05; i=$((i + 1)); done; return 1; }
if wait_n "$TMP/a/study.db"; then
    kill -TERM $job; wait $job
    printf 'not a database\n' > "$TMP/shards/$name"
    $MPIRUN -n 2 $BIN run $SPEC --db "$TMP/a/study.db" --resume --writers 2 --shard-dir "$TMP/shards" \
        --quiet >/dev/null 2>"$TMP/r.err"; rc=$?
    check "an unreadable shard is reported, kept (set aside as NAME.unreadable), and the resume completes (exit $rc)" \
        sh -c "[ $rc -eq 0 ] && grep -q 'cannot be read as a database.*; left in place' '$TMP/r.err' && [ -e '$TMP/shards/$name.unreadable' ] && [ \"\$(cat '$TMP/shards/$name.unreadable')\" = 'not a database' ] && [ \"\$(sqlite3 '$TMP/a/study.db' \"SELECT status FROM runs WHERE run_id = 2\")\" = complete ]"
else
    kill $job 2>/dev/null; wait $job
    fail "unreadable shard: run 2 committed nothing within 30 s"
fi
